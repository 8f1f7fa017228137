#!/usr/bin/env bash
# End-to-end bad-input tests of the zerotrain binary, one process: every bad input must
# end with a non-zero exit (no crash, no hang, no "fatal"/"assertion", which are for
# bugs), and print one clear message on stderr, exactly once. One good tiny run is the
# control that shows the harness is not vacuous.
set -u
cd "$(dirname "$0")/../.."
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
[ -x "$ZT" ] || { echo "cli_errors: $ZT is not built (make -j2 all)"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_cli_errors.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=()
TIMEOUT=${ZT_TEST_TIMEOUT:-60}

# Tiny model: fast whatever the data.
TINY=(--n-layer 1 --n-head 2 --n-embd 32 --steps 1 --micro-batch 2 --seq 16)

show() { # file: its contents, indented (for the log of a failing case)
  sed -n '1,20p' "$1" | sed 's/^/      | /'
}

# expect_error NAME EXPECTED_SUBSTRING -- command...
# Passes when the command exits non-zero by itself (not a timeout, not a signal), its
# stderr holds EXPECTED_SUBSTRING (case-insensitive) on exactly one line, and nothing
# says "fatal" or "assertion".
expect_error() {
  local name=$1 want=$2; shift 2
  [ "${1:-}" = "--" ] && shift
  local out="$tmp/$name.out" err="$tmp/$name.err" rc why=()
  timeout -k 5 "$TIMEOUT" "$@" >"$out" 2>"$err"; rc=$?
  if [ $rc -eq 0 ]; then why+=("exited 0")
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then why+=("timed out after ${TIMEOUT}s (exit $rc)")
  elif [ $rc -ge 128 ]; then why+=("crashed: killed by signal $((rc - 128)) (exit $rc)")
  fi
  local n
  n=$(grep -ciF -- "$want" "$err")
  if [ "$n" -eq 0 ]; then why+=("stderr lacks '$want'")
  elif [ "$n" -gt 1 ]; then why+=("'$want' printed $n times")
  fi
  if grep -qiE 'fatal|assertion' "$out" "$err"; then why+=("says fatal/assertion (a bug, not a user error)"); fi
  if [ ${#why[@]} -eq 0 ]; then
    echo "ok   $name (exit $rc): $(grep -iF -m1 -- "$want" "$err")"
  else
    local IFS='; '
    echo "FAIL $name: ${why[*]}"
    echo "     command: $*"
    echo "     exit $rc, stderr:"; show "$err"
    [ -s "$out" ] && { echo "     stdout:"; show "$out"; }
    failed+=("$name")
  fi
  return 0
}

# expect_ok NAME STDOUT_REGEX -- command...: exits 0 and stdout matches.
expect_ok() {
  local name=$1 want=$2; shift 2
  [ "${1:-}" = "--" ] && shift
  local out="$tmp/$name.out" err="$tmp/$name.err" rc
  timeout -k 5 "$TIMEOUT" "$@" >"$out" 2>"$err"; rc=$?
  if [ $rc -eq 0 ] && grep -qE -- "$want" "$out"; then
    echo "ok   $name (exit 0): $(grep -E -m1 -- "$want" "$out")"
  else
    echo "FAIL $name: exit $rc, expected exit 0 and stdout matching /$want/"
    echo "     command: $*"
    echo "     stderr:"; show "$err"; echo "     stdout:"; show "$out"
    failed+=("$name")
  fi
}

# ---- fixtures ----------------------------------------------------------------------
# A token file of n tokens with ids i % mod: mk_tokens PATH N MOD [HEADER_N]
# (HEADER_N: the count written in the header, to make a truncated file).
mk_tokens() {
  "$PY" - "$@" <<'EOF'
import struct, sys
path, n, mod = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hn = int(sys.argv[4]) if len(sys.argv) > 4 else n
hdr = [20240520, 1, hn] + [0] * 253
with open(path, "wb") as f:
    f.write(struct.pack("<256i", *hdr))
    f.write(struct.pack("<%dH" % n, *[i % mod for i in range(n)]))
EOF
}
mk_tokens "$tmp/good.bin" 4096 256
mk_tokens "$tmp/truncated.bin" 1000 256 4096     # header says 4096, holds 1000
mk_tokens "$tmp/short.bin" 10 256                 # fewer than one sequence of 16 (+1)
head -c 70000 /dev/urandom >"$tmp/random.bin"
"$PY" tests/reference/gpt2_ref.py --out "$tmp/ref" >"$tmp/ref.log" 2>&1 ||
  { echo "cli_errors: tests/reference/gpt2_ref.py failed:"; tail -20 "$tmp/ref.log"; exit 1; }
# ref/model.bin: llm.c fp32 checkpoint L=3 NH=4 C=64 V=300 maxT=32; ref/train.bin: ids < 300
REF=(--n-layer 3 --n-head 4 --n-embd 64 --vocab 300 --n-ctx 32 --steps 1 --micro-batch 2 --seq 16)
head -c 5000 "$tmp/ref/model.bin" >"$tmp/model_trunc.bin"
echo '{"steps": 1, "n_layer": 1' >"$tmp/malformed.json"
echo '{"steps": 1, "n_layres": 1}' >"$tmp/unknown_key.json"
echo '{"steps": "ten"}' >"$tmp/wrong_type.json"

# ---- success control ---------------------------------------------------------------
expect_ok good_tiny_run '^step +1/1 \| loss' -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin"

# ---- config ------------------------------------------------------------------------
expect_error config_malformed_json "not valid JSON" -- "$ZT" --config "$tmp/malformed.json" "${TINY[@]}"
expect_error config_unknown_key 'unknown key "n_layres"' -- "$ZT" --config "$tmp/unknown_key.json" "${TINY[@]}"
expect_error config_wrong_type "must be" -- "$ZT" --config "$tmp/wrong_type.json" "${TINY[@]}"
expect_error config_missing_file "cannot open config file" -- "$ZT" --config "$tmp/nope.json" "${TINY[@]}"
expect_error flag_unknown "unknown option --n-layers" -- "$ZT" "${TINY[@]}" --n-layers 2
expect_error flag_missing_value "missing its value" -- "$ZT" "${TINY[@]}" --steps
expect_error flag_non_numeric "'abc' is not" -- "$ZT" "${TINY[@]}" --steps abc
expect_error flag_trailing_garbage "after the number" -- "$ZT" "${TINY[@]}" --lr 1e-3x
expect_error model_unknown "is not a preset" -- "$ZT" --model gpt5 --steps 1
expect_error optim_unknown "--optim 'sgd' is not known" -- "$ZT" "${TINY[@]}" --optim sgd
expect_error lr_schedule_unknown "--lr-schedule 'linear' is not known" -- "$ZT" "${TINY[@]}" --lr-schedule linear
expect_error schedule_unknown "--schedule 'zigzag' is not known" -- "$ZT" "${TINY[@]}" --schedule zigzag

# ---- sizes -------------------------------------------------------------------------
expect_error n_embd_not_divisible "n_head" -- "$ZT" "${TINY[@]}" --n-embd 30 --n-head 4
expect_error seq_above_n_ctx "n_ctx" -- "$ZT" "${TINY[@]}" --seq 64 --n-ctx 32
expect_error micro_batch_zero "micro" -- "$ZT" "${TINY[@]}" --micro-batch 0
expect_error micro_batch_negative "micro" -- "$ZT" "${TINY[@]}" --micro-batch -2
expect_error vocab_above_65536 "65536" -- "$ZT" "${TINY[@]}" --vocab 70000

# ---- data --------------------------------------------------------------------------
expect_error data_truncated "truncated" -- "$ZT" "${TINY[@]}" --data "$tmp/truncated.bin"
expect_error data_random_bytes "not an llm.c token file" -- "$ZT" "${TINY[@]}" --data "$tmp/random.bin"
expect_error data_is_checkpoint "not a GPT-2 token file" -- "$ZT" "${REF[@]}" --data "$tmp/ref/model.bin"
expect_error data_token_above_vocab "--vocab" -- "$ZT" "${TINY[@]}" --vocab 256 --data "$tmp/ref/train.bin"
expect_error data_shorter_than_sequence "fewer than the" -- "$ZT" "${TINY[@]}" --data "$tmp/short.bin"
expect_error data_missing "cannot open data file" -- "$ZT" "${TINY[@]}" --data "$tmp/nope.bin"
expect_error val_data_missing "cannot open data file" -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --val-data "$tmp/nope_val.bin"
expect_error val_data_truncated "truncated" -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --val-data "$tmp/truncated.bin"

# ---- checkpoint --------------------------------------------------------------------
expect_error init_from_missing "cannot open checkpoint" -- "$ZT" "${REF[@]}" --data "$tmp/ref/train.bin" --init-from "$tmp/nope_model.bin"
expect_error init_from_truncated "truncated" -- "$ZT" "${REF[@]}" --data "$tmp/ref/train.bin" --init-from "$tmp/model_trunc.bin"
expect_error init_from_shape_mismatch "n_layer" -- "$ZT" "${REF[@]}" --n-layer 2 --data "$tmp/ref/train.bin" --init-from "$tmp/ref/model.bin"
expect_error init_from_token_file "not an llm.c model checkpoint" -- "$ZT" "${REF[@]}" --data "$tmp/ref/train.bin" --init-from "$tmp/ref/train.bin"

# ---- layout ------------------------------------------------------------------------
expect_error layout_pp2_world1 "divisible" -- "$ZT" "${TINY[@]}" --pp 2
expect_error layout_tp2_world1 "divisible" -- "$ZT" "${TINY[@]}" --tp 2
expect_error layout_zero2 "--zero" -- "$ZT" "${TINY[@]}" --zero 2

# ---- log ---------------------------------------------------------------------------
expect_error log_dir_missing "cannot write the log file" -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --log "$tmp/no/such/dir/log.jsonl"

# ---- prepare and commands ----------------------------------------------------------
expect_error prepare_missing_text "cannot open text file" -- "$ZT" prepare --text "$tmp/nope.txt" --out "$tmp/p.bin"
expect_error prepare_no_args "--text FILE and --out FILE are required" -- "$ZT" prepare
expect_error unknown_command "unknown command 'frobnicate'" -- "$ZT" frobnicate

if [ ${#failed[@]} -gt 0 ]; then
  echo "cli_errors: ${#failed[@]} case(s) failed: ${failed[*]}"
  exit 1
fi
echo "cli_errors: all cases passed"
