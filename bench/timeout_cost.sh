#!/usr/bin/env bash
# What the collective timeout costs a healthy run, per mode (comm/comm_mpi.c):
#   off       ZT_COMM_TIMEOUT_S=0: the blocking MPI calls, no timeout (the default before)
#   default   ZT_COMM_TIMEOUT_S unset: the same blocking calls, each timed by the watchdog
#   polling   ZT_COMM_TIMEOUT_S=600: every call nonblocking, polled with a growing sleep
#
#   bash bench/timeout_cost.sh              # both parts, printed (RESULTS.md by hand)
#   ROUNDS=5 STEPS=30 bash bench/timeout_cost.sh
#   PARTS=step LAYOUTS=pp2 bash bench/timeout_cost.sh   # one part, one layout
#
# Part 1: build/comm_bw (make bench) at MIN_MIB..MAX_MIB on 2 ranks, the median of REPS of
# each zt_comm_* collective per mode. Part 2: training steps on 2 ranks (OMP_NUM_THREADS=1):
# dp 2 --zero 1, and pp 2 (1F1B, 4 micro-batches: point-to-point between the stages), a
# 4-layer 256-channel GPT-2, micro-batch 4 x 128 tokens, STEPS steps (the first 3 dropped);
# the modes rotate within each of ROUNDS rounds, so drifts of the load from elsewhere hit
# them alike. Reported: the median ms/step over every kept step of every round, and the
# median over rounds of each round's ratio to `off` (each round's ratios in parentheses).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/usr/bin/python3}
OUT=build/bench/timeout_cost
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-20}
REPS=${REPS:-9}
MIN_MIB=${MIN_MIB:-1}
MAX_MIB=${MAX_MIB:-16}
PARTS=${PARTS:-"comm step"}
LAYOUTS=${LAYOUTS:-"zero1 pp2"}
mkdir -p "$OUT"
export OMP_NUM_THREADS=1
MPI=(mpirun --oversubscribe --allow-run-as-root -np 2 -x OMP_NUM_THREADS)
modes=(off default polling)
run_env() { # mode, command...: with ZT_COMM_TIMEOUT_S as the mode says (mpirun -x passes it)
  local mode=$1; shift
  case $mode in
    off) env ZT_COMM_TIMEOUT_S=0 "$@" ;;
    default) env -u ZT_COMM_TIMEOUT_S "$@" ;;
    polling) env ZT_COMM_TIMEOUT_S=600 "$@" ;;
  esac
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc --all) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"

# ---- part 1: collectives
if [[ " $PARTS " != *" comm "* ]]; then :
elif [ -x build/comm_bw ]; then
  for r in $(seq "$ROUNDS"); do
    for k in 0 1 2; do
      mode=${modes[$(( (k + r) % 3 ))]}
      run_env "$mode" "${MPI[@]}" -x ZT_COMM_TIMEOUT_S build/comm_bw --min-mib "$MIN_MIB" \
        --max-mib "$MAX_MIB" --reps "$REPS" 2>/dev/null | grep '^RESULT' | grep 'impl=zt ' |
        sed "s/^/$mode /" >>"$OUT/comm.$r" || true
    done
  done
  "$PY" - "$OUT"/comm.* <<'EOF'
import statistics, sys
rows = {}
for path in sys.argv[1:]:
    for line in open(path):
        mode, _, *kv = line.split()
        kv = dict(x.split("=") for x in kv)
        rows.setdefault((kv["op"], int(kv["bytes"])), {}).setdefault(mode, []).append(float(kv["ms"]))
print("| collective | size | off ms | default ms | polling ms | polling / off |")
print("|---|---|---|---|---|---|")
for (op, size), m in sorted(rows.items()):
    med = {k: statistics.median(v) for k, v in m.items()}
    print(f"| {op} | {size >> 20} MiB | {med['off']:.2f} | {med['default']:.2f} | "
          f"{med['polling']:.2f} | {med['polling'] / med['off']:.2f}x |")
EOF
  rm -f "$OUT"/comm.*
else
  echo "(build/comm_bw missing: make bench; part 1 skipped)"
fi

# ---- part 2: training steps
[[ " $PARTS " == *" step "* ]] || exit 0
ARGS=(--n-layer 4 --n-head 4 --n-embd 256 --micro-batch 4 --seq 128 --steps "$STEPS"
      --val-every 0 --warmup 0 --lr-schedule constant)
for layout in "zero1|--zero 1" "pp2|--pp 2 --grad-accum 4"; do
  IFS='|' read -r name extra <<<"$layout"
  [[ " $LAYOUTS " == *" $name "* ]] || continue
  for r in $(seq "$ROUNDS"); do
    for k in 0 1 2; do
      mode=${modes[$(( (k + r) % 3 ))]}
      run_env "$mode" "${MPI[@]}" -x ZT_COMM_TIMEOUT_S build/zerotrain "${ARGS[@]}" $extra \
        --log "$OUT/$name.$mode.$r.jsonl" >/dev/null 2>&1 || echo "run $name $mode failed"
    done
  done
done
"$PY" - "$OUT" $LAYOUTS <<'EOF'
import glob, json, statistics, sys
out = sys.argv[1]
def kept(path):
    steps = [json.loads(l) for l in open(path) if '"step"' in l and '"loss"' in l]
    return [s["ms"] for s in steps[3:]]
print("| layout | off ms/step | default ms/step | polling ms/step | default / off | polling / off |")
print("|---|---|---|---|---|---|")
for name in sys.argv[2:]:
    rounds = sorted({p.split(".")[-2] for p in glob.glob(f"{out}/{name}.off.*.jsonl")})
    med, ratio = {}, {"default": [], "polling": []}
    for mode in ("off", "default", "polling"):
        med[mode] = statistics.median(sum((kept(f"{out}/{name}.{mode}.{r}.jsonl") for r in rounds), []))
    for r in rounds: # within a round the modes ran back to back: the load alike
        off = statistics.median(kept(f"{out}/{name}.off.{r}.jsonl"))
        for mode in ratio:
            ratio[mode].append(statistics.median(kept(f"{out}/{name}.{mode}.{r}.jsonl")) / off)
    fmt = lambda v: f"{statistics.median(v):.3f} ({', '.join(f'{x:.2f}' for x in v)})"
    print(f"| {name} | {med['off']:.1f} | {med['default']:.1f} | {med['polling']:.1f} | "
          f"{fmt(ratio['default'])} | {fmt(ratio['polling'])} |")
EOF
rm -f "$OUT"/*.jsonl
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
