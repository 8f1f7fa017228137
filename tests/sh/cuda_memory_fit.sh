#!/usr/bin/env bash
# A run planned larger than its GPU is refused before anything is allocated: the fit check
# reads the device's memory (zt_backend_i.memory_info) and names the GPU, the bytes and the
# fix, once, instead of cudaMalloc failing half-way through set-up. 8 layers of 16384
# channels (25.8e9 parameters, ~385 GiB with AdamW) on one GPU. Then a run that fits
# starts (one step). SKIP (77) without a CUDA build (`make cuda`) or a GPU.
set -uo pipefail
cd "$(dirname "$0")/../.."
ZC=build/zerotrain-cuda
[ -x "$ZC" ] && [ -x build/zt_tests_cuda ] || { echo "SKIP: no CUDA build (make cuda)"; exit 77; }
build/zt_tests_cuda cuda_memory_fit > /dev/null 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: no GPU the CUDA backend can open"; exit 77; }
[ $rc -eq 0 ] || { echo "zt_tests_cuda cuda_memory_fit fails"; exit 1; }
out=build/test_cuda_memory_fit; rm -rf $out; mkdir -p $out
common="--backend cuda --vocab 256 --n-ctx 64 --seq 64 --micro-batch 1 --steps 1"
$ZC $common --n-layer 8 --n-head 128 --n-embd 16384 > $out/big.out 2>&1
rc=$?
cat $out/big.out
fail=0
[ $rc -ne 0 ] || { echo "FAIL: a run larger than the GPU started"; fail=1; }
grep -q "of device memory" $out/big.out && grep -q "GPU 0 (" $out/big.out &&
  grep -q -- "--micro-batch" $out/big.out ||
  { echo "FAIL: no fit-check error naming the GPU, the bytes and the fix"; fail=1; }
[ "$(grep -c "error:" $out/big.out)" -eq 1 ] || { echo "FAIL: not one error line"; fail=1; }
grep -q "out of GPU memory" $out/big.out && { echo "FAIL: it allocated first"; fail=1; }
$ZC $common --n-layer 2 --n-head 4 --n-embd 64 > $out/small.out 2>&1 ||
  { cat $out/small.out; echo "FAIL: a small run was refused"; fail=1; }
[ $fail -eq 0 ] && echo "refused before allocating; a run that fits starts"
exit $fail
