#!/usr/bin/env bash
# bf16 GEMM at GPT-2 shapes and forms: fp32 sgemm, bf16 through oneDNN's matmul primitive and
# its gemm API (where the CPU has AVX512-BF16 or AMX-BF16) and the bf16 fallback (widen to
# fp32 + sgemm), same run, 2 OpenMP threads.
#
#   make bench && bash bench/gemm_bf16.sh   # table + section in bench/RESULTS.md
#   REPS=15 bash bench/gemm_bf16.sh
#   TOKENS="256" bash bench/gemm_bf16.sh    # B4 T64 only (default "256 1024": B4 T64, B4 T256)
#   NO_RESULTS=1 bash bench/gemm_bf16.sh    # print only
#
# Runs `OMP_NUM_THREADS=2 build/gemm_bf16 --reps REPS --tokens N...` (bench/gemm_bf16.c has the method:
# medians of REPS, implementations interleaved, every result compared with fp32's).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-/usr/bin/python3}
OUT=build/bench
REPS=${REPS:-7}
TOKENS=${TOKENS:-256 1024}
TOKARGS=$(for t in $TOKENS; do printf -- '--tokens %s ' "$t"; done)
TOKARGS=${TOKARGS% }
export OMP_NUM_THREADS=2
mkdir -p "$OUT"
[ -x build/gemm_bf16 ] || { echo "gemm_bf16.sh: build/gemm_bf16 missing; run make bench" >&2; exit 1; }

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
MODEL=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
FLAGS=$(lscpu | sed -n 's/^Flags: *//p')
flag() { [[ " $FLAGS " == *" $1 "* ]] && echo "$1 present" || echo "no $1"; }
CPU="$MODEL, $(nproc --all) cores; lscpu flags: $(flag avx512_bf16), $(flag amx_bf16)"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
build/gemm_bf16 --reps "$REPS" $TOKARGS | tee "$OUT/gemm_bf16.out" >&2
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

table=$("$PY" - "$OUT/gemm_bf16.out" <<'EOF'
import math, sys
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith("RESULT "):
        continue
    kv = dict(x.split("=", 1) for x in line.split()[1:])
    rows.setdefault((kv["op"], kv["shape"], kv["form"]), {})[kv["impl"]] = kv
def cell(kv):
    g = float(kv["gflops"])
    return "n/a" if math.isnan(g) else f"{g:.1f} ({float(kv['best_gflops']):.1f})"
def ratio(a, b, key):
    return f"{float(a[key]) / float(b[key]):.2f}"
def faster(r):  # the faster bf16 path by median, of those that ran
    ran = {k: float(r[k]["gflops"]) for k in ("bf16_dnnl_matmul", "bf16_dnnl_gemm", "bf16_fallback")
           if not math.isnan(float(r[k]["gflops"]))}
    return max(ran, key=ran.get).replace("bf16_", "") if ran else "-"
print("| product | M x K x N | form | fp32 sgemm GFLOP/s | oneDNN matmul GFLOP/s "
      "| oneDNN gemm API GFLOP/s | bf16 fallback GFLOP/s | fallback / fp32 (best) | faster bf16 |")
print("|---|---|---|---|---|---|---|---|---|")
for (op, shape, form), r in rows.items():
    f32, mm, dn, fb = r["fp32"], r["bf16_dnnl_matmul"], r["bf16_dnnl_gemm"], r["bf16_fallback"]
    print(f"| {op} | {shape.replace('x', ' x ')} | {form} | {cell(f32)} | {cell(mm)} | {cell(dn)} "
          f"| {cell(fb)} | {ratio(fb, f32, 'gflops')} ({ratio(fb, f32, 'best_gflops')}) | {faster(r)} |")
EOF
)
BLAS=$(sed -n 's/^blas: //p' "$OUT/gemm_bf16.out")
PATHLINE=$(grep '^bf16 GEMM:' "$OUT/gemm_bf16.out")
echo
echo "$table"

if [ -z "${NO_RESULTS:-}" ]; then
    "$PY" bench/results_section.py bench/RESULTS.md "## bf16 GEMM on the CPU" <<EOF
## bf16 GEMM on the CPU

$CPU.
$BLAS. The run chose: "$PATHLINE".
Measured $DATE, $OMP_NUM_THREADS OpenMP threads; load average $LOAD0 before, $LOAD1 after
(the cores are shared: $REPS repetitions, the implementations interleaved).
Where lscpu shows neither avx512_bf16 nor amx_bf16, oneDNN 2.6.3 has no bf16 kernels (its
matmul and gemm API both answer "unimplemented"), so only the fallback runs ("n/a") and the
table compares it with fp32 alone. A load average above the core count makes the timings
noise (other processes' threads preempt these two): read them as a check that every path
computes the same product (the driver's reldiff) more than as speeds.

GFLOP/s = 2MNK / time: the median, in brackets the best (the nearer to an idle machine).
GPT-2 124M's products of one block and the lm-head at $(echo $TOKENS | sed 's/ / and /g') tokens (B4 T64, B4 T256),
in the model's three forms: forward (fwd: NT for weights stored (out, in), NN for the
c_projs' (in, out)), input gradient (dinp: NN, NT) and weight gradient (dw: TN, beta 1); the
lm-head over all the tokens (the model cuts it into loss chunks). Every implementation
multiplies the same bf16-rounded values (fp32 gets them widened) and gets the same C as fp32
sgemm (the driver checks). "bf16 fallback" is \`zt_gemm_bf16\` forced to its fallback: both
operands widened to fp32 (exact) in a preallocated workspace, then \`zt_gemm\`; its time
includes the widening, M·K + K·N values, and that step's own parallel regions, which wait on
a preempted thread when the machine is loaded. "oneDNN matmul" is its matmul primitive
(made on the first call of a product and cached, kernels/cpu/matmul_dnnl_cpu.c; the warm-up
makes it), "oneDNN gemm API" \`dnnl_gemm_bf16bf16f32\` (oneDNN
$(dpkg-query -W -f='${Version}' libdnnl2 2>/dev/null || echo "?")), both run only where the CPU has AVX512-BF16 or AMX-BF16 ("n/a" otherwise:
then only the fallback runs, and "faster bf16" is the fallback by default).

$table

Command: \`make bench && bash bench/gemm_bf16.sh\` (REPS=$REPS), which runs

    OMP_NUM_THREADS=2 build/gemm_bf16 --reps $REPS $TOKARGS
EOF
    echo "wrote bench/RESULTS.md" >&2
fi
