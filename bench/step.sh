#!/usr/bin/env bash
# Training-step benchmark: zerotrain vs PyTorch CPU on GPT-2 124M, same machine, same run,
# fp32 and bf16 mixed precision (zerotrain --param-dtype bf16, PyTorch's bf16 autocast).
#
#   bash bench/step.sh                      # B=4 x T=64 and B=4 x T=256
#   STEPS=12 ROUNDS=1 CONFIGS="4x64 4x512" bash bench/step.sh
#   NO_RESULTS=1 bash bench/step.sh         # print the table, leave bench/RESULTS.md alone
#   ZT_BASE=/work/baseline/zerotrain bash bench/step.sh   # also another build, each round
#   EMULATE_FALLBACK=1 bash bench/step.sh   # zerotrain runs start as on a CPU OpenBLAS does
#       not know (OPENBLAS_CORETYPE=Prescott ZT_BLAS_EMULATE_FALLBACK=1: kernels/cpu/blas_core.h):
#       a build with the fix re-executes on the right kernels, one without runs Prescott's
#   TORCH_CORETYPE=Cooperlake bash bench/step.sh   # OPENBLAS_CORETYPE for PyTorch's runs
#   TORCH_PY=build/venv_torch/bin/python TORCH2=1 bash bench/step.sh   # PyTorch 2 from PyPI (a
#       venv: python3 -m venv build/venv_torch && build/venv_torch/bin/pip install torch
#       numpy) with SDPA attention and fused AdamW (bench/torch_step.py --torch2)
#   TORCH_BF16_STEPS=1 bash bench/step.sh   # fewer steps for PyTorch's bf16 autocast runs: on a
#       CPU without AVX512-BF16/AMX its bf16 matmuls are ~20x slower than fp32 (a 124M step at
#       B=4 x T=256 takes minutes); at or below WARMUP they are all timed (no warmup skipped)
#
# For each config (micro-batch x seq) it runs four series:
#   build/zerotrain --model gpt2 --micro-batch B --seq T --steps STEPS --warmup 0
#       --lr-schedule constant --val-every 0 --data build/bench/tokens.bin --log FILE --profile
#   the same with --param-dtype bf16 (bf16 weights and gradients, fp32 masters)
# reading each step's "ms" from the JSON log, then
#   /usr/bin/python3 bench/torch_step.py --micro-batch B --seq T ...
#   the same with --autocast bf16 (forward + loss under torch.autocast, fp32 parameters)
# (plain AdamW, grad clip 1.0, as zerotrain's defaults), one after the other, ROUNDS (2)
# times, so that a busy spell of a shared machine hits every series. The first WARMUP (2) steps
# of each run are skipped; the figures are the median and the best of the rest, pooled
# over the rounds (the best step is the one least disturbed by other work). Each side's BLAS
# kernels (OpenBLAS's core, as the run had it) are printed and written with the table, and so
# are the path of zerotrain's bf16 products (its banner's "bf16 GEMM" line: oneDNN where the
# CPU has AVX512-BF16 or AMX-BF16, else the fp32 fallback) and those flags from lscpu.
# ZT_BASE runs fp32 only (an older build may have no bf16).
#
# Threads: both get OMP_NUM_THREADS=2 (this machine has 2 cores) and OMP_WAIT_POLICY=PASSIVE
# (Debian's torch needs it to stop its pool spinning against BLAS; for zerotrain, which
# has one pool, passive, active and the default measured the same).
#
# Flops per step (model flops, what the step must do, not what we execute):
#   6 * N_params * tokens            matmuls forward + backward (N_params = 124.44M, tied
#                                    wte counted once: it is the lm-head matmul)
#   + 12 * L * T * T * C * B         attention scores and P@V, forward + backward (full
#                                    T x T, as PaLM's MFU formula)
# GFLOP/s = flops / step time, given as a fraction of 420 GFLOP/s (docs/machine.md's 2-core
# fp32 peak, an AVX-512 host) and of the fp32 FMA peak of the machine at hand, measured
# in this run by a small FMA loop (PEAK_GFLOPS=... overrides it).
#
# The data: 2^20 random token ids < 50257 in an llm.c token file (256 int32 header
# [20240520, 1, N, 0...], then N uint16), written once to build/bench/tokens.bin.
set -euo pipefail
cd "$(dirname "$0")/.."

STEPS=${STEPS:-6}
ROUNDS=${ROUNDS:-2}
WARMUP=2
CONFIGS=${CONFIGS:-"4x64 4x256"}
PY=${PY:-/usr/bin/python3}
ZT=${ZT:-build/zerotrain}
ZT_BASE=${ZT_BASE:-}
EMULATE_FALLBACK=${EMULATE_FALLBACK:-}
TORCH_CORETYPE=${TORCH_CORETYPE:-}
TORCH_BF16_STEPS=${TORCH_BF16_STEPS:-$STEPS}
TORCH_PY=${TORCH_PY:-$PY}
TORCH2=${TORCH2:-}
TORCH_ARGS=()
[ -n "$TORCH2" ] && TORCH_ARGS=(--torch2)
T16_WARMUP=$WARMUP
[ "$TORCH_BF16_STEPS" -gt "$WARMUP" ] || T16_WARMUP=0
OUT=build/bench
mkdir -p "$OUT"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

[ -x "$ZT" ] || { echo "step.sh: $ZT missing; run make -j2 all first" >&2; exit 1; }
[ "$STEPS" -gt "$WARMUP" ] || { echo "step.sh: STEPS must exceed $WARMUP" >&2; exit 1; }

if [ ! -f "$OUT/tokens.bin" ]; then
    "$PY" - "$OUT/tokens.bin" <<'EOF'
import sys
import numpy as np
n = 1 << 20
header = np.zeros(256, dtype="<i4")
header[:3] = [20240520, 1, n]
tokens = np.random.default_rng(0).integers(0, 50257, n).astype("<u2")
with open(sys.argv[1], "wb") as f:
    f.write(header.tobytes())
    f.write(tokens.tobytes())
EOF
fi

# fp32 FMA peak on OMP_NUM_THREADS threads: 12 independent chains of FMAs per thread
# (enough to cover the FMA latency), as wide as the CPU's vectors (16 lanes with AVX-512, 8
# with AVX2: an 8-lane probe on an AVX-512 core measures half its peak). Probed before
# each config and the best kept: on a shared machine one probe can land in a busy moment.
cat > "$OUT/peak.c" <<'EOF'
#include <omp.h>
#include <stdio.h>
#ifdef __AVX512F__
#define W 16
#else
#define W 8
#endif
typedef float vw __attribute__((vector_size(4 * W)));
int main(void) {
    const long iters = 20000000;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        float sink = 0;
        int nt = 1;
        double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : sink)
        {
            vw a[12], m, c;
            for (int k = 0; k < W; k++) m[k] = 1.0000001f, c[k] = 1e-7f;
            for (int j = 0; j < 12; j++) a[j] = m * (float)j;
            for (long i = 0; i < iters; i++)
#pragma GCC unroll 12
                for (int j = 0; j < 12; j++) a[j] = a[j] * m + c;
            for (int j = 0; j < 12; j++)
                for (int k = 0; k < W; k++) sink += a[j][k];
#pragma omp single
            nt = omp_get_num_threads();
        }
        double g = 2.0 * W * 12 * iters * nt / (omp_get_wtime() - t0) / 1e9;
        if (g > best) best = g;
        if (sink == 0.5f) printf("-");
    }
    printf("%.1f\n", best);
    return 0;
}
EOF
gcc -O2 -march=native -fopenmp "$OUT/peak.c" -o "$OUT/peak"
PEAK_MEASURED=0
probe_peak() {
    local p
    p=$("$OUT/peak")
    PEAK_MEASURED=$("$PY" -c "print(max($PEAK_MEASURED, $p))")
}

# The environment of the zerotrain runs and of the PyTorch runs.
ZT_ENV=(env)
[ -n "$EMULATE_FALLBACK" ] && ZT_ENV=(env OPENBLAS_CORETYPE=Prescott ZT_BLAS_EMULATE_FALLBACK=1)
TH_ENV=(env)
[ -n "$TORCH_CORETYPE" ] && TH_ENV=(env OPENBLAS_CORETYPE="$TORCH_CORETYPE")

# OpenBLAS's core as a binary runs it: `zerotrain blas` where the binary has it (after its
# own fix), else what the library picks in a fresh process with the same environment (a
# binary without the fix runs exactly that).
printf '#include <stdio.h>\nchar *openblas_get_corename(void);\nint main(void) { puts(openblas_get_corename()); return 0; }\n' > "$OUT/corename.c"
gcc "$OUT/corename.c" -o "$OUT/corename" -lopenblas
blas_core() { # binary -> core name
    local line
    line=$("${ZT_ENV[@]}" "$1" blas 2>/dev/null | sed -n 's/^blas: .* core \([^ ]*\) (\(.*\))$/\1 (\2)/p' || true)
    if [ -n "$line" ]; then echo "$line"
    else echo "$("${ZT_ENV[@]}" "$OUT/corename") (no fix in this build)"; fi
}
ZT_CORE=$(blas_core "$ZT")
BASE_CORE=""
[ -n "$ZT_BASE" ] && BASE_CORE=$(blas_core "$ZT_BASE")
TH_CORE=$("${TH_ENV[@]}" "$TORCH_PY" -c 'import ctypes, torch
f = ctypes.CDLL("libblas.so.3").openblas_get_corename; f.restype = ctypes.c_char_p
print(f().decode())' 2>/dev/null || echo unknown)
echo "BLAS kernels: zerotrain $ZT_CORE${ZT_BASE:+; $ZT_BASE $BASE_CORE}; PyTorch $TH_CORE" >&2

# The CPU's bf16 instructions (what decides zerotrain's bf16 GEMM path, and oneDNN's for PyTorch).
BF16_FLAGS=$(lscpu | sed -n 's/^Flags: *//p' | tr ' ' '\n' |
    { grep -E '^(avx512_bf16|amx_bf16)$' || true; } | tr '\n' ' ' | sed 's/ $//')
BF16_FLAGS=${BF16_FLAGS:-"none (no avx512_bf16, no amx_bf16)"}

zt_steps() { # JSON log -> the ms of the steps after the warmup
    "$PY" - "$1" "$WARMUP" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"ms"' in l]
print(" ".join(f"{r['ms']:.1f}" for r in rows[int(sys.argv[2]):]))
EOF
}

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
HOST="$(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
rows=()
LOADS=""
for cfg in $CONFIGS; do
    B=${cfg%x*}; T=${cfg#*x}
    probe_peak
    LOADS+="$(cut -d' ' -f1 /proc/loadavg) "
    zt_ms=""; z16_ms=""; th_ms=""; t16_ms=""; base_ms=""
    for r in $(seq "$ROUNDS"); do
        for dt in fp32 bf16; do # logs step_BxT_rR (fp32, as before) and stepbf16_BxT_rR
            name="step${dt/fp32/}_${B}x${T}_r$r"
            echo "== B=$B T=$T round $r/$ROUNDS: zerotrain $dt ($STEPS steps)" >&2
            "${ZT_ENV[@]}" "$ZT" --model gpt2 --micro-batch "$B" --seq "$T" --steps "$STEPS" \
                --warmup 0 --lr-schedule constant --val-every 0 --data "$OUT/tokens.bin" \
                --log "$OUT/$name.jsonl" --profile --param-dtype $dt > "$OUT/$name.out"
            if [ $dt = fp32 ]; then zt_ms+="$(zt_steps "$OUT/$name.jsonl") "
            else z16_ms+="$(zt_steps "$OUT/$name.jsonl") "
                ZT_BF16_GEMM=$(sed -n 's/^bf16 GEMM: //p' "$OUT/$name.out")
            fi
        done
        if [ -n "$ZT_BASE" ]; then
            echo "== B=$B T=$T round $r/$ROUNDS: $ZT_BASE ($STEPS steps)" >&2
            blog="$OUT/base_${B}x${T}_r$r.jsonl"
            "${ZT_ENV[@]}" "$ZT_BASE" --model gpt2 --micro-batch "$B" --seq "$T" --steps "$STEPS" \
                --warmup 0 --lr-schedule constant --val-every 0 --data "$OUT/tokens.bin" \
                --log "$blog" > "$OUT/base_${B}x${T}_r$r.out"
            base_ms+="$(zt_steps "$blog") "
        fi
        for ac in none bf16; do
            echo "== B=$B T=$T round $r/$ROUNDS: PyTorch autocast $ac" >&2
            tout="$OUT/torch${ac/none/}_${B}x${T}_r$r.out"
            n=$STEPS w=$WARMUP
            [ $ac = bf16 ] && n=$TORCH_BF16_STEPS w=$T16_WARMUP
            "${TH_ENV[@]}" "$TORCH_PY" bench/torch_step.py --micro-batch "$B" --seq "$T" \
                --steps $((n - w)) --warmup-steps "$w" --autocast $ac "${TORCH_ARGS[@]}" > "$tout"
            ms="$(sed -n 's/^step [0-9]*: .* \([0-9.]*\) ms$/\1/p' "$tout" | tr '\n' ' ')"
            if [ $ac = none ]; then th_ms+="$ms"; else t16_ms+="$ms"; fi
        done
    done
    base_ms=${base_ms:-0}
    rows+=("$B $T ${zt_ms// /,} ${th_ms// /,} ${base_ms// /,} ${z16_ms// /,} ${t16_ms// /,}")
done
probe_peak
LOADS+="$(cut -d' ' -f1 /proc/loadavg)"
PEAK_GFLOPS=${PEAK_GFLOPS:-$PEAK_MEASURED}

base_hdr=""; base_sep=""
[ -n "$ZT_BASE" ] && base_hdr=" other build ms/step (best) | its % of peak | other / zerotrain (best) |" base_sep="---|---|---|"
table="| B x T | zerotrain ms/step (best) | tokens/s | GFLOP/step | GFLOP/s | % of 420 | % of measured peak | PyTorch ms/step (best) | PyTorch tokens/s | PyTorch % of peak | torch / zerotrain (best) | zerotrain bf16 ms/step (best) | bf16 speed-up: zerotrain fp32 / bf16 (best) | PyTorch bf16 autocast ms/step (best) | torch-bf16 / zerotrain-bf16 (best) |$base_hdr
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|$base_sep"
for r in "${rows[@]}"; do
    # shellcheck disable=SC2086 # r is "B T zt_ms torch_ms base_ms zt16_ms torch16_ms"
    line=$("$PY" - $r "$PEAK_GFLOPS" <<'EOF'
import statistics, sys
B, T = int(sys.argv[1]), int(sys.argv[2])
zs = [float(x) for x in sys.argv[3].split(",") if x]
ts = [float(x) for x in sys.argv[4].split(",") if x]
bs = [float(x) for x in sys.argv[5].split(",") if x and float(x) > 0]
z16 = [float(x) for x in sys.argv[6].split(",") if x]
t16 = [float(x) for x in sys.argv[7].split(",") if x]
peak = float(sys.argv[8])
zt, th, zb, tb = statistics.median(zs), statistics.median(ts), min(zs), min(ts)
N, L, C = 124_439_808, 12, 768
flops = 6 * N * B * T + 12 * L * T * T * C * B
gf = flops / (zt / 1e3) / 1e9
base = ""
if bs:
    bm, bb = statistics.median(bs), min(bs)
    base = (f" {bm:.0f} ({bb:.0f}) | {100 * flops / (bm / 1e3) / 1e9 / peak:.0f}% | "
            f"{bm / zt:.2f}x ({bb / zb:.2f}x) |")
print(f"| {B} x {T} | {zt:.0f} ({zb:.0f}) | {B * T / (zt / 1e3):.0f} | {flops / 1e9:.0f} | "
      f"{gf:.0f} | {100 * gf / 420:.0f}% | {100 * gf / peak:.0f}% | {th:.0f} ({tb:.0f}) | "
      f"{B * T / (th / 1e3):.0f} | {100 * flops / (th / 1e3) / 1e9 / peak:.0f}% | "
      f"{th / zt:.2f}x ({tb / zb:.2f}x) | "
      f"{statistics.median(z16):.0f} ({min(z16):.0f}) | "
      f"{zt / statistics.median(z16):.2f}x ({zb / min(z16):.2f}x) | "
      f"{statistics.median(t16):.0f} ({min(t16):.0f}) | "
      f"{statistics.median(t16) / statistics.median(z16):.2f}x ({min(t16) / min(z16):.2f}x) |{base}")
EOF
)
    table+=$'\n'"$line"
done
# Where zerotrain's step goes (--profile): per phase the median over the same timed steps
# of every round, ms and share of the median step; GEMM and attention GFLOP/s from the
# flops the profile counts.
breakdown=$("$PY" - "$OUT" "$WARMUP" "$PEAK_GFLOPS" $CONFIGS <<'EOF'
import glob, json, statistics, sys
out, warm, peak = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
names = ["gemm", "attention", "loss", "elementwise", "optimizer", "grad_norm", "memory",
         "comm", "other"]
print("| B x T | zerotrain | step ms | " + " | ".join(names) +
      " | GEMM GFLOP/s (% of peak) | attention GFLOP/s |")
print("|---" * (len(names) + 5) + "|")
for cfg, dt in ((c, d) for c in sys.argv[4:] for d in ("fp32", "bf16")):
    steps = []
    prefix = "step" if dt == "fp32" else "stepbf16"
    for path in sorted(glob.glob(f"{out}/{prefix}_{cfg}_r*.jsonl")):
        rows = [json.loads(l) for l in open(path) if '"phases"' in l]
        steps += rows[warm:]
    if not steps:
        continue
    ms = statistics.median(s["ms"] for s in steps)
    med = {n: statistics.median(s["phases"][n] for s in steps) for n in names}
    def rate(n):
        return statistics.median(s["phase_gflop"].get(n, 0) / (s["phases"][n] / 1e3)
                                 for s in steps if s["phases"][n] > 0)
    g, a = rate("gemm"), rate("attention")
    cells = " | ".join(f"{med[n]:.0f} ({100 * med[n] / ms:.0f}%)" for n in names)
    print(f"| {cfg.replace('x', ' x ')} | {dt} | {ms:.0f} | {cells} | {g:.0f} ({100 * g / peak:.0f}%) "
          f"| {a:.0f} |")
EOF
)
TORCH_VER=$("$TORCH_PY" -c 'import torch; print(torch.__version__)')
TORCH_FROM="Debian"
[ "$TORCH_PY" != /usr/bin/python3 ] && TORCH_FROM="PyPI, $TORCH_PY"
TORCH_HOW="explicit attention, plain AdamW (foreach=False)"
[ -n "$TORCH2" ] && TORCH_HOW="scaled_dot_product_attention, fused AdamW"
TORCH_CMD="$TORCH_PY bench/torch_step.py${TORCH2:+ --torch2}"
TORCH_PY_SET=""
[ "$TORCH_PY" != "$PY" ] && TORCH_PY_SET="TORCH_PY=$TORCH_PY "
T16_NOTE="" T16_CMD=""
if [ "$TORCH_BF16_STEPS" != "$STEPS" ]; then
    T16_CMD="TORCH_BF16_STEPS=$TORCH_BF16_STEPS "
    T16_NOTE=" (of $TORCH_BF16_STEPS steps, $T16_WARMUP skipped: $((ROUNDS * (TORCH_BF16_STEPS - T16_WARMUP))) timed)"
fi
BF16_NOTE=""
case $ZT_BF16_GEMM in
fp32\ fallback*) BF16_NOTE="
Without bf16 instructions zerotrain's bf16 products run on the fallback: bf16 operands widened
to fp32, OpenBLAS's sgemm, so the fp32 products plus the conversions; bf16 cannot beat fp32 on
this CPU (it saves memory, not time), and the 1.5x target over fp32 needs a CPU with
AVX512-BF16 or AMX (oneDNN's bf16 GEMM). PyTorch's autocast sends its bf16 matmuls to
kernels that are slower still here." ;;
esac
MARKER="<!-- bench/step.sh writes the section down to here; the notes below it are kept -->"
section="## Training step vs PyTorch

GPT-2 124M (12 layers, 768 channels, vocab 50257), fp32 and bf16 mixed precision, one process,
$OMP_NUM_THREADS OpenMP threads, OMP_WAIT_POLICY=$OMP_WAIT_POLICY for both; random tokens. $ROUNDS rounds, each
four runs of $STEPS steps one after the other: zerotrain fp32, zerotrain \`--param-dtype bf16\`,
PyTorch fp32, PyTorch bf16 autocast${T16_NOTE}; the first $WARMUP steps of each run skipped; median
(and best) of the remaining $((ROUNDS * (STEPS - WARMUP))) steps per series. Measured $DATE on $HOST; fp32 FMA peak probed in the same
run: $PEAK_GFLOPS GFLOP/s on $OMP_NUM_THREADS threads; 1-minute load average before each config
and at the end: $LOADS. PyTorch $TORCH_VER ($TORCH_FROM), $TORCH_HOW, grad
clip 1.0, as \`bench/torch_step.py\`.
bf16: the CPU's bf16 instructions (lscpu): $BF16_FLAGS; zerotrain's banner: \"bf16 GEMM: $ZT_BF16_GEMM\".$BF16_NOTE
BLAS kernels (OpenBLAS core): zerotrain $ZT_CORE${ZT_BASE:+; other build ($ZT_BASE) $BASE_CORE}; PyTorch $TH_CORE.${EMULATE_FALLBACK:+
EMULATE_FALLBACK=1: the zerotrain runs started with OPENBLAS_CORETYPE=Prescott ZT_BLAS_EMULATE_FALLBACK=1, as on a CPU that OpenBLAS 0.3.21 does not know (a build with the fix re-executes on the right kernels).}${TORCH_CORETYPE:+
PyTorch ran with OPENBLAS_CORETYPE=$TORCH_CORETYPE.}

$table

Where zerotrain's step went, fp32 and bf16 (\`--profile\`: every kernel timed by phase; median
ms per phase over the same steps, and its share of the median step; bf16's products, with
their conversions, are \"gemm\"):

$breakdown

GFLOP/step = 6 · N_params · B · T + 12 · L · T² · C · B (model flops: matmuls forward and
backward with N_params = 124.44M, plus attention scores and P·V over the full T×T). tokens/s =
B · T / median step time; GFLOP/s from the median. \"% of 420\" is against docs/machine.md's 2-core fp32 peak (an AVX-512 host);
\"% of measured peak\" against the FMA loop's figure for the machine the run was on. The
machine may be shared (a load average above 2 means other work shared the 2 cores): compare
the two sides of one row, measured alternately in the same run, not rows of different
runs; the best steps approximate an idle machine.

Command: \`${TORCH2:+TORCH2=1 }${TORCH_PY_SET}${ZT_BASE:+ZT_BASE=$ZT_BASE }${T16_CMD}${EMULATE_FALLBACK:+EMULATE_FALLBACK=1 }${TORCH_CORETYPE:+TORCH_CORETYPE=$TORCH_CORETYPE }bash bench/step.sh\` (STEPS=$STEPS ROUNDS=$ROUNDS CONFIGS=\"$CONFIGS\"), which runs for each row, $ROUNDS times

    build/zerotrain --model gpt2 --micro-batch B --seq T --steps $STEPS --warmup 0 \\
        --lr-schedule constant --val-every 0 --data build/bench/tokens.bin --log FILE \\
        --profile --param-dtype fp32|bf16
    $TORCH_CMD --micro-batch B --seq T --steps $((STEPS - WARMUP)) --warmup-steps $WARMUP
    $TORCH_CMD --micro-batch B --seq T --steps $((TORCH_BF16_STEPS - T16_WARMUP)) --warmup-steps $T16_WARMUP --autocast bf16

$MARKER
"
echo
echo "$table"
echo
echo "$breakdown"
echo "BLAS kernels: zerotrain $ZT_CORE${ZT_BASE:+; $ZT_BASE $BASE_CORE}; PyTorch $TH_CORE"
echo "bf16: CPU flags $BF16_FLAGS; zerotrain bf16 GEMM: $ZT_BF16_GEMM"
echo "peak $PEAK_GFLOPS GFLOP/s ($OMP_NUM_THREADS threads), load $LOADS, $DATE"

if [ -z "${NO_RESULTS:-}" ]; then
    # Replace only the generated part of our section: from its heading down to the
    # marker (the notes after the marker stay), or the whole section up to the next
    # "## " heading when it has no marker. Other sections stay as they are.
    SECTION="$section" MARKER="$MARKER" "$PY" - bench/RESULTS.md <<'EOF'
import os, re, sys
path, new = sys.argv[1], os.environ["SECTION"].rstrip("\n") + "\n"
marker = os.environ["MARKER"]
old = open(path).read() if os.path.exists(path) else "# zerotrain benchmark results\n"
sec = re.compile(r"^## Training step vs PyTorch\n.*?(?=^## |\Z)", re.S | re.M).search(old)
if sec is None:
    out = old.rstrip("\n") + "\n\n" + new
else:
    m = old.find(marker, sec.start(), sec.end())
    end = m + len(marker) + 1 if m >= 0 else sec.end()
    rest = old[end:]
    out = old[:sec.start()] + new + ("" if m >= 0 else "\n") + rest
open(path, "w").write(out.rstrip("\n") + "\n")
EOF
    echo "wrote bench/RESULTS.md" >&2
fi
