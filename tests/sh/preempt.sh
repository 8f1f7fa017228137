#!/usr/bin/env bash
# Preemption (src/app/signals.c): with --ckpt-dir, SIGTERM (what SLURM and Kubernetes send
# before they kill) or SIGUSR1 (`sbatch --signal`; mpirun forwards it) saves a checkpoint at the
# next step boundary on every rank and exits 75; the resume continues bit for bit. SIGTERM sent
# to every rank (as scancel does) and SIGUSR1 sent to mpirun; a second SIGTERM stops at once;
# without --ckpt-dir SIGTERM stops at once as before (red_team.sh).
set -u
cd "$(dirname "$0")/../.."
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
PY=${PYTHON:-/usr/bin/python3}
out=build/test_preempt; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI=(mpirun --oversubscribe --allow-run-as-root -np 2)
STEPS=400 # long enough that the signal lands mid-run (the tiny model's steps take ms)
ARGS=(--n-layer 2 --n-head 2 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --micro-batch 2
      --steps $STEPS --val-every 0 --seed 7 --zero 1)
fail=0
bad() { echo "FAIL: $*"; fail=1; }

timeout 120 "${MPI[@]}" build/zerotrain "${ARGS[@]}" --log $out/full.jsonl > $out/full.out 2>&1 \
    || { cat $out/full.out; exit 1; }

# the rank processes of the run whose log is $1 (their command line names it)
rank_pids() { pgrep -f "build/zerotrain .*--log $1" | while read -r p; do
  [ "$(basename "$(readlink /proc/$p/exe 2>/dev/null)")" = zerotrain ] && echo $p; done; }
wait_step() { # log, step: wait until the log has that step
  for _ in $(seq 1 600); do grep -q "\"step\":$2," "$1" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

# case: how the signal is sent; the run must exit 75 after a checkpoint and resume exactly
# (term_overlap: stopped and resumed with --overlap-comm on, whose parameter gather in flight
# must be complete before the stop's checkpoint; against the blocking run)
for how in term_ranks usr1_mpirun term_overlap; do
  d=$out/$how; mkdir -p $d
  ov=off; [ $how = term_overlap ] && ov=on
  timeout 120 "${MPI[@]}" build/zerotrain "${ARGS[@]}" --overlap-comm $ov --ckpt-dir $d/ck \
      --log $d/a.jsonl > $d/a.out 2>&1 &
  job=$!
  wait_step $d/a.jsonl 2 || bad "$how: the run never reached step 2"
  # $job is timeout(1); mpirun is its child
  if [ $how != usr1_mpirun ]; then kill -TERM $(rank_pids $d/a.jsonl); else kill -USR1 $(pgrep -P $job); fi
  wait $job; rc=$?
  [ $rc -eq 75 ] || { bad "$how: exit $rc, want 75"; cat $d/a.out; }
  n=$(grep -c '^preempted: ' $d/a.out)
  [ "$n" -eq 1 ] || bad "$how: $n 'preempted' lines, want 1"
  step=$(sed 's/step-//' $d/ck/latest 2>/dev/null)
  [ -n "$step" ] && [ "$step" -ge 2 ] && [ "$step" -lt $STEPS ] || bad "$how: latest checkpoint '$step'"
  grep -q "\"step\":$step," $d/a.jsonl && ! grep -q "\"step\":$((step + 1))," $d/a.jsonl ||
    bad "$how: the log does not end at the checkpoint's step $step"
  timeout 120 "${MPI[@]}" build/zerotrain "${ARGS[@]}" --overlap-comm $ov --resume $d/ck \
      --ckpt-dir $d/ck --log $d/b.jsonl > $d/b.out 2>&1 || { cat $d/b.out; bad "$how: the resume failed"; }
  echo "== $how: stopped after step $step, exit $rc; resumed to step $STEPS"
  "$PY" tests/ckpt/compare_losses.py $out/full.jsonl $d/b.jsonl || bad "$how: the resume differs"
done

# a second SIGTERM before the step ends stops at once (one rank, a slower step)
d=$out/twice; mkdir -p $d
timeout 120 build/zerotrain --n-layer 4 --n-head 4 --n-embd 256 --vocab 256 --n-ctx 256 \
    --seq 256 --micro-batch 4 --steps 50 --val-every 0 --ckpt-dir $d/ck --log $d/a.jsonl \
    > $d/a.out 2>&1 &
job=$!
wait_step $d/a.jsonl 1 || bad "twice: the run never reached step 1"
# two signals sent at once would merge into one pending signal: the second comes 0.2 s later,
# inside the same step (each takes ~0.7 s)
zt=$(pgrep -P $job) # $job is timeout(1)
kill -TERM $zt; sleep 0.2; kill -TERM $zt
wait $job; rc=$?
[ $rc -eq 143 ] || bad "twice: exit $rc, want 143"
grep -q "stopped at once by a second SIGTERM (rank 0)" $d/a.out || { bad "twice: no message"; cat $d/a.out; }
[ $fail -eq 0 ] && echo "ok: a stop signal saves and exits 75, the resume is exact, a second stops at once"
exit $fail
