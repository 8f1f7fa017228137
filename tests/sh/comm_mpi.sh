#!/usr/bin/env bash
# The MPI communicator under mpirun: every collective checked exactly on 2, 3 and 4 ranks
# (comm_mpi_collectives), the same through host staging (comm_staged_collectives), then fault injection: a rank that hits an MPI error, a fatal
# check of ours, or plain exit must end the whole job with a non-zero status instead of
# leaving the other ranks waiting in a barrier. Run from the repository root.
set -u
BIN=${ZT_TESTS:-build/zt_tests}
export OMP_NUM_THREADS=1
# the collectives' settings are each run's own (the fault messages are the default path's)
unset ZT_COMM_MPI_ALGO ZT_COMM_MPI_STAGE_KIB ZT_COMM_MPI_MAX_COUNT ZT_COMM_TIMEOUT_S
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)
LIMIT=${ZT_COMM_TIMEOUT:-300} # seconds before a run counts as a hang
if ! command -v mpirun >/dev/null; then echo "mpirun not found"; exit 77; fi
[ -x "$BIN" ] || { echo "$BIN not built"; exit 1; }

fail=0
# every collective path: the staged default, staging for all-gather too, and plain MPI
for algo in stage stage-all mpi; do
  for n in 2 3 4; do
    echo "== comm_mpi_collectives on $n ranks, ZT_COMM_MPI_ALGO=$algo"
    ZT_COMM_MPI_ALGO=$algo timeout "$LIMIT" "${MPIRUN[@]}" -np "$n" -x ZT_COMM_MPI_ALGO "$BIN" \
        comm_mpi_collectives
    rc=$?
    if [ $rc -ne 0 ]; then echo "FAIL: $n ranks, $algo (exit $rc$([ $rc -eq 124 ] && echo ', timed out'))"; fail=1; fi
  done
done

# host staging over MPI (comm_staged.c) with the CPU backend as the device: every operation,
# in one piece and in pieces, the grid's staged paths, bit-equal to plain MPI
for n in 2 3 4; do
  echo "== comm_staged_collectives on $n ranks"
  timeout "$LIMIT" "${MPIRUN[@]}" -np "$n" "$BIN" comm_staged_collectives
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: staged, $n ranks (exit $rc)"; fail=1; fi
done

# the same checks with the collective timeout on: every operation nonblocking, polled
# (a generous timeout: a loaded machine must not trip it)
for algo in stage stage-all mpi; do
  echo "== comm_mpi_collectives on 3 ranks, ZT_COMM_MPI_ALGO=$algo, ZT_COMM_TIMEOUT_S=120"
  ZT_COMM_TIMEOUT_S=120 ZT_COMM_MPI_ALGO=$algo timeout "$LIMIT" "${MPIRUN[@]}" -np 3 \
      -x ZT_COMM_MPI_ALGO -x ZT_COMM_TIMEOUT_S "$BIN" comm_mpi_collectives
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: 3 ranks, $algo, timeout on (exit $rc)"; fail=1; fi
done

# mode, a string rank 1's message must contain
for fault in "mpi:MPI_Recv" "assert:not another rank" "exit:"; do
  mode=${fault%%:*}; want=${fault#*:}
  echo "== fault '$mode' on rank 1 of 3"
  out=$(ZT_COMM_FAULT=$mode timeout 60 "${MPIRUN[@]}" -np 3 -x ZT_COMM_FAULT "$BIN" comm_mpi_fault 2>&1)
  rc=$?
  echo "$out" | grep -E 'zerotrain: fatal|exited|MPI_ABORT|signal' | head -5 | sed 's/^/    /'
  if [ $rc -eq 124 ]; then echo "FAIL: fault '$mode' left the job hanging"; fail=1
  elif [ $rc -eq 0 ]; then echo "FAIL: fault '$mode' ended with status 0"; fail=1
  elif [ -n "$want" ] && ! grep -q "zerotrain: fatal (rank 1).*$want" <<<"$out"; then
    echo "FAIL: fault '$mode' without the message 'zerotrain: fatal (rank 1) ...$want'"; fail=1
  else echo "ok: fault '$mode' ended the job (exit $rc)"; fi
done
exit $fail
