#!/usr/bin/env bash
# --profile times the step by phase without changing it: the losses equal a run without it
# bit for bit (1 rank, and --zero 1 --pp 2 on 4 ranks); every step's "phases" in the log
# has each phase, the phases the rank must run took time, comm only where ranks talk,
# and the table at the end lists every phase.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/test_profile; rm -rf $out; mkdir -p $out
PY=${PYTHON:-/usr/bin/python3}
ARGS=(--model tiny --seq 32 --micro-batch 2 --steps 4 --val-every 0)
export OMP_NUM_THREADS=1
build/zerotrain "${ARGS[@]}" --log $out/plain1.jsonl > $out/plain1.out
build/zerotrain "${ARGS[@]}" --profile --log $out/prof1.jsonl > $out/prof1.out
fail=0
# the decorator keeps the backend's name: the CPU run's banner names no other backend
if grep -q "^backend: " $out/prof1.out; then
  echo "FAIL: --profile changed the backend's name: $(grep '^backend: ' $out/prof1.out)"; fail=1
fi
# the op table follows the phase table (its sums are checked in test_plan.c)
if ! grep -A1 "^  op (the most time first)" $out/prof1.out | tail -1 |
    grep -Eq "^  [a-z0-9_]+ +[0-9]+\.[0-9]+ "; then
  echo "FAIL: --profile printed no op table:"; cat $out/prof1.out; fail=1
fi
if command -v mpirun >/dev/null; then
  MPI=(mpirun --oversubscribe --allow-run-as-root -np 4 -x OMP_NUM_THREADS build/zerotrain)
  "${MPI[@]}" "${ARGS[@]}" --zero 1 --pp 2 --log $out/plain4.jsonl > $out/plain4.out
  "${MPI[@]}" "${ARGS[@]}" --zero 1 --pp 2 --profile --log $out/prof4.jsonl > $out/prof4.out
  runs="1 4"
else
  echo "mpirun not found: the 4-rank half is skipped"; runs="1"
fi
for r in $runs; do
  for p in gemm attention loss elementwise optimizer grad_norm memory comm other; do
    grep -q "^  $p " $out/prof$r.out || { echo "FAIL: $r rank(s): no '$p' row in the table"; fail=1; }
  done
  $PY - $out/plain$r.jsonl $out/prof$r.jsonl $r <<'PYEOF' || fail=1
import json, sys
def steps(path):
    return [json.loads(l) for l in open(path) if '"loss"' in l]
plain, prof, ranks = steps(sys.argv[1]), steps(sys.argv[2]), int(sys.argv[3])
bad = []
if [s["loss"] for s in plain] != [s["loss"] for s in prof]:
    bad.append(f"losses differ: {[s['loss'] for s in plain]} vs {[s['loss'] for s in prof]}")
if any("phases" in s for s in plain):
    bad.append("a run without --profile logged phases")
# rank 0 logs: with --pp 2 it is the first stage, which has no loss to compute
must = ["gemm", "attention", "elementwise", "optimizer", "grad_norm", "memory"]
if ranks == 1: must.append("loss")
for s in prof:
    ph = s.get("phases")
    if ph is None:
        bad.append(f"step {s['step']}: no phases"); continue
    timed = sum(v for k, v in ph.items() if k != "other")
    if any(ph.get(k, 0) <= 0 for k in must):
        bad.append(f"step {s['step']}: a phase the step runs took no time: {ph}")
    # one rank's collectives are copies on size-1 communicators: microseconds
    if (ph["comm"] > 0.5) != (ranks > 1):
        bad.append(f"step {s['step']}: comm {ph['comm']} ms on {ranks} rank(s)")
    # "other" is the step's time outside the timed ops: >= 0 up to the clock's rounding
    if ph["other"] < -0.01 or abs(timed + ph["other"] - s["ms"]) > 0.01:
        bad.append(f"step {s['step']}: phases {timed:.3f} + other {ph['other']:.3f} != {s['ms']} ms")
for b in bad: print("FAIL:", b)
print(f"{ranks} rank(s): {len(prof)} steps, losses equal, phases of the last step: {prof[-1].get('phases')}")
sys.exit(1 if bad else 0)
PYEOF
done
exit $fail
