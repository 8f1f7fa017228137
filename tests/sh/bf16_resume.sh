#!/usr/bin/env bash
# bf16 checkpoints (docs/checkpoints.md, "Another parameter dtype"): a bf16 run saves its
# fp32 master weights, so
# - a bf16 resume in the same layout continues bit for bit (on one rank and in --zero 1
#   --pp 2 --tp 2, where each rank's masters are its 1/dp shard), for AdamW and 8-bit AdamW:
#   had the masters been saved rounded to bf16, the next updates would start elsewhere;
# - the dtype may change on resume: an fp32 checkpoint resumed in bf16 and a bf16 one in
#   fp32 both run, and say so.
set -euo pipefail
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_bf16_resume; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
PY=${PYTHON:-/usr/bin/python3}
common="--n-layer 4 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 0 --seed 5"
run() { # name np extra...
  local name=$1 np=$2; shift 2
  $MPI -np $np $ZT_TRAIN $common "$@" --log $out/$name.jsonl > $out/$name.out 2>&1 \
      || { cat $out/$name.out; exit 1; }
}
fail=0
check() { echo "== $1"; shift; $PY tests/ckpt/compare_losses.py "$@" || fail=1; }
note() { # name pattern
  grep -q "$2" $out/$1.out || { echo "MISMATCH $1: no note '$2'"; fail=1; }
}
for opt in adamw adamw8bit; do
  B="--param-dtype bf16 --optim $opt"
  run r1-$opt 1 $B --micro-batch 2 --grad-accum 4 --ckpt-dir $out/ck-r1-$opt --ckpt-every 3
  run r1-$opt-res 1 $B --micro-batch 2 --grad-accum 4 --resume $out/ck-r1-$opt/step-3
  check "bf16, 1 rank, $opt: resumed at step 3 vs uninterrupted" $out/r1-$opt.jsonl \
      $out/r1-$opt-res.jsonl
  L8="--zero 1 --pp 2 --tp 2 --micro-batch 2 --grad-accum 2"
  run d8-$opt 8 $B $L8 --ckpt-dir $out/ck-d8-$opt --ckpt-every 3
  run d8-$opt-res 8 $B $L8 --resume $out/ck-d8-$opt/step-3
  check "bf16, dp2 pp2 tp2 zero1, $opt: resumed vs uninterrupted" $out/d8-$opt.jsonl \
      $out/d8-$opt-res.jsonl
done
# dtype switches: fp32 -> bf16 and bf16 -> fp32
run f32 1 --micro-batch 2 --grad-accum 4 --ckpt-dir $out/ck-f32 --ckpt-every 3
run f32-to-bf16 1 --param-dtype bf16 --micro-batch 2 --grad-accum 4 --resume $out/ck-f32/step-3
note f32-to-bf16 "trained fp32 parameters, this run bf16"
run bf16-to-f32 1 --micro-batch 2 --grad-accum 4 --resume $out/ck-r1-adamw/step-3
note bf16-to-f32 "trained bf16 parameters, this run fp32"
exit $fail
