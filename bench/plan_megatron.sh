#!/usr/bin/env bash
# `zerotrain plan` against Megatron-LM's published throughput: the weak-scaling table of
# Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
# Megatron-LM" (SC21), Table 1: GPT models on Selene (DGX A100 80GB, 8 GPUs per node, 8 HDR
# InfiniBand NICs per node), sequence 2048, vocabulary 51200, mixed precision, activation
# recomputation; the achieved TFLOP/s per GPU counted by the paper's formula
#   F = 96 B s l h^2 (1 + s / (6h) + V / (16 l h))   per iteration (recomputation included)
# For each row, the plan of the row's world with its tp and pp fixed, bf16 and full
# recomputation (every other choice the plan's), its predicted step t, and F / (t x GPUs)
# beside the published figure. Two devices:
#   a100            the table's A100 as zerotrain runs it (fp32 attention, fp32 activations)
#   a100-megatron   the same figures with Megatron's kernel types: attention on the tensor
#                   cores at the GEMMs' rate, half the element-wise traffic (fp16
#                   activations): a JSON device file written here (build/bench/a100-megatron.json)
#
#   bash bench/plan_megatron.sh            # writes build/bench/plan_megatron.md, prints it
set -euo pipefail
cd "$(dirname "$0")/.."
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
OUT=${OUT:-build/bench/plan_megatron.md}
mkdir -p build/bench
DEV=build/bench/a100-megatron.json
# the table's a100, through the same writer (--json's device), then Megatron's kernel types
"$ZT" plan --world 8 --device a100 --model tiny --global-batch 8 --json --top 1 | "$PY" -c '
import json, sys
d = json.load(sys.stdin)["device"]
r = d["rates"]
for k in ("loss", "elementwise", "memory"):
    r[k] = [2 * x for x in r[k]]                 # fp16 activations: half the bytes
r["attention"] = list(r["gemm"])                 # tensor-core attention at the GEMMs rate
r["attention"][0] = r["gemm"][1]
d["name"] = "NVIDIA A100 SXM4 80GB, Megatron-LM kernel types"
d["note"] = "the a100 table with attention at the bf16 GEMM rate and half the element-wise traffic (Megatron-LM fp16 kernels)"
del d["sources"]
json.dump(d, open(sys.argv[1], "w"))
' "$DEV"
# params (B) | heads | hidden | layers | tp | pp | GPUs | batch | published TFLOP/s per GPU
# (the paper's Table 1; checked against three public transcriptions of it, bench/RESULTS.md)
ROWS=(
  "1.7|24|2304|24|1|1|32|512|137"
  "3.6|32|3072|30|2|1|64|512|138"
  "7.5|32|4096|36|4|1|128|512|142"
  "18.4|48|6144|40|8|1|256|1024|135"
  "39.1|64|8192|48|8|2|512|1536|138"
  "76.1|80|10240|60|8|4|1024|1792|140"
  "145.6|96|12288|80|8|8|1536|2304|148"
)
rows=$(mktemp)
for r in "${ROWS[@]}"; do
  IFS='|' read -r P nh h L tp pp G B pub <<<"$r"
  for dev in a100 "$DEV"; do
    t0=$(date +%s.%N)
    res=$("$ZT" plan --world "$G" --gpus-per-node 8 --device "$dev" --model gpt2 --n-layer "$L" \
          --n-head "$nh" --n-embd "$h" --vocab 51200 --n-ctx 2048 --seq 2048 --global-batch "$B" \
          --tp "$tp" --pp "$pp" --param-dtype bf16 --recompute full --schedule 1f1b --json --top 1 \
          2>&1) || res="ERR $res"
    dt=$(echo "$(date +%s.%N) - $t0" | bc)
    echo "$P|$nh|$h|$L|$tp|$pp|$G|$B|$pub|$(basename "$dev" .json)|$dt|$res" >>"$rows"
  done
done
"$PY" - "$rows" >"$OUT" <<'PY'
import json, sys
print("| model | tp x pp x dp | GPUs | batch | published TFLOP/s/GPU | predicted, a100 | error | predicted, a100-megatron | error | plan's micro-batch | plan time |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
by = {}
for line in open(sys.argv[1]):
    P, nh, h, L, tp, pp, G, B, pub, dev, dt, res = line.rstrip("\n").split("|", 11)
    by.setdefault((P, nh, h, L, tp, pp, G, B, pub), {})[dev] = (res, float(dt))
for (P, nh, h, L, tp, pp, G, B, pub), d in by.items():
    s, V, l, hh, Bn, Gn = 2048, 51200, int(L), int(h), int(B), int(G)
    F = 96 * Bn * s * l * hh * hh * (1 + s / (6 * hh) + V / (16 * l * hh))
    cells, mb, secs = [], "", 0.0
    for dev in ("a100", "a100-megatron"):
        res, dt = d[dev]
        secs += dt
        if res.startswith("ERR") or not res.strip().startswith("{"):
            cells += ["does not fit / error", ""]
            continue
        p = json.loads(res)["plans"][0]
        tf = F / (p["step_s"] * Gn) / 1e12
        cells += [f"{tf:.0f}", f"{(tf - float(pub)) / float(pub) * 100:+.0f}%"]
        mb = p["flags"].split("--micro-batch ")[1].split()[0]
    dp = Gn // (int(tp) * int(pp))
    print(f"| {P}B ({L} x {h}) | {tp} x {pp} x {dp} | {G} | {B} | {pub} | " + " | ".join(cells) + f" | {mb} | {secs:.1f} s |")
PY
rm -f "$rows"
cat "$OUT"
