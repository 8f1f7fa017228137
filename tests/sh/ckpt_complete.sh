#!/usr/bin/env bash
# A run killed after the commit of its last checkpoint, rerun with the same command
# (docs/checkpoints.md, "A complete run resumed"; kill_campaign.sh meets it only on some
# seeds): killed at the rename of latest.tmp (step-4 committed, `latest` still step-3,
# latest.tmp left) or in --ckpt-keep's pruning (a retired-step-N left). The rerun trains
# nothing, says the run is complete, exits 0 and finishes the directory: `latest` names
# step-4, latest.tmp and retired-step-N are gone, --ckpt-keep holds; the checkpoint exports
# the uninterrupted run's model byte for byte. A second rerun changes nothing. A checkpoint
# beyond --steps is still refused; a reader's `--resume ck` at --steps also ends complete, and
# with --save says how to write it.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=build/test_ckpt_complete; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI=(mpirun --oversubscribe -np 2)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
PY=${PYTHON:-/usr/bin/python3}
ZT=build/zerotrain
[ -f build/libzt_faults.so ] || { echo "build/libzt_faults.so is not built (make -j2 all)"; exit 1; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
$PY -c "
import struct, random
random.seed(5); n = 4*4*16 + 1
hdr = [20240520, 1, n] + [0]*253
open('$out/tok.bin','wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % n, *[random.randrange(256) for _ in range(n)]))"
ARGS=(--n-layer 2 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --lr 1e-3 --warmup 2
      --val-every 0 --seed 7 --data $out/tok.bin --zero 1 --micro-batch 2 --steps 4)
KEEP=(--ckpt-every 1 --ckpt-keep 2)
fail=0
die() { echo "FAIL: $*"; fail=1; }

"${MPI[@]}" $ZT "${ARGS[@]}" --ckpt-dir $out/ref > $out/full.out 2>&1 &&
  $ZT export $out/ref --out $out/ref_model > /dev/null 2>&1 ||
  { tail -3 $out/full.out; echo "FAIL: the uninterrupted run failed"; exit 1; }

# killed NAME VAR=VALUE...: the run killed by tests/preload/faults.c where the variables say
killed() {
  local name=$1 xs=(-x LD_PRELOAD -x ZT_FAULT_LOG) e; shift
  for e in "$@"; do xs+=(-x "${e%%=*}"); done
  env LD_PRELOAD=$PWD/build/libzt_faults.so ZT_FAULT_LOG=$out/$name.faults "$@" "${MPI[@]}" \
    "${xs[@]}" $ZT "${ARGS[@]}" --ckpt-dir $out/$name "${KEEP[@]}" > $out/$name.killed 2>&1 &&
    die "$name: the injected kill did not stop the run"
  grep -q 'kill before' $out/$name.faults 2>/dev/null || die "$name: no kill was injected"
  [ -f $out/$name/step-4/manifest.json ] || die "$name: step-4 was not committed before the kill"
  echo "$name killed: $(ls $out/$name | tr '\n' ' ')(latest: $(cat $out/$name/latest))"
}
# rerun NAME TAG: the same command, resumed; it must end complete and exit 0
rerun() {
  local name=$1 tag=$2 rc=0
  "${MPI[@]}" $ZT "${ARGS[@]}" --resume $out/$name --ckpt-dir $out/$name "${KEEP[@]}" \
    > $out/$name.$tag 2>&1 || rc=$?
  [ $rc -eq 0 ] || { tail -3 $out/$name.$tag; die "$name $tag: exit $rc"; }
  grep -q '^complete: the checkpoint .* is at step 4 and --steps is 4' $out/$name.$tag ||
    { tail -3 $out/$name.$tag; die "$name $tag: no line saying the run is complete"; }
  ! grep -q '^step ' $out/$name.$tag || die "$name $tag: trained"
}
# finished NAME: the directory as a save of step-4 that was not killed leaves it
finished() {
  local name=$1 left
  left=$(ls $out/$name | tr '\n' ' ')
  [ "$left" = "latest lock step-3 step-4 " ] && [ "$(cat $out/$name/latest)" = step-4 ] ||
    die "$name: left $left(latest: $(cat $out/$name/latest))"
  $ZT export $out/$name --out $out/$name.model > /dev/null 2>&1 &&
    cmp -s $out/ref_model/model.safetensors $out/$name.model/model.safetensors ||
    die "$name: the checkpoint does not export the uninterrupted run's model"
}

# rank 0 dies right before its 4th `latest.tmp -> latest` rename: after step-4's commit
killed at_latest ZT_FAULT_KILL_AT_RENAME='*/latest' ZT_FAULT_RENAME_NTH=4
rerun at_latest rerun
grep '^checkpoint: .*latest now names step-4' $out/at_latest.rerun || die "at_latest: latest not said"
finished at_latest
# rank 0 dies before its 5th unlink in pruning: in step-2's retirement, after step-4's commit
# (step-1's retirement took unlinks 1-4: two shards, the manifest and its seal)
killed in_prune ZT_FAULT_KILL_AT_UNLINK='*/retired-step-*/*' ZT_FAULT_UNLINK_NTH=5
[ -d $out/in_prune/retired-step-2 ] || die "in_prune: no retired-step-2 left by the kill"
rerun in_prune rerun
grep '^checkpoint: removed .*retired-step-2' $out/in_prune.rerun || die "in_prune: removal not said"
finished in_prune
# a second rerun: nothing to finish, nothing said, nothing changed
rerun at_latest again
! grep -q '^checkpoint: ' $out/at_latest.again || die "at_latest again: changed the directory"
finished at_latest

# beyond --steps: still an error (a shorter --steps than the checkpoint is a mistake)
"${MPI[@]}" $ZT "${ARGS[@]:0:${#ARGS[@]}-1}" 3 --resume $out/at_latest --ckpt-dir $out/at_latest \
  > $out/beyond.out 2>&1 && die "a resume beyond --steps succeeded"
grep "zerotrain: error: the checkpoint is at step 4, beyond --steps 3" $out/beyond.out ||
  { tail -3 $out/beyond.out; die "beyond: not the expected error"; }
# a reader at --steps, with --save: complete, and how to write --save
$ZT "${ARGS[@]}" --resume $out/at_latest --save $out/saved > $out/reader.out 2>&1 ||
  { tail -3 $out/reader.out; die "reader: failed"; }
grep "^complete: --save $out/saved is not written again; \`zerotrain export $out/at_latest" \
  $out/reader.out || die "reader: --save not explained"
[ ! -e $out/saved ] || die "reader: --save written"
[ $fail -eq 0 ] && echo "ckpt_complete: a run killed after its last commit, rerun: complete, exit 0, nothing left"
exit $fail
