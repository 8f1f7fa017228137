#!/usr/bin/env bash
# The collective timeout outside the step loop (issue 38, item 2): the default watchdog was
# armed around the steps only, so a rank stopped at start-up (ranks waiting in the options'
# agreement) or during the final --save held the whole job forever; and every waiting rank
# printed the timeout's line. Now the watchdog is armed from the first collective to the
# last, and one line is printed (rank 0 at the deadline, the others only after a grace by
# when the job has ended). ZT_COMM_TIMEOUT_FLOOR_S=3 here (300 s by default). Cases:
# - start-up: rank 1 reads its --config from a FIFO whose writer never writes (MPMD launch),
#   rank 0 waits in the options' agreement: the job ends naming rank 1;
# - final --save: rank 0 held before the export's rename (build/libzt_faults.so), rank 1
#   waits in the agreement after it: the job ends naming rank 0;
# - 3 ranks, rank 1 stopped (SIGSTOP) in the steps: ranks 0 and 2 wait, one line.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
ZT=${ZT:-$PWD/build/zerotrain}
FAULTS=$PWD/build/libzt_faults.so
out=$PWD/build/test_comm_timeout_outside; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1 ZT_COMM_TIMEOUT_FLOOR_S=3
unset ZT_COMM_TIMEOUT_S
MPI=(mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS -x ZT_COMM_TIMEOUT_FLOOR_S)
ARGS=(--n-layer 2 --n-head 2 --n-embd 48 --seq 32 --micro-batch 2 --val-every 0)
fail=0
lines() { grep -c "did not arrive" "$1"; }
check() { # name rc seconds limit pattern file
  local n; n=$(lines "$6")
  if [ "$2" -ne 0 ] && [ "$2" -ne 124 ] && [ "$2" -ne 137 ] && [ "$3" -lt "$4" ] && [ "$n" -eq 1 ] &&
     grep -qE "$5" "$6"; then
    echo "ok   $1: ended after $3 s (exit $2), one line: $(grep 'did not arrive' "$6")"
  else
    echo "FAIL $1: exit $2 after $3 s, $n timeout lines"; sed 's/^/    | /' "$6" | tail -12; fail=1
  fi
}

# start-up
mkfifo $out/fifo; sleep 60 > $out/fifo &
writer=$!
echo '{"steps": 5}' > $out/cfg.json
t0=$(date +%s)
timeout -k 5 40 "${MPI[@]}" -np 1 "$ZT" --config $out/cfg.json "${ARGS[@]}" : \
  -np 1 "$ZT" --config $out/fifo "${ARGS[@]}" < /dev/null > $out/start.out 2>&1
rc=$?
kill $writer 2>/dev/null
check startup $rc $(( $(date +%s) - t0 )) 30 "\(rank 0\) waited [0-9]+ s in .*: rank 1 did not arrive" $out/start.out

# final --save
t0=$(date +%s)
LD_PRELOAD=$FAULTS ZT_FAULT_PAUSE_AT_RENAME='*/model' ZT_FAULT_CONTINUE=$out/never \
  ZT_FAULT_KILL_RANK=0 timeout -k 5 50 "${MPI[@]}" -x LD_PRELOAD -x ZT_FAULT_PAUSE_AT_RENAME \
  -x ZT_FAULT_CONTINUE -np 2 "$ZT" "${ARGS[@]}" --steps 3 --zero 1 --save $out/model \
  < /dev/null > $out/save.out 2>&1
rc=$?
check final_save $rc $(( $(date +%s) - t0 )) 45 "\(rank 1\) waited [0-9]+ s in .*: rank 0 did not arrive" $out/save.out

# one line from three ranks
log=$out/three.jsonl
timeout -k 5 60 "${MPI[@]}" -np 3 "$ZT" "${ARGS[@]}" --steps 100000 --zero 1 --log $log \
  < /dev/null > $out/three.out 2>&1 &
job=$!
stopped=""
for _ in $(seq 600); do
  if grep -q '"step":1,' $log 2>/dev/null; then
    for p in $(pgrep -f -- "--log $log"); do
      [ "$(basename "$(readlink /proc/$p/exe 2>/dev/null)")" = zerotrain ] || continue
      [ "$(tr '\0' '\n' < /proc/$p/environ | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')" = 1 ] && stopped=$p
    done
    [ -n "$stopped" ] && kill -STOP $stopped && break
  fi
  sleep 0.05
done
t0=$(date +%s)
wait $job; rc=$?
[ -n "$stopped" ] && { kill -CONT $stopped; kill -KILL $stopped; } 2>/dev/null
check three_ranks $rc $(( $(date +%s) - t0 )) 30 "\(rank [02]\) waited [0-9]+ s in .*rank 1 did not arrive" $out/three.out
[ $fail -eq 0 ] && echo "ok: the timeout holds outside the steps, and speaks once"
exit $fail
