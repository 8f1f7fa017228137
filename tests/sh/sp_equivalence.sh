#!/usr/bin/env bash
# Sequence parallelism (--sequence-parallel) against the single-rank run: with the rows of
# the residual stream and the LayerNorms split over tp (tp 2; tp 4 with a short last loss
# chunk, also through host staging; pp 2 x tp 2 under GPipe; dp 2 x pp 2 x tp 2 with ZeRO-1
# and 8-bit AdamW), the same seed, data and global batch
# trained for 6 steps must give the same losses and parameters within float reassociation
# (the bounds of tests/compare_models.py, as the tp runs of tp_equivalence.sh), every rank
# must report the same collective sequence, the tp replicas (LayerNorms, whose gradients
# each rank now computes from its own rows and sums over tp, and biases) must stay
# bit-identical, and with pp > 1 so must the tied embedding copies. The 8-bit layout compares
# with its own single-rank adamw8bit run (the settings of adamw8bit_equivalence.sh: vocab
# 256, so every 8-bit slice is whole blocks). Then the option must have changed the layout
# (fewer activation and pipeline bytes than --tp 2 alone), and rows that tp does not divide
# are refused.
set -euo pipefail
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_sp; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
common="--n-layer 4 --n-head 4 --n-embd 64 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 3 --val-batches 1"
run() { # name np micro-batch grad-accum extra...
  local name=$1 np=$2 B=$3 A=$4; shift 4
  $MPI -np $np $ZT_TRAIN $common --micro-batch $B --grad-accum $A "$@" \
      --log $out/$name.jsonl --save $out/$name > $out/$name.out 2>&1 || { cat $out/$name.out; exit 1; }
}
fail=0
expect_line() { # name pattern what
  grep -q "$2" $out/$1.out || { echo "MISMATCH $1: no '$3' report"; fail=1; }
}
check() { # name base extra compare_models options...
  local name=$1 base=$2; shift 2
  echo "== $name vs $base"
  "${PYTHON:-/usr/bin/python3}" tests/compare_models.py $out/$base $out/$name --steps 6 \
      --lr 1e-3 --log-a $out/$base.jsonl --log-b $out/$name.jsonl "$@" || fail=1
  expect_line $name "the same sequence on every rank" "same collectives"
  expect_line $name "bit-identical across tp" "tp replicas"
  if grep -q "x pp [2-9]" $out/$name.out; then expect_line $name "copies are bit-identical" "tied copies"; fi
}
fp32="--vocab 300 --seed 11"
run base 1 2 4 $fp32
run tp2_sp 2 2 4 $fp32 --tp 2 --sequence-parallel
check tp2_sp base
run tp4_sp 4 2 4 $fp32 --tp 4 --sequence-parallel --loss-chunk 24 # a short last chunk
check tp4_sp base
# through host staging, as a GPU's tp group (in-place reduce-scatter and all-gather, comm_staged.c)
run tp4_sp_staged 4 2 4 $fp32 --tp 4 --sequence-parallel --tensor-path staged
check tp4_sp_staged base
# pp 2 x tp 2 under GPipe (every micro-batch's rows held, then every backward), with
# samples between steps (the decoder over the same weights)
run pp2_tp2_sp_gpipe 4 2 4 $fp32 --pp 2 --tp 2 --sequence-parallel --schedule gpipe \
    --sample-every 3 --sample-len 8
check pp2_tp2_sp_gpipe base
# (dp, pp, tp) = (2, 2, 2), ZeRO-1 and 8-bit AdamW: a stage sends its 1/tp of the rows
q8="--vocab 256 --seed 5 --optim adamw8bit"
run base8 1 2 4 $q8
run dp2_pp2_tp2_sp 8 2 2 $q8 --zero 1 --pp 2 --tp 2 --sequence-parallel
check dp2_pp2_tp2_sp base8 --adamw8bit
# the feature must change the layout, not just pass: against --tp 2 alone the allocator's
# activations (per-row tensors of N/tp rows) and comm bytes (the pipeline buffers, N/tp rows)
# of each rank shrink (the log's first memory record)
run tp2 2 2 4 $fp32 --tp 2
mem() { # name category: its bytes in the log's first memory record
  grep -m1 -o "\"$2\":[0-9]*" $out/$1.jsonl | cut -d: -f2
}
for cat in activations comm; do
  a=$(mem tp2 $cat) b=$(mem tp2_sp $cat)
  echo "tp 2 $cat bytes per rank: $a, with --sequence-parallel $b"
  [ "$b" -lt "$a" ] || { echo "MISMATCH: --sequence-parallel did not shrink $cat"; fail=1; }
done
# N = B*T rows that tp does not divide are refused with one message naming the fix
if $MPI -np 2 $ZT_TRAIN $common --vocab 300 --micro-batch 1 --seq 31 --tp 2 \
    --sequence-parallel > $out/odd.out 2>&1; then
  echo "MISMATCH: 31 rows over tp 2 were accepted"; fail=1
fi
grep -q "does not divide them" $out/odd.out || { echo "MISMATCH: no clear N % tp message"; cat $out/odd.out; fail=1; }
exit $fail
