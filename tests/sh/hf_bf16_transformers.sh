#!/usr/bin/env bash
# Hugging Face transformers loads a bf16 export as bf16: a --save-dtype bf16 directory of a
# pp 2 run, loaded with GPT2LMHeadModel.from_pretrained(dir, torch_dtype="auto") (transformers
# takes config.json's torch_dtype only under "auto"; by default it loads float32), has every
# parameter torch.bfloat16 and equal to PyTorch's own rounding of the checkpoint's fp32 export
# (tests/ckpt/hf_bf16_load.py), and runs. Needs torch and transformers for
# ${PYTHON:-/usr/bin/python3} (Debian's python3-torch imports only there); skips (77) without.
set -euo pipefail
PY=${PYTHON:-/usr/bin/python3}
if ! $PY -c "import torch, transformers, numpy" 2>/dev/null; then
  echo "SKIP: torch, transformers and numpy are not all installed for $PY (pip install torch transformers)"
  exit 77
fi
out=build/test_hf_bf16_transformers; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
$MPI -np 2 build/zerotrain --n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 \
    --micro-batch 2 --grad-accum 2 --val-every 0 --steps 3 --pp 2 --save $out/saved \
    --save-dtype bf16 --ckpt-dir $out/ck > $out/run.out 2>&1 || { cat $out/run.out; exit 1; }
build/zerotrain export $out/ck --out $out/e32 --dtype fp32 > /dev/null
$PY tests/ckpt/hf_bf16_load.py $out/saved $out/e32
