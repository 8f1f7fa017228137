#!/usr/bin/env bash
# The loss's memory and time on the last pipeline stage: computing it in chunks of
# tokens (--loss-chunk, default automatic) against materializing the logits of the whole
# micro-batch (--loss-chunk = micro-batch x seq), for the gpt2 vocabulary (50257) and a
# multilingual-size one (250000), each at tp 1 and tp 2.
#
#   bash bench/loss_chunk.sh            # prints a markdown table
#   bash bench/loss_chunk.sh --record   # also replaces its section of bench/RESULTS.md
#
# One stage (pp 1: the last stage is the only one) on this machine's 2 cores: tp 1 runs
# one rank of 2 OpenMP threads, tp 2 two ranks of 1. (A pipeline that puts 4 ranks on 2
# cores measures the scheduler instead: the loss's per-chunk all-reduces wait for the
# peer rank to get a core.) The 'logits' category is the loss's own buffer whatever else
# the stage holds. The head dominates the step time.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/bench; mkdir -p $OUT
MPI="mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS"
B=4; T=256; L=2
[ -f $OUT/loss_tokens.bin ] || /usr/bin/python3 bench/make_tokens.py $OUT/loss_tokens.bin $((1 << 18))
table=$OUT/loss_chunk.md
{
echo "## Chunked loss against materialized logits (last stage)"
echo
echo "\`bash bench/loss_chunk.sh --record\`: $L blocks, n_embd 256, micro-batch $B x $T tokens, one"
echo "stage on 2 cores (tp 1: one rank of 2 threads; tp 2: two ranks of 1). 'logits' is the"
echo "runtime's allocation for the loss (one chunk of logits and the per-row statistics) on"
echo "rank 0, 'stage peak' all its allocations at their peak, RSS the process's peak resident set"
echo "(VmHWM). Time: median step over steps 2..5 of 3 alternating runs of each setting."
echo
echo "| vocab | tp | --loss-chunk | logits MiB | stage peak MiB | RSS MiB | step ms | memory vs whole | time vs whole |"
echo "|---|---|---|---|---|---|---|---|---|"
} > $table
ROUNDS=${ROUNDS:-3}
for V in 50257 250000; do
  for tp in 1 2; do
    # the two settings alternate, ROUNDS runs each, so a noisy neighbour on this shared
    # machine slows both alike; the time is the median over every round's steps 2..5
    for r in $(seq $ROUNDS); do
      for chunk in $((B * T)) 0; do
        name=loss_${V}_tp${tp}_${chunk}_r$r
        OMP_NUM_THREADS=$((2 / tp)) $MPI -np $tp build/zerotrain --n-layer $L --n-head 4 \
            --n-embd 256 --vocab $V --n-ctx $T --seq $T --micro-batch $B --tp $tp \
            --loss-chunk $chunk --steps 5 --val-every 0 --data $OUT/loss_tokens.bin \
            --log $OUT/$name.jsonl > $OUT/$name.out 2>&1 || { cat $OUT/$name.out; exit 1; }
      done
    done
    ref_mem=; ref_ms=
    for chunk in $((B * T)) 0; do
      row=$(/usr/bin/python3 - $OUT/loss_${V}_tp${tp}_${chunk}_r*.jsonl <<'PY'
import json, statistics, sys
recs = [json.loads(l) for f in sys.argv[1:] for l in open(f)]
ms = statistics.median(r["ms"] for r in recs if "ms" in r and r["step"] >= 2)
last = [r for r in recs if r.get("rank") == 0 and "mem_peak" in r][0]
M = 1048576
print(last["mem_peak"]["logits"] / M, last["mem_peak_total"] / M, last["rss_peak"] / M, ms)
PY
)
      read lg peak rss ms <<<"$row"
      if [ "$chunk" != 0 ]; then ref_mem=$peak; ref_ms=$ms; label="$chunk (whole)"
      else label="auto ($(grep -o "chunks of [0-9]*" $OUT/loss_${V}_tp${tp}_0_r1.out | cut -d' ' -f3))"; fi
      echo "| $V | $tp | $label | $(printf %.1f $lg) | $(printf %.1f $peak) | $(printf %.0f $rss) | $(printf %.1f $ms) | $(awk "BEGIN{printf \"%.2fx\", $peak/$ref_mem}") | $(awk "BEGIN{printf \"%.2fx\", $ms/$ref_ms}") |" >> $table
    done
  done
done
cat $table
if [ "${1:-}" = --record ]; then
  /usr/bin/python3 bench/results_section.py bench/RESULTS.md "## Chunked loss against materialized logits (last stage)" < $table
fi
