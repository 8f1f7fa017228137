#!/usr/bin/env bash
# Inputs read leniently or without bound (issue 38, items 5, 7 and 8), each refused with one
# error naming the file and the reason: a safetensors header length 4 bytes short (every
# tensor loaded one float early), trailing bytes after the tensors; a config.json whose
# scale_attn_weights, scale_attn_by_inverse_layer_idx, add_cross_attention, model_type or
# n_inner say another model than zerotrain computes (transformers' logits differ); a
# one-dimensional shape error printed as [640] for 64; a --config that is /dev/zero (read
# until out of memory), a FIFO no one writes (hung), or holds 007 or a key with \u0000 (taken
# as 7 and as the key's prefix); under mpirun a FIFO that one rank reads and the other not.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/cli_errors.sh" || exit 1   # cds to the repo root; defines the helpers
export OMP_NUM_THREADS=1
RUN=(--steps 1 --micro-batch 2 --seq 16 --val-every 0)
SMALL=(--n-layer 1 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 16)

mk_tokens "$tmp/good.bin" 4096 256
"$ZT" "${RUN[@]}" --n-layer 2 --n-head 2 --n-embd 32 --data "$tmp/good.bin" --save "$tmp/m" \
  >"$tmp/m.out" 2>&1 || { show "$tmp/m.out"; exit 1; }
expect_ok good_init_from '^step +1/1 \| loss' -- "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/m"

# model.safetensors edited by Python: its header length 4 short, or 4 bytes appended
st_edit() { # case dir
  mkdir -p "$tmp/$2" && cp "$tmp/m/config.json" "$tmp/$2/" && "$PY" - "$tmp/m/model.safetensors" \
    "$tmp/$2/model.safetensors" "$1" <<'PYEOF'
import struct, sys
src, dst, case = sys.argv[1:]
b = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
if case == "short":  # the JSON still parses if its last 4 bytes are padding: make them so
    hdr = b[8:8 + n].rstrip(b" ") + b" " * 8
    hdr += b" " * ((-(8 + len(hdr))) % 8)
    b = struct.pack("<Q", len(hdr) - 4) + hdr + b[8 + n:]
elif case == "trailing":
    b += b"\0\0\0\0"
open(dst, "wb").write(b)
PYEOF
}
st_edit short st_short; st_edit trailing st_trailing
expect_error st_header_4_short "re:$tmp/st_short/model.safetensors is corrupt:.*belong to no tensor" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/st_short"
expect_error st_trailing_bytes "re:$tmp/st_trailing/model.safetensors is corrupt:.*4 bytes after them" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/st_trailing"

# config.json keys that change the model
cfg_edit() { # name key json-value
  mkdir -p "$tmp/$1" && cp "$tmp/m/model.safetensors" "$tmp/$1/" &&
    "$PY" -c 'import json,sys; c=json.load(open(sys.argv[1])); c[sys.argv[3]]=json.loads(sys.argv[4]); json.dump(c,open(sys.argv[2],"w"))' \
      "$tmp/m/config.json" "$tmp/$1/config.json" "$2" "$3"
}
cfg_edit cfg_noscale scale_attn_weights false
cfg_edit cfg_layeridx scale_attn_by_inverse_layer_idx true
cfg_edit cfg_cross add_cross_attention true
cfg_edit cfg_type model_type '"gpt_neo"'
cfg_edit cfg_inner n_inner 100
cfg_edit cfg_act activation_function '"relu"'
cfg_edit cfg_upcast reorder_and_upcast_attn true   # float32 scores: zerotrain's math
cfg_edit cfg_inner_null n_inner null
expect_error hf_scale_attn_weights_false "re:cfg_noscale/config.json: scale_attn_weights is false" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_noscale"
expect_error hf_scale_by_layer_idx "re:cfg_layeridx/config.json: scale_attn_by_inverse_layer_idx is true" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_layeridx"
expect_error hf_cross_attention "re:cfg_cross/config.json: add_cross_attention is true" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_cross"
expect_error hf_model_type "re:cfg_type/config.json: model_type is gpt_neo" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_type"
expect_error hf_n_inner "re:cfg_inner/config.json: n_inner is 100" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_inner"
expect_error hf_activation "re:cfg_act/config.json: activation_function is relu" -- \
  "$ZT" generate --init-from "$tmp/cfg_act" --prompt-ids 1 --max-new 2 --ids
expect_ok hf_upcast_same_math '^step +1/1 \| loss' -- "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_upcast"
expect_ok hf_n_inner_null '^step +1/1 \| loss' -- "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_inner_null"

# a 1-D tensor's shape in the error: [64], not [640] (ln_f.weight of another width)
"$ZT" "${RUN[@]}" --n-layer 2 --n-head 2 --n-embd 64 --data "$tmp/good.bin" --save "$tmp/m64" \
  >"$tmp/m64.out" 2>&1 || show "$tmp/m64.out"
mkdir -p "$tmp/mixed" && cp "$tmp/m/config.json" "$tmp/mixed/" && "$PY" - "$tmp/m/model.safetensors" \
  "$tmp/m64/model.safetensors" "$tmp/mixed/model.safetensors" <<'PYEOF'
import json, struct, sys
def read(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]
h32, d32 = read(sys.argv[1]); h64, d64 = read(sys.argv[2])
out, data = {}, b""
for k, v in h32.items():
    if k == "__metadata__": out[k] = v; continue
    src = (h64, d64) if k.endswith("ln_f.weight") else (h32, d32)
    e = src[0][k]; raw = src[1][e["data_offsets"][0]:e["data_offsets"][1]]
    out[k] = {"dtype": e["dtype"], "shape": e["shape"], "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
hdr = json.dumps(out).encode(); hdr += b" " * ((-(8 + len(hdr))) % 8)
open(sys.argv[3], "wb").write(struct.pack("<Q", len(hdr)) + hdr + data)
PYEOF
expect_error hf_shape_1d "re:tensor ln_f.weight has shape \[64\], expected \[32\]" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/mixed"

# --config: not a file, never written, too large, lenient JSON
mkfifo "$tmp/fifo"
printf '{"steps": 007}' >"$tmp/c007.json"
printf '{"steps\\u0000x": 1}' >"$tmp/cnul.json"
head -c 2000000 /dev/zero | tr '\0' ' ' >"$tmp/cbig.json"
expect_error config_dev_zero "re:cannot read config file /dev/zero: it is not a regular file" -- "$ZT" --config /dev/zero
expect_error config_fifo_no_writer "re:config file $tmp/fifo is a pipe that gave nothing" -- "$ZT" --config "$tmp/fifo"
expect_error config_too_large "re:config file $tmp/cbig.json is larger than" -- "$ZT" --config "$tmp/cbig.json"
expect_error config_leading_zero "re:$tmp/c007.json is not valid JSON: a number with a leading zero.* at line 1, column 11" -- \
  "$ZT" --config "$tmp/c007.json"
expect_error config_nul_key 're:cnul.json is not valid JSON: a \\u0000 escape' -- "$ZT" --config "$tmp/cnul.json"
# a pipe still works (process substitution), and a FIFO whose writer comes
expect_ok config_pipe '^step +1/1 \| loss' -- bash -c "\"$ZT\" --config <(echo '{\"steps\": 1}') ${RUN[*]} ${SMALL[*]} --data $tmp/good.bin"
expect_ok config_fifo_writer '^step +1/1 \| loss' -- bash -c "(sleep 1; echo '{\"steps\": 1}' >$tmp/fifo) & \"$ZT\" --config $tmp/fifo ${RUN[*]} ${SMALL[*]} --data $tmp/good.bin"
if command -v mpirun >/dev/null; then
  # one writer, two readers: one rank gets the text, the other none; every rank stops, one
  # message
  expect_error config_fifo_mpi "re:(\(rank 1\) )?config file $tmp/fifo (is empty|is a pipe that gave nothing)" -- bash -c \
    "(echo '{\"steps\": 1}' >$tmp/fifo) & mpirun --oversubscribe --allow-run-as-root -np 2 \"$ZT\" --config $tmp/fifo ${RUN[*]} ${SMALL[*]} --data $tmp/good.bin < /dev/null"
  expect_error config_dev_zero_mpi "re:cannot read config file /dev/zero: it is not a regular file" -- \
    mpirun --oversubscribe --allow-run-as-root -np 2 "$ZT" --config /dev/zero
fi

# late or wrong messages (item 8): a --save or export --out name whose temporary sibling
# passes 255 bytes, refused before training (was: after it); the same for prepare's --out
long=$(printf 'n%.0s' $(seq 245))
expect_error save_name_too_long "re:--save directory|$long: the name is too long for its temporary sibling" -- \
  "$ZT" "${RUN[@]}" "${SMALL[@]}" --data "$tmp/good.bin" --save "$tmp/$long"
[ -e "$tmp/$long" ] && { echo "FAIL save_name_too_long: it was created"; failed+=("long --save created"); }
expect_error export_name_too_long "the name is too long for its temporary sibling" -- \
  "$ZT" export "$tmp/m" --out "$tmp/$long"
expect_error prepare_name_too_long "the name is too long for its temporary sibling" -- \
  "$ZT" prepare --text "$tmp/c007.json" --out "$tmp/$long"
# a path that is not UTF-8 stays valid JSON in the log (\udcXX: Python's surrogateescape)
bad=$(printf "$tmp/d\xff\xfe.bin"); cp "$tmp/good.bin" "$bad"
"$ZT" "${RUN[@]}" "${SMALL[@]}" --data "$bad" --log "$tmp/utf8.jsonl" >"$tmp/utf8.out" 2>&1 || show "$tmp/utf8.out"
if "$PY" -c 'import json, os, sys
for line in open(sys.argv[1], encoding="utf-8"): json.loads(line)
first = json.loads(open(sys.argv[1], encoding="utf-8").readline())
found = [v for v in json.dumps(first) and [first.get("config", {}).get("data", "")] if v]
assert found and os.fsencode(found[0]) == os.fsencode(sys.argv[2]), found' "$tmp/utf8.jsonl" "$bad" 2>"$tmp/utf8.err"; then
  echo "ok   log_non_utf8_path: every line valid JSON, the path's bytes recovered"
else echo "FAIL log_non_utf8_path"; show "$tmp/utf8.err"; failed+=("log_non_utf8_path"); fi
# one error prefix for every command
for c in "prepare --bogus x" "launch" "export $tmp/m --out $tmp/x --dtype fp64" "eval --bogus" \
         "generate --bogus" "memory --bogus" "train --bogus" "frobnicate"; do
  $ZT $c >/dev/null 2>"$tmp/prefix.err"
  if [ $? -ne 0 ] && [ "$(head -c 18 "$tmp/prefix.err")" = "zerotrain: error: " ]; then
    echo "ok   prefix ${c%% *}: $(head -1 "$tmp/prefix.err")"
  else echo "FAIL prefix ${c%% *}: $(head -1 "$tmp/prefix.err")"; failed+=("prefix ${c%% *}"); fi
done

report_and_exit strict_inputs
