# shellcheck shell=bash disable=SC2086 # plan rows and flag lists split into words on purpose
# The plan of `scripts/gpu_checks.sh first-contact` (issue 40): the first command on a lent GPU,
# planned to end within FC_BUDGET_S (520) seconds of the machine's 600, so a short follow-up
# still fits on the warm machine. Sourced by scripts/gpu_checks.sh, whose harness it uses
# (say, result, run_logged, judge, find_tool, left, DIR, WORK, PY, JOBS, DRY).
#
# Stages, in order, each under `timeout` with min(its cap, what is left); one that cannot get
# its minimum is NOT RUN (FC_PLAN below is the one list; `--plan` prints it):
#   preflight  headers and libraries (one link test), nvidia-smi -q (compute mode, MIG, clocks,
#              power limit), which of nsys, ncu, compute-sanitizer exist, the driver, CUDA,
#              cuBLAS(Lt) and NCCL versions; stops the command at once, with the reason, when
#              something the build or the GPU needs is missing
#   build      make -j16 all cuda for this GPU's compute capability only
#   tests      make test-cuda: per test its verdict, worst error/bound and seed (tests.md)
#   step       GPT-2 124M B16 T1024, zerotrain only: fp32, TF32, bf16, bf16 with --tf32 (the
#              row beside PyTorch's bf16, which has TF32 on), and that row with the loss in
#              chunks of 328 (the CPU's 64 MiB rule) and 2048 tokens (the automatic chunk on a
#              GPU is the whole micro-batch); one PyTorch bf16-eager row calibrates the machine;
#              llm.c's 319k and torch.compile's 446k tokens/s are the recorded anchors, printed
#              beside, not re-measured (step.md)
#   kernels    nsys's kernel table of the bf16 --tf32 run where nsys exists; else --profile's
#              phase table plus ncu's durations of NCU_COUNT (60) launches past step 3, the
#              skip taken from that run's own op calls per step (kernels.md, with
#              bench/gpu_model.py's predictions below it)
#   sanitize   compute-sanitizer memcheck on the op tests of the hand-written kernels and
#              racecheck on those whose kernels use shared memory (SAN_TESTS="t1 t2" narrows
#              both lists, SAN_TOOLS="memcheck" or "racecheck" picks one tool)
#   layouts    LAYOUT_TESTS (dp_equivalence pp_equivalence) with ZT_BACKEND=cuda, while time
#              remains
# FC_ONLY="tests sanitize" runs those stages only (after the preflight and the build, which
# make finds up to date on a warm machine): the re-run of what failed.
#
# Result files (DIR, at most 8): summary.txt, gpu_checks.log, tests.md, step.md, kernels.md,
# logs.tar.gz.
#
# --dry-run (here, no GPU): the same stages, the GPU's parts emulated through
# the CUDA emulation (README, "On a GPU"; EMU_DIR; ZT_EMU_BUILD, default /tmp/zt_emu_<folder>) or skipped: the build
# is the emulation's; test-cuda's runner runs in it the tests named like DRY_TESTS
# (cuda_layernorm; DRY_TESTS= runs all of make test-cuda, many minutes more on 2 cores); the
# step runs a 1-layer model for 3 steps; the PyTorch row runs on the CPU where torch imports;
# nvidia-smi -q, ncu, nsys, the sanitizers and the layout tests SKIP, each saying what it
# would run. Caps and budget are FC_SCALE (3) times the plan's. It leaves build/ holding
# emulated objects: `rm -rf build/cuda build/zt_tests_cuda build/zerotrain-cuda` before a
# real make cuda.

FC_BUDGET_S=520
# name min_s cap_s (cap 0: whatever is left)
FC_PLAN=(
    "preflight 2 20"
    "build 60 200"
    "tests 40 150"
    "step 60 150"
    "kernels 30 90"
    "sanitize 20 110"
    "layouts 45 0"
)
FC_FILES="summary.txt gpu_checks.log tests.md step.md kernels.md logs.tar.gz"
# The op tests whose kernels are written here (not cuBLAS's alone): memcheck's list; the
# subset whose kernels use shared memory (attention_cuda.cu's softmax rows, optim_cuda.cu's
# 8-bit code maps): racecheck's.
FC_MEMCHECK_TESTS="cuda_adamw cuda_adamw8bit cuda_attention cuda_attention_decode cuda_bf16_adamw
    cuda_bf16_adamw8bit cuda_bf16_bias_gelu cuda_bf16_conversions cuda_bf16_encoder
    cuda_bf16_layernorm cuda_bf16_sumsq cuda_crossentropy cuda_elementwise cuda_encoder
    cuda_layernorm cuda_matmul cuda_matmul_gelu cuda_reductions cuda_residual_layernorm"
FC_RACECHECK_TESTS="cuda_attention cuda_attention_decode cuda_adamw8bit cuda_bf16_adamw8bit"
FC_LAYOUT_TESTS="dp_equivalence pp_equivalence"
# The step's runs: label|flags (the bench flags of fc_step_args come first)
FC_STEP_RUNS=(
    "fp32|"
    "tf32|--tf32"
    "bf16|--param-dtype bf16"
    "bf16 tf32|--param-dtype bf16 --tf32"
    "bf16 tf32 chunk 328|--param-dtype bf16 --tf32 --loss-chunk 328"
    "bf16 tf32 chunk 2048|--param-dtype bf16 --tf32 --loss-chunk 2048"
)
# The dry run's emulated GPU is far slower than a GPU: its caps and budget are FC_SCALE times
# the plan's (measured 2026-11-27 on 2 loaded cores: about 6 minutes in all).
FC_SCALE=1

# Prints the plan: the budget, each stage's minimum and cap, the runs and the test lists.
fc_print_plan() {
    local s
    echo "first-contact plan: budget ${BUDGET_S}s (BUDGET_S overrides), results: $FC_FILES"
    for s in "${FC_PLAN[@]}"; do
        set -- $s
        echo "stage $1 min ${2}s cap $([ "$3" = 0 ] && echo "what is left" || echo "$(($3 * FC_SCALE))s")"
    done
    for s in "${FC_STEP_RUNS[@]}"; do echo "step run: ${s%%|*}: ${s#*|}"; done
    echo "step run: PyTorch bf16 eager: bench/torch_step.py --autocast bf16 --tf32"
    echo "memcheck tests: $(fc_san_list "$FC_MEMCHECK_TESTS" | tr '\n' ' ')"
    echo "racecheck tests: $(fc_san_list "$FC_RACECHECK_TESTS" | tr '\n' ' ')"
    echo "layout tests: $LAYOUT_TESTS"
}

# The stage's min and cap from FC_PLAN.
fc_min() { local s; for s in "${FC_PLAN[@]}"; do set -- $s; [ "$1" = "$FC_STAGE" ] && echo "$2"; done; }
fc_cap() {
    local s c
    for s in "${FC_PLAN[@]}"; do set -- $s; [ "$1" = "$FC_STAGE" ] && c=$3; done
    [ "$c" = 0 ] && c=$BUDGET_S
    echo $((c * FC_SCALE))
}
# A stage's deadline in seconds since the start (its cap from now, within the budget).
fc_deadline() { local c; c=$(fc_cap); echo $(($(elapsed) + c)); }
# Seconds a step of the stage may take: what is left of its cap, at most $1.
fc_room() { local r=$((FC_END - $(elapsed))) c=$(($1 * FC_SCALE)); [ "$r" -gt "$c" ] && r=$c; echo "$r"; }

# A test list narrowed by SAN_TESTS where given.
fc_san_list() {
    local t
    for t in $1; do
        if [ -z "${SAN_TESTS:-}" ] || [[ " $SAN_TESTS " == *" $t "* ]]; then echo "$t"; fi
    done
}

# ---- preflight ----
FC_STOP=""
fc_need() { FC_STOP="${FC_STOP:+$FC_STOP; }$*"; }

# header name: found by the C compiler (CPATH and its own paths) or in CUDA_HOME/include
fc_header() { printf '#include <%s>\n' "$1" | cc -E -x c - -I"$FC_CUDA_HOME/include" > /dev/null 2>&1; }

# libs...: one link test, then each alone to name what is missing
fc_link() {
    local main=$WORK/link_test.c l missing=() paths=() libs=()
    echo 'int main(void) { return 0; }' > "$main"
    cc "$main" -o "$WORK/link_test" "$@" 2> /dev/null && { rm -f "$WORK"/link_test*; return 0; }
    for l in "$@"; do case $l in -l*) libs+=("$l") ;; *) paths+=("$l") ;; esac; done
    for l in "${libs[@]}"; do
        cc "$main" -o "$WORK/link_test" "${paths[@]}" "$l" 2> /dev/null || missing+=("$l")
    done
    rm -f "$WORK"/link_test*
    fc_need "cannot link ${missing[*]:-these libraries together}"
}

fc_versions() {
    local h
    h=$FC_CUDA_HOME/include
    echo "CUDA (nvcc): $("$FC_NVCC" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
    local v
    v=$(awk '/define CUBLAS_VER_(MAJOR|MINOR|PATCH)/ { v = v (v ? "." : "") $3 } END { print v }' \
        "$h/cublas_api.h" 2> /dev/null)
    echo "cuBLAS(Lt): ${v:-not found (no $h/cublas_api.h)}"
    v=$(printf '#include <nccl.h>\nZTV NCCL_MAJOR NCCL_MINOR NCCL_PATCH\n' | cc -E -x c - -I"$h" 2> /dev/null |
        sed -n 's/^ZTV \([0-9]*\) \([0-9]*\) \([0-9]*\)$/\1.\2.\3/p')
    echo "NCCL: ${v:-not found (nccl.h defines no NCCL_MAJOR)}"
    "$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "GPU visible:", torch.cuda.is_available())' 2>/dev/null ||
        echo "torch: not importable by $PY (the PyTorch row SKIPs)"
}

# nvidia-smi -q's fields that change what a run measures or may do
fc_smi() {
    local q
    q=$(nvidia-smi -q 2>/dev/null) || { fc_need "nvidia-smi -q fails"; return; }
    nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader | sed 's/^/GPU: /'
    echo "$q" | awk -F' : ' '
        /^    [^ ]/ { sec = "" } # a section header (4 spaces): the clocks below it are its
        /^    Compute Mode/ { print "compute mode: " $2 }
        /^    MIG Mode/ { mig = 1 } mig && /Current/ { print "MIG: " $2; mig = 0 }
        /^    Max Clocks *$/ { sec = "max" } /^    Clocks *$/ { sec = "now" } /^    Applications Clocks *$/ { sec = "app" }
        sec && /^        (SM|Memory) / { gsub(/^ +| +$/, "", $1); print "clock " sec " " $1 ": " $2 }
        /Current Power Limit|^        Power Limit / && !pl { print "power limit: " $2; pl = 1 }
        /Persistence Mode/ { print "persistence mode: " $2 }'
    local mode
    mode=$(echo "$q" | awk -F' : ' '/^    Compute Mode/ { print $2; exit }')
    [ "$mode" = Prohibited ] && fc_need "the GPU's compute mode is Prohibited"
    [ "$mode" = "Exclusive_Process" ] && say "note: compute mode Exclusive_Process: the multi-rank tests (every rank on this GPU) will fail"
    echo "$q" | grep -A1 "MIG Mode" | grep -q "Current *: Enabled" &&
        say "note: MIG is enabled: the GPU seen is a MIG slice"
}

stage_fc_preflight() {
    local t0
    t0=$(date +%s)
    FC_NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    FC_CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(realpath "$FC_NVCC" 2>/dev/null || echo /x/x)")")}
    fc_preflight_checks > "$WORK/preflight.txt"
    tee -a "$DIR/summary.txt" < "$WORK/preflight.txt"
    if [ -n "$FC_STOP" ]; then
        result FAIL preflight "$FC_STOP"
        return 1
    fi
    result PASS preflight "$(($(date +%s) - t0))s"
}
fc_preflight_checks() {
    local tool p
    if [ "$DRY" = 1 ]; then
        FC_NVCC=$ZT_EMU_BUILD/plain/cuda/bin/nvcc FC_CUDA_HOME=$ZT_EMU_BUILD/plain/cuda
        [ -d "$EMU_DIR" ] || fc_need "no CUDA emulation at $EMU_DIR (EMU_DIR=...)"
        echo "GPU: none here; dry run: the CUDA emulation's ($EMU_DIR), CUDA from $FC_CUDA_HOME once built; nvidia-smi -q SKIPs"
    else
        nvidia-smi -L > /dev/null 2>&1 || fc_need "no GPU (nvidia-smi -L finds none)"
        [ -x "$FC_NVCC" ] || fc_need "no nvcc (PATH or /usr/local/cuda/bin)"
        [ -n "$FC_STOP" ] || fc_smi
    fi
    for p in cjson/cJSON.h cblas.h dnnl.h xxhash.h protobuf-c/protobuf-c.h mpi.h; do
        [ "$p" = mpi.h ] && { command -v mpicc > /dev/null || fc_need "no mpicc (Open MPI)"; continue; }
        fc_header "$p" || fc_need "no header $p (re-run the device recipe: README, \"On a GPU\")"
    done
    if [ "$DRY" = 0 ]; then
        for p in cuda_runtime_api.h cublas_v2.h cublasLt.h nccl.h; do
            fc_header "$p" || fc_need "no header $p (CUDA_HOME=$FC_CUDA_HOME)"
        done
        fc_link -L"$FC_CUDA_HOME/lib64" -lopenblas -ldnnl -lcjson -lxxhash -lprotobuf-c -lcudart -lcublas -lcublasLt -lnccl
    else
        fc_link -lopenblas -ldnnl -lcjson -lxxhash -lprotobuf-c
    fi
    command -v protoc-c > /dev/null || [ -f build/proto/tb_event.pb-c.c ] ||
        fc_need "no protoc-c (protobuf-c-compiler: the device recipe carries it)"
    for tool in nsys ncu compute-sanitizer; do
        p=$(find_tool "$tool" "$FC_CUDA_HOME/bin/$tool" /usr/local/cuda/bin/"$tool" /opt/nvidia/nsight-systems/*/bin/"$tool")
        [ "$DRY" = 1 ] && p=""
        echo "tool $tool: ${p:-absent}"
        printf -v "FC_TOOL_${tool//-/_}" '%s' "$p"
    done
    fc_versions
}

# ---- build ----
stage_fc_build() {
    local arch cc
    if [ "$DRY" = 1 ]; then
        run_logged build "$(fc_min)" "$(fc_cap)" env ZT_EMU_BUILD="$ZT_EMU_BUILD" bash "$EMU_DIR/build.sh" . || return 1
        # its last step (checks/realsize.c) may fail on this tree: the programs are what counts
        [ -x build/zerotrain-cuda ] && [ -x build/zt_tests_cuda ] && RC=0
        judge "build (emulated)"
        [ "$RC" = 0 ]; return
    fi
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 2>/dev/null | tr -d ' .')
    arch=${GPU_ARCH:-${cc:+-gencode arch=compute_$cc,code=sm_$cc}}
    FC_ARCH=$arch # test-cuda's make with the same (make tracks no flags: nothing rebuilds)
    run_logged build "$(fc_min)" "$(fc_cap)" make -j"$JOBS" all cuda ${arch:+CUDA_ARCH="$arch"} || return 1
    judge build
    echo "build: $(grep -c "warning:" "$LOG") compiler warnings (CUDA_ARCH ${arch:-as the Makefile sets it})" | tee -a "$DIR/summary.txt"
    [ "$RC" = 0 ]
}

# ---- tests ----
stage_fc_tests() {
    if [ "$DRY" = 1 ] && [ -n "$DRY_TESTS" ]; then
        # test-cuda's own runner on the tests named like DRY_TESTS (the whole of make test-cuda
        # in the emulation takes minutes more: DRY_TESTS= runs it)
        run_logged test-cuda "$(fc_min)" "$(fc_cap)" env VERBOSE=1 PATH="$EMU_DIR/bin/fake-gpu:$PATH" \
            ZT_TESTS=build/zt_tests_cuda ONLY="$DRY_TESTS" PYTHON="$PY" bash tests/run.sh || return 0
    else
        local emu=()
        [ -n "${FC_ARCH:-}" ] && emu=(CUDA_ARCH="$FC_ARCH")
        [ "$DRY" = 1 ] && emu=(PATH="$EMU_DIR/bin/fake-gpu:$PATH" SETUP=true NVCC="$ZT_EMU_BUILD/plain/cuda/bin/nvcc"
                               CUDA_HOME="$ZT_EMU_BUILD/plain/cuda")
        # (the dry run's PATH goes to env only, the rest to make too)
        run_logged test-cuda "$(fc_min)" "$(fc_cap)" env VERBOSE=1 "${emu[@]}" make test-cuda \
            "${emu[@]:$([ "$DRY" = 1 ] && echo 1 || echo 0)}" || return 0
    fi
    local log=$LOG
    # tests/run.sh's verdict lines start in column 0; VERBOSE indents each test's output after
    # it, where zt_tests prints "NAME: seed N" and "worst error/bound R"
    awk -v md="$DIR/tests.md" '
        function flush() { if (name != "") printf "| %s | %s | %s | %s |\n", name, v, (w == "" ? "-" : w), (s == "" ? "-" : s) >> md }
        BEGIN { print "| test | verdict | worst error/bound | seed |" > md; print "|---|---|---|---|" >> md }
        /^(PASS|FAIL|SKIP) / { flush(); v = $1; name = $2; sub(/:$/, "", name); w = ""; s = "" }
        /^    [^ ]+: seed [0-9]+/ { s = $3 }
        /^      worst error\/bound / { w = $3 }
        END { flush() }' "$log"
    local v rest
    while read -r v rest; do result "$v" "tests/$rest"; done < <(grep -E '^(PASS|FAIL|SKIP) ' "$log")
    grep '^|' "$DIR/tests.md"
    local tally
    tally=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -1)
    say "test-cuda: ${tally:-no tally (see test-cuda.log)}"
    case $RC in 124|137) judge test-cuda ;; *) [ -n "$tally" ] || judge test-cuda ;; esac
}

# ---- step ----
FC_B=16 FC_T=1024 FC_STEPS=8 FC_MODEL=""
fc_step_args() { # the bench flags of every zerotrain run of this plan
    echo --backend cuda --model gpt2 $FC_MODEL --micro-batch $FC_B --seq $FC_T --warmup 0 \
        --lr-schedule constant --val-every 0 --data build/bench/gpu_tokens.bin
}
# zerotrain plan's predicted step for the runs above (one rank, fp32 and bf16; it has no TF32
# knob), on the table's H100 and H200: "device:dtype:seconds" words.
fc_planned() {
    local dev dt s
    for dev in h100 h200; do
        for dt in fp32 bf16; do
            # shellcheck disable=SC2086
            s=$(build/zerotrain-cuda plan --world 1 --device $dev --model gpt2 $FC_MODEL \
                --micro-batch $FC_B --seq $FC_T --global-batch $FC_B --param-dtype $dt --dp 1 \
                --pp 1 --tp 1 --zero 0 --recompute none --json --top 1 2> /dev/null |
                "$PY" -c 'import json, sys; print(json.load(sys.stdin)["plans"][0]["step_s"])' \
                2> /dev/null) && echo "$dev:$dt:$s"
        done
    done
}
stage_fc_step() {
    local r label flags name rows=() t
    [ "$DRY" = 1 ] && FC_B=1 FC_T=64 FC_STEPS=3 FC_MODEL="--n-layer 1 --n-head 2 --n-embd 32"
    [ -f build/bench/gpu_tokens.bin ] || "$PY" bench/make_tokens.py build/bench/gpu_tokens.bin $((1 << 21)) > /dev/null
    for r in "${FC_STEP_RUNS[@]}"; do
        label=${r%%|*} flags=${r#*|} name=step_$(echo "$label" | tr -c 'a-z0-9\n' '_')
        t=$(fc_room 45)
        # shellcheck disable=SC2046,SC2086 # the flags are words
        run_logged "step/$label" 10 "$t" build/zerotrain-cuda $(fc_step_args) --steps "$FC_STEPS" \
            --log "$WORK/$name.jsonl" $flags || continue
        judge "step/$label"
        [ "$RC" = 0 ] && rows+=("zt|$label${flags:+ ($flags)}|$WORK/$name.jsonl|$LOG")
    done
    local th=(--device cuda --vocab 50304 --autocast bf16 --tf32)
    [ "$DRY" = 1 ] && th=(--device cpu --vocab 50304 --autocast bf16)
    if ! "$PY" -c 'import torch' 2> /dev/null; then
        result SKIP "step/PyTorch bf16 eager" "torch is not importable by $PY"
    elif [ "$DRY" = 0 ] && ! "$PY" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
        result SKIP "step/PyTorch bf16 eager" "$PY's torch sees no GPU"
    else
        # shellcheck disable=SC2086
        run_logged "step/PyTorch bf16 eager" 20 "$(fc_room 60)" "$PY" bench/torch_step.py "${th[@]}" $FC_MODEL \
            --micro-batch $FC_B --seq $FC_T --steps "$FC_STEPS" --warmup-steps 5 &&
            { judge "step/PyTorch bf16 eager"; [ "$RC" = 0 ] && rows+=("torch|PyTorch bf16 eager (${th[*]:4})|-|$LOG"); }
    fi
    "$PY" - "$FC_B" "$FC_T" "$DRY" "$(fc_planned)" "${rows[@]}" > "$DIR/step.md" <<'EOF'
import json, re, statistics, sys
B, T, dry = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
planned = sys.argv[4]
# GPT-2 124M over the padded vocabulary, 6 N B T + 12 L T^2 C B (bench/gpu_step.sh's count)
L, C, V = 12, 768, 50304
N = V * C + 1024 * C + L * (12 * C * C + 13 * C) + 2 * C
flops = 6 * N * B * T + 12 * L * T * T * C * B
GiB = 2 ** 30
print("| run | ms/step median (best) | tokens/s | TFLOP/s | peak GiB (zerotrain: its allocator; PyTorch: max allocated) | loss chunk |")
print("|---|---|---|---|---|---|")
for row in sys.argv[5:]:
    kind, label, log, out = row.split("|")
    text = open(out).read()
    if kind == "zt":
        recs = [json.loads(l) for l in open(log)]
        ms = [r["ms"] for r in recs if "ms" in r and "step" in r][2:]  # steps 1-2: warm-up
        peak = max([r["mem_peak_total"] for r in recs if "mem_peak_total" in r] or [0])
        m = re.search(r"loss: chunks of (\d+) tokens", text)
        chunk = m.group(1) if m else "-"
    else:
        ms = [float(x) for x in re.findall(r"^step \d+: .* ([0-9.]+) ms$", text, re.M)]
        m = re.search(r"peak_mem_bytes=(\d+)", text)
        peak, chunk = (int(m.group(1)) if m else 0), "whole"
    if not ms:
        print(f"| {label} | no timed steps | | | | |")
        continue
    med = statistics.median(ms)
    print(f"| {label} | {med:.1f} ({min(ms):.1f}) | {B * T / med * 1e3:,.0f} | "
          f"{flops / med / 1e9:.3g} | {peak / GiB:.2f} | {chunk} |")
for p in planned.split():  # zerotrain plan's predictions (issue 37): device:dtype:seconds
    dev, dt, s = p.split(":")
    print(f"| `zerotrain plan --device {dev}` predicts {dt} (not measured) | {float(s) * 1e3:.1f} | "
          f"{B * T / float(s):,.0f} | | | |")
print("| llm.c train_gpt2cu bf16 (recorded 2026-11-23, not re-measured) | 51.3 | 319k | | 12.4 | |")
print("| PyTorch bf16 torch.compile (recorded 2026-11-23, not re-measured) | 36.7 | 446k | | 8.44 | |")
if dry:
    print("\nDRY RUN: 1 layer of 32 channels, B1 T64, the emulated GPU: the figures mean nothing.")
EOF
    grep '^|' "$DIR/step.md"
}

# ---- kernels ----
# nsys's kernel summary (csv) as a table: per kernel its time per step, share, launches.
fc_nsys_table() { # csv steps
    "$PY" - "$1" "$2" <<'EOF'
import csv, sys
rows, steps = list(csv.DictReader(open(sys.argv[1]))), int(sys.argv[2])
col = lambda key: next(k for k in rows[0] if key.lower() in k.lower())
tot, n, name = col("Total Time"), col("Instances"), col("Name")
rows.sort(key=lambda r: -float(r[tot]))
all_ns = sum(float(r[tot]) for r in rows)
print(f"nsys: {len(rows)} kernels, {all_ns / steps / 1e6:.1f} ms of kernel time per step ({steps} steps)\n")
print("| kernel | ms per step | share | launches per step | mean µs |\n|---|---|---|---|---|")
for r in rows[:30]:
    t, c = float(r[tot]), int(float(r[n]))
    print(f"| `{r[name][:90]}` | {t / steps / 1e6:.2f} | {100 * t / all_ns:.1f}% | {c / steps:.1f} | {t / c / 1e3:.1f} |")
EOF
}
# ncu's per-launch durations (csv) summed per kernel.
fc_ncu_table() { # csv
    "$PY" - "$1" <<'EOF'
import collections, csv, sys
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
rows = list(csv.DictReader(lines))
t, n = collections.defaultdict(float), collections.Counter()
for r in rows:
    if r.get("Metric Name") == "gpu__time_duration.sum":
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "nsecond")
        v *= {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3,
              "ms": 1e3}.get(unit, 1e-3)
        t[r["Kernel Name"]] += v
        n[r["Kernel Name"]] += 1
print(f"ncu: {sum(n.values())} launches\n")
print("| kernel | launches | µs in all | mean µs |\n|---|---|---|---|")
for k in sorted(t, key=lambda k: -t[k]):
    print(f"| `{k[:90]}` | {n[k]} | {t[k]:.1f} | {t[k] / n[k]:.1f} |")
EOF
}
stage_fc_kernels() {
    local flags=(--param-dtype bf16 --tf32) nsys=${FC_TOOL_nsys:-} ncu=${FC_TOOL_ncu:-}
    local md=$DIR/kernels.md calls skip
    echo "## Kernels: GPT-2 124M B$FC_B T$FC_T, bf16 --tf32" > "$md"
    if [ -n "$nsys" ]; then
        # shellcheck disable=SC2046
        run_logged "kernels/nsys" 20 "$(fc_room 60)" "$nsys" profile -t cuda -f true -o "$WORK/nsys" \
            build/zerotrain-cuda $(fc_step_args) --steps 6 "${flags[@]}" || return 0
        judge kernels/nsys
        [ "$RC" = 0 ] || return 0
        run_logged "kernels/nsys stats" 10 "$(fc_room 40)" "$nsys" stats -r cuda_gpu_kern_sum -f csv \
            -o "$WORK/nsys" "$WORK/nsys.nsys-rep" || return 0
        fc_nsys_table "$WORK"/nsys_cuda_gpu_kern_sum*.csv 6 >> "$md" || result FAIL kernels/table "see kernels.md"
    else
        # shellcheck disable=SC2046
        run_logged "kernels/profile" 15 "$(fc_room 40)" build/zerotrain-cuda $(fc_step_args) --steps 4 \
            "${flags[@]}" --profile || return 0
        judge kernels/profile
        [ "$RC" = 0 ] || return 0
        { echo; echo "--profile (no nsys here):"; echo '```'; sed -n '/^profile: /,/^  other /p' "$LOG"; echo '```'; } >> "$md"
        calls=$(sed -n '/^profile: /,/^  other /p' "$LOG" | awk 'NF == 6 && $6 ~ /^[0-9]+$/ { s += $6 } END { print s + 0 }')
        # op calls per step of this dtype: a launch or more each, so skipping 3 steps' calls
        # lands past step 1 (its first-use set-up) while an op launches up to 3 kernels
        skip=$((3 * calls))
        echo "op calls per step: $calls; ncu window: --launch-skip $skip --launch-count ${NCU_COUNT:-60}" >> "$md"
        if [ "$DRY" = 1 ] || [ -z "$ncu" ]; then
            result SKIP kernels/ncu "$DRYTAG$([ -z "$ncu" ] && echo "no ncu; ")would run ncu --launch-skip $skip --launch-count ${NCU_COUNT:-60}"
        else
            # shellcheck disable=SC2046
            run_logged "kernels/ncu" 15 "$(fc_room 60)" "$ncu" --metrics gpu__time_duration.sum --csv \
                --launch-skip "$skip" --launch-count "${NCU_COUNT:-60}" --log-file "$WORK/ncu.csv" \
                build/zerotrain-cuda $(fc_step_args) --steps 6 "${flags[@]}" || return 0
            judge kernels/ncu
            [ "$RC" = 0 ] && { echo; fc_ncu_table "$WORK/ncu.csv"; } >> "$md"
        fi
    fi
    { echo; echo "## The performance model's predictions (bench/gpu_model.py)"; echo
      "$PY" bench/gpu_model.py; } >> "$md" 2>&1
    grep -v '^$' "$md" | head -40
}

# ---- sanitize ----
stage_fc_sanitize() {
    local san=${FC_TOOL_compute_sanitizer:-} tool t list all end=$FC_END
    all=$(build/zt_tests_cuda --list)
    for tool in ${SAN_TOOLS:-memcheck racecheck}; do
        # memcheck leaves racecheck 40 s of the stage when both run
        FC_END=$end
        [ "$tool" = memcheck ] && [[ " ${SAN_TOOLS:-racecheck} " == *" racecheck "* ]] &&
            FC_END=$((end - 40 * FC_SCALE))
        case $tool in memcheck) list=$FC_MEMCHECK_TESTS ;; racecheck) list=$FC_RACECHECK_TESTS ;;
        *) result FAIL "sanitize/$tool" "unknown tool (memcheck, racecheck)"; continue ;; esac
        for t in $(fc_san_list "$list"); do
            grep -qx "$t" <<< "$all" || { result FAIL "sanitize/$tool $t" "no such test"; continue; }
            if [ "$DRY" = 1 ] || [ -z "$san" ]; then
                result SKIP "sanitize/$tool $t" "${DRYTAG}would run compute-sanitizer --tool $tool build/zt_tests_cuda $t"
                continue
            fi
            run_logged "sanitize/$tool $t" 8 "$(fc_room 40)" "$san" --tool "$tool" --error-exitcode 99 \
                build/zt_tests_cuda "$t" || continue
            judge "sanitize/$tool $t"
        done
    done
}

# ---- layouts ----
stage_fc_layouts() {
    local s
    for s in $LAYOUT_TESTS; do
        if [ "$DRY" = 1 ] && [ -z "${DRY_LAYOUTS:-}" ]; then
            result SKIP "layouts/$s" "dry run: would run ZT_BACKEND=cuda bash tests/sh/$s.sh (DRY_LAYOUTS=1 runs it emulated)"
            continue
        fi
        run_logged "layouts/$s" "$(fc_min)" "$(fc_room 300)" env ZT_BACKEND=cuda bash "tests/sh/$s.sh" || continue
        judge "layouts/$s"
    done
}

# Runs the plan; the preflight's or the build's failure stops it (the rest NOT RUN).
first_contact() {
    local s stop=""
    for s in "${FC_PLAN[@]}"; do
        set -- $s
        FC_STAGE=$1
        if [ -n "$stop" ]; then result NOTRUN "$FC_STAGE" "$stop"; continue; fi
        if [ -n "${FC_ONLY:-}" ] && [[ " preflight build $FC_ONLY " != *" $FC_STAGE "* ]]; then
            result SKIP "$FC_STAGE" "not in FC_ONLY ($FC_ONLY)"
            continue
        fi
        FC_END=$(fc_deadline)
        [ "$FC_END" -gt "$BUDGET_S" ] && FC_END=$BUDGET_S
        say "stage $FC_STAGE (cap $(fc_cap)s, $(left)s left)"
        local t0; t0=$(date +%s)
        case $FC_STAGE in
        preflight) stage_fc_preflight || stop="the preflight failed" ;;
        build) stage_fc_build || stop="the build failed or did not run" ;;
        *) "stage_fc_$FC_STAGE" ;;
        esac
        echo "stage $FC_STAGE: $(($(date +%s) - t0))s" >> "$WORK/durations.txt"
        say "stage $FC_STAGE took $(($(date +%s) - t0))s"
    done
}
