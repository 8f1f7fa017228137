#!/usr/bin/env bash
# --ckpt-keep's pruning killed half way (issue 38, item 4): it unlinked a step-N's files in
# place, so a kill left a manifest-less step-N that no later run removed. A step-N is now
# renamed to retired-step-N first, then emptied; at start-up the run holding the directory's
# lock removes, and says so: tmp-step-N (a save killed before its commit), retired-step-N
# (pruning killed), and a step-N without manifest.json holding only files a save writes
# (shards, manifest.json.xxh3: pruning killed under an older zerotrain). It keeps, with a
# such a directory holding anything else (a user's), and never touches a complete checkpoint.
# The run killed in its pruning (rank 0 before its 2nd unlink there), then resumed: every
# loss equal to the uninterrupted run's, and nothing left behind.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=build/test_ckpt_prune_kill; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root -np 2"
PY=${PYTHON:-/usr/bin/python3}
ZT=${ZT:-build/zerotrain}
[ -f build/libzt_faults.so ] || { echo "build/libzt_faults.so is not built (make -j2 all)"; exit 1; }
$PY -c "
import struct, random
random.seed(5); n = 4*4*16 + 1
hdr = [20240520, 1, n] + [0]*253
open('$out/tok.bin','wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % n, *[random.randrange(256) for _ in range(n)]))"
common="--n-layer 2 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --lr 1e-3 --warmup 2
        --val-every 0 --seed 7 --data $out/tok.bin --zero 1 --micro-batch 2 --steps 8"
fail=0
die() { echo "FAIL: $*"; fail=1; }

$MPI $ZT $common --log $out/full.jsonl > $out/full.out 2>&1 || { cat $out/full.out; exit 1; }
LD_PRELOAD=$PWD/build/libzt_faults.so ZT_FAULT_KILL_AT_UNLINK='*step-*/*' ZT_FAULT_UNLINK_NTH=2 \
    ZT_FAULT_LOG=$out/faults.log timeout 120 $MPI -x LD_PRELOAD -x ZT_FAULT_KILL_AT_UNLINK \
    -x ZT_FAULT_UNLINK_NTH -x ZT_FAULT_LOG $ZT $common --ckpt-dir $out/ck --ckpt-every 1 \
    --ckpt-keep 2 --log $out/a.jsonl > $out/a.out 2>&1
rc=$?
grep -q "kill before unlink" $out/faults.log 2>/dev/null || die "no kill during the pruning (exit $rc)"
echo "== killed while pruning: $(ls $out/ck | tr '\n' ' ')"
# what other leftovers look like: a manifest-less step-N of an older zerotrain's pruning (a
# shard only: removed), one holding a user's file (kept), and the complete checkpoints (kept
# unless --ckpt-keep prunes them)
mkdir $out/ck/step-0 $out/ck/step-1000
cp "$(ls $out/ck/step-*/shard-pp0-tp0-dp0.safetensors | head -1)" $out/ck/step-0/
echo notes > $out/ck/step-1000/notes.txt
complete=$(cd $out/ck && ls -d step-*/manifest.json | cut -d/ -f1 | tr '\n' ' ')
cp -r $out/ck $out/ck.before

timeout 120 $MPI $ZT $common --resume $out/ck --ckpt-dir $out/ck --ckpt-every 1 --ckpt-keep 2 \
    --log $out/b.jsonl > $out/b.out 2>&1 || { cat $out/b.out; die "the resume failed"; }
grep "checkpoint: removed\|warning" $out/b.out
$PY tests/ckpt/compare_losses.py $out/full.jsonl $out/b.jsonl || die "the resume differs"
left=$(cd $out/ck && for d in *; do
  case $d in latest|lock) ;; step-1000) ;; step-*) [ -f $d/manifest.json ] || echo "$d" ;; *) echo "$d" ;; esac
done)
[ -z "$left" ] && echo "ok   nothing left behind: $(ls $out/ck | tr '\n' ' ')" || die "left behind: $left"
[ -f $out/ck/step-1000/notes.txt ] || die "step-1000 (a user's file in it) was not kept"
for d in $complete; do
  # a complete checkpoint is removed only by --ckpt-keep (older than the newest 2), never at start
  grep -q "removed $out/ck/$d," $out/b.out && die "the start-up removed the complete $d"
done
grep -q "removed $out/ck/step-0, a checkpoint without manifest.json" $out/b.out || die "step-0 was not removed"
[ $fail -eq 0 ] && echo "ok: pruning killed half way leaves nothing the next run does not remove"
exit $fail
