#!/usr/bin/env bash
# Thread scaling of the training step: bench/step.sh (zerotrain against PyTorch, same run)
# at each OpenMP thread count in THREADS, one table.
#
#   bash bench/step_scaling.sh                          # 1, 2, 4, ... up to nproc
#   THREADS="1 2 4 8 16" CONFIGS="4x64 8x256" bash bench/step_scaling.sh
#   NO_RESULTS=1 bash bench/step_scaling.sh             # print only
#
# Each thread count is one `OMP_NUM_THREADS=t bash bench/step.sh` (its ROUNDS, STEPS,
# TORCH_CORETYPE apply; its FMA peak is probed at t threads), so every row compares the two
# sides at the same thread count, measured alternately. "speedup" is zerotrain's median
# step at 1 thread (or the smallest count run) over the row's; "% of peak" is against that
# row's probed peak. The table replaces the "Training step: thread scaling" section of
# bench/RESULTS.md (step.sh's own section is left alone: NO_RESULTS is passed to it).
set -euo pipefail
cd "$(dirname "$0")/.."

cores=$(nproc)
if [ -z "${THREADS:-}" ]; then
    THREADS=""
    for ((t = 1; t <= cores; t *= 2)); do THREADS+="$t "; done
fi
for t in $THREADS; do
    [[ "$t" =~ ^[1-9][0-9]*$ ]] || { echo "step_scaling: THREADS must be thread counts (e.g. \"1 2 4\"), not '$t'" >&2; exit 2; }
done
export CONFIGS=${CONFIGS:-"4x64 4x256"} ROUNDS=${ROUNDS:-2}
OUT=build/bench
mkdir -p "$OUT"

rows=""
declare -A base_ms
for t in $THREADS; do
    [ "$t" -le "$cores" ] || echo "step_scaling: $t threads on $cores cores: oversubscribed" >&2
    echo "=== $t threads" >&2
    OMP_NUM_THREADS=$t NO_RESULTS=1 bash bench/step.sh > "$OUT/scaling_t$t.out"
    peak=$(sed -n 's/^peak \([0-9.]*\) GFLOP\/s.*/\1/p' "$OUT/scaling_t$t.out")
    core=$(sed -n 's/^BLAS kernels: zerotrain \(.*\); PyTorch .*/\1/p' "$OUT/scaling_t$t.out")
    # step.sh's rows: | B x T | zt ms (best) | tok/s | GFLOP | GFLOP/s | % of 420 | % peak |
    #                 torch ms (best) | torch tok/s | torch % peak | torch/zt (best) |
    while IFS='|' read -r _ cfg zt _ _ gfs _ pct th _ thpct ratio _; do
        cfg=$(echo $cfg) zt_med=${zt%% (*}
        zt_med=$(echo $zt_med)
        [ -n "${base_ms[$cfg]:-}" ] || base_ms[$cfg]=$zt_med
        speedup=$(awk -v a="${base_ms[$cfg]}" -v b="$zt_med" 'BEGIN { printf "%.2fx", a / b }')
        rows+="| $t | $cfg | $(echo $zt) | $speedup | $(echo $gfs) | $(echo $pct) | $(echo $th) | $(echo $thpct) | $(echo $ratio) | $peak |
"
    done < <(grep -E '^\| [0-9]+ x [0-9]+ \| [0-9]+ \(' "$OUT/scaling_t$t.out")
done

table="| threads | B x T | zerotrain ms/step (best) | speedup | GFLOP/s | % of peak | PyTorch ms/step (best) | PyTorch % of peak | torch / zerotrain (best) | peak GFLOP/s |
|---|---|---|---|---|---|---|---|---|---|
$rows"
echo
echo "$table"

if [ -z "${NO_RESULTS:-}" ]; then
    CPU=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
    SECTION="## Training step: thread scaling

GPT-2 124M, fp32, one process; each row is \`OMP_NUM_THREADS=t bash bench/step.sh\` (ROUNDS=$ROUNDS,
CONFIGS=\"$CONFIGS\"): zerotrain and PyTorch alternately at that thread count, medians (best).
Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $cores cores ($CPU); BLAS kernels: zerotrain $core.

$table
Command: \`THREADS=\"$(echo $THREADS)\" bash bench/step_scaling.sh\`.
" /usr/bin/python3 - bench/RESULTS.md <<'EOF'
import os, re, sys
path, new = sys.argv[1], os.environ["SECTION"].rstrip("\n") + "\n"
text = open(path).read()
head = "## Training step: thread scaling"
m = re.search(r"^" + re.escape(head) + r"\n.*?(?=^## |\Z)", text, re.S | re.M)
text = text[:m.start()] + new + "\n" + text[m.end():] if m else text.rstrip("\n") + "\n\n" + new
open(path, "w").write(text)
EOF
    echo "wrote the thread-scaling section of bench/RESULTS.md" >&2
fi
