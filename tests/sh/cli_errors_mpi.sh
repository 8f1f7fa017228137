#!/usr/bin/env bash
# End-to-end bad-input tests of zerotrain under mpirun: a bad input must end the whole
# job non-zero within the timeout (no rank left hanging, no crash, no fatal/abort),
# with its message printed exactly once (not once per rank). Helpers: cli_errors.sh.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/cli_errors.sh" || exit 1   # cds to the repo root; defines the helpers
export OMP_NUM_THREADS=1
command -v mpirun >/dev/null || { echo "cli_errors_mpi: no mpirun"; exit 77; }
MPI=(mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS)

mk_tokens "$tmp/good.bin" 4096 256
mk_tokens "$tmp/truncated.bin" 1000 256 4096     # header says 4096 tokens, holds 1000
printf '{"steps": 1, "n_layres": 1}\n' >"$tmp/unknown_key.json"

# ---- success control ---------------------------------------------------------------
expect_ok mpi2_good_zero1_run '^step +1/1 \| loss' -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --zero 1 --data "$tmp/good.bin"

expect_ok mpi2_good_tp2_run '^step +1/1 \| loss' -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --tp 2 --data "$tmp/good.bin"

# ---- the same error on every rank: rank 0 reports it once -------------------------
expect_error mpi2_config_unknown_key 'unknown key "n_layres"' -- \
  "${MPI[@]}" -np 2 "$ZT" --config "$tmp/unknown_key.json" "${TINY[@]}"
expect_error mpi2_flag_unknown "unknown option --n-layers" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --n-layers 2
expect_error mpi3_layout_tp2 "world size 3 is not divisible" -- \
  "${MPI[@]}" -np 3 "$ZT" "${TINY[@]}" --tp 2
expect_error mpi3_layout_dp2 "does not match the world size 3" -- \
  "${MPI[@]}" -np 3 "$ZT" "${TINY[@]}" --dp 2
# tensor parallel layouts that cannot work (TINY has 2 heads)
expect_error mpi3_tp_heads "--tp 3 does not divide the 2 attention heads" -- \
  "${MPI[@]}" -np 3 "$ZT" "${TINY[@]}" --tp 3 --data "$tmp/good.bin"
expect_error mpi2_tp_above_world "world size 2 is not divisible by pp*tp = 1*4" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --tp 4
# pipeline layouts that cannot work (TINY has 1 layer: 3 units)
expect_error mpi4_more_stages_than_units "needs at least 4 units but a 1-layer model has 3" -- \
  "${MPI[@]}" -np 4 "$ZT" "${TINY[@]}" --pp 4 --data "$tmp/good.bin"
expect_error mpi2_partition_gap "is not in any stage" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --pp 2 --partition 0:1,2:3 --data "$tmp/good.bin"
expect_error mpi2_partition_overlap "is in both stage" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --pp 2 --partition 0:2,1:3 --data "$tmp/good.bin"
expect_error mpi2_schedule_unknown "--schedule 'zigzag' is not known" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --pp 2 --schedule zigzag --data "$tmp/good.bin"
expect_error mpi2_data_truncated "is truncated" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --data "$tmp/truncated.bin"
expect_error mpi2_data_missing "cannot open data file" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --data "$tmp/nope.bin"
expect_error mpi2_log_dir_missing "cannot write the log file" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --zero 1 --data "$tmp/good.bin" --log "$tmp/no/such/dir/log.jsonl"

# ---- an error on one rank only (e.g. a file missing on one node; here MPMD with
# different arguments): the failing rank's message once, and the job still ends ------
expect_error mpi2_data_truncated_on_rank1 "is truncated" -- \
  "${MPI[@]}" -np 1 "$ZT" "${TINY[@]}" --data "$tmp/good.bin" : -np 1 "$ZT" "${TINY[@]}" --data "$tmp/truncated.bin"
expect_error mpi2_config_missing_on_rank1 "cannot open config file" -- \
  "${MPI[@]}" -np 1 "$ZT" "${TINY[@]}" --data "$tmp/good.bin" : -np 1 "$ZT" --config "$tmp/nope.json" "${TINY[@]}" --data "$tmp/good.bin"
# a checkpoint shard that rank 1 verifies (files are dealt out over the ranks) is corrupt
"${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --zero 1 --steps 2 --data "$tmp/good.bin" --ckpt-dir "$tmp/ck" \
  >"$tmp/ck.out" 2>&1 || { show "$tmp/ck.out"; exit 1; }
printf '\x55' | dd of="$tmp/ck/step-2/shard-pp0-tp0-dp1.safetensors" bs=1 seek=2000 conv=notrunc status=none
expect_error mpi2_shard_corrupt_on_rank1 "shard-pp0-tp0-dp1.safetensors is corrupt" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --zero 1 --steps 3 --data "$tmp/good.bin" --resume "$tmp/ck"

# an error found by one rank is printed once, by rank 0, with the finder's rank: one
# "zerotrain: error" line in all (was the finder's line and rank 0's "rank 1 failed during
# setup (its message is above)")
for c in mpi2_data_truncated_on_rank1 mpi2_config_missing_on_rank1 mpi2_shard_corrupt_on_rank1; do
  n=$(grep -c "zerotrain: error" "$tmp/$c.err")
  if [ "$n" = 1 ] && grep -q "zerotrain: error: (rank 1) " "$tmp/$c.err"; then
    echo "ok   ${c}_once: $(grep "zerotrain: error" "$tmp/$c.err")"
  else echo "FAIL ${c}_once: $n error lines"; show "$tmp/$c.err"; failed+=("$c: $n error lines"); fi
done

# --schedule interleaved: a success control, then each bad combination refused once
INTER=(--pp 2 --schedule interleaved --virtual-stages 2 --data "$tmp/good.bin")
expect_ok mpi2_interleaved_run '^step +1/1 \| loss' -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" "${INTER[@]}" --n-layer 2 --grad-accum 2 \
  --partition 0:1,1:2,2:3,3:4
expect_error mpi2_virtual_without_interleaved "--virtual-stages 2 needs --schedule interleaved" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --pp 2 --virtual-stages 2 --grad-accum 2
expect_error mpi2_virtual_zero "--virtual-stages must be at least 1 (got 0)" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --pp 2 --virtual-stages 0
expect_error mpi2_interleaved_one_chunk "needs --virtual-stages 2 or more" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --pp 2 --schedule interleaved --grad-accum 2
expect_error mpi2_interleaved_pp1 "--schedule interleaved needs --pp 2 or more (got --pp 1)" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" --dp 2 --schedule interleaved --virtual-stages 2
expect_error mpi2_interleaved_micro "--grad-accum 3 is not a multiple of --pp 2; use --grad-accum 4" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" "${INTER[@]}" --n-layer 2 --grad-accum 3
expect_error mpi2_interleaved_few_layers "= 4 chunks, but the model has only 3 units" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" "${INTER[@]}" --grad-accum 2
expect_error mpi2_interleaved_uniform "--pp 2 x --virtual-stages 2 = 4 chunks: --pp 4 above" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" "${INTER[@]}" --n-layer 2 --grad-accum 2
expect_error mpi2_interleaved_sample "under --schedule interleaved a rank's layers are not contiguous" -- \
  "${MPI[@]}" -np 2 "$ZT" "${TINY[@]}" "${INTER[@]}" --n-layer 2 --grad-accum 2 --sample-every 1
# (interleaved through host staging runs now: tests/sh/interleaved_equivalence.sh; NCCL between
# GPUs, the one path refused, cannot be reached on the CPU)

report_and_exit cli_errors_mpi
