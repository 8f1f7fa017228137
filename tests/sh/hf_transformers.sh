#!/usr/bin/env bash
# Hugging Face transformers itself loads what zerotrain writes: a --save directory of a
# pp 2 x tp 2 run and the `zerotrain export` of its checkpoint load with
# GPT2LMHeadModel.from_pretrained, and their loss on the validation tokens equals
# zerotrain's validation loss (rtol 1e-4: fp32 in both, summed in another order). The model is
# byte-level (vocabulary 256): both directories hold only model.safetensors and config.json,
# whose bos/eos are null (tests/sh/hf_tokenizer*.sh cover GPT-2's vocabulary).
# Needs torch and transformers for ${PYTHON:-/usr/bin/python3}; skips (77) without them.
set -euo pipefail
PY=${PYTHON:-/usr/bin/python3}
if ! $PY -c "import torch, transformers" 2>/dev/null; then
  echo "SKIP: torch and transformers are not installed for $PY (pip install torch transformers)"
  exit 77
fi
out=build/test_hf_transformers; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
val=build/data/default_val.bin
$MPI -np 4 build/zerotrain --n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 \
    --steps 4 --pp 2 --tp 2 --zero 1 --micro-batch 2 --grad-accum 2 --val-every 4 --val-batches 2 \
    --val-data $val --save $out/saved --ckpt-dir $out/ck --log $out/run.jsonl > $out/run.out 2>&1 \
    || { cat $out/run.out; exit 1; }
build/zerotrain export $out/ck --out $out/exported
ours=$(grep val_loss $out/run.jsonl | tail -1 | sed 's/.*"val_loss":\([0-9.]*\).*/\1/')
fail=0
for d in saved exported; do
  theirs=$($PY tests/ckpt/hf_val_loss.py $out/$d $val 32 8)  # 2 val batches x 4 sequences
  echo "$d: transformers $theirs, zerotrain $ours"
  $PY -c "import sys; a,b=$theirs,$ours; sys.exit(0 if abs(a-b) <= 1e-4*abs(b) else 1)" || fail=1
  [ "$(ls $out/$d | tr '\n' ' ')" = "config.json model.safetensors " ] || { echo "FAIL $d: files $(ls $out/$d)"; fail=1; }
  grep -q '"bos_token_id": null,' $out/$d/config.json && grep -q '"eos_token_id": null,' $out/$d/config.json ||
    { echo "FAIL $d: config.json bos/eos: $(grep _token_id $out/$d/config.json)"; fail=1; }
done
exit $fail
