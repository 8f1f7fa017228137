#!/usr/bin/env bash
# The memory bench on the GPU (issue 26): GPT-2 medium in bf16, every rank on the one GPU,
# per-rank device memory measured two ways against the planner (`zerotrain memory --json`):
#   - the allocator's count: each rank's end-of-run record in --log ("mem_peak" per category,
#     "mem_peak_total"), as bench/memory.sh reads it on the CPU;
#   - cudaMemGetInfo's view: nvidia-smi --query-compute-apps=pid,used_memory sampled every
#     200 ms during the run, the largest sample per process (the CUDA context, cuBLAS's
#     workspace and the caching of the driver included: the trainer's log does not record
#     memory_info per rank, train_checks.c reads it only to refuse a run that does not fit).
# Cells (BACKEND=cuda): dp 2 with --zero 0 / 1 and --optim adamw / adamw8bit, and pp 2 with
# --partition uniform / parameters / memory; each trains STEPS (3) steps. "within 5%" is the
# allocator's total per rank against the planner's device total ("tracked"): |m - p| <= 5% p.
# The exit status is 1 when a rank is outside 5%.
#
#   bash bench/gpu_memory.sh OUTDIR                 # table OUTDIR/gpu_memory.md, plot
#                                                   # OUTDIR/gpu_memory.png, the section of
#                                                   # bench/RESULTS.md (NO_RESULTS=1: not)
#   BACKEND=cpu ZT=build/zerotrain bash bench/gpu_memory.sh /tmp/dry
#                                                   # dry run: a 2-layer tiny model, 2 steps,
#                                                   # on the CPU; RESULTS.md never written
# Without a GPU (BACKEND=cuda and nvidia-smi -L finds none) it SKIPs: one line, exit 77.
# Variables: MODEL_ARGS (the model flags), SEQ (512), MB (4), STEPS, CELLS (names to run,
# e.g. "dp2_z0_adamw pp2_memory"), PY.
set -euo pipefail
cd "$(dirname "$0")/.."

BACKEND=${BACKEND:-cuda}
PY=${PY:-/usr/bin/python3}
OUTDIR=${1:-${OUT:-build/bench/gpu_memory}}
DRY=0
if [ "$BACKEND" = cuda ]; then
    ZT=${ZT:-build/zerotrain-cuda}
    if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
        echo "SKIP: no GPU here (nvidia-smi -L finds none); BACKEND=cpu ZT=build/zerotrain for the dry run"
        exit 77
    fi
    read -r -a MODEL <<<"${MODEL_ARGS:---model gpt2-medium --seq ${SEQ:-512} --micro-batch ${MB:-4}}"
    STEPS=${STEPS:-3}
else
    ZT=${ZT:-build/zerotrain}
    DRY=1
    read -r -a MODEL <<<"${MODEL_ARGS:---model tiny --n-layer 2 --seq 64 --micro-batch 2}"
    STEPS=${STEPS:-2}
    echo "gpu_memory.sh: DRY RUN on the $BACKEND backend (${MODEL[*]}, $STEPS steps): the" \
        "script's plumbing only, no GPU figures; bench/RESULTS.md is not written"
fi
[ -x "$ZT" ] || { echo "gpu_memory.sh: $ZT missing; build it first (make -j all; make cuda for the GPU)" >&2; exit 1; }
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
MPIRUN+=(-x OMP_NUM_THREADS)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$OUTDIR"
DATA=build/bench/gpu_memory_tokens.bin VOCAB=50257
[ $DRY -eq 1 ] && DATA=build/bench/gpu_memory_tokens_dry.bin VOCAB=256 # the tiny model's vocabulary
mkdir -p build/bench
[ -f "$DATA" ] || "$PY" bench/make_tokens.py "$DATA" $((1 << 20)) "$VOCAB"

ALL_CELLS="dp2_z0_adamw dp2_z1_adamw dp2_z0_adamw8bit dp2_z1_adamw8bit pp2_uniform pp2_parameters pp2_memory"
CELLS=${CELLS:-$ALL_CELLS}
MANIFEST=$OUTDIR/gpu_memory_manifest.jsonl
: >"$MANIFEST"
SMI_PID=""
stop_smi() { if [ -n "$SMI_PID" ]; then kill "$SMI_PID" 2>/dev/null || true; wait "$SMI_PID" 2>/dev/null || true; SMI_PID=""; fi; }
trap stop_smi EXIT

for c in $CELLS; do
    case $c in
    dp2_z[01]_adamw|dp2_z[01]_adamw8bit)
        z=${c#dp2_z}; z=${z%%_*}; o=${c#dp2_z?_}
        flags=(--dp 2 --zero "$z" --optim "$o"); world=2; group=dp ;;
    pp2_uniform|pp2_parameters|pp2_memory)
        flags=(--dp 1 --pp 2 --partition "${c#pp2_}" --grad-accum 4); world=2; group=partition ;;
    *) echo "gpu_memory.sh: unknown cell $c ($ALL_CELLS)" >&2; exit 1 ;;
    esac
    flags+=(--backend "$BACKEND" --param-dtype bf16)
    plan=$OUTDIR/$c.plan.json log=$OUTDIR/$c.jsonl smi=$OUTDIR/$c.smi pids=$OUTDIR/$c.pids
    echo "== $c: ${flags[*]}" >&2
    "$ZT" memory --json "${MODEL[@]}" "${flags[@]}" >"$plan"
    rm -f "$log" "$smi" "$pids"
    if [ $DRY -eq 0 ]; then
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 200 \
            >"$smi" 2>/dev/null &
        SMI_PID=$!
    fi
    # each rank writes "rank pid" before it execs the trainer (the same pid): nvidia-smi's
    # processes to ranks
    # shellcheck disable=SC2016 # expanded by the rank's bash
    "${MPIRUN[@]}" -np "$world" bash -c 'echo "${OMPI_COMM_WORLD_RANK:-0} $$" >>"$0"; shift; exec "$@"' \
        "$pids" _ "$ZT" train "${MODEL[@]}" "${flags[@]}" --steps "$STEPS" --warmup 0 \
        --val-every 0 --data "$DATA" --log "$log" >"$OUTDIR/$c.out" 2>&1 ||
        { stop_smi; cat "$OUTDIR/$c.out" >&2; exit 1; }
    stop_smi
    "$PY" -c 'import json,sys; print(json.dumps(dict(zip(["name","group","world","plan","log","smi","pids","flags"], sys.argv[1:]))))' \
        "$c" "$group" "$world" "$plan" "$log" "$smi" "$pids" "${flags[*]}" >>"$MANIFEST"
done

section=$OUTDIR/gpu_memory.md
set +e
"$PY" - "$MANIFEST" "$OUTDIR/gpu_memory.png" "$DRY" "${MODEL[*]}" "$STEPS" >"$OUTDIR/gpu_memory_tables.md" <<'EOF'
import json, os, sys
man, png, dry, model, steps = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5]
CATS = ["params", "grads", "optimizer", "activations", "workspace", "comm", "logits"]
MIB = 1048576.0
mib = lambda b: "-" if b is None else "%.1f" % (b / MIB)
cells = [json.loads(l) for l in open(man) if l.strip()]
bad = 0
rows = []
for c in cells:
    plan = {r["rank"]: r for r in json.load(open(c["plan"]))["ranks"]}
    recs = {}
    for l in open(c["log"]):
        o = json.loads(l) if l.strip() else {}
        if "mem_peak" in o:
            recs[o["rank"]] = o
    assert sorted(recs) == sorted(plan) == list(range(int(c["world"]))), \
        "%s: ranks in the log %s, in the plan %s" % (c["name"], sorted(recs), sorted(plan))
    smi = {}  # pid -> largest used_memory (MiB)
    if os.path.exists(c["smi"]):
        for l in open(c["smi"]):
            f = [x.strip() for x in l.split(",")]
            if len(f) == 2 and f[0].isdigit() and f[1].isdigit():
                smi[int(f[0])] = max(smi.get(int(f[0]), 0), int(f[1]))
    pid = {}
    for l in open(c["pids"]):
        r, p = l.split()
        pid[int(r)] = int(p)
    for r in sorted(plan):
        p, m = plan[r], recs[r]
        pred, meas = p["tracked"], m["mem_peak_total"]
        used = smi.get(pid.get(r, -1))
        err = (meas - pred) / pred if pred else 0.0
        ok = abs(err) <= 0.05
        bad += not ok
        rows.append(dict(cell=c["name"], group=c["group"], rank=r, dp=p["dp_rank"], pp=p["pp_rank"],
                         pred=pred, meas=meas, err=err, ok=ok,
                         smi=None if used is None else used * MIB,
                         state_p=sum(p["bytes"][k] for k in CATS[:3]),
                         state_m=sum(m["mem_peak"][k] for k in CATS[:3]),
                         cats_p=p["bytes"], cats_m=m["mem_peak"]))
print("Per rank: the planner's device total (`zerotrain memory --json`, \"tracked\") against the "
      "allocator's peak total (the --log record), and nvidia-smi's largest used_memory of the "
      "rank's process (cudaMemGetInfo's view: the CUDA context and library workspaces included; "
      "\"-\" where none was sampled). MiB.\n")
print("| cell | rank (dp, pp) | model state planned / measured | planned total | allocator total "
      "| allocator - planned | nvidia-smi used | nvidia-smi - allocator | within 5% |")
print("|---|---|---|---|---|---|---|---|---|")
for x in rows:
    print("| %s | %d (%d, %d) | %s / %s | %s | %s | %+.2f%% | %s | %s | %s |" % (
        x["cell"], x["rank"], x["dp"], x["pp"], mib(x["state_p"]), mib(x["state_m"]),
        mib(x["pred"]), mib(x["meas"]), 100 * x["err"], mib(x["smi"]),
        "-" if x["smi"] is None else mib(x["smi"] - x["meas"]), "yes" if x["ok"] else "NO"))
print("\nSavings (the largest rank of each cell, allocator total; against the first cell of its group):\n")
print("| cell | largest rank, planned | measured | saved against | saved MiB | saved % |")
print("|---|---|---|---|---|---|")
base = {}
for c in cells:
    rs = [x for x in rows if x["cell"] == c["name"]]
    top = max(rs, key=lambda x: x["meas"])
    b = base.setdefault(c["group"], (c["name"], top["meas"]))
    print("| %s | %s | %s | %s | %s | %.1f%% |" % (c["name"], mib(max(x["pred"] for x in rs)),
          mib(top["meas"]), b[0], mib(b[1] - top["meas"]), 100 * (b[1] - top["meas"]) / b[1]))
print("\n%d of %d ranks within 5%% of the planner%s." % (len(rows) - bad, len(rows),
      " (DRY RUN: CPU, a tiny model; no GPU figures)" if dry else ""))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(11, 4.5))
    labels = ["%s r%d" % (x["cell"], x["rank"]) for x in rows]
    xs = range(len(rows))
    w = 0.28
    ax.bar([i - w for i in xs], [x["pred"] / MIB for x in rows], w, label="planner")
    ax.bar(list(xs), [x["meas"] / MIB for x in rows], w, label="allocator")
    ax.bar([i + w for i in xs], [(x["smi"] or 0) / MIB for x in rows], w, label="nvidia-smi")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("MiB per rank")
    ax.set_title(("DRY RUN (CPU): " if dry else "") + "device memory per rank, bf16: " + model)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
except ImportError:
    print("(no matplotlib: no plot)")
sys.exit(1 if bad else 0)
EOF
rc=$?
set -e
{
    if [ $DRY -eq 1 ]; then
        echo "## Memory on the GPU: planner against the allocator and nvidia-smi (DRY RUN on $BACKEND)"
    else
        echo "## Memory on the GPU: planner against the allocator and nvidia-smi"
        echo
        echo "\`bash bench/gpu_memory.sh\` on $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader -i 0)," \
            "$(date -u +%Y-%m-%d); ${MODEL[*]}, --param-dtype bf16, $STEPS steps per cell, every rank" \
            "on the one GPU (tensors through MPI with host staging). \`bench/gpu_memory.png\`:" \
            "planned, allocator and nvidia-smi per rank."
    fi
    echo
    cat "$OUTDIR/gpu_memory_tables.md"
} >"$section"
cat "$section"
if [ $DRY -eq 0 ] && [ -z "${NO_RESULTS:-}" ] && [ $rc -eq 0 ]; then
    [ -f "$OUTDIR/gpu_memory.png" ] && cp "$OUTDIR/gpu_memory.png" bench/gpu_memory.png
    "$PY" bench/results_section.py bench/RESULTS.md \
        "## Memory on the GPU: planner against the allocator and nvidia-smi" <"$section"
    echo "wrote bench/RESULTS.md" >&2
fi
[ $rc -eq 0 ] || echo "gpu_memory.sh: a rank's allocator total is outside 5% of the planner (or the report failed)" >&2
exit $rc
