#!/usr/bin/env bash
# Activation recomputation changes only time and memory: in every layout, --recompute
# selective and --recompute full (also of each stage's first block only) run the same kernels
# on the same inputs as --recompute none, so the logged losses, gradient norms and validation
# losses and the saved weights must be bit-identical to none's in the same layout (which the
# layout tests compare with the single-rank run and PyTorch). The layouts: one rank, tp 2,
# pp 2 GPipe, dp 2 x pp 2 ZeRO-1 with overlap, the headline --zero 1 --pp 4 --tp 2 with an
# embedding-only first stage, tp 2 and the headline with --sequence-parallel (8-bit AdamW),
# and bf16 with 8-bit AdamW under dp x pp x tp.
set -euo pipefail
. tests/env.sh
zt_layout_backend
out=build/test_recompute; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
common=(--n-layer 4 --n-head 4 --n-embd 64 --vocab 300 --n-ctx 64 --seq 32 --steps 4 --lr 1e-3
        --warmup 1 --val-every 2 --val-batches 1 --seed 5)
run() { # name np flags...
  local name=$1 np=$2; shift 2
  $MPI -np "$np" $ZT_TRAIN "${common[@]}" "$@" --log $out/$name.jsonl --save $out/$name \
      > $out/$name.out 2>&1 || { cat $out/$name.out; exit 1; }
}
# The records' training and validation numbers, as logged.
numbers() {
  "${PYTHON:-/usr/bin/python3}" -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "step" in r: print(r["step"], r.get("loss"), r.get("grad_norm"), r.get("val_loss"))' "$1"
}
fail=0
same() { # layout variant
  if ! cmp -s <(numbers $out/$1.jsonl) <(numbers $out/$2.jsonl); then
    echo "MISMATCH $2: its logged losses differ from $1's"; diff <(numbers $out/$1.jsonl) \
        <(numbers $out/$2.jsonl) | head -6; fail=1
  elif ! cmp -s $out/$1/model.safetensors $out/$2/model.safetensors; then
    echo "MISMATCH $2: its saved weights differ from $1's"; fail=1
  else
    echo "ok   $2: bit-identical to $1 ($(numbers $out/$2.jsonl | wc -l) records and the weights)"
  fi
}
layout() { # name np micro-batch grad-accum flags...
  local name=$1 np=$2 B=$3 A=$4; shift 4
  run $name $np --micro-batch $B --grad-accum $A "$@"
  for rc in selective full; do
    run ${name}_$rc $np --micro-batch $B --grad-accum $A "$@" --recompute $rc
    same $name ${name}_$rc
  done
}
layout one 1 2 4
run one_full_first 1 --micro-batch 2 --grad-accum 4 --recompute full --recompute-layers 1
same one one_full_first
layout tp2 2 2 4 --tp 2
layout pp2_gpipe 2 2 4 --pp 2 --schedule gpipe
layout dp2_pp2_zero1_overlap 4 2 2 --dp 2 --pp 2 --zero 1 --overlap-comm on
layout pp4_tp2_zero1 8 2 4 --zero 1 --pp 4 --tp 2 --partition 0:1,1:3,3:5,5:6
layout tp2_sp 2 2 4 --tp 2 --sequence-parallel
layout pp4_tp2_zero1_sp 8 2 4 --zero 1 --pp 4 --tp 2 --sequence-parallel --optim adamw8bit
layout bf16_8bit 8 2 2 --dp 2 --pp 2 --tp 2 --zero 1 --optim adamw8bit --param-dtype bf16
run bf16_8bit_sel_first 8 --micro-batch 2 --grad-accum 2 --dp 2 --pp 2 --tp 2 --zero 1 \
    --optim adamw8bit --param-dtype bf16 --recompute selective --recompute-layers 1
same bf16_8bit bf16_8bit_sel_first
# the planner and the allocator see the smaller activations: rank 0's logged bytes
"${PYTHON:-/usr/bin/python3}" - $out <<'PY' || fail=1
import json, sys
def mem(name):
    for line in open(f"{sys.argv[1]}/{name}.jsonl"):
        r = json.loads(line)
        if "mem" in r: return r["mem"]
for base in ["one", "pp2_gpipe", "tp2_sp"]:
    none, sel, full = (mem(n)["activations"] for n in [base, base + "_selective", base + "_full"])
    print(f"{base}: activation bytes none {none}, selective {sel}, full {full}")
    assert full < sel < none, "recomputation must shrink the activations"
PY
# A run that does not fit without recomputation is refused with advice naming it, and
# trains with the advice: the limit is what full recomputation of every block needs.
fit=(--n-layer 4 --n-head 4 --n-embd 64 --vocab 300 --n-ctx 64 --seq 64 --micro-batch 8
     --steps 2 --val-every 0)
bin=${ZT_TRAIN%% *} # the binary, then its backend's flags (tests/env.sh)
limit=$($bin memory --json ${ZT_TRAIN#"$bin"} "${fit[@]}" --recompute full |
        "${PYTHON:-/usr/bin/python3}" -c 'import json,sys; print(json.load(sys.stdin)["max_peak"])')
if $ZT_TRAIN "${fit[@]}" --mem-limit $limit > $out/refused.out 2>&1; then
  echo "MISMATCH: a run needing more than --mem-limit $limit was not refused"; fail=1
fi
advice=$(grep -o -- '--recompute [a-z]*[^(;]*' $out/refused.out | head -1 | sed 's/ *$//')
if [ -z "$advice" ]; then
  echo "MISMATCH: the refusal names no --recompute:"; cat $out/refused.out; fail=1
elif ! $ZT_TRAIN "${fit[@]}" --mem-limit $limit $advice > $out/advised.out 2>&1; then
  echo "MISMATCH: the advised '$advice' does not train under --mem-limit $limit:"
  tail -3 $out/advised.out; fail=1
else
  echo "ok   refused under --mem-limit $limit with advice '$advice', which trains"
fi
exit $fail
