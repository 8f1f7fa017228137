#!/usr/bin/env bash
# The --ckpt-dir lock cannot be bypassed (issue 38, item 6): deleting DIR/lock while a run
# holds it let a second run lock a new file, and both wrote the directory. The run now also
# holds a flock on the directory itself, and verifies before every save that DIR is still the
# directory it locked. (1) A run held at its step-4 commit (ZT_FAULT_PAUSE_AT_RENAME); its
# lock file deleted; a second run in the directory is refused and changes nothing; the first
# ends with its checkpoints intact. (2) The directory moved away and another made in its
# place while a save is under way (held by build/libzt_faults.so): the run stops with one
# error and writes nothing into the new directory.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=build/test_ckpt_lock_bypass; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
PY=${PYTHON:-/usr/bin/python3}
ZT=${ZT:-build/zerotrain}
[ -f build/libzt_faults.so ] || { echo "build/libzt_faults.so is not built (make -j2 all)"; exit 1; }
$PY -c "
import struct, random
random.seed(4); n = 4*4*16 + 1
hdr = [20240520, 1, n] + [0]*253
open('$out/tok.bin','wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % n, *[random.randrange(256) for _ in range(n)]))"
common="--n-layer 2 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --lr 1e-3 --warmup 2
        --val-every 0 --seed 7 --data $out/tok.bin --zero 1 --micro-batch 2"
fail=0
die() { echo "FAIL: $*"; fail=1; }

# (1) the lock file deleted under a paused run
LD_PRELOAD=$PWD/build/libzt_faults.so ZT_FAULT_PAUSE_AT_RENAME='*/step-4' \
    ZT_FAULT_CONTINUE=$out/continue ZT_FAULT_LOG=$out/faults.log \
    timeout 120 $MPI -x LD_PRELOAD -x ZT_FAULT_PAUSE_AT_RENAME -x ZT_FAULT_CONTINUE -x ZT_FAULT_LOG \
    -np 2 $ZT $common --steps 6 --ckpt-dir $out/kp --ckpt-every 2 --ckpt-keep 2 \
    > $out/first.out 2>&1 &
first=$!
for _ in $(seq 600); do grep -q paused $out/faults.log 2>/dev/null && break; sleep 0.1; done
grep -q paused $out/faults.log || { touch $out/continue; wait $first; cat $out/first.out; echo "FAIL: the first run never paused"; exit 1; }
rm $out/kp/lock
cp -r $out/kp $out/kp.before
timeout 60 $MPI -np 2 $ZT $common --steps 8 --resume $out/kp --ckpt-dir $out/kp \
    --ckpt-every 2 --ckpt-keep 2 > $out/second.out 2> $out/second.err
rc=$?
if [ $rc -ne 0 ] && [ "$(grep -c 'zerotrain: error' $out/second.err)" = 1 ] &&
   grep -qF -- "--ckpt-dir $out/kp is in use by another run" $out/second.err; then
  echo "ok   lock file deleted, second run refused: $(grep 'zerotrain: error' $out/second.err)"
else
  echo "second run: exit $rc"; cat $out/second.out $out/second.err; die "the second run was not refused"
fi
rm -f $out/kp/lock $out/kp.before/lock # the refused run made a new (empty) lock file
diff -r $out/kp $out/kp.before > /dev/null || die "the refused run changed $out/kp"
touch $out/continue
wait $first || { cat $out/first.out; die "the first run failed"; }
[ "$(cat $out/kp/latest)" = step-6 ] && [ -f $out/kp/step-6/manifest.json ] && [ -f $out/kp/step-4/manifest.json ] \
    && [ ! -e $out/kp/step-2 ] && [ ! -e $out/kp/step-8 ] &&
  echo "ok   the first run ended with step-4 and step-6" || die "expected step-4 and step-6, latest = step-6"

# (2) the directory replaced while a save is under way: held as it makes step-3's tmp
# directory (after the save's first check), the directory is moved away and another made
# in its place; the save must not commit into the new one (a CI run once found step-3 and
# `latest` there: the save had made the directory anew and committed into it)
LD_PRELOAD=$PWD/build/libzt_faults.so ZT_FAULT_PAUSE_AT_MKDIR="$out/mv/tmp-step-3" \
    ZT_FAULT_CONTINUE=$out/continue2 ZT_FAULT_LOG=$out/faults2.log \
    timeout 120 $ZT $common --steps 6 --ckpt-dir $out/mv --ckpt-every 1 \
    > $out/mv.out 2> $out/mv.err &
job=$!
for _ in $(seq 600); do grep -q paused $out/faults2.log 2>/dev/null && break; sleep 0.1; done
grep -q paused $out/faults2.log || die "the run never paused at step-3's save"
mv $out/mv $out/mv.moved && mkdir $out/mv
touch $out/continue2
wait $job; rc=$?
n=$(grep -c 'zerotrain: error' $out/mv.err)
if [ $rc -ne 0 ] && [ $rc -lt 124 ] && [ "$n" = 1 ] && [ -z "$(ls $out/mv)" ]; then
  echo "ok   directory replaced: exit $rc, nothing written into the new one: $(grep 'zerotrain: error' $out/mv.err)"
else
  echo "exit $rc, $n errors, new directory: $(ls $out/mv)"; cat $out/mv.err; die "the run went on in the replaced directory"
fi
[ $fail -eq 0 ] && echo "ok: the lock holds when its file is deleted or its directory replaced"
exit $fail
