#!/usr/bin/env bash
# Exposed communication per step with and without --overlap-comm (src/parallel/grad_reduce.h).
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
# Reported per setting (medians over every kept step of every round, rank 0's log):
# ms/step; grad_comm_ms, the step's time inside the dp gradient reduction's calls (blocking:
# the whole collective; overlapped: starting, polling and waiting for the buckets); the
# --profile comm phase (every tensor collective and pipeline transfer, waits included).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/usr/bin/python3}
OUT=build/bench/overlap
ROUNDS=${ROUNDS:-2}
STEPS=${STEPS:-5}
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
MODEL=(--n-layer 6 --n-head 6 --n-embd 384 --seq 128 --micro-batch 2 --grad-accum 2)
SETTINGS=("dp 2, ZeRO-1|2|--zero 1" "dp 2, ZeRO-0|2|--zero 0" "dp 2 x pp 2, ZeRO-1|4|--pp 2 --zero 1")
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
print("| layout | overlap | ms/step | grad_comm_ms (exposed dp reduction) | --profile comm ms | steps |")
print("|---|---|---|---|---|---|")
for i, name in enumerate(names):
    for ov in ("off", "on"):
        ms, gc, cm = [], [], []
        for p in sorted(glob.glob(f"{out}/s{i}_{ov}_r*.jsonl")):
            recs = [r for r in map(json.loads, open(p)) if "loss" in r][1:]
            ms += [r["ms"] for r in recs]
            gc += [r["grad_comm_ms"] for r in recs]
            cm += [r["phases"]["comm"] for r in recs]
        print(f"| {name} | {ov} | {st.median(ms):.0f} | {st.median(gc):.1f} | {st.median(cm):.1f} | {len(ms)} |")
PY
