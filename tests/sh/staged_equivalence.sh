#!/usr/bin/env bash
# Host staging in whole training runs, with the CPU as the device: --tensor-path staged sends every
# group's tensors through comm_staged.c (copies to host buffers, MPI, copies back; what a GPU
# rank sharing its GPU does) instead of plain MPI. Staging runs MPI's own operation on host
# copies, so the losses and the saved weights must be the plain run's bit for bit, in layouts
# that use every group: dp with ZeRO-1, pp with tp (pipeline sends, the tied embedding), bf16.
set -euo pipefail
out=build/test_staged; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
common="--n-layer 2 --n-head 4 --n-embd 64 --vocab 300 --n-ctx 64 --seq 32 --steps 4 --lr 1e-3
        --warmup 2 --val-every 2 --val-batches 1 --seed 5"
run() { # name path(auto|staged) np args...
  local name=$1 path=$2 np=$3; shift 3
  $MPI -np $np build/zerotrain $common --tensor-path $path "$@" \
      --log $out/$name.jsonl --save $out/$name > $out/$name.out 2>&1 || { cat $out/$name.out; exit 1; }
}
# the losses of every step and validation, without the timings
losses() { grep -o '"\(loss\|val_loss\|grad_norm\)":[^,}]*' "$1"; }
fail=0
for cfg in "dp4z1 4 --micro-batch 2 --grad-accum 2 --zero 1" \
           "pp2tp2 4 --micro-batch 2 --grad-accum 2 --pp 2 --tp 2" \
           "dp2tp2bf16 4 --micro-batch 2 --grad-accum 1 --tp 2 --zero 1 --param-dtype bf16"; do
  set -- $cfg; name=$1; np=$2; shift 2
  run $name.plain auto $np "$@"
  run $name.staged staged $np "$@"
  echo "== $name: staged vs plain MPI"
  grep "tensor paths:" $out/$name.staged.out | sed 's/^/    /'
  if ! grep -q "tensor paths: .*MPI with host staging" $out/$name.staged.out; then
    echo "MISMATCH $name: the staged run does not report its staged paths"; fail=1
  fi
  if grep -q "tensor paths:" $out/$name.plain.out; then
    echo "MISMATCH $name: the plain CPU run reports device paths"; fail=1
  fi
  if [ -z "$(losses $out/$name.plain.jsonl)" ] ||
     ! diff <(losses $out/$name.plain.jsonl) <(losses $out/$name.staged.jsonl) > /dev/null; then
    echo "MISMATCH $name: losses differ"; diff <(losses $out/$name.plain.jsonl) \
        <(losses $out/$name.staged.jsonl) | head -5; fail=1
  else echo "ok: $(losses $out/$name.plain.jsonl | wc -l) losses and norms bit-equal"; fi
  if ! diff -r $out/$name.plain $out/$name.staged > /dev/null; then
    echo "MISMATCH $name: saved models differ"; diff -r $out/$name.plain $out/$name.staged | head -3; fail=1
  else echo "ok: saved models byte-equal"; fi
done
exit $fail
