#!/usr/bin/env bash
# The OpenMP wait policy (kernels/cpu/omp_policy.h): where OMP_WAIT_POLICY is not set (or is
# empty), zerotrain re-executes itself with PASSIVE, so libgomp's threads sleep instead of
# spinning on cores that other processes need; a value the user set is kept. Checked by what
# libgomp itself reports at start-up (OMP_DISPLAY_ENV=verbose: GOMP_SPINCOUNT is 0 when
# passive, 300000 by default: its OMP_WAIT_POLICY line says PASSIVE for both) and by what
# zerotrain reports (the log's first record), on one process and on two ranks under mpirun.
set -euo pipefail
out=build/test_omp_policy; rm -rf $out; mkdir -p $out
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
TINY="--n-layer 1 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --micro-batch 1
      --steps 1 --val-every 0"
fail=0
policy() { # how libgomp's threads waited, from its last OMP_DISPLAY_ENV report
  case "$(sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p" "$1" | tail -1)" in
    0) echo PASSIVE ;; 300000) echo DEFAULT ;; "") echo NONE ;; *) echo ACTIVE ;;
  esac
}
expect() { # name libgomp's policy zerotrain's report
  local got; got=$(policy $out/$1.err)
  [ "$got" = "$2" ] || { echo "FAIL $1: libgomp ran $got, expected $2"; fail=1; }
  grep -q "\"omp_wait_policy\":\"$3" $out/$1.jsonl ||
    { echo "FAIL $1: the log does not say '$3'"; head -c 300 $out/$1.jsonl; fail=1; }
  [ $fail = 1 ] || echo "ok   $1: $2, $3"
}
run() { # name env... -- : one process
  local name=$1; shift
  env "$@" OMP_DISPLAY_ENV=verbose build/zerotrain $TINY --log $out/$name.jsonl \
      > $out/$name.out 2> $out/$name.err || { cat $out/$name.err; exit 1; }
}
run unset -u OMP_WAIT_POLICY
expect unset PASSIVE "PASSIVE (set by zerotrain)"
run empty OMP_WAIT_POLICY=
expect empty PASSIVE "PASSIVE (set by zerotrain)"
run active OMP_WAIT_POLICY=active
expect active ACTIVE "active (yours)"
# two ranks: each re-executes before MPI_Init and joins the job as before
env -u OMP_WAIT_POLICY OMP_DISPLAY_ENV=verbose $MPI -np 2 build/zerotrain $TINY --dp 2 \
    --log $out/mpi.jsonl > $out/mpi.out 2> $out/mpi.err || { cat $out/mpi.err; exit 1; }
n=$(grep -c "GOMP_SPINCOUNT = '0'" $out/mpi.err || true)
[ "$n" -ge 2 ] || { echo "FAIL mpi: $n ranks report PASSIVE, expected 2"; fail=1; }
grep -q '"omp_wait_policy":"PASSIVE' $out/mpi.jsonl || { echo "FAIL mpi: log"; fail=1; }
[ $fail = 1 ] || echo "ok   mpi: 2 ranks PASSIVE"
# zerotrain launch: the launcher's own PASSIVE is taken back before it execs mpirun, so each
# rank sets its own and says so (it said "yours", inherited from the launcher)
env -u OMP_WAIT_POLICY build/zerotrain launch -np 2 train $TINY --dp 2 --log $out/launch.jsonl \
    > $out/launch.out 2>&1 || { cat $out/launch.out; exit 1; }
grep -q '"omp_wait_policy":"PASSIVE (set by zerotrain)' $out/launch.jsonl ||
  { echo "FAIL launch: the ranks' log does not say 'PASSIVE (set by zerotrain)'"; fail=1; }
[ $fail = 1 ] || echo "ok   launch: the ranks' own PASSIVE"
exit $fail
