#!/usr/bin/env bash
# The memory planner against the runtime: for real configurations on this machine, every
# rank's predicted bytes per category (`zerotrain memory --json`, one process) against
# what the trainer measured (its end-of-run record per rank in --log: the allocator's
# peak per category, the total and the RSS peak), and the savings tables: --zero 0 -> 1
# across dp, fp32 -> 8-bit optimizer, the partition methods per stage, the chunked loss,
# fp32 -> bf16 per layout, --recompute none / selective / full with and without
# --sequence-parallel, and (planner only: group "state") the model-state bytes per
# parameter of fp32 and bf16 + ZeRO-1 for the GPT-2 sizes at dp 1..64 against their formulas.
# Markdown on stdout, the section "## Memory planner: predicted vs measured" in
# bench/RESULTS.md (bench/results_section.py) and bench/memory.png.
#
#   bash bench/memory.sh              # every cell: plan, train 1 step, compare
#   bash bench/memory.sh --dry        # plans only (nothing trained, RESULTS.md untouched;
#                                     # the PNG goes to build/bench/memory_dry.png)
#   NO_RESULTS=1 bash bench/memory.sh # tables only
#   MEM_GROUPS="zero loss" bash bench/memory.sh
#
# Each cell is
#   build/zerotrain memory --json FLAGS                       (the prediction)
#   mpirun --oversubscribe --allow-run-as-root -np W build/zerotrain train FLAGS --steps 1
#       --warmup 0 --val-every 0 --data build/bench/zero_tokens.bin --log FILE
# with the same FLAGS (the layout given explicitly: --dp, --pp). The model: GPT-2 with 6
# layers, 6 heads, 384 channels, vocabulary 50257, n_ctx 64 (30M parameters: the vocabulary
# makes the embedding and the loss matter). Up to 8 ranks time-slice this 2-core machine:
# fine, nothing is timed. The data: 2^16 random token ids (bench/make_tokens.py).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-/usr/bin/python3}
ZT=build/zerotrain
OUT=build/bench
DRY=0
[ "${1:-}" = "--dry" ] && DRY=1
MEM_GROUPS=${MEM_GROUPS:-"zero optim partition loss bf16 recompute state"}
MODEL=(--n-layer 6 --n-head 6 --n-embd 384 --vocab 50257 --n-ctx 64 --seq 64)
MPIRUN=(mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS)
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
[ -x "$ZT" ] || { echo "memory.sh: $ZT missing; run make -j2 all first" >&2; exit 1; }
"$PY" bench/memory_report.py --selftest >&2

DATA=$OUT/zero_tokens.bin
[ -f "$DATA" ] || "$PY" bench/make_tokens.py "$DATA" 65536

MANIFEST=$OUT/memory_manifest.jsonl
: >"$MANIFEST"

# cell NAME GROUP LABEL WORLD FLAGS...: plans, trains (unless --dry or PLAN_ONLY=1), adds a
# manifest line. MODEL_FLAGS replaces MODEL (the state group's GPT-2 presets).
cell() {
    local name=$1 group=$2 label=$3 world=$4; shift 4
    local plan=$OUT/mem_$name.plan.json log=$OUT/mem_$name.jsonl
    local model=("${MODEL[@]}")
    [ -n "${MODEL_FLAGS:-}" ] && read -r -a model <<<"$MODEL_FLAGS"
    [ -n "${PLAN_ONLY:-}" ] || echo "== $name: $*" >&2
    "$ZT" memory --json "${model[@]}" "$@" >"$plan"
    if [ $DRY -eq 0 ] && [ -z "${PLAN_ONLY:-}" ]; then
        rm -f "$log"
        "${MPIRUN[@]}" -np "$world" "$ZT" train "${MODEL[@]}" "$@" --steps 1 --warmup 0 \
            --val-every 0 --data "$DATA" --log "$log" >"$OUT/mem_$name.out" 2>&1 ||
            { cat "$OUT/mem_$name.out" >&2; exit 1; }
    fi
    "$PY" - "$MANIFEST" "$name" "$group" "$label" "$world" "$plan" "$log" "$*" \
        "${PLAN_ONLY:-}" <<'EOF'
import json, sys
m, name, group, label, world, plan, log, flags, plan_only = sys.argv[1:]
cell = {"name": name, "group": group, "label": label, "world": int(world), "plan": plan,
        "log": log, "flags": flags}
if plan_only:
    cell["plan_only"] = True
with open(m, "a") as f:
    f.write(json.dumps(cell) + "\n")
EOF
}

for g in $MEM_GROUPS; do
    case $g in
    zero) # --zero 0 -> 1 across dp
        for dp in 1 2 4 8; do
            for z in 0 1; do
                cell "zero_dp${dp}_z${z}" zero "dp $dp, zero $z" "$dp" --dp "$dp" --zero "$z" --micro-batch 1
            done
        done ;;
    optim) # fp32 -> 8-bit AdamW
        for lay in "1 0" "2 1" "4 1"; do
            set -- $lay
            for o in adamw adamw8bit; do
                cell "optim_${o}_dp$1_z$2" optim "dp $1, zero $2" "$1" --dp "$1" --zero "$2" \
                    --optim "$o" --micro-batch 1
            done
        done ;;
    partition) # the partition methods, per stage: 4 stages, 8 micro-batches under 1F1B
        for p in uniform parameters memory; do
            cell "part_$p" partition "$p" 4 --dp 1 --pp 4 --partition "$p" --grad-accum 8 \
                --micro-batch 8
        done ;;
    loss) # the chunked loss: 512 tokens per micro-batch, the logits of a chunk at a time
        for c in 64 0 512; do
            label=$([ "$c" = 0 ] && echo "0 (automatic: 256)" || echo "$c")
            [ "$c" = 512 ] && label="512 (the whole micro-batch)"
            cell "loss_chunk$c" loss "$label" 1 --dp 1 --micro-batch 8 --loss-chunk "$c"
        done ;;
    bf16) # fp32 -> bf16 (--param-dtype) per layout: 1 rank, dp 2 zero 1, pp 2, tp 2
        for lay in "1rank:1 rank:1:--dp 1" "dp2z1:dp 2, zero 1:2:--dp 2 --zero 1" \
                   "pp2:pp 2:2:--dp 1 --pp 2" "tp2:tp 2:2:--dp 1 --tp 2"; do
            IFS=: read -r tag label world flags <<<"$lay"
            for dt in fp32 bf16; do
                # shellcheck disable=SC2086 # flags are words
                cell "bf16_${tag}_$dt" bf16 "$label, $dt" "$world" $flags --param-dtype "$dt" \
                    --micro-batch 4
            done
        done ;;
    recompute) # --recompute none / selective / full, and --sequence-parallel with tp 2
        for lay in "1rank:1 rank:1:--dp 1" "tp2:tp 2:2:--dp 1 --tp 2" \
                   "tp2sp:tp 2, sp:2:--dp 1 --tp 2 --sequence-parallel"; do
            IFS=: read -r tag label world flags <<<"$lay"
            for rc in none selective full; do
                # shellcheck disable=SC2086 # flags are words
                cell "rc_${tag}_$rc" recompute "$label, $rc" "$world" $flags --recompute "$rc" \
                    --micro-batch 8
            done
        done ;;
    state) # planner only (nothing trained: dp up to 64 does not run here): model state per
        # parameter for the GPT-2 sizes, fp32 zero 0 / fp32, bf16 and bf16 8-bit zero 1
        echo "== state: the planner for gpt2 .. gpt2-xl at dp 1..64" >&2
        for m in gpt2 gpt2-medium gpt2-large gpt2-xl; do
            for dp in 1 2 4 8 16 32 64; do
                for c in "fp32 adamw 0" "fp32 adamw 1" "bf16 adamw 1" "bf16 adamw8bit 1"; do
                    set -- $c
                    PLAN_ONLY=1 MODEL_FLAGS="--model $m --seq 64 --micro-batch 1" \
                        cell "state_${m}_dp${dp}_$1_$2_z$3" state "$m" "$dp" --dp "$dp" \
                        --zero "$3" --param-dtype "$1" --optim "$2"
                done
            done
        done ;;
    *) echo "memory.sh: unknown group $g (zero, optim, partition, loss, bf16, recompute, state)" >&2
       exit 1 ;;
    esac
done

section=$OUT/memory_section.md
if [ $DRY -eq 1 ]; then
    { echo "## Memory planner: predicted vs measured (dry run: predictions only)"; echo
      "$PY" bench/memory_report.py "$MANIFEST" --dry --png "$OUT/memory_dry.png"; } >"$section"
    cat "$section"
    exit 0
fi
{
    echo "## Memory planner: predicted vs measured"
    echo
    echo "\`bash bench/memory.sh\` on $(nproc --all) cores ($(date -u +%Y-%m-%d)); model: GPT-2, 6 layers,"
    echo "6 heads, 384 channels, vocabulary 50257, n_ctx 64, 64 tokens per sequence; one step per"
    echo "cell, \`OMP_NUM_THREADS=1\`, up to 8 ranks on this machine. \`bench/memory.png\`: predicted"
    echo "against measured per rank, the partition methods' stages by category, the largest rank"
    echo "by category under --recompute and --sequence-parallel, and model-state bytes per"
    echo "parameter against dp for fp32 and bf16 (GPT-2 124M, the planner)."
    echo
    "$PY" bench/memory_report.py "$MANIFEST" --png bench/memory.png
} >"$section"
cat "$section"
[ -n "${NO_RESULTS:-}" ] || "$PY" bench/results_section.py bench/RESULTS.md \
    "## Memory planner: predicted vs measured" <"$section"
