#!/usr/bin/env bash
# `zerotrain plan --ops-json` and bench/gpu_model.py (issue 34): one GPT-2 124M step (B 16,
# T 1024) recorded for an H100's CUDA backend has what the model issues, checked against
# numbers derived here from the model's shape: the loss in one chunk (an 80 GB GPU's rule),
# one AdamW call per tensor, the products' flops 6 x tokens x the matrices' parameters, every
# call in the shape list; then the GPU model prices both steps; bad inputs, one clear error
# each (helpers: cli_errors.sh). The op-by-op match with the CPU's run is tests/test_plan.c's.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/cli_errors.sh" || exit 1   # cds to the repo root; defines the helpers
KNOWN_FLAGS+=" $("$ZT" plan --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ') "

fail() { echo "FAIL $1"; failed+=("$1"); }

STEP=(--device h100 --model gpt2 --micro-batch 16 --seq 1024)
for dt in fp32 bf16; do
  if ! "$ZT" plan --ops-json "$tmp/$dt.json" "${STEP[@]}" --param-dtype "$dt" >"$tmp/$dt.out" 2>"$tmp/$dt.err"; then
    fail "ops-json $dt: exit"; show "$tmp/$dt.err"; continue
  fi
  if "$PY" - "$tmp/$dt.json" "$dt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); dt = sys.argv[2]
m = d["model"]; L, C, V = m["n_layer"], m["n_embd"], m["padded_vocab"]
tokens = d["micro_batch"] * d["seq"]
assert (L, C, V, tokens) == (12, 768, 50304, 16384), (L, C, V, tokens)
assert d["backend"] == "cuda" and d["param_dtype"] == dt, d
# 16384 x 50304 logits (3.3 GB fp32) fit 1/16 of 80 GB: one chunk
assert d["loss_chunk"] == tokens, d["loss_chunk"]
ops = {o["op"]: o for o in d["ops"]}
# AdamW: one call per tensor: wte, wpe, 12 per block, ln_f's two
adamw = ops["adamw_bf16" if dt == "bf16" else "adamw"]
assert adamw["calls"] == 2 + 12 * L + 2, adamw["calls"]
# the products: forward 2, backward 4 flops per token and weight of every matrix (the head's
# is wte, V x C); attention's products are counted apart
gemm = sum(o["flops"] for o in d["ops"] if o["phase"] == "gemm")
want = 6.0 * tokens * (12 * L * C * C + V * C)
assert abs(gemm - want) <= 1e-12 * want, (gemm, want)
for o in d["ops"]:
    assert sum(s["calls"] for s in o["shapes"]) == o["calls"], o["op"]
    assert abs(sum(s["calls"] * s["flops"] for s in o["shapes"]) - o["flops"]) <= 1e-9 * max(o["flops"], 1), o["op"]
print(f"  {dt}: {len(ops)} ops, {sum(o['calls'] for o in d['ops'])} calls, {gemm / 1e12:.3f} TFLOP of products")
PY
  then echo "ok   ops-json $dt: one loss chunk, one AdamW call per tensor, the products' flops"
  else fail "ops-json $dt: contents"; fi
done

if "$PY" bench/gpu_model.py --check >"$tmp/model.out" 2>"$tmp/model.err" \
   && "$PY" - "$tmp/model.out" <<'PY'
import sys
rows = {l.split()[0]: l.split() for l in open(sys.argv[1])}
assert sorted(rows) == ["TF32", "bf16", "bf16+TF32", "fp32"], rows
for name, r in rows.items():
    launches, ms, tok = int(r[2]), float(r[4]), float(r[6])
    assert launches > 0 and ms > 0 and abs(tok - 16384 / (ms / 1e3)) < 1e-3 * tok, r
# TF32 products are faster than fp32's on the same step, so its step is shorter
assert float(rows["TF32"][4]) < float(rows["fp32"][4]), rows
assert float(rows["bf16+TF32"][4]) < float(rows["bf16"][4]), rows
print("  " + "; ".join(f"{n} {float(r[4]):.1f} ms, {r[2]} launches" for n, r in rows.items()))
PY
then echo "ok   gpu_model.py prices both steps"
else fail "gpu_model.py --check"; show "$tmp/model.err"; fi

# --grad-accum 2: the forward and backward ops twice, the optimizer's once
if "$ZT" plan --ops-json "$tmp/ga.json" "${STEP[@]}" --grad-accum 2 >/dev/null 2>"$tmp/ga.err" \
   && "$PY" - "$tmp/fp32.json" "$tmp/ga.json" <<'PY'
import json, sys
one, two = ({o["op"]: o["calls"] for o in json.load(open(p))["ops"]} for p in sys.argv[1:3])
assert two["matmul_forward"] == 2 * one["matmul_forward"] and two["attention_backward"] == 2 * one["attention_backward"], (one, two)
assert two["adamw"] == one["adamw"] and two["sumsq"] == one["sumsq"], (one, two)
PY
then echo "ok   ops-json --grad-accum 2: the passes twice, the update once"
else fail "ops-json --grad-accum"; show "$tmp/ga.err"; fi

expect_error ops_json_no_device "--ops-json needs --device NAME" -- "$ZT" plan --ops-json "$tmp/x.json" --model tiny
expect_error ops_json_pp "give --dp 1 --pp 1 --tp 1" -- "$ZT" plan --ops-json "$tmp/x.json" --device h100 --model tiny --pp 2
expect_error ops_json_unwritable "--ops-json $tmp/no/x.json: cannot write it" -- "$ZT" plan --ops-json "$tmp/no/x.json" --device h100 --model tiny

report_and_exit gpu_model
