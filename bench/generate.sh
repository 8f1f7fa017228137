#!/usr/bin/env bash
# Generation at batch 1: `zerotrain generate` against Hugging Face transformers (Debian's
# PyTorch, fp32, CPU) on the same GPT-2 124M weights (random, saved once by zerotrain), greedy,
# for prompts of several lengths. Reports the prompt's time (the prefill: zerotrain feeds it in
# chunks of ZT_DECODER_ROWS positions, transformers in one forward) and the time per new
# token (one decoder step through the KV cache), medians of ROUNDS runs each, the ratio of the
# two in the same command, and whether both sides chose the same greedy tokens (random weights
# have near-ties that fp32 rounding may tip: a difference is reported, not an error).
#   bash bench/generate.sh                        # writes its section of bench/RESULTS.md
#   NO_RESULTS=1 PROMPTS="16 256" bash bench/generate.sh
#   ZT_BASE=/path/to/other/zerotrain bash bench/generate.sh   # also another build
set -euo pipefail
cd "$(dirname "$0")/.."
ZT=${ZT:-build/zerotrain}
ZT_BASE=${ZT_BASE:-}
PY=${PYTHON:-/usr/bin/python3}
PROMPTS=${PROMPTS:-16 256 1000}
NEW=${NEW:-24}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-$(nproc)}
"$PY" -c "import torch, transformers" 2>/dev/null ||
  { echo "bench/generate.sh: needs torch and transformers for $PY (bash scripts/setup.sh)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_bench_gen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "saving GPT-2 124M (random weights) to $tmp/gpt2 ..." >&2
"$ZT" --model gpt2 --seed 1 --steps 1 --micro-batch 1 --seq 64 --save "$tmp/gpt2" \
  >"$tmp/save.log" 2>&1 || { cat "$tmp/save.log"; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# zerotrain's stderr line: "generate: prompt P tokens in X s; N new tokens in Y s ..."
zt_rounds() { # binary ids -> lines "prompt X decode Y steps N-1 ids ..."
  for r in $(seq "$ROUNDS"); do
    OMP_NUM_THREADS=$THREADS "$1" generate --init-from "$tmp/gpt2" --prompt-ids "$2" \
      --max-new "$NEW" --temperature 0 --ids 2>"$tmp/err" >"$tmp/ids" ||
      { cat "$tmp/err"; exit 1; }
    sed -n 's/^generate: prompt [0-9]* tokens in \([0-9.]*\) s; \([0-9]*\) new tokens in \([0-9.]*\) s.*/prompt \1 decode \3 steps \2/p' "$tmp/err" |
      awk -v ids="$(cat "$tmp/ids")" '{printf "%s %s %s %s %s %d ids %s\n", $1, $2, $3, $4, $5, $6 - 1, ids}'
  done
}
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}'; }
ms_prompt() { field prompt | median | awk '{printf "%.0f", $1 * 1000}'; }
ms_token() { awk '{for (i = 1; i < NF; i++) { if ($i == "decode") d = $(i+1); if ($i == "steps") s = $(i+1) } print d / s * 1000}' | median | awk '{printf "%.1f", $1}'; }
ids_of() { head -1 | sed 's/.* ids //'; }

rows=""
for P in $PROMPTS; do
  ids=$(awk -v n="$P" 'BEGIN {for (i = 0; i < n; i++) printf "%s%d", i ? "," : "", (i * 7919 + 13) % 50000}')
  echo "== prompt $P tokens, $NEW new, $ROUNDS rounds: zerotrain" >&2
  zt_rounds "$ZT" "$ids" >"$tmp/zt"
  echo "== prompt $P tokens: transformers" >&2
  "$PY" bench/torch_generate.py "$tmp/gpt2" "$ids" "$NEW" "$THREADS" "$ROUNDS" >"$tmp/th"
  zp=$(ms_prompt <"$tmp/zt") zt=$(ms_token <"$tmp/zt") tp=$(ms_prompt <"$tmp/th") tt=$(ms_token <"$tmp/th")
  same=no; [ "$(ids_of <"$tmp/zt")" = "$(ids_of <"$tmp/th")" ] && same=yes
  row="| $P | $zp | $tp | $(awk -v a="$tp" -v b="$zp" 'BEGIN {printf "%.2fx", a / b}') | $zt | $tt | $(awk -v a="$tt" -v b="$zt" 'BEGIN {printf "%.2fx", a / b}') | $same |"
  if [ -n "$ZT_BASE" ]; then
    echo "== prompt $P tokens: $ZT_BASE" >&2
    zt_rounds "$ZT_BASE" "$ids" >"$tmp/base"
    bp=$(ms_prompt <"$tmp/base") bt=$(ms_token <"$tmp/base")
    row="$row $bp | $(awk -v a="$bp" -v b="$zp" 'BEGIN {printf "%.2fx", a / b}') | $bt |"
  fi
  rows="$rows$row
"
  echo "$row" >&2
done
hdr="| prompt tokens | zerotrain prompt ms | transformers prompt ms | transformers / zerotrain | zerotrain ms per new token | transformers ms per new token | transformers / zerotrain | same greedy tokens |"
sep="|---|---|---|---|---|---|---|---|"
if [ -n "$ZT_BASE" ]; then hdr="$hdr other build prompt ms | other / zerotrain | other build ms per new token |"; sep="$sep---|---|---|"; fi
cpu=$(lscpu | sed -n 's/^Model name: *//p')
section="## Generation at batch 1 (\`zerotrain generate\` vs transformers)

GPT-2 124M (12 layers, 768 channels, vocabulary 50257), random weights saved by zerotrain
(\`--model gpt2 --seed 1\`), fp32 on the CPU, greedy, $NEW new tokens, $THREADS threads on both
sides ($(nproc) cores, $cpu), medians of $ROUNDS runs; measured $(date -u '+%Y-%m-%d %H:%M UTC').
Transformers $("$PY" -c 'import transformers; print(transformers.__version__)') on PyTorch $("$PY" -c 'import torch; print(torch.__version__)').
Prompt ms: the prefill, up to the first new token's logits. Ms per new token: each later token,
one step through the KV cache.

$hdr
$sep
$rows
Command: \`${ZT_BASE:+ZT_BASE=$ZT_BASE }bash bench/generate.sh\` (PROMPTS=\"$PROMPTS\" NEW=$NEW ROUNDS=$ROUNDS THREADS=$THREADS)."
echo "$section"
if [ -z "${NO_RESULTS:-}" ]; then
  "$PY" bench/results_section.py bench/RESULTS.md "## Generation at batch 1 (\`zerotrain generate\` vs transformers)" <<<"$section"
  echo "bench/generate.sh: wrote its section of bench/RESULTS.md" >&2
fi
