#!/usr/bin/env bash
# `scripts/gpu_checks.sh first-contact` cannot rot between GPU leases: its plan fits the
# machine's 600 s with room for a follow-up, names only tests, layout scripts and flags that
# exist, returns at most 8 files; and the real command, on a machine without a GPU, stops in
# its preflight within seconds, naming the reason, with every later stage NOT RUN. (The dry
# run, `--dry-run first-contact`, takes minutes: README, "On a GPU".)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
[ -x build/zerotrain ] && [ -x build/zt_tests ] || { echo "SKIP: build first (make)"; exit 77; }
out=build/test_gpu_checks_plan
rm -rf $out && mkdir -p $out/bin
fail=0
no() { echo "FAIL: $*"; fail=1; }

bash scripts/gpu_checks.sh --plan first-contact > $out/plan.txt 2>&1 || { cat $out/plan.txt; no "--plan exits non-zero"; }
cat $out/plan.txt
budget=$(sed -n 's/^first-contact plan: budget \([0-9]*\)s.*/\1/p' $out/plan.txt)
[ -n "$budget" ] && [ "$budget" -le 540 ] || no "budget '${budget}' s leaves under 60 s of the machine's 600 for a follow-up"
stages=$(sed -n 's/^stage \([a-z]*\) .*/\1/p' $out/plan.txt | paste -sd' ')
[ "$stages" = "preflight build tests step kernels sanitize layouts" ] || no "stages are '$stages'"
mins=$(($(sed -n 's/^stage [a-z]* min \([0-9]*\)s.*/\1/p' $out/plan.txt | paste -sd+)))
[ "${mins:-999}" -le "${budget:-0}" ] || no "the stages' minima ($mins s) exceed the budget"
nfiles=$(sed -n 's/.*results: //p' $out/plan.txt | wc -w)
[ "$nfiles" -ge 1 ] && [ "$nfiles" -le 8 ] || no "$nfiles result files (the device returns at most 8)"
tests=$(build/zt_tests --list)
for t in $(sed -n 's/^\(memcheck\|racecheck\) tests: //p' $out/plan.txt); do
    grep -qx "$t" <<< "$tests" || no "sanitizer test $t does not exist"
done
for s in $(sed -n 's/^layout tests: //p' $out/plan.txt); do
    [ -f "tests/sh/$s.sh" ] || no "layout test tests/sh/$s.sh does not exist"
done
# each step run's flags as the planner takes them (the same options as training)
while IFS= read -r flags; do
    # shellcheck disable=SC2086 # flags are words
    build/zerotrain memory --backend cuda --model gpt2 --micro-batch 16 --seq 1024 --dp 1 $flags \
        > $out/flags.out 2>&1 < /dev/null || { cat $out/flags.out; no "step flags '$flags' refused"; }
done < <(sed -n 's/^step run: [^:]*: \(--.*\)/\1/p' $out/plan.txt | grep -v torch_step)

# the real command without a GPU: nvidia-smi that finds none, first on the PATH
printf '#!/bin/sh\necho "No devices were found" >&2\nexit 6\n' > $out/bin/nvidia-smi
chmod +x $out/bin/nvidia-smi
t0=$(date +%s)
PATH=$PWD/$out/bin:$PATH GPU_CHECKS_WORK=$out/logs BUDGET_S=120 \
    bash scripts/gpu_checks.sh -o $out/res first-contact > $out/run.out 2>&1
rc=$?
dt=$(($(date +%s) - t0))
cat $out/res/summary.txt
[ $rc -ne 0 ] || no "the command without a GPU exits 0"
grep -q "^FAIL preflight: .*no GPU (nvidia-smi -L finds none)" $out/res/summary.txt || no "no preflight failure naming the missing GPU"
for s in build tests step kernels sanitize layouts; do
    grep -q "^NOT RUN $s: the preflight failed" $out/res/summary.txt || no "stage $s not reported NOT RUN"
done
[ $dt -le 60 ] || no "the preflight took ${dt}s to stop"
n=$(find $out/res -type f | wc -l)
[ "$n" -le 8 ] || no "$n result files"
[ $fail -eq 0 ] && echo "the first-contact plan fits, names what exists, and stops at its preflight without a GPU (${dt}s)"
exit $fail
