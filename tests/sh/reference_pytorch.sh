#!/usr/bin/env bash
# Regenerates the PyTorch reference (never trusts a stale file) and compares the C model
# against it (tests/test_reference.c): logits, loss, gradients, AdamW steps. Then runs
# the real binary from the same checkpoint and data (one rank, then tp 2 and tp 4, each
# also with --sequence-parallel) and
# compares its logged step losses and saved weights.
set -euo pipefail
dir=build/ref
rm -rf "$dir" && mkdir -p "$dir"
"${PYTHON:-/usr/bin/python3}" tests/reference/gpt2_ref.py --out "$dir" > "$dir/ref.log"
ZT_REF_DIR=$dir build/zt_tests reference_pytorch
# The real binary from the same checkpoint and data, with the reference's hyperparameters.
c=$dir/config.json
get() { "${PYTHON:-/usr/bin/python3}" -c "import json;print(json.load(open('$c'))['$1'])"; }
args=(--init-from $dir/model.bin --data $dir/train.bin
    --vocab $(get vocab) --n-ctx $(get n_ctx) --n-layer $(get n_layer) --n-head $(get n_head)
    --n-embd $(get n_embd) --micro-batch $(get micro_batch) --seq $(get seq)
    --grad-accum $(get grad_accum) --steps $(get steps) --lr $(get lr) --lr-schedule constant
    --warmup 0 --weight-decay $(get weight_decay) --beta1 $(get beta1) --beta2 $(get beta2)
    --eps $(get eps) --grad-clip $(get grad_clip) --val-every 0)
OMP_NUM_THREADS=2 build/zerotrain "${args[@]}" --log $dir/run.jsonl --save $dir/run > $dir/run.out
"${PYTHON:-/usr/bin/python3}" tests/reference/check_run.py $dir $dir/run.jsonl $dir/run
# Full activation recomputation (the block's forward again in its backward) against PyTorch too
OMP_NUM_THREADS=2 build/zerotrain "${args[@]}" --recompute full --log $dir/run_rc.jsonl \
    --save $dir/run_rc > $dir/run_rc.out
"${PYTHON:-/usr/bin/python3}" tests/reference/check_run.py $dir $dir/run_rc.jsonl $dir/run_rc
# The same checkpoint (vocabulary 300 padded to 384 in the file) under tp 2 and 4, where
# the run pads it to 512: the padding is remade, and the tp run must match PyTorch too.
# Each also with --sequence-parallel (LayerNorms and residual stream split by rows).
for tp in 2 4; do
  for sp in "" --sequence-parallel; do
    name=run_tp$tp${sp:+_sp}
    echo "== tp $tp${sp:+ $sp} from the same checkpoint"
    OMP_NUM_THREADS=1 mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS -np $tp \
        build/zerotrain "${args[@]}" --tp $tp $sp --log $dir/$name.jsonl --save $dir/$name \
        > $dir/$name.out
    grep -q "padded 512" $dir/$name.out || { echo "tp $tp: vocabulary not padded to 512"; exit 1; }
    if [ -n "$sp" ]; then
      grep -q "^sequence parallel: each tp rank holds" $dir/$name.out \
          || { echo "tp $tp: --sequence-parallel not in effect"; exit 1; }
    fi
    "${PYTHON:-/usr/bin/python3}" tests/reference/check_run.py $dir $dir/$name.jsonl $dir/$name
  done
done
