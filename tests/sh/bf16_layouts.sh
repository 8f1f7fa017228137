#!/usr/bin/env bash
# bf16 mixed precision in every layout against the single-rank bf16 run: the same seed, data
# and global batch trained for 6 steps must give the same losses and parameters within the
# bf16 bounds of tests/compare_models.py (--bf16: one bf16 ulp of each value plus what
# rounding the gradients in bf16 can do through Adam; derived in its docstring). dp with ZeRO
# 0 and 1, pp 2 and 4 (the tied embedding across the end stages), tp 2 (also with
# --sequence-parallel), and the headline
# --zero 1 --pp 4 --tp 2, for AdamW and 8-bit AdamW. The fp32 run of the same model is
# compared too, to show how far bf16 itself moves it (printed, not checked).
set -euo pipefail
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_bf16_layouts; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
PY=${PYTHON:-/usr/bin/python3}
common="--n-layer 4 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 3 --val-batches 1 --seed 11"
run() { # name np micro-batch grad-accum extra...
  local name=$1 np=$2 B=$3 A=$4; shift 4
  $MPI -np $np $ZT_TRAIN $common --micro-batch $B --grad-accum $A "$@" \
      --log $out/$name.jsonl --save $out/$name > $out/$name.out 2>&1 || { cat $out/$name.out; exit 1; }
}
fail=0
compare() { # a b extra...
  local a=$1 b=$2; shift 2
  $PY tests/compare_models.py $out/$a $out/$b --steps 6 --lr 1e-3 \
      --log-a $out/$a.jsonl --log-b $out/$b.jsonl "$@"
}
for opt in adamw adamw8bit; do
  O="--param-dtype bf16 --optim $opt"
  run base-$opt 1 2 4 $O
  run fp32-$opt 1 2 4 --optim $opt
  echo "== $opt: bf16 vs fp32 on one rank (how far bf16 moves the run; not checked)"
  compare fp32-$opt base-$opt --bf16 || true
  for cfg in "dp2z0 2 2 2 --zero 0" "dp2z1 2 2 2 --zero 1" "dp4z1 4 1 2 --zero 1" \
             "pp2 2 2 4 --pp 2" "pp4 4 2 4 --pp 4" "tp2 2 2 4 --tp 2" \
             "tp2sp 2 2 4 --tp 2 --sequence-parallel" \
             "pp4tp2z1 8 2 4 --zero 1 --pp 4 --tp 2"; do
    set -- $cfg
    name=$1-$opt; shift
    run $name "$@" $O
    echo "== $name vs single rank"
    compare base-$opt $name --bf16 || fail=1
  done
done
exit $fail
