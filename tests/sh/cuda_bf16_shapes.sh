#!/usr/bin/env bash
# bf16 training on the GPU at shapes whose buffers do not fall on cuBLASLt's favourite
# boundaries, against the CPU's bf16 run (tests/compare_models.py --bf16, as cuda_train.sh):
#   - --n-embd 48 --seq 33 --micro-batch 3: the model's carver gives gemm_mixed's scratch on a
#     64-byte boundary that is not a 256-byte one (the backend aligns it: gemm_lt_cuda.c);
#     before, the run stopped at the first product;
#   - --vocab 2400 (padded to 2432) with --loss-chunk 33: the head's input gradient sums over
#     the vocabulary in 3 K chunks of 811, so the rounded fp32 logit gradients' pieces have
#     rows of 1622 bytes (as GPT-2's 1007 of 50304): the scratch pads them to 16 bytes.
# SKIP (77) without a CUDA build (`make cuda`) or without a GPU the backend can open.
set -uo pipefail
cd "$(dirname "$0")/../.."
ZC=build/zerotrain-cuda
[ -x "$ZC" ] && [ -x build/zt_tests_cuda ] || { echo "SKIP: no CUDA build (make cuda)"; exit 77; }
build/zt_tests_cuda cuda_memory > /dev/null 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: no GPU the CUDA backend can open"; exit 77; }
[ $rc -eq 0 ] || { echo "the CUDA backend fails its memory test (zt_tests_cuda cuda_memory)"; exit 1; }
out=build/test_cuda_bf16_shapes; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
fail=0
run() { # name, then the shape's options
  local name=$1; shift
  local common="--n-layer 2 --n-head 4 --n-ctx 64 --steps 4 --lr 1e-3 --warmup 1 --val-every 2
                --val-batches 1 --param-dtype bf16 --seed ${ZT_SEED:-7} $*"
  for be in cpu cuda; do
    $ZC $common --backend $be --log $out/$name-$be.jsonl --save $out/$name-$be \
        > $out/$name-$be.out 2>&1 || { cat $out/$name-$be.out; echo "FAIL: $name on $be"; fail=1; return; }
  done
  echo "== $name: cuda vs cpu"
  "${PYTHON:-/usr/bin/python3}" tests/compare_models.py $out/$name-cpu $out/$name-cuda \
      --steps 4 --lr 1e-3 --bf16 --log-a $out/$name-cpu.jsonl --log-b $out/$name-cuda.jsonl || fail=1
}
run embd48 --n-embd 48 --vocab 256 --seq 33 --micro-batch 3
run vocab2400 --n-embd 64 --vocab 2400 --seq 33 --micro-batch 2 --loss-chunk 33
exit $fail
