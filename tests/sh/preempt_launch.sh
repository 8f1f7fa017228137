#!/usr/bin/env bash
# Preemption's exit status through the launcher (issue 38, item 3): SIGTERM or SIGINT to
# `zerotrain launch` (which exec'ed mpirun), or to its whole process group as schedulers and
# container runtimes send, saved a checkpoint and printed "(exit 75)" on every rank, but the
# job exited 1 (mpirun kills the ranks on SIGTERM and reports a failure). The launch now stays
# mpirun's parent, runs it in a process group of its own and turns the first SIGTERM/SIGINT
# into SIGUSR1, which mpirun forwards to every rank: the job exits 75, and the resume is bit
# for bit. Cases: SIGTERM to the launch's process group, SIGINT to the launch alone; and a run
# without --ckpt-dir stopped the same way ends (non-zero, said) without hanging. (A bare
# mpirun: send it SIGUSR1, tests/sh/preempt.sh.)
set -u
cd "$(dirname "$0")/../.."
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
ZT=${ZT:-$PWD/build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
out=$PWD/build/test_preempt_launch; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
STEPS=400
ARGS=(--n-layer 2 --n-head 2 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --micro-batch 2
      --steps $STEPS --val-every 0 --seed 7 --zero 1)
fail=0
bad() { echo "FAIL: $*"; fail=1; }
wait_step() { for _ in $(seq 600); do grep -q "\"step\":$2," "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }

timeout 120 mpirun --oversubscribe --allow-run-as-root -np 2 "$ZT" "${ARGS[@]}" --log $out/full.jsonl \
  > $out/full.out 2>&1 || { cat $out/full.out; exit 1; }
for how in term_group int_launch; do
  d=$out/$how; mkdir -p $d
  # a session of its own: the launch leads its process group, as under a scheduler's shell
  setsid "$ZT" launch -np 2 "${ARGS[@]}" --ckpt-dir $d/ck --log $d/a.jsonl < /dev/null > $d/a.out 2>&1 &
  job=$!
  wait_step $d/a.jsonl 2 || bad "$how: the run never reached step 2"
  if [ $how = term_group ]; then kill -TERM -- -$job; else kill -INT $job; fi
  for _ in $(seq 1200); do kill -0 $job 2>/dev/null || break; sleep 0.05; done
  kill -0 $job 2>/dev/null && { kill -KILL -- -$job; bad "$how: the launch did not end within 60 s"; }
  wait $job; rc=$?
  [ $rc -eq 75 ] || { bad "$how: exit $rc, want 75"; tail -20 $d/a.out; }
  n=$(grep -c '^preempted: ' $d/a.out)
  [ "$n" -eq 1 ] || bad "$how: $n 'preempted' lines, want 1"
  step=$(sed 's/step-//' $d/ck/latest 2>/dev/null)
  [ -n "$step" ] && [ "$step" -ge 2 ] && [ "$step" -lt $STEPS ] || bad "$how: latest checkpoint '$step'"
  timeout 120 mpirun --oversubscribe --allow-run-as-root -np 2 "$ZT" "${ARGS[@]}" --resume $d/ck \
    --ckpt-dir $d/ck --log $d/b.jsonl > $d/b.out 2>&1 || { cat $d/b.out; bad "$how: the resume failed"; }
  echo "== $how: stopped after step $step, exit $rc; resumed to step $STEPS"
  "$PY" tests/ckpt/compare_losses.py $out/full.jsonl $d/b.jsonl > $d/cmp.txt || { tail -3 $d/cmp.txt; bad "$how: the resume differs"; }
done
# without --ckpt-dir: stops, says so, no hang
d=$out/no_ckpt; mkdir -p $d
setsid "$ZT" launch -np 2 "${ARGS[@]}" --log $d/a.jsonl < /dev/null > $d/a.out 2>&1 &
job=$!
wait_step $d/a.jsonl 2 || bad "no_ckpt: the run never reached step 2"
kill -TERM -- -$job
for _ in $(seq 600); do kill -0 $job 2>/dev/null || break; sleep 0.05; done
kill -0 $job 2>/dev/null && { kill -KILL -- -$job; bad "no_ckpt: the launch did not end within 30 s"; }
wait $job; rc=$?
[ $rc -ne 0 ] && [ $rc -ne 75 ] && grep -q "nothing was saved" $d/a.out &&
  echo "== no_ckpt: exit $rc, $(grep -m1 'nothing was saved' $d/a.out)" || { bad "no_ckpt: exit $rc"; tail $d/a.out; }
[ $fail -eq 0 ] && echo "ok: a stop signal to the launch or its group ends the job with 75, resumed exactly"
exit $fail
