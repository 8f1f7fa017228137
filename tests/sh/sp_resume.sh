#!/usr/bin/env bash
# Checkpoints under --sequence-parallel (docs/checkpoints.md): the option splits activations
# only, so a checkpoint does not depend on it.
# - saved with it, resumed with it (pp 2 x tp 2): every later loss equals the uninterrupted
#   run's bit for bit (the same arithmetic);
# - saved with it, resumed without it, and saved without it, resumed with it: the losses
#   equal the uninterrupted run's within float reassociation (rtol 1e-5, as
#   tests/sh/ckpt_resume.sh's layout changes: the LayerNorm gradients are summed in another
#   order);
# - the manifest records the option.
set -euo pipefail
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_sp_resume; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
PY=${PYTHON:-/usr/bin/python3}
common="--n-layer 4 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 0 --seed 5 --pp 2 --tp 2 --micro-batch 2 --grad-accum 2"
run() { # name extra...
  local name=$1; shift
  $MPI -np 4 $ZT_TRAIN $common "$@" --log $out/$name.jsonl > $out/$name.out 2>&1 \
      || { cat $out/$name.out; exit 1; }
}
fail=0
check() { echo "== $1"; shift; $PY tests/ckpt/compare_losses.py "$@" || fail=1; }
run sp --sequence-parallel --ckpt-dir $out/ck-sp --ckpt-every 3
run plain --ckpt-dir $out/ck-plain --ckpt-every 3
grep -q '"sequence_parallel": true' $out/ck-sp/step-3/manifest.json \
    || { echo "MISMATCH: the manifest does not record --sequence-parallel"; fail=1; }
grep -q '"sequence_parallel": false' $out/ck-plain/step-3/manifest.json \
    || { echo "MISMATCH: the manifest does not record its absence"; fail=1; }
run sp-sp --sequence-parallel --resume $out/ck-sp/step-3
check "saved with --sequence-parallel, resumed with it: bit for bit" $out/sp.jsonl $out/sp-sp.jsonl
run sp-plain --resume $out/ck-sp/step-3
check "saved with it, resumed without" $out/sp.jsonl $out/sp-plain.jsonl --rtol 1e-5
run plain-sp --sequence-parallel --resume $out/ck-plain/step-3
check "saved without it, resumed with it" $out/plain.jsonl $out/plain-sp.jsonl --rtol 1e-5
exit $fail
