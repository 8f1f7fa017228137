#!/usr/bin/env bash
# The collective timeout is on by default (issue 27, item 9): with ZT_COMM_TIMEOUT_S unset, a
# rank stopped with SIGSTOP (a hung node) ends the job once one blocking call has waited past
# the default deadline, the longer of ZT_COMM_TIMEOUT_FLOOR_S (3 s here; 300 s by default) and
# 10 x the longest step, with a line naming the stopped rank; before, the job hung forever.
# Cases: ZeRO-1 collectives on 2 ranks (the other rank named), 3 pipeline stages (the middle
# one stops; its neighbours wait in send/recv, the peer named). A healthy run with a
# checkpoint and a validation every few steps and a final --save never reaches the deadline,
# and ZT_COMM_TIMEOUT_S=0 still waits forever (the job is killed by the test after 8 s).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
ZT=$PWD/build/zerotrain
out=$(mktemp -d "${TMPDIR:-/tmp}/zt_timeout_default.XXXXXX")
export OMP_NUM_THREADS=1 ZT_COMM_TIMEOUT_FLOOR_S=3
unset ZT_COMM_TIMEOUT_S
MPI=(mpirun --oversubscribe -x OMP_NUM_THREADS -x ZT_COMM_TIMEOUT_FLOOR_S)
[ "$(id -u)" = 0 ] && MPI=(mpirun --allow-run-as-root "${MPI[@]:1}")
ARGS=(--n-layer 3 --n-head 2 --n-embd 48 --seq 32 --micro-batch 2 --val-every 0)
fail=0

# this test's rank processes: their --log path is unique; the executable is zerotrain (after
# the BLAS re-exec a rank's comm is "exe", so not by name); never mpirun itself
ranks_of() { # log path
  local p
  for p in $(pgrep -f -- "--log $1"); do
    [ "$(basename "$(readlink /proc/$p/exe 2>/dev/null)")" = zerotrain ] && echo "$p"
  done
}
rank_of() { tr '\0' '\n' < /proc/$1/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p'; }
cleanup() {
  local l p
  for l in "$out"/*.jsonl; do for p in $(ranks_of "$l"); do kill -CONT "$p"; kill -KILL "$p"; done; done 2>/dev/null
  rm -rf "$out"
}
trap cleanup EXIT

# runs a job, stops rank 1 once step 1 is logged; sets rc, ms (from the stop to the end)
stall() { # name, seconds to wait at most, ranks, zerotrain args...
  local name=$1 limit=$2 np=$3 log=$out/$1.jsonl stopped="" p t_stop
  shift 3
  timeout -k 5 "$limit" "${MPI[@]}" -np "$np" "$ZT" "${ARGS[@]}" --steps 100000 "$@" \
    --log "$log" >"$out/$name.out" 2>&1 &
  local job=$!
  for _ in $(seq 600); do
    if grep -q '"step":1,' "$log" 2>/dev/null; then
      for p in $(ranks_of "$log"); do [ "$(rank_of "$p")" = 1 ] && stopped=$p; done
      [ -n "$stopped" ] && kill -STOP "$stopped" && break
    fi
    kill -0 $job 2>/dev/null || break
    sleep 0.05
  done
  t_stop=$(date +%s%N)
  [ -n "$stopped" ] || { echo "FAIL $name: rank 1 was never stopped"; sed 's/^/    | /' "$out/$name.out"; fail=1; }
  wait $job; rc=$?
  ms=$(( ($(date +%s%N) - t_stop) / 1000000 ))
  for p in $(ranks_of "$log"); do kill -CONT "$p"; kill -KILL "$p"; done 2>/dev/null
}

# (and the overlapped communication: the gradient buckets' and the parameter gather's waits,
# and the nonblocking pipeline transfers' waits, are watched like the blocking calls)
for case in "zero1_2ranks|2|--zero 1" "pp3|3|--pp 3" \
            "overlap_2ranks|2|--zero 1 --overlap-comm on --bucket-mib 0" \
            "overlap_pp3|3|--pp 3 --overlap-comm on"; do
  IFS='|' read -r name np extra <<<"$case"
  stall "$name" 40 "$np" $extra
  line=$(grep -E "zerotrain: error: \(rank [02]\) waited [0-9]+ s in .*: rank 1 did not arrive .*the default timeout, 3 s" "$out/$name.out" | head -1)
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] && [ $ms -lt 15000 ] && [ -n "$line" ]; then
    echo "ok   $name: the job ended $((ms / 100))e-1 s after rank 1 stopped (exit $rc): $line"
  else
    echo "FAIL $name: exit $rc, $ms ms after rank 1 stopped"; sed 's/^/    | /' "$out/$name.out" | tail -15; fail=1
  fi
done

# ZT_COMM_TIMEOUT_S=0: no timeout, the job waits (ended by `timeout 10` here)
SAVED=("${MPI[@]}")
export ZT_COMM_TIMEOUT_S=0
MPI+=(-x ZT_COMM_TIMEOUT_S)
stall off 10 2 --zero 1
unset ZT_COMM_TIMEOUT_S
MPI=("${SAVED[@]}")
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "ok   ZT_COMM_TIMEOUT_S=0 waits forever (killed by the test)"
else echo "FAIL off: exit $rc, $ms ms"; sed 's/^/    | /' "$out/off.out" | tail -15; fail=1; fi

# healthy: checkpoints, validation and the final export never reach the 3 s floor
"${MPI[@]}" -np 2 "$ZT" "${ARGS[@]}" --steps 30 --zero 1 --val-every 5 --ckpt-dir "$out/ck" \
  --ckpt-every 3 --save "$out/model" --log "$out/healthy.jsonl" >"$out/healthy.out" 2>&1 &&
  grep -q "^done: 30 steps" "$out/healthy.out" && echo "ok   a healthy run with the default timeout" ||
  { echo "FAIL healthy run:"; sed 's/^/    | /' "$out/healthy.out" | tail -15; fail=1; }
# a bad floor is refused by name
ZT_COMM_TIMEOUT_FLOOR_S=0 "$ZT" "${ARGS[@]}" --steps 1 >"$out/floor.out" 2>&1
[ $? -eq 1 ] && [ "$(grep -c 'ZT_COMM_TIMEOUT_FLOOR_S=0: give the default timeout' "$out/floor.out")" -eq 1 ] &&
  echo "ok   ZT_COMM_TIMEOUT_FLOOR_S=0 refused" || { echo "FAIL bad floor:"; cat "$out/floor.out"; fail=1; }
[ $fail -eq 0 ] && echo "comm_timeout_default: all cases passed"
exit $fail
