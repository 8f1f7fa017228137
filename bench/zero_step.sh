#!/usr/bin/env bash
# ZeRO-1 vs ZeRO-0 step time at dp = 2, and the options tried to keep ZeRO-1 no slower.
#
#   bash bench/zero_step.sh                 # both parts; writes the section of RESULTS.md
#   PARTS=step bash bench/zero_step.sh      # only the training steps (PARTS=comm: only part 1)
#   ROUNDS=5 STEPS=8 bash bench/zero_step.sh
#   NO_RESULTS=1 bash bench/zero_step.sh    # print, leave bench/RESULTS.md alone
#   PARTS=report bash bench/zero_step.sh    # no runs: rebuild the section from the last ones
#
# Part 1 (comm): every collective option, measured with build/comm_bw at COMM_MIB (64) MiB
# on 2 ranks: Open MPI's algorithm choices for reduce_scatter_block and allreduce
# (--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_..._algorithm N), its shared-
# memory transport without single copy (--mca btl_vader_single_copy_mechanism none),
# huge pages for every malloc (GLIBC_TUNABLES=glibc.malloc.hugetlb=1) or only for the
# benchmark's buffers (comm_bw --thp), and the plain-MPI alternatives of comm_bw
# --variants. Each row: median time of the zt_comm_* call and of the plain MPI call.
#
# Part 2 (step): GPT-2 124M, micro-batch 1 x 64 tokens per rank, 2 ranks, one OpenMP
# thread each (OMP_NUM_THREADS=1), STEPS (6) steps per run; the first SKIP (1) step of each
# run is dropped. A setting runs --zero 0 and --zero 1 back to back (the order alternating
# by round), and the rounds rotate the order of the settings, so slow drifts of the load
# from elsewhere hit both halves of a ratio alike. Reported: the median ms/step and the
# median over ROUNDS (3) of the per-round ZeRO-1 / ZeRO-0 ratio. Each run is
#   mpirun --oversubscribe --allow-run-as-root -np 2 -x OMP_NUM_THREADS [-x ENV] BINARY
#       --model gpt2 --micro-batch 1 --seq 64 --zero Z --steps STEPS --warmup 0
#       --lr-schedule constant --val-every 0 --data build/bench/zero_tokens.bin --log FILE
# Settings: collectives ZT_COMM_MPI_ALGO=mpi (MPI's own: what comm_mpi.c did before),
# stage (the default now) or stage-all; memory plain, GLIBC_TUNABLES=glibc.malloc.hugetlb=1, or
# "madvise": build/bench/thp/zerotrain, linked with src/core/memory.c patched by
# bench/memory_thp.patch (2 MiB-aligned, MADV_HUGEPAGE for blocks of 4 MiB and more).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-/usr/bin/python3}
OUT=build/bench
PARTS=${PARTS:-"comm step"}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-6}
SKIP=1
COMM_MIB=${COMM_MIB:-64}
COMM_REPS=${COMM_REPS:-9}
MPIRUN=(mpirun --oversubscribe --allow-run-as-root -np 2)
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
[ -x build/zerotrain ] && [ -x build/comm_bw ] ||
    { echo "zero_step.sh: run make -j2 all bench first" >&2; exit 1; }
DATA=$OUT/zero_tokens.bin
[ -f "$DATA" ] || "$PY" bench/make_tokens.py "$DATA" 65536
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
HOST="$(nproc --all) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"

# ---- part 1: the collective options ----
comm_table=""
if [[ " $PARTS " == *" comm "* ]]; then
    COMM_LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
    # name | mpirun options | comm_bw options
    OPTIONS=(
        "defaults (+ zt with ZT_COMM_MPI_ALGO=stage-all)||--ops sgr --algo stage-all"
        "rs_block algorithm 1 (basic linear)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_reduce_scatter_block_algorithm 1|--ops s"
        "rs_block algorithm 2 (recursive doubling)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_reduce_scatter_block_algorithm 2|--ops s"
        "rs_block algorithm 3 (recursive halving)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_reduce_scatter_block_algorithm 3|--ops s"
        "rs_block algorithm 4 (butterfly)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_reduce_scatter_block_algorithm 4|--ops s"
        "allreduce algorithm 1 (basic linear)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 1|--ops r"
        "allreduce algorithm 2 (nonoverlapping)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 2|--ops r"
        "allreduce algorithm 3 (recursive doubling)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 3|--ops r"
        "allreduce algorithm 4 (ring)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4|--ops r"
        "allreduce algorithm 5 (segmented ring)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 5|--ops r"
        "allreduce algorithm 6 (rabenseifner)|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 6|--ops r"
        "vader without single copy (no CMA)|--mca btl_vader_single_copy_mechanism none|--ops sgr"
        "GLIBC_TUNABLES=glibc.malloc.hugetlb=1|-x GLIBC_TUNABLES=glibc.malloc.hugetlb=1|--ops sgr"
        "hugetlb + vader without single copy|-x GLIBC_TUNABLES=glibc.malloc.hugetlb=1 --mca btl_vader_single_copy_mechanism none|--ops sgr"
        "THP user buffers (madvise, comm_bw --thp)||--ops sgr --thp"
        "plain-MPI alternatives (comm_bw --variants)||--ops sr --variants"
        "alternatives, THP user buffers||--ops sr --variants --thp"
        "staging slot 64 / 1024 / 4096 KiB||--ops sgr --stage-kib 64,1024,4096"
        "GPT-2 124M's flat buffer (474.75 MiB)||--ops sgr --algo stage-all --min-kib 486144 --max-kib 486144 --reps 5"
    )
    rm -f "$OUT/zstep_comm.txt"
    for o in "${OPTIONS[@]}"; do
        IFS='|' read -r name mca args <<<"$o"
        echo "== comm: $name" >&2
        # shellcheck disable=SC2086
        "${MPIRUN[@]}" $mca build/comm_bw --min-mib "$COMM_MIB" --max-mib "$COMM_MIB" \
            --reps "$COMM_REPS" $args > "$OUT/zstep_comm.out" 2>&1 ||
            { cat "$OUT/zstep_comm.out" >&2; exit 1; }
        grep '^RESULT' "$OUT/zstep_comm.out" | sed "s|^|$name\t|" >> "$OUT/zstep_comm.txt"
    done
    echo "COMM_DATE='$DATE' COMM_LOAD='$COMM_LOAD0 / $(cut -d' ' -f1-3 /proc/loadavg)'" \
        "COMM_MIB=$COMM_MIB COMM_REPS=$COMM_REPS" > "$OUT/zstep_comm.meta"
fi
if [[ " $PARTS " == *" comm "* || " $PARTS " == *" report "* ]] && [ -f "$OUT/zstep_comm.txt" ]; then
    # shellcheck disable=SC1091
    . "$OUT/zstep_comm.meta"
    comm_table=$("$PY" - "$OUT/zstep_comm.txt" <<'EOF'
import sys
rows = {}
order = []
for line in open(sys.argv[1]):
    name, res = line.rstrip("\n").split("\t")
    kv = dict(x.split("=") for x in res.split()[1:])
    key = (name, kv["op"])
    if key not in rows:
        rows[key] = []
        order.append(key)
    rows[key].append(kv)
print("| option | collective | zt_comm (stage) ms | plain MPI ms | other variants, ms (busbw GB/s) |")
print("|---|---|---|---|---|")
for key in order:
    name, op = key
    d = {kv["impl"]: kv for kv in rows[key]}
    zt = d.get("zt")
    mp = d.get("mpi")
    others = [f"{i} {float(kv['ms']):.1f} ({kv['busbw']})" for i, kv in d.items()
              if i not in ("zt", "mpi")]
    f = lambda kv: f"{float(kv['ms']):.1f} ({kv['busbw']})" if kv else "-"
    print(f"| {name} | {op} | {f(zt)} | {f(mp)} | {'; '.join(others) or ''} |")
# What one step's collectives cost at the flat buffer's size, by implementation.
flat = [k for k in order if k[0].startswith("GPT-2 124M")]
if flat:
    d = {op: {kv["impl"]: float(kv["ms"]) for kv in rows[(name, op)]} for name, op in flat}
    print()
    print("One step's gradient collectives at GPT-2 124M's flat buffer (the last row above):")
    print()
    print("| implementation | ZeRO-0: all-reduce ms | ZeRO-1: reduce-scatter + all-gather ms "
          "| ZeRO-1 / ZeRO-0 |")
    print("|---|---|---|---|")
    for impl, label in (("mpi", "plain MPI (before)"), ("zt", "zt_comm default (stage)"),
                        ("zt_stage-all", "zt_comm, stage-all")):
        ar = d["all_reduce"][impl]
        z1 = d["reduce_scatter"][impl] + d["all_gather"][impl]
        print(f"| {label} | {ar:.0f} | {d['reduce_scatter'][impl]:.0f} + "
              f"{d['all_gather'][impl]:.0f} = {z1:.0f} | {z1 / ar:.2f} |")
EOF
)
    echo "$comm_table"
fi

# ---- part 2: the training step ----
step_table=""
if [[ " $PARTS " == *" step "* ]]; then
    STEP_LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
    # The "madvise" binary: src/core/memory.c with bench/memory_thp.patch, the rest from libzt.a
    # (the linker takes zt_mem_* from the patched object and never pulls the archive's).
    THP=$OUT/thp
    mkdir -p "$THP"
    cp src/core/memory.c "$THP/memory.c"
    have_thp=1
    if patch -s "$THP/memory.c" bench/memory_thp.patch >/dev/null 2>&1; then
        # memory.c needs only src/ headers; the Makefile's code flags, no MPI
        ${CC:-cc} -O2 -g -march=native -std=c11 -Wall -Wextra -fopenmp -D_GNU_SOURCE -Isrc \
            -c "$THP/memory.c" -o "$THP/memory.o"
        ${CC:-cc} -fopenmp -o "$THP/zerotrain" build/src/main.o "$THP/memory.o" build/libzt.a \
            $(mpicc --showme:link) -lopenblas -lcjson -lm
    else
        echo "zero_step.sh: bench/memory_thp.patch no longer applies to src/core/memory.c; " \
             "skipping the madvise variants" >&2
        have_thp=0
    fi

    # A setting (collectives, memory) runs with --zero 0 and --zero 1 back to back, so the
    # ZeRO-1 / ZeRO-0 ratio of one round compares two runs a minute apart.
    # name | binary | environment
    SETTINGS=(
        "mpi|build/zerotrain|ZT_COMM_MPI_ALGO=mpi"
        "stage|build/zerotrain|"
        "stage-all|build/zerotrain|ZT_COMM_MPI_ALGO=stage-all"
        "mpi hugetlb|build/zerotrain|ZT_COMM_MPI_ALGO=mpi GLIBC_TUNABLES=glibc.malloc.hugetlb=1"
        "stage hugetlb|build/zerotrain|GLIBC_TUNABLES=glibc.malloc.hugetlb=1"
    )
    if [ $have_thp = 1 ]; then
        SETTINGS+=(
            "mpi madvise|$THP/zerotrain|ZT_COMM_MPI_ALGO=mpi"
            "stage madvise|$THP/zerotrain|"
        )
    fi
    ns=${#SETTINGS[@]}
    rm -f "$OUT/zstep_steps.txt"
    for ((round = 0; round < ROUNDS; round++)); do
        for ((j = 0; j < ns; j++)); do
            IFS='|' read -r name bin envs <<<"${SETTINGS[$(((j + round) % ns))]}"
            # which of the pair goes first alternates, so neither always runs second
            if ((round % 2)); then zs="1 0"; else zs="0 1"; fi
            for z in $zs; do
                echo "== step round $((round + 1))/$ROUNDS: $name, zero $z" >&2
                xs=(-x OMP_NUM_THREADS)
                for e in $envs; do xs+=(-x "$e"); done
                log="$OUT/zstep_z${z}_${name// /_}.jsonl"
                # shellcheck disable=SC2086
                env $envs "${MPIRUN[@]}" "${xs[@]}" "$bin" --model gpt2 --micro-batch 1 --seq 64 \
                    --zero "$z" --steps "$STEPS" --warmup 0 --lr-schedule constant \
                    --val-every 0 --data "$DATA" --log "$log" > "$OUT/zstep.out" 2>&1 ||
                    { cat "$OUT/zstep.out" >&2; exit 1; }
                "$PY" - "$log" "$SKIP" "$name" "$z" "$round" >> "$OUT/zstep_steps.txt" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"ms"' in l]
for r in rows[int(sys.argv[2]):]:
    print("\t".join(sys.argv[3:6]) + f"\t{r['ms']}")
EOF
            done
        done
    done
    echo "STEP_DATE='$DATE' STEP_LOAD='$STEP_LOAD0 / $(cut -d' ' -f1-3 /proc/loadavg)'" \
        "STEP_ROUNDS=$ROUNDS STEP_STEPS=$STEPS" > "$OUT/zstep_steps.meta"
fi
if [[ " $PARTS " == *" step "* || " $PARTS " == *" report "* ]] && [ -f "$OUT/zstep_steps.txt" ]; then
    # shellcheck disable=SC1091
    . "$OUT/zstep_steps.meta"
    step_table=$("$PY" - "$OUT/zstep_steps.txt" <<'EOF'
import statistics as st, sys
runs = {}  # (setting, zero) -> round -> [ms]
for line in open(sys.argv[1]):
    name, z, rnd, v = line.rstrip("\n").split("\t")
    runs.setdefault((name, int(z)), {}).setdefault(int(rnd), []).append(float(v))
names = list(dict.fromkeys(name for name, z in runs))  # round 0's order: the settings'
def med(name, z):
    return st.median([x for v in runs[(name, z)].values() for x in v])
def per_round(name, z):
    return {r: st.median(v) for r, v in runs[(name, z)].items()}
base = per_round("mpi", 0)
print("| collectives | memory | ZeRO-0 ms/step | ZeRO-1 ms/step | ZeRO-1 / ZeRO-0, per round "
      "| **ZeRO-1 / ZeRO-0** (median) | ZeRO-0 vs mpi ZeRO-0 | ZeRO-1 vs mpi ZeRO-0 |")
print("|---|---|---|---|---|---|---|---|")
for n in names:
    coll, mem = (n.split() + ["plain"])[:2]
    r0, r1 = per_round(n, 0), per_round(n, 1)
    ratios = [r1[r] / r0[r] for r in sorted(r0)]
    v0 = st.median([r0[r] / base[r] for r in sorted(base)])
    v1 = st.median([r1[r] / base[r] for r in sorted(base)])
    print(f"| {coll} | {mem} | {med(n, 0):.0f} | {med(n, 1):.0f} | "
          f"{', '.join(f'{x:.2f}' for x in ratios)} | **{st.median(ratios):.2f}** | "
          f"{v0:.2f} | {v1:.2f} |")
EOF
)
    echo "$step_table"
fi

if [ -z "${NO_RESULTS:-}" ] && [ -n "$step_table" ] && [ -n "$comm_table" ]; then
    SECTION_FILE=$OUT/zstep_section.md
    cat > "$SECTION_FILE" <<EOF
## ZeRO-1 vs ZeRO-0 step time (dp = 2)

$HOST, shared with other jobs: the training steps were measured from $STEP_DATE (load
average $STEP_LOAD, start / end), the collectives from $COMM_DATE (load $COMM_LOAD).
With 2 cores and a load of 3 to 7, absolute times swing by up to 2x between runs: read the
ratios, each taken between runs a minute apart.

### Training step

GPT-2 124M (124.4M parameters: a 475 MiB flat gradient buffer), micro-batch 1 x 64 tokens
per rank, 2 ranks, OMP_NUM_THREADS=1 each, $STEP_STEPS steps per run with the first dropped.
Every setting ran with --zero 0 and --zero 1 back to back, in $STEP_ROUNDS rounds (each round
starts at another setting and alternates which zero goes first). ms/step: median over all
rounds; ZeRO-1 / ZeRO-0 per round: the ratio of the two runs' medians; the bold column
their median. The last two columns: median over rounds of the run against that round's
"mpi" ZeRO-0 run (below 1: faster than ZeRO-0 was before this work).

Collectives: "mpi" = ZT_COMM_MPI_ALGO=mpi, MPI_Allreduce / MPI_Reduce_scatter_block /
MPI_Allgather, as comm_mpi.c did before; "stage" = the default now (staged reduce-scatter,
MPI all-gather; all-reduce = staged reduce-scatter + MPI_Allgatherv); "stage-all" = the
all-gather staged too. Memory: "hugetlb" = GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (every
large malloc on transparent huge pages, MPI's temporaries included); "madvise" = zerotrain
linked with src/core/memory.c patched by bench/memory_thp.patch (the runtime's own buffers on
huge pages, nothing else).

$step_table

Reading it: the bold ratio is below 1 in every setting. ZeRO-1 runs AdamW on half the
parameters per rank, and on this loaded machine that memory-bound half outweighs the
collectives even with plain MPI; the per-round spread shows how far the load moved
between two runs a minute apart. The collectives alone are measured below, at the same
475 MiB: with plain MPI, ZeRO-1's reduce-scatter + all-gather takes about 1.6x ZeRO-0's
all-reduce (docs/machine.md's warning: ZeRO-1 would lose on a quiet machine); with the staged
reduce-scatter the two are even, and both are faster than before, so ZeRO-1 no longer
depends on the AdamW saving to break even. Huge pages (hugetlb, madvise) moved the step
by less than this machine's noise; the collective they help is the all-gather, about
1.4x faster on huge-page buffers at 475 MiB (about 100 ms -> 70 ms, comm_bw --thp),
a 1-2% step gain that these step runs cannot resolve.

### Every collective option (2 ranks, in-place forms)

Each row one \`build/comm_bw\` run at $COMM_MIB MiB unless it says otherwise (median of
$COMM_REPS, cases interleaved); time in ms, busbw in GB/s. "zt_comm" is the comm layer's
call, with its defaults, in the same run: it shows how loaded the machine was during that
row. Other variants: zt_stage-all (ZT_COMM_MPI_ALGO=stage-all), zt_slotNk (staging slot of
N KiB), rs_block_oop (MPI_Reduce_scatter_block out of place), rs_v (MPI_Reduce_scatter),
rs_allreduce (MPI_Allreduce in place: the block is then in place already), rs_ring_N (ring
of MPI_Sendrecv in N KiB chunks into a persistent scratch + MPI_Reduce_local), rs_shm (the
buffer itself in an MPI-3 shared window, each rank summing its block straight from the
others: no copy at all), ar_ring_256 (rs_ring_256 + MPI_Allgather).

$comm_table

### What was tried, and what we adopted

- Open MPI's algorithm choice (coll_tuned_use_dynamic_rules + reduce_scatter_block
  algorithm 1-4, allreduce algorithm 1-6): no reduce-scatter algorithm comes within 4x of
  the staged one; the default allreduce decision is as good as any forced one. Nothing to
  set: the tuned component's temporaries, not its algorithm, are the cost.
- Other MPI primitives for the reduce-scatter (MPI_Reduce_scatter, out of place,
  MPI_Allreduce and keep the block): none within 5x of staging; MPI_Allreduce (the block
  is then already in place) is the best of them, at about 60% of MPI_Reduce_scatter_block.
- vader without single copy (--mca btl_vader_single_copy_mechanism none): copy-in/copy-out
  through vader's fragments; no better for reduce-scatter, worse for all-gather.
- A ring of MPI_Sendrecv + MPI_Reduce_local with a persistent pre-touched scratch: on par
  with staging only when the user's buffers are on huge pages (CMA then pins 512x fewer
  pages); with 4 KiB pages 1.5-3x slower than staging.
- Huge pages: GLIBC_TUNABLES=glibc.malloc.hugetlb=1 speeds MPI's own reduce-scatter and
  all-reduce about 1.5-2x (their temporaries fault less) and MPI's all-gather 1.1-2x (CMA
  pins fewer pages), but MPI's reduce-scatter stays 5-7x slower than staging. It is a launch
  setting the user makes (\`mpirun -x GLIBC_TUNABLES=glibc.malloc.hugetlb=1\`), not one the
  runtime can make for itself; the madvise patch gets the runtime's buffers the same pages
  without it.
- MPI-3 shared-memory windows: adopted, as a small staging window per node-local
  communicator (comm/comm_mpi.c). Putting the gradient buffer itself in a shared window
  (rs_shm) would save the copy into the window too, but needs the model's flat buffers to
  be allocated by the communicator: a change to the allocation seam, not to comm/.
- Adopted (the default now): staged reduce-scatter, MPI all-gather. ZeRO-1's step is then
  faster than ZeRO-0's, which spends the time ZeRO-1 saves on the full AdamW and on an
  all-reduce that is itself staged reduce-scatter + all-gather. ZT_COMM_MPI_ALGO=mpi
  restores the plain MPI collectives; ZT_COMM_MPI_ALGO=stage-all stages the all-gather too
  (only better on a quiet machine with 4 KiB pages). No MCA setting is needed or set by
  default.

Command: \`bash bench/zero_step.sh\` (ROUNDS=$STEP_ROUNDS STEPS=$STEP_STEPS COMM_MIB=$COMM_MIB;
PARTS=report rebuilds this section from the last measurements in build/bench/).
EOF
    "$PY" bench/results_section.py bench/RESULTS.md "## ZeRO-1 vs ZeRO-0 step time (dp = 2)" \
        < "$SECTION_FILE"
    echo "wrote bench/RESULTS.md" >&2
fi
