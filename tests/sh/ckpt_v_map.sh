#!/usr/bin/env bash
# 8-bit checkpoints and the v map (docs/checkpoints.md, "The v map"): a manifest without
# optimizer.v_map (written with bitsandbytes' v map, before the floor) resumes with its codes
# as they are, with a note, and its continuation equals the uninterrupted run's bit for bit
# (the codes mean the same values today whichever manifest names them); an unknown v_map is
# refused with one message naming it. The checkpoint is this build's own, its v_map removed
# (tests/ckpt/reseal.py reseals the edited manifest): so this tests the manifest's handling,
# not the conversion of an old code 0 (quant8_math.h argues that one: it is exact).
set -euo pipefail
out=build/test_ckpt_v_map; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
PY=${PYTHON:-/usr/bin/python3}
common="--n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --micro-batch 2
        --steps 6 --lr 1e-3 --warmup 2 --val-every 0 --seed 5 --optim adamw8bit"
fail=0
die() { echo "FAIL: $*"; fail=1; }
build/zerotrain $common --ckpt-dir $out/ck --ckpt-every 2 --log $out/full.jsonl > $out/full.out 2>&1 \
    || { cat $out/full.out; exit 1; }
grep -q '"v_map": "dynamic-floor"' $out/ck/step-2/manifest.json || die "the manifest does not name the v map"
edit() { # dir sed-expression: a copy of step-2 with its manifest edited and resealed
  cp -r $out/ck/step-2 $out/$1
  sed -i "$2" $out/$1/manifest.json
  $PY tests/ckpt/reseal.py $out/$1
}
edit legacy 's/, "v_map": "dynamic-floor"//'
! grep -q v_map $out/legacy/manifest.json || die "the edit left v_map in the manifest"
build/zerotrain $common --resume $out/legacy --log $out/legacy.jsonl > $out/legacy.out 2>&1 \
    || { cat $out/legacy.out; exit 1; }
grep "8-bit v codes use bitsandbytes' map" $out/legacy.out || die "no note about the legacy v map"
echo "== legacy v map (no v_map), resumed from step 2"
$PY tests/ckpt/compare_losses.py $out/full.jsonl $out/legacy.jsonl || fail=1
edit future 's/"v_map": "dynamic-floor"/"v_map": "sqrt-dynamic"/'
if build/zerotrain $common --resume $out/future > $out/future.out 2>&1; then
  die "an unknown v_map was accepted"
fi
grep "v_map sqrt-dynamic is not this build's" $out/future.out || die "no message naming the unknown v_map"
exit $fail
