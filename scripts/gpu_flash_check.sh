#!/usr/bin/env bash
# The GPU checks of --cuda-attention flash (issue 34) in one short command (under 200 s on an
# H200 with 16 cores): build for sm_90 only, the flash op test and the cuBLASLt epilogues'
# (gemm_epilogue_bf16) against the CPU (their worst error/bound lines), compute-sanitizer
# memcheck and racecheck on its small shapes, then GPT-2 124M B16 T1024 bf16 --tf32 steps
# with --cuda-attention blocked and flash (ms/step, losses side by side), flash's --profile
# table, PyTorch's bf16 eager step on the same shape (the machine's calibration); last
# tests/sh/cuda_train.sh (20-step runs against the CPU's, a bf16 one with --cuda-attention
# flash).
#
#   bash scripts/gpu_flash_check.sh [DIR]     # results into DIR (default $OUT, else
#                                             # build/flash_check): summary.txt, one log a step
#   GPU_ARCH="-gencode arch=compute_80,code=sm_80" STEPS=8 bash scripts/gpu_flash_check.sh
#
# Without a GPU (nvidia-smi -L fails) every step prints SKIP: a dry run of the script.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

DIR=${1:-${OUT:-build/flash_check}}
PY=${PYTHON:-python3}
ARCH=${GPU_ARCH:--gencode arch=compute_90,code=sm_90}
STEPS=${STEPS:-6}
TOKENS=build/bench/gpu_tokens.bin
mkdir -p "$DIR"
SUM=$DIR/summary.txt
: > "$SUM"

note() { echo "$*" | tee -a "$SUM"; }
have_gpu() { nvidia-smi -L > /dev/null 2>&1; }

# step NAME SECONDS CMD...: CMD's output into DIR/NAME.log, a line in the summary.
step() {
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    if ! have_gpu; then
        note "SKIP $name: no GPU (nvidia-smi -L)"
        return 1
    fi
    timeout "$limit" "$@" > "$DIR/$name.log" 2>&1
    rc=$?
    note "$([ $rc = 0 ] && echo ok || echo "FAIL rc=$rc") $name ($((SECONDS - t0)) s): $*"
    return $rc
}

# The step time and losses of a run's --log: median ms of the steps after the first two.
step_summary() {
    "$PY" - "$@" << 'EOF'
import json, statistics, sys
runs = {}
for path in sys.argv[1:]:
    rows = [json.loads(l) for l in open(path) if l.startswith('{"step"')]
    runs[path] = rows
    ms = [r["ms"] for r in rows[2:]] or [r["ms"] for r in rows]
    if ms:
        med = statistics.median(ms)
        print(f"{path}: {len(rows)} steps, median {med:.1f} ms/step after the first two "
              f"({16 * 1024 / med * 1e3:.0f} tokens/s), best {min(ms):.1f}")
paths = list(runs)
if len(paths) == 2:
    a, b = (runs[p] for p in paths)
    for x, y in zip(a, b):
        print(f"  step {x['step']}: loss {x['loss']:.6f} vs {y['loss']:.6f} "
              f"(diff {y['loss'] - x['loss']:+.2e})")
EOF
}

have_gpu && nvidia-smi -L | tee -a "$SUM"
step build 120 make -j16 cuda CUDA_ARCH="$ARCH" && grep -c "warning" "$DIR/build.log" |
    sed 's/^/build warnings: /' | tee -a "$SUM"
step test_flash 45 build/zt_tests_cuda cuda_bf16_attention_flash cuda_bf16_attention \
    cuda_bf16_gemm_epilogue
grep -E "worst|max\|diff\||two runs|PASS|FAIL" "$DIR/test_flash.log" 2> /dev/null >> "$SUM"
for tool in memcheck:30 racecheck:40; do
    ZT_FLASH_TEST_SHAPES=small step "sanitize_${tool%:*}" "${tool#*:}" compute-sanitizer \
        --tool "${tool%:*}" \
        --error-exitcode 1 build/zt_tests_cuda cuda_bf16_attention_flash
    tail -n 3 "$DIR/sanitize_${tool%:*}.log" 2> /dev/null >> "$SUM"
done
if have_gpu; then
    [ -f "$TOKENS" ] || "$PY" bench/make_tokens.py "$TOKENS" $((1 << 21)) > /dev/null
fi
ARGS=(--backend cuda --model gpt2 --micro-batch 16 --seq 1024 --warmup 0 --lr-schedule constant
    --val-every 0 --data "$TOKENS" --param-dtype bf16 --tf32 --steps "$STEPS")
for att in blocked flash; do
    step "step_$att" 30 build/zerotrain-cuda "${ARGS[@]}" --cuda-attention $att \
        --log "$DIR/step_$att.jsonl"
done
step profile_flash 30 build/zerotrain-cuda "${ARGS[@]}" --cuda-attention flash --profile \
    --log "$DIR/profile_flash.jsonl" && tail -n 30 "$DIR/profile_flash.log" >> "$SUM"
[ -s "$DIR/step_blocked.jsonl" ] && [ -s "$DIR/step_flash.jsonl" ] &&
    step_summary "$DIR/step_blocked.jsonl" "$DIR/step_flash.jsonl" | tee -a "$SUM"
# the machine's calibration: PyTorch bf16 autocast eager on the same shape, same command
step torch_bf16 90 /usr/bin/python3 bench/torch_step.py --device cuda --vocab 50304 \
    --autocast bf16 --tf32 --micro-batch 16 --seq 1024 --steps "$STEPS" --warmup-steps 3 &&
    grep -E "^step|^RESULT" "$DIR/torch_bf16.log" | tail -n 4 >> "$SUM"
# whole training runs against the CPU's, the flash bf16 run among them (about 15 s there)
step cuda_train 45 bash tests/sh/cuda_train.sh
tail -n 8 "$DIR/cuda_train.log" 2> /dev/null >> "$SUM"
exit 0
