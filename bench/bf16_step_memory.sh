#!/usr/bin/env bash
# bf16 against fp32: step time and peak memory per layout, measured in the same runs.
# Markdown on stdout and the section "## bf16 vs fp32: step time and peak memory per layout"
# in bench/RESULTS.md (bench/results_section.py). The planner's side (model state per
# parameter for the GPT-2 sizes at dp 1..64, bf16 + ZeRO-1, and the plot) is bench/memory.sh's
# groups "bf16" and "state".
#
#   bash bench/bf16_step_memory.sh               # the table and the section
#   NO_RESULTS=1 STEPS=6 bash bench/bf16_step_memory.sh
#
# Layouts (each run fp32, then bf16, one after the other): 1 rank; dp 2 zero 1; pp 2; tp 2:
#   mpirun --oversubscribe --allow-run-as-root -np W build/zerotrain train MODEL LAYOUT
#       --param-dtype fp32|bf16 --steps STEPS --warmup 0 --lr-schedule constant --val-every 0
#       --data build/bench/zero_tokens.bin --log FILE
# MODEL: GPT-2 with 6 layers, 6 heads, 384 channels, vocabulary 50257, n_ctx 64, micro-batch
# 4 x 64 tokens (30M parameters: the vocabulary makes the embedding and the loss matter), one
# OpenMP thread per rank (2 ranks on this 2-core machine). Step time: the median (best) of the
# steps after the first, rank 0's "ms" in the log. Memory: the largest rank's end-of-run
# record in the log: the allocator's peak total ("mem_peak_total", every category) and the
# process's resident peak ("rss_peak"), as bench/memory.sh reads them.

set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-/usr/bin/python3}
ZT=build/zerotrain
OUT=build/bench
STEPS=${STEPS:-4}
MODEL=(--n-layer 6 --n-head 6 --n-embd 384 --vocab 50257 --n-ctx 64 --seq 64 --micro-batch 4)
MPIRUN=(mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS)
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
[ -x "$ZT" ] || { echo "bf16_step_memory.sh: $ZT missing; run make -j2 all first" >&2; exit 1; }
DATA=$OUT/zero_tokens.bin
[ -f "$DATA" ] || "$PY" bench/make_tokens.py "$DATA" 65536
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the layouts, measured ----
cells=()
for lay in "1 rank:1:--dp 1" "dp 2, zero 1:2:--dp 2 --zero 1" "pp 2:2:--pp 2 --dp 1" \
           "tp 2:2:--tp 2 --dp 1"; do
    IFS=: read -r label world flags <<<"$lay"
    for dt in fp32 bf16; do
        name="b16mem_${label//[ ,]/}_$dt"
        echo "== $label, $dt" >&2
        # shellcheck disable=SC2086 # flags are words
        "${MPIRUN[@]}" -np "$world" "$ZT" train "${MODEL[@]}" $flags --param-dtype "$dt" \
            --steps "$STEPS" --warmup 0 --lr-schedule constant --val-every 0 --data "$DATA" \
            --log "$OUT/$name.jsonl" >"$OUT/$name.out" 2>&1 ||
            { cat "$OUT/$name.out" >&2; exit 1; }
        cells+=("$label:$dt:$OUT/$name.jsonl")
    done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

layouts=$("$PY" - "${cells[@]}" <<'EOF'
import json, statistics, sys
MIB = 1 << 20
rows = {}
for cell in sys.argv[1:]:
    label, dt, log = cell.split(":")
    recs = [json.loads(l) for l in open(log)]
    ms = [r["ms"] for r in recs if "ms" in r][1:]  # the first step allocates and warms up
    ends = [r for r in recs if "mem_peak" in r]     # every rank's end-of-run record
    big = max(ends, key=lambda r: r["mem_peak_total"])
    state = sum(big["mem_peak"][c] for c in ("params", "grads", "optimizer"))
    rows.setdefault(label, {})[dt] = (statistics.median(ms), min(ms), big["mem_peak_total"],
                                      big["rss_peak"], state)
if rows:
    print("| layout | fp32 ms/step (best) | bf16 ms/step (best) | bf16 / fp32 time | "
          "fp32 model state MiB | bf16 model state MiB | fp32 allocator peak MiB | "
          "bf16 allocator peak MiB | bf16 / fp32 peak | fp32 RSS peak MiB | bf16 RSS peak MiB |")
    print("|---" * 11 + "|")
for label, d in rows.items():
    f, b = d["fp32"], d["bf16"]
    print(f"| {label} | {f[0]:.0f} ({f[1]:.0f}) | {b[0]:.0f} ({b[1]:.0f}) | {b[0] / f[0]:.2f} | "
          f"{f[4] / MIB:.1f} | {b[4] / MIB:.1f} | {f[2] / MIB:.1f} | {b[2] / MIB:.1f} | "
          f"{b[2] / f[2]:.2f} | {f[3] / MIB:.1f} | {b[3] / MIB:.1f} |")
EOF
)

GEMM=$(sed -n 's/^bf16 GEMM: //p' "$OUT/b16mem_1rank_bf16.out")
section="## bf16 vs fp32: step time and peak memory per layout

\`--param-dtype bf16\` against fp32 (docs/design.md, \"bf16\"). Measured $DATE on $(nproc) cores,
$(lscpu | sed -n 's/^Model name: *//p' | head -1); bf16 GEMM: $GEMM. Load average (1, 5, 15
min) before the runs $LOAD_BEFORE, after $LOAD_AFTER.

GPT-2 6 layers, 6 heads, 384 channels, vocabulary 50257, micro-batch 4 x 64 tokens, $STEPS
steps, 1 OpenMP thread per rank. Step time: rank 0's \"ms\", median (best) of the steps after
the first. Memory: the largest rank's end-of-run peaks (the allocator's total and each
category, the process's RSS); model state = params + grads + optimizer. Each layout's fp32
and bf16 runs ran one after the other: compare within a row.

$layouts

Command: \`bash bench/bf16_step_memory.sh\` (STEPS=$STEPS), which runs for each layout and dtype

    mpirun --oversubscribe --allow-run-as-root -np W build/zerotrain train ${MODEL[*]} \\
        LAYOUT --param-dtype fp32|bf16 --steps $STEPS --warmup 0 --lr-schedule constant \\
        --val-every 0 --data build/bench/zero_tokens.bin --log FILE
"
echo "$section"
[ -n "${NO_RESULTS:-}" ] || "$PY" bench/results_section.py bench/RESULTS.md \
    "## bf16 vs fp32: step time and peak memory per layout" <<<"$section"
