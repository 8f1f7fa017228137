#!/usr/bin/env bash
# `zerotrain eval` against Hugging Face transformers' loss on the same tokens (the first 12
# sequences of 32 tokens of the default validation split, what eval reads with
# --micro-batch 2 --grad-accum 2 --val-batches 3 on one rank):
# - a model zerotrain trained and exported (`zerotrain export` of its checkpoint);
# - a model transformers itself made and saved (save_pretrained, safetensors), with weights
#   of standard deviation 0.3 so its loss is far from uniform's; on one rank and on
#   --pp 2 --tp 2.
# Tolerance: both compute in fp32 and may order every sum differently: per block the
# LayerNorm means, c_attn, the attention scores and weighted sums, c_proj, c_fc and the MLP's
# c_proj (at most 8 sums), then ln_f, the lm-head and the log-sum-exp; each of at most 256
# terms here, each reordering within 2 gamma_256 (gamma_K = K u / (1 - K u), u = 2^-24)
# relative. Taking the operations between sums as not amplifying relative errors:
# (8L + 3) 2 gamma_256 = 5.8e-4 relative for L = 2.
# Needs torch and transformers for ${PYTHON:-/usr/bin/python3}; skips (77) without them.
set -euo pipefail
PY=${PYTHON:-/usr/bin/python3}
if ! $PY -c "import torch, transformers" 2>/dev/null; then
  echo "SKIP: torch and transformers are not installed for $PY (pip install torch transformers)"
  exit 77
fi
out=build/test_eval_hf; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root ) -x OMP_NUM_THREADS"
ZT=build/zerotrain
val=build/data/default_val.bin
E="--seq 32 --micro-batch 2 --grad-accum 2 --val-batches 3 --val-data $val"
fail=0
loss_of() { $PY -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["loss"]))' "$1"; }
compare() { # ours theirs what
  if $PY -c "import sys; a,b=$1,$2; sys.exit(0 if abs(a-b) <= 5.8e-4*abs(b) else 1)"; then
    echo "ok   $3: zerotrain $1, transformers $2"
  else echo "FAIL $3: zerotrain $1, transformers $2 (tolerance 5.8e-4 relative)"; fail=1; fi
}

# a model zerotrain trained (2 stages x 2 tp ranks) and exported from its checkpoint
$MPI -np 4 $ZT --n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --steps 6 \
    --lr 1e-3 --pp 2 --tp 2 --micro-batch 2 --grad-accum 2 --ckpt-dir $out/ck > $out/train.out 2>&1 \
    || { cat $out/train.out; exit 1; }
$ZT export $out/ck --out $out/exported > /dev/null
$ZT eval --init-from $out/exported $E --json > $out/exported.json
compare "$(loss_of $out/exported.json)" "$($PY tests/ckpt/hf_val_loss.py $out/exported $val 32 12)" \
  "a zerotrain export"

# a model transformers made
$PY - $out/hf_made <<'EOF'
import sys
import torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(5)
cfg = GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                 initializer_range=0.3, bos_token_id=None, eos_token_id=None)
GPT2LMHeadModel(cfg).save_pretrained(sys.argv[1], safe_serialization=True)
EOF
theirs=$($PY tests/ckpt/hf_val_loss.py $out/hf_made $val 32 12)
$ZT eval --init-from $out/hf_made $E --json > $out/hf_made.json
compare "$(loss_of $out/hf_made.json)" "$theirs" "a transformers model, one rank"
$MPI -np 4 $ZT eval --init-from $out/hf_made $E --pp 2 --tp 2 --json > $out/hf_made_4.json
compare "$(loss_of $out/hf_made_4.json)" "$theirs" "a transformers model, --pp 2 --tp 2"
# far from uniform, so the comparison is not of two near-uniform models
$PY -c "import sys; sys.exit(0 if abs($theirs - 5.545177) > 0.5 else 1)" ||
  { echo "FAIL the transformers model's loss $theirs is near uniform's"; fail=1; }
exit $fail
