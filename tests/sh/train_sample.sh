#!/usr/bin/env bash
# --sample-every: the samples printed during training come from the model being trained.
# The last one (at the final step) must equal, token for token, what `zerotrain generate`
# draws from the --save export with the same prompt (the data's first token), seed and
# temperature; with --tp 2 (and dp 2), --pp 2 and --pp 3 with an embed-only and a head-only
# stage (x tp 2) the samples equal one rank's (each stage decodes its own layers). The
# memory check counts the sampler (its plan equals the allocation: planner_equals_allocation).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/test_train_sample; rm -rf $out; mkdir -p $out
PY=${PYTHON:-/usr/bin/python3}
ARGS=(--model tiny --seq 32 --micro-batch 2 --steps 6 --val-every 0 --sample-every 3
      --sample-len 24 --seed 11 --lr 3e-3)
export OMP_NUM_THREADS=1
build/zerotrain "${ARGS[@]}" --save $out/model > $out/one.out 2>&1 ||
  { cat $out/one.out; echo "FAIL: training with --sample-every"; exit 1; }
fail=0
# the first token of the default training data (llm.c header: 256 int32, then uint16 ids)
first=$($PY -c "import struct,sys; d=open(sys.argv[1],'rb').read(1026); print(struct.unpack('<H', d[1024:])[0])" build/data/default_train.bin)
# samples at steps 3 and 6 (the last step), nothing else
[ "$(grep -c '^sample (step ' $out/one.out)" = 2 ] && grep -q '^sample (step 3): ' $out/one.out &&
  grep -q '^sample (step 6): ' $out/one.out ||
  { echo "FAIL: expected samples at steps 3 and 6:"; grep sample $out/one.out; fail=1; }
# zt_token_print writes bytes for a byte-level model: compare the raw bytes
$PY - $out/one.out > $out/last.bin <<'PYEOF'
import sys
data = open(sys.argv[1], "rb").read()
tag = b"sample (step 6): "
at = data.index(tag) + len(tag)
sys.stdout.buffer.write(data[at:data.index(b"\ndone:", at)])
PYEOF
build/zerotrain generate --init-from $out/model --prompt-ids "$first" --max-new 24 --seed 11 \
  --temperature 1 > $out/gen.bin 2> $out/gen.err || { cat $out/gen.err; fail=1; }
head -c -1 $out/gen.bin > $out/gen_trim.bin # generate ends with a newline
if cmp -s $out/last.bin $out/gen_trim.bin; then
  echo "last sample = generate from the export ($(wc -c < $out/last.bin) bytes)"
else
  echo "FAIL: the last sample differs from generate's:"; od -c $out/last.bin | head -3
  od -c $out/gen_trim.bin | head -3; fail=1
fi
if command -v mpirun >/dev/null; then
  mpirun --oversubscribe --allow-run-as-root -np 4 -x OMP_NUM_THREADS build/zerotrain \
    "${ARGS[@]}" --tp 2 --zero 1 > $out/tp.out 2>&1 || { cat $out/tp.out; fail=1; }
  mpirun --oversubscribe --allow-run-as-root -np 1 -x OMP_NUM_THREADS build/zerotrain \
    "${ARGS[@]}" --micro-batch 4 > $out/one_b4.out 2>&1 || { cat $out/one_b4.out; fail=1; }
  # dp 2 x micro-batch 2 is the same global batch as one rank's micro-batch 4
  diff <(grep -a '^sample' $out/one_b4.out) <(grep -a '^sample' $out/tp.out) > $out/tp.diff &&
    echo "tp 2 x dp 2: the same samples as one rank" ||
    { echo "FAIL: tp 2 x dp 2 samples differ from one rank's:"; head $out/tp.diff; fail=1; }
  one=$(grep -a '^sample' $out/one.out)
  for l in "2:--pp 2" "6:--pp 3 --tp 2 --partition 0:1,1:5,5:6"; do
    mpirun --oversubscribe --allow-run-as-root -np ${l%%:*} -x OMP_NUM_THREADS build/zerotrain \
      "${ARGS[@]}" ${l#*:} > $out/pp.out 2>&1 || { cat $out/pp.out; fail=1; }
    if [ "$(grep -a '^sample' $out/pp.out)" = "$one" ]; then
      echo "${l#*:}: the same samples as one rank"
    else
      echo "FAIL: ${l#*:} samples differ from one rank's:"; grep -a '^sample' $out/pp.out; fail=1
    fi
  done
fi
exit $fail
