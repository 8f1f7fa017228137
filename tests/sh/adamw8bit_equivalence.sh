#!/usr/bin/env bash
# adamw8bit across layouts against its single-rank run: quantization blocks follow
# tensor and shard boundaries, so dp, ZeRO-1 and pipeline stages change nothing but float
# reassociation (bounds in tests/compare_models.py). So does tp: every tp slice is a
# contiguous range of its tensor (row-parallel weights are stored (in, out)), and with
# n_embd 64 every 8-bit slice is a whole number of 256-value blocks (n_embd^2/tp; the
# biases, under the default 4096-value threshold, keep fp32 state). The parameter bounds are
# compare_models.py's 8-bit ones (--adamw8bit: a travel bound for every element and a share
# of one-code flips, both derived in its docstring from kernels/quant8_math.h's maps).
set -euo pipefail
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_8bit; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
common="--n-layer 4 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 3 --val-batches 1 --seed 5 --optim adamw8bit"
run() { # name np micro-batch grad-accum extra...
  local name=$1 np=$2 B=$3 A=$4; shift 4
  $MPI -np $np $ZT_TRAIN $common --micro-batch $B --grad-accum $A "$@" \
      --log $out/$name.jsonl --save $out/$name > $out/$name.out 2>&1 || { cat $out/$name.out; exit 1; }
}
run base 1 2 4
fail=0
for cfg in "dp2z1 2 2 2 --zero 1" "dp4z1 4 1 2 --zero 1" "pp2dp2z1 4 2 2 --pp 2 --zero 1" \
           "pp4 4 2 4 --pp 4 --partition memory" "tp2 2 2 4 --tp 2" \
           "pp2tp2z1 4 2 4 --pp 2 --tp 2 --zero 1" "dp2pp2tp2z1 8 2 2 --pp 2 --tp 2 --zero 1"; do
  set -- $cfg
  run "$@"
  echo "== $1 vs single rank"
  "${PYTHON:-/usr/bin/python3}" tests/compare_models.py $out/base $out/$1 --steps 6 --lr 1e-3 \
      --adamw8bit --log-a $out/base.jsonl --log-b $out/$1.jsonl || fail=1
done
# the 8-bit state is what ZeRO shards: each dp rank holds about half of dp 1's bytes
b1=$(grep "optimizer bytes per rank" $out/base.out | awk '{print $NF}')
b2=$(grep "optimizer bytes per rank" $out/dp2z1.out | awk '{print $NF}')
echo "adamw8bit optimizer bytes per rank: dp 1 $b1, dp 2 with --zero 1 $b2"
[ $(( b2 * 2 )) -le $(( b1 + 4096 )) ] || { echo "MISMATCH: ZeRO-1 did not shard the 8-bit state"; fail=1; }
exit $fail
