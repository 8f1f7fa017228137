#!/usr/bin/env bash
# One-GPU training step: zerotrain's CUDA backend against PyTorch on the same GPU, in the same
# command (issue 25): GPT-2 124M, micro-batch 16, sequence 1024, AdamW, clip 1.0, random tokens.
#
#   bash bench/gpu_step.sh [DIR]           # the table into DIR/gpu_step.md (DIR: $OUT, else
#                                          # build/bench/gpu), the section into bench/RESULTS.md
#   NO_RESULTS=1 bash bench/gpu_step.sh    # leave bench/RESULTS.md alone
#   MODES="bf16" STEPS=20 B=8 T=1024 TORCH_COMPILE=0 bash bench/gpu_step.sh
#
# Per mode, one run each, one after the other (nothing else on the GPU):
#   fp32  build/zerotrain-cuda --backend cuda             torch_step.py --device cuda
#   tf32  ... --tf32                                      ... --tf32
#   bf16  ... --param-dtype bf16 --tf32                   ... --autocast bf16 --tf32
#         (TF32 on both sides: PyTorch's autocast leaves some products in fp32, zerotrain's
#         attention products are fp32)
# and, with TORCH_COMPILE=1 (the default), PyTorch's bf16 under torch.compile (--compile) beside
# the same zerotrain bf16 run. zerotrain runs
#   build/zerotrain-cuda --backend cuda --model gpt2 --micro-batch B --seq T --steps STEPS
#       --warmup 0 --lr-schedule constant --val-every 0 --data build/bench/gpu_tokens.bin --log FILE
# and its step time is the log's "ms" (the host's clock around the step, which ends waiting
# for the GPU), the first WARMUP (2) steps skipped; PyTorch runs bench/torch_step.py
# --device cuda --micro-batch B --seq T --vocab 50304 --steps STEPS --warmup-steps 5 (CUDA
# events around each step; 50304: the anchor's padded vocabulary, the same lm-head product as
# zerotrain's 50257 padded to 50304). Figures: median (and best) ms/step, tokens/s, model
# TFLOP/s (6 N B T + 12 L T^2 C B per step, as bench/step.sh and zerotrain's progress line);
# speed as PyTorch's ms / zerotrain's (above 1: zerotrain faster). Memory: zerotrain's
# allocator peak (the log's end-of-run "mem_peak_total": every cudaMalloc it made, by category
# in its "mem_peak"), PyTorch's torch.cuda.max_memory_allocated, and for both the GPU's
# memory.used sampled by nvidia-smi every 100 ms during the run, less what was used before it
# (the whole process: CUDA context, cuBLAS workspace, caching allocator slack).
#
# Without a GPU (no nvidia-smi -L, or PyTorch sees none) it prints one SKIP line and exits 77.
#
# BACKEND=cpu is only a DRY RUN OF THIS SCRIPT on a machine without a GPU (its figures mean
# nothing): zerotrain --backend cpu (ZT, default build/zerotrain) and torch_step.py --device
# cpu, modes fp32 and bf16 only (tf32 and torch.compile are GPU modes), no nvidia-smi, never
# into bench/RESULTS.md. With a tiny model it checks the runs, the parsing and the table:
#   BACKEND=cpu MODEL_ARGS="--n-layer 2 --n-head 4 --n-embd 64" B=2 T=64 STEPS=4 \
#       bash bench/gpu_step.sh /tmp/dry
# MODEL_ARGS are added to both programs' flags (the same names in both).
set -euo pipefail
cd "$(dirname "$0")/.."

BACKEND=${BACKEND:-cuda}
PY=${PYTHON:-/usr/bin/python3}
B=${B:-16}
T=${T:-1024}
STEPS=${STEPS:-10}
WARMUP=2
TORCH_WARMUP=${TORCH_WARMUP:-5}
MODES=${MODES:-fp32 tf32 bf16}
TORCH_COMPILE=${TORCH_COMPILE:-1}
MODEL_ARGS=${MODEL_ARGS:-}
DIR=${1:-${OUT:-build/bench/gpu}}
LOGS=build/bench/gpu
TITLE="## One GPU: training step vs PyTorch"
mkdir -p "$DIR" "$LOGS"
[ "$STEPS" -gt "$WARMUP" ] || { echo "gpu_step.sh: STEPS must exceed $WARMUP" >&2; exit 1; }

if [ "$BACKEND" = cuda ]; then
    ZT=${ZT:-build/zerotrain-cuda}
    if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
        echo "SKIP: no GPU here (nvidia-smi -L finds none); BACKEND=cpu is a dry run of this script"
        exit 77
    fi
    [ -x "$ZT" ] || { echo "gpu_step.sh: $ZT missing; run make -j16 cuda first" >&2; exit 1; }
    "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null || {
        echo "SKIP: $PY's torch sees no CUDA device (PYTHON=... names the python with CUDA torch)"
        exit 77; }
    TH_DEV=(--device cuda --vocab 50304)
elif [ "$BACKEND" = cpu ]; then
    ZT=${ZT:-build/zerotrain}
    [ -x "$ZT" ] || { echo "gpu_step.sh: $ZT missing; run make -j2 all first" >&2; exit 1; }
    echo "gpu_step.sh: BACKEND=cpu: a dry run of this script, not a measurement" >&2
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
    NO_RESULTS=1 TORCH_COMPILE=0
    TH_DEV=(--device cpu --vocab 50304)
else
    echo "gpu_step.sh: BACKEND must be cuda or cpu (got $BACKEND)" >&2; exit 1
fi

DATA=build/bench/gpu_tokens.bin
[ -f "$DATA" ] || "$PY" bench/make_tokens.py "$DATA" $((1 << 21))

# nvidia-smi's memory.used every 100 ms while a run lasts: smi_start before it, smi_peak
# after it prints the largest sample less the one before the run, in bytes ("" without GPU).
SMI_PID="" SMI_BASE=0 SMI_FILE=""
smi_start() { # name
    SMI_FILE=$LOGS/$1.smi
    [ "$BACKEND" = cuda ] || return 0
    SMI_BASE=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | head -1)
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 100 > "$SMI_FILE" &
    SMI_PID=$!
}
smi_peak() {
    [ -n "$SMI_PID" ] || { echo ""; return 0; }
    kill "$SMI_PID" 2>/dev/null || true
    wait "$SMI_PID" 2>/dev/null || true
    SMI_PID=""
    sort -n "$SMI_FILE" | tail -1 | awk -v b="$SMI_BASE" '{ printf "%.0f\n", ($1 - b) * 1048576 }'
}
trap '[ -z "$SMI_PID" ] || kill "$SMI_PID" 2>/dev/null || true' EXIT

# One run of zerotrain: "ms1,ms2,... mem_peak_total smi_bytes" on stdout.
zt_run() { # name flags...
    local name=$1; shift
    echo "== zerotrain $name ($STEPS steps)" >&2
    smi_start "zt_$name"
    # shellcheck disable=SC2086 # MODEL_ARGS are words
    "$ZT" --backend "$BACKEND" --model gpt2 $MODEL_ARGS --micro-batch "$B" --seq "$T" \
        --steps "$STEPS" --warmup 0 --lr-schedule constant --val-every 0 --data "$DATA" \
        --log "$LOGS/zt_$name.jsonl" "$@" > "$LOGS/zt_$name.out" 2>&1 ||
        { smi_peak >/dev/null; tail -20 "$LOGS/zt_$name.out" >&2; return 1; }
    local smi; smi=$(smi_peak)
    "$PY" - "$LOGS/zt_$name.jsonl" "$WARMUP" "${smi:--}" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ms = [r["ms"] for r in rows if "ms" in r and "step" in r][int(sys.argv[2]):]
peaks = [r["mem_peak_total"] for r in rows if "mem_peak_total" in r]
print(",".join(f"{m:.3f}" for m in ms) or "-", f"{max(peaks):.0f}" if peaks else "-", sys.argv[3])
EOF
}

# One run of bench/torch_step.py: "ms1,ms2,... peak_allocated smi_bytes" on stdout.
th_run() { # name flags...
    local name=$1; shift
    echo "== PyTorch $name ($STEPS steps after $TORCH_WARMUP)" >&2
    smi_start "torch_$name"
    # shellcheck disable=SC2086 # MODEL_ARGS are words
    "$PY" bench/torch_step.py "${TH_DEV[@]}" $MODEL_ARGS --micro-batch "$B" --seq "$T" \
        --steps "$STEPS" --warmup-steps "$TORCH_WARMUP" "$@" > "$LOGS/torch_$name.out" 2>&1 ||
        { smi_peak >/dev/null; tail -20 "$LOGS/torch_$name.out" >&2; return 1; }
    local smi; smi=$(smi_peak)
    local ms peak
    ms=$(sed -n 's/^step [0-9]*: .* \([0-9.]*\) ms$/\1/p' "$LOGS/torch_$name.out" | paste -sd, -)
    peak=$(sed -n 's/^RESULT .*peak_mem_bytes=\([0-9]*\).*/\1/p' "$LOGS/torch_$name.out")
    echo "${ms:--} ${peak:--} ${smi:--}"
}

rows=()
fail=0
for mode in $MODES; do
    case $mode in
    fp32) zf=(); tf=() ;;
    tf32) zf=(--tf32); tf=(--tf32) ;;
    bf16) zf=(--param-dtype bf16 --tf32); tf=(--autocast bf16 --tf32) ;;
    *) echo "gpu_step.sh: unknown mode $mode (fp32, tf32, bf16)" >&2; exit 1 ;;
    esac
    if [ "$BACKEND" = cpu ]; then
        [ "$mode" = tf32 ] && { echo "== tf32: a GPU mode, not in the dry run" >&2; continue; }
        [ "$mode" = bf16 ] && zf=(--param-dtype bf16) tf=(--autocast bf16)
    fi
    z=$(zt_run "$mode" "${zf[@]}") || { fail=1; z="- - -"; }
    t=$(th_run "$mode" "${tf[@]}") || { fail=1; t="- - -"; }
    rows+=("$mode $z $t")
    if [ "$mode" = bf16 ] && [ "$TORCH_COMPILE" = 1 ]; then
        t=$(th_run bf16c --autocast bf16 --tf32 --compile) || { fail=1; t="- - -"; }
        rows+=("bf16c $z $t")
    fi
done

# The GPU, the software, and the table.
if [ "$BACKEND" = cuda ]; then
    GPU=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader -i 0)
else
    GPU="none (BACKEND=cpu dry run on $(nproc) cores: the figures mean nothing)"
fi
TORCH_VER=$("$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')
ZT_VER=$(git describe --always --dirty --tags 2>/dev/null || echo unknown)
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
table=$("$PY" - "$B" "$T" "$MODEL_ARGS" "${rows[@]}" <<'EOF'
import statistics, sys
B, T, margs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split()
shape = {"--n-layer": 12, "--n-embd": 768, "--vocab": 50304, "--n-ctx": 1024}
for k, v in zip(margs[::2], margs[1::2]):
    if k in shape:
        shape[k] = int(v)
L, C, V, NC = shape["--n-layer"], shape["--n-embd"], shape["--vocab"], shape["--n-ctx"]
Vp = (V + 127) // 128 * 128  # the lm-head product runs over the padded vocabulary
N = Vp * C + NC * C + L * (12 * C * C + 13 * C) + 2 * C
flops = 6 * N * B * T + 12 * L * T * T * C * B
GIB = 2 ** 30
label = {"fp32": "fp32 (TF32 off)", "tf32": "TF32", "bf16": "bf16 (PyTorch autocast)",
         "bf16c": "bf16 (PyTorch torch.compile)"}
def ms_list(s):
    return [float(x) for x in s.split(",") if x] if s != "-" else []
def gib(s):
    return f"{int(s) / GIB:.2f}" if s not in ("-", "") else "-"
print("| mode | zerotrain ms/step (best) | zerotrain tokens/s | zerotrain TFLOP/s | "
      "PyTorch ms/step (best) | PyTorch tokens/s | PyTorch TFLOP/s | speed: torch / zerotrain "
      "(best) | zerotrain GiB: allocator, nvidia-smi | PyTorch GiB: allocated, nvidia-smi |")
print("|---" * 10 + "|")
for row in sys.argv[4:]:
    mode, zms, zmem, zsmi, tms, tmem, tsmi = row.split()
    z, t = ms_list(zms), ms_list(tms)
    def cells(xs):
        if not xs:
            return "failed | - | -"
        m = statistics.median(xs)
        return f"{m:.1f} ({min(xs):.1f}) | {B * T / m * 1e3:,.0f} | {flops / m / 1e9:.3g}"
    ratio = "-"
    if z and t:
        ratio = (f"{statistics.median(t) / statistics.median(z):.2f}x "
                 f"({min(t) / min(z):.2f}x)")
    zcell = "(the bf16 row's run)" if mode == "bf16c" else cells(z)
    if mode == "bf16c":
        zcell += " | | "
    print(f"| {label[mode]} | {zcell} | {cells(t)} | {ratio} | {gib(zmem)}, {gib(zsmi)} | "
          f"{gib(tmem)}, {gib(tsmi)} |")
EOF
)
CMD="MODES=\"$MODES\" STEPS=$STEPS B=$B T=$T TORCH_WARMUP=$TORCH_WARMUP TORCH_COMPILE=$TORCH_COMPILE"
CMD+="${MODEL_ARGS:+ MODEL_ARGS=\"$MODEL_ARGS\"} bash bench/gpu_step.sh"
DRY=""
[ "$BACKEND" = cpu ] && DRY="
DRY RUN (BACKEND=cpu): zerotrain --backend cpu and PyTorch on the CPU; this only checks the script."
section="$TITLE
$DRY
GPT-2 ${MODEL_ARGS:-124M}${MODEL_ARGS:+ (gpt2 with these flags)}, micro-batch $B, sequence $T, AdamW, clip 1.0, random tokens,
one GPU: $GPU. Measured $DATE; zerotrain $ZT_VER, PyTorch $TORCH_VER. Each program ran
alone on the GPU, one after the other, $STEPS steps each: zerotrain's first $WARMUP
skipped (the log's \"ms\", host clock around the step, which ends waiting for the GPU), PyTorch
after $TORCH_WARMUP warm-up steps (CUDA events around each step). Median (best) ms/step; tokens/s and
TFLOP/s (model flops: 6 N B T + 12 L T² C B, N over the padded vocabulary) from the median.
speed = PyTorch's ms / zerotrain's (above 1: zerotrain is faster). Memory in GiB: zerotrain's
allocator peak (every cudaMalloc, the log's mem_peak_total), PyTorch's max_memory_allocated
over the timed steps, and for both nvidia-smi's memory.used (every 100 ms, less the idle
figure: the whole process, CUDA context and caching slack included). Targets (issue 25): bf16
ahead of llm.c's 319k tokens/s at no more than its 12.4 GiB; the moonshot, torch.compile's 446k.

$table

Command: \`$CMD\`, which runs per mode

    build/zerotrain-cuda --backend cuda --model gpt2 --micro-batch $B --seq $T --steps $STEPS --warmup 0 \\
        --lr-schedule constant --val-every 0 --data build/bench/gpu_tokens.bin --log FILE \\
        [--tf32 | --param-dtype bf16 --tf32]
    python3 bench/torch_step.py --device cuda --vocab 50304 --micro-batch $B --seq $T --steps $STEPS \\
        --warmup-steps $TORCH_WARMUP [--tf32 | --autocast bf16 --tf32 [--compile]]
"
printf '%s\n' "$section" > "$DIR/gpu_step.md"
echo
echo "$table"
echo "wrote $DIR/gpu_step.md (logs in $LOGS)" >&2
if [ -z "${NO_RESULTS:-}" ]; then
    printf '%s\n' "$section" | "$PY" bench/results_section.py bench/RESULTS.md "$TITLE"
    echo "wrote bench/RESULTS.md ($TITLE)" >&2
fi
exit $fail
