#!/usr/bin/env bash
# Kill campaign (issue 27): a 2-rank ZeRO-1 run of a tiny model, a checkpoint after every step
# (--ckpt-keep 3), is killed with SIGKILL again and again at random moments, each time resumed
# in its own directory (`--resume ck --ckpt-dir ck`) until one run reaches the last step.
# Every run's losses must equal the uninterrupted run's bit for bit (tests/ckpt/compare_losses.py),
# and the last checkpoint must export the same model.safetensors, byte for byte. The kills:
#   time     kill -9 of rank 0, rank 1 or mpirun, 0-250 ms after the run's first logged step
#            (in a step or in a save: a save follows every step)
#   latest   rank 0 killed right before its n-th rename of latest.tmp to latest: after the
#            commit of step-N, before `latest` names it (build/libzt_faults.so)
#   commit   rank 0 killed right before its n-th rename of tmp-step-N to step-N
#   shard    rank 0 or 1 killed right after the fsync of its n-th shard file
#   prune    rank 0 killed before its n-th unlink in --ckpt-keep's pruning (a retired-step-N
#            half emptied: the next run removes it, and says so)
# A run killed after the commit of step-24 (at `latest`, in pruning) is rerun as a user would,
# unkilled: it says the run is complete, trains nothing, exits 0 and finishes the directory.
# At the end the checkpoint directory holds only latest, lock and complete step-N: every
# leftover of a kill (tmp-step-N, retired-step-N, a manifest-less step-N, latest.tmp) was
# removed by a later run (the lines saying so are counted). Then `prepare` is killed the same
# way (at a random moment, before its first rename, between its two renames): a train file
# whose validation file was not yet replaced is refused by training, the next prepare removes
# the dead one's temporaries and completes the pair, and nothing else is left.
# The randomness is seeded: ZT_KILL_SEED=S repeats a campaign (the seed is printed first);
# ZT_KILL_ROUNDS (default 8) bounds the kills. Rank processes are found by this campaign's
# own --log paths, never by a broad pattern.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ZT=$PWD/build/zerotrain
FAULTS=$PWD/build/libzt_faults.so
PY=${PYTHON:-/usr/bin/python3}
[ -x "$ZT" ] && [ -f "$FAULTS" ] || { echo "kill_campaign: build first (make -j2 all)"; exit 1; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
seed=${ZT_KILL_SEED:-$(( $(date +%s%N) % 32768 ))}
rounds=${ZT_KILL_ROUNDS:-8}
echo "kill_campaign: seed $seed (ZT_KILL_SEED=$seed repeats this campaign), up to $rounds kills"
RANDOM=$seed
out=$(mktemp -d "${TMPDIR:-/tmp}/zt_kill_campaign.XXXXXX")
ranks_of() { # log path: this run's rank processes (by executable: "exe" after a BLAS re-exec)
  local p
  for p in $(pgrep -f -- "--log $1"); do
    [ "$(basename "$(readlink /proc/$p/exe 2>/dev/null)")" = zerotrain ] && echo "$p"
  done
}
cleanup() {
  local l p
  for l in "$out"/*.jsonl; do for p in $(ranks_of "$l"); do kill -9 "$p"; done; done 2>/dev/null
  rm -rf "$out"
}
trap cleanup EXIT
export OMP_NUM_THREADS=1
MPI=(mpirun --oversubscribe -np 2 -x OMP_NUM_THREADS)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
STEPS=24
"$PY" -c "
import struct, random
random.seed(11); n = 6*4*16 + 1
hdr = [20240520, 1, n] + [0]*253
open('$out/tok.bin','wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % n, *[random.randrange(256) for _ in range(n)]))"
ARGS=(--n-layer 2 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --lr 1e-3 --warmup 2
      --val-every 0 --seed 7 --data "$out/tok.bin" --zero 1 --micro-batch 2 --steps $STEPS)
fail=0
die() { echo "FAIL: $*"; fail=1; }

"${MPI[@]}" "$ZT" "${ARGS[@]}" --ckpt-dir "$out/ref" --log "$out/full.jsonl" >"$out/full.out" 2>&1 ||
  { cat "$out/full.out"; echo "FAIL: the uninterrupted run failed"; exit 1; }

t0=$(date +%s)
done_run=0
for i in $(seq 0 "$rounds"); do
  log=$out/run_$i.jsonl
  resume=()
  ls "$out"/ck/step-*/manifest.json >/dev/null 2>&1 && resume=(--resume "$out/ck")
  # a run killed after the commit of its last save (at `latest`, in pruning): the same command
  # rerun, unkilled, must say the run is complete, train nothing, exit 0 and finish the
  # directory (the leftover check below)
  final=0
  [ -f "$out/ck/step-$STEPS/manifest.json" ] && final=1
  env=() mode=none
  [ $final -eq 1 ] && mode="rerun after step-$STEPS was committed"
  if [ "$i" -lt "$rounds" ] && [ $final -eq 0 ]; then
    case $((RANDOM % 5)) in
      0) mode=time ;;
      1) mode="latest"; env=(ZT_FAULT_KILL_AT_RENAME='*/latest' ZT_FAULT_RENAME_NTH=$((1 + RANDOM % 4)) ZT_FAULT_KILL_RANK=0) ;;
      2) mode="commit"; env=(ZT_FAULT_KILL_AT_RENAME='*/step-*' ZT_FAULT_RENAME_NTH=$((1 + RANDOM % 4)) ZT_FAULT_KILL_RANK=0) ;;
      3) mode="shard"; env=(ZT_FAULT_KILL_AFTER_SHARDS=$((1 + RANDOM % 4)) ZT_FAULT_KILL_RANK=$((RANDOM % 2))) ;;
      4) mode="prune"; env=(ZT_FAULT_KILL_AT_UNLINK='*/retired-step-*/*' ZT_FAULT_UNLINK_NTH=$((1 + RANDOM % 3)) ZT_FAULT_KILL_RANK=0) ;;
    esac
  fi
  xs=()
  for e in "${env[@]}"; do xs+=(-x "${e%%=*}"); done
  [ ${#env[@]} -gt 0 ] && xs+=(-x LD_PRELOAD) && env+=(LD_PRELOAD="$FAULTS")
  env "${env[@]}" timeout -k 5 60 "${MPI[@]}" "${xs[@]}" "$ZT" "${ARGS[@]}" "${resume[@]}" \
    --ckpt-dir "$out/ck" --ckpt-every 1 --ckpt-keep 3 --log "$log" >"$out/run_$i.out" 2>&1 &
  job=$!
  what="$mode${env[*]:+ ${env[*]}}"
  if [ "$mode" = time ]; then
    for _ in $(seq 400); do grep -q '"loss"' "$log" 2>/dev/null && break; kill -0 $job 2>/dev/null || break; sleep 0.02; done
    ms=$((RANDOM % 250))
    sleep "$(printf '0.%03d' $ms)"
    pids=($(ranks_of "$log"))
    case $((RANDOM % 3)) in
      0) target=mpirun; kill -9 $(pgrep -P $job) 2>/dev/null ;; # ($job is `timeout`)
      *) k=$((RANDOM % 2)); target="rank pid ${pids[$k]:-none}"; [ -n "${pids[$k]:-}" ] && kill -9 "${pids[$k]}" ;;
    esac
    what="time: kill -9 of $target ${ms} ms after the first step"
  fi
  wait $job; rc=$?
  for _ in $(seq 100); do [ -z "$(ranks_of "$log")" ] && break; sleep 0.05; done
  for p in $(ranks_of "$log"); do kill -9 "$p"; die "round $i: rank $p outlived its job"; done
  first=$(grep -m1 -o '"step":[0-9]*,"loss"' "$log" 2>/dev/null | grep -o '[0-9]*')
  last=$(grep -o '"step":[0-9]*,"loss"' "$log" 2>/dev/null | tail -1 | grep -o '[0-9]*')
  echo "round $i ($what): exit $rc, steps ${first:-none}..${last:-none}${resume:+, resumed}; ck: $(ls "$out/ck" 2>/dev/null | tr '\n' ' ')"
  if [ -n "$first" ]; then
    "$PY" tests/ckpt/compare_losses.py "$out/full.jsonl" "$log" >"$out/cmp_$i.txt" ||
      { cat "$out/cmp_$i.txt" | tail -3; die "round $i: losses differ from the uninterrupted run"; }
  fi
  if [ $final -eq 1 ]; then
    grep -q '^complete: ' "$out/run_$i.out" && [ -z "$first" ] && [ $rc -eq 0 ] ||
      { tail -3 "$out/run_$i.out"; die "round $i: the rerun of the complete run failed"; }
    echo "round $i: $(grep '^complete: ' "$out/run_$i.out" | head -1)"
  fi
  if [ $rc -eq 0 ]; then done_run=1; break; fi
  grep -q "zerotrain: error:.*\(corrupt\|truncated\|checksum\|in use by another run\|newer than\)" "$out/run_$i.out" &&
    { grep "zerotrain: error" "$out/run_$i.out" | head -3; die "round $i: the checkpoint directory was left inconsistent"; }
done
[ $done_run -eq 1 ] || die "no run reached step $STEPS"
removed=$(cat "$out"/run_*.out | grep -c '^checkpoint: removed ')
left=$(cd "$out/ck" && for d in *; do
  case $d in latest|lock) ;; step-*) [ -f "$d/manifest.json" ] || echo "$d" ;; *) echo "$d" ;; esac; done)
[ -z "$left" ] && echo "nothing left behind in ck ($removed leftovers of kills removed by later runs, each said)" ||
  die "left behind in ck: $left"
"$ZT" export "$out/ref" --out "$out/ref_model" >/dev/null 2>&1 &&
  "$ZT" export "$out/ck" --out "$out/ck_model" >/dev/null 2>&1 &&
  cmp -s "$out/ref_model/model.safetensors" "$out/ck_model/model.safetensors" &&
  echo "the last checkpoint exports the uninterrupted run's model byte for byte" ||
  die "the campaign's last checkpoint differs from the uninterrupted run's"
# prepare killed: at a random moment, before its first rename, or between its two renames
"$PY" -c "
import random; random.seed($seed)
w = ['alpha', 'beta', 'gamma', 'the', 'of', 'and', 'zero']
open('$out/text.txt', 'w').write(' '.join(random.choice(w) for _ in range(400000)))"
P=("$ZT" prepare --text "$out/text.txt" --out "$out/p/t.bin" --val-out "$out/p/v.bin" --val-frac 0.1)
mkdir -p "$out/p"
"${P[@]}" > "$out/prep_first.out" 2>&1 || { cat "$out/prep_first.out"; die "prepare failed"; }
TR=(--n-layer 1 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 16 --seq 16 --micro-batch 2 --steps 1 --val-every 1)
for i in 1 2 3 4; do
  case $((RANDOM % 3)) in
    0) pmode="time"; penv=() ;;
    1) pmode="first rename"; penv=(LD_PRELOAD="$FAULTS" ZT_FAULT_KILL_AT_RENAME='*/p/t.bin') ;;
    2) pmode="between renames"; penv=(LD_PRELOAD="$FAULTS" ZT_FAULT_KILL_AT_RENAME='*/p/v.bin') ;;
  esac
  env "${penv[@]}" "${P[@]}" > "$out/prep_$i.out" 2>&1 &
  pj=$!
  [ "$pmode" = time ] && { sleep "$(printf '0.%03d' $((RANDOM % 200)))"; kill -9 $pj 2>/dev/null; }
  wait $pj 2>/dev/null; prc=$?
  if [ -e "$out/p/t.bin.unpaired" ]; then
    "$ZT" "${TR[@]}" --data "$out/p/t.bin" --val-data "$out/p/v.bin" > "$out/prep_train_$i.out" 2>&1 &&
      die "prepare round $i ($pmode): training used a half-replaced pair"
  fi
  echo "prepare round $i ($pmode): exit $prc; left: $(ls "$out/p" | tr '\n' ' ')"
done
"${P[@]}" > "$out/prep_last.out" 2>&1 || { cat "$out/prep_last.out"; die "the last prepare failed"; }
grep '^zerotrain: removed' "$out/prep_last.out"
[ "$(ls "$out/p" | tr '\n' ' ')" = "t.bin v.bin " ] || die "prepare left: $(ls "$out/p")"
"$ZT" "${TR[@]}" --data "$out/p/t.bin" --val-data "$out/p/v.bin" > "$out/prep_train.out" 2>&1 ||
  { tail -3 "$out/prep_train.out"; die "training on the completed pair failed"; }
echo "kill_campaign: $(( $(date +%s) - t0 )) s, seed $seed"
[ $fail -eq 0 ] && echo "kill_campaign: all rounds bit-identical"
exit $fail
