#!/usr/bin/env bash
# `prepare` killed (issue 38, item 4): its temporaries stayed for good, and a kill between its
# two renames paired a new train file with the old validation file, which training used
# without a word. Both tokenizers (bytes; gpt2 with a made-up vocabulary of the 256 bytes):
# - killed before its first rename (build/libzt_faults.so): the next prepare of the same
#   files removes the dead one's temporaries and says so;
# - killed between the two renames: "<out>.unpaired" marks the train file until the pair is
#   complete, so training on it with the old --val-data is refused naming both files; the
#   next prepare completes the pair and training goes on;
# - a prepare that completes leaves nothing but its two files.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=build/test_prepare_kill; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
FAULTS=$PWD/build/libzt_faults.so
[ -f "$FAULTS" ] || { echo "build/libzt_faults.so is not built (make -j2 all)"; exit 1; }
fail=0
die() { echo "FAIL: $*"; fail=1; }
$PY -c "
import random; random.seed(1)
words = ['alpha', 'beta', 'gamma', 'delta', 'the', 'of', 'and', 'zero', 'train']
for name, n in (('old', 3000), ('new', 5000)):
    open('$out/%s.txt' % name, 'w').write(' '.join(random.choice(words) for _ in range(n)))
import base64
with open('$out/bytes.tiktoken', 'w') as f:
    for b in range(256): f.write(base64.b64encode(bytes([b])).decode() + ' %d\n' % b)"
TRAIN=(--n-layer 1 --n-head 2 --n-embd 32 --vocab 320 --n-ctx 16 --seq 16 --micro-batch 2
       --steps 1 --val-every 1)

for tok in bytes gpt2; do
  d=$out/$tok; mkdir -p $d
  P=(prepare --tokenizer $tok --out $d/t.bin --val-out $d/v.bin --val-frac 0.2)
  [ $tok = gpt2 ] && P+=(--vocab $out/bytes.tiktoken)
  "$ZT" "${P[@]}" --text $out/old.txt > $d/old.out 2>&1 || { cat $d/old.out; die "$tok: prepare failed"; continue; }
  # killed before its first rename: temporaries left, removed by the next prepare
  { ( LD_PRELOAD=$FAULTS ZT_FAULT_KILL_AT_RENAME="*/$tok/t.bin" ZT_FAULT_LOG=$d/faults.log \
    "$ZT" "${P[@]}" --text $out/new.txt > $d/k1.out 2>&1 ); } 2>/dev/null
  grep -q "kill before rename" $d/faults.log || die "$tok: no kill before the first rename"
  n=$(ls $d | grep -c '\.tmp\.')
  [ "$n" -ge 1 ] || die "$tok: the kill left no temporaries to test with"
  "$ZT" "${P[@]}" --text $out/old.txt > $d/again.out 2>&1 || { cat $d/again.out; die "$tok: prepare after a kill failed"; }
  [ "$(grep -c 'removed .*tmp.*a token file of a prepare that did not finish' $d/again.out)" = "$n" ] ||
    { cat $d/again.out; die "$tok: the $n temporaries were not removed with a message"; }
  [ "$n" -ge 1 ] && [ -z "$(ls $d | grep '\.tmp\.')" ] && echo "ok   $tok: killed before its renames, $n temporaries removed by the next prepare" ||
    die "$tok: temporaries left: $(ls $d)"
  # killed between the renames: a new train file beside the old validation file
  rm -f $d/faults.log
  { ( LD_PRELOAD=$FAULTS ZT_FAULT_KILL_AT_RENAME="*/$tok/v.bin" ZT_FAULT_LOG=$d/faults.log \
    "$ZT" "${P[@]}" --text $out/new.txt > $d/k2.out 2>&1 ); } 2>/dev/null
  grep -q "kill before rename" $d/faults.log || die "$tok: no kill between the renames"
  "$ZT" "${TRAIN[@]}" --data $d/t.bin --val-data $d/v.bin > $d/train1.out 2> $d/train1.err
  rc=$?
  if [ $rc -ne 0 ] && [ "$(grep -c 'zerotrain: error' $d/train1.err)" = 1 ] &&
     grep -q "data $d/t.bin was written by a .zerotrain prepare. that stopped before it put its validation file in place" $d/train1.err; then
    echo "ok   $tok: half-replaced pair refused: $(grep 'zerotrain: error' $d/train1.err)"
  else
    echo "exit $rc"; cat $d/train1.err; die "$tok: training used a new train file with the old validation file"
  fi
  "$ZT" "${P[@]}" --text $out/new.txt > $d/fix.out 2>&1 || { cat $d/fix.out; die "$tok: prepare failed"; }
  "$ZT" "${TRAIN[@]}" --data $d/t.bin --val-data $d/v.bin > $d/train2.out 2>&1 ||
    { cat $d/train2.out; die "$tok: training after the prepare completed failed"; }
  left=$(ls $d | grep -v '\.\(out\|err\|log\)$' | tr '\n' ' ')
  [ "$left" = "t.bin v.bin " ] && echo "ok   $tok: the completed prepare left only t.bin v.bin" || die "$tok: left $left"
done
[ $fail -eq 0 ] && echo "ok: a killed prepare leaves nothing unremoved and no silent pair"
exit $fail
