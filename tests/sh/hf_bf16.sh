#!/usr/bin/env bash
# bf16 Hugging Face output. A tp 2 run (fp32 parameters) with --save-dtype bf16 and a
# checkpoint: its --save is BF16 in every tensor, config.json says bfloat16, and every value
# is the fp32 weight rounded to nearest even (the checkpoint's `export --dtype fp32`, F32, the
# default; tests/ckpt/bf16_rounded.py checks the bits); `export --dtype bf16` of the checkpoint
# gives the same bytes as the --save. A bf16 run (dp 2, ZeRO-1) saves bf16 by default, the
# same bytes as its checkpoint's bf16 export, and with --save-dtype fp32 its fp32 masters, the
# same bytes as the checkpoint's fp32 export. An fp32 run without --save-dtype writes F32 and
# "float32"; --init-from reads the bf16 directory back; a bad --save-dtype or --dtype is one
# line of error. Needs numpy for
# ${PYTHON:-/usr/bin/python3}; skips (77) without it. tests/sh/hf_bf16_transformers.sh loads
# the directory with transformers; test_hf_export.c checks ties by hand and the round trip.
set -euo pipefail
. tests/env.sh
PY=${PYTHON:-/usr/bin/python3}
if ! $PY -c "import numpy" 2>/dev/null; then
  echo "SKIP: numpy is not installed for $PY (apt install python3-numpy)"
  exit 77
fi
out=build/test_hf_bf16; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
ZT="build/zerotrain --n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 \
    --micro-batch 2 --val-every 0"
$MPI -np 2 $ZT --steps 3 --tp 2 --save $out/saved --save-dtype bf16 --ckpt-dir $out/ck \
    > $out/run.out 2>&1 || { cat $out/run.out; exit 1; }
build/zerotrain export $out/ck --out $out/e32 > $out/e32.out
build/zerotrain export $out/ck --out $out/e16 --dtype bf16 > $out/e16.out
fail=0
torch_dtype() { sed -n 's/.*"torch_dtype": "\([a-z0-9]*\)".*/\1/p' $1/config.json; }
[ "$(torch_dtype $out/saved)" = bfloat16 ] || { echo "FAIL saved: torch_dtype $(torch_dtype $out/saved)"; fail=1; }
[ "$(torch_dtype $out/e16)" = bfloat16 ] || { echo "FAIL e16: torch_dtype $(torch_dtype $out/e16)"; fail=1; }
[ "$(torch_dtype $out/e32)" = float32 ] || { echo "FAIL e32: torch_dtype $(torch_dtype $out/e32)"; fail=1; }
grep -q '(bf16)$' $out/e16.out && grep -q '(fp32)$' $out/e32.out || { echo "FAIL: export lines"; cat $out/e16.out $out/e32.out; fail=1; }
echo -n "saved vs the fp32 export: "
$PY tests/ckpt/bf16_rounded.py $out/e32/model.safetensors $out/saved/model.safetensors || fail=1
echo -n "export --dtype bf16 vs --dtype fp32: "
$PY tests/ckpt/bf16_rounded.py $out/e32/model.safetensors $out/e16/model.safetensors || fail=1
cmp $out/saved/model.safetensors $out/e16/model.safetensors ||
  { echo "FAIL: --save-dtype bf16 and export --dtype bf16 differ"; fail=1; }
# an fp32 run saves fp32 unless told otherwise
$ZT --steps 1 --save $out/f32 > $out/f32.out
$PY tests/ckpt/bf16_rounded.py --all F32 $out/f32/model.safetensors || fail=1
[ "$(torch_dtype $out/f32)" = float32 ] || { echo "FAIL f32: torch_dtype $(torch_dtype $out/f32)"; fail=1; }
grep -q "saved $out/f32/model.safetensors (fp32)" $out/f32.out || { echo "FAIL: save line"; tail -2 $out/f32.out; fail=1; }
# the bf16 directory starts a run (the values widened: test_hf_export.c checks them exactly)
build/zerotrain --init-from $out/saved --seq 32 --micro-batch 2 --val-every 0 --steps 1 \
    > $out/init.out 2>&1 || { echo "FAIL: --init-from the bf16 save"; tail -5 $out/init.out; fail=1; }
# a bf16 run (dp 2, ZeRO-1: each rank holds half the masters): its bf16 --save equals its
# checkpoint's export --dtype bf16, and its --save-dtype fp32 the export --dtype fp32 (the
# fp32 masters, gathered over dp), byte for byte
B16="--steps 3 --dp 2 --zero 1 --param-dtype bf16 --ckpt-dir $out/ck16"
$MPI -np 2 $ZT $B16 --save $out/b16 > $out/b16.out 2>&1 || { cat $out/b16.out; exit 1; }
build/zerotrain export $out/ck16 --out $out/b16e16 --dtype bf16 > /dev/null
build/zerotrain export $out/ck16 --out $out/b16e32 > /dev/null
cmp $out/b16/model.safetensors $out/b16e16/model.safetensors ||
  { echo "FAIL: a bf16 run's --save and its checkpoint's export --dtype bf16 differ"; fail=1; }
rm -rf $out/ck16
$MPI -np 2 $ZT $B16 --save $out/b16f32 --save-dtype fp32 > $out/b16f32.out 2>&1 ||
  { cat $out/b16f32.out; exit 1; }
cmp $out/b16f32/model.safetensors $out/b16e32/model.safetensors ||
  { echo "FAIL: a bf16 run's --save-dtype fp32 is not its checkpoint's fp32 masters"; fail=1; }
# a bad dtype: one line on stderr, naming the flag and its values
one_error() { # flag, command...
  local flag=$1; shift
  if "$@" > $out/bad.out 2> $out/bad.err; then echo "FAIL: $* exited 0"; fail=1; return; fi
  without_env_warnings $out/bad.err > $out/bad.lines || true
  [ "$(wc -l < $out/bad.lines)" = 1 ] && grep -q -- "$flag 'half' is not known: use one of fp32, bf16" $out/bad.lines ||
    { echo "FAIL: $*:"; cat $out/bad.err; fail=1; }
}
one_error --save-dtype $ZT --steps 1 --save $out/bad --save-dtype half
one_error --dtype build/zerotrain export $out/ck --out $out/bad --dtype half
[ ! -e $out/bad ] || { echo "FAIL: a refused command wrote $out/bad"; fail=1; }
exit $fail
