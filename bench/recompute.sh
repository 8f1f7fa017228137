#!/usr/bin/env bash
# Activation recomputation (--recompute) and sequence parallelism (--sequence-parallel): the
# bytes they save and the time they cost, as ratios to --recompute none in the same run.
#
#   bash bench/recompute.sh               # plans, then the measured runs; RESULTS.md section
#   PLAN_ONLY=1 bash bench/recompute.sh   # the planned table only (RESULTS.md untouched)
#   INSTRUCTIONS=1 bash bench/recompute.sh  # only part 3, its own RESULTS.md section
#   STEPS=4 bash bench/recompute.sh
#
# 1. Planned, every rank (zerotrain memory --json), gpt2-medium at micro-batch 8 x 1024 tokens
#    (grad-accum 8), in four layouts: one rank, --tp 2, --pp 2, --zero 1 --pp 4 --tp 2 (8
#    ranks), each with --recompute none, selective, full, and the tp layouts also with
#    --sequence-parallel: the largest rank's activations, workspace (the recomputation's one
#    layer lives there) and total. The plan equals the allocation to the byte (tested:
#    test_planner's planner_equals_allocation, tests/sh/memory_cli.sh's real runs).
# 2. Measured on this machine: MEASURED (gpt2; gpt2-medium takes 40 minutes on 2 busy cores)
#    at micro-batch 1 x 1024 tokens (gpt2-medium at micro-batch 8 needs ~19 GB at --recompute
#    none, more than this machine has; the per-token tensors are the same), STEPS (3) steps on
#    one rank (2 threads) and on --tp 2 (2 ranks, 1 thread each) with and without
#    --sequence-parallel, each under none, selective and full: the allocator's peak of
#    activations and workspace and the process's peak RSS (the log's end record, rank 0), the
#    median wall time of the steps after the first and, from --profile, rank 0's process CPU
#    time per step (each phase's wall x busy x threads): on a shared machine other work
#    stretches the wall time but not the CPU time a step needs, so the ratio to none is taken
#    on the CPU time. OMP_WAIT_POLICY=PASSIVE: threads waiting sleep rather than spin.
#      mpirun -np W build/zerotrain --model MEASURED --micro-batch 1 --seq 1024
#          --steps STEPS --warmup 0 --val-every 0 --data build/bench/tokens.bin
#          --recompute MODE [--tp 2 [--sequence-parallel]] --profile --log FILE
# 3. (INSTRUCTIONS=1) What each recomputation adds, free of the machine's load: the
#    instructions executed inside the training steps (valgrind --tool=callgrind
#    --toggle-collect=zt_trainer_step), one rank, one thread, one step of a 4-layer,
#    256-channel model at 2 x 256 tokens, under none, selective and full.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${INSTRUCTIONS:-}" ]; then
    OUT=build/bench/recompute; mkdir -p "$OUT"
    section=$OUT/instructions.md
    {
        echo "## Activation recomputation: instructions per step"
        echo
        echo "\`INSTRUCTIONS=1 bash bench/recompute.sh\` ($(date -u +%Y-%m-%d), $(lscpu | sed -n 's/^Model name: *//p')):"
        echo "\`OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE valgrind --tool=callgrind"
        echo "--toggle-collect=zt_trainer_step zerotrain --n-layer 4 --n-head 4 --n-embd 256 --vocab 512"
        echo "--n-ctx 256 --seq 256 --micro-batch 2 --steps 1 --val-every 0 --recompute MODE\`:"
        echo "the instructions of the step, a count the machine's load does not change."
        echo
        echo "| --recompute | instructions | vs none |"
        echo "|---|---:|---:|"
    } >"$section"
    base=""
    for mode in none selective full; do
        OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE valgrind --tool=callgrind \
            --toggle-collect=zt_trainer_step --callgrind-out-file="$OUT/cg_$mode.out" \
            "${ZT:-build/zerotrain}" --n-layer 4 --n-head 4 --n-embd 256 --vocab 512 --n-ctx 256 \
            --seq 256 --micro-batch 2 --steps 1 --val-every 0 --recompute $mode \
            --data build/data/default_train.bin >"$OUT/cg_$mode.log" 2>&1
        ir=$(sed -n 's/^==[0-9]*== Collected : *//p' "$OUT/cg_$mode.log")
        [ -n "$base" ] || base=$ir
        echo "| $mode | $ir | $(awk -v a="$ir" -v b="$base" 'BEGIN{printf "%.3f", a/b}') |" >>"$section"
    done
    cat "$section"
    [ -n "${NO_RESULTS:-}" ] || "${PY:-/usr/bin/python3}" bench/results_section.py bench/RESULTS.md \
        "## Activation recomputation: instructions per step" <"$section"
    exit 0
fi
PY=${PY:-/usr/bin/python3}
ZT=${ZT:-build/zerotrain}
OUT=build/bench/recompute
STEPS=${STEPS:-3}
MEASURED=${MEASURED:-gpt2}
mkdir -p "$OUT"
[ -x "$ZT" ] || { echo "recompute.sh: $ZT missing; run make -j2 first" >&2; exit 1; }
DATA=build/bench/tokens.bin
[ -f "$DATA" ] || "$PY" bench/make_tokens.py "$DATA" 1048576

PLANS=$OUT/plans.jsonl RUNS=$OUT/runs.jsonl
: >"$PLANS"; : >"$RUNS"
MODEL=(--model gpt2-medium --seq 1024)
for lay in "1 rank|" "tp 2|--tp 2" "tp 2, sp|--tp 2 --sequence-parallel" "pp 2|--pp 2" \
           "zero 1 pp 4 tp 2|--zero 1 --pp 4 --tp 2" \
           "zero 1 pp 4 tp 2, sp|--zero 1 --pp 4 --tp 2 --sequence-parallel"; do
    label=${lay%%|*}; flags=${lay#*|}
    for mode in none selective full; do
        # shellcheck disable=SC2086 # flags are words
        "$ZT" memory --json "${MODEL[@]}" --micro-batch 8 --grad-accum 8 $flags \
            --recompute $mode >"$OUT/plan.json"
        "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(json.dumps(
            {"layout": sys.argv[2], "mode": sys.argv[3], "ranks": j["ranks"]}))' \
            "$OUT/plan.json" "$label" "$mode" >>"$PLANS"
    done
done
if [ -z "${PLAN_ONLY:-}" ]; then
    for lay in "1 rank|1|2|" "tp 2|2|1|--tp 2" "tp 2, sp|2|1|--tp 2 --sequence-parallel"; do
        IFS='|' read -r label np threads flags <<<"$lay"
        for mode in none selective full; do
            log=$OUT/run_${np}_$(echo "$flags" | tr -c 'a-z0-9' _)_$mode.jsonl
            echo "== $label, --recompute $mode" >&2
            # shellcheck disable=SC2086
            OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE mpirun --oversubscribe \
                --allow-run-as-root -x OMP_NUM_THREADS -x OMP_WAIT_POLICY \
                -np "$np" "$ZT" --model "$MEASURED" --seq 1024 --micro-batch 1 --steps "$STEPS" --warmup 0 \
                --val-every 0 --data "$DATA" --recompute $mode $flags --profile --log "$log" \
                >"$log.out" 2>&1 || { cat "$log.out" >&2; exit 1; }
            "$PY" -c 'import json,sys; print(json.dumps({"layout": sys.argv[2], "mode": sys.argv[3],
                "log": sys.argv[1]}))' "$log" "$label" "$mode" >>"$RUNS"
        done
    done
fi
section=$OUT/section.md
"$PY" - "$PLANS" "$RUNS" "$STEPS" "$MEASURED" >"$section" <<'PY'
import json, re, statistics, sys


def cpu_ms_per_step(out):
    """Rank 0's process CPU ms per step from its --profile table (wall x busy x threads)."""
    text = open(out).read()
    threads = int(re.search(r"^profile: .* (\d+) threads", text, re.M).group(1))
    ms = 0.0
    for m in re.finditer(r"^  (\w+)\s+([\d.]+)\s+[\d.]+%\s+\S+\s+(\d+)%", text, re.M):
        ms += float(m.group(2)) * int(m.group(3)) / 100 * threads
    return ms
plans = [json.loads(l) for l in open(sys.argv[1])]
runs = [json.loads(l) for l in open(sys.argv[2])]
MiB = 2**20
print("## Activation recomputation and sequence parallelism")
print()
print("`bash bench/recompute.sh`. Planned: gpt2-medium, micro-batch 8 x 1024 tokens, grad-accum 8,")
print("fp32, the largest rank of each layout (`zerotrain memory --json`; the plan equals the")
print("allocation to the byte). Activations are the per-micro-batch tensors kept for the")
print("backward (every micro-batch in flight); the workspace holds the recomputation's one layer.")
print()
print("| layout | --recompute | activations MiB | workspace MiB | rank total MiB | activations vs none |")
print("|---|---|---:|---:|---:|---:|")
base = {}
for p in plans:
    top = max(p["ranks"], key=lambda r: r["peak"])
    a, w = top["bytes"]["activations"], top["bytes"]["workspace"]
    if p["mode"] == "none":
        base[p["layout"]] = a
    print(f"| {p['layout']} | {p['mode']} | {a / MiB:.0f} | {w / MiB:.0f} | {top['peak'] / MiB:.0f} |"
          f" {a / base[p['layout']]:.3f} |")
if runs:
    print()
    print(f"Measured on this machine: {sys.argv[4]}, micro-batch 1 x 1024 tokens, {sys.argv[3]} steps,")
    print("rank 0's allocator peaks and peak RSS (the log's end record), the median step time after")
    print("the first step, and rank 0's CPU time per step from `--profile` (what the step needs,")
    print("whatever else runs on the machine); one rank runs 2 OpenMP threads, tp 2 one per rank.")
    print()
    print("| layout | --recompute | activations MiB | workspace MiB | RSS peak MiB | wall ms/step | CPU ms/step | CPU vs none |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    tbase = {}
    for r in runs:
        recs = [json.loads(l) for l in open(r["log"])]
        ms = [x["ms"] for x in recs if "step" in x and "ms" in x][1:]
        end = next(x for x in recs if x.get("rank") == 0 and "mem_peak" in x)
        t, cpu = statistics.median(ms), cpu_ms_per_step(r["log"] + ".out")
        if r["mode"] == "none":
            tbase[r["layout"]] = cpu
        mp = end["mem_peak"]
        print(f"| {r['layout']} | {r['mode']} | {mp['activations'] / MiB:.0f} | "
              f"{mp['workspace'] / MiB:.0f} | {end['rss_peak'] / MiB:.0f} | {t:.0f} | "
              f"{cpu:.0f} | {cpu / tbase[r['layout']]:.2f} |")
PY
cat "$section"
[ -n "${PLAN_ONLY:-}" ] || [ -n "${NO_RESULTS:-}" ] ||
    "$PY" bench/results_section.py bench/RESULTS.md "## Activation recomputation and sequence parallelism" <"$section"
