#!/usr/bin/env bash
# `generate` stops at GPT-2's end-of-text token (50256) for a vocab-50257 model, also when
# --max-new allows more, and counts it as the one new token; a byte-level model has no such
# token and runs to --max-new. The weights are made so that greedy decoding must pick
# 50256: a trained 1-layer export whose final LayerNorm ignores its input (weight 0, bias
# b) gives every position the logits b . wte[v], and wte[50256] is set to 8 b.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/test_generate_eot; rm -rf $out; mkdir -p $out
PY=${PYTHON:-/usr/bin/python3}
$PY -c "import numpy" 2>/dev/null || { echo "numpy not importable by $PY"; exit 77; }
export OMP_NUM_THREADS=1
M=(--n-layer 1 --n-head 2 --n-embd 32 --n-ctx 32 --vocab 50257)
# random GPT-2 token ids to train one step on
$PY - $out/tokens.bin <<'PYEOF'
import sys, numpy as np
n = 4096
h = np.zeros(256, "<i4"); h[:3] = [20240520, 1, n]
with open(sys.argv[1], "wb") as f:
    f.write(h.tobytes()); f.write(np.random.default_rng(1).integers(0, 50257, n).astype("<u2").tobytes())
PYEOF
build/zerotrain "${M[@]}" --steps 1 --micro-batch 1 --seq 16 --val-every 0 \
  --data $out/tokens.bin --save $out/model > $out/train.out 2>&1 || { cat $out/train.out; exit 1; }
$PY - $out/model/model.safetensors <<'PYEOF'
import json, struct, sys, numpy as np
path = sys.argv[1]
raw = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
def view(name):
    key = next(k for k in head if k.endswith(name))
    a, b = head[key]["data_offsets"]
    shape = head[key]["shape"]
    return np.frombuffer(raw, "<f4", (b - a) // 4, 8 + n + a).reshape(shape)
lnw, lnb, wte = view("ln_f.weight"), view("ln_f.bias"), view("wte.weight")
b = np.linspace(-1, 1, lnb.size, dtype=np.float32)
lnw[:] = 0; lnb[:] = b; wte[50256] = 8 * b
open(path, "wb").write(raw)
PYEOF
fail=0
build/zerotrain generate --init-from $out/model --prompt-ids 11,12 --max-new 20 --temperature 0 \
  --ids > $out/gpt2.out 2> $out/gpt2.err || { cat $out/gpt2.err; fail=1; }
[ "$(tr -d '\n' < $out/gpt2.out)" = "50256" ] && grep -q " 1 new tokens" $out/gpt2.err &&
  echo "vocab 50257: stopped at 50256 after one token" ||
  { echo "FAIL: expected only 50256, got '$(cat $out/gpt2.out)'; $(cat $out/gpt2.err)"; fail=1; }
# sampled too: 50256 holds nearly all the probability (8|b|^2 above the rest)
build/zerotrain generate --init-from $out/model --prompt-ids 11 --max-new 20 --seed 3 \
  --ids > $out/sampled.out 2> $out/sampled.err || { cat $out/sampled.err; fail=1; }
[ "$(tr -d '\n' < $out/sampled.out)" = "50256" ] ||
  { echo "FAIL: sampled: expected only 50256, got '$(cat $out/sampled.out)'"; fail=1; }
# a byte model has no end-of-text token: --max-new tokens come out
build/zerotrain generate --model tiny --prompt-ids 1 --max-new 12 --ids > $out/bytes.out 2> $out/bytes.err ||
  { cat $out/bytes.err; fail=1; }
[ "$(wc -w < $out/bytes.out)" = 12 ] || { echo "FAIL: bytes: want 12 ids, got '$(cat $out/bytes.out)'"; fail=1; }
exit $fail
