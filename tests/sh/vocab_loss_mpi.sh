#!/usr/bin/env bash
# The vocab-parallel cross entropy on 2, 3 and 4 ranks against the serial one computed in
# double (tests/test_vocab_loss.c).
set -u
BIN=${ZT_TESTS:-build/zt_tests}
export OMP_NUM_THREADS=1
fail=0
for n in 2 3 4; do
  echo "== vocab_loss_mpi on $n ranks"
  timeout 120 mpirun --oversubscribe --allow-run-as-root -np $n "$BIN" vocab_loss_mpi || fail=1
done
exit $fail
