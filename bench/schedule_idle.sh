#!/usr/bin/env bash
# Pipeline idle time per stage, measured against the schedule simulator's prediction from the
# same step's measured action costs (issue 36). For each layout it trains STEPS steps with
# --log and --trace and reads, from every step record after the first, "pp_idle_ms" (per
# stage: the schedule's wall time less its forwards and backwards, i.e. the waits and the
# transfers) and "pp_idle_pred_ms" (src/parallel/schedule.h's simulator run on the step's
# lists with each stage's measured mean forward, backward (or input-gradient pass) and
# weight-gradient pass: free communication). 1F1B, GPipe and ZB-H1, blocking and (pp 2)
# nonblocking transfers (--overlap-comm on), and interleaved 1F1B with V = 2 (its ring
# transfers always nonblocking). Then it draws the last step's timelines of the pp 2 runs,
# measured and simulated, into docs/ (scripts/plot_schedule.py).
#
#   bash bench/schedule_idle.sh               # writes its section of bench/RESULTS.md
#   NO_RESULTS=1 bash bench/schedule_idle.sh  # prints it only
#
# pp 2 runs 2 ranks with one thread each on this machine's 2 cores: no time slicing between
# the ranks (other users' load still shows). pp 4 runs 4 ranks on 2 cores: the ranks share
# the cores, so a rank waiting in MPI (set to yield, not spin) frees its core for another
# and a computing rank can be descheduled: measured idle and the forward/backward times the
# prediction is built from both stretch; the prediction assumes every stage owns a core.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/bench/schedule; mkdir -p $OUT
STEPS=${STEPS:-6}
MPI="mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1 -x OMPI_MCA_mpi_yield_when_idle=1"
MODEL="--n-layer 8 --n-head 4 --n-embd 256 --vocab 256 --n-ctx 128 --seq 128 --micro-batch 4"
COMMON="$MODEL --grad-accum 8 --steps $STEPS --warmup 0 --lr-schedule constant --val-every 0
"
run() { # name np extra...
  local name=$1 np=$2; shift 2
  $MPI -np $np build/zerotrain $COMMON "$@" --log $OUT/$name.jsonl --trace $OUT/$name.trace \
      > $OUT/$name.out 2>&1 || { cat $OUT/$name.out; exit 1; }
}
table() { # name label: one row per stage, means over the steps after the first
  /usr/bin/python3 - "$OUT/$1.jsonl" "$2" <<'EOF'
import json, sys
path, label = sys.argv[1], sys.argv[2]
recs = [json.loads(l) for l in open(path) if '"pp_idle_ms"' in l]
recs = recs[1:]
p = len(recs[0]["pp_idle_ms"])
ms = sum(r["ms"] for r in recs) / len(recs)
for s in range(p):
    meas = sum(r["pp_idle_ms"][s] for r in recs) / len(recs)
    pred = sum(r["pp_idle_pred_ms"][s] for r in recs) / len(recs)
    print(f"| {label} | {s} | {ms:.0f} | {meas:.1f} | {pred:.1f} | {meas - pred:+.1f} |")
EOF
}
run pp2_1f1b 2 --pp 2
run pp2_gpipe 2 --pp 2 --schedule gpipe
run pp2_zb 2 --pp 2 --schedule zb-h1
run pp2_1f1b_nb 2 --pp 2 --overlap-comm on
run pp2_zb_nb 2 --pp 2 --schedule zb-h1 --overlap-comm on
run pp2_int 2 --pp 2 --schedule interleaved --virtual-stages 2
run pp4_1f1b 4 --pp 4
run pp4_zb 4 --pp 4 --schedule zb-h1
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
{
  echo "## Pipeline: measured idle per stage vs the schedule simulator"
  echo
  echo "Command: \`bash bench/schedule_idle.sh\` (measured $(date -u '+%Y-%m-%d %H:%M') UTC, $cpu,"
  echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end). Model: \`$MODEL\`,"
  echo "8 micro-batches per step, fp32, uniform split, $STEPS steps; figures"
  echo "are means over the steps after the first. Measured idle (\`pp_idle_ms\`): the schedule's"
  echo "wall time less the stage's forwards and backwards (waits and transfers). Predicted"
  echo "(\`pp_idle_pred_ms\`): the simulator (src/parallel/schedule.h) on the step's own lists"
  echo "with each stage's measured mean forward, backward (zb-h1: input-gradient pass) and"
  echo "weight-gradient pass, communication free, the run's transport (blocking: rendezvous;"
  echo "nb = --overlap-comm on: nonblocking). pp 2: 2 ranks, one thread each, on the 2 cores. pp 4: 4 ranks on 2 cores,"
  echo "MPI yielding when idle: ranks time-slice, so both the measured idle and the measured"
  echo "costs stretch and the simulator's assumption (a core per stage) does not hold."
  echo
  echo "| layout | stage | step ms | idle measured ms | idle predicted ms | difference ms |"
  echo "|---|---|---|---|---|---|"
  table pp2_1f1b "pp 2, 1f1b"
  table pp2_gpipe "pp 2, gpipe"
  table pp2_zb "pp 2, zb-h1"
  table pp2_1f1b_nb "pp 2, 1f1b, nb"
  table pp2_zb_nb "pp 2, zb-h1, nb"
  table pp2_int "pp 2, interleaved V 2, nb"
  table pp4_1f1b "pp 4, 1f1b (oversubscribed)"
  table pp4_zb "pp 4, zb-h1 (oversubscribed)"
  echo
  echo "Timelines of the last step of the pp 2 runs with nonblocking transfers, measured:"
  echo "docs/schedule_1f1b.png, docs/schedule_zb_h1.png and docs/schedule_interleaved.png; and"
  echo "the simulator's from the same runs' measured costs: docs/schedule_1f1b_sim.png,"
  echo "docs/schedule_zb_h1_sim.png, docs/schedule_interleaved_sim.png."
} > $OUT/section.md
PY=/usr/bin/python3
$PY scripts/plot_schedule.py $OUT/pp2_1f1b_nb.trace --source run -o docs/schedule_1f1b.png
$PY scripts/plot_schedule.py $OUT/pp2_1f1b_nb.trace --source sim -o docs/schedule_1f1b_sim.png
$PY scripts/plot_schedule.py $OUT/pp2_zb_nb.trace --source run -o docs/schedule_zb_h1.png
$PY scripts/plot_schedule.py $OUT/pp2_zb_nb.trace --source sim -o docs/schedule_zb_h1_sim.png
$PY scripts/plot_schedule.py $OUT/pp2_int.trace --source run -o docs/schedule_interleaved.png
$PY scripts/plot_schedule.py $OUT/pp2_int.trace --source sim -o docs/schedule_interleaved_sim.png
cat $OUT/section.md
[ -n "${NO_RESULTS:-}" ] || $PY bench/results_section.py bench/RESULTS.md \
    "## Pipeline: measured idle per stage vs the schedule simulator" < $OUT/section.md
