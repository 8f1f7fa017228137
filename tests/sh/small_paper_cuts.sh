#!/usr/bin/env bash
# Issue 39's small ones: `launch -np 2 memory` (a one-process command) is refused before mpirun
# starts, with the reason; --val-data's help says what happens without it (the default text
# validates; with --data, nothing does); generate's --vocab is the vocabulary size only (the
# tokenizer's file is --vocab-file, and a file given to --vocab says so); a config file's type
# error suggests the user's value rather than the default; slurm_train.sbatch no longer says the
# CUDA backend trains one rank.
set -u
cd "$(dirname "$0")/../.."
ZT=${ZT:-build/zerotrain}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_paper_cuts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # name, condition (a command)
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fail=1; fi
}
has() { grep -qF -- "$2" "$1" || { echo "     $1 lacks: $2"; sed 's/^/     | /' "$1" | head -5; return 1; }; }
lacks() { ! grep -qF -- "$2" "$1" || { echo "     $1 has: $2"; return 1; }; }

"$ZT" launch -np 2 memory --model tiny > $tmp/launch.out 2>&1; rc=$?
check launch_memory_refused test $rc -eq 1
check launch_memory_reason has $tmp/launch.out "zerotrain: error: \`memory\` runs as one process"
check launch_memory_no_mpirun lacks $tmp/launch.out "mpirun"
"$ZT" launch -np 2 prepare --text x --out y > $tmp/launch2.out 2>&1
check launch_prepare_refused has $tmp/launch2.out "\`prepare\` runs as one process"

"$ZT" --help > $tmp/help.out
check val_data_help has $tmp/help.out "with --data, no validation; without, the default text's validation split"
check val_data_help_old_claim lacks $tmp/help.out "(if not set, no validation)"

"$ZT" generate --n-layer 1 --vocab README.md --prompt-ids 1 --max-new 1 > $tmp/gen.out 2>&1
check generate_vocab_number has $tmp/gen.out "--vocab README.md: --vocab is the model's vocabulary size, a whole number as in train; GPT-2's tokenizer file is --vocab-file FILE"
"$ZT" generate --help > $tmp/genhelp.out 2>&1
check generate_vocab_file_help has $tmp/genhelp.out "--vocab-file FILE  GPT-2's tokenizer file"
"$ZT" generate --n-layer 1 --n-head 2 --n-embd 32 --vocab 300 --prompt-ids 1 --max-new 1 --ids > $tmp/gen2.out 2>&1
check generate_vocab_size_works test $? -eq 0

printf '{"lr": "3e-4", "steps": 1}\n' > $tmp/c1.json
"$ZT" --config $tmp/c1.json > $tmp/c1.out 2>&1
check config_type_error_user_value has $tmp/c1.out 'write "lr": 3e-4'
printf '{"micro-batch": "16"}\n' > $tmp/c2.json
"$ZT" --config $tmp/c2.json > $tmp/c2.out 2>&1
check config_int_user_value has $tmp/c2.out 'write "micro-batch": 16'
printf '{"shuffle": "true"}\n' > $tmp/c3.json
"$ZT" --config $tmp/c3.json > $tmp/c3.out 2>&1
check config_bool_user_value has $tmp/c3.out 'write "shuffle": true'

check sbatch_cuda_claim lacks scripts/slurm_train.sbatch "trains one rank today"
check sbatch_cuda_nccl has scripts/slurm_train.sbatch "Several CUDA ranks move tensors through NCCL"
exit $fail
