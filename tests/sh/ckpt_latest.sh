#!/usr/bin/env bash
# A save killed between its commit (the rename of tmp-step-N to step-N) and the update of
# `latest` (docs/checkpoints.md): step-1 and step-2 complete, `latest` still step-1,
# latest.tmp left. step-2 is this run's, committed but not yet pointed to:
# - `--resume ck --ckpt-dir ck` (the run continuing in its own directory) resumes from step-2,
#   says why, and every later loss equals the uninterrupted run's bit for bit (was refused:
#   "holds step-2, newer than this run's start at step 1");
# - `--resume ck` alone and `zerotrain export ck` take step-2 too (were step-1);
# - a genuinely different run is still refused: a resume from ck/step-1 (a rollback named by
#   its step directory) or from another directory, into --ckpt-dir ck;
# - a `latest` naming anything but a step-N of its own directory is refused.
set -euo pipefail
out=build/test_ckpt_latest; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
PY=${PYTHON:-/usr/bin/python3}
[ -f build/libzt_faults.so ] || { echo "build/libzt_faults.so is not built (make -j2 all)"; exit 1; }
$PY -c "
import struct, random
random.seed(3); n = 4*4*16 + 1
hdr = [20240520, 1, n] + [0]*253
open('$out/tok.bin','wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % n, *[random.randrange(256) for _ in range(n)]))"
common="--n-layer 2 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --lr 1e-3 --warmup 2
        --val-every 0 --seed 7 --data $out/tok.bin --zero 1 --micro-batch 2 --grad-accum 1"
fail=0
die() { echo "FAIL: $*"; fail=1; }
run() { # name command...: must succeed
  local name=$1; shift
  local rc=0
  "$@" > $out/$name.out 2>&1 || rc=$?
  [ $rc -eq 0 ] || { cat $out/$name.out; echo "FAIL: $name exited $rc"; exit 1; }
}
refused() { # name pattern command...: must fail with the pattern on stderr
  local name=$1 pat=$2; shift 2
  if "$@" > $out/$name.out 2>&1; then die "$name: succeeded"; return; fi
  grep -F -e "$pat" $out/$name.out || { cat $out/$name.out; die "$name: no error '$pat'"; }
}

run full $MPI -np 2 build/zerotrain $common --steps 4 --log $out/full.jsonl
# rank 0 dies right before its second `latest.tmp -> latest` rename (tests/preload/faults.c)
set +e
LD_PRELOAD=$PWD/build/libzt_faults.so ZT_FAULT_KILL_AT_RENAME='*/latest' ZT_FAULT_RENAME_NTH=2 \
    ZT_FAULT_LOG=$out/faults.log $MPI -x LD_PRELOAD -x ZT_FAULT_KILL_AT_RENAME -x ZT_FAULT_RENAME_NTH \
    -x ZT_FAULT_LOG -np 2 build/zerotrain $common --steps 4 --ckpt-dir $out/ck --ckpt-every 1 \
    > $out/crash.out 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || die "the injected kill did not stop the run"
grep -q 'kill before rename' $out/faults.log || die "no kill was injected"
ls $out/ck
[ -f $out/ck/step-2/manifest.json ] && [ "$(cat $out/ck/latest)" = step-1 ] && [ -f $out/ck/latest.tmp ] \
    || die "expected step-1 and step-2 complete, latest = step-1, latest.tmp left"
cp -r $out/ck $out/ck0

# the run continues in its own directory: from step-2, said once
run resume $MPI -np 2 build/zerotrain $common --steps 4 --resume $out/ck --ckpt-dir $out/ck \
    --ckpt-every 1 --log $out/resume.jsonl
grep "newer" $out/resume.out || die "no message about step-2 being newer than latest"
grep -q "resumed from $out/ck/step-2 .*step 2," $out/resume.out || { cat $out/resume.out; die "not resumed from step-2"; }
echo "== killed before latest named step-2, resumed in its own directory"
$PY tests/ckpt/compare_losses.py $out/full.jsonl $out/resume.jsonl || fail=1
[ "$(cat $out/ck/latest)" = step-4 ] && [ ! -e $out/ck/latest.tmp ] || die "latest is not step-4 after the resumed run"

# a reader without --ckpt-dir, and the export, take step-2 as well
run reader $MPI -np 2 build/zerotrain $common --steps 3 --resume $out/ck0
grep -q "resumed from $out/ck0/step-2 " $out/reader.out || { cat $out/reader.out; die "--resume alone did not take step-2"; }
run export build/zerotrain export $out/ck0 --out $out/exp
grep -q "exported $out/ck0/step-2 " $out/export.out || { cat $out/export.out; die "export did not take step-2"; }

# other runs are still refused: a rollback to step-1, and a resume from another directory
refused rollback "--ckpt-dir $out/ck0 holds step-2, newer than this run's start at step 1" \
    build/zerotrain $common --steps 4 --resume $out/ck0/step-1 --ckpt-dir $out/ck0
mkdir -p $out/other && cp -r $out/ck0/step-1 $out/other/
refused other_dir "--ckpt-dir $out/ck0 holds step-2, newer than this run's start at step 1" \
    build/zerotrain $common --steps 4 --resume $out/other --ckpt-dir $out/ck0
[ "$(cat $out/ck0/latest)" = step-1 ] && [ -f $out/ck0/step-2/manifest.json ] || die "a refused run changed ck0"

# `latest` naming a directory outside its checkpoint directory (issue 38): refused, not followed
# (was: "../other/step-1" resumed the other directory's checkpoint)
for bad in ../other/step-1 "$PWD/$out/other/step-1" step-1/../../other/step-1; do
  cp -r $out/ck0 $out/ck_out; echo "$bad" > $out/ck_out/latest
  refused latest_outside "$out/ck_out/latest names $bad, not a step-N directory of $out/ck_out" \
      build/zerotrain $common --steps 4 --resume $out/ck_out
  refused latest_outside_export "$out/ck_out/latest names $bad, not a step-N" \
      build/zerotrain export $out/ck_out --out $out/exp_out
  rm -rf $out/ck_out
done
exit $fail
