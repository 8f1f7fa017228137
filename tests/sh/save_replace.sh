#!/usr/bin/env bash
# --save into a directory that holds an older export replaces the export as a whole: the new
# one is written into a sibling directory and swapped in by one rename (the directory itself
# is a new one afterwards), files a user added stay, and no temporary directory is left.
set -euo pipefail
export LC_ALL=C  # ls and sort in byte order: NOTES.txt before config.json
out=build/test_save_replace; rm -rf $out; mkdir -p $out
ZT="build/zerotrain --model tiny --seq 32 --micro-batch 2 --val-every 0"
$ZT --steps 1 --save $out/model > $out/run1.out
echo "my notes" > $out/model/NOTES.txt
ino1=$(stat -c %i $out/model)
sum1=$(sha256sum < $out/model/model.safetensors)
$ZT --steps 2 --save $out/model > $out/run2.out
ino2=$(stat -c %i $out/model)
sum2=$(sha256sum < $out/model/model.safetensors)
fail=0
[ "$ino1" != "$ino2" ] || { echo "FAIL: the directory was updated in place, not swapped"; fail=1; }
[ "$sum1" != "$sum2" ] || { echo "FAIL: the second save did not change the weights"; fail=1; }
[ "$(cat $out/model/NOTES.txt)" = "my notes" ] || { echo "FAIL: a user's file was lost"; fail=1; }
[ -z "$(ls $out | grep tmp || true)" ] || { echo "FAIL: a temporary directory was left: $(ls $out)"; fail=1; }
[ "$(ls $out/model | sort | tr '\n' ' ')" = "NOTES.txt config.json model.safetensors " ] ||
  { echo "FAIL: unexpected files: $(ls $out/model)"; fail=1; }
exit $fail
