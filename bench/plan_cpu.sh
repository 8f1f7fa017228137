#!/usr/bin/env bash
# `zerotrain plan` against measured steps on this machine: --calibrate (each figure the
# fastest of 5 rounds, their spread kept), then for each layout (one and two ranks, two model
# sizes) the plan's predicted step time beside the measured step, and the error. Each
# layout is run REPEAT times; its measured step is the fastest run's (rank 0's median step
# in its --log, the first WARMUP steps skipped): the calibration's statistic, since other
# users' work only slows a run (docs/design.md, "Step-time model"); the median over the runs
# is printed beside it, and the spread (slowest - fastest) / median over the runs.
#
#   bash bench/plan_cpu.sh                 # writes build/bench/plan_cpu.md (the table), prints it
#   STEPS=10 WARMUP=3 REPEAT=5 bash bench/plan_cpu.sh
#
# Every run: 1 OpenMP thread per rank (--threads 1, OMP_WAIT_POLICY=PASSIVE), one and two
# ranks under mpirun on this 2-core machine; every dimension the plan weighs is fixed by a
# flag, so the plan has exactly one layout, and its flags are what the run is given. The
# calibration (the layout's model, micro-batch 4 and 2, CAL_STEPS steps a round) is stored
# in build/bench/plan_cpu.json, once per model; then the model's layouts run in turn,
# REPEAT rounds over all of them.
#
# The order of the two fastest is scored as the plan's user meets it: the plan's first
# choice must measure as fast as the measured fastest, and its second as the measured
# second, each within the measurement's own spread (two layouts closer than that are a tie
# no measurement here orders). The load average is printed with the table.
set -euo pipefail
cd "$(dirname "$0")/.."
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
STEPS=${STEPS:-8}
WARMUP=${WARMUP:-2}
OUT=${OUT:-build/bench/plan_cpu.md}
mkdir -p build/bench
CAL=build/bench/plan_cpu.json
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
MPI=(mpirun --oversubscribe --allow-run-as-root --bind-to none)
SMALL="--model tiny --n-layer 4 --n-head 4 --n-embd 128 --vocab 256 --n-ctx 128"
LARGE="--model tiny --n-layer 4 --n-head 4 --n-embd 256 --vocab 256 --n-ctx 128"
CAL_STEPS=${CAL_STEPS:-2}
REPEAT=${REPEAT:-3}
COMMON="--seq 128 --optim adamw --param-dtype fp32 --recompute none --partition uniform --overlap-comm off"
GB=8
# name | world | the layout's flags
LAYOUTS=(
  "1 rank, micro 8|1|--dp 1 --pp 1 --tp 1 --zero 0 --schedule 1f1b --micro-batch 8"
  "1 rank, micro 2 x 4|1|--dp 1 --pp 1 --tp 1 --zero 0 --schedule 1f1b --micro-batch 2"
  "dp 2|2|--dp 2 --pp 1 --tp 1 --zero 0 --schedule 1f1b --micro-batch 4"
  "dp 2, zero 1, micro 2 x 2|2|--dp 2 --pp 1 --tp 1 --zero 1 --schedule 1f1b --micro-batch 2"
  "pp 2, 1f1b, micro 2 x 4|2|--dp 1 --pp 2 --tp 1 --zero 0 --schedule 1f1b --micro-batch 2"
  "pp 2, gpipe, micro 2 x 4|2|--dp 1 --pp 2 --tp 1 --zero 0 --schedule gpipe --micro-batch 2"
  "tp 2|2|--dp 1 --pp 1 --tp 2 --zero 0 --schedule 1f1b --micro-batch 8"
  "tp 2, sequence parallel|2|--dp 1 --pp 1 --tp 2 --zero 0 --schedule 1f1b --micro-batch 8 --sequence-parallel"
)

calibrate() { # the model's flags
  echo "calibrating ($* --seq 128 --micro-batch 4 --threads 1) ..." >&2
  # shellcheck disable=SC2086
  "$ZT" plan --calibrate --calibration "$CAL" "$@" --seq 128 --micro-batch 4 --threads 1 \
    --calibrate-steps "$CAL_STEPS" >&2
}
# Rank 0's median step of one run (seconds): its --log, the first WARMUP steps skipped.
run_once() { # world, the run's flags
  local log
  log=$(mktemp)
  # shellcheck disable=SC2086
  "${MPI[@]}" -np "$1" "$ZT" $2 --steps "$STEPS" --val-every 0 --warmup 0 \
    --lr-schedule constant --log "$log" </dev/null >/dev/null 2>&1
  "$PY" - "$log" "$WARMUP" <<'PY'
import json, statistics, sys
ms = [r["ms"] for r in map(json.loads, open(sys.argv[1])) if "ms" in r]
print(statistics.median(ms[int(sys.argv[2]):]) / 1e3)
PY
  rm -f "$log"
}
rows=$(mktemp)
for model in SMALL LARGE; do
  # shellcheck disable=SC2086
  calibrate ${!model}
  preds=() flags=() worlds=() names=() times=()
  for l in "${LAYOUTS[@]}"; do
    IFS='|' read -r name world lflags <<<"$l"
    # shellcheck disable=SC2086
    plan=$("$ZT" plan --device cpu --calibration "$CAL" --world "$world" --global-batch $GB \
           ${!model} $COMMON $lflags --threads 1 --json --top 1)
    pred=$("$PY" -c 'import json,sys; p=json.loads(sys.argv[1])["plans"][0]; print(p["step_s"], p["flags"], sep="|")' "$plan")
    preds+=("${pred%%|*}") flags+=("${pred#*|}") worlds+=("$world") names+=("$name") times+=("")
  done
  # the layouts in turn, REPEAT times over: a slow minute lands on one run of several
  # layouts, not on every run of one
  for r in $(seq "$REPEAT"); do
    for i in "${!names[@]}"; do
      t=$(run_once "${worlds[$i]}" "${flags[$i]}")
      times[i]="${times[$i]} $t"
      echo "$model ${names[$i]} run $r of $REPEAT: $t s (predicted ${preds[$i]} s)" >&2
    done
  done
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    meas=$("$PY" -c 'import statistics, sys; v = [float(x) for x in sys.argv[1:]]; m = statistics.median(v); print(min(v), (max(v) - min(v)) / m, m, sep="|")' ${times[$i]})
    echo "$model|${names[$i]}|${worlds[$i]}|${preds[$i]}|$meas|${flags[$i]}" >>"$rows"
  done
done
"$PY" - "$rows" "$(cat /proc/loadavg)" "$CAL" "$REPEAT" >"$OUT" <<'PY'
import json, sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
cal = json.load(open(sys.argv[3]))
print(f"| model | layout | ranks | predicted ms | measured ms (fastest of {sys.argv[4]} runs) | runs' spread | error | median run ms | error against it |")
print("|---|---|---|---|---|---|---|---|---|")
worst, within, within_med = 0, 0, 0
for m, name, w, p, t, sp, med, _ in rows:
    p, t, sp, med = float(p), float(t), float(sp), float(med)
    e, em = (p - t) / t, (p - med) / med
    worst = max(worst, abs(e))
    within += abs(e) <= 0.25
    within_med += abs(em) <= 0.25
    print(f"| {m.lower()} | {name} | {w} | {p*1e3:.1f} | {t*1e3:.1f} | {sp*100:.0f}% | {e*100:+.1f}% | {med*1e3:.1f} | {em*100:+.1f}% |")
print()
def same(a, b):  # measured alike within the larger of the two layouts' spreads
    ta, tb = float(a[4]), float(b[4])
    return abs(ta - tb) / min(ta, tb) <= max(float(a[5]), float(b[5]))
for m in ("SMALL", "LARGE"):
    r = [x for x in rows if x[0] == m]
    by_p = sorted(r, key=lambda x: float(x[3]))[:2]
    by_t = sorted(r, key=lambda x: float(x[4]))[:2]
    ok = all(p is t or same(p, t) for p, t in zip(by_p, by_t))
    exact = [x[1] for x in by_p] == [x[1] for x in by_t]
    pairs = "; ".join(f"{p[1]} {float(p[4])*1e3:.0f} ms ({float(p[5])*100:.0f}%) against "
                      f"{t[1]} {float(t[4])*1e3:.0f} ms ({float(t[5])*100:.0f}%)"
                      for p, t in zip(by_p, by_t) if p is not t)
    print(f"- {m.lower()}: the two fastest measured: {by_t[0][1]}, then {by_t[1][1]}; "
          f"predicted: {by_p[0][1]}, then {by_p[1][1]} ("
          + ("same order" if exact else "right within the spread: each choice measured "
             f"alike to the measured one in its place: {pairs}" if ok else
             f"NOT right: {pairs}") + ")")
print(f"- {within} of {len(rows)} within 25% ({within_med} against the median run); largest error {worst*100:.1f}%; "
      f"load average at the end: {sys.argv[2]}")
print(f"- calibration (the last): {cal['note']}")
PY
rm -f "$rows"
cat "$OUT"
