#!/usr/bin/env bash
# A rank whose launcher is gone stops at once (issue 27, item 8): kill -9 of mpirun during a
# run with a checkpoint every step. Every rank process must be gone within 10 s, and none may
# start another step: at most the step in flight is logged after the kill (Open MPI's own
# lost-connection abort came about 1.1 s later, in which the ranks trained and committed
# several more steps that no one would see). The rank processes are found by this test's own
# --log path, never by a broad pattern.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ZT=$PWD/build/zerotrain
[ -x "$ZT" ] || { echo "launcher_gone: build first (make -j2 all)"; exit 1; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/zt_launcher_gone.XXXXXX")
ranks() { # this test's rank processes (mpirun's own command line holds the path too)
  local p
  for p in $(pgrep -f -- "--log $out/run.jsonl"); do
    # the executable, not comm: after the BLAS re-exec (execv of /proc/self/exe) it is "exe"
    [ "$(basename "$(readlink /proc/$p/exe 2>/dev/null)")" = zerotrain ] && echo "$p"
  done
}
cleanup() { local p; for p in $(ranks); do kill -9 "$p" 2>/dev/null; done; rm -rf "$out"; }
trap cleanup EXIT
export OMP_NUM_THREADS=1
MPI=(mpirun --oversubscribe -x OMP_NUM_THREADS -np 2)
[ "$(id -u)" = 0 ] && MPI=(mpirun --allow-run-as-root "${MPI[@]:1}")
# steps of 0.05-0.3 s on 2 shared cores (the watch's tick is 0.1 s: the step boundary's
# check is what holds them), a checkpoint after each
"${MPI[@]}" "$ZT" --n-layer 2 --n-head 4 --n-embd 128 --micro-batch 8 --seq 64 --steps 1000000 \
  --val-every 0 --log "$out/run.jsonl" --ckpt-dir "$out/ck" --ckpt-every 1 --ckpt-keep 2 \
  >"$out/run.out" 2>&1 &
mp=$!
for _ in $(seq 300); do [ "$(wc -l <"$out/run.jsonl" 2>/dev/null || echo 0)" -ge 4 ] && break; sleep 0.1; done
pids=$(ranks | tr '\n' ' ')
parents=$(for p in $pids; do ps -o ppid= -p "$p"; done | tr -d ' ' | sort -u | tr '\n' ' ')
[ "$(echo $pids | wc -w)" -eq 2 ] && [ "$parents" = "$mp " ] ||
  { cat "$out/run.out"; echo "FAIL: expected 2 ranks of mpirun $mp, found '$pids' of '$parents'"; exit 1; }
# counted and killed by builtins, with no fork between: a step may not end in between
lines() { local l; mapfile -t l <"$out/run.jsonl"; echo ${#l[@]}; }
mapfile -t log <"$out/run.jsonl"
at_kill=${#log[@]}
kill -9 $mp
t0=$(date +%s%N)
while [ -n "$(ranks)" ] && [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 10000 ]; do sleep 0.05; done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
left=$(ranks | tr '\n' ' ')
after=$(lines)
echo "mpirun killed at step $at_kill: ranks gone after $ms ms, $((after - at_kill)) more step(s) logged, checkpoints: $(ls "$out/ck" | tr '\n' ' ')"
fail=0
[ -z "$left" ] || { echo "FAIL: rank processes $left still alive 10 s after mpirun was killed"; fail=1; }
[ $((after - at_kill)) -le 1 ] || { echo "FAIL: the ranks trained $((after - at_kill)) more steps after mpirun was killed"; fail=1; }
[ $fail -eq 0 ] && echo "launcher_gone: all cases passed"
exit $fail
