#!/usr/bin/env bash
# The BLAS kernels every zerotrain process runs (kernels/cpu/blas_core.c, docs/design.md "BLAS
# kernels"). Fails if `zerotrain blas` reports kernels below what the CPU offers (a generic
# core such as Prescott on an AVX2/AVX-512 CPU), then checks the fix's paths:
#   - the user's OPENBLAS_CORETYPE wins (reported as theirs, with a warning);
#   - a library that falls back (emulated: ZT_BLAS_EMULATE_FALLBACK=1 makes zerotrain treat
#     OPENBLAS_CORETYPE=Prescott as the library's own choice) is fixed by one re-exec, also
#     with a stale marker inherited from the environment;
#   - under mpirun (2 ranks, with and without -x) every rank is fixed, and a 2-rank training
#     run through the re-exec trains and logs the same losses as without it.
# Run from the repository root.
set -u
ZT=build/zerotrain
[ -x "$ZT" ] || { echo "$ZT not built"; exit 1; }
out=build/test_blas; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)
clean=(env -u OPENBLAS_CORETYPE -u ZT_BLAS_REEXEC -u ZT_BLAS_EMULATE_FALLBACK)
fail=0
bad() { echo "FAIL: $*"; fail=1; }

echo "== zerotrain blas (no OPENBLAS_CORETYPE)"
"${clean[@]}" timeout 30 $ZT blas | tee $out/plain.txt
rc=${PIPESTATUS[0]}
grep -q '"cpu_isa":"\(SSE\|AVX\)"' $out/plain.txt && { echo "CPU below AVX2: nothing to check"; exit 77; }
[ "$rc" -eq 0 ] || bad "the BLAS runs kernels below the CPU's level (exit $rc): $(head -1 $out/plain.txt)"

echo "== the user's OPENBLAS_CORETYPE=Prescott wins"
"${clean[@]}" OPENBLAS_CORETYPE=Prescott timeout 30 $ZT blas > $out/user.txt 2>&1
rc=$?; cat $out/user.txt
[ $rc -eq 1 ] || bad "a generic core forced by the user must report exit 1 (got $rc)"
grep -q '"blas_core":"Prescott","blas_core_by":"user"' $out/user.txt || bad "the user's core was not kept"
grep -q 'warning: OPENBLAS_CORETYPE=Prescott (yours)' $out/user.txt || bad "no warning for a generic core"

echo "== emulated library fallback: one re-exec fixes it (fresh and with a stale marker)"
for marker in "" "1:Prescott"; do
  "${clean[@]}" ${marker:+ZT_BLAS_REEXEC=$marker} OPENBLAS_CORETYPE=Prescott ZT_BLAS_EMULATE_FALLBACK=1 \
      timeout 30 $ZT blas > $out/fix.txt 2>&1
  rc=$?; cat $out/fix.txt
  [ $rc -eq 0 ] || bad "emulated fallback not fixed (exit $rc, marker '$marker')"
  grep -q '"blas_core_by":"zerotrain","blas_library_core":"Prescott","blas_generic":false' $out/fix.txt \
      || bad "the re-executed process does not report the fix (marker '$marker')"
done

echo "== mpirun -np 2, with and without -x: every rank fixed"
for x in "" "-x OPENBLAS_CORETYPE -x ZT_BLAS_EMULATE_FALLBACK"; do
  "${clean[@]}" OPENBLAS_CORETYPE=Prescott ZT_BLAS_EMULATE_FALLBACK=1 timeout 60 \
      "${MPIRUN[@]}" $x -np 2 $ZT blas > $out/mpi.txt 2>&1
  rc=$?
  n=$(grep -c '"blas_core_by":"zerotrain".*"blas_generic":false' $out/mpi.txt)
  echo "mpirun ${x:-(no -x)}: exit $rc, $n of 2 ranks fixed"
  [ $rc -eq 0 ] && [ "$n" -eq 2 ] || { cat $out/mpi.txt; bad "mpirun ${x:-without -x}"; }
done

echo "== 2-rank training through the re-exec (--pp 2) logs the same losses as without"
train=(--n-layer 2 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --micro-batch 2
       --grad-accum 2 --pp 2 --steps 3 --val-every 0 --seed 3)
"${clean[@]}" timeout 120 "${MPIRUN[@]}" -np 2 $ZT "${train[@]}" --log $out/a.jsonl > $out/a.out 2>&1 \
    || { cat $out/a.out; bad "plain 2-rank run"; }
"${clean[@]}" OPENBLAS_CORETYPE=Prescott ZT_BLAS_EMULATE_FALLBACK=1 timeout 120 "${MPIRUN[@]}" \
    -np 2 $ZT "${train[@]}" --log $out/b.jsonl > $out/b.out 2>&1 || { cat $out/b.out; bad "re-exec 2-rank run"; }
grep '^blas' $out/a.out $out/b.out
grep -q '^blas (rank 0): .*set by zerotrain: the library picked Prescott' $out/b.out || bad "banner lacks the fix"
head -1 $out/b.jsonl | grep -q '"blas_core_by":"zerotrain"' || bad "the log's header line lacks the fix"
diff <(grep -o '"loss":[^,]*' $out/a.jsonl) <(grep -o '"loss":[^,]*' $out/b.jsonl) \
    || bad "losses differ between the plain and the re-executed run (same kernels)"
exit $fail
