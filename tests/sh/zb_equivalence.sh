#!/usr/bin/env bash
# --schedule zb-h1 against --schedule 1f1b in the same layout: bit-identical. ZB-H1 splits
# each backward into an input-gradient pass and a weight-gradient pass run later, but every
# product, LayerNorm and bias gradient is the combined backward's own call on the same values,
# and the weight passes run in micro-batch order, so every gradient is summed in 1F1B's order
# (docs/design.md, "Pipeline"): the saved weights must be equal byte for byte (cmp) and every
# logged loss, gradient norm and validation loss equal as text. Layouts: pp 2 and 4; dp 2 with
# --zero 1; --tp 2 with and without --sequence-parallel; 8-bit AdamW; an embedding-only first
# stage and a head-only last one; --recompute full (every block and the first only) and
# selective; bf16; --overlap-comm on (nonblocking transfers, the reduction in buckets
# announced by the last weight pass). Then a 1F1B checkpoint resumed under zb-h1 (and back)
# equals the uninterrupted 1F1B run byte for byte.
set -euo pipefail
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_zb; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
common="--n-layer 4 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --micro-batch 2
        --steps 4 --lr 1e-3 --warmup 1 --val-every 2 --val-batches 1 --seed 5"
fail=0
run() { # name np extra...
  local name=$1 np=$2; shift 2
  $MPI -np $np $ZT_TRAIN $common "$@" --log $out/$name.jsonl --save $out/$name \
      > $out/$name.out 2>&1 || { tail -30 $out/$name.out; exit 1; }
}
figures() { grep -o '"\(loss\|grad_norm\|val_loss\)":[^,}]*' "$1"; }
same() { # name: the 1f1b and zb-h1 runs of one layout
  if cmp -s $out/$1_1f1b/model.safetensors $out/$1_zb/model.safetensors &&
     [ "$(figures $out/$1_1f1b.jsonl)" = "$(figures $out/$1_zb.jsonl)" ]; then
    echo "ok   $1: weights and every logged figure identical"
  else
    echo "FAIL $1: zb-h1 differs from 1f1b"; fail=1
  fi
}
layout() { # name np extra...
  local name=$1 np=$2; shift 2
  run ${name}_1f1b $np "$@" --schedule 1f1b
  run ${name}_zb $np "$@" --schedule zb-h1
  same $name
}
layout pp2 2 --pp 2 --grad-accum 4
layout pp4 4 --pp 4 --grad-accum 8
layout pp2_dp2_zero1 4 --pp 2 --dp 2 --zero 1 --grad-accum 4
layout pp2_tp2 4 --pp 2 --tp 2 --grad-accum 4
layout pp2_tp2_sp 4 --pp 2 --tp 2 --sequence-parallel --grad-accum 4
layout pp2_8bit 2 --pp 2 --optim adamw8bit --grad-accum 4
layout pp4_own_ends 4 --pp 4 --partition 0:1,1:3,3:5,5:6 --grad-accum 4
layout pp2_full 2 --pp 2 --recompute full --grad-accum 4
layout pp2_full1 2 --pp 2 --recompute full --recompute-layers 1 --grad-accum 4
layout pp2_sel_tp2_sp 4 --pp 2 --tp 2 --sequence-parallel --recompute selective --grad-accum 4
layout pp2_bf16 2 --pp 2 --param-dtype bf16 --grad-accum 4
layout pp2_dp2_overlap 4 --pp 2 --dp 2 --zero 1 --overlap-comm on --bucket-mib 0 --grad-accum 4
# resume across the schedules: 2 steps of 1f1b saved, then 2 more under zb-h1 (and the other
# way round) against 4 uninterrupted 1f1b steps
run r_1f1b_a 2 --pp 2 --grad-accum 4 --schedule 1f1b --ckpt-dir $out/ck1 --ckpt-every 2
run r_1f1b_zb 2 --pp 2 --grad-accum 4 --schedule zb-h1 --resume $out/ck1/step-2
run r_zb_a 2 --pp 2 --grad-accum 4 --schedule zb-h1 --ckpt-dir $out/ck2 --ckpt-every 2
run r_zb_1f1b 2 --pp 2 --grad-accum 4 --schedule 1f1b --resume $out/ck2/step-2
for r in r_1f1b_zb r_zb_1f1b; do
  if cmp -s $out/pp2_1f1b/model.safetensors $out/$r/model.safetensors; then
    echo "ok   $r: the resumed run's weights equal the uninterrupted 1f1b run's"
  else
    echo "FAIL $r: resumed weights differ"; fail=1
  fi
done
[ $fail = 0 ] && echo "PASS zb_equivalence"
exit $fail
