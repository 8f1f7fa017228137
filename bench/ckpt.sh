#!/usr/bin/env bash
# Checkpoint save and load time and bytes per rank for gpt2 (124M) at dp 2 with ZeRO-1
# (bench/RESULTS.md), for fp32 AdamW and 8-bit AdamW. One step, then a save; then a run
# that only resumes (--steps 1 from a step-1 checkpoint: it loads and stops).
# ZT=path/to/zerotrain measures another build (e.g. the one before a change).
set -euo pipefail
out=${OUT:-build/bench_ckpt}; rm -rf $out; mkdir -p $out
ZT=${ZT:-build/zerotrain}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
for opt in adamw adamw8bit; do
  flags="--model gpt2 --zero 1 --micro-batch 1 --seq 64 --steps 1 --val-every 0 --optim $opt"
  $MPI -np 2 $ZT $flags --ckpt-dir $out/ck-$opt > $out/save-$opt.out 2>&1
  $MPI -np 2 $ZT $flags --resume $out/ck-$opt > $out/load-$opt.out 2>&1
  echo "== $opt"
  grep "^checkpoint" $out/save-$opt.out
  grep "^resumed" $out/load-$opt.out
  ls -l $out/ck-$opt/step-1/ | awk 'NR>1 {print "  " $5 " " $9}'
  ${PYTHON:-/usr/bin/python3} - $out/ck-$opt/step-1/manifest.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
n = n8 = 0
for t in m["tensors"]:
    k = 1
    for d in t["shape"]: k *= d
    n += k
    n8 += k if t["state"] == "8bit" else 0
B = m["optimizer"]["block_size"]
dp = m["layout"]["dp"]
total = 4 * n + (8 * (n - n8) + 2 * n8 + 8 * n8 / B if m["optimizer"]["name"] == "adamw8bit" else 8 * n)
print(f"  formula: {n} values; 4 B param + state ({'8-bit: 2 B codes + 8 B absmax per %d, fp32 8 B for small tensors' % B if n8 else 'fp32 m, v: 8 B'})"
      f" = {total/2**20:.1f} MiB in all, {total/dp/2**20:.1f} MiB per rank at dp {dp}")
PY
done
