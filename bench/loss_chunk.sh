#!/usr/bin/env bash
# The loss's memory and time on the last pipeline stage: computing it in chunks of
# tokens (--loss-chunk, default automatic) against materializing the logits of the whole
# micro-batch (--loss-chunk = micro-batch x seq), for the gpt2 vocabulary (50257) and a
# multilingual-size one (250000), each at tp 1 and tp 2.
#
#   bash bench/loss_chunk.sh            # prints a markdown table
#   bash bench/loss_chunk.sh --record   # also replaces its section of bench/RESULTS.md
#
# The head sits alone on the last of 2 stages (--partition 0:L+1,L+1:L+2), so that
# stage's memory is the head's: ln_f, its copy of the tied embedding, the logits buffer
# and the activations it keeps. One OpenMP thread per rank (2 or 4 ranks on 2 cores).
# Step time: median over steps 2..6 of the whole pipeline step (the head dominates).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/bench; mkdir -p $OUT
MPI="mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1"
B=4; T=256; L=2
if [ ! -f $OUT/loss_tokens.bin ]; then # uniform tokens < 50257 (llm.c files hold uint16)
  /usr/bin/python3 - <<'PY'
import numpy as np
n = 1 << 18
hdr = np.zeros(256, dtype="<i4"); hdr[:3] = [20240520, 1, n]
tok = np.random.default_rng(0).integers(0, 50257, n, dtype=np.uint16)
with open("build/bench/loss_tokens.bin", "wb") as f:
    f.write(hdr.tobytes()); f.write(tok.astype("<u2").tobytes())
PY
fi
table=$OUT/loss_chunk.md
{
echo "## Chunked loss against materialized logits (last stage)"
echo
echo "\`bash bench/loss_chunk.sh --record\`: $L blocks, n_embd 256, micro-batch $B x $T tokens; the"
echo "head alone on the last of 2 stages (x tp); one thread per rank. 'logits' is the runtime's"
echo "allocation for the loss (logits chunk + per-row statistics) on one last-stage rank, 'stage"
echo "peak' all its allocations at their peak, RSS the process's peak resident set (VmHWM)."
echo "Time: median step over steps 2..6."
echo
echo "| vocab | tp | --loss-chunk | logits MiB | stage peak MiB | RSS MiB | step ms | memory vs whole | time vs whole |"
echo "|---|---|---|---|---|---|---|---|---|"
} > $table
for V in 50257 250000; do
  for tp in 1 2; do
    ref_mem=; ref_ms=
    for chunk in $((B * T)) 0; do
      name=loss_${V}_tp${tp}_$chunk
      $MPI -np $((2 * tp)) build/zerotrain --n-layer $L --n-head 4 --n-embd 256 --vocab $V \
          --n-ctx $T --seq $T --micro-batch $B --pp 2 --tp $tp --partition 0:$((L + 1)),$((L + 1)):$((L + 2)) \
          --loss-chunk $chunk --steps 6 --val-every 0 --data $OUT/loss_tokens.bin \
          --log $OUT/$name.jsonl > $OUT/$name.out 2>&1 || { cat $OUT/$name.out; exit 1; }
      row=$(/usr/bin/python3 - $OUT/$name.jsonl <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ms = statistics.median(r["ms"] for r in recs if "ms" in r and r["step"] >= 2)
last = [r for r in recs if r.get("pp_rank") == 1 and r.get("tp_rank") == 0][0]
M = 1048576
print(last["mem_peak"]["logits"] / M, last["mem_peak_total"] / M, last["rss_peak"] / M, ms)
PY
)
      read lg peak rss ms <<<"$row"
      if [ "$chunk" != 0 ]; then ref_mem=$peak; ref_ms=$ms; label="$chunk (whole)"; else label="auto ($(grep -o "chunks of [0-9]*" $OUT/$name.out | cut -d' ' -f3))"; fi
      echo "| $V | $tp | $label | $(printf %.1f $lg) | $(printf %.1f $peak) | $(printf %.0f $rss) | $(printf %.1f $ms) | $(awk "BEGIN{printf \"%.2fx\", $peak/$ref_mem}") | $(awk "BEGIN{printf \"%.2fx\", $ms/$ref_ms}") |" >> $table
    done
  done
done
cat $table
if [ "${1:-}" = --record ]; then
  /usr/bin/python3 bench/results_section.py bench/RESULTS.md "## Chunked loss against materialized logits (last stage)" < $table
fi
