#!/usr/bin/env bash
# 8-bit AdamW seed sweep (issue 41): for each seed, fp32 and bf16, the tests' tiny model
# (tests/sh/cuda_train.sh's run, 20 steps) on 1 rank against dp 2 and against
# --zero 1 --pp 2 --tp 2 (8 ranks, dp 2), each within tests/compare_models.py's derived 8-bit
# bounds (--adamw8bit); and the largest one-step move of any parameter of the single-rank
# run, in lr units (bench/adamw8bit_moves.py, from --ckpt-every 1 checkpoints).
#
#   bash bench/adamw8bit_sweep.sh             # seeds 1..50; prints one line per run, a summary
#   SEEDS="32 33" ZT=path/to/zerotrain OUT=dir bash bench/adamw8bit_sweep.sh
#   REUSE=1 ...                                # judge the runs already in OUT again, run nothing
#   LAYOUTS= ...                               # only the single-rank runs' moves (no comparison)
# ZT: the binary (default build/zerotrain; another build, e.g. one from before a change,
# must sit beside a data/ folder as build/ does). Exit status 1 when any comparison fails.
set -uo pipefail
cd "$(dirname "$0")/.."
ZT=${ZT:-build/zerotrain}
OUT=${OUT:-build/bench/adamw8bit_sweep}
SEEDS=${SEEDS:-$(seq 1 50)}
LAYOUTS=${LAYOUTS-dp2 3d}
PY=${PYTHON:-/usr/bin/python3}
MPI="mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1"
export OMP_NUM_THREADS=1
mkdir -p $OUT
common="--n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 33 --steps 20 --lr 1e-3
        --warmup 2 --val-every 10 --val-batches 1 --optim adamw8bit"
run() { # dir np extra...
  local d=$1 np=$2; shift 2
  [ "${REUSE:-0}" = 1 ] && return 0
  rm -rf $d; mkdir -p $d
  $MPI -np $np $ZT $common "$@" --save $d/model --log $d/log.jsonl > $d/out 2>&1 ||
      { tail -5 $d/out; return 1; }
}
fails=0; worst=0; worst_at=""
for seed in $SEEDS; do
  for dtype in fp32 bf16; do
    b=$OUT/s$seed-$dtype
    c="--seed $seed --param-dtype $dtype"
    run $b-one 1 $c --micro-batch 3 --grad-accum 2 --ckpt-dir $b-one/ck --ckpt-every 1 \
        --ckpt-keep 100 || { fails=$((fails + 1)); continue; }
    case " $LAYOUTS " in *" dp2 "*)
      run $b-dp2 2 $c --micro-batch 3 --grad-accum 1 || fails=$((fails + 1)) ;; esac
    case " $LAYOUTS " in *" 3d "*)
      run $b-3d 8 $c --micro-batch 3 --grad-accum 1 --zero 1 --pp 2 --tp 2 || fails=$((fails + 1)) ;; esac
    flag="--adamw8bit"; [ $dtype = bf16 ] && flag="--adamw8bit --bf16"
    line="seed $seed $dtype:"
    for l in $LAYOUTS; do
      r=$($PY tests/compare_models.py $b-one/model $b-$l/model --steps 20 --lr 1e-3 $flag \
          --log-a $b-one/log.jsonl --log-b $b-$l/log.jsonl 2>&1)
      ok=$?
      w=$(echo "$r" | sed -n 's/.*worst max|diff| \/ bound = \([0-9.]*\).*/\1/p')
      line="$line $l $w$([ $ok = 0 ] || echo ' FAIL')"
      [ $ok = 0 ] || { fails=$((fails + 1)); echo "$r" | grep MISMATCH | head -3; }
    done
    mv=$($PY bench/adamw8bit_moves.py $b-one/ck --lr 1e-3)
    echo "$line; $mv"
    x=$(echo "$mv" | awk '{print $2}')
    if awk "BEGIN{exit !($x > $worst)}"; then worst=$x; worst_at="seed $seed $dtype: $mv"; fi
  done
done
echo "summary: $(echo $SEEDS | wc -w) seeds x fp32, bf16; $fails failed comparisons or runs;"
echo "largest one-step move: $worst_at"
[ $fails = 0 ]
