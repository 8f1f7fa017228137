#!/usr/bin/env bash
# What an output may be, by identity (issue 38, item 1): an output reaching an input through a
# symbolic or hard link destroyed it (a --log linked to the shard being resumed truncated it
# before the resume verified anything; a --save or export --out linked to a checkpoint
# directory moved its steps, latest and lock into the export), and --log naming a file the
# run writes (ck/latest, sv/model.safetensors) was replaced by it. Every output (--log,
# --save, --ckpt-dir, export --out, prepare's --out and --val-out) is now checked before
# anything opens against every input (--data, --val-data, --config, every file of --init-from
# and --resume, export's checkpoint, --text, --vocab) and every file the run writes; each
# case is refused with one error naming both, and the input is unchanged afterwards.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/cli_errors.sh" || exit 1   # cds to the repo root; defines the helpers
export OMP_NUM_THREADS=1
T=(--n-layer 1 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 16 --micro-batch 2 --seq 16 --val-every 0)

mk_tokens "$tmp/good.bin" 4096 256
"$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 4 --ckpt-dir "$tmp/ck" --ckpt-every 2 --save "$tmp/sv" \
  >"$tmp/setup.out" 2>&1 || { show "$tmp/setup.out"; exit 1; }
echo '{"steps": 5}' >"$tmp/cfg.json"
shard=$(ls "$tmp"/ck/step-4/shard-*.safetensors | head -1)
cp -r "$tmp/ck" "$tmp/ck.keep"; cp -r "$tmp/sv" "$tmp/sv.keep"; cp "$tmp/good.bin" "$tmp/good.keep"
R=("$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 6 --resume "$tmp/ck")

# --log reaching an input through a link
ln -s "$shard" "$tmp/run.jsonl"
ln "$tmp/ck/step-4/manifest.json" "$tmp/hard.jsonl"
ln -s "$tmp/sv/model.safetensors" "$tmp/sv_link.jsonl"
ln -s "$tmp/good.bin" "$tmp/data_link.jsonl"; ln -s "$tmp/data_link.jsonl" "$tmp/chain.jsonl"
ln -s "$tmp/cfg.json" "$tmp/cfg_link.jsonl"
expect_error log_symlink_to_shard "re:--log $tmp/run.jsonl is step-4/shard-.* of --resume $tmp/ck \(by device" -- "${R[@]}" --log "$tmp/run.jsonl"
expect_error log_hardlink_to_manifest "--log $tmp/hard.jsonl is step-4/manifest.json of --resume $tmp/ck" -- "${R[@]}" --log "$tmp/hard.jsonl"
expect_error log_symlink_to_init_from "--log $tmp/sv_link.jsonl is model.safetensors of --init-from $tmp/sv" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 1 --init-from "$tmp/sv" --log "$tmp/sv_link.jsonl"
expect_error log_link_chain_to_data "--log $tmp/chain.jsonl is the same file as --data $tmp/good.bin" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 1 --log "$tmp/chain.jsonl"
# every shard of a --data list or glob is an input
mkdir -p "$tmp/shards" && cp "$tmp/good.bin" "$tmp/shards/s_1.bin" && cp "$tmp/good.bin" "$tmp/shards/s_2.bin"
expect_error log_onto_glob_shard "--log $tmp/shards/s_2.bin is the same file as --data $tmp/shards/s_2.bin" -- \
  "$ZT" "${T[@]}" --data "$tmp/shards/s_*.bin" --steps 1 --log "$tmp/shards/s_2.bin"
expect_error log_onto_list_shard "--log $tmp/shards/s_1.bin is the same file as --data $tmp/shards/s_1.bin" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin,$tmp/shards/s_1.bin" --steps 1 --log "$tmp/shards/s_1.bin"
# --trace is an output file as --log is, and not the log itself
expect_error trace_onto_data "--trace $tmp/shards/s_1.bin is the same file as --data" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin,$tmp/shards/s_1.bin" --steps 1 --trace "$tmp/shards/s_1.bin"
expect_error trace_is_log "--trace $tmp/both.jsonl is the --log file" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 1 --log "$tmp/both.jsonl" --trace "$tmp/both.jsonl"
expect_error log_symlink_to_config "--log $tmp/cfg_link.jsonl is the same file as --config $tmp/cfg.json" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin" --config "$tmp/cfg.json" --log "$tmp/cfg_link.jsonl"
ln -s "$tmp/ck/step-9/x.jsonl" "$tmp/dangling.jsonl"
expect_error log_dangling_link "--log $tmp/dangling.jsonl is a symbolic link to a file that does not exist" -- \
  "${R[@]}" --ckpt-dir "$tmp/ck" --log "$tmp/dangling.jsonl"
# --log naming a file the run itself writes
expect_error log_is_own_latest "--log $tmp/ck2/latest is a file the run writes in --ckpt-dir $tmp/ck2 (latest)" -- \
  bash -c "mkdir -p $tmp/ck2 && $(printf '%q ' "$ZT" "${T[@]}") --data $tmp/good.bin --steps 1 --ckpt-dir $tmp/ck2 --log $tmp/ck2/latest"
expect_error log_is_own_export "--log $tmp/sv/model.safetensors is model.safetensors of --save $tmp/sv" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 1 --save "$tmp/sv" --log "$tmp/sv/model.safetensors"
expect_error log_inside_save "--log $tmp/sv2/run.jsonl is inside the --save directory $tmp/sv2" -- \
  bash -c "mkdir -p $tmp/sv2 && $(printf '%q ' "$ZT" "${T[@]}") --data $tmp/good.bin --steps 1 --save $tmp/sv2 --log $tmp/sv2/run.jsonl"
expect_error log_in_own_step_dir "re:--log $tmp/ck/step-2/x.jsonl is a file the run writes in --ckpt-dir $tmp/ck" -- \
  "${R[@]}" --ckpt-dir "$tmp/ck" --log "$tmp/ck/step-2/x.jsonl"
# --save and export --out: a link, an input, or sharing a tree with checkpoints
ln -s "$tmp/ck" "$tmp/ck_link"
expect_error save_symlink_to_ckpt "$tmp/ck_link is a symbolic link: an export replaces its directory" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 1 --save "$tmp/ck_link"
expect_error export_symlink_to_ckpt "$tmp/ck_link is a symbolic link" -- "$ZT" export "$tmp/ck" --out "$tmp/ck_link"
expect_error save_is_ckpt_dir "--save $tmp/ck is the directory --resume $tmp/ck" -- \
  "${R[@]}" --ckpt-dir "$tmp/ck" --save "$tmp/ck"
expect_error save_inside_resume "--save $tmp/ck/model and --resume $tmp/ck are one inside the other" -- \
  "${R[@]}" --save "$tmp/ck/model"
expect_error save_is_init_from "--save $tmp/sv is the directory --init-from $tmp/sv" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 1 --init-from "$tmp/sv" --save "$tmp/sv"
ln "$tmp/sv/model.safetensors" "$tmp/lone.safetensors"
expect_error save_file_is_init_from "re:--save $tmp/sv holds $tmp/sv/model.safetensors, which is the same file as --init-from $tmp/lone.safetensors" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 1 --init-from "$tmp/lone.safetensors" --save "$tmp/sv"
expect_error export_out_is_ckpt "--out $tmp/ck is the directory the checkpoint $tmp/ck" -- "$ZT" export "$tmp/ck" --out "$tmp/ck"
expect_error export_out_is_step "--out $tmp/ck/step-4 is step-4 of the checkpoint $tmp/ck" -- "$ZT" export "$tmp/ck" --out "$tmp/ck/step-4"
expect_error export_out_contains_ckpt "--out $tmp and the checkpoint $tmp/ck/step-4 are one inside the other" -- "$ZT" export "$tmp/ck/step-4" --out "$tmp"
# --ckpt-dir whose files are inputs
expect_error ckpt_dir_data_is_shard "re:--ckpt-dir $tmp/ck: step-4/shard-.* of --ckpt-dir $tmp/ck is the same file as --data $tmp/ck/step-4/shard" -- \
  "$ZT" "${T[@]}" --data "$shard" --steps 1 --ckpt-dir "$tmp/ck"
expect_error save_is_ckpt_dir_new "--save $tmp/ck3 and --ckpt-dir $tmp/ck3 are the same directory" -- \
  "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 1 --ckpt-dir "$tmp/ck3" --save "$tmp/ck3"
expect_error ckpt_dir_is_step_dir "--ckpt-dir $tmp/ck/step-4 is a checkpoint's step directory" -- \
  "${R[@]}" --ckpt-dir "$tmp/ck/step-4"
# prepare's outputs through links
printf 'some text for prepare, some text for prepare\n' >"$tmp/t.txt"
ln -s "$tmp/t.txt" "$tmp/t_link.bin"
expect_error prepare_out_link_to_text "--out $tmp/t_link.bin is the same file as --text $tmp/t.txt" -- \
  "$ZT" prepare --text "$tmp/t.txt" --out "$tmp/t_link.bin"
# gpt2 without --vocab reads the default vocabulary ($XDG_CACHE_HOME/zerotrain/gpt2.tiktoken)
mkdir -p "$tmp/xdg/zerotrain"; cp "$tmp/t.txt" "$tmp/xdg/zerotrain/gpt2.tiktoken"
expect_error prepare_out_is_default_vocab "--out $tmp/xdg/zerotrain/gpt2.tiktoken is the same file as --vocab" -- \
  env XDG_CACHE_HOME="$tmp/xdg" "$ZT" prepare --tokenizer gpt2 --text "$tmp/t.txt" --out "$tmp/xdg/zerotrain/gpt2.tiktoken"

# every input unchanged (the refused runs opened nothing), and what stays allowed
diff -r -x lock "$tmp/ck" "$tmp/ck.keep" >/dev/null && diff -r "$tmp/sv" "$tmp/sv.keep" >/dev/null &&
  cmp -s "$tmp/good.bin" "$tmp/good.keep" && echo "ok   inputs_unchanged" ||
  { echo "FAIL inputs_unchanged"; failed+=("an input changed"); }
expect_ok log_beside_steps '^step +6/6' -- "${R[@]}" --ckpt-dir "$tmp/ck" --log "$tmp/ck/run.jsonl"
expect_ok log_beside_steps_again '^step +8/8' -- "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 8 --resume "$tmp/ck" --ckpt-dir "$tmp/ck" --log "$tmp/ck/run.jsonl"
expect_ok save_beside_ckpt '^step +6/6' -- "$ZT" "${T[@]}" --data "$tmp/good.bin" --steps 6 --resume "$tmp/ck.keep" --ckpt-dir "$tmp/ck.keep" --save "$tmp/sv3"

report_and_exit outputs_identity
