#!/usr/bin/env bash
# The safetensors reader under UBSan: every file of tests/ckpt/st_lax.py (refused) and a good
# export (read whole) go through it without undefined behaviour. The reader cast a JSON number
# to size_t before checking its range (data_offsets 8.9e49: undefined, then a nonsense offset).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$ZT" ] || { echo "safetensors_ubsan: $ZT is not built (make -j2 all)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_st_ubsan.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# the reader, its ground floor and a driver, nothing else (no MPI, no BLAS)
gcc -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=undefined,float-cast-overflow \
    -fno-sanitize-recover=all -Isrc/core -Isrc/formats tests/ubsan/st_open.c \
    src/formats/safetensors.c src/formats/json_keys.c src/core/common.c -lcjson -lxxhash \
    -o "$tmp/st_open" 2>"$tmp/cc.err" || { cat "$tmp/cc.err"; echo "SKIP: no UBSan build"; exit 77; }
OMP_NUM_THREADS=1 "$ZT" --steps 1 --micro-batch 2 --seq 16 --n-layer 2 --n-head 2 --n-embd 32 \
  --save "$tmp/m" >"$tmp/m.out" 2>&1 || { cat "$tmp/m.out"; exit 1; }
fail=0
out=$("$tmp/st_open" "$tmp/m/model.safetensors" 2>&1) ||
  { echo "FAIL good file: $out"; fail=1; }
for c in duplicate overlap fractional meta_array huge_offsets huge_shape wide_shape layer_max; do
  "$PY" tests/ckpt/st_lax.py "$tmp/m/model.safetensors" "$tmp/$c.st" $c || exit 1
  out=$("$tmp/st_open" "$tmp/$c.st" 2>&1); rc=$?
  if grep -q "runtime error" <<<"$out"; then echo "FAIL $c: undefined behaviour: $out"; fail=1
  else echo "ok   $c (exit $rc): $out"; fi
done
exit $fail
