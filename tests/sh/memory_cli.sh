#!/usr/bin/env bash
# `zerotrain memory`: the text report and the --json report (parsed with python3) for
# every preset, both optimizers, --zero 0/1, pp/tp/schedules/partitions, 16-bit
# parameters and a GPT-3 175B shape on 1024 ranks; the numbers checked against their own
# arithmetic (categories add up, ZeRO shards, 1F1B slots, the paper's formula); --mem-limit
# with advice that fits when planned again through the CLI; rank 0's allocations in real
# mpirun runs against its plan; the bench's report parser (its self-test); and bad inputs,
# each one clear error with a non-zero exit (helpers: cli_errors.sh).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/cli_errors.sh" || exit 1   # cds to the repo root; defines the helpers

# json_check NAME PYTHON_EXPR -- zerotrain memory args...: runs `zerotrain memory --json`,
# parses stdout, and evaluates the checks in python (variable j: the report; the helper
# functions below); a failing assert names the case.
json_check() {
  local name=$1 code=$2; shift 2
  [ "${1:-}" = "--" ] && shift
  local out="$tmp/$name.json" err="$tmp/$name.err" rc
  timeout -k 5 "$TIMEOUT" "$ZT" memory --json "$@" >"$out" 2>"$err"; rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL $name: exit $rc"; show "$err"; failed+=("$name: exit $rc"); return 0
  fi
  if "$PY" - "$out" "$code" "$@" >"$tmp/$name.py" 2>&1 <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
args = sys.argv[3:]
CATS = ["params", "grads", "optimizer", "activations", "workspace", "comm", "logits"]
lay = j["layout"]
W = lay["dp"] * lay["pp"] * lay["tp"]
assert lay["world"] == W and len(j["ranks"]) == W, "one entry per rank"
for r in j["ranks"]:
    b = r["bytes"]
    assert sorted(b) == sorted(CATS), b
    assert all(v >= 0 for v in b.values()), b
    assert r["tracked"] == sum(b.values()), r
    # host staging buffers are in comm on the CPU, pinned host memory beside it on a GPU
    dev = lay["backend"] == "cuda"
    assert r["peak"] == r["tracked"] + r["comm_window"] + r["end_transient"] + \
        (r["staging"] if dev else 0), r
    s = r["optimizer_split"]
    assert b["optimizer"] == s["master"] + s["m"] + s["v"] + s["absmax"] + s["table"], r
    assert r["rank"] == (r["pp_rank"] * lay["dp"] + r["dp_rank"]) * lay["tp"] + r["tp_rank"]
    pb = 4 if lay["param_dtype"] == "fp32" else 2
    assert b["params"] == b["grads"] == pb * r["numel"], r
    shard = r["shard_hi"] - r["shard_lo"]
    assert shard == (r["numel"] // lay["dp"] if lay["zero"] else r["numel"]), r
    if lay["optim"] == "adamw":
        assert b["optimizer"] == 8 * shard + (4 * shard if pb == 2 else 0), r
    # 1F1B keeps min(pp - s, m) micro-batches in flight, GPipe all m
    m, s_ = lay["grad_accum"], r["pp_rank"]
    want = m if lay["schedule"] == "gpipe" else min(lay["pp"] - s_, m)
    assert r["slots"] == want, (r["slots"], want)
    assert b["logits"] > 0 if s_ == lay["pp"] - 1 else b["logits"] == 0, r
assert j["max_peak"] == max(r["peak"] for r in j["ranks"])
zf = j["zero_formula"]["this_run"]
if lay["optim"] == "adamw":  # exact for fp32 state; the 8-bit state has small extras
    assert zf["formula"] == zf["planned"], zf
for k, v in j["zero_formula"]["published_7.5B_Nd64"].items():
    assert abs(v["paper_GB"] - v["formula_GB"]) < 0.05, (k, v)
exec(sys.argv[2])
EOF
  then
    echo "ok   $name"
  else
    echo "FAIL $name: $(tail -3 "$tmp/$name.py")"; failed+=("$name")
  fi
  return 0
}

# ---- the text report -----------------------------------------------------------------
expect_ok text_tiny_pp2 '^stage 1, dp 0-1 +1 ' -- "$ZT" memory --dp 2 --pp 2
expect_ok text_columns '^ranks +slots +params +grads +optimizer +activ\. +workspace +comm +logits +windows +staging +end +peak$' -- \
  "$ZT" memory --dp 2 --pp 2
expect_ok text_optimizer_split '^ranks +master +m +v +absmax +table$' -- "$ZT" memory --dp 2 --optim adamw8bit --zero 1
expect_ok text_largest_rank '^largest rank: [0-9]+ \(stage' -- "$ZT" memory --model gpt2 --dp 4 --pp 2 --tp 2
expect_ok text_paper_formula 'Pos 31\.4 GB \(formula 31\.4\)' -- "$ZT" memory --dp 64 --zero 1
expect_ok text_mem_limit_fits 'every rank fits' -- "$ZT" memory --dp 2 --mem-limit 16G
expect_ok text_mem_limit_advice '^  fits with --' -- "$ZT" memory --model gpt2 --dp 2 --micro-batch 8 --seq 1024 --mem-limit 4G
# the text's largest rank is the JSON's
# (stdout alone: stderr may carry the environment's warnings, tests/env.sh)
"$ZT" memory --model gpt2-medium --dp 2 --pp 4 --zero 1 --grad-accum 8 >"$tmp/text.out" 2>"$tmp/text.err"
"$ZT" memory --model gpt2-medium --dp 2 --pp 4 --zero 1 --grad-accum 8 --json >"$tmp/text.json" 2>"$tmp/text.err"
if "$PY" - "$tmp/text.out" "$tmp/text.json" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
j = json.load(open(sys.argv[2]))
m = re.search(r"^largest rank: (\d+) .*\) ([0-9.]+) (GiB|MiB)", text, re.M)
unit = {"GiB": 2**30, "MiB": 2**20}[m.group(3)]
assert int(m.group(1)) == j["max_peak_rank"], (m.group(1), j["max_peak_rank"])
assert abs(float(m.group(2)) * unit - j["max_peak"]) <= 0.006 * unit, (m.group(2), j["max_peak"])
EOF
then echo "ok   text_matches_json"; else echo "FAIL text_matches_json"; failed+=("text_matches_json"); fi

# ---- the JSON report -------------------------------------------------------------------
for model in tiny gpt2 gpt2-medium gpt2-large gpt2-xl; do
  tp=2; [ "$model" = gpt2-xl ] && tp=5   # 25 heads
  json_check "json_${model}_zero0" 'assert lay["zero"] == 0' -- --model "$model" --dp 2
  json_check "json_${model}_zero1_pp4" 'assert len(j["stages"]) == 4' -- \
    --model "$model" --dp 2 --pp 4 --zero 1 --grad-accum 6
  json_check "json_${model}_8bit_tp" 'assert lay["optim"] == "adamw8bit"' -- \
    --model "$model" --dp 2 --pp 2 --tp "$tp" --zero 1 --optim adamw8bit --schedule gpipe --grad-accum 3
done
json_check json_partition_memory 'assert lay["partition"] == "memory"' -- \
  --model gpt2 --dp 1 --pp 4 --partition memory --grad-accum 8
json_check json_partition_ranges '
st = j["stages"]
assert [(s["unit_first"], s["unit_last"]) for s in st] == [(0, 1), (1, 7), (7, 13), (13, 14)], st' -- \
  --model gpt2 --dp 1 --pp 4 --partition 0:1,1:7,7:13,13:14
json_check json_loss_chunk '
r = j["ranks"][-1]["bytes"]
assert r["logits"] >= 64 * 50304 * 4, r' -- --model gpt2 --dp 1 --loss-chunk 64 --micro-batch 1
# the 8-bit optimizer holds about a quarter of fp32 AdamW's state
"$ZT" memory --model gpt2 --dp 1 --json >"$tmp/fp32.json" && \
"$ZT" memory --model gpt2 --dp 1 --optim adamw8bit --json >"$tmp/8bit.json" && \
if "$PY" - "$tmp/fp32.json" "$tmp/8bit.json" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))["ranks"][0]["bytes"]["optimizer"]
b = json.load(open(sys.argv[2]))["ranks"][0]["bytes"]["optimizer"]
assert 0.24 < b / a < 0.30, b / a
EOF
then echo "ok   json_8bit_saves"; else echo "FAIL json_8bit_saves"; failed+=("json_8bit_saves"); fi
# 16-bit parameters with fp32 master weights: the ZeRO paper's Pos exactly (K = 12)
json_check json_bf16_pos '
zf = j["zero_formula"]["this_run"]
assert zf["K"] == 12 and zf["p"] == 2 and zf["formula"] == zf["planned"], zf
r = j["ranks"][0]["optimizer_split"]
assert r["master"] == r["m"] == r["v"], r' -- --model gpt2-xl --dp 8 --zero 1 --param-dtype bf16
# GPT-3 175B on 1024 ranks (8 per machine): plans, and matches the ZeRO paper within padding
json_check json_gpt3_175b '
psi = j["model"]["parameters"]
assert 174e9 < psi < 176e9, psi
r = j["ranks"][0]
state = r["bytes"]["params"] + r["bytes"]["grads"] + r["bytes"]["optimizer"]
pos = 4 * psi + 12 * psi / 1024
assert abs(state / pos - 1) < 1e-3, (state, pos)
assert len(j["ranks"]) == 1024' -- \
  --n-layer 96 --n-head 96 --n-embd 12288 --n-ctx 2048 --vocab 50257 --seq 2048 --micro-batch 1 \
  --dp 1024 --zero 1 --param-dtype bf16 --ranks-per-node 8
json_check json_gpt3_175b_3d 'assert max(r["pp_rank"] for r in j["ranks"]) == 7' -- \
  --n-layer 96 --n-head 96 --n-embd 12288 --n-ctx 2048 --vocab 50257 --seq 2048 --micro-batch 1 \
  --dp 16 --pp 8 --tp 8 --zero 1 --optim adamw8bit --partition memory --grad-accum 16 --ranks-per-node 8

# ---- host staging: the grid's choice of path per group, from the GPUs per machine --------
# A CUDA plan counts each staged group's two pinned host buffers (16 MiB each; 64 KiB for a
# group of one) beside the device bytes; NCCL groups stage nothing. 8 ranks dp 2 x pp 2 x tp 2
# on one machine: rank r takes GPU r mod G.
STG='
MiB, KiB = 2**20, 2**10
def staging(r): return j["ranks"][r]["staging"]'
json_check json_cuda_staging_own_gpus "$STG
assert all(staging(r) == 0 for r in range(8)), [staging(r) for r in range(8)]" -- \
  --backend cuda --dp 2 --pp 2 --tp 2
json_check json_cuda_staging_one_rank "$STG
assert staging(0) == 4 * 2 * 64 * KiB, staging(0)  # four groups of one" -- --backend cuda
# 4 GPUs: tp {0,1} and dp {0,2} on GPUs of their own, pp and embed {0,4} share GPU 0
json_check json_cuda_staging_4_gpus "$STG
assert all(staging(r) == 2 * 2 * 16 * MiB for r in range(8)), [staging(r) for r in range(8)]" -- \
  --backend cuda --dp 2 --pp 2 --tp 2 --gpus-per-node 4
# 1 GPU: every group shares it
json_check json_cuda_staging_1_gpu "$STG
assert all(staging(r) == 4 * 2 * 16 * MiB for r in range(8)), [staging(r) for r in range(8)]" -- \
  --backend cuda --dp 2 --pp 2 --tp 2 --gpus-per-node 1
# 2 machines of 4 ranks and 2 GPUs: the pp groups {r, r+4} span machines (NCCL), tp pairs
# share nothing, dp pairs {0,2} share GPU 0 of their machine
json_check json_cuda_staging_2_machines "$STG
assert all(staging(r) == 2 * 16 * MiB for r in range(8)), [staging(r) for r in range(8)]" -- \
  --backend cuda --dp 2 --pp 2 --tp 2 --gpus-per-node 2 --ranks-per-node 4
# --tensor-path staged on the CPU: the buffers are host memory the allocator counts, in comm
json_check json_cpu_staged_in_comm "$STG
assert staging(0) == 3 * 2 * 16 * MiB + 2 * 64 * KiB, staging(0)  # dp, pp, embed; tp alone" -- \
  --dp 2 --pp 2 --tensor-path staged

# ---- --mem-limit: the advice fits when planned again -----------------------------------
BASE=(--model gpt2 --dp 2 --micro-batch 8 --seq 1024 --grad-accum 2)
json_check json_mem_limit_advice '
assert j["fits"] is False and j["limit"] == 4 * 2**30, j.get("fits")
assert len(j["advice"]) >= 2, j["advice"]
open(sys.argv[1] + ".advice", "w").write("".join(a["change"] + "\n" for a in j["advice"]))
for a in j["advice"]:
    assert a["need"] <= j["limit"], a' -- "${BASE[@]}" --mem-limit 4G
while read -r change; do
  [ -n "$change" ] || continue
  # shellcheck disable=SC2086  # the change is several flags
  json_check "replanned: $change" 'assert j["max_peak"] <= 4 * 2**30, j["max_peak"]' -- \
    "${BASE[@]}" $change
done <"$tmp/json_mem_limit_advice.json.advice"
json_check json_mem_limit_fits 'assert j["fits"] is True and j["advice"] == []' -- --dp 2 --mem-limit 1G
# a tp 2 run that does not fit is advised --sequence-parallel, which fits when planned again
json_check json_mem_limit_advice_sp '
assert j["fits"] is False, j["max_peak"]
assert "--sequence-parallel" in [a["change"] for a in j["advice"]], j["advice"]' -- \
  --model gpt2 --micro-batch 8 --seq 1024 --tp 2 --mem-limit 4G
json_check json_mem_limit_advice_sp_replanned 'assert j["max_peak"] <= 4 * 2**30, j["max_peak"]' -- \
  --model gpt2 --micro-batch 8 --seq 1024 --tp 2 --sequence-parallel
# --sequence-parallel: each tp rank keeps 1/tp of the per-row activations (LayerNorms,
# residual stream) and pipeline buffers, so GPT-2 at B8 T1024 on tp 2 plans fewer
# activation bytes per rank than tp 2 alone (docs/design.md, "Sequence parallelism")
"$ZT" memory --model gpt2 --micro-batch 8 --seq 1024 --tp 2 --json >"$tmp/tp2.json" && \
"$ZT" memory --model gpt2 --micro-batch 8 --seq 1024 --tp 2 --sequence-parallel --json \
  >"$tmp/tp2_sp.json" && \
if "$PY" - "$tmp/tp2.json" "$tmp/tp2_sp.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert not a["layout"]["sequence_parallel"] and b["layout"]["sequence_parallel"]
for ra, rb in zip(a["ranks"], b["ranks"]):
    x, y = ra["bytes"]["activations"], rb["bytes"]["activations"]
    assert y < x, (y, x)
    assert rb["bytes"]["comm"] < ra["bytes"]["comm"], (rb["bytes"], ra["bytes"])
EOF
then echo "ok   json_sequence_parallel_shrinks"
else echo "FAIL json_sequence_parallel_shrinks"; failed+=("json_sequence_parallel_shrinks"); fi

# ---- the plan against real runs: rank 0's allocator bytes after step 1 (the step log's
# "mem") equal its plan in every category, the MPI backend's own bytes included -------------
if command -v mpirun >/dev/null; then
  mk_tokens "$tmp/good.bin" 4096 256
  for cfg in "4|--dp 2 --pp 2 --grad-accum 4 --n-layer 2" "2|--dp 2 --zero 1 --optim adamw8bit" \
             "1|--dp 1 --loss-chunk 8" "4|--dp 1 --pp 2 --tp 2 --schedule gpipe --grad-accum 3 --n-layer 3" \
             "2|--dp 2 --zero 1 --param-dtype bf16" "2|--dp 2 --zero 1 --optim adamw8bit --param-dtype bf16" \
             "4|--dp 1 --pp 2 --tp 2 --grad-accum 2 --n-layer 3 --param-dtype bf16" \
             "4|--dp 1 --pp 2 --tp 2 --grad-accum 2 --n-layer 3 --recompute full --recompute-layers 1" \
             "1|--dp 1 --recompute selective" \
             "4|--dp 2 --pp 2 --grad-accum 2 --n-layer 2 --tensor-path staged" \
             "2|--dp 2 --zero 1 --param-dtype bf16 --tensor-path staged" \
             "4|--dp 1 --pp 2 --tp 2 --grad-accum 2 --n-layer 3 --sequence-parallel" \
             "2|--dp 1 --tp 2 --sequence-parallel --param-dtype bf16"; do
    np=${cfg%%|*}; flags=${cfg#*|}
    name="run_np${np}_$(echo "$flags" | tr -c 'a-z0-9' _)"
    # shellcheck disable=SC2086  # flags are several words
    if ! OMP_NUM_THREADS=1 timeout -k 5 "$TIMEOUT" mpirun --oversubscribe --allow-run-as-root \
        -x OMP_NUM_THREADS -np "$np" "$ZT" "${TINY[@]}" $flags --val-every 0 \
        --data "$tmp/good.bin" --log "$tmp/$name.jsonl" >"$tmp/$name.out" 2>&1; then
      echo "FAIL $name: the run failed"; show "$tmp/$name.out"; failed+=("$name"); continue
    fi
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=1 "$ZT" memory --json "${TINY[@]}" $flags >"$tmp/$name.plan.json"
    if "$PY" - "$tmp/$name.jsonl" "$tmp/$name.plan.json" >"$tmp/$name.py" 2>&1 <<'EOF'
import json, sys
mem = [json.loads(l) for l in open(sys.argv[1]) if '"mem"' in l][0]["mem"]
plan = json.load(open(sys.argv[2]))["ranks"][0]["bytes"]
diff = {k: (mem.get(k), v) for k, v in plan.items() if mem.get(k) != v}
assert not diff, "allocated vs planned: %s" % diff
EOF
    then echo "ok   $name: rank 0 allocated what was planned"
    else echo "FAIL $name: $(tail -1 "$tmp/$name.py")"; failed+=("$name"); fi
  done
fi

# ---- the memory bench's parser of the trainer's records, on its hand-made sample ----------
if "$PY" bench/memory_report.py --selftest >"$tmp/selftest.out" 2>&1; then echo "ok   bench_report_selftest"
else echo "FAIL bench_report_selftest"; show "$tmp/selftest.out"; failed+=("bench_report_selftest"); fi

# ---- bf16 training: the run says so ----------------------------------------------------------
expect_ok train_bf16 'precision: bf16 weights and gradients' -- "$ZT" "${TINY[@]}" --param-dtype bf16

# ---- bad inputs ---------------------------------------------------------------------------
# --dp defaults to 1, as --pp and --tp do
expect_ok memory_without_dp 'world 2|dp 1' -- "$ZT" memory --pp 2
expect_error memory_tp_not_dividing_heads "--tp 3 does not divide the 4 attention heads" -- "$ZT" memory --dp 1 --tp 3
expect_error memory_tp_not_dividing_gpt2_heads "--tp 5 does not divide the 12 attention heads" -- "$ZT" memory --model gpt2 --dp 2 --tp 5
expect_error memory_sequence_parallel_rows "splits a micro-batch's 1 x 15 = 15 token rows over --tp 2" -- \
  "$ZT" memory --dp 1 --tp 2 --sequence-parallel --micro-batch 1 --seq 15
expect_error memory_param_dtype_unknown "--param-dtype 'fp16' is not known" -- "$ZT" memory --dp 1 --param-dtype fp16
expect_error memory_mem_limit_bad "--mem-limit '12Q'" -- "$ZT" memory --dp 1 --mem-limit 12Q
expect_error memory_mem_limit_negative "--mem-limit '-1G'" -- "$ZT" memory --dp 1 --mem-limit -1G
expect_error memory_too_many_stages "needs at least 7 units" -- "$ZT" memory --dp 1 --pp 7
expect_error memory_unknown_flag "unknown option --dpp" -- "$ZT" memory --dpp 2
expect_error memory_world_too_large "more than 1048576 ranks" -- "$ZT" memory --dp 65536 --pp 4 --tp 8 --n-head 8
expect_error train_mem_limit_bad "--mem-limit '5 G'" -- "$ZT" "${TINY[@]}" --mem-limit "5 G"

report_and_exit memory_cli
