#!/usr/bin/env bash
# Checkpoint faults, export and Hugging Face import (docs/checkpoints.md):
# - a rank killed (SIGKILL, test hook) in the middle of a save leaves the previous
#   checkpoint loadable; the half-written one is removed by the resuming run (which holds
#   the directory's lock) with a message; the resumed run
#   equals the uninterrupted one bit for bit;
# - a truncated, corrupted or mismatched checkpoint stops with one error naming the file;
# - a checkpoint in the previous format (version 1: FNV-1a 64 checksums instead of XXH3-64;
#   made from a fresh one by tests/ckpt/to_v1.py, which the version-1 writer's output equals
#   byte for byte) still loads and resumes bit for bit, exports the same model, and a
#   corrupted byte is detected under both checksums, by zerotrain and by
#   scripts/read_ckpt.py (whose Python XXH3-64 and FNV-1a must equal zerotrain's digests);
#   without the xxhash module read_ckpt.py still reads, saying `pip install xxhash`;
# - `zerotrain export` of a dp 2 x pp 2 x tp 2 checkpoint equals the run's own --save byte
#   for byte;
# - --init-from a Hugging Face directory (its config.json gives the shape, no shape flags)
#   and from a model.safetensors with the transformer. prefix and an lm_head copy
#   (shape inferred, --n-head given): the first step's loss equals the saving run's
#   continuation (the data file holds 3 global batches, so step 7 reads step 1's samples);
# - round trip: HF safetensors -> zerotrain pp 2 x tp 2 (lr 1e-30) -> export: the same bytes;
# - a shape flag that contradicts the file is an error naming both values.
set -euo pipefail
out=build/test_ckpt_faults; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
PY=${PYTHON:-/usr/bin/python3}
# 3 global batches of 8 sequences of 32 tokens
$PY -c "
import struct, random
random.seed(1); n = 3*8*32 + 1
hdr = [20240520, 1, n] + [0]*253
open('$out/tok.bin','wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % n, *[random.randrange(256) for _ in range(n)]))"
common="--n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --lr 1e-3
        --warmup 2 --val-every 0 --seed 5 --data $out/tok.bin"
fail=0
die() { echo "FAIL: $*"; fail=1; }

# --- crash in the middle of the second save (step 4) on rank 1 of 2
$MPI -np 2 build/zerotrain $common --steps 6 --zero 1 --micro-batch 2 --grad-accum 2 \
    --log $out/full.jsonl > $out/full.out 2>&1 || { cat $out/full.out; exit 1; }
set +e
# build/libzt_faults.so (tests/preload/faults.c): rank 1 dies after its second shard is on disk
LD_PRELOAD=$PWD/build/libzt_faults.so ZT_FAULT_KILL_AFTER_SHARDS=2 ZT_FAULT_KILL_RANK=1 \
    ZT_FAULT_LOG=$out/faults.log $MPI -x LD_PRELOAD -x ZT_FAULT_KILL_AFTER_SHARDS \
    -x ZT_FAULT_KILL_RANK -x ZT_FAULT_LOG -np 2 build/zerotrain $common --steps 6 --zero 1 \
    --micro-batch 2 --grad-accum 2 --ckpt-dir $out/ck --ckpt-every 2 > $out/crash.out 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || die "the injected kill did not stop the run"
grep -q 'kill after checkpoint shard' $out/faults.log || die "no kill was injected"
ls $out/ck
[ -d $out/ck/tmp-step-4 ] && [ "$(cat $out/ck/latest)" = step-2 ] || die "expected step-2 complete, tmp-step-4 left"
$MPI -np 2 build/zerotrain $common --steps 6 --zero 1 --micro-batch 2 --grad-accum 2 \
    --resume $out/ck --ckpt-dir $out/ck --ckpt-every 2 --log $out/res.jsonl > $out/res.out 2>&1 || { cat $out/res.out; exit 1; }
# (the run holds ck's lock: the dead run's tmp-step-4 is removed, and said)
grep "removed $out/ck/tmp-step-4" $out/res.out && [ ! -e $out/ck/tmp-step-4 ] || die "no message about the incomplete checkpoint"
echo "== crash during save, resumed from step 2"
$PY tests/ckpt/compare_losses.py $out/full.jsonl $out/res.jsonl || fail=1

# --- the previous format: version 1, FNV-1a 64
grep -q '"checksum": "xxh3-64"' $out/ck/step-2/manifest.json || die "step-2 is not an xxh3-64 checkpoint"
# (a fresh checkpoint is version 3: its manifest sealed in manifest.json.xxh3; to_v1.py drops it)
cp -r $out/ck/step-2 $out/v1
$PY tests/ckpt/to_v1.py $out/v1
grep -q '"version": 1,' $out/v1/manifest.json && grep -q '"fnv1a64"' $out/v1/manifest.json \
    || die "to_v1.py did not write a version 1 manifest"
$MPI -np 2 build/zerotrain $common --steps 6 --zero 1 --micro-batch 2 --grad-accum 2 \
    --resume $out/v1 --log $out/v1.jsonl > $out/v1.out 2>&1 || { cat $out/v1.out; exit 1; }
grep -q "is format version 1, from before manifests were checksummed" $out/v1.out || die "no note that the version 1 manifest is unverified"
echo "== version 1 (FNV-1a 64) checkpoint, resumed from step 2"
$PY tests/ckpt/compare_losses.py $out/full.jsonl $out/v1.jsonl || fail=1
build/zerotrain export $out/v1 --out $out/v1exp > /dev/null && build/zerotrain export $out/ck/step-2 \
    --out $out/v2exp > /dev/null || die "export failed"
cmp $out/v1exp/model.safetensors $out/v2exp/model.safetensors && echo "export of version 1 == version 3" \
    || die "the version 1 export differs"

# --- truncated, corrupted, mismatched
expect_error() { # name pattern command...
  local name=$1 pat=$2; shift 2
  if "$@" > $out/$name.out 2>&1; then die "$name: succeeded"; return; fi
  grep -E -e "$pat" $out/$name.out || { cat $out/$name.out; die "$name: no error matching $pat"; }
}
cp -r $out/ck/step-6 $out/bad
f=$out/bad/shard-pp0-tp0-dp1.safetensors
printf '\x55' | dd of=$f bs=1 seek=2000 conv=notrunc status=none
expect_error corrupt "zerotrain: error: \(rank 1\) checkpoint file .*shard-pp0-tp0-dp1.safetensors is corrupt: its XXH3-64 checksum" \
    $MPI -np 2 build/zerotrain $common --steps 8 --zero 1 --micro-batch 2 --grad-accum 2 --resume $out/bad
cp -r $out/v1 $out/bad1
printf '\x55' | dd of=$out/bad1/shard-pp0-tp0-dp1.safetensors bs=1 seek=2000 conv=notrunc status=none
expect_error corrupt1 "zerotrain: error: \(rank 1\) checkpoint file .*shard-pp0-tp0-dp1.safetensors is corrupt: its FNV-1a 64 checksum" \
    $MPI -np 2 build/zerotrain $common --steps 6 --zero 1 --micro-batch 2 --grad-accum 2 --resume $out/bad1
# scripts/read_ckpt.py: the same digests (XXH3-64 through xxhash, FNV-1a in Python), the same
# corruption found
RC="$PY scripts/read_ckpt.py"
if $PY -c "import xxhash" 2>/dev/null; then
  $RC --verify $out/ck/step-6 > $out/py2.out 2>&1 && grep "xxh3-64, all equal" $out/py2.out \
      || { cat $out/py2.out; die "read_ckpt.py: xxh3-64 digests differ from zerotrain's"; }
  expect_error pycorrupt "bad/shard-pp0-tp0-dp1.safetensors is corrupt: its xxh3-64 checksum" $RC $out/bad
else
  echo "note: no Python xxhash here (pip install xxhash): read_ckpt.py's xxh3-64 check not run"
fi
$RC $out/v1 > $out/py1.out 2>&1 && grep "fnv1a-64, all equal" $out/py1.out \
    || { cat $out/py1.out; die "read_ckpt.py: FNV-1a digests differ from zerotrain's"; }
expect_error pycorrupt1 "bad1/shard-pp0-tp0-dp1.safetensors is corrupt: its fnv1a-64 checksum" $RC $out/bad1
# without xxhash (an import that fails): reads unverified with one line, --verify refuses
mkdir -p $out/noxx && echo 'raise ImportError("hidden by ckpt_faults.sh")' > $out/noxx/xxhash.py
PYTHONPATH=$out/noxx $RC $out/ck/step-6 > $out/py0.out 2> $out/py0.err || die "read_ckpt.py without xxhash failed"
[ "$(grep -c 'pip install xxhash' $out/py0.err)" = 1 ] && grep -q "xxh3-64, not verified" $out/py0.out \
    && grep -q "^wte.weight" $out/py0.out || { cat $out/py0.out $out/py0.err; die "read_ckpt.py without xxhash"; }
expect_error pynoxx "pip install xxhash" env PYTHONPATH=$out/noxx $RC --verify $out/ck/step-6
cp $out/ck/step-6/shard-pp0-tp0-dp1.safetensors $f
truncate -s 1000 $f
expect_error truncated "shard-pp0-tp0-dp1.safetensors is truncated" \
    build/zerotrain $common --steps 8 --micro-batch 2 --grad-accum 4 --resume $out/bad
expect_error mismatched "--n-layer 3 contradicts n_layer 2 of $out/ck" \
    build/zerotrain $common --n-layer 3 --steps 6 --resume $out/ck
echo '{}' > $out/bad/manifest.json; rm $out/bad/manifest.json.xxh3   # unsealed: read, and refused
expect_error garbage "manifest.json is corrupt or not a zerotrain checkpoint manifest" \
    build/zerotrain $common --resume $out/bad

# --- export from dp 2 x pp 2 x tp 2 equals --save
$MPI -np 8 build/zerotrain $common --steps 6 --zero 1 --pp 2 --tp 2 --micro-batch 2 --grad-accum 2 \
    --ckpt-dir $out/ck8 --ckpt-keep 1 --ckpt-every 2 --save $out/saved8 --log $out/d8.jsonl > $out/d8.out 2>&1 \
    || { cat $out/d8.out; exit 1; }
[ "$(ls $out/ck8 | grep -c step-)" = 1 ] || die "--ckpt-keep 1 kept $(ls $out/ck8)"
build/zerotrain export $out/ck8 --out $out/exported
cmp $out/exported/model.safetensors $out/saved8/model.safetensors && echo "export == --save: identical" \
    || die "export differs from --save"

# --- Hugging Face in: the continuation's step 7 reads the samples of step 1
$MPI -np 8 build/zerotrain $common --steps 7 --zero 1 --pp 2 --tp 2 --micro-batch 2 --grad-accum 2 \
    --resume $out/ck8 --log $out/cont.jsonl > $out/cont.out 2>&1 || { cat $out/cont.out; exit 1; }
shape_free="--seq 32 --lr 1e-3 --warmup 2 --val-every 0 --seed 5 --data $out/tok.bin --steps 1"
build/zerotrain $shape_free --init-from $out/saved8 --micro-batch 2 --grad-accum 4 \
    --log $out/hf1.jsonl > $out/hf1.out 2>&1 || { cat $out/hf1.out; exit 1; }
mkdir -p $out/hfprefix
$PY tests/ckpt/st_rewrite.py $out/saved8/model.safetensors $out/hfprefix/model.safetensors
$MPI -np 2 build/zerotrain $shape_free --n-head 4 --tp 2 --init-from $out/hfprefix/model.safetensors \
    --micro-batch 2 --grad-accum 4 --log $out/hf2.jsonl > $out/hf2.out 2>&1 || { cat $out/hf2.out; exit 1; }
$PY - $out <<'PY' || fail=1
import json, sys
d = sys.argv[1]
def loss(p, step):
    for l in open(p):
        j = json.loads(l)
        if j.get("step") == step and "loss" in j: return j["loss"]
ref = loss(f"{d}/cont.jsonl", 7)
a, b = loss(f"{d}/hf1.jsonl", 1), loss(f"{d}/hf2.jsonl", 1)
# another layout sums the same fp32 terms in another order: rtol 1e-5
ok = all(abs(x - ref) <= 1e-5 * abs(ref) for x in (a, b))
print(f"first-step loss: continuation {ref:.9g}, HF dir (1 rank) {a:.9g}, "
      f"transformer.-prefixed + lm_head safetensors (tp 2) {b:.9g}: {'ok' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
PY
# --- round trip: HF (transformer.-prefixed, lm_head) -> zerotrain pp 2 x tp 2 -> export gives
# back the same bytes as zerotrain's own export of those weights (--lr 1e-30: AdamW then moves
# nothing: 1e-30 x an update of order 1 is far below half an ulp of every weight)
$MPI -np 4 build/zerotrain $shape_free --n-head 4 --lr 1e-30 --weight-decay 0 --pp 2 --tp 2 --zero 1 \
    --init-from $out/hfprefix/model.safetensors --micro-batch 2 --grad-accum 4 --ckpt-dir $out/ckrt \
    > $out/rt.out 2>&1 || { cat $out/rt.out; exit 1; }
build/zerotrain export $out/ckrt --out $out/rt > /dev/null
cmp $out/rt/model.safetensors $out/saved8/model.safetensors && echo "HF -> pp2 tp2 -> export: same bytes" \
    || die "round trip changed the bytes"
expect_error contradict "--n-layer 3 contradicts n_layer 2 of $out/saved8" \
    build/zerotrain $shape_free --n-layer 3 --init-from $out/saved8
exit $fail
