#!/usr/bin/env bash
# Tensor parallel (alone and with pp, dp and ZeRO-1) against the single-rank run: the
# same seed, data and global batch trained for 6 steps must give the same losses and
# parameters (bounds in tests/compare_models.py). vocab 300 pads to 512 under tp 2 and 4
# (256 at tp 1): at tp 4 rank 2's slice holds 44 real tokens and rank 3's none, so the
# vocab-parallel loss and embedding see a slice of padding only. Every run must report
# the same collective sequence on every rank and bit-identical tp replicas (LayerNorms,
# biases), and with pp > 1 bit-identical tied embedding copies.
set -euo pipefail
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_tp; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
common="--n-layer 4 --n-head 4 --n-embd 64 --vocab 300 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 3 --val-batches 1 --seed 11"
run() { # name np micro-batch grad-accum extra...
  local name=$1 np=$2 B=$3 A=$4; shift 4
  $MPI -np $np $ZT_TRAIN $common --micro-batch $B --grad-accum $A "$@" \
      --log $out/$name.jsonl --save $out/$name > $out/$name.out 2>&1 || { cat $out/$name.out; exit 1; }
}
fail=0
expect_line() { # name pattern what
  grep -q "$2" $out/$1.out || { echo "MISMATCH $1: no '$3' report"; fail=1; }
}
check() { # name base
  echo "== $1 vs $2"
  "${PYTHON:-/usr/bin/python3}" tests/compare_models.py $out/$2 $out/$1 --steps 6 --lr 1e-3 \
      --log-a $out/$2.jsonl --log-b $out/$1.jsonl || fail=1
  expect_line $1 "the same sequence on every rank" "same collectives"
  if grep -q "x tp [2-9]" $out/$1.out; then expect_line $1 "bit-identical across tp" "tp replicas"; fi
  if grep -q "x pp [2-9]" $out/$1.out; then expect_line $1 "copies are bit-identical" "tied copies"; fi
}
run base 1 2 4
run tp2 2 2 4 --tp 2
check tp2 base
run tp4 4 2 4 --tp 4
check tp4 base
run tp2_chunk 2 2 4 --tp 2 --loss-chunk 24   # chunks of 24 tokens, a short last one
check tp2_chunk base
# (dp, pp, tp) = (2, 2, 2) with ZeRO-1, both schedules
run dp2_pp2_tp2_zero1 8 2 2 --dp 2 --pp 2 --tp 2 --zero 1
check dp2_pp2_tp2_zero1 base
run dp2_pp2_tp2_gpipe 8 2 2 --dp 2 --pp 2 --tp 2 --zero 0 --schedule gpipe
check dp2_pp2_tp2_gpipe base
# the headline layout: mpirun -np 8 zerotrain train --zero 1 --pp 4 --tp 2
run pp4_tp2_zero1 8 2 4 --zero 1 --pp 4 --tp 2
check pp4_tp2_zero1 base
exit $fail
