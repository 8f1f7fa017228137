#!/usr/bin/env bash
# The bad inputs and faults of issue 16, each ending in exit 1 with one clear
# "zerotrain: error:" line (printed once, also under mpirun with 2 ranks), never an
# assertion, crash or hang; outputs that would destroy an input are refused and the
# input is left intact. Helpers: cli_errors.sh (expect_error, expect_ok, mk_tokens).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TIMEOUT=${ZT_TEST_TIMEOUT:-20}
ZT_TEST_TIMEOUT=$TIMEOUT
source "$here/cli_errors.sh" || exit 1   # cds to the repo root; defines the helpers
export OMP_NUM_THREADS=1
MPI=()
command -v mpirun >/dev/null && MPI=(mpirun --oversubscribe -x OMP_NUM_THREADS -np 2)
[ ${#MPI[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && MPI=("${MPI[0]}" --allow-run-as-root "${MPI[@]:1}")

mk_tokens "$tmp/good.bin" 4096 256
printf '{"steps": 1}\n' >"$tmp/cfg.json"
mkfifo "$tmp/fifo"

# both ways: one process, and under mpirun with 2 ranks (the message once, not per rank)
both() { # name want -- zerotrain args...
  local name=$1 want=$2; shift 3
  expect_error "$name" "$want" -- "$ZT" "$@"
  [ ${#MPI[@]} -gt 0 ] && expect_error "mpi2_$name" "$want" -- "${MPI[@]}" "$ZT" "$@"
  return 0
}

one() { # name want -- zerotrain args...: one process only (mpirun costs ~1 s a case)
  local name=$1 want=$2; shift 3
  expect_error "$name" "$want" -- "$ZT" "$@"
}

# ---- huge shapes: refused by the config check, never an assertion or a long plan ----
both n_layer_int_max "--n-layer 2147483647 exceeds" -- "${TINY[@]}" --n-layer 2147483647
one n_layer_2p30 "--n-layer 1073741823 exceeds" -- "${TINY[@]}" --n-layer 1073741823
one n_layer_20000 "--n-layer 20000 exceeds" -- "${TINY[@]}" --n-layer 20000
one n_embd_2p29 "--n-embd 536870912 exceeds" -- "${TINY[@]}" --n-embd 536870912
one n_embd_1e8 "--n-embd 100000000 exceeds" -- "${TINY[@]}" --n-embd 100000000
one grad_accum_huge "--grad-accum 357913942 exceeds" -- "${TINY[@]}" --grad-accum 357913942
expect_error memory_partition_weight_1e155 "exceeds 1e6" -- "$ZT" memory --dp 1 --pp 2 --partition type:embed:1e155
# the deepest model allowed, with a budget nothing meets: the advice search is bounded
t0=$(date +%s%N)
expect_ok memory_deepest_advice_bounded 'do not fit' -- "$ZT" memory --dp 1 --n-layer 256 --mem-limit 1K
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $ms -lt 5000 ] || { echo "FAIL memory_deepest_advice_bounded: ${ms} ms"; failed+=("advice took ${ms} ms"); }

# ---- threads ----
both threads_100000 "--threads 100000 exceeds" -- "${TINY[@]}" --threads 100000
one threads_50000 "--threads 50000 exceeds" -- "${TINY[@]}" --threads 50000
expect_error omp_num_threads_100000 "OMP_NUM_THREADS asks for 100000" -- env OMP_NUM_THREADS=100000 "$ZT" "${TINY[@]}"

# ---- environment of the MPI backend ----
expect_error env_comm_algo "ZT_COMM_MPI_ALGO=bogus" -- env ZT_COMM_MPI_ALGO=bogus "$ZT" "${TINY[@]}"
expect_error env_comm_timeout "ZT_COMM_TIMEOUT_S=soon: give the seconds" -- env ZT_COMM_TIMEOUT_S=soon "$ZT" "${TINY[@]}"
expect_error env_comm_timeout_negative "ZT_COMM_TIMEOUT_S=-1: give the seconds" -- env ZT_COMM_TIMEOUT_S=-1 "$ZT" "${TINY[@]}"
if [ ${#MPI[@]} -gt 0 ]; then
  expect_error mpi2_env_comm_timeout "ZT_COMM_TIMEOUT_S=nan: give the seconds" -- env ZT_COMM_TIMEOUT_S=nan "${MPI[@]}" -x ZT_COMM_TIMEOUT_S "$ZT" "${TINY[@]}"
  expect_error mpi2_env_comm_algo "ZT_COMM_MPI_ALGO=bogus" -- env ZT_COMM_MPI_ALGO=bogus "${MPI[@]}" -x ZT_COMM_MPI_ALGO "$ZT" "${TINY[@]}"
  expect_error mpi2_env_stage_kib "ZT_COMM_MPI_STAGE_KIB=2" -- env ZT_COMM_MPI_STAGE_KIB=2 "${MPI[@]}" -x ZT_COMM_MPI_STAGE_KIB "$ZT" "${TINY[@]}"
fi

# ---- files that are not regular files ----
both data_fifo "not a regular file" -- "${TINY[@]}" --data "$tmp/fifo"
expect_error prepare_text_fifo "not a regular file" -- "$ZT" prepare --text "$tmp/fifo" --out "$tmp/p.bin"
# a FIFO where a file must be is refused at once (each was a hang: an open that waits for
# a writer), by name; the model directory's config.json was ignored (the shape guessed)
one init_from_fifo "--init-from $tmp/fifo is not a regular file or a directory" -- "${TINY[@]}" --data "$tmp/good.bin" --init-from "$tmp/fifo"
"$ZT" "${TINY[@]}" --data "$tmp/good.bin" --save "$tmp/mdl" >"$tmp/mdl.out" 2>&1 || { show "$tmp/mdl.out"; exit 1; }
cp -r "$tmp/mdl" "$tmp/mdl_cfg"; rm "$tmp/mdl_cfg/config.json"; mkfifo "$tmp/mdl_cfg/config.json"
one init_from_config_fifo "$tmp/mdl_cfg/config.json is not a regular file" -- "${TINY[@]}" --data "$tmp/good.bin" --init-from "$tmp/mdl_cfg"
expect_error generate_config_fifo "$tmp/mdl_cfg/config.json is not a regular file" -- "$ZT" generate --init-from "$tmp/mdl_cfg" --prompt-ids 1 --max-new 2 --ids
cp -r "$tmp/mdl" "$tmp/mdl_st"; rm "$tmp/mdl_st/model.safetensors"; mkfifo "$tmp/mdl_st/model.safetensors"
one init_from_safetensors_fifo "$tmp/mdl_st/model.safetensors is not a regular file" -- "${TINY[@]}" --data "$tmp/good.bin" --init-from "$tmp/mdl_st"
expect_error prepare_vocab_fifo "vocabulary file $tmp/fifo is not a regular file" -- "$ZT" prepare --tokenizer gpt2 --vocab "$tmp/fifo" --text "$tmp/cfg.json" --out "$tmp/p.bin"
# a save over an export whose tokenizer_config.json is a FIFO: not the export's mark, kept
cp -r "$tmp/mdl" "$tmp/mdl_tok"; mkfifo "$tmp/mdl_tok/tokenizer_config.json"
expect_ok save_over_tokenizer_config_fifo 'saved .*mdl_tok' -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --save "$tmp/mdl_tok"
# --config still reads a pipe and /dev/fd (the one input that may be a stream)
mkfifo "$tmp/cfg_fifo"; timeout 30 bash -c 'printf "{\"steps\": 1}\n" >"$0"' "$tmp/cfg_fifo" &
expect_ok config_from_fifo '^step +1/1' -- "$ZT" --config "$tmp/cfg_fifo" "${TINY[@]}" --data "$tmp/good.bin"
expect_ok config_from_dev_fd '^step +1/1' -- bash -c '"$@" 3<"$0"' "$tmp/cfg.json" "$ZT" --config /dev/fd/3 "${TINY[@]}" --data "$tmp/good.bin"

# ---- outputs: checked before step 1, never an input ----
cp "$tmp/good.bin" "$tmp/keep.bin"
both log_is_data "--log $tmp/good.bin is the same file as --data" -- "${TINY[@]}" --data "$tmp/good.bin" --log "$tmp/good.bin"
ln "$tmp/good.bin" "$tmp/hardlink.bin"
one log_is_data_by_inode "is the same file as --data" -- "${TINY[@]}" --data "$tmp/good.bin" --log "$tmp/hardlink.bin"
one log_is_config "is the same file as --config" -- --config "$tmp/cfg.json" "${TINY[@]}" --data "$tmp/good.bin" --log "$tmp/cfg.json"
cmp -s "$tmp/good.bin" "$tmp/keep.bin" || { echo "FAIL log_is_data: the data file changed"; failed+=("data file changed"); }
one save_is_file "exists and is not a directory" -- "${TINY[@]}" --data "$tmp/good.bin" --save "$tmp/good.bin"
one save_parent_missing "its parent $tmp/no does not exist" -- "${TINY[@]}" --data "$tmp/good.bin" --save "$tmp/no/model"
one log_is_directory "it is a directory" -- "${TINY[@]}" --data "$tmp/good.bin" --log "$tmp"
# a log that cannot be written stops the run: exit 1 and the errno text
both log_disk_full "No space left on device" -- "${TINY[@]}" --steps 3 --data "$tmp/good.bin" --log /dev/full

# ---- faults during a run: a data file truncated under it, SIGTERM ----
# run_then NAME ACTION WANT_RC WANT: a long run; once its log has a line, ACTION (with $pid,
# $data), then the exit status and a stderr line are checked
run_then() {
  local name=$1 action=$2 want_rc=$3 want=$4 data="$tmp/$1.bin" pid rc
  cp "$tmp/good.bin" "$data"
  timeout -k 5 "$TIMEOUT" "$ZT" "${TINY[@]}" --steps 1000000 --val-every 0 --data "$data" \
    --log "$tmp/$name.jsonl" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
  for _ in $(seq 100); do [ -s "$tmp/$name.jsonl" ] && break; sleep 0.1; done
  eval "$action"
  wait $pid; rc=$?
  if [ $rc -eq "$want_rc" ] && [ "$(grep -c -F -- "$want" "$tmp/$name.err")" -eq 1 ]; then
    echo "ok   $name (exit $rc): $(grep -F -m1 -- "$want" "$tmp/$name.err")"
  else
    echo "FAIL $name: exit $rc (want $want_rc), stderr:"; show "$tmp/$name.err"
    failed+=("$name: exit $rc")
  fi
}
run_then data_truncated_during_run 'truncate -s 1024 "$data"' 1 "became shorter during the run (SIGBUS): --data"
run_then sigterm 'kill -TERM $pid' 143 "zerotrain: stopped by SIGTERM (rank 0)"

# ---- the memory check reads the process limits, not only MemAvailable ----
expect_error ulimit_v_checked "but ulimit -v" -- bash -c 'ulimit -v 1500000; exec "$@"' _ "$ZT" --model gpt2 --steps 1
mkdir -p "$tmp/cgroup"; echo 100000000 >"$tmp/cgroup/memory.max"; echo 20000000 >"$tmp/cgroup/memory.current"
expect_error cgroup_memory_max_checked "memory cgroup" -- env ZT_CGROUP_DIR="$tmp/cgroup" "$ZT" --model gpt2 --steps 1

# ---- a save over an export whose file name a directory took: the new export is swapped in
# whole, and what it could not clear of the old one is kept aside under a named path ----
mkdir -p "$tmp/blocked/model.safetensors"
expect_ok save_over_blocked_export 'saved .*blocked' -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --save "$tmp/blocked"
grep -q "previous export was kept in $tmp/blocked.tmp" "$tmp/save_over_blocked_export.err" &&
  [ -f "$tmp/blocked/model.safetensors" ] && [ -f "$tmp/blocked/config.json" ] ||
  { echo "FAIL save_over_blocked_export: $(ls -A "$tmp/blocked" | tr '\n' ' ')"; failed+=("save over blocked"); }

# ---- small ones ----
one optim_block_help_words "use a power of two, 64-256" -- "${TINY[@]}" --optim adamw8bit --optim-block 512
"$ZT" --help | grep -q -- "--optim-block.*a power of two, 64-256" ||
  { echo "FAIL optim_block_help_words: --help says otherwise"; failed+=("optim-block help"); }
expect_ok prepare_help '^usage: zerotrain prepare' -- "$ZT" prepare --help
expect_ok memory_help '^usage: zerotrain memory' -- "$ZT" memory --help
expect_ok memory_default_dp1 'dp 1 x pp 2' -- "$ZT" memory --pp 2
SLURM_NTASKS=2 "$ZT" "${TINY[@]}" --data "$tmp/good.bin" >/dev/null 2>"$tmp/slurm.err"
grep -q "warning: SLURM_NTASKS=2 but this job's MPI world has 1 rank" "$tmp/slurm.err" &&
  echo "ok   slurm_world1_warning" ||
  { echo "FAIL slurm_world1_warning: no warning"; failed+=("slurm warning"); }

mk_tokens "$tmp/val_small.bin" 200 256   # 12 sequences of 16: fewer than 8 batches of 2 read
"$ZT" "${TINY[@]}" --data "$tmp/good.bin" --val-data "$tmp/val_small.bin" 2>&1 >/dev/null | grep -q "warning: validation" &&
  { echo "FAIL validation_default_fits: the default --val-batches warned"; failed+=("validation default"); } ||
  echo "ok   validation_default_fits (the automatic --val-batches reads 6 batches of 2)"
"$ZT" "${TINY[@]}" --data "$tmp/good.bin" --val-data "$tmp/val_small.bin" --val-batches 8 >/dev/null 2>"$tmp/val.err"
grep -q "warning: validation reads 16 sequences.*holds 12, so some are counted more than once; use --val-batches 6 or less" "$tmp/val.err" &&
  echo "ok   validation_counts_twice_warned" ||
  { echo "FAIL validation_counts_twice_warned:"; show "$tmp/val.err"; failed+=("validation warning"); }

# the progress line: MFU against --peak-tflops, memory figures only when they change
"$ZT" "${TINY[@]}" --steps 3 --data "$tmp/good.bin" --peak-tflops 1 >"$tmp/progress.out" 2>&1
if [ "$(grep -c '^step .*| MFU ' "$tmp/progress.out")" -eq 3 ] &&
   [ "$(grep -c '^step .*| params ' "$tmp/progress.out")" -eq 1 ]; then
  echo "ok   progress_line_mfu_and_memory_once"
else
  echo "FAIL progress_line_mfu_and_memory_once:"; show "$tmp/progress.out"; failed+=("progress line")
fi

# control: a good run with a fresh log and a save directory still works
expect_ok good_run_with_outputs '^step +1/1 \| loss' -- "$ZT" "${TINY[@]}" --data "$tmp/good.bin" --log "$tmp/l.jsonl" --save "$tmp/model"

report_and_exit red_team
