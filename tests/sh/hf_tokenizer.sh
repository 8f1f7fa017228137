#!/usr/bin/env bash
# The tokenizer files of a GPT-2-vocabulary export (50257) load in Hugging Face transformers
# offline and tokenize as GPT-2 does: GPT2Tokenizer, GPT2TokenizerFast and AutoTokenizer from
# the --save directory give tiktoken's gpt2 ids (tiktoken loading the same gpt2.tiktoken) and
# `zerotrain prepare --tokenizer gpt2`'s on the GPL-3, many scripts, whitespace runs, digits,
# contractions, emoji, control characters, long runs and random text (tests/bpe_tiktoken.py's
# valid-UTF-8 cases), decode them back to the text, and bos = eos = 50256 in config.json and
# in GPT2LMHeadModel's generation_config (tests/hf_tokenizer.py). The `zerotrain export` of the
# run's checkpoint writes the same tokenizer files. Needs torch, transformers and tiktoken
# (installed with pip when missing) for ${PYTHON:-/usr/bin/python3} and the vocabulary; SKIPs
# (77) without them.
set -u
cd "$(dirname "$0")/../.."
source tests/env.sh
PY=${PYTHON:-/usr/bin/python3}
out=build/test_hf_tokenizer; rm -rf $out; mkdir -p $out
zt_gpt2_vocab $out/cache || { echo "SKIP: no gpt2.tiktoken and cannot fetch it (offline?)"; exit 77; }
if ! "$PY" -c "import torch, transformers, tokenizers" 2>/dev/null; then
  echo "SKIP: torch and transformers are not installed for $PY (pip install torch transformers)"
  exit 77
fi
if ! "$PY" -c "import tiktoken, numpy" 2>/dev/null; then
  "$PY" -m pip install -q tiktoken 2>/dev/null || "$PY" -m pip install -q --break-system-packages tiktoken ||
    { echo "SKIP: tiktoken is not installed and pip cannot install it (offline?)"; exit 77; }
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
build/zerotrain --n-layer 1 --n-head 2 --n-embd 32 --vocab 50257 --n-ctx 64 --seq 16 --micro-batch 1 \
    --steps 2 --val-every 0 --save $out/saved --ckpt-dir $out/ck > $out/run.out 2>&1 || { cat $out/run.out; exit 1; }
build/zerotrain export $out/ck --out $out/exported > $out/export.out 2>&1 || { cat $out/export.out; exit 1; }
fail=0
for f in vocab.json merges.txt special_tokens_map.json tokenizer_config.json; do
  cmp -s $out/saved/$f $out/exported/$f || { echo "FAIL: export's $f differs from --save's"; fail=1; }
done
"$PY" tests/bpe_tiktoken.py corpus $out/c > /dev/null || exit 1
files=(); for c in gpl3 scripts whitespace digits contractions emoji control long_runs random_text; do
  files+=("$out/c/$c.txt"); done
build/zerotrain prepare --tokenizer gpt2 --vocab "$VOCAB" $(printf -- '--text %s ' "${files[@]}") \
    --out $out/ids.bin > $out/prepare.out 2>&1 || { cat $out/prepare.out; exit 1; }
"$PY" tests/hf_tokenizer.py $out/saved "$VOCAB" $out/ids.bin "${files[@]}" || fail=1
exit $fail
