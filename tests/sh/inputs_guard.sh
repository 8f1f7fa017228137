#!/usr/bin/env bash
# Inputs that must never be lost, and inputs that must be refused with one clear error
# (found by a bad-input audit): outputs that would overwrite an input (prepare's --out and
# --val-out, export --out a file, a --log inside a checkpoint or model directory);
# checkpoints (a --ckpt-dir rolled back under newer checkpoints, --ckpt-keep that must
# delete only complete checkpoints and never the one just written, `latest` or
# manifest.json that are directories, a manifest with impossible values, a resume beyond
# --steps, --resume with --init-from); empty option values; weights that are
# not finite; a config.json asking for other math (activation, LayerNorm epsilon) or with
# values that are not whole numbers; one-process commands under a launcher; ranks launched
# with other options than rank 0. Helpers: cli_errors.sh.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/cli_errors.sh" || exit 1   # cds to the repo root; defines the helpers
export OMP_NUM_THREADS=1
T=(--n-layer 1 --n-head 2 --n-embd 32 --micro-batch 2 --seq 16 --val-every 0)
MPI=()
command -v mpirun >/dev/null && MPI=(mpirun --oversubscribe -x OMP_NUM_THREADS)
[ ${#MPI[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && MPI=("${MPI[0]}" --allow-run-as-root "${MPI[@]:1}")
unchanged() { # name file copy: the input is byte for byte what it was
  if cmp -s "$2" "$3"; then echo "ok   $1: $2 unchanged"
  else echo "FAIL $1: $2 changed"; failed+=("$1: input changed"); fi
}

# ---- prepare: an output never overwrites an input or the other output ----
cp /usr/share/common-licenses/GPL-3 "$tmp/t.txt"; cp "$tmp/t.txt" "$tmp/t.keep"
expect_error prepare_out_is_text "--out $tmp/t.txt is the same file as --text" -- "$ZT" prepare --text "$tmp/t.txt" --out "$tmp/t.txt"
expect_error prepare_val_out_is_text "--val-out $tmp/./t.txt is the same file as --text" -- "$ZT" prepare --text "$tmp/t.txt" --out "$tmp/o.bin" --val-out "$tmp/./t.txt"
unchanged prepare_text_kept "$tmp/t.txt" "$tmp/t.keep"
expect_error prepare_out_is_val_out "--out and --val-out name the same file" -- "$ZT" prepare --text "$tmp/t.txt" --out "$tmp/o.bin" --val-out "$tmp/./o.bin"
expect_error prepare_out_empty "--out is empty" -- "$ZT" prepare --text "$tmp/t.txt" --out ""

# ---- a checkpoint directory with step-2 and step-4 ----
"$ZT" "${T[@]}" --steps 4 --ckpt-dir "$tmp/ck" --ckpt-every 2 >"$tmp/ck.out" 2>&1 || { show "$tmp/ck.out"; exit 1; }
[ -f "$tmp/ck/step-4/manifest.json" ] && [ -f "$tmp/ck/step-2/manifest.json" ] || { echo "FAIL: no checkpoints"; exit 1; }
cp -r "$tmp/ck" "$tmp/ck.keep"

# rolled back to step 2 in the same directory: refused, nothing deleted (the unheld lock
# file aside: the refused run held it, ckpt_lock.c)
expect_error ckpt_dir_rollback "--ckpt-dir $tmp/ck holds step-4, newer than this run's start at step 2" -- "$ZT" "${T[@]}" --steps 3 --resume "$tmp/ck/step-2" --ckpt-dir "$tmp/ck" --ckpt-every 1 --ckpt-keep 1
if diff -r -x lock "$tmp/ck" "$tmp/ck.keep" >/dev/null; then echo "ok   ckpt_dir_rollback_kept: every checkpoint still there"
else echo "FAIL ckpt_dir_rollback_kept"; failed+=("rollback changed the checkpoint directory"); fi
# the same rollback into a fresh directory trains
expect_ok ckpt_rollback_elsewhere '^checkpoint .*step-3' -- "$ZT" "${T[@]}" --steps 3 --resume "$tmp/ck/step-2" --ckpt-dir "$tmp/ck_b" --ckpt-every 1 --ckpt-keep 1

# --ckpt-keep 1 deletes older checkpoints only: a user's step-0 directory without a manifest stays
mkdir -p "$tmp/ck2/step-0"; echo notes >"$tmp/ck2/step-0/notes.txt"
expect_ok ckpt_keep_runs '^checkpoint .*step-3' -- "$ZT" "${T[@]}" --steps 3 --ckpt-dir "$tmp/ck2" --ckpt-every 1 --ckpt-keep 1
if [ "$(ls "$tmp/ck2" | tr '\n' ' ')" = "latest lock step-0 step-3 " ] && [ -f "$tmp/ck2/step-0/notes.txt" ]; then
  echo "ok   ckpt_keep_only_checkpoints: step-1 and step-2 gone, step-0 (no manifest) kept"
else echo "FAIL ckpt_keep_only_checkpoints: $(ls "$tmp/ck2" | tr '\n' ' ')"; failed+=("ckpt-keep"); fi

# nothing left to train: beyond --steps refused, at --steps complete (docs/checkpoints.md);
# --resume with --init-from
expect_error resume_past_steps "the checkpoint is at step 4, beyond --steps 3" -- "$ZT" "${T[@]}" --steps 3 --resume "$tmp/ck"
expect_ok resume_at_steps "^complete: the checkpoint $tmp/ck is at step 4 and --steps is 4" -- "$ZT" "${T[@]}" --steps 4 --resume "$tmp/ck"
expect_error resume_and_init_from "or --init-from $tmp/ck/step-2 (weights only), not both" -- "$ZT" "${T[@]}" --steps 6 --resume "$tmp/ck" --init-from "$tmp/ck/step-2"

# `latest` a directory: said, and the newest complete checkpoint taken
cp -r "$tmp/ck" "$tmp/ckd"; rm "$tmp/ckd/latest"; mkdir "$tmp/ckd/latest"
"$ZT" "${T[@]}" --steps 5 --resume "$tmp/ckd" >"$tmp/ckd.out" 2>&1
if [ $? -eq 0 ] && grep -q "ignoring $tmp/ckd/latest: Is a directory" "$tmp/ckd.out" && grep -qE '^step +5/5' "$tmp/ckd.out"; then
  echo "ok   latest_is_directory: said, resumed from step-4"
else echo "FAIL latest_is_directory"; show "$tmp/ckd.out"; failed+=("latest a directory"); fi
# manifest.json a directory: no complete checkpoint (was an assertion)
cp -r "$tmp/ck" "$tmp/ckm"; rm "$tmp/ckm/step-4/manifest.json"; mkdir "$tmp/ckm/step-4/manifest.json"
expect_error manifest_is_directory "$tmp/ckm/step-4 holds no complete checkpoint" -- "$ZT" "${T[@]}" --steps 6 --resume "$tmp/ckm/step-4"
expect_error export_manifest_is_directory "$tmp/ckm/step-4 holds no complete checkpoint" -- "$ZT" export "$tmp/ckm/step-4" --out "$tmp/x"

# `latest` a FIFO: said, and the newest complete checkpoint taken (was a hang)
cp -r "$tmp/ck" "$tmp/ckf"; rm "$tmp/ckf/latest"; mkfifo "$tmp/ckf/latest"
expect_ok latest_is_fifo '^step +5/5' -- "$ZT" "${T[@]}" --steps 5 --resume "$tmp/ckf"
grep -q "ignoring $tmp/ckf/latest: not a regular file" "$tmp/latest_is_fifo.out" && echo "ok   latest_is_fifo_said" ||
  { echo "FAIL latest_is_fifo_said"; show "$tmp/latest_is_fifo.out"; failed+=("latest a FIFO: not said"); }
# a shard that is a FIFO (was a hang in the checksum pass)
cp -r "$tmp/ck" "$tmp/ckp"; f=$(ls "$tmp"/ckp/step-4/shard-*.safetensors | head -1); rm "$f"; mkfifo "$f"
expect_error shard_is_fifo "is not a regular file (a directory, a FIFO?)" -- "$ZT" "${T[@]}" --steps 6 --resume "$tmp/ckp"
# a shard that is a directory
cp -r "$tmp/ck" "$tmp/cks"; f=$(ls "$tmp"/cks/step-4/shard-*.safetensors | head -1); rm "$f"; mkdir "$f"
expect_error shard_is_directory "is not a regular file (a directory, a FIFO?)" -- "$ZT" "${T[@]}" --steps 6 --resume "$tmp/cks"
expect_error optim_min_8bit_negative "--optim-min-8bit must be at least 0" -- "$ZT" "${T[@]}" --steps 1 --optim adamw8bit --optim-min-8bit -1

# a manifest edited to impossible values, and resealed (tests/ckpt/reseal.py) so that the
# checks behind its checksum see the values (tests/sh/ckpt_manifest.sh: the seal itself)
edit() { # name sed-expression want
  rm -rf "$tmp/cke"; cp -r "$tmp/ck" "$tmp/cke"; sed -i "$2" "$tmp/cke/step-4/manifest.json"
  "$PY" tests/ckpt/reseal.py "$tmp/cke/step-4"
  cmp -s "$tmp/cke/step-4/manifest.json" "$tmp/ck/step-4/manifest.json" && { echo "FAIL $1: the edit did not apply"; failed+=("$1: edit"); return; }
  expect_error "$1" "$3" -- "$ZT" "${T[@]}" --steps 6 --resume "$tmp/cke"
}
edit manifest_step_negative 's/"step": 4/"step": -3/' "manifest.json is corrupt: it lacks step"
edit manifest_step_fraction 's/"step": 4/"step": 4.5/' "manifest.json is corrupt: it lacks step"
edit manifest_samples_negative 's/"samples": [0-9]*/"samples": -5/' "manifest.json is corrupt: it lacks step"
edit manifest_t_beyond_step 's/"t": 4/"t": 9/' "optimizer t 9 with step 4"
edit manifest_tp_zero 's/"tp": 1/"tp": 0/' "layout dp 1 pp 1 tp 0"
edit manifest_digest_not_hex 's/"digest": "[0-9a-f]*"/"digest": "zzzz"/' "a digest of 16 hex digits"
edit manifest_file_in_subdir 's/"name": "shard/"name": "x\/shard/' "not a shard file name"

# ---- outputs inside inputs ----
expect_error log_is_manifest "is step-4/manifest.json of --resume $tmp/ck" -- "$ZT" "${T[@]}" --steps 6 --resume "$tmp/ck" --log "$tmp/ck/step-4/manifest.json"
expect_error log_is_shard "re:is step-4/shard-.*of --resume $tmp/ck" -- "$ZT" "${T[@]}" --steps 6 --resume "$tmp/ck" --log "$(ls "$tmp"/ck/step-4/shard-*.safetensors | head -1)"
expect_error log_is_latest "is latest of --resume $tmp/ck" -- "$ZT" "${T[@]}" --steps 6 --resume "$tmp/ck" --log "$tmp/ck/latest"
if diff -r -x lock "$tmp/ck" "$tmp/ck.keep" >/dev/null; then echo "ok   outputs_kept_checkpoint: unchanged"
else echo "FAIL outputs_kept_checkpoint"; failed+=("a refused output changed the checkpoint"); fi
"$ZT" export "$tmp/ck" --out "$tmp/hf" >/dev/null 2>&1 || { echo "FAIL: export"; exit 1; }
cp -r "$tmp/hf" "$tmp/hf.keep"
expect_error log_is_init_config "is config.json of --init-from $tmp/hf" -- "$ZT" --steps 1 --micro-batch 2 --seq 16 --init-from "$tmp/hf" --log "$tmp/hf/config.json"
if diff -r "$tmp/hf" "$tmp/hf.keep" >/dev/null; then echo "ok   init_from_kept: unchanged"
else echo "FAIL init_from_kept"; failed+=("the --init-from directory changed"); fi

# ---- export into a file or an empty path ----
cp "$tmp/t.txt" "$tmp/data.bin"
expect_error export_out_is_file "$tmp/data.bin exists and is not a directory" -- "$ZT" export "$tmp/ck" --out "$tmp/data.bin"
unchanged export_file_kept "$tmp/data.bin" "$tmp/t.keep"
expect_error export_out_empty "the export directory is empty" -- "$ZT" export "$tmp/ck" --out ""

# ---- empty values are not "not given" (an unset shell variable) ----
for f in data save init-from resume log mem-limit; do
  expect_error "empty_$f" "--$f is empty" -- "$ZT" "${T[@]}" --steps 1 "--$f" ""
done

# ---- weights that are not finite: named at load (was a NaN loss blamed on --lr, or zeros) ----
"$PY" - "$tmp/hf" "$tmp/hfnan" <<'PY'
import json, os, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
shutil.copytree(src, dst)
p = os.path.join(dst, "model.safetensors")
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
off = 8 + n + h["h.0.mlp.c_fc.weight"]["data_offsets"][0] + 4 * 5
b[off:off + 4] = struct.pack("<f", float("nan"))
open(p, "wb").write(b)
PY
expect_error init_from_nan "tensor h.0.mlp.c_fc.weight holds nan" -- "$ZT" --steps 1 --micro-batch 2 --seq 16 --init-from "$tmp/hfnan"
expect_error generate_nan "tensor h.0.mlp.c_fc.weight holds nan" -- "$ZT" generate --init-from "$tmp/hfnan" --prompt-ids 1 --max-new 2 --ids
[ ${#MPI[@]} -gt 0 ] && expect_error mpi2_init_from_nan_tp "tensor h.0.mlp.c_fc.weight holds nan" -- "${MPI[@]}" -np 2 "$ZT" --steps 1 --micro-batch 2 --seq 16 --tp 2 --init-from "$tmp/hfnan"

# ---- a config.json that asks for other math than zerotrain's GPT-2 (was ignored) ----
cfg_edit() { # name python-expression-on-c want
  rm -rf "$tmp/hfc"; cp -r "$tmp/hf" "$tmp/hfc"
  "$PY" -c "import json, sys; p = sys.argv[1]; c = json.load(open(p)); $2; json.dump(c, open(p, 'w'))" "$tmp/hfc/config.json"
  expect_error "$1" "$3" -- "$ZT" --steps 1 --micro-batch 2 --seq 16 --init-from "$tmp/hfc"
}
cfg_edit config_activation_relu 'c["activation_function"] = "relu"' "activation_function is relu"
cfg_edit config_ln_eps 'c["layer_norm_epsilon"] = 0.5' "layer_norm_epsilon is 0.5"
cfg_edit config_n_embd_fraction 'c["n_embd"] = 32.5' "n_embd is not a whole number"
cfg_edit config_n_layer_string 'c["n_layer"] = "1"' "n_layer is not a whole number"
cfg_edit config_n_positions_huge 'c["n_positions"] = 1e12' "n_positions is not a whole number"
cfg_edit config_no_n_head 'del c["n_head"]' "lacks n_head"

# ---- small ones ----
expect_error generate_train_flag "--lr is a training option; generate does not use it" -- "$ZT" generate --prompt-ids 1 --max-new 2 --lr 1e-3
expect_error generate_train_flag_eq "--steps is a training option" -- "$ZT" generate --prompt-ids 1 --max-new 2 --steps=3
expect_error vocab_binary 'is not "<base64 token> <rank>": "?ELF' -- "$ZT" generate --model gpt2 --vocab-file /bin/sh --prompt hi --max-new 1
if LC_ALL=C grep -q '[^[:print:][:space:]]' "$tmp/vocab_binary.err"; then
  echo "FAIL vocab_binary_printable: the message carries the file's raw bytes"; failed+=("raw bytes in a message")
else echo "ok   vocab_binary_printable"; fi
expect_error vocab_size_typo "--vocab 300x: --vocab is the model's vocabulary size, a whole number as in train; GPT-2's tokenizer file is --vocab-file FILE" -- "$ZT" generate --n-layer 1 --vocab 300x --prompt-ids 1 --max-new 1
expect_error vocab_file_size "--vocab-file $tmp/ck names GPT-2's tokenizer file, but this model's vocabulary is 256" -- "$ZT" generate --n-layer 1 --vocab-file "$tmp/ck" --prompt-ids 1 --max-new 1
expect_error init_from_checkpoint "is a zerotrain checkpoint: continue its run with --resume" -- "$ZT" generate --init-from "$tmp/ck" --prompt-ids 1 --max-new 2
mk_tokens "$tmp/small.bin" 100 256   # 6 sequences of 16 tokens, one step reads 8
"$ZT" "${T[@]}" --steps 1 --micro-batch 8 --data "$tmp/small.bin" >"$tmp/small.out" 2>"$tmp/small.err"
if [ $? -eq 0 ] && [ "$(grep -c 'warning: one step reads 8 sequences of 16 tokens but .* holds 6' "$tmp/small.err")" = 1 ]; then
  echo "ok   data_smaller_than_a_step: warned once"
else echo "FAIL data_smaller_than_a_step"; show "$tmp/small.err"; failed+=("no warning for data smaller than a step"); fi
expect_error lr_underflow "1e-50 is too small for a 32-bit float" -- "$ZT" "${T[@]}" --steps 1 --lr 1e-50
expect_error prepare_val_frac_alone "--val-frac needs --val-out" -- "$ZT" prepare --text "$tmp/t.txt" --out "$tmp/o2.bin" --val-frac 0.2
expect_ok export_help '^usage: zerotrain export CKPT --out DIR' -- "$ZT" export --help
if [ "$(id -u)" = 0 ] && [ -d /sys/kernel ]; then # root passes access() where nothing can be made
  expect_error save_in_sys "cannot create the --save directory /sys/zt_x in /sys" -- "$ZT" "${T[@]}" --steps 1 --save /sys/zt_x
fi
if [ ${#MPI[@]} -gt 0 ]; then # one-process commands under a launcher: refused once
  for c in prepare memory export; do
    expect_error "mpi2_one_process_$c" "\`zerotrain $c\` runs in one process" -- "${MPI[@]}" -np 2 "$ZT" $c
  done
fi

# ---- ranks launched with other options than rank 0 (was a hang, a crash, or silence) ----
if [ ${#MPI[@]} -gt 0 ]; then
  expect_error mpmd_steps "rank 1 was given another --steps than rank 0" -- "${MPI[@]}" -np 1 "$ZT" "${T[@]}" --steps 2 : -np 1 "$ZT" "${T[@]}" --steps 4
  expect_error mpmd_n_embd "rank 1 was given another --n-embd than rank 0" -- "${MPI[@]}" -np 1 "$ZT" "${T[@]}" --steps 2 : -np 1 "$ZT" "${T[@]}" --steps 2 --n-embd 64
  expect_error mpmd_lr "rank 1 was given another --lr than rank 0" -- "${MPI[@]}" -np 1 "$ZT" "${T[@]}" --steps 2 --zero 1 : -np 1 "$ZT" "${T[@]}" --steps 2 --zero 1 --lr 1e-2
  expect_error mpi2_generate_pp_world "this job has 2 for --pp 3 --tp 1: launch mpirun -np 3" -- "${MPI[@]}" -np 2 "$ZT" generate --n-layer 2 --pp 3 --prompt-ids 1
  expect_error mpi2_generate_pp_memory "--partition memory balances training's memory" -- "${MPI[@]}" -np 2 "$ZT" generate --n-layer 2 --pp 2 --partition memory --prompt-ids 1
  expect_ok mpi2_same_options '^step +2/2' -- "${MPI[@]}" -np 2 "$ZT" "${T[@]}" --steps 2 --zero 1
fi

report_and_exit inputs_guard
