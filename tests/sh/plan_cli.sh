#!/usr/bin/env bash
# `zerotrain plan` (src/app/plan_cli.c, src/planner/plan_*.c): the issue's question (64 H100s,
# GPT-2 XL, 512 sequences) answered in seconds with a ranked list whose best entry's bytes are
# what `zerotrain memory` plans for its flags (and every shown entry's too); the ranking and
# the breakdown add up; a fixed flag fixes its dimension; an impossible question (1 GB per
# GPU) refused with one error naming the smallest need, which `memory` confirms for the
# layout it names; --device cpu without a calibration, --calibrate with a tiny model and a
# plan from its file; bad inputs, each one clear error (helpers: cli_errors.sh).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/cli_errors.sh" || exit 1   # cds to the repo root; defines the helpers
KNOWN_FLAGS+=" $("$ZT" plan --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ') "

fail() { echo "FAIL $1"; failed+=("$1"); }

# The issue's question, with a deadline: "answers in seconds" (generous for a shared machine).
Q=(--world 64 --gpus-per-node 8 --device h100 --model gpt2-xl --seq 1024 --global-batch 512)
t0=$(date +%s)
if ! timeout 120 "$ZT" plan "${Q[@]}" --json --top 4 >"$tmp/q.json" 2>"$tmp/q.err"; then
  fail "question: exit $?"; show "$tmp/q.err"
else
  echo "ok   question answered in $(( $(date +%s) - t0 )) s"
  # every shown entry: its bytes equal `memory`'s largest rank for its flags
  n=$("$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['plans']))" "$tmp/q.json")
  [ "$n" -ge 2 ] || fail "question: fewer than 2 plans ($n)"
  for i in $(seq 0 $((n - 1))); do
    flags=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['plans'][int(sys.argv[2])]['flags'])" "$tmp/q.json" "$i")
    # shellcheck disable=SC2086
    "$ZT" memory --json $flags >"$tmp/m$i.json" 2>"$tmp/m$i.err" || { fail "memory of plan $i: exit"; show "$tmp/m$i.err"; continue; }
    if "$PY" - "$tmp/q.json" "$tmp/m$i.json" "$i" <<'PY'
import json, sys
q = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2])); i = int(sys.argv[3])
p = q["plans"][i]
peak = max(r["peak"] for r in m["ranks"])
assert p["peak_bytes"] == peak, (p["peak_bytes"], peak)
assert p["need_bytes"] == peak, (p["need_bytes"], peak)  # one rank per GPU: need = peak
assert peak <= q["limit_bytes"], (peak, q["limit_bytes"])
lay = m["layout"]
assert lay["world"] == 64 and lay["micro_batch"] * lay["grad_accum"] * lay["dp"] == 512, lay
PY
    then echo "ok   plan $((i + 1)): peak bytes = zerotrain memory's largest rank"
    else fail "plan $((i + 1)) bytes differ from memory's"; fi
  done
  "$PY" - "$tmp/q.json" <<'PY' && echo "ok   ranked by tokens/s; parts add up to the step; MFU and tokens/s consistent" || fail "ranking or breakdown"
import json, sys
q = json.load(open(sys.argv[1])); ps = q["plans"]
speeds = [p["tokens_per_s"] for p in ps]
assert speeds == sorted(speeds, reverse=True), speeds
for p in ps:
    parts = sum(p[k] for k in ("compute_s", "tp_s", "pp_s", "dp_s", "embed_s", "bubble_s", "optimizer_s"))
    # the JSON writes 6 significant digits: each figure within 5e-6 of its own size
    assert abs(parts - p["step_s"]) <= 5e-6 * (parts + p["step_s"]), (parts, p["step_s"])
    assert abs(p["tokens_per_s"] * p["step_s"] - 512 * 1024) <= 1e-3 * 512 * 1024, p
    peak = q["device"]["peak_bf16"] if "bf16" in p["flags"] else q["device"]["peak_fp32"]
    assert abs(p["mfu"] - p["model_flops"] / (p["step_s"] * 64 * peak)) <= 1e-4 * p["mfu"], p
    assert 0 < p["mfu"] < 1, p
assert q["device"]["sources"] == {"rates": "assumed", "peaks": "table", "memory": "table", "links": "table"}, q["device"]["sources"]
PY
fi

# A fixed flag fixes its dimension: --pp 4 --schedule zb-h1 --param-dtype fp32
"$ZT" plan "${Q[@]}" --pp 4 --schedule zb-h1 --param-dtype fp32 --json --top 50 >"$tmp/fixed.json" 2>"$tmp/fixed.err" \
  && "$PY" - "$tmp/fixed.json" <<'PY' && echo "ok   fixed flags hold in every plan" || { fail "fixed flags"; show "$tmp/fixed.err"; }
import json, sys
ps = json.load(open(sys.argv[1]))["plans"]
assert ps
for p in ps:
    f = p["flags"]
    assert "--pp 4 " in f and "--schedule zb-h1 " in f and "--param-dtype fp32 " in f, f
PY

# Interleaved where a run can execute it (one rule, zt_plan_interleaved_runs: no pipeline over
# NCCL): on a CPU device file the search offers --schedule interleaved with V 2 and 3 (tiny: 6
# units, so pp 2 x V 3 only by the memory partition's embed-only and head-only chunks); the
# best interleaved entry's bytes are `zerotrain memory`'s for its flags, and its bubble is
# below the 1F1B bubble of the same layout (the simulator's closed form for equal costs,
# (p-1)/(V m) against 1F1B's (p-1)/m, is tests/test_schedule.c's
# schedule_simulate_virtual_costs); on GPUs of their own, with the schedule fixed, one error
# naming NCCL.
"$PY" - "$tmp/cpu_dev.json" <<'PY'
import json, sys
r = {k: [1e9, 1e9] for k in ("gemm", "attention", "loss", "elementwise", "optimizer", "grad_norm", "memory", "comm")}
json.dump({"name": "cpu file", "backend": "cpu", "rates": r, "peak_fp32": 1e12, "peak_bf16": 1e12,
           "intra_bandwidth": 1e9, "intra_latency": 1e-6, "inter_bandwidth": 1e9, "inter_latency": 1e-6,
           "memory_bytes": 1e12}, open(sys.argv[1], "w"))
PY
IQ=(--world 2 --device "$tmp/cpu_dev.json" --model tiny --seq 64 --global-batch 8 --threads 1 --pp 2)
if "$ZT" plan "${IQ[@]}" --top 1000 --json >"$tmp/inter.json" 2>"$tmp/inter.err"; then
  iflags=$("$PY" - "$tmp/inter.json" <<'PY'
import json, re, sys
ps = json.load(open(sys.argv[1]))["plans"]
inter = [p for p in ps if "--schedule interleaved " in p["flags"]]
vs = sorted({int(re.search(r"--virtual-stages (\d)", p["flags"]).group(1)) for p in inter})
assert vs == [2, 3], vs
best = inter[0]
twin = best["flags"].replace("--schedule interleaved --virtual-stages 2 ", "--schedule 1f1b ")
same = [p for p in ps if p["flags"] == twin]
assert same and best["bubble_s"] < same[0]["bubble_s"], (best, same)
print(best["flags"])
PY
) || fail "interleaved entries"
  # shellcheck disable=SC2086
  if [ -n "$iflags" ] && "$ZT" memory --json $iflags >"$tmp/im.json" 2>"$tmp/im.err" &&
     "$PY" - "$tmp/inter.json" "$tmp/im.json" <<'PY'
import json, sys
q = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
best = [p for p in q["plans"] if "--schedule interleaved " in p["flags"]][0]
assert best["peak_bytes"] == max(r["peak"] for r in m["ranks"]), (best["peak_bytes"], m["ranks"])
assert best["need_bytes"] == sum(r["peak"] for r in m["ranks"])  # one machine: the ranks together
PY
  then echo "ok   interleaved offered on the CPU; the best one's bytes are memory's, its bubble below 1F1B's"
  else fail "interleaved bytes differ from memory's"; show "$tmp/im.err"; fi
else fail "interleaved plan: exit"; show "$tmp/inter.err"; fi
expect_error interleaved_nccl "--schedule interleaved cannot run here: every layout's pipeline goes through NCCL" \
  -- "$ZT" plan --world 8 --gpus-per-node 8 --device h100 --model gpt2 --seq 1024 --global-batch 64 --pp 2 --schedule interleaved --virtual-stages 2

# The collectives' arithmetic, against a hand calculation on a device file whose links are
# 1 GB/s with no latency to speak of (1e-30 s: the file's figures are positive) and whose kernels are instant next to them: dp 2's gradient
# all-reduce of G bytes (zero 0) is a ring, 2 (n-1)/n G / bw = G / bw exposed without
# overlap; zero 1's reduce-scatter plus all-gather the same; G = the flat buffer (memory's
# numel) x 4 bytes.
"$PY" - "$tmp/slow_links.json" <<'PY'
import json, sys
r = {k: [1e30, 1e30] for k in ("gemm", "attention", "loss", "elementwise", "optimizer", "grad_norm", "memory", "comm")}
json.dump({"name": "slow links", "backend": "cpu", "rates": r, "peak_fp32": 1e12, "peak_bf16": 1e12,
           "intra_bandwidth": 1e9, "intra_latency": 1e-30, "inter_bandwidth": 1e9, "inter_latency": 1e-30,
           "memory_bytes": 1e12}, open(sys.argv[1], "w"))
PY
for z in 0 1; do
  L=(--model tiny --seq 64 --dp 2 --pp 1 --tp 1 --zero $z --optim adamw --param-dtype fp32 --recompute none --schedule 1f1b --micro-batch 4 --overlap-comm off --threads 1)
  if "$ZT" plan --world 2 --device "$tmp/slow_links.json" --global-batch 8 "${L[@]}" --json >"$tmp/ring$z.json" 2>"$tmp/ring$z.err" \
     && "$ZT" memory --json "${L[@]}" --grad-accum 1 >"$tmp/ringm$z.json" 2>/dev/null \
     && "$PY" - "$tmp/ring$z.json" "$tmp/ringm$z.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["plans"][0]; m = json.load(open(sys.argv[2]))
G = m["ranks"][0]["numel"] * 4
assert abs(p["dp_s"] - G / 1e9) <= 5e-7 * G / 1e9, (p["dp_s"], G / 1e9)  # JSON: 6 digits
assert p["compute_s"] < 1e-12 and p["tp_s"] == 0 and p["pp_s"] == 0, p
PY
  then echo "ok   zero $z: dp exposed = G / bw, as a ring of 2 computes"
  else fail "zero $z ring"; show "$tmp/ring$z.err"; fi
done

# The stragglers' wait (docs/design.md, "Step-time model"): the same device with a jitter J
# and kernels slow enough to take time: dp 2 meets once after its passes (span = rank 0's
# compute here: one stage, no tp), so its exposed time grows by E[max of 2 normals] x J x
# sqrt(span) = J sqrt(span / pi).
"$PY" - "$tmp/slow_links.json" "$tmp/jitter.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["rates"]["gemm"] = [1e9, 1e9]
d["jitter"] = 0.01
json.dump(d, open(sys.argv[2], "w"))
d["jitter"] = 0
json.dump(d, open(sys.argv[2] + ".none", "w"))
PY
L=(--model tiny --seq 64 --dp 2 --pp 1 --tp 1 --zero 0 --optim adamw --param-dtype fp32 --recompute none --schedule 1f1b --micro-batch 4 --overlap-comm off --threads 1)
if "$ZT" plan --world 2 --device "$tmp/jitter.json" --global-batch 8 "${L[@]}" --json >"$tmp/j1.json" 2>"$tmp/j.err" \
   && "$ZT" plan --world 2 --device "$tmp/jitter.json.none" --global-batch 8 "${L[@]}" --json >"$tmp/j0.json" 2>>"$tmp/j.err" \
   && "$PY" - "$tmp/j1.json" "$tmp/j0.json" <<'PY'
import json, math, sys
a = json.load(open(sys.argv[1]))["plans"][0]; b = json.load(open(sys.argv[2]))["plans"][0]
span = a["compute_s"]
assert span > 1e-3, span  # the kernels take time
want = 0.01 * math.sqrt(span / math.pi)
# the JSON writes 6 significant digits: each figure within 5e-7 of its own size
assert abs((a["dp_s"] - b["dp_s"]) - want) <= 5e-7 * (a["dp_s"] + b["dp_s"]), (a["dp_s"] - b["dp_s"], want)
assert a["compute_s"] == b["compute_s"], (a, b)
PY
then echo "ok   the dp group's straggler wait is J sqrt(span / pi)"
else fail "straggler wait"; show "$tmp/j.err"; fi

# The impossible question: one error naming the smallest need; memory confirms it.
expect_error impossible "re:no layout of 64 ranks fits 1\.00 GiB per rank: the smallest need of any layout is [0-9.]+ GiB" \
  -- "$ZT" plan "${Q[@]}" --mem-limit 1G
least=$(grep -oE 'smallest need of any layout is [0-9.]+ GiB' "$tmp/impossible.err" | grep -oE '[0-9.]+')
lflags=$(grep -oE '\(--dp [^)]*\)' "$tmp/impossible.err" | tr -d '()')
if [ -n "$least" ] && [ -n "$lflags" ]; then
  # shellcheck disable=SC2086
  "$ZT" memory --json --model gpt2-xl --seq 1024 --backend cuda --ranks-per-node 8 --gpus-per-node 8 $lflags >"$tmp/least.json" 2>/dev/null \
    && "$PY" -c "
import json, sys
m = json.load(open(sys.argv[1])); peak = max(r['peak'] for r in m['ranks'])
assert '%.2f' % (peak / 2**30) == sys.argv[2], (peak / 2**30, sys.argv[2])
assert peak > 2**30
" "$tmp/least.json" "$least" && echo "ok   the named smallest need is memory's for its flags" || fail "smallest need differs from memory's"
else fail "impossible: no need or flags in the message"; fi

# --device cpu: no calibration yet, then a tiny calibration and a plan from it.
expect_error cpu_uncalibrated "run \`zerotrain plan --calibrate\` first" \
  -- "$ZT" plan --world 2 --device cpu --calibration "$tmp/none.json" --model tiny --global-batch 8
if "$ZT" plan --calibrate --calibration "$tmp/cal/cpu.json" --calibrate-steps 1 --model tiny \
     --seq 32 --micro-batch 2 --threads 1 >"$tmp/cal.out" 2>"$tmp/cal.err" \
   && grep -q "calibrating fp32, micro-batch 1, round 5 of 5" "$tmp/cal.err" \
   && "$ZT" plan --world 2 --device cpu --calibration "$tmp/cal/cpu.json" --model tiny --seq 32 \
     --global-batch 8 --json >"$tmp/cpu.json" 2>"$tmp/cpu.err" \
   && "$PY" - "$tmp/cpu.json" <<'PY'
import json, sys
q = json.load(open(sys.argv[1]))
assert q["device"]["sources"]["rates"] == "measured" and q["device"]["sources"]["links"] == "assumed", q["device"]
assert q["limit_per"] == "machine" and q["plans"], q
assert all("--threads 1" in p["flags"] for p in q["plans"])
# the rounds' spread is measured, stored and read back
assert q["device"]["spread"] > 0 and "fastest of 5 rounds" in q["device"]["note"], q["device"]
PY
then echo "ok   --calibrate stores rates a --device cpu plan reads"
else fail "calibrate then plan"; show "$tmp/cal.err"; show "$tmp/cpu.err"; fi

expect_error no_world "plan needs --world N, --device NAME and --global-batch B" -- "$ZT" plan --device h100 --model tiny --global-batch 8
expect_error bad_device "--device tpu is not known: use one of h100, h200, a100, cpu" -- "$ZT" plan --world 8 --device tpu --model tiny --global-batch 8
expect_error bad_world "--world needs a whole number" -- "$ZT" plan --world x --device h100 --model tiny --global-batch 8
expect_error grad_accum_given "plan derives --grad-accum from --global-batch" -- "$ZT" plan --world 8 --device h100 --model tiny --global-batch 8 --grad-accum 2
expect_error batch_indivisible "no layout of 8 ranks divides the global batch" -- "$ZT" plan --world 8 --device h100 --model tiny --global-batch 7 --dp 8
echo '{"name": "x"}' >"$tmp/dev.json"
expect_error bad_device_file 'give "name" and "backend"' -- "$ZT" plan --world 8 --device "$tmp/dev.json" --model tiny --global-batch 8

report_and_exit plan_cli
