#!/usr/bin/env bash
# One run at a time in a --ckpt-dir (docs/checkpoints.md): a run (2 ranks, --ckpt-keep 2) is
# held alive at its step-4 commit (ZT_FAULT_PAUSE_AT_RENAME, tests/preload/faults.c) while
# a second run `--resume kp --ckpt-dir kp --ckpt-keep 2` starts: the second is refused with
# one error naming the holder (pid, host, start time), and changes nothing; the first then
# ends with every checkpoint it wrote intact (was: both ran, and `latest` named a step the
# other's --ckpt-keep had deleted). Once it has ended, the directory is free again.
set -euo pipefail
out=build/test_ckpt_lock; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
PY=${PYTHON:-/usr/bin/python3}
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

# the first run: paused before tmp-step-4 becomes step-4 (step-2 and latest are there)
LD_PRELOAD=$PWD/build/libzt_faults.so ZT_FAULT_PAUSE_AT_RENAME='*/step-4' \
    ZT_FAULT_CONTINUE=$out/continue ZT_FAULT_LOG=$out/faults.log \
    timeout 120 $MPI -x LD_PRELOAD -x ZT_FAULT_PAUSE_AT_RENAME -x ZT_FAULT_CONTINUE -x ZT_FAULT_LOG \
    -np 2 build/zerotrain $common --steps 6 --ckpt-dir $out/kp --ckpt-every 2 --ckpt-keep 2 \
    > $out/first.out 2>&1 &
first=$!
for _ in $(seq 600); do grep -q paused $out/faults.log 2>/dev/null && break; sleep 0.1; done
grep -q paused $out/faults.log || { touch $out/continue; wait $first; cat $out/first.out; echo "FAIL: the first run never paused"; exit 1; }
holder=$(awk '/paused/ {print $1; exit}' $out/faults.log)   # rank 0's pid
cp -r $out/kp $out/kp.before

# the second run: refused, once, naming the holder; nothing changed
set +e
timeout 60 $MPI -np 2 build/zerotrain $common --steps 8 --resume $out/kp --ckpt-dir $out/kp \
    --ckpt-every 2 --ckpt-keep 2 > $out/second.out 2> $out/second.err
rc=$?
set -e
want="--ckpt-dir $out/kp is in use by another run (pid $holder on host $(hostname), started "
if [ $rc -ne 0 ] && [ "$(grep -c 'zerotrain: error' $out/second.err)" = 1 ] && grep -qF -- "$want" $out/second.err; then
  echo "ok   second run refused: $(grep 'zerotrain: error' $out/second.err)"
else
  echo "second run: exit $rc"; cat $out/second.out $out/second.err; die "the second run was not refused naming pid $holder"
fi
diff -r $out/kp $out/kp.before > /dev/null || die "the refused run changed $out/kp"

# the first run goes on and ends with its checkpoints intact
touch $out/continue
wait $first || { cat $out/first.out; die "the first run failed"; }
ls $out/kp
[ "$(cat $out/kp/latest)" = step-6 ] && [ -f $out/kp/step-6/manifest.json ] && [ -f $out/kp/step-4/manifest.json ] \
    && [ ! -e $out/kp/step-2 ] && [ ! -e $out/kp/step-8 ] || die "expected step-4 and step-6, latest = step-6"
grep -q "pid $holder on host" $out/kp/lock || die "the lock file does not name the first run"

# ended: the directory is free for the next run (the lock file stays, unheld)
timeout 60 $MPI -np 2 build/zerotrain $common --steps 8 --resume $out/kp --ckpt-dir $out/kp \
    --ckpt-every 2 --ckpt-keep 2 > $out/third.out 2>&1 || { cat $out/third.out; die "the run after it was refused"; }
[ "$(cat $out/kp/latest)" = step-8 ] || die "the third run did not write step-8"
exit $fail
