#!/usr/bin/env bash
# Every CPU path of the bf16 GEMM (kernels/cpu/gemm_bf16_cpu.c) on the machine that has it,
# narrower ones forced by capping oneDNN's ISA for this test's own processes
# (ONEDNN_MAX_CPU_ISA, read once per process by oneDNN):
#   - everywhere: the cap reaches oneDNN in this build (capped at SSE4.1, the ISA it reports
#     is SSE4.1's), else the narrower runs below would silently test the wider kernels;
#   - AMX-BF16 CPUs: the GEMM tests again capped at AVX512_CORE_BF16 (AVX512-BF16 kernels);
#   - AVX512-BF16 or AMX CPUs: capped at AVX512_CORE (below bf16) forcing oneDNN is refused
#     and the automatic choice is the fp32 fallback; then a 6-step bf16 training run on each
#     path the CPU has (oneDNN's matmul primitive, the CPU's own; its gemm API,
#     --bf16-gemm onednn; the fallback; AVX512-BF16 kernels on AMX), every one compared with
#     the run on the CPU's own path by
#     tests/compare_models.py --bf16 (the paths differ in fp32 summation order only, well
#     inside the layout tests' bf16 bound); and --bf16-gemm fallback, uncapped, against the
#     capped fallback run, loss for loss.
# The C tests force the fallback themselves on every CPU (gemm_bf16_fallback,
# bf16_gemm_mixed_fallback); the uncapped oneDNN tests run as gemm_bf16_dnnl,
# gemm_bf16_dnnl_matmul, bf16_gemm_mixed_dnnl and bf16_gemm_mixed_dnnl_matmul. SKIP (77) on a CPU without bf16 instructions, after the cap check.
set -u
. tests/env.sh
T=build/zt_tests ZT=build/zerotrain PY=${PYTHON:-/usr/bin/python3}
out=build/test_bf16_gemm_paths; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
uncap=(env -u ONEDNN_MAX_CPU_ISA -u DNNL_MAX_CPU_ISA)
cap() { env -u DNNL_MAX_CPU_ISA ONEDNN_MAX_CPU_ISA=$1 "${@:2}"; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# "this CPU: avx512_bf16 A, amx_bf16 B, oneDNN isa 0xI" from the refusal test
cpu_line() { "$@" $T gemm_bf16_dnnl_refused 2>&1 | grep -o 'this CPU: .*'; }
own=$(cpu_line "${uncap[@]}") || { bad "gemm_bf16_dnnl_refused printed no CPU line"; exit 1; }
echo "uncapped: $own"
low=$(cpu_line cap SSE41)
echo "ONEDNN_MAX_CPU_ISA=SSE41: $low"
case $low in *"oneDNN isa 0x1") ;; *) bad "the ISA cap does not reach oneDNN" ;; esac
avx512_bf16=$(sed 's/.*avx512_bf16 \([01]\).*/\1/' <<<"$own")
amx=$(sed 's/.*amx_bf16 \([01]\).*/\1/' <<<"$own")
if [ "$avx512_bf16$amx" = 00 ]; then
  [ $fail = 0 ] || exit 1
  echo "SKIP: this CPU has neither AVX512-BF16 nor AMX-BF16: only the fp32 fallback runs here"
  exit 77
fi

gemm_tests() { # label, then the command prefix
  local label=$1; shift
  for t in gemm_bf16_dnnl gemm_bf16_dnnl_matmul bf16_gemm_mixed_dnnl bf16_gemm_mixed_dnnl_matmul; do
    "$@" $T $t > $out/$t-$label.txt 2>&1 || { cat $out/$t-$label.txt; bad "$t ($label)"; }
  done
  grep -h 'bf16 GEMM:' $out/gemm_bf16_dnnl-$label.txt
}
if [ "$amx" = 1 ]; then
  echo "== AVX512-BF16 kernels on this AMX CPU (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16)"
  gemm_tests avx512bf16 cap AVX512_CORE_BF16
  grep -q 'oneDNN up to AVX512-core-BF16)' $out/gemm_bf16_dnnl-avx512bf16.txt ||
    bad "capped at AVX512_CORE_BF16, oneDNN did not report that ISA"
fi

echo "== below bf16 (ONEDNN_MAX_CPU_ISA=AVX512_CORE): oneDNN refused, AUTO takes the fallback"
r=$(cap AVX512_CORE $T gemm_bf16_dnnl 2>&1); rc=$?
echo "$r" | tail -2
[ $rc = 77 ] && grep -q 'DNNL_MAX_CPU_ISA' <<<"$r" || bad "oneDNN not refused below bf16 (exit $rc)"

echo "== 6 bf16 training steps on each path, against the CPU's own"
common="--n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --micro-batch 2
        --grad-accum 2 --steps 6 --lr 1e-3 --warmup 2 --val-every 3 --val-batches 1 --seed 11
        --param-dtype bf16"
train() { # name, then the command prefix
  local name=$1; shift
  "$@" $ZT $common --log $out/$name.jsonl --save $out/$name > $out/$name.out 2>&1 ||
    { cat $out/$name.out; bad "training ($name)"; return 1; }
  grep 'bf16 GEMM:' $out/$name.out
}
train own "${uncap[@]}" || exit 1
grep -q 'bf16 GEMM: oneDNN .* matmul primitive' $out/own.out ||
  bad "the CPU's own run did not use oneDNN's matmul primitive"
paths=(fallback gemmapi)
[ "$amx" = 1 ] && paths+=(avx512bf16)
for p in "${paths[@]}"; do
  case $p in
    fallback) train $p cap AVX512_CORE || continue ;;
    gemmapi) plain=$common; common="$common --bf16-gemm onednn"
             train $p "${uncap[@]}"; ok=$?; common=$plain; [ $ok = 0 ] || continue
             grep -q 'oneDNN .* gemm API' $out/$p.out || bad "--bf16-gemm onednn: not the gemm API" ;;
    avx512bf16) train $p cap AVX512_CORE_BF16 || continue ;;
  esac
  [ $p = fallback ] && { grep -q 'bf16 GEMM: fp32 fallback' $out/$p.out || bad "$p: not the fallback"; }
  echo "== $p vs the CPU's own path"
  $PY tests/compare_models.py $out/own $out/$p --steps 6 --lr 1e-3 --bf16 \
      --log-a $out/own.jsonl --log-b $out/$p.jsonl || bad "$p differs from the CPU's own path"
done

echo "== --bf16-gemm fallback, oneDNN not capped: the capped fallback's losses, bit for bit"
common="$common --bf16-gemm fallback"
if train flag "${uncap[@]}"; then
  grep -q 'bf16 GEMM: fp32 fallback' $out/flag.out || bad "--bf16-gemm fallback: not the fallback"
  losses() { grep -o '"[a-z_]*loss":[^,}]*' "$1"; }
  cmp <(losses $out/fallback.jsonl) <(losses $out/flag.jsonl) ||
    bad "--bf16-gemm fallback's losses differ from the capped fallback's"
fi
exit $fail
