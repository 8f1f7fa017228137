#!/usr/bin/env bash
# A rank that dies mid-training ends the whole job with a message naming it, instead of
# leaving the other ranks waiting in a collective forever.
set -u
cd "$(dirname "$0")/../.."
# absolute: the victim is found by its --log path, which no other checkout's run shares
out=$PWD/build/test_rank_dies; rm -rf $out; mkdir -p $out
OMP_NUM_THREADS=1 timeout 120 mpirun --oversubscribe --allow-run-as-root -np 2 build/zerotrain \
    --n-layer 2 --n-head 2 --n-embd 32 --seq 32 --micro-batch 2 --steps 100000 --val-every 0 \
    --zero 1 --log $out/log.jsonl > $out/out.txt 2>&1 &
job=$!
for i in $(seq 1 600); do [ -s $out/log.jsonl ] && break; sleep 0.1; done
[ -s $out/log.jsonl ] || { echo "training never started"; cat $out/out.txt; kill $job; exit 1; }
# a rank, not mpirun (whose command line holds the path too): the one whose program is zerotrain
victim=$(for p in $(pgrep -f -- "--log $out/"); do
  [ "$(basename "$(readlink /proc/$p/exe 2>/dev/null)")" = zerotrain ] && echo $p; done | tail -1)
kill -9 "$victim"
t0=$(date +%s)
wait $job; rc=$?
dt=$(( $(date +%s) - t0 ))
echo "mpirun exited with $rc ${dt}s after the kill"
tail -5 $out/out.txt
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: job did not end with an error (rc $rc)"; exit 1; }
grep -qiE "rank|process" $out/out.txt || { echo "FAIL: no message names the dead rank"; exit 1; }
