#!/usr/bin/env bash
# Runs the whole suite: every C test in its own process, then every tests/sh/*.sh
# script. Prints one line per test and ends with "N passed, M failed, K skipped".
set -u
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export PYTHON=${PYTHON:-/usr/bin/python3}
pass=0; fail=0; skip=0; failed=()
run_one() { # name, command...
  local name=$1; shift
  local t0=$(date +%s%N) out rc
  out=$("$@" 2>&1); rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local dt=$((ms / 1000)).$(( (ms % 1000) / 100 ))
  if [ $rc -eq 0 ]; then pass=$((pass+1)); echo "PASS $name (${dt}s)"
  elif [ $rc -eq 77 ]; then # the reason: the test's last line (before zt_tests's own "SKIP name")
    local why; why=$(printf '%s\n' "$out" | grep -v "^SKIP $name\$" | grep . | tail -1 | sed 's/^ *//; s/^SKIP:* *//')
    skip=$((skip+1)); echo "SKIP $name${why:+: $why}"
  else fail=$((fail+1)); failed+=("$name"); echo "FAIL $name (exit $rc)"; echo "$out" | tail -40 | sed 's/^/    /'
  fi
  [ -n "${VERBOSE:-}" ] && echo "$out" | sed 's/^/    /'
  return 0
}
TESTS=${ZT_TESTS:-build/zt_tests} # build/zt_tests_cuda runs the cuda_* tests on a GPU
for t in $($TESTS --list); do
  [ -n "${ONLY:-}" ] && [[ "$t" != *$ONLY* ]] && continue
  run_one "$t" $TESTS "$t"
done
for s in tests/sh/*.sh; do
  name=$(basename "$s" .sh)
  [ -n "${ONLY:-}" ] && [[ "$name" != *$ONLY* ]] && continue
  run_one "$name" bash "$s"
done
[ $fail -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
