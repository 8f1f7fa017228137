#!/usr/bin/env bash
# The planner under --schedule interleaved against the allocator: `zerotrain memory --json`
# predicts every rank's bytes per category (a rank's chunks: one flat parameter buffer over
# their units, each chunk's activations with its own slots, the trainer's buffers per chunk
# slot; src/planner/planner.c, plan_chunks), and a 1-step training run logs each rank's
# measured peak per category (mem_peak): they must be equal to the byte, on every rank, in
# the memory tests' style (bench/memory.sh). Layouts: V 2; V 3 with an embedding-only first
# chunk and a head-only last; dp 2, --zero 1, --tp 2, 8-bit AdamW; the `memory` partition
# over the pp x V chunks; bf16 with --recompute selective; --tensor-path staged (the ring's
# reserved send slots, host memory the allocator counts in comm; zt_plan_ring_sends).
set -euo pipefail
out=build/test_interleaved_memory; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
PY=${PYTHON:-/usr/bin/python3}
# --threads 1 in both: the attention scratch grows with the threads
common="--n-layer 4 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --micro-batch 2
        --pp 2 --schedule interleaved --threads 1"
fail=0
check() { # name np flags...
  local name=$1 np=$2; shift 2
  build/zerotrain memory --json $common "$@" > $out/$name.plan.json
  $MPI -np $np build/zerotrain $common "$@" --steps 1 --log $out/$name.jsonl \
      > $out/$name.out 2>&1 || { tail -20 $out/$name.out; exit 1; }
  if "$PY" - $out/$name.plan.json $out/$name.jsonl $np <<'PY'
import json, sys
plan = {r["rank"]: r for r in json.load(open(sys.argv[1]))["ranks"]}
seen, bad = set(), 0
for line in open(sys.argv[2]):
    o = json.loads(line)
    if "mem_peak" not in o:
        continue
    seen.add(o["rank"])
    for cat, got in o["mem_peak"].items():
        want = plan[o["rank"]]["bytes"][cat]
        if got != want:
            print(f"  rank {o['rank']} {cat}: allocated {got:.0f}, planned {want:.0f}")
            bad += 1
sys.exit(1 if bad or seen != set(range(int(sys.argv[3]))) else 0)
PY
  then echo "ok   $name: every rank's allocation equals the plan in every category"
  else echo "FAIL $name: the plan differs from the allocation"; fail=1
  fi
}
check v2 2 --virtual-stages 2 --grad-accum 4
check v3_own_ends 2 --virtual-stages 3 --grad-accum 4 --partition 0:1,1:2,2:3,3:4,4:5,5:6
check v2_dp2_tp2_8bit 8 --virtual-stages 2 --grad-accum 2 --dp 2 --zero 1 --tp 2 \
      --optim adamw8bit
check v2_memory 2 --virtual-stages 2 --grad-accum 6 --partition memory
check v2_bf16_selective 2 --virtual-stages 2 --grad-accum 4 --param-dtype bf16 \
      --recompute selective
check v2_staged 2 --virtual-stages 2 --grad-accum 4 --tensor-path staged
[ $fail = 0 ] && echo "PASS interleaved_memory"
exit $fail
