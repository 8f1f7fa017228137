#!/usr/bin/env bash
# Temporaries that are provably no one else's are cleaned, and said (issue 27, item 7):
# - an export killed with kill -9 before its rename (build/libzt_faults.so kills it at the
#   rename of its model.safetensors) left OUT.tmp.<pid> (a whole model's size) that no later
#   export removed: the next export removes it, naming it; another host's temporary and a live
#   process's (this shell's pid) are kept, and so is the temporary of an export paused alive
#   while a second export of the same directory runs;
# - an export whose disk fills (fsync of config.json fails with ENOSPC) removes its own
#   temporary directory (model.safetensors was left in it);
# - a save whose disk fills (a shard on 2 ranks, the manifest on rank 0) fails with one error
#   and removes its own tmp-step-N: the previous checkpoint stays, `latest` names it, and the
#   run resumes from it;
# - a save killed (kill -9) before its commit leaves tmp-step-N; the next run holding the
#   directory's lock removes it, naming it.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ZT=${ZT:-build/zerotrain}
FAULTS=$PWD/build/libzt_faults.so
[ -x "$ZT" ] && [ -f "$FAULTS" ] || { echo "tmp_cleanup: build first (make -j2 all)"; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/zt_tmp_cleanup.XXXXXX")
trap 'rm -rf "$out"' EXIT
export OMP_NUM_THREADS=1
MPI=(mpirun --oversubscribe -x OMP_NUM_THREADS)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
RUN=(--n-layer 1 --n-head 2 --n-embd 32 --micro-batch 2 --seq 16 --val-every 0)
host=$(hostname)
fail=0
die() { echo "FAIL: $*"; fail=1; }
show() { sed 's/^/    | /' "$@"; }

"$ZT" "${RUN[@]}" --steps 2 --ckpt-dir "$out/ck" --ckpt-every 1 >"$out/train.out" 2>&1 ||
  { show "$out/train.out"; exit 1; }

# ---- an export killed before its rename, then the next export
LD_PRELOAD=$FAULTS ZT_FAULT_KILL_AT_RENAME='*/model.safetensors' ZT_FAULT_LOG="$out/faults.log" \
  "$ZT" export "$out/ck" --out "$out/exp" >"$out/kill.out" 2>&1
rc=$?
left=$(ls -d "$out"/exp.tmp.* 2>/dev/null)
[ $rc -eq 137 ] && [ -n "$left" ] || { show "$out/kill.out"; die "the killed export (exit $rc) left no temporary: '$left'"; }
mkdir -p "$out/exp.tmp.1.other-host" "$out/exp.tmp.$$.$host"
touch "$out/exp.tmp.1.other-host/model.safetensors" "$out/exp.tmp.$$.$host/model.safetensors"
"$ZT" export "$out/ck" --out "$out/exp" >"$out/export2.out" 2>&1 || { show "$out/export2.out"; die "the next export failed"; }
if grep -q "removed $left, the temporary directory of an export of $out/exp that did not finish" "$out/export2.out" &&
   [ ! -e "$left" ] && [ -f "$out/exp/model.safetensors" ]; then
  echo "ok   killed export's temporary removed by the next export: $(grep removed "$out/export2.out")"
else
  show "$out/export2.out"; die "the killed export's $left was not removed and said"
fi
[ -d "$out/exp.tmp.1.other-host" ] && [ -d "$out/exp.tmp.$$.$host" ] &&
  echo "ok   another host's and a live process's temporaries kept" ||
  die "a temporary not provably dead was removed"
rm -rf "$out/exp.tmp.1.other-host" "$out/exp.tmp.$$.$host"

# ---- an export paused alive at its rename while a second export of the same directory runs
LD_PRELOAD=$FAULTS ZT_FAULT_PAUSE_AT_RENAME='*/model.safetensors' ZT_FAULT_CONTINUE="$out/go" \
  ZT_FAULT_LOG="$out/pause.log" "$ZT" export "$out/ck" --out "$out/exp" >"$out/paused.out" 2>&1 &
pid=$!
for _ in $(seq 200); do grep -q paused "$out/pause.log" 2>/dev/null && break; sleep 0.05; done
"$ZT" export "$out/ck" --out "$out/exp" >"$out/beside.out" 2>&1 || die "an export beside a live one failed"
[ -d "$out/exp.tmp.$pid.$host" ] && ! grep -q removed "$out/beside.out" &&
  echo "ok   a live export's temporary kept by an export beside it" ||
  { show "$out/beside.out"; die "the live export's temporary was removed"; }
touch "$out/go"
wait $pid || { show "$out/paused.out"; die "the paused export failed once continued"; }
[ -z "$(ls -d "$out"/exp.tmp.* 2>/dev/null)" ] || die "temporaries left: $(ls -d "$out"/exp.tmp.*)"

# ---- an export whose disk fills
LD_PRELOAD=$FAULTS ZT_FAULT_ENOSPC_AT_FSYNC='*/config.json.tmp.*' \
  "$ZT" export "$out/ck" --out "$out/full" >"$out/full.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && [ "$(grep -c 'No space left on device' "$out/full.out")" -eq 1 ] &&
   [ -z "$(ls -d "$out"/full* 2>/dev/null | grep -v 'full.out$')" ]; then
  echo "ok   export on a full disk: one error, nothing left: $(grep 'No space' "$out/full.out")"
else
  show "$out/full.out"; die "export on a full disk (exit $rc) left: $(ls -d "$out"/full*)"
fi

# ---- a save whose disk fills: a shard (2 ranks), the manifest (rank 0)
save_full() { # name glob launcher...
  local name=$1 glob=$2; shift 2
  LD_PRELOAD=$FAULTS ZT_FAULT_ENOSPC_AT_FSYNC=$glob "$@" "$ZT" "${RUN[@]}" --steps 3 \
    --ckpt-dir "$out/$name" --ckpt-every 1 >"$out/$name.out" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] && [ "$(grep -c 'zerotrain: error:.*No space left on device' "$out/$name.out")" -eq 1 ] &&
     [ ! -e "$out/$name/tmp-step-2" ] && [ "$(cat "$out/$name/latest")" = step-1 ] &&
     [ -f "$out/$name/step-1/manifest.json" ]; then
    echo "ok   $name: one error, tmp-step-2 removed, step-1 kept: $(grep 'error' "$out/$name.out")"
  else
    show "$out/$name.out"; die "$name (exit $rc): $(ls "$out/$name" | tr '\n' ' ')"
  fi
  "$ZT" "${RUN[@]}" --steps 3 --resume "$out/$name" --ckpt-dir "$out/$name" --ckpt-every 1 \
    >"$out/$name.resume.out" 2>&1 && [ "$(cat "$out/$name/latest")" = step-3 ] ||
    { show "$out/$name.resume.out"; die "$name: the resume from step-1 failed"; }
}
save_full save_shard_full '*/tmp-step-2/shard-*' "${MPI[@]}" -x LD_PRELOAD -x ZT_FAULT_ENOSPC_AT_FSYNC -np 2
save_full save_manifest_full '*/tmp-step-2/manifest.json' env

# ---- a save killed before its commit, then the next run in the directory
LD_PRELOAD=$FAULTS ZT_FAULT_KILL_AFTER_SHARDS=2 "$ZT" "${RUN[@]}" --steps 3 --ckpt-dir "$out/ckk" \
  --ckpt-every 1 >"$out/killsave.out" 2>&1
[ -d "$out/ckk/tmp-step-2" ] || { show "$out/killsave.out"; die "the killed save left no tmp-step-2"; }
"$ZT" "${RUN[@]}" --steps 4 --resume "$out/ckk" --ckpt-dir "$out/ckk" --ckpt-every 10 \
  >"$out/next.out" 2>&1 || { show "$out/next.out"; die "the next run failed"; }
if grep -q "checkpoint: removed $out/ckk/tmp-step-2, the save of a run that stopped before its commit" "$out/next.out" &&
   [ ! -e "$out/ckk/tmp-step-2" ]; then
  echo "ok   a killed save's tmp-step-2 removed by the next run: $(grep removed "$out/next.out")"
else
  show "$out/next.out"; die "tmp-step-2 was not removed and said: $(ls "$out/ckk" | tr '\n' ' ')"
fi
[ $fail -eq 0 ] && echo "tmp_cleanup: all cases passed"
exit $fail
