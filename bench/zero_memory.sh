#!/usr/bin/env bash
# ZeRO-1 memory per rank: measured bytes against the formula, for dp = 1, 2, 4, 8 and
# --zero 0 / 1, on a 30M-parameter GPT-2 (6 layers, 6 heads, 384 channels, vocab 50257).
#
#   bash bench/zero_memory.sh              # table, and the section in bench/RESULTS.md
#   NO_RESULTS=1 bash bench/zero_memory.sh # table only
#   DPS="2 4" bash bench/zero_memory.sh
#
# Each cell is one training step:
#   mpirun --oversubscribe --allow-run-as-root -np DP build/zerotrain --zero Z --steps 1
#       --n-layer 6 --n-head 6 --n-embd 384 --vocab 50257 --n-ctx 64 --seq 64 --micro-batch 1
#       --warmup 0 --val-every 0 --data build/bench/zero_tokens.bin --log FILE
# and reads
#   - "optimizer bytes per rank: b0 b1 ..." (stdout): every rank's optimizer bytes, exact;
#   - the JSON log's "mem" of step 1 (rank 0): bytes per category.
# P is the padded flat parameter count, params bytes / 4: the layout pads the flat buffer
# to a multiple of dp * 256 elements (equal, block-aligned ZeRO shards), so P grows by a
# few hundred elements with dp. The formulas (fp32 AdamW: m and v, 4 bytes each):
#   optimizer  = 8P/dp (zero 1) or 8P (zero 0)
#   model state (params + grads + optimizer) = 4P + 4P + 8P/dp (zero 1) or 16P (zero 0)
# More than 2 ranks time-slice this 2-core machine: fine here, nothing is timed.
#
# The data: 2^16 random token ids < 50257 in an llm.c token file, written once to
# build/bench/zero_tokens.bin by bench/make_tokens.py.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-/usr/bin/python3}
ZT=build/zerotrain
OUT=build/bench
DPS=${DPS:-"1 2 4 8"}
MODEL=(--n-layer 6 --n-head 6 --n-embd 384 --vocab 50257 --n-ctx 64 --seq 64 --micro-batch 1)
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
[ -x "$ZT" ] || { echo "zero_memory.sh: $ZT missing; run make -j2 all first" >&2; exit 1; }

DATA=$OUT/zero_tokens.bin
[ -f "$DATA" ] || "$PY" bench/make_tokens.py "$DATA" 65536

cells=()
for dp in $DPS; do
    for z in 0 1; do
        name="zmem_dp${dp}_z${z}"
        echo "== dp $dp zero $z" >&2
        "${MPIRUN[@]}" -np "$dp" -x OMP_NUM_THREADS "$ZT" --zero "$z" --steps 1 "${MODEL[@]}" \
            --warmup 0 --val-every 0 --data "$DATA" --log "$OUT/$name.jsonl" \
            > "$OUT/$name.out" 2>&1 || { cat "$OUT/$name.out" >&2; exit 1; }
        cells+=("$dp $z $OUT/$name.out $OUT/$name.jsonl")
    done
done

table=$("$PY" - "${cells[@]}" <<'EOF'
import json, sys
print("| dp | zero | P (padded) | optimizer bytes per rank, measured | formula 8P/dp or 8P "
      "| ratio | model state per rank (rank 0), measured | formula 4P+4P+8P/dp | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for cell in sys.argv[1:]:
    dp, z, out, log = cell.split()
    dp, z = int(dp), int(z)
    line = next(l for l in open(out) if l.startswith("optimizer bytes per rank:"))
    opt = [int(float(x)) for x in line.split(":")[1].split()]
    assert len(opt) == dp, f"{out}: {len(opt)} ranks reported, expected {dp}"
    mem = next(json.loads(l) for l in open(log) if '"mem"' in l)["mem"]
    assert mem["params"] % 4 == 0 and mem["params"] == mem["grads"]
    P = mem["params"] // 4
    f_opt = 8 * P // dp if z == 1 else 8 * P
    state = mem["params"] + mem["grads"] + mem["optimizer"]
    f_state = 4 * P + 4 * P + f_opt
    assert mem["optimizer"] == opt[0], "rank 0's optimizer bytes differ between the two reports"
    per_rank = str(opt[0]) if len(set(opt)) == 1 else " / ".join(map(str, opt))
    if len(set(opt)) == 1 and dp > 1:
        per_rank += f" (all {dp} ranks)"
    worst = max(opt, key=lambda b: abs(b - f_opt))
    print(f"| {dp} | {z} | {P} | {per_rank} | {f_opt} | {worst / f_opt:.4f} | {state} | "
          f"{f_state} | {state / f_state:.4f} |")
EOF
)

echo
echo "$table"

if [ -z "${NO_RESULTS:-}" ]; then
    DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
    P1=$(grep -m1 -o '[0-9.]*M parameters' "$OUT/zmem_dp$(echo $DPS | cut -d' ' -f1)_z0.out" || true)
    "$PY" bench/results_section.py bench/RESULTS.md "## ZeRO-1 memory per rank" <<EOF
## ZeRO-1 memory per rank

GPT-2 with 6 layers, 6 heads, 384 channels, vocab 50257 (padded 50304), n_ctx 64: $P1
(the tied embedding counted once), fp32 AdamW. One training step per cell; measured $DATE.
"optimizer bytes per rank" is every rank's optimizer allocation as the program prints it
(exact bytes; "all N ranks" when every rank holds the same); the model state is rank 0's
params + grads + optimizer from the JSON log's "mem" (bytes per category, from the tagged
allocator). P is the padded flat parameter count (params bytes / 4): the flat buffer is
padded to a multiple of dp x 256 elements, so P grows slightly with dp. The ratio column is
measured / formula (the worst rank for the optimizer).

$table

Measured and formula agree to the byte in every cell. What ZeRO-1 saves is exactly the
optimizer share: model state per rank goes from 16P to 8P + 8P/dp (12P at dp 2, 10P at
dp 4, 9P at dp 8); params and grads stay whole on every rank (ZeRO-2/3 would shard those).
At dp 1, --zero 1 shards over one rank: the same as --zero 0. Activations and workspace are
outside "model state" (the JSON log's "mem" has them). Not counted anywhere yet: the comm
layer's staging window, which MPI allocates (2 x dp x 256 KiB per rank and node-local
communicator: 1 MiB per communicator at dp 2; TODO in comm/comm_mpi.c).

Command: \`bash bench/zero_memory.sh\` (DPS="$DPS"), which runs for each cell

    mpirun --oversubscribe --allow-run-as-root -np DP build/zerotrain --zero Z --steps 1 \\
        ${MODEL[*]} \\
        --warmup 0 --val-every 0 --data build/bench/zero_tokens.bin --log FILE
EOF
    echo "wrote bench/RESULTS.md" >&2
fi
