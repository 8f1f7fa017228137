#!/usr/bin/env bash
# Two exports racing to create one new directory (issue 38, item 4): both saw no directory,
# the second's rename failed and its temporary directory stayed. Export A is held right
# before its rename (ZT_FAULT_PAUSE_AT_RENAME) while export B creates the directory; A then
# swaps B's export out as an older one. Both succeed, the directory holds a whole export and
# no temporary is left beside it. A killed export's temporary is removed by the next one.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=build/test_export_race; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
FAULTS=$PWD/build/libzt_faults.so
[ -f "$FAULTS" ] || { echo "build/libzt_faults.so is not built (make -j2 all)"; exit 1; }
fail=0
die() { echo "FAIL: $*"; fail=1; }
$PY -c "
import struct, random
random.seed(4); n = 4*4*16 + 1
hdr = [20240520, 1, n] + [0]*253
open('$out/tok.bin','wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % n, *[random.randrange(256) for _ in range(n)]))"
"$ZT" --n-layer 2 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --micro-batch 2 --steps 2 \
  --val-every 0 --data $out/tok.bin --ckpt-dir $out/ck --ckpt-every 1 > $out/train.out 2>&1 ||
  { cat $out/train.out; exit 1; }
LD_PRELOAD=$FAULTS ZT_FAULT_PAUSE_AT_RENAME='*/exp' ZT_FAULT_CONTINUE=$out/continue \
  ZT_FAULT_LOG=$out/faults.log timeout 60 "$ZT" export $out/ck/step-1 --out $out/exp > $out/a.out 2>&1 &
a=$!
for _ in $(seq 300); do grep -q paused $out/faults.log 2>/dev/null && break; sleep 0.1; done
grep -q paused $out/faults.log || die "export A never paused"
"$ZT" export $out/ck/step-2 --out $out/exp > $out/b.out 2>&1 || { cat $out/b.out; die "export B failed"; }
touch $out/continue
wait $a || { cat $out/a.out; die "export A failed after B created the directory"; }
left=$(ls $out | grep '^exp\.tmp\.')
[ -z "$left" ] || die "temporaries left: $left"
"$ZT" export $out/ck/step-1 --out $out/ref1 > /dev/null 2>&1
cmp -s $out/exp/model.safetensors $out/ref1/model.safetensors && [ -f $out/exp/config.json ] &&
  echo "ok   racing exports: both succeed, the last rename's export (A, step-1) in place, nothing left" ||
  die "the directory does not hold export A's model"
# a killed export's temporary: removed by the next export of the same directory
{ ( LD_PRELOAD=$FAULTS ZT_FAULT_KILL_AT_RENAME='*/exp2' "$ZT" export $out/ck/step-2 --out $out/exp2 > $out/k.out 2>&1 ); } 2>/dev/null
[ -n "$(ls $out | grep '^exp2\.tmp\.')" ] || die "the killed export left no temporary to test with"
"$ZT" export $out/ck/step-2 --out $out/exp2 > $out/c.out 2>&1 || { cat $out/c.out; die "the export after a kill failed"; }
grep -q "removed .*exp2.tmp.*did not finish" $out/c.out && [ -z "$(ls $out | grep '^exp2\.tmp\.')" ] &&
  echo "ok   a killed export's temporary removed by the next" || die "the killed export's temporary stayed"
exit $fail
