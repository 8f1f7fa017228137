#!/usr/bin/env bash
# Exposed communication per step with and without --overlap-comm (src/parallel/grad_reduce.h,
# param_gather.h, pipe_comm.h), as ratios, in one command.
#
#   bash bench/overlap.sh              # prints the table for bench/RESULTS.md
#   ROUNDS=3 STEPS=6 bash bench/overlap.sh
#
# Each setting runs --overlap-comm off and on back to back (the order alternating by round),
# STEPS steps each with the first dropped, --profile on, OMP_NUM_THREADS=1 per rank:
#   mpirun --oversubscribe --allow-run-as-root -np NP -x OMP_NUM_THREADS build/zerotrain
#       --n-layer 6 --n-head 6 --n-embd 384 --seq 128 --micro-batch 2 --grad-accum 2
#       --steps STEPS --warmup 0 --lr-schedule constant --val-every 0 --profile
#       --overlap-comm on|off LAYOUT --log FILE
# (the embedded default text: vocabulary 256, so the 10.8M parameters are nearly all in the
# blocks, the part of the gradient the backward can overlap; 41 MiB of fp32 gradient)
# Reported per setting (medians over every kept step of every round, rank 0's log: dp rank 0
# of the first stage):
# ms/step; the step's time inside each communication the overlap touches, blocking or
# overlapped (the exposed part: what the rank spent in the calls, starting, polling and
# waiting, not the transfer time hidden behind computation): grad_comm_ms (the dp gradient
# reduction), param_comm_ms (the ZeRO-1 parameter all-gather), pp_comm_ms (pipeline sends and
# receives); their sum, "exposed"; the --profile comm phase (every tensor collective and
# pipeline transfer, waits included); and for "on" the ratios on/off of exposed and ms/step.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/usr/bin/python3}
OUT=build/bench/overlap
ROUNDS=${ROUNDS:-2}
STEPS=${STEPS:-5}
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
MODEL=(--n-layer 6 --n-head 6 --n-embd 384 --seq 128 --micro-batch 2 --grad-accum 2)
SETTINGS=("dp 2, ZeRO-1|2|--zero 1" "dp 2, ZeRO-0|2|--zero 0" "pp 2, 4 micro-batches|2|--pp 2 --grad-accum 4"
          "dp 2 x pp 2, ZeRO-1|4|--pp 2 --zero 1")
echo "started $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc --all) cores"
for r in $(seq 1 "$ROUNDS"); do
  for i in "${!SETTINGS[@]}"; do
    IFS='|' read -r name np extra <<<"${SETTINGS[$i]}"
    order="off on"; [ $((r % 2)) -eq 0 ] && order="on off"
    for ov in $order; do
      mpirun --oversubscribe --allow-run-as-root -np "$np" -x OMP_NUM_THREADS build/zerotrain \
        "${MODEL[@]}" --steps "$STEPS" --warmup 0 --lr-schedule constant --val-every 0 --profile \
        --overlap-comm "$ov" $extra --log "$OUT/s${i}_${ov}_r$r.jsonl" \
        > "$OUT/s${i}_${ov}_r$r.out" 2>&1 || { tail "$OUT/s${i}_${ov}_r$r.out"; exit 1; }
    done
  done
done
echo "ended $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
names=$(printf '%s\n' "${SETTINGS[@]}" | cut -d'|' -f1 | paste -sd'|')
"$PY" - "$OUT" "$ROUNDS" "$names" <<'PY'
import glob, json, statistics as st, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3].split("|")
print("| layout | overlap | ms/step | grad_comm_ms | param_comm_ms | pp_comm_ms | exposed ms | "
      "--profile comm ms | exposed on/off | ms/step on/off | steps |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
keys = ("grad_comm_ms", "param_comm_ms", "pp_comm_ms")
for i, name in enumerate(names):
    med = {}
    for ov in ("off", "on"):
        col = {k: [] for k in ("ms", "exposed", "comm") + keys}
        for p in sorted(glob.glob(f"{out}/s{i}_{ov}_r*.jsonl")):
            for r in [r for r in map(json.loads, open(p)) if "loss" in r][1:]:
                for k in ("ms",) + keys: col[k].append(r[k])
                col["exposed"].append(sum(r[k] for k in keys))
                col["comm"].append(r["phases"]["comm"])
        med[ov] = {k: st.median(v) for k, v in col.items()}
        m = med[ov]
        ratios = "| |"
        if ov == "on":
            ratios = (f"| {m['exposed'] / med['off']['exposed']:.2f} "
                      f"| {m['ms'] / med['off']['ms']:.2f} |")
        print(f"| {name} | {ov} | {m['ms']:.0f} | {m['grad_comm_ms']:.1f} | {m['param_comm_ms']:.1f} "
              f"| {m['pp_comm_ms']:.1f} | {m['exposed']:.1f} | {m['comm']:.1f} {ratios} {len(col['ms'])} |")
PY
