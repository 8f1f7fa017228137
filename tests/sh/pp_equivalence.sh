#!/usr/bin/env bash
# Pipeline parallel (with and without dp and ZeRO-1) against the single-rank run: the
# same seed, data and global batch trained for 6 steps must give the same losses and
# parameters (bounds in tests/compare_models.py). Covers pp 2 and 4, pp 3 on 5 layers
# (stages of unequal size), both schedules, every partition method that needs no planner,
# and the layout that hung another runtime: the embedding and the head on stages of their
# own, with dp 2 and --zero 1. Every run must also report the same collective sequence on
# every rank and, with pp > 1, bit-identical tied embedding copies.
set -euo pipefail
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_pp; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
common="--n-head 3 --n-embd 48 --vocab 256 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 3 --val-batches 1 --seed 11"
run() { # name np n_layer micro-batch grad-accum extra...
  local name=$1 np=$2 L=$3 B=$4 A=$5; shift 5
  $MPI -np $np $ZT_TRAIN $common --n-layer $L --micro-batch $B --grad-accum $A "$@" \
      --log $out/$name.jsonl --save $out/$name > $out/$name.out 2>&1 || { cat $out/$name.out; exit 1; }
  grep -q "the same sequence on every rank" $out/$name.out || { echo "$name: no collective check"; exit 1; }
}
fail=0
check() { # name base [expect tied line]
  echo "== $1 vs $2"
  "${PYTHON:-/usr/bin/python3}" tests/compare_models.py $out/$2 $out/$1 --steps 6 --lr 1e-3 \
      --log-a $out/$2.jsonl --log-b $out/$1.jsonl || fail=1
  if grep -q "pp [2-9]" $out/$1.out && ! grep -q "copies are bit-identical" $out/$1.out; then
    echo "MISMATCH $1: no bit-identical tied embedding report"; fail=1
  fi
}
run base4 1 4 2 4
run pp2 2 4 2 4 --pp 2
check pp2 base4
run pp2_gpipe 2 4 2 4 --pp 2 --schedule gpipe
check pp2_gpipe base4
run pp4 4 4 2 4 --pp 4
check pp4 base4
run pp2_params 2 4 2 4 --pp 2 --partition parameters
check pp2_params base4
run pp2_type 2 4 2 4 --pp 2 --partition "type:embed:3|transformer:1|head:3"
check pp2_type base4
run pp4_memory 4 4 2 4 --pp 4 --partition memory
check pp4_memory base4
run pp2_dp2_zero1 4 4 2 2 --pp 2 --zero 1
check pp2_dp2_zero1 base4
# embed alone on stage 0, head alone on stage 3, dp 2, ZeRO-1 (8 ranks)
run pp4_own_ends 8 4 2 2 --pp 4 --zero 1 --partition 0:1,1:3,3:5,5:6
check pp4_own_ends base4
run base5 1 5 2 3
run pp3_uneven 3 5 2 3 --pp 3
check pp3_uneven base5
# the printed partition names the stages and their memory
grep -q "stage 0: embed" $out/pp4_own_ends.out && grep -q "stage 3: .*MiB" $out/pp4_own_ends.out \
  || { echo "MISMATCH: partition / per-stage memory not printed"; fail=1; }
exit $fail
