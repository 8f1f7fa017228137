#!/usr/bin/env bash
# Several CUDA ranks on this machine's GPUs (issue 26; written without a GPU, not yet run on
# one): host staging of device buffers on 1 and 2 ranks sharing GPU 0 (cuda_comm_staged), then
# 2 CUDA ranks training with dp 2 against 1 CUDA rank on the same global batch (the
# reassociation bounds of tests/compare_models.py), their start naming each rank's GPU and
# each group's path. SKIP without build/zerotrain-cuda or a GPU.
set -u
BIN=build/zt_tests_cuda; ZT=build/zerotrain-cuda
[ -x "$BIN" ] && [ -x "$ZT" ] || { echo "SKIP: build/zt_tests_cuda not built (make cuda)"; exit 77; }
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU here"; exit 77; }
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
fail=0
"$BIN" cuda_comm_staged || fail=1
$MPI -np 2 "$BIN" cuda_comm_staged || fail=1
out=build/test_cuda_comm; rm -rf $out; mkdir -p $out
common="--backend cuda --n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32
        --steps 6 --lr 1e-3 --warmup 2 --val-every 0 --seed 3"
$ZT $common --micro-batch 4 --grad-accum 1 --log $out/one.jsonl --save $out/one > $out/one.out 2>&1 ||
    { cat $out/one.out; exit 1; }
$MPI -np 2 $ZT $common --micro-batch 2 --grad-accum 1 --zero 1 --log $out/dp2.jsonl --save $out/dp2 \
    > $out/dp2.out 2>&1 || { cat $out/dp2.out; exit 1; }
grep -E "^(devices|tensor paths):" $out/dp2.out | sed 's/^/    /'
grep -q "^tensor paths: .*dp: \(NCCL\|MPI with host staging\)" $out/dp2.out ||
    { echo "MISMATCH: no tensor paths report"; fail=1; }
"${PYTHON:-/usr/bin/python3}" tests/compare_models.py $out/one $out/dp2 --steps 6 --lr 1e-3 \
    --log-a $out/one.jsonl --log-b $out/dp2.jsonl || fail=1
exit $fail
