#!/usr/bin/env bash
# --overlap-comm on against off (src/parallel/grad_reduce.h): the same seed, data and layout
# trained for 6 steps, once with the blocking dp reduction after the backward and once with
# the gradient reduced in buckets during the step's last backward (--bucket-mib 0: a bucket
# at every half block, the most buckets and the most ZeRO-1 pieces; one case with the
# default size, where this small model's whole gradient waits for the end).
#
# dp 2: a sum of two values is the same whichever rank adds it (fp32 and bf16 addition are
# commutative), so overlap changes no bit: losses, norms and the saved weights must be
# identical (ZeRO 0 and 1, pp 2 x dp 2 with both schedules, tp 2 x dp 2, bf16, 8-bit AdamW,
# and the ZT_COMM_TIMEOUT_S polling mode). dp 3: the blocking path sums three contributions
# in the staging window's order (own, r+1, r+2) and MPI's reduce in its own, so a gradient
# element may differ by reassociation (|d| <= 2 * 2^-24 * sum of |contributions| in fp32,
# one bf16 rounding per pairwise add in bf16): compared by tests/compare_models.py's bounds
# for a reassociated dp sum, exactly as the dp layouts are against one rank. Every run also
# passes the end-of-run check that each rank of a stage issued the same collectives.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_overlap; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root -x ZT_COMM_TIMEOUT_S"
PY=${PYTHON:-/usr/bin/python3}
common="--n-layer 3 --n-head 4 --n-embd 48 --vocab 256 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 0 --seed 7"
run() { # name np overlap args...
  local name=$1 np=$2 ov=$3; shift 3
  $MPI -np $np $ZT_TRAIN $common --overlap-comm $ov "$@" --log $out/$name.jsonl \
      --save $out/$name > $out/$name.out 2>&1 || { cat $out/$name.out; exit 1; }
  grep -q "the same sequence on every rank of a stage" $out/$name.out ||
    { echo "FAIL $name: no collective-sequence check"; tail $out/$name.out; exit 1; }
}
# losses and norms of two logs, bit for bit (%.9g prints a float exactly)
same_log() {
  "$PY" - "$1" "$2" <<'PY'
import json, sys
def steps(p): return [(r["loss"], r["grad_norm"]) for r in map(json.loads, open(p)) if "loss" in r]
a, b = steps(sys.argv[1]), steps(sys.argv[2])
sys.exit(0 if a == b and len(a) == 6 else 1)
PY
}
fail=0
exact() { # name np args...: on and off identical
  local name=$1 np=$2; shift 2
  run ${name}_off $np off "$@"
  run ${name}_on $np on --bucket-mib 0 "$@"
  if cmp -s $out/${name}_off/model.safetensors $out/${name}_on/model.safetensors &&
     same_log $out/${name}_off.jsonl $out/${name}_on.jsonl; then
    echo "ok   $name: bit-identical ($(grep -o '"grad_comm_ms":[0-9.]*' $out/${name}_on.jsonl | tail -1))"
  else
    echo "FAIL $name: overlapped run differs from the blocking one"; fail=1
  fi
}
bounded() { # name np compare-args -- args...
  local name=$1 np=$2 cargs=(); shift 2
  while [ "$1" != "--" ]; do cargs+=("$1"); shift; done; shift
  run ${name}_off $np off "$@"
  run ${name}_on $np on --bucket-mib 0 "$@"
  if cmp -s $out/${name}_off/model.safetensors $out/${name}_on/model.safetensors; then
    echo "ok   $name: bit-identical"
  elif "$PY" tests/compare_models.py $out/${name}_off $out/${name}_on --steps 6 --lr 1e-3 \
      "${cargs[@]}" --log-a $out/${name}_off.jsonl --log-b $out/${name}_on.jsonl > $out/$name.cmp; then
    echo "ok   $name: within the reassociation bounds ($(tail -1 $out/$name.cmp))"
  else
    cat $out/$name.cmp; echo "FAIL $name"; fail=1
  fi
}
exact dp2z0 2 --micro-batch 3 --grad-accum 2 --zero 0
exact dp2z1 2 --micro-batch 3 --grad-accum 2 --zero 1
exact dp2z1_bf16 2 --micro-batch 3 --grad-accum 2 --zero 1 --param-dtype bf16
exact dp2z0_bf16 2 --micro-batch 3 --grad-accum 2 --zero 0 --param-dtype bf16
exact dp2z1_8bit 2 --micro-batch 3 --grad-accum 2 --zero 1 --optim adamw8bit --optim-min-8bit 256
exact pp2dp2z1 4 --pp 2 --micro-batch 2 --grad-accum 3 --zero 1
exact pp2dp2z0_gpipe 4 --pp 2 --micro-batch 2 --grad-accum 3 --zero 0 --schedule gpipe
exact tp2dp2z1 4 --tp 2 --micro-batch 3 --grad-accum 2 --zero 1
exact tp2dp2z1_bf16 4 --tp 2 --micro-batch 3 --grad-accum 2 --zero 1 --param-dtype bf16
# the default bucket size: nothing starts before the backward ends (one bucket, or one
# piece per shard), the same sums
run dflt_off 2 off --micro-batch 3 --grad-accum 2 --zero 1
run dflt_on 2 on --micro-batch 3 --grad-accum 2 --zero 1
cmp -s $out/dflt_off/model.safetensors $out/dflt_on/model.safetensors && echo "ok   default bucket size: bit-identical" ||
  { echo "FAIL default bucket size"; fail=1; }
# ZT_COMM_TIMEOUT_S: every wait polled (wait_timed), the blocking path's calls nonblocking too
ZT_COMM_TIMEOUT_S=60 exact dp2z1_timeout 2 --micro-batch 3 --grad-accum 2 --zero 1
bounded dp3z0 3 -- --micro-batch 2 --grad-accum 2 --zero 0
bounded dp3z1 3 -- --micro-batch 2 --grad-accum 2 --zero 1
bounded dp3z1_bf16 3 --bf16 -- --micro-batch 2 --grad-accum 2 --zero 1 --param-dtype bf16
bounded dp3z1_8bit 3 --param-frac 0.05 -- --micro-batch 2 --grad-accum 2 --zero 1 --optim adamw8bit --optim-min-8bit 256
# a bad option is refused by name
if build/zerotrain --overlap-comm maybe --steps 1 > $out/bad.out 2>&1; then
  echo "FAIL: --overlap-comm maybe accepted"; fail=1
else grep -q "overlap-comm" $out/bad.out && echo "ok   --overlap-comm maybe refused" || { cat $out/bad.out; fail=1; }; fi
[ $fail -eq 0 ] && echo "overlap: all cases passed"
exit $fail
