#!/usr/bin/env bash
# bench/gpu_model.py's launches per op call are the CUDA backend's (issue 34): one whole step
# (tests/test_cuda_step.c, fp32 and bf16) runs in the CUDA emulation (README, "On a GPU"),
# whose log has a line per enqueued kernel, memset, copy and cuBLAS call; between the step's
# begin and end lines their count equals what gpu_model.py expands from `zerotrain plan
# --ops-json` of the same step. On a real GPU (no emulation log) only the op-by-op match of the
# C test runs; the launch count is nsys's there. SKIP (77) without a CUDA build or GPU.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
[ -x build/zt_tests_cuda ] && [ -x build/zerotrain ] || { echo "SKIP: no CUDA build (make cuda)"; exit 77; }
out=build/test_cuda_gpu_model; rm -rf $out; mkdir -p $out
ZT_EMU_VERBOSE=1 build/zt_tests_cuda cuda_step_ops_match_record > $out/run.out 2> $out/run.err
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: no GPU the CUDA backend can open"; exit 77; }
[ $rc -eq 0 ] || { cat $out/run.out; tail -20 $out/run.err; echo "FAIL: cuda_step_ops_match_record"; exit 1; }
if ! grep -q "^zt_emu: enqueue" $out/run.err; then
    echo "ok   the step's ops on the GPU = recorded (a real GPU: its launches are nsys's to count)"
    exit 0
fi
# the same step as tests/test_cuda_step.c's (its shape and loss chunk)
shape=(--model gpt2 --n-layer 2 --n-head 2 --n-embd 128 --vocab 16384 --n-ctx 512
       --micro-batch 4 --seq 512 --loss-chunk 2048 --device h100)
fail=0
for dt in fp32 bf16; do
    build/zerotrain plan --ops-json $out/$dt.json "${shape[@]}" --param-dtype $dt > /dev/null || { echo "FAIL: ops-json $dt"; fail=1; continue; }
    # the emulation's cuBLASLt has no epilogues: the backend runs gemm_epilogue_bf16 unfused
    "$PY" bench/gpu_model.py --launches $out/$dt.json --no-epilogues > $out/$dt.model || { echo "FAIL: gpu_model.py $dt"; fail=1; continue; }
    want=$(sed -n 's/^launches //p' $out/$dt.model)
    sed -n "/^cuda_step $dt begin/,/^cuda_step $dt end/p" $out/run.err | grep "^zt_emu: enqueue" > $out/$dt.enq
    got=$(wc -l < $out/$dt.enq)
    if [ "$got" -eq "$want" ] && [ "$got" -gt 0 ]; then
        echo "ok   $dt: $got launches in the emulation = gpu_model.py's expansion"
    else
        echo "FAIL: $dt: $got launches in the emulation, gpu_model.py expands $want"
        sed 's/^zt_emu: enqueue \(.*\) on stream.*/\1/' $out/$dt.enq | sort | uniq -c | sort -rn
        cat $out/$dt.model
        fail=1
    fi
done
exit $fail
