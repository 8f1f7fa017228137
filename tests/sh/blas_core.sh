#!/usr/bin/env bash
# The BLAS kernels every zerotrain process runs (kernels/cpu/blas_core.c, docs/design.md "BLAS
# kernels"). Fails if `zerotrain blas` reports kernels below what the CPU offers (a generic
# core such as Prescott on an AVX2/AVX-512 CPU), then checks the fix's paths:
#   - the user's OPENBLAS_CORETYPE wins (reported as theirs, with a warning);
#   - a library that falls back (emulated: ZT_BLAS_EMULATE_FALLBACK=1 makes zerotrain treat
#     OPENBLAS_CORETYPE=Prescott as the library's own choice) is fixed by one re-exec, also
#     with a stale marker inherited from the environment;
#   - under mpirun (2 ranks, with and without -x) every rank is fixed, and a 2-rank training
#     run through the re-exec trains and logs the same losses as without it;
#   - one training run each with an explicit OPENBLAS_CORETYPE, only values safe on any CPU
#     this runs on (no core above the CPU's): Prescott, slower than the CPU's (kept, one
#     warning, named in the banner and the log's header line; one warning from 2 ranks too);
#     empty (no choice: the library's pick, fixed where below the CPU, no warning); and the
#     machine's own value where it sets one (kept, warned about only if below the CPU).
# Every other run here clears OPENBLAS_CORETYPE for its own process: they test zerotrain's
# choice. Run from the repository root.
set -u
ZT=${ZT:-build/zerotrain}
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

# One zerotrain process training one step, its stdout, stderr and --log apart: name, then
# env's arguments (-u VAR, VAR=value) for this run alone.
tiny=(--n-layer 1 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --micro-batch 1 --steps 1
      --val-every 0)
train_one() {
  local name=$1; shift
  env -u ZT_BLAS_REEXEC -u ZT_BLAS_EMULATE_FALLBACK "$@" timeout 60 $ZT "${tiny[@]}" \
      --log $out/$name.jsonl > $out/$name.out 2> $out/$name.err
  local rc=$?
  cat $out/$name.err; grep '^blas' $out/$name.out; head -1 $out/$name.jsonl 2>/dev/null
  [ $rc -eq 0 ] || bad "$name: the run failed (exit $rc)"
}
warnings() { grep -c 'warning' "$1"; }

echo "== a slower core than the CPU's (OPENBLAS_CORETYPE=Prescott): kept, warned once, named"
train_one slow -u OPENBLAS_CORETYPE OPENBLAS_CORETYPE=Prescott
[ "$(warnings $out/slow.err)" -eq 1 ] || bad "slow: $(warnings $out/slow.err) warning lines, want 1"
grep -q "^zerotrain: warning: OPENBLAS_CORETYPE=Prescott (yours) runs OpenBLAS's Prescott kernels" \
    $out/slow.err || bad "slow: the warning does not name the user's Prescott"
head -1 $out/slow.jsonl | grep -q '"blas_core":"Prescott","blas_core_by":"user","blas_generic":true' \
    || bad "slow: the log's header line does not name the user's Prescott"
grep -q '"blas_library_core"' $out/slow.jsonl && bad "slow: re-executed over the user's choice"
grep -q '^blas (rank 0): .* core Prescott (OPENBLAS_CORETYPE=Prescott; ' $out/slow.out \
    || bad "slow: the banner does not name the user's Prescott"
"${clean[@]}" OPENBLAS_CORETYPE=Prescott timeout 60 "${MPIRUN[@]}" -np 2 $ZT blas > $out/slow2.out \
    2> $out/slow2.err
n=$(grep -c '"blas_core":"Prescott","blas_core_by":"user"' $out/slow2.out)
echo "mpirun -np 2: $n of 2 ranks keep Prescott, $(warnings $out/slow2.err) warning line(s)"
[ "$n" -eq 2 ] && [ "$(warnings $out/slow2.err)" -eq 1 ] || { cat $out/slow2.err; bad "slow, 2 ranks"; }

echo "== OPENBLAS_CORETYPE= (empty): no choice, so the library's pick, fixed where below the CPU"
train_one empty -u OPENBLAS_CORETYPE OPENBLAS_CORETYPE=
[ "$(warnings $out/empty.err)" -eq 0 ] || bad "empty: a warning"
head -1 $out/empty.jsonl | grep -q '"blas_core_by":"\(library\|zerotrain\)".*"blas_generic":false' \
    || bad "empty: the log's header line does not report the library's (or zerotrain's) pick"
grep -q "^blas (rank 0): .* (\(the library's choice\|set by zerotrain: \)" $out/empty.out \
    || bad "empty: the banner does not say the library (or zerotrain) chose"

if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
  v=$OPENBLAS_CORETYPE
  echo "== this machine's OPENBLAS_CORETYPE=$v: kept, warned about only where below the CPU"
  train_one machine
  head -1 $out/machine.jsonl | grep -q '"blas_core_by":"user"' || bad "machine: the user's value was not kept"
  grep -qF "(OPENBLAS_CORETYPE=$v; " $out/machine.out || bad "machine: the banner does not name $v"
  want=0; head -1 $out/machine.jsonl | grep -q '"blas_generic":true' && want=1
  [ "$(warnings $out/machine.err)" -eq $want ] || bad "machine: $(warnings $out/machine.err) warnings, want $want"
else
  echo "== OPENBLAS_CORETYPE is not set here (or empty): the library's pick is checked above"
fi
exit $fail
