#!/usr/bin/env bash
# End-to-end bad-input tests of the zerotrain binary, one process: every bad input must
# end with a non-zero exit by itself (no crash, no hang, no "fatal"/"assertion": those
# are for bugs), and print its message on stderr exactly once; every --flag the message
# names must be a real option. One good tiny run is the control that shows the harness
# is not vacuous. tests/sh/cli_errors_mpi.sh sources the helpers (up to the `return`).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
TIMEOUT=${ZT_TEST_TIMEOUT:-60}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
[ -x "$ZT" ] || { echo "cli_errors: $ZT is not built (make -j2 all)"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_cli_errors.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=()   # "name: why" of each failing case

# Tiny model: fast whatever the data.
TINY=(--n-layer 1 --n-head 2 --n-embd 32 --steps 1 --micro-batch 2 --seq 16)

# Every flag the binary documents (options, generate's and prepare's flags), plus the placeholders
# that messages and usage use for "some flag".
KNOWN_FLAGS=" $({ "$ZT" --help; "$ZT" generate --help; "$ZT" prepare --help; } 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ') --name --help "

show() { # file: its first lines, indented (for the log of a failing case)
  sed -n '1,25p' "$1" | sed 's/^/      | /'
}

# Flags named in zerotrain's own lines of FILE that are neither documented options nor
# among the command's arguments (a message must not send the user to a non-flag).
unknown_flags() { # file, command...
  local file=$1; shift
  local f a ok
  for f in $(grep -i '^zerotrain' "$file" | grep -oE -- '--[A-Za-z][A-Za-z0-9_-]*' | sort -u); do
    [[ "$KNOWN_FLAGS" == *" $f "* ]] && continue
    ok=0
    for a in "$@"; do [ "${a%%=*}" = "$f" ] && ok=1; done
    [ $ok -eq 1 ] || printf '%s ' "$f"
  done
}

# expect_error NAME EXPECTED -- command...
# Passes when the command exits non-zero by itself (not a timeout, not a signal), the
# expected text is on exactly one line of stderr (case-insensitive; a fixed string, or
# an extended regex when written "re:REGEX"), nothing says fatal/assertion/MPI_ABORT
# (bugs), and every --flag in zerotrain's message is real.
expect_error() {
  local name=$1 want=$2; shift 2
  [ "${1:-}" = "--" ] && shift
  local out="$tmp/$name.out" err="$tmp/$name.err" rc why=() mode=-F pat=$want n uf
  if [[ "$want" == re:* ]]; then mode=-E; pat=${want#re:}; fi
  timeout -k 5 "$TIMEOUT" "$@" >"$out" 2>"$err"; rc=$?
  if [ $rc -eq 0 ]; then why+=("exited 0")
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then why+=("hung: killed after ${TIMEOUT}s (exit $rc)")
  elif [ $rc -ge 128 ]; then why+=("crashed: signal $((rc - 128)) (exit $rc)")
  elif [ $rc -eq 126 ] || [ $rc -eq 127 ]; then why+=("could not run the command (exit $rc)")
  fi
  n=$(grep -ci $mode -- "$pat" "$err")
  if [ "$n" -eq 0 ]; then why+=("stderr lacks '$want'")
  elif [ "$n" -gt 1 ]; then why+=("'$want' printed $n times")
  fi
  if grep -qiE 'fatal|assertion|MPI_ABORT|exited on signal|core dumped|sanitizer' "$out" "$err"; then
    why+=("says fatal/assertion/abort (a bug's path, not a user error's)")
  fi
  uf=$(unknown_flags "$err" "$@")
  [ -n "$uf" ] && why+=("the message names ${uf}which is not an option")
  if [ ${#why[@]} -eq 0 ]; then
    echo "ok   $name (exit $rc): $(grep -i $mode -m1 -- "$pat" "$err")"
  else
    local cmd
    cmd=$(printf '%q ' "$@")
    local IFS=';'
    echo "FAIL $name: ${why[*]}"
    echo "     command: $cmd"
    echo "     exit $rc, stderr:"; show "$err"
    [ -s "$out" ] && { echo "     stdout:"; show "$out"; }
    failed+=("$name: ${why[*]}")
  fi
  return 0
}

# expect_ok NAME STDOUT_REGEX -- command...: exits 0 and a stdout line matches.
expect_ok() {
  local name=$1 want=$2; shift 2
  [ "${1:-}" = "--" ] && shift
  local out="$tmp/$name.out" err="$tmp/$name.err" rc
  timeout -k 5 "$TIMEOUT" "$@" >"$out" 2>"$err"; rc=$?
  if [ $rc -eq 0 ] && grep -qE -- "$want" "$out"; then
    echo "ok   $name (exit 0): $(grep -E -m1 -- "$want" "$out")"
  else
    echo "FAIL $name: exit $rc, expected exit 0 and a stdout line matching /$want/"
    echo "     command: $(printf '%q ' "$@")"
    echo "     stderr:"; show "$err"; echo "     stdout:"; show "$out"
    failed+=("$name: exit $rc, not a successful run")
  fi
  return 0
}

# A token file of N tokens with ids i % MOD: mk_tokens PATH N MOD [HEADER_N [VERSION]]
# (HEADER_N: the count written in the header, to make a truncated or corrupt file).
mk_tokens() {
  "$PY" - "$@" <<'EOF'
import struct, sys
path, n, mod = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hn = int(sys.argv[4]) if len(sys.argv) > 4 else n
ver = int(sys.argv[5]) if len(sys.argv) > 5 else 1
with open(path, "wb") as f:
    f.write(struct.pack("<256i", *([20240520, ver, hn] + [0] * 253)))
    f.write(struct.pack("<%dH" % n, *[i % mod for i in range(n)]))
EOF
}

# report_and_exit SCRIPT_NAME: the summary line and the exit status.
report_and_exit() {
  if [ ${#failed[@]} -gt 0 ]; then
    echo "$1: ${#failed[@]} case(s) failed:"
    printf '  %s\n' "${failed[@]}"
    exit 1
  fi
  echo "$1: all cases passed"
  exit 0
}

# Sourced by cli_errors_mpi.sh: helpers only.
[ "${BASH_SOURCE[0]}" != "$0" ] && return 0

# ---- fixtures ----------------------------------------------------------------------
mk_tokens "$tmp/good.bin" 4096 256
mk_tokens "$tmp/truncated.bin" 1000 256 4096     # header says 4096 tokens, holds 1000
mk_tokens "$tmp/short.bin" 10 256                 # fewer than one sequence of 16 (+1)
mk_tokens "$tmp/version2.bin" 100 256 100 2
mk_tokens "$tmp/negative_count.bin" 100 256 -5
mk_tokens "$tmp/trailing.bin" 200 256 100         # 100 tokens more than the header says
printf 'hello' >"$tmp/tiny.bin"                    # shorter than the header
head -c 70000 /dev/urandom >"$tmp/random.bin"
"$PY" tests/reference/gpt2_ref.py --out "$tmp/ref" >"$tmp/ref.log" 2>&1 ||
  { echo "cli_errors: tests/reference/gpt2_ref.py failed:"; tail -20 "$tmp/ref.log"; exit 1; }
# ref/model.bin: llm.c fp32 checkpoint L=3 NH=4 C=64 V=300 maxT=32; ref/train.bin: ids < 300
REF=(--n-layer 3 --n-head 4 --n-embd 64 --vocab 300 --n-ctx 32 --steps 1 --micro-batch 2 --seq 16)
head -c 5000 "$tmp/ref/model.bin" >"$tmp/model_trunc.bin"
"$PY" - "$tmp/ref/model.bin" "$tmp/model_bf16.bin" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<i", b, 4, 5)   # llm.c's bf16 checkpoint version
open(sys.argv[2], "wb").write(b)
EOF
mkdir -p "$tmp/folder"
printf '{"steps": 1, "n_layer": 1\n' >"$tmp/malformed.json"
printf '{"steps": 1, "n_layres": 1}\n' >"$tmp/unknown_key.json"
printf '{"steps": "ten"}\n' >"$tmp/wrong_type.json"
printf '{"steps": 1.5}\n' >"$tmp/fraction.json"
printf '[1, 2]\n' >"$tmp/array.json"
: >"$tmp/empty.json"
echo "some text to tokenize" >"$tmp/text.txt"

# ---- success control ---------------------------------------------------------------
expect_ok good_tiny_run '^step +1/1 \| loss' -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin"

# ---- config ------------------------------------------------------------------------
expect_error config_malformed_json "not valid JSON" -- "$ZT" --config "$tmp/malformed.json" "${TINY[@]}"
expect_error config_unknown_key 'unknown key "n_layres"' -- "$ZT" --config "$tmp/unknown_key.json" "${TINY[@]}"
expect_error config_wrong_type 'key "steps" must be' -- "$ZT" --config "$tmp/wrong_type.json" "${TINY[@]}"
expect_error config_fraction_for_int 'key "steps" must be' -- "$ZT" --config "$tmp/fraction.json" "${TINY[@]}"
expect_error config_top_level_array "must be a JSON object" -- "$ZT" --config "$tmp/array.json" "${TINY[@]}"
expect_error config_empty_file "is empty" -- "$ZT" --config "$tmp/empty.json" "${TINY[@]}"
expect_error config_missing_file "cannot open config file" -- "$ZT" --config "$tmp/nope.json" "${TINY[@]}"
expect_error flag_unknown "unknown option --n-layers" -- "$ZT" "${TINY[@]}" --n-layers 2
expect_error backend_cuda_not_built 'built without it: build with `make cuda`' -- "$ZT" "${TINY[@]}" --backend cuda
expect_error tf32_without_cuda "--tf32 applies to --backend cuda only" -- "$ZT" "${TINY[@]}" --tf32
expect_error cuda_attention_without_cuda "--cuda-attention flash applies to --backend cuda only" -- \
    "$ZT" "${TINY[@]}" --cuda-attention flash
expect_error bf16_gemm_unknown "--bf16-gemm 'mkl' is not known: use one of auto, onednn-matmul, onednn, fallback" -- "$ZT" "${TINY[@]}" --bf16-gemm mkl
# oneDNN held below its bf16 kernels: refused on any CPU, with or without the instructions
expect_error bf16_gemm_onednn_refused "re:--bf16-gemm onednn: .*give --bf16-gemm fallback" -- env ONEDNN_MAX_CPU_ISA=AVX2 "$ZT" "${TINY[@]}" --bf16-gemm onednn
expect_error tensor_path_unknown "--tensor-path 'nccl' is not known: use one of auto, staged" -- "$ZT" "${TINY[@]}" --tensor-path nccl
expect_error eval_tensor_path_unknown "--tensor-path 'mpi' is not known" -- "$ZT" eval --n-layer 1 --n-head 2 --n-embd 32 --tensor-path mpi
expect_error memory_gpus_per_node_negative "--gpus-per-node must be at least 0" -- "$ZT" memory --gpus-per-node -1
expect_error flag_missing_value "--steps is missing its value" -- "$ZT" "${TINY[@]}" --steps
expect_error flag_non_numeric "'abc' is not" -- "$ZT" "${TINY[@]}" --steps abc
expect_error flag_trailing_garbage "after the number" -- "$ZT" "${TINY[@]}" --lr 1e-3x
expect_error flag_int_out_of_range "out of range" -- "$ZT" "${TINY[@]}" --steps 99999999999
expect_error flag_bad_bool "is not a bool" -- "$ZT" "${TINY[@]}" --shuffle=maybe
expect_error flag_positional_argument "unexpected argument 'stray'" -- "$ZT" "${TINY[@]}" stray
expect_error model_unknown "--model 'gpt5' is not a preset" -- "$ZT" --model gpt5 --steps 1
expect_error optim_unknown "--optim 'sgd' is not known" -- "$ZT" "${TINY[@]}" --optim sgd
expect_error lr_schedule_unknown "--lr-schedule 'linear' is not known" -- "$ZT" "${TINY[@]}" --lr-schedule linear
expect_error schedule_unknown "--schedule 'zigzag' is not known" -- "$ZT" "${TINY[@]}" --schedule zigzag
expect_error save_dtype_unknown "--save-dtype 'fp16' is not known: use one of fp32, bf16" -- "$ZT" "${TINY[@]}" --save-dtype fp16
expect_error save_dtype_empty "--save-dtype is empty" -- "$ZT" "${TINY[@]}" --save-dtype ""
expect_error lr_negative "--lr must be positive" -- "$ZT" "${TINY[@]}" --lr -1

# ---- sizes -------------------------------------------------------------------------
expect_error n_embd_not_divisible "not divisible by n_head" -- "$ZT" "${TINY[@]}" --n-embd 30 --n-head 4
expect_error seq_above_n_ctx "--seq 64 exceeds" -- "$ZT" "${TINY[@]}" --seq 64 --n-ctx 32
expect_error micro_batch_zero "--micro-batch must be at least 1" -- "$ZT" "${TINY[@]}" --micro-batch 0
expect_error micro_batch_negative "--micro-batch must be at least 1" -- "$ZT" "${TINY[@]}" --micro-batch -2
# predicted not to fit: refused before allocating, with the changes that would fit
expect_error mem_limit_refused "but --mem-limit 1G allows 1.00 GiB per rank. Changes that fit (each planned): --pp" -- \
  "$ZT" --model gpt2 --mem-limit 1G --steps 1
expect_error vocab_too_large "--vocab 20000000 exceeds 16777216" -- "$ZT" "${TINY[@]}" --vocab 20000000
expect_error seq_zero "--seq must be at least 1" -- "$ZT" "${TINY[@]}" --seq 0
expect_error n_head_zero "--n-head must be at least 1" -- "$ZT" "${TINY[@]}" --n-head 0
# A batch no machine can hold (tens of TB of activations; capped address space so
# that it fails the same everywhere): a user error naming the memory, not a crash.
expect_error micro_batch_too_big_for_memory "memory" -- bash -c 'ulimit -v 32000000; exec "$@"' _ \
  "$ZT" "${TINY[@]}" --seq 256 --micro-batch 8000000 --data "$tmp/good.bin"
expect_error micro_batch_tokens_overflow "tokens per micro-batch exceeds 2^31 - 1" -- \
  "$ZT" "${TINY[@]}" --seq 256 --micro-batch 100000000 --data "$tmp/good.bin"

# ---- data --------------------------------------------------------------------------
expect_error data_truncated "is truncated" -- "$ZT" "${TINY[@]}" --data "$tmp/truncated.bin"
expect_error data_shorter_than_header "is truncated" -- "$ZT" "${TINY[@]}" --data "$tmp/tiny.bin"
expect_error data_trailing_bytes "trailing bytes" -- "$ZT" "${TINY[@]}" --data "$tmp/trailing.bin"
expect_error data_negative_count "negative token count" -- "$ZT" "${TINY[@]}" --data "$tmp/negative_count.bin"
expect_error data_bad_version "unsupported version 2" -- "$ZT" "${TINY[@]}" --data "$tmp/version2.bin"
expect_error data_random_bytes "not an llm.c token file" -- "$ZT" "${TINY[@]}" --data "$tmp/random.bin"
expect_error data_is_checkpoint "not a GPT-2 token file" -- "$ZT" "${REF[@]}" --data "$tmp/ref/model.bin"
expect_error data_is_directory "not a regular file" -- "$ZT" "${TINY[@]}" --data "$tmp/folder"
expect_error data_token_above_vocab "pass --vocab 300" -- "$ZT" "${TINY[@]}" --vocab 256 --data "$tmp/ref/train.bin"
expect_error data_shorter_than_sequence "fewer than the 17 needed" -- "$ZT" "${TINY[@]}" --data "$tmp/short.bin"
expect_error data_missing "cannot open data file" -- "$ZT" "${TINY[@]}" --data "$tmp/nope.bin"
expect_error val_data_missing "cannot open data file" -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --val-data "$tmp/nope_val.bin"
expect_error val_data_truncated "is truncated" -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --val-data "$tmp/truncated.bin"
expect_error val_data_token_above_vocab "pass --vocab 300" -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --val-data "$tmp/ref/train.bin"

# ---- checkpoint --------------------------------------------------------------------
expect_error init_from_missing "cannot open --init-from" -- "$ZT" "${REF[@]}" --data "$tmp/ref/train.bin" --init-from "$tmp/nope_model.bin"
expect_error init_from_truncated "truncated" -- "$ZT" "${REF[@]}" --data "$tmp/ref/train.bin" --init-from "$tmp/model_trunc.bin"
expect_error init_from_shape_mismatch "--n-layer 2 contradicts n_layer 3 of" -- "$ZT" "${REF[@]}" --n-layer 2 --data "$tmp/ref/train.bin" --init-from "$tmp/ref/model.bin"
expect_error init_from_token_file "not an llm.c model checkpoint" -- "$ZT" "${REF[@]}" --data "$tmp/ref/train.bin" --init-from "$tmp/ref/train.bin"
expect_error init_from_bf16 "bf16 checkpoint" -- "$ZT" "${REF[@]}" --data "$tmp/ref/train.bin" --init-from "$tmp/model_bf16.bin"
# a directory is not a "truncated" checkpoint: say what it is (as --data does)
expect_error init_from_directory "re:is a directory|not a regular file" -- "$ZT" "${REF[@]}" --data "$tmp/ref/train.bin" --init-from "$tmp/folder"

# ---- layout ------------------------------------------------------------------------
expect_error layout_pp2_world1 "world size 1 is not divisible" -- "$ZT" "${TINY[@]}" --pp 2
expect_error layout_tp2_world1 "world size 1 is not divisible" -- "$ZT" "${TINY[@]}" --tp 2
expect_error layout_dp3_world1 "does not match the world size 1" -- "$ZT" "${TINY[@]}" --dp 3
expect_error layout_zero2 "--zero must be 0 or 1" -- "$ZT" "${TINY[@]}" --zero 2

# ---- divergence ----------------------------------------------------------------------
# An absurd learning rate makes the loss NaN: training stops before the update with one
# message naming the step and the fix, and nothing is saved over (--save is not written).
expect_error loss_becomes_nan "the loss became NaN" -- "$ZT" "${TINY[@]}" --steps 20 --lr 1e30 \
  --warmup 0 --grad-clip 0 --lr-schedule constant --data "$tmp/good.bin" --save "$tmp/nan_model"
if [ -e "$tmp/nan_model" ]; then echo "FAIL loss_becomes_nan: --save was written"; failed+=("loss_becomes_nan: --save was written"); fi

# ---- log ---------------------------------------------------------------------------
expect_error log_dir_missing "cannot write the log file" -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --log "$tmp/no/such/dir/log.jsonl"

# ---- prepare and commands ----------------------------------------------------------
expect_error prepare_missing_text "cannot open text file" -- "$ZT" prepare --text "$tmp/nope.txt" --out "$tmp/p.bin"
expect_error prepare_no_args "--text FILE (or --jsonl FILE) and --out FILE are required" -- "$ZT" prepare
expect_error prepare_out_dir_missing "check that the directory exists" -- "$ZT" prepare --text "$tmp/text.txt" --out "$tmp/no/such/dir/p.bin"
expect_error prepare_unknown_option "unknown option --bogus" -- "$ZT" prepare --text "$tmp/text.txt" --out "$tmp/p.bin" --bogus 1
# the same unknown option as the last argument: still "unknown option", not "needs a value"
expect_error prepare_unknown_option_last "unknown option --bogus" -- "$ZT" prepare --text "$tmp/text.txt" --out "$tmp/p.bin" --bogus
# --dtype is read before the checkpoint: a bad value is refused first
expect_error export_dtype_unknown "--dtype 'fp16' is not known: use one of fp32, bf16" -- "$ZT" export "$tmp/no_ckpt" --out "$tmp/x" --dtype fp16
expect_error export_dtype_no_value "unexpected argument '--dtype' (usage: zerotrain export CKPT --out DIR [--dtype fp32|bf16])" -- "$ZT" export "$tmp/no_ckpt" --out "$tmp/x" --dtype
expect_error unknown_command "unknown command 'frobnicate'" -- "$ZT" frobnicate
expect_error launch_no_np "give the number of ranks first" -- "$ZT" launch train --steps 1
expect_error launch_bad_np "-np 0: give a whole number of ranks" -- "$ZT" launch -np 0 train
expect_error launch_under_mpi "already one of several launched processes" -- env OMPI_COMM_WORLD_SIZE=2 "$ZT" launch -np 2 train

report_and_exit cli_errors
