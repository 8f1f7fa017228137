#!/usr/bin/env bash
# A rank that stalls (SIGSTOP: a hung node) ends the whole job once ZT_COMM_TIMEOUT_S has
# passed, with a message naming the stalled rank, and the ranks that wait for it sleep
# instead of spinning a core. Once step 1 is logged, this script stops rank 1 (SIGSTOP), which
# is then in step 2's work: ZeRO-1 on 3 ranks (with the CPU check), 3 pipeline stages (its
# neighbours wait in send/recv), plain MPI collectives on 2 ranks, and the overlapped
# gradient reduction's nonblocking collectives on 2 ranks. And one rank stopped inside a
# collective on 3 ranks (build/libzt_faults.so), named by its stale heartbeat.
set -u
cd "$(dirname "$0")/../.."
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
# absolute: the rank processes are found by their --log path, which no other checkout's run
# shares (another copy of this test may run on the machine)
out=$PWD/build/test_rank_stalls; rm -rf $out; mkdir -p $out
TIMEOUT_S=3
ARGS=(--n-layer 2 --n-head 2 --n-embd 48 --seq 32 --micro-batch 2 --steps 100000 --val-every 0)
export OMP_NUM_THREADS=1 ZT_COMM_TIMEOUT_S=$TIMEOUT_S
t0=$(date +%s%N)
timeout -k 5 60 mpirun --oversubscribe --allow-run-as-root -np 3 \
    -x OMP_NUM_THREADS -x ZT_COMM_TIMEOUT_S \
    build/zerotrain "${ARGS[@]}" --zero 1 --log $out/log.jsonl > $out/out.txt 2>&1 &
job=$!

# this job's ranks: pid and world rank (from the environment mpirun gave them)
pids=()
ranks() {
  pids=()
  local p
  for p in $(pgrep -f -- "--log $out/"); do
    # the executable, not comm: after the BLAS re-exec (kernels/cpu/blas_core.c, execv of
    # /proc/self/exe) a rank's comm is "exe"
    [ "$(basename "$(readlink /proc/$p/exe 2>/dev/null)")" = zerotrain ] && pids+=("$p")
  done
}
rank_of() { tr '\0' '\n' < /proc/$1/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p'; }
state_of() { sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f1; }
cpu_ticks() { sed 's/.*) //' /proc/$1/stat 2>/dev/null | awk '{print $12 + $13}'; }
cleanup() { ranks; for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done; }
trap cleanup EXIT

# once the log has step 1, stop rank 1 (a hung node); sets $stopped to its pid
stop_rank1() { # log file, job pid
  stopped=""
  for _ in $(seq 1 600); do
    if grep -q '"step":1,' "$1" 2>/dev/null; then
      ranks
      for p in "${pids[@]}"; do [ "$(rank_of "$p")" = 1 ] && stopped=$p; done
      [ -n "$stopped" ] && kill -STOP "$stopped" && return
    fi
    kill -0 "$2" 2>/dev/null || return
    sleep 0.05
  done
}
stop_rank1 $out/log.jsonl $job
fail=0
if [ -z "$stopped" ]; then
  echo "FAIL: rank 1 was never stopped"; cat $out/out.txt; kill $job; exit 1
fi
t_stop=$(date +%s%N)

# CPU of the waiting ranks over 1.5 s of their wait (before the 3 s deadline): they sleep
# between polls, so well under a fifth of a core (a blocking MPI call spins at 65-100%)
sleep 0.3
waiting=()
for p in "${pids[@]}"; do [ "$p" != "$stopped" ] && waiting+=("$p"); done
declare -A before
for p in "${waiting[@]}"; do before[$p]=$(cpu_ticks "$p"); done
sleep 1.5
hz=$(getconf CLK_TCK)
for p in "${waiting[@]}"; do
  after=$(cpu_ticks "$p")
  if [ -z "$after" ] || [ -z "${before[$p]}" ]; then
    echo "FAIL: rank $(rank_of "$p") (pid $p) ended before its CPU use was measured"; fail=1; continue
  fi
  pct=$(( (after - before[$p]) * 100 * 100 / (hz * 150) ))
  echo "waiting rank $(rank_of "$p") (pid $p): ${pct}% of a core while waiting"
  [ "$pct" -lt 20 ] || { echo "FAIL: a waiting rank burns ${pct}% of a core"; fail=1; }
done

wait $job; rc=$?
dt=$(( ($(date +%s%N) - t_stop) / 1000000 ))
echo "mpirun exited with $rc, $((dt / 1000)).$(( (dt % 1000) / 100 )) s after rank 1 stopped (ZT_COMM_TIMEOUT_S=$TIMEOUT_S)"
grep "zerotrain: error" $out/out.txt
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || { echo "FAIL: job did not end with an error (rc $rc)"; fail=1; }
[ $dt -lt 15000 ] || { echo "FAIL: the job took ${dt} ms to end"; fail=1; }
# rank 1 named, alone or among others that truly did not arrive (rank 2 in the next
# collective may wait for rank 0 as well, still in the one rank 1 stopped in)
grep -qE "zerotrain: error: \(rank [02]\) waited [0-9.]+ s in .*: rank ([0-9]+,)*1(,[0-9]+)* did not arrive" $out/out.txt ||
  { echo "FAIL: no message names rank 1 as the one that did not arrive"; tail -20 $out/out.txt; fail=1; }
ranks
[ ${#pids[@]} -eq 0 ] || { echo "FAIL: ${#pids[@]} rank(s) left running"; fail=1; }

# stopped inside a collective the others wait in (what SIGSTOP at a random point hits only
# sometimes): rank 1 counted the collective as entered, so only its stale heartbeat names it
rm -f $out/fault.log
LD_PRELOAD=$PWD/build/libzt_faults.so ZT_FAULT_STOP_AT_IBARRIER=40 ZT_FAULT_KILL_RANK=1 \
  ZT_FAULT_LOG=$out/fault.log timeout -k 5 60 mpirun --oversubscribe --allow-run-as-root -np 3 \
  -x OMP_NUM_THREADS -x ZT_COMM_TIMEOUT_S -x LD_PRELOAD -x ZT_FAULT_STOP_AT_IBARRIER \
  -x ZT_FAULT_KILL_RANK -x ZT_FAULT_LOG \
  build/zerotrain "${ARGS[@]}" --zero 1 --log $out/inside.jsonl > $out/inside.txt 2>&1
rc=$?
grep "zerotrain: error" $out/inside.txt
if ! grep -q "stop before MPI_Ibarrier" $out/fault.log 2>/dev/null; then
  echo "FAIL: the fault library did not stop rank 1 (exit $rc)"; fail=1
elif [ $rc -eq 0 ] || [ $rc -eq 124 ] ||
     ! grep -qE "zerotrain: error: \(rank [02]\) waited [0-9.]+ s in .* on the communicator of ranks 0,1,2: rank 1 did not arrive" $out/inside.txt; then
  echo "FAIL: rank 1 stopped inside a collective of 3 ranks was not named (exit $rc)"
  tail -20 $out/inside.txt; fail=1
fi
pkill -KILL -f -- "--log $out/inside.jsonl" 2>/dev/null

# point-to-point: 3 pipeline stages, the middle one stops; its neighbours wait in send/recv.
# And plain MPI collectives (no staging window) on 2 ranks: the other rank is named.
# And the overlapped communication (--overlap-comm on): the gradient buckets' and the
# parameter gather's waits, and the nonblocking pipeline transfers' (the peer named), are
# polled under the timeout too.
for case in "3|--pp 3 --dp 1 --n-layer 3|stage" "2|--zero 1|mpi" \
            "2|--zero 1 --overlap-comm on --bucket-mib 0|stage" \
            "3|--pp 3 --dp 1 --n-layer 3 --overlap-comm on|stage"; do
  IFS='|' read -r np extra algo <<<"$case"
  t1=$(date +%s%N)
  rm -f $out/case.jsonl
  ZT_COMM_MPI_ALGO=$algo timeout -k 5 60 mpirun --oversubscribe --allow-run-as-root -np "$np" \
      -x OMP_NUM_THREADS -x ZT_COMM_TIMEOUT_S -x ZT_COMM_MPI_ALGO \
      build/zerotrain "${ARGS[@]}" $extra --log $out/case.jsonl > $out/case.txt 2>&1 &
  job=$!
  stop_rank1 $out/case.jsonl $job
  [ -n "$stopped" ] || { echo "FAIL: rank 1 was never stopped ($np ranks, $extra)"; fail=1; }
  wait $job
  rc=$?
  dt=$(( ($(date +%s%N) - t1) / 1000000 ))
  grep "zerotrain: error" $out/case.txt
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $dt -ge 20000 ] ||
     ! grep -qE "zerotrain: error: \(rank [02]\) waited [0-9.]+ s in .*: rank 1 did not arrive" $out/case.txt; then
    echo "FAIL: $np ranks, $extra, ZT_COMM_MPI_ALGO=$algo: exit $rc after ${dt} ms"; tail -20 $out/case.txt; fail=1
  fi
  ranks; cleanup
done
[ $fail -eq 0 ] && echo "ok: the stalled rank ended the job, named, without burning the waiting ranks' cores"
exit $fail
