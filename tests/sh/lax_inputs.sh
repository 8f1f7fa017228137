#!/usr/bin/env bash
# Inputs a lax reader took without a word (issue 27, item 6), each refused now with one error
# naming the file and the key: safetensors with a key twice (the first won), tensors sharing
# bytes, a fractional shape, __metadata__ as an array, offsets past any file (a double cast
# out of range), shapes past 64 bits or past an int and a layer index past an int (they ended
# in messages about --vocab and --n-layer); a config.json with n_layer twice (zerotrain took
# the first, Python takes the last) or fewer layers than the file holds (the rest dropped);
# --save under a file (said "does not exist"). tests/ckpt/st_lax.py makes the files.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/cli_errors.sh" || exit 1   # cds to the repo root; defines the helpers
export OMP_NUM_THREADS=1
RUN=(--steps 1 --micro-batch 2 --seq 16 --val-every 0)

mk_tokens "$tmp/good.bin" 4096 256
"$ZT" "${RUN[@]}" --n-layer 4 --n-head 2 --n-embd 32 --data "$tmp/good.bin" --save "$tmp/m4" \
  >"$tmp/m4.out" 2>&1 || { show "$tmp/m4.out"; exit 1; }
ST=$tmp/m4/model.safetensors

# a model directory whose model.safetensors is made by st_lax.py CASE (config.json kept)
lax_dir() { # case
  mkdir -p "$tmp/$1" && cp "$tmp/m4/config.json" "$tmp/$1/" &&
    "$PY" tests/ckpt/st_lax.py "$ST" "$tmp/$1/model.safetensors" "$1"
}
# a lone safetensors file (no config.json beside it: the shape comes from the tensors)
lax_lone() { # case
  mkdir -p "$tmp/lone_$1" && "$PY" tests/ckpt/st_lax.py "$ST" "$tmp/lone_$1/m.safetensors" "$1"
}

# control: the unchanged export loads
expect_ok good_init_from '^step +1/1 \| loss' -- "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/m4"

for c in duplicate overlap fractional meta_array huge_offsets; do lax_dir $c; done
F=model.safetensors
expect_error st_duplicate_key "re:$tmp/duplicate/$F.*'h\.0\.ln_1\.weight' twice" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/duplicate"
expect_error st_overlapping_offsets "re:$tmp/overlap/$F.*'h\.0\.ln_1\.weight' and 'h\.1\.ln_1\.weight' share bytes" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/overlap"
expect_error st_fractional_shape "re:$tmp/fractional/$F.*'wte\.weight'.*256\.5.*not a whole number" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/fractional"
expect_error st_metadata_array "re:$tmp/meta_array/$F.*'__metadata__' is not an object" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/meta_array"
expect_error st_offsets_out_of_range "re:$tmp/huge_offsets/$F.*'empty'.*data_offsets.*8\.9e\+49" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/huge_offsets"

for c in huge_shape wide_shape layer_max; do lax_lone $c; done
expect_error st_shape_past_64_bits "re:$tmp/lone_huge_shape/m.safetensors.*'wte\.weight'.*\[1099511627776, 16777216\]" -- \
  "$ZT" "${RUN[@]}" --n-head 2 --data "$tmp/good.bin" --init-from "$tmp/lone_huge_shape/m.safetensors"
expect_error st_shape_past_int "re:$tmp/lone_wide_shape/m.safetensors.*'wte\.weight'.*2147483648" -- \
  "$ZT" "${RUN[@]}" --n-head 2 --data "$tmp/good.bin" --init-from "$tmp/lone_wide_shape/m.safetensors"
expect_error st_layer_index_past_int "re:$tmp/lone_layer_max/m.safetensors.*'h\.2147483647\.ln_1\.weight'" -- \
  "$ZT" "${RUN[@]}" --n-head 2 --data "$tmp/good.bin" --init-from "$tmp/lone_layer_max/m.safetensors"
grep -qE -- '--vocab|--n-layer|--n-embd' "$tmp"/st_shape_past_*.err "$tmp/st_layer_index_past_int.err" &&
  { echo "FAIL st_shapes: a message speaks of a flag never given"; failed+=("st_shapes flag"); }

# config.json: a key twice; fewer layers than the weights hold; more than they hold
mkdir -p "$tmp/cfg_dup" "$tmp/cfg_few" "$tmp/cfg_many"
cp "$ST" "$tmp/cfg_dup/"; cp "$ST" "$tmp/cfg_few/"; cp "$ST" "$tmp/cfg_many/"
sed 's/"n_layer": *4/"n_layer": 4, "n_layer": 3/' "$tmp/m4/config.json" >"$tmp/cfg_dup/config.json"
sed 's/"n_layer": *4/"n_layer": 3/' "$tmp/m4/config.json" >"$tmp/cfg_few/config.json"
sed 's/"n_layer": *4/"n_layer": 5/' "$tmp/m4/config.json" >"$tmp/cfg_many/config.json"
grep -q '"n_layer": 3' "$tmp/cfg_dup/config.json" || { echo "lax_inputs: config.json has no \"n_layer\": 4"; exit 1; }
expect_error config_duplicate_key "re:$tmp/cfg_dup/config.json.*n_layer.*twice" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_dup"
expect_error config_fewer_layers "re:$tmp/cfg_few/$F.*'h\.3\..*n_layer 3" -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_few"
expect_error config_more_layers "re:$tmp/cfg_many/$F.*h\.4\." -- \
  "$ZT" "${RUN[@]}" --data "$tmp/good.bin" --init-from "$tmp/cfg_many"
expect_error generate_config_fewer_layers "re:$tmp/cfg_few/$F.*'h\.3\..*n_layer 3" -- \
  "$ZT" generate --init-from "$tmp/cfg_few" --prompt-ids 1 --max-new 2 --ids

# --save under a file: the parent is a file, not missing
: >"$tmp/plainfile"
expect_error save_parent_is_file "re:--save directory $tmp/plainfile/sub.*parent $tmp/plainfile is not a directory" -- \
  "$ZT" "${RUN[@]}" --n-layer 1 --n-head 2 --n-embd 32 --data "$tmp/good.bin" --save "$tmp/plainfile/sub"
expect_error save_parent_missing "re:its parent $tmp/nodir does not exist" -- \
  "$ZT" "${RUN[@]}" --n-layer 1 --n-head 2 --n-embd 32 --data "$tmp/good.bin" --save "$tmp/nodir/sub"

report_and_exit lax_inputs
