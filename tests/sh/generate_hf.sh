#!/usr/bin/env bash
# Greedy generation token for token equal to Hugging Face transformers' greedy `generate`
# on the same weights (a --save directory): a byte-level model trained for 400 steps (its greedy text is " the the t the ...": not one token repeated) with
# a text prompt, and a GPT-2-vocabulary model (50257) after 2 steps with id prompts, whose
# <|endoftext|> stop both sides share. Both sides are fp32; their logits differ by rounding
# (~1e-6), far below the gaps greedy decoding picks between on these models. The byte-level
# export has no end-of-text token: config.json's bos/eos are null (not GPT2Config's default
# 50256), transformers' generation_config keeps eos None, generate runs to max_new_tokens, and
# no tokenizer files are written.
# Needs torch and transformers for ${PYTHON:-/usr/bin/python3}; skips (77) without them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY=${PYTHON:-/usr/bin/python3}
if ! $PY -c "import torch, transformers" 2>/dev/null; then
  echo "SKIP: torch and transformers are not installed for $PY (pip install torch transformers)"
  exit 77
fi
out=build/test_generate_hf; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
ZT=build/zerotrain
$ZT --n-layer 2 --n-head 4 --n-embd 64 --n-ctx 64 --seq 64 --micro-batch 8 --steps 400 \
    --lr 4e-3 --warmup 20 --save $out/bytes > $out/bytes.out 2>&1 || { cat $out/bytes.out; exit 1; }
$ZT --n-layer 2 --n-head 2 --n-embd 32 --vocab 50257 --n-ctx 48 --seq 16 --micro-batch 2 \
    --steps 2 --save $out/gpt2vocab > $out/gpt2vocab.out 2>&1 || { cat $out/gpt2vocab.out; exit 1; }
fail=0
check() { # dir, prompt ids, max new, [full: both must give exactly max new tokens]
  local ours theirs
  ours=$($ZT generate --init-from $1 --prompt-ids $2 --max-new $3 --temperature 0 --ids 2>/dev/null)
  theirs=$($PY tests/generate_hf.py $1 $2 $3 2>/dev/null)
  if [ "${4:-}" = full ] && [ "$(echo $theirs | wc -w)" != $3 ]; then
    echo "SHORT $(basename $1) prompt $2: transformers gave $(echo $theirs | wc -w) tokens, not $3: $theirs"
    fail=1
  elif [ -n "$ours" ] && [ "$ours" = "$theirs" ]; then
    echo "ok   $(basename $1) prompt $2: $(echo $ours | wc -w) tokens equal: ${ours:0:70}..."
  else
    echo "MISMATCH $(basename $1) prompt $2:"; echo "  zerotrain:    $ours"; echo "  transformers: $theirs"
    fail=1
  fi
}
check $out/bytes 84,104,105,115,32,76,105,99,101,110,115,101 40 full   # "This License"
check $out/bytes 10 60 full
check $out/bytes 89,111,117,32,109,97,121 50 full   # "You may"
[ "$(ls $out/bytes | tr '\n' ' ')" = "config.json model.safetensors " ] ||
  { echo "FAIL: the byte-level export has other files: $(ls $out/bytes)"; fail=1; }
$PY - $out/bytes <<'PY' || fail=1
import json, sys
from transformers import GPT2LMHeadModel
c = json.load(open(sys.argv[1] + "/config.json"))
g = GPT2LMHeadModel.from_pretrained(sys.argv[1]).generation_config
ok = c["bos_token_id"] is None and c["eos_token_id"] is None and g.eos_token_id is None and g.bos_token_id is None
print(("ok   " if ok else "FAIL ") + f"bytes: config.json bos/eos {c['bos_token_id']}/{c['eos_token_id']}, "
      f"generation_config {g.bos_token_id}/{g.eos_token_id}")
sys.exit(0 if ok else 1)
PY
check $out/gpt2vocab 50256 40
check $out/gpt2vocab 464,2068,7586,21831 30
check $out/gpt2vocab 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20 27  # to n_ctx
exit $fail
