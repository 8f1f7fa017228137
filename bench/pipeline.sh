#!/usr/bin/env bash
# Pipeline bench: (1) each stage's predicted and allocated memory at pp 4 for the
# partitions uniform, parameters and memory, over several micro-batch counts, and the
# spread between the fullest and the emptiest stage; (2) the measured 1F1B / GPipe
# bubble at pp 2 (two ranks on this machine's two cores, one thread each: no time
# slicing) against the theory (p-1)/(m+p-1).
#
#   bash bench/pipeline.sh            # prints markdown tables
#
# The model is sized to make the point: a 50257-token vocabulary (so the embedding and
# the head weigh as much as several blocks) and 256-token sequences (so activations,
# which 1F1B keeps more of on early stages, matter as much as parameters).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/bench; mkdir -p $OUT
MPI="mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1"
[ -f $OUT/pipe_tokens.bin ] || /usr/bin/python3 bench/make_tokens.py $OUT/pipe_tokens.bin $((1 << 18))
MODEL="--n-layer 12 --n-head 6 --n-embd 384 --vocab 50257 --n-ctx 256 --seq 256 --micro-batch 4"
echo "### Per-stage memory, pp = 4 (1F1B, fp32 AdamW, --zero 0)"
echo
echo "Model: $MODEL. MiB per stage, predicted / allocated (the runtime's tagged allocator);"
echo "spread = fullest / emptiest stage."
echo
echo "| micro-batches | partition | stage 0 | stage 1 | stage 2 | stage 3 | split (units) | spread |"
echo "|---|---|---|---|---|---|---|---|"
for m in 1 2 4; do
  for p in uniform parameters memory; do
    $MPI -np 4 build/zerotrain $MODEL --pp 4 --grad-accum $m --partition $p --steps 1 \
        --val-every 0 --data $OUT/pipe_tokens.bin > $OUT/pipe_${p}_$m.out 2>&1
    split=$(grep "^pipeline:" $OUT/pipe_${p}_$m.out | sed 's/.*: stage 0/stage 0/' | sed 's/stage [0-9]: //g')
    cells=$(grep "predicted .* MiB, allocated" $OUT/pipe_${p}_$m.out \
            | sed -E 's/.*predicted ([0-9.]+) MiB, allocated ([0-9.]+) MiB.*/\1 \2/')
    row=$(echo "$cells" | awk '{printf "%s / %s | ", $1, $2}')
    spread=$(echo "$cells" | awk 'NR==1{mx=$2;mn=$2} {if($2>mx)mx=$2; if($2<mn)mn=$2} END{printf "%.2fx", mx/mn}')
    echo "| $m | $p | $row$split | $spread |"
  done
done
echo
echo "### Bubble, pp = 2 (measured: share of the schedule a stage spends waiting, mean over"
echo "ranks and steps 2..8; theory: (p-1)/(m+p-1) for equal stages)"
echo
echo "| schedule | micro-batches m | measured | theory |"
echo "|---|---|---|---|"
# stages of equal compute for the bubble: a small vocabulary keeps the head as cheap as the
# embedding, and the uniform split gives each stage the same number of blocks
SMALL="--n-layer 8 --n-head 8 --n-embd 256 --vocab 256 --n-ctx 256 --seq 128 --micro-batch 2"
for s in 1f1b gpipe; do
  for m in 2 4 8 16; do
    $MPI -np 2 build/zerotrain $SMALL --pp 2 --schedule $s --grad-accum $m \
        --steps 8 --val-every 0 --log $OUT/pipe_bubble_${s}_$m.jsonl \
        > /dev/null 2>&1
    meas=$(grep -o '"bubble":[0-9.]*' $OUT/pipe_bubble_${s}_$m.jsonl | tail -n +2 | cut -d: -f2 \
           | awk '{s+=$1; n++} END{printf "%.3f", s/n}')
    echo "| $s | $m | $meas | $(awk "BEGIN{printf \"%.3f\", 1/($m+1)}") |"
  done
done
