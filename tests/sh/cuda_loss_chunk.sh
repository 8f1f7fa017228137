#!/usr/bin/env bash
# The automatic loss chunk on a GPU is sized by the device's free memory (1/16 of it,
# src/app/train_loss_chunk.c), not by a CPU's 64 MiB rule, and the planner counts the chunk
# chosen: the run's allocator peaks equal `zerotrain memory --loss-chunk <that chunk>` in every
# category, to the byte. 1 layer of 32 channels, the GPT-2 vocabulary (50304 padded columns),
# micro-batch 8 x 128 = 1024 tokens: 196.5 MiB of logits whole, which the CPU's rule cuts
# into 4 chunks of 256. In the CUDA emulation (README, "On a GPU") also a device of 2400 MiB,
# whose 1/16 holds between 256 and 1024 tokens of logits. SKIP (77) without a CUDA build or GPU.
set -uo pipefail
cd "$(dirname "$0")/../.."
ZC=build/zerotrain-cuda
[ -x "$ZC" ] && [ -x build/zt_tests_cuda ] || { echo "SKIP: no CUDA build (make cuda)"; exit 77; }
build/zt_tests_cuda cuda_memory_fit > /dev/null 2>&1
[ $? -eq 77 ] && { echo "SKIP: no GPU the CUDA backend can open"; exit 77; }
out=build/test_cuda_loss_chunk; rm -rf $out; mkdir -p $out
PY=${PYTHON:-/usr/bin/python3}
"$PY" bench/make_tokens.py $out/tokens.bin 65536 || exit 1
shape="--model gpt2 --n-layer 1 --n-head 2 --n-embd 32 --micro-batch 8 --seq 128"
N=1024 HOST=256 # the CPU's rule: 64 MiB / (50304 columns x 4 B) = 333 tokens: 4 x 256
fail=0
# run NAME [flags]: one step on the GPU; sets CHUNK (the start report's) and checks the peaks
run() {
    local name=$1; shift
    env "${ENVS[@]}" $ZC --backend cuda $shape --steps 1 --val-every 0 --data $out/tokens.bin \
        --log $out/$name.jsonl "$@" > $out/$name.out 2>&1 || { cat $out/$name.out; echo "FAIL: $name did not run"; fail=1; return 1; }
    CHUNK=$(sed -n 's/^loss: chunks of \([0-9]*\) tokens.*/\1/p' $out/$name.out)
    $ZC memory --backend cuda $shape --dp 1 --loss-chunk "$CHUNK" --json > $out/$name.plan.json 2>&1 ||
        { cat $out/$name.plan.json; echo "FAIL: $name: zerotrain memory"; fail=1; return 1; }
    "$PY" - $out/$name.jsonl $out/$name.plan.json "$name" <<'EOF' || fail=1
import json, sys
peak = next(json.loads(l)["mem_peak"] for l in open(sys.argv[1]) if '"mem_peak"' in l)
plan = json.load(open(sys.argv[2]))["ranks"][0]["bytes"]
bad = {k: (peak[k], plan[k]) for k in plan if peak.get(k) != plan[k]}
print(f"{sys.argv[3]}: measured = planned in every category" if not bad else
      f"FAIL: {sys.argv[3]}: measured != planned (measured, planned): {bad}")
sys.exit(1 if bad else 0)
EOF
}
ENVS=()
run device || exit 1
echo "device memory: chunk $CHUNK of $N tokens (the CPU's rule: $HOST)"
# any GPU this runs on has 16 x 196.5 MiB free
[ "$CHUNK" = $N ] || { echo "FAIL: the automatic chunk on a GPU is $CHUNK, not the whole $N"; fail=1; }
run given --loss-chunk 300
[ "$CHUNK" = 300 ] || { echo "FAIL: --loss-chunk 300 became $CHUNK"; fail=1; }
if nvidia-smi -L 2> /dev/null | grep -q "zt CPU emulation"; then
    ENVS=(ZT_EMU_MEM_MIB=2400)
    run small || exit 1
    echo "a 2400 MiB device: chunk $CHUNK"
    # between the rules, in equal chunks of N: ceil(N / k) for some k
    ok=$("$PY" -c "import math; c = $CHUNK; print(int($HOST < c < $N and any(math.ceil($N / k) == c for k in range(1, 9))))")
    [ "$ok" = 1 ] || { echo "FAIL: on 2400 MiB the chunk is $CHUNK, not between $HOST and $N in equal parts"; fail=1; }
fi
[ $fail -eq 0 ] && echo "the automatic loss chunk follows the device's memory; the planner counts it"
exit $fail
