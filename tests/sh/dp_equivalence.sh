#!/usr/bin/env bash
# Data parallel and ZeRO-1 against the single-rank run: the same seed, data and global
# batch (12 sequences) trained for 6 steps must give the same losses and parameters
# (bounds in tests/compare_models.py). The model's sizes (n_embd 48, 3 heads) make a
# parameter count that neither 3 nor 4 divides, so ZeRO shards need padding.
set -euo pipefail
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_dp; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
common="--n-layer 2 --n-head 3 --n-embd 48 --vocab 256 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 0 --seed 7"
run() { # name np micro-batch grad-accum zero
  $MPI -np $2 $ZT_TRAIN $common --micro-batch $3 --grad-accum $4 --zero $5 \
      --log $out/$1.jsonl --save $out/$1 > $out/$1.out 2>&1 || { cat $out/$1.out; exit 1; }
}
run base 1 4 3 0
fail=0
for cfg in "dp2z0 2 3 2 0" "dp2z1 2 6 1 1" "dp3z1 3 4 1 1" "dp4z1 4 3 1 1" "dp2z1acc 2 2 3 1"; do
  set -- $cfg
  run "$@"
  echo "== $1 vs single rank"
  "${PYTHON:-/usr/bin/python3}" tests/compare_models.py $out/base $out/$1 --steps 6 --lr 1e-3 \
      --log-a $out/base.jsonl --log-b $out/$1.jsonl || fail=1
done
# ZeRO-1 holds 1/dp of the optimizer state on each rank (up to the dp*256 padding);
# --zero 0 holds all of it on every rank.
opt_bytes() { grep "optimizer bytes per rank" $out/$1.out | cut -d: -f2; }
base=$(opt_bytes base)
for cfg in "dp2z0 2 0" "dp2z1 2 1" "dp3z1 3 1" "dp4z1 4 1"; do
  set -- $cfg
  for b in $(opt_bytes $1); do
    want=$(( $3 == 1 ? base / $2 : base )); slack=$(( $2 * 256 * 8 ))
    if [ $(( b > want ? b - want : want - b )) -gt $slack ]; then
      echo "MISMATCH $1: a rank holds $b optimizer bytes, expected $want (+-$slack)"; fail=1
    fi
  done
  echo "$1: optimizer bytes per rank:$(opt_bytes $1) (single rank: $base)"
done
exit $fail
