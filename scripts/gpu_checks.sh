#!/usr/bin/env bash
# The GPU checks of issues 24-26 in one command, for a session that has the GPU machine
# (10 minutes per command, a fresh machine each time: docs in README, "On a GPU").
#
#   bash scripts/gpu_checks.sh                       # build tests bench layouts
#   bash scripts/gpu_checks.sh profile repeat sanitize
#   bash scripts/gpu_checks.sh -o DIR STAGE...       # results into DIR
#
# A machine without cJSON or OpenBLAS installed needs them on the compiler's and loader's
# paths first (CPATH, LIBRARY_PATH, LD_LIBRARY_PATH, and build/.deps-ok to skip
# scripts/setup.sh where no package registry answers), and PYTHON naming a python whose torch
# has CUDA.
#
# Stages, in the order given (the build always runs first: make is a no-op when up to date):
#   build     make -j16 all cuda (CUDA_ARCH for this GPU's compute capability only, to save
#             nvcc time; GPU_ARCH="-gencode ..." overrides), and its warning count
#   tests     VERBOSE=1 make test-cuda: every cuda_* op test, tests/sh/cuda_train.sh (fp32,
#             bf16, 8-bit against the CPU) and tests/sh/cuda_comm.sh (2 ranks on one GPU)
#   bench     bench/gpu_step.sh DIR: zerotrain fp32/TF32/bf16 against PyTorch, GPT-2 124M,
#             B16 T1024 (DIR/gpu_step.md is the bench/RESULTS.md section)
#   layouts   the layout tests with ZT_BACKEND=cuda (tests/env.sh): every rank on the one GPU,
#             tensors through MPI with host staging, against the single-rank CUDA run
#             (LAYOUT_TESTS="dp_equivalence ..." picks them)
#   profile   nsys's kernel table for a few GPT-2 124M steps, fp32 and bf16 (DIR/profile.md),
#             and ncu --set basic on some kernels of a later step (DIR/ncu_basic.csv; ncu
#             needs the GPU's performance counters: ERR_NVGPUCTRPERM where they are withheld)
#   repeat    the GPU op tests REPEAT (20) times with fresh seeds (ZT_SEED), then
#             tests/sh/cuda_train.sh with fresh seeds while the time lasts (up to REPEAT)
#   cpu       bench/step_scaling.sh on this machine's CPU (issue 25: zerotrain against PyTorch
#             at 1-16 threads; CPU_THREADS "1 2 4 8 16", CPU_CONFIGS "4x64 8x256", CPU_ROUNDS 1,
#             CPU_STEPS 3, TORCH_BF16_STEPS 1 as given to it): DIR/cpu_scaling.md. Its own
#             command: about 8 minutes by the CPU figures seen there (1 thread is most of it);
#             each thread count's step.sh output (build/bench/scaling_t*.out) is in the logs
#   memory    bench/gpu_memory.sh (issue 26): GPT-2 medium bf16, dp 2 --zero 0/1 x adamw/adamw8bit
#             and pp 2 x the three --partition methods, every rank on the one GPU: the planner
#             against the allocator's per-rank peak and nvidia-smi's per-process used memory, a
#             "within 5%" flag per rank (FAIL when one is outside); DIR/gpu_memory.md is the
#             bench/RESULTS.md section (its plot and per-cell files in logs.tar.gz)
#   sanitize  compute-sanitizer memcheck, then racecheck, on each GPU op test (SAN_TOOLS picks:
#             "memcheck" or "racecheck" alone, when both do not fit one command)
# The default is "build tests bench layouts". Not covered: the layout tests that cannot take
# a backend yet: staged_equivalence.sh (its CPU emulation of staging is the
# point), generate_parallel.sh (generate on CUDA runs one rank), vocab_loss_mpi.sh and
# comm_mpi.sh (CPU ops and comm).
#
# Time: everything stops by BUDGET_S (560) seconds after the start, under the machine's
# 10-minute limit: each stage (and each layout script) runs under `timeout` with what is
# left; what has no time left is reported NOT RUN, to be given to the next command.
# Progress lines carry the UTC time and the seconds since the start.
#
# Results, in DIR (-o DIR, else $OUT, else build/gpu_checks/out), at most 8 files, since
# that is what comes back from the GPU machine: gpu_checks.log (this output), summary.txt
# (one line per check and the totals), gpu_step.md, profile.md, ncu_basic.csv, cpu_scaling.md,
# gpu_memory.md and logs.tar.gz (every stage's log and the tests' .out/.jsonl files; no checkpoints).
#
# Without a GPU every GPU stage SKIPs (the scripts say why; cpu runs anywhere): that is this
# script's dry run, e.g. `BUDGET_S=300 bash scripts/gpu_checks.sh -o /tmp/dry tests bench`.
# shellcheck disable=SC2317 # the stage_* functions are called by name ("stage_$st")
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

DIR="" DRY=0 PLAN_ONLY=0
while [ $# -gt 0 ]; do
    case $1 in
    -o) DIR=$2; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --plan) PLAN_ONLY=1; shift ;;
    *) break ;;
    esac
done
DRYTAG=""; [ "$DRY" = 1 ] && DRYTAG="dry run: "
DIR=${DIR:-${OUT:-build/gpu_checks/out}}
STAGES=("$@")
[ ${#STAGES[@]} -gt 0 ] || STAGES=(tests bench layouts)
FIRST_CONTACT=0
if [ "${STAGES[*]}" = first-contact ]; then
    FIRST_CONTACT=1
    # shellcheck source=scripts/gpu_first_contact.sh
    . scripts/gpu_first_contact.sh
    EMU_DIR=${EMU_DIR:-$(cd .. && pwd)/shared/cuda-emu}
    ZT_EMU_BUILD=${ZT_EMU_BUILD:-/tmp/zt_emu_$(basename "$PWD")}
    LAYOUT_TESTS=${LAYOUT_TESTS:-$FC_LAYOUT_TESTS}
    [ "$DRY" = 1 ] && FC_SCALE=3
    DRY_TESTS=${DRY_TESTS-cuda_layernorm}
    BUDGET_S=${BUDGET_S:-$((FC_BUDGET_S * FC_SCALE))}
    if [ "$PLAN_ONLY" = 1 ]; then fc_print_plan; exit 0; fi
elif [ "$DRY" = 1 ] || [ "$PLAN_ONLY" = 1 ]; then
    echo "gpu_checks.sh: --dry-run and --plan take the plan first-contact (the other stages SKIP without a GPU)" >&2
    exit 2
fi
BUDGET_S=${BUDGET_S:-560}
REPEAT=${REPEAT:-20}
JOBS=${JOBS:-16}
PY=${PYTHON:-/usr/bin/python3}
LAYOUT_TESTS=${LAYOUT_TESTS:-dp_equivalence tp_equivalence pp_equivalence bf16_layouts
    adamw8bit_equivalence ckpt_resume bf16_resume overlap}
WORK=${GPU_CHECKS_WORK:-build/gpu_checks/logs} # the stages' logs (emptied at the start)
T0=$(date +%s)
mkdir -p "$DIR" "$WORK"
rm -rf "${WORK:?}"/* "$DIR/summary.txt"
exec > >(tee "$DIR/gpu_checks.log") 2>&1
TEE_PID=$!

elapsed() { echo $(($(date +%s) - T0)); }
left() { echo $((BUDGET_S - $(elapsed))); }
say() { echo "[$(date -u +%H:%M:%S) +$(elapsed)s] $*"; }
npass=0 nfail=0 nskip=0 ntime=0 nnot=0
result() { # PASS|FAIL|SKIP|TIMEOUT|NOTRUN name detail
    case $1 in
    PASS) npass=$((npass + 1)) ;; FAIL) nfail=$((nfail + 1)) ;; SKIP) nskip=$((nskip + 1)) ;;
    TIMEOUT) ntime=$((ntime + 1)) ;; NOTRUN) nnot=$((nnot + 1)) ;;
    esac
    local line="$1 $2${3:+: $3}"
    [ "$1" = NOTRUN ] && line="NOT RUN $2${3:+: $3}"
    echo "$line" >> "$DIR/summary.txt"
    say "$line"
}
# run_logged label min_s cap_s cmd...: runs cmd with its output in $LOG ($WORK/<label with
# '_' for '/' and ' '>.log), under a timeout of min(cap_s, the time left less 15 s); NOT RUN
# where that is under min_s. Sets RC (77: SKIP, 124: TIMEOUT); returns 1 when it did not run.
RC=0 LOG=/dev/null
run_logged() {
    local label=$1 min=$2 cap=$3 t; shift 3
    LOG=$WORK/$(echo "$label" | tr '/ ' '__').log
    t=$(($(left) - 15))
    [ "$t" -gt "$cap" ] && t=$cap
    if [ "$t" -lt "$min" ]; then
        result NOTRUN "$label" "$((t < 0 ? 0 : t))s of the budget left, it needs ${min}s or more"
        RC=-1; return 1
    fi
    say "start $label (timeout ${t}s)"
    timeout -k 10 "$t" "$@" > "$LOG" 2>&1
    RC=$?
    return 0
}
# the verdict of the last run_logged by its exit code: 0 PASS, 77 SKIP (the log's last line
# says why), 124/137 TIMEOUT, else FAIL with the log's tail
judge() { # label
    local why
    case $RC in
    0) result PASS "$1" ;;
    77) why=$(grep . "$LOG" | tail -1 | sed 's/^SKIP:* *//'); result SKIP "$1" "$why" ;;
    124|137) result TIMEOUT "$1" "killed by its timeout; see $(basename "$LOG")" ;;
    *) result FAIL "$1" "exit $RC"; tail -15 "$LOG" | sed 's/^/    /' ;;
    esac
}

HAVE_GPU=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then HAVE_GPU=1; fi
say "gpu_checks: ${DRYTAG}stages $([ "$FIRST_CONTACT" = 1 ] || echo "build ")${STAGES[*]}; budget ${BUDGET_S}s; results in $DIR"
{
    echo "zerotrain $(git describe --always --dirty --tags 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "host: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
    if [ "$FIRST_CONTACT" = 1 ]; then : # its preflight says the rest
    elif [ "$HAVE_GPU" = 1 ]; then
        nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader
    else echo "GPU: none (nvidia-smi -L finds none): the GPU stages SKIP; a dry run of this script"
    fi
    if [ "$FIRST_CONTACT" = 0 ]; then
        command -v nvcc >/dev/null && nvcc --version | tail -2 | head -1
        "$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null ||
            echo "torch: not importable by $PY"
    fi
} | tee -a "$DIR/summary.txt"

# ---- build (always; first-contact builds in its own stage) ----
ARCH=${GPU_ARCH:-}
if [ -z "$ARCH" ] && [ "$HAVE_GPU" = 1 ]; then
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 2>/dev/null | tr -d ' .')
    [ -n "$cc" ] && ARCH="-gencode arch=compute_$cc,code=sm_$cc"
fi
build_ok=0
if [ "$FIRST_CONTACT" = 1 ]; then :
elif run_logged build 30 300 make -j"$JOBS" all cuda ${ARCH:+CUDA_ARCH="$ARCH"}; then
    warnings=$(grep -c "warning:" "$LOG")
    judge build
    [ "$RC" = 0 ] && build_ok=1
    say "build: $warnings compiler warnings${ARCH:+ (CUDA_ARCH $ARCH)}"
    echo "build warnings: $warnings" >> "$DIR/summary.txt"
fi

# find_tool name paths...: the tool on PATH, else the first of paths that runs; "" if none
find_tool() {
    local name=$1 p; shift
    command -v "$name" && return 0
    for p in "$@"; do [ -x "$p" ] && { echo "$p"; return 0; }; done
    echo ""
}

# GPU op tests: every cuda_* test of the CUDA runner but the host-only ones (*_host)
gpu_op_tests() { build/zt_tests_cuda --list | grep '^cuda_' | grep -v '_host$'; }

stage_tests() {
    run_logged test-cuda 60 300 env VERBOSE=1 make test-cuda || return 0
    local log=$LOG
    # each test by tests/run.sh's verdict (its own lines start in column 0; VERBOSE indents
    # the tests' output)
    local v rest tally
    while read -r v rest; do
        result "$v" "tests/$rest"
    done < <(grep -E '^(PASS|FAIL|SKIP) ' "$log")
    tally=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -1)
    say "test-cuda: ${tally:-no tally (see test-cuda.log)}"
    case $RC in
    124|137) judge test-cuda ;;
    *) [ -n "$tally" ] || judge test-cuda ;;
    esac
}

stage_bench() {
    run_logged bench/gpu_step.sh 120 300 bash bench/gpu_step.sh "$DIR" || return 0
    judge bench/gpu_step.sh
    [ -f "$DIR/gpu_step.md" ] && [ "$RC" = 0 ] && grep '^|' "$DIR/gpu_step.md"
}

stage_layouts() {
    local s
    for s in $LAYOUT_TESTS; do
        run_logged "layouts/$s" 45 420 env ZT_BACKEND=cuda bash "tests/sh/$s.sh" || continue
        judge "layouts/$s"
    done
}

# nsys: the kernels of STEPS_PROF (6) GPT-2 124M steps, B16 T1024, per dtype: per kernel its
# GPU time per step, share, launches per step and mean time; ncu --set basic on NCU_COUNT (40)
# kernel launches after NCU_SKIP (2000: past the first steps) of a bf16 run.
stage_profile() {
    local nsys ncu steps=${STEPS_PROF:-6}
    nsys=$(find_tool nsys /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys)
    ncu=$(find_tool ncu /usr/local/cuda/bin/ncu)
    if [ "$HAVE_GPU" = 0 ]; then result SKIP profile "no GPU here"; return 0; fi
    [ -f build/bench/gpu_tokens.bin ] || "$PY" bench/make_tokens.py build/bench/gpu_tokens.bin $((1 << 21))
    local args=(--backend cuda --model gpt2 --micro-batch 16 --seq 1024 --steps "$steps" --warmup 0
                --lr-schedule constant --val-every 0 --data build/bench/gpu_tokens.bin)
    : > "$DIR/profile.md"
    if [ -z "$nsys" ]; then result SKIP profile/nsys "no nsys found"
    else
        local dt flags
        for dt in fp32 bf16; do
            flags=(); [ "$dt" = bf16 ] && flags=(--param-dtype bf16)
            run_logged "profile/nsys $dt" 60 180 "$nsys" profile -t cuda -f true -o "$WORK/nsys_$dt" \
                build/zerotrain-cuda "${args[@]}" "${flags[@]}" --log "$WORK/nsys_$dt.jsonl" || continue
            judge "profile/nsys $dt"
            [ "$RC" = 0 ] || continue
            run_logged "profile/nsys stats $dt" 20 120 "$nsys" stats -r cuda_gpu_kern_sum -f csv \
                -o "$WORK/nsys_$dt" "$WORK/nsys_$dt.nsys-rep" || continue
            "$PY" - "$dt" "$steps" "$WORK/nsys_$dt.jsonl" "$WORK"/nsys_"$dt"_cuda_gpu_kern_sum*.csv \
                >> "$DIR/profile.md" <<'EOF' || result FAIL "profile/table $dt" "see profile.md"
import csv, json, statistics, sys
dt, steps, log, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = list(csv.DictReader(open(path)))
col = lambda key: next(k for k in rows[0] if key.lower() in k.lower())
tot, n, name = col("Total Time"), col("Instances"), col("Name")
ks = sorted(rows, key=lambda r: -float(r[tot]))
gpu_ns = sum(float(r[tot]) for r in ks)
ms = [json.loads(l)["ms"] for l in open(log) if '"step"' in l and '"ms"' in l]
med = statistics.median(ms[1:]) if len(ms) > 1 else float("nan")
print(f"### {dt}: GPT-2 124M, B16 T1024, {steps} steps under nsys\n")
print(f"GPU kernel time {gpu_ns / steps / 1e6:.1f} ms per step (all {steps} steps, the first "
      f"included) against a median step of {med:.1f} ms (steps 2-{steps}, the log's \"ms\"): "
      f"the rest is the GPU idle (launches, host work, copies).\n")
print("| kernel | ms per step | share of kernel time | launches per step | mean µs |")
print("|---|---|---|---|---|")
for r in ks[:30]:
    t, c = float(r[tot]), int(float(r[n]))
    print(f"| `{r[name][:90]}` | {t / steps / 1e6:.2f} | {100 * t / gpu_ns:.1f}% | "
          f"{c / steps:.1f} | {t / c / 1e3:.1f} |")
print(f"\n({len(ks)} kernels in all; the rest share {100 * sum(float(r[tot]) for r in ks[30:]) / gpu_ns:.1f}%)\n")
EOF
        done
    fi
    if [ -z "$ncu" ]; then result SKIP profile/ncu "no ncu found"
    else
        run_logged profile/ncu 60 240 "$ncu" --set basic --launch-skip "${NCU_SKIP:-2000}" \
            --launch-count "${NCU_COUNT:-40}" --csv --log-file "$DIR/ncu_basic.csv" \
            build/zerotrain-cuda "${args[@]}" --steps 3 --param-dtype bf16 || return 0
        judge profile/ncu
    fi
}

stage_repeat() {
    if [ "$HAVE_GPU" = 0 ]; then result SKIP repeat "no GPU here"; return 0; fi
    local tests i seed base bad=0 done_ops=0 done_train=0
    mapfile -t tests < <(gpu_op_tests)
    base=$(date +%s)
    for i in $(seq "$REPEAT"); do
        seed=$((base + i))
        run_logged "repeat/op tests $i" 20 120 env ZT_SEED="$seed" build/zt_tests_cuda "${tests[@]}" || break
        done_ops=$i
        if [ "$RC" != 0 ]; then
            bad=1
            result FAIL "repeat/op tests seed $seed" "$(grep '^FAIL ' "$LOG" | tr '\n' ' ')"
        fi
    done
    [ "$bad" = 0 ] && [ "$done_ops" -gt 0 ] && result PASS "repeat/op tests" "$done_ops runs of ${#tests[@]} tests, fresh seeds from $((base + 1))"
    [ "$done_ops" -lt "$REPEAT" ] && result NOTRUN "repeat/op tests" "$done_ops of $REPEAT runs done"
    bad=0
    for i in $(seq "$REPEAT"); do
        seed=$((base + 100 + i))
        run_logged "repeat/cuda_train $i" 60 200 env ZT_SEED="$seed" bash tests/sh/cuda_train.sh || break
        done_train=$i
        if [ "$RC" != 0 ]; then bad=1; judge "repeat/cuda_train seed $seed"; fi
    done
    [ "$bad" = 0 ] && [ "$done_train" -gt 0 ] && result PASS "repeat/cuda_train" "$done_train runs, seeds from $((base + 101))"
    [ "$done_train" -lt "$REPEAT" ] && result NOTRUN "repeat/cuda_train" "$done_train of $REPEAT runs done"
    return 0
}

stage_cpu() {
    run_logged bench/step_scaling.sh 120 540 env PY="$PY" THREADS="${CPU_THREADS:-1 2 4 8 16}" \
        CONFIGS="${CPU_CONFIGS:-4x64 8x256}" ROUNDS="${CPU_ROUNDS:-1}" STEPS="${CPU_STEPS:-3}" \
        TORCH_BF16_STEPS="${TORCH_BF16_STEPS:-1}" bash bench/step_scaling.sh || return 0
    judge bench/step_scaling.sh
    [ "$RC" = 0 ] || return 0
    "$PY" - bench/RESULTS.md "## Training step: thread scaling" > "$DIR/cpu_scaling.md" <<'EOF'
import re, sys
text, head = open(sys.argv[1]).read(), sys.argv[2]
m = re.search(r"^" + re.escape(head) + r"\n.*?(?=^## |\Z)", text, re.S | re.M)
print(m.group(0).rstrip("\n") if m else "no section " + head)
EOF
    grep '^|' "$DIR/cpu_scaling.md"
}

stage_memory() {
    run_logged bench/gpu_memory.sh 120 420 env NO_RESULTS=1 PY="$PY" bash bench/gpu_memory.sh \
        "$WORK/gpu_memory" || return 0
    judge bench/gpu_memory.sh
    [ -f "$WORK/gpu_memory/gpu_memory.md" ] || return 0
    cp "$WORK/gpu_memory/gpu_memory.md" "$DIR/gpu_memory.md"
    grep -E '^\| .* (yes|NO) \|$|within 5% of the planner' "$DIR/gpu_memory.md"
}

stage_sanitize() {
    local san t tool
    san=$(find_tool compute-sanitizer /usr/local/cuda/bin/compute-sanitizer)
    if [ "$HAVE_GPU" = 0 ]; then result SKIP sanitize "no GPU here"; return 0; fi
    if [ -z "$san" ]; then result SKIP sanitize "no compute-sanitizer found"; return 0; fi
    for tool in ${SAN_TOOLS:-memcheck racecheck}; do
        for t in $(gpu_op_tests); do
            run_logged "sanitize/$tool $t" 20 120 "$san" --tool "$tool" --error-exitcode 99 \
                build/zt_tests_cuda "$t" || continue
            judge "sanitize/$tool $t"
        done
    done
}

if [ "$FIRST_CONTACT" = 1 ]; then
    first_contact
elif [ "$build_ok" = 1 ]; then
    for st in "${STAGES[@]}"; do
        case $st in
        build) ;;
        tests|bench|layouts|profile|repeat|cpu|memory|sanitize) "stage_$st" ;;
        *) result FAIL "$st" "unknown stage (build tests bench layouts profile repeat cpu memory sanitize)" ;;
        esac
    done
else
    say "the build failed or did not run: no other stage runs"
fi

# ---- the logs: every stage's, and the tests' .out and .jsonl files (no checkpoints) ----
find build -maxdepth 2 \( -path 'build/test_*' -o -path 'build/bench/gpu' \) -type d 2>/dev/null |
    while read -r d; do
        find "$d" -maxdepth 1 -type f \( -name '*.out' -o -name '*.jsonl' -o -name '*.log' \
            -o -name '*.txt' -o -name '*.smi' -o -name '*.cmp' \) -newermt "@$T0" 2>/dev/null
    done > "$WORK/files.list"
find build/bench -maxdepth 1 -name 'scaling_t*.out' -newermt "@$T0" >> "$WORK/files.list" 2>/dev/null
tar -czf "$DIR/logs.tar.gz" --exclude='*.nsys-rep' --exclude='*.sqlite' "$WORK" -T "$WORK/files.list" 2>/dev/null ||
    say "tar: some files could not be packed"
total="gpu_checks: $npass passed, $nfail failed, $nskip skipped, $ntime timed out, $nnot not run ($(elapsed)s)"
echo "$total" >> "$DIR/summary.txt"
say "$total"
say "results in $DIR: $(find "$DIR" -maxdepth 1 -type f -printf '%f ')"
status=0
[ $nfail -eq 0 ] && [ $ntime -eq 0 ] || status=1
exec >&- 2>&-
wait "$TEE_PID" 2>/dev/null # gpu_checks.log complete before the command returns
exit $status
