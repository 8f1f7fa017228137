#!/usr/bin/env bash
# Training-step benchmark: zerotrain vs PyTorch CPU on GPT-2 124M, same machine, same run.
#
#   bash bench/step.sh                      # B=4 x T=64 and B=4 x T=256, 8 steps each
#   STEPS=12 CONFIGS="4x64 4x512" bash bench/step.sh
#   NO_RESULTS=1 bash bench/step.sh         # print the table, leave bench/RESULTS.md alone
#
# For each config (micro-batch x seq) it runs
#   build/zerotrain --model gpt2 --micro-batch B --seq T --steps STEPS --warmup 0
#       --lr-schedule constant --val-every 0 --data build/bench/tokens.bin --log FILE
# and reads each step's "ms" from the JSON log, then
#   /usr/bin/python3 bench/torch_step.py --micro-batch B --seq T ...
# (plain AdamW, grad clip 1.0, as zerotrain's defaults). The first WARMUP (2) steps of
# each are skipped; the figure is the median of the rest.
#
# Threads: both get OMP_NUM_THREADS=2 (this machine has 2 cores) and OMP_WAIT_POLICY=PASSIVE
# (Debian's torch needs it to stop its pool spinning against BLAS; zerotrain has one pool
# but shares the machine with whatever else runs, and passive waiting measured no slower).
#
# Flops per step (model flops, what the step must do, not what we execute):
#   6 * N_params * tokens            matmuls forward + backward (N_params = 124.44M, tied
#                                    wte counted once: it is the lm-head matmul)
#   + 12 * L * T * T * C * B         attention scores and P@V, forward + backward (full
#                                    T x T, as PaLM's MFU formula)
# GFLOP/s = flops / step time; "% peak" is against PEAK_GFLOPS, the 2-core fp32 FMA peak,
# measured by a small FMA loop in this run (MACHINE.md's ~420 GFLOP/s is for a 2-core
# Sapphire Rapids with AVX-512; an AVX2 host has about half of that).
#
# The data: 2^20 random token ids < 50257 in an llm.c token file (256 int32 header
# [20240520, 1, N, 0...], then N uint16), written once to build/bench/tokens.bin.
set -euo pipefail
cd "$(dirname "$0")/.."

STEPS=${STEPS:-8}
WARMUP=2
CONFIGS=${CONFIGS:-"4x64 4x256"}
PY=${PY:-/usr/bin/python3}
ZT=build/zerotrain
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

# fp32 FMA peak of this machine on OMP_NUM_THREADS threads: 12 independent chains of
# 8-wide FMAs per thread (AVX2 width; enough chains to cover the FMA latency).
if [ -z "${PEAK_GFLOPS:-}" ]; then
    cat > "$OUT/peak.c" <<'EOF'
#include <omp.h>
#include <stdio.h>
typedef float v8 __attribute__((vector_size(32)));
int main(void) {
    const long iters = 50000000;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        float sink = 0;
        int nt = 1;
        double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : sink)
        {
            v8 a[12], m, c;
            for (int k = 0; k < 8; k++) m[k] = 1.0000001f, c[k] = 1e-7f;
            for (int j = 0; j < 12; j++) a[j] = m * (float)j;
            for (long i = 0; i < iters; i++)
#pragma GCC unroll 12
                for (int j = 0; j < 12; j++) a[j] = a[j] * m + c;
            for (int j = 0; j < 12; j++)
                for (int k = 0; k < 8; k++) sink += a[j][k];
#pragma omp single
            nt = omp_get_num_threads();
        }
        double g = 2.0 * 8 * 12 * iters * nt / (omp_get_wtime() - t0) / 1e9;
        if (g > best) best = g;
        if (sink == 0.5f) printf("-");
    }
    printf("%.1f\n", best);
    return 0;
}
EOF
    gcc -O2 -march=native -fopenmp "$OUT/peak.c" -o "$OUT/peak"
    PEAK_GFLOPS=$("$OUT/peak")
fi

median_ms() { # JSON log -> median ms of the steps after the warmup
    "$PY" - "$1" "$WARMUP" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"ms"' in l]
ms = [r["ms"] for r in rows[int(sys.argv[2]):]]
print(f"{statistics.median(ms):.1f}")
EOF
}

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
HOST="$(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
rows=()
for cfg in $CONFIGS; do
    B=${cfg%x*}; T=${cfg#*x}
    log="$OUT/step_${B}x${T}.jsonl"
    echo "== B=$B T=$T: zerotrain ($STEPS steps)" >&2
    "$ZT" --model gpt2 --micro-batch "$B" --seq "$T" --steps "$STEPS" --warmup 0 \
        --lr-schedule constant --val-every 0 --data "$OUT/tokens.bin" --log "$log" \
        > "$OUT/step_${B}x${T}.out"
    zt_ms=$(median_ms "$log")
    echo "== B=$B T=$T: PyTorch ($STEPS steps)" >&2
    "$PY" bench/torch_step.py --micro-batch "$B" --seq "$T" --steps $((STEPS - WARMUP)) \
        --warmup-steps "$WARMUP" > "$OUT/torch_${B}x${T}.out"
    th_ms=$(sed -n 's/^RESULT ms_per_step=\([0-9.]*\).*/\1/p' "$OUT/torch_${B}x${T}.out")
    rows+=("$("$PY" - "$B" "$T" "$zt_ms" "$th_ms" "$PEAK_GFLOPS" <<'EOF'
import sys
B, T = int(sys.argv[1]), int(sys.argv[2])
zt, th, peak = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
N, L, C = 124_439_808, 12, 768
flops = 6 * N * B * T + 12 * L * T * T * C * B
gf = flops / (zt / 1e3) / 1e9
print(f"| {B} x {T} | {zt:.0f} | {B * T / (zt / 1e3):.0f} | {flops / 1e9:.0f} | {gf:.0f} | "
      f"{100 * gf / peak:.0f}% | {th:.0f} | {B * T / (th / 1e3):.0f} | {th / zt:.2f}x |")
EOF
)")
done

table="| B x T | zerotrain ms/step | tokens/s | GFLOP/step | GFLOP/s | % peak | PyTorch ms/step | PyTorch tokens/s | torch / zerotrain |
|---|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do table+=$'\n'"$r"; done
TORCH_VER=$("$PY" -c 'import torch; print(torch.__version__)')
section="## Training step vs PyTorch

GPT-2 124M (12 layers, 768 channels, vocab 50257), fp32, one process, $OMP_NUM_THREADS OpenMP
threads, OMP_WAIT_POLICY=$OMP_WAIT_POLICY for both. Median of $((STEPS - WARMUP)) steps after $WARMUP
warmup steps; random tokens. Measured $DATE on $HOST; fp32 FMA peak measured in the
same run: $PEAK_GFLOPS GFLOP/s on $OMP_NUM_THREADS threads. PyTorch $TORCH_VER (Debian), plain AdamW
(foreach=False), grad clip 1.0, as \`bench/torch_step.py\`.

$table

GFLOP/step = 6 · N_params · B · T + 12 · L · T² · C · B (model flops: matmuls forward and
backward with N_params = 124.44M, plus attention scores and P·V over the full T×T). tokens/s =
B · T / step time. The machine may be shared: compare the two columns of one row (measured
minutes apart in the same run), not rows of different runs.

Command: \`bash bench/step.sh\` (STEPS=$STEPS CONFIGS=\"$CONFIGS\"), which runs for each row

    build/zerotrain --model gpt2 --micro-batch B --seq T --steps $STEPS --warmup 0 \\
        --lr-schedule constant --val-every 0 --data build/bench/tokens.bin --log FILE
    /usr/bin/python3 bench/torch_step.py --micro-batch B --seq T --steps $((STEPS - WARMUP)) --warmup-steps $WARMUP
"
echo
echo "$table"
echo "peak $PEAK_GFLOPS GFLOP/s ($OMP_NUM_THREADS threads), $DATE"

if [ -z "${NO_RESULTS:-}" ]; then
    # Replace only our section (up to the next "## " heading); other sections stay.
    SECTION="$section" "$PY" - bench/RESULTS.md <<'EOF'
import os, re, sys
path, new = sys.argv[1], os.environ["SECTION"].rstrip("\n") + "\n"
old = open(path).read() if os.path.exists(path) else "# zerotrain benchmark results\n"
pat = re.compile(r"^## Training step vs PyTorch\n.*?(?=^## |\Z)", re.S | re.M)
if pat.search(old):
    out = pat.sub(lambda m: new + "\n", old, count=1)
else:
    out = old.rstrip("\n") + "\n\n" + new
open(path, "w").write(out.rstrip("\n") + "\n")
EOF
    echo "wrote bench/RESULTS.md" >&2
fi
