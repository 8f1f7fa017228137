#!/usr/bin/env bash
# A launch that started several processes which MPI cannot join (`srun -n 4` without a PMI that
# Open MPI can use: each process is a world of one) is refused, printed by the first process
# only, every process exiting 1; a batch script that runs zerotrain itself inside a job of
# several tasks (SLURM_NTASKS set, one process) trains, with a warning. Emulated with Slurm's
# variables (tests/sh/slurm.sh runs a real Slurm: there Debian's Open MPI itself stops the ranks
# of `srun --mpi=none` in MPI_Init, so this refusal is for MPIs that let them start).
set -u
cd "$(dirname "$0")/../.."
out=build/test_launcher_world; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
T=(--n-layer 1 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 16 --seq 8 --steps 1 --val-every 0)
fail=0
pids=()
for r in 0 1 2 3; do
  env SLURM_STEP_NUM_TASKS=4 SLURM_NTASKS=4 SLURM_PROCID=$r timeout 60 build/zerotrain "${T[@]}" \
      > $out/task$r.out 2>&1 &
  pids+=($!)
done
for r in 0 1 2 3; do
  wait ${pids[$r]}; rc=$?
  [ $rc -eq 1 ] || { echo "FAIL: task $r exited $rc, want 1"; fail=1; }
done
n=$(cat $out/task*.out | grep -c 'zerotrain: error: this launch started 4 processes (SLURM_STEP_NUM_TASKS=4)')
[ "$n" -eq 1 ] && echo "ok   srun without MPI: refused, said once" ||
  { echo "FAIL: the refusal was printed $n times"; cat $out/task*.out; fail=1; }
grep -q 'srun --mpi=pmix' $out/task0.out || { echo "FAIL: the message lacks the fix"; fail=1; }
env SLURM_NTASKS=4 timeout 60 build/zerotrain "${T[@]}" > $out/batch.out 2>&1 ||
  { echo "FAIL: a batch script's single run did not train"; cat $out/batch.out; fail=1; }
grep -q 'warning: SLURM_NTASKS=4 but this job.s MPI world has 1 rank' $out/batch.out &&
  echo "ok   one process in a job of 4 tasks: trains, warned" ||
  { echo "FAIL: no warning for the idle tasks"; fail=1; }
exit $fail
