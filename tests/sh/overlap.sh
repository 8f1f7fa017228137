#!/usr/bin/env bash
# --overlap-comm on against off: the same seed, data and layout trained for 6 steps, once
# blocking and once with every overlap the layout allows: the dp gradient reduction in
# buckets during the step's last backward (src/parallel/grad_reduce.h), under --zero 1 the
# parameter all-gather left in flight into the next step's first forward, which waits for
# each unit's pieces (param_gather.h), and under --pp the pipeline's sends and receives
# nonblocking (pipe_comm.h). --bucket-mib 0: a gradient bucket at every half block and a
# parameter bucket per tensor, the most buckets and ZeRO-1 pieces; one case with the default
# size, where this small model's whole gradient waits for the end.
#
# dp 2: a sum of two values is the same whichever rank adds it (fp32 and bf16 addition are
# commutative), and a broadcast piece and a pipeline message are copies, so overlap changes
# no bit: losses, norms, validation losses, samples and the saved weights must be identical
# (ZeRO 0 and 1, pp 2 and 4 with both schedules, tp 2, the design card's --zero 1 --pp 4
# --tp 2 with 8-bit AdamW on 8 ranks, bf16, 8-bit AdamW, validation, samples and
# checkpoints between steps, a resume from a checkpoint saved with overlap on, and the
# ZT_COMM_TIMEOUT_S polling mode). dp 3: the blocking path sums three contributions
# in the staging window's order (own, r+1, r+2) and MPI's reduce in its own, so a gradient
# element may differ by reassociation (|d| <= 2 * 2^-24 * sum of |contributions| in fp32,
# one bf16 rounding per pairwise add in bf16): compared by tests/compare_models.py's bounds
# for a reassociated dp sum, exactly as the dp layouts are against one rank. Every run also
# passes the end-of-run check that each rank of a stage issued the same collectives.
#
# Overlap must not silently fall back to the blocking path: with it on, every step after a
# step that started the gather must report pieces completed inside its forward
# (param_overlapped > 0, --zero 1), and every step of a pipeline nonblocking transfers
# (pp_async > 0, --pp); with it off both are 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
# ZT_BACKEND=cuda: the same runs on build/zerotrain-cuda --backend cuda (tests/env.sh)
. tests/env.sh
zt_layout_backend
out=build/test_overlap; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root -x ZT_COMM_TIMEOUT_S"
PY=${PYTHON:-/usr/bin/python3}
common="--n-layer 3 --n-head 4 --n-embd 48 --vocab 256 --n-ctx 64 --seq 32 --steps 6 --lr 1e-3
        --warmup 2 --val-every 0 --seed 7"
run() { # name np overlap args...
  local name=$1 np=$2 ov=$3; shift 3
  $MPI -np $np $ZT_TRAIN $common --overlap-comm $ov "$@" --log $out/$name.jsonl \
      --save $out/$name > $out/$name.out 2>&1 || { cat $out/$name.out; exit 1; }
  grep -q "the same sequence on every rank of a stage" $out/$name.out ||
    { echo "FAIL $name: no collective-sequence check"; tail $out/$name.out; exit 1; }
}
# losses, norms and validation losses of two logs, bit for bit (%.9g prints a float exactly)
same_log() {
  "$PY" - "$1" "$2" <<'PY'
import json, sys
def recs(p): return [(r.get("loss"), r.get("grad_norm"), r.get("val_loss")) for r in map(json.loads, open(p))
                     if "loss" in r or "val_loss" in r]
a, b = recs(sys.argv[1]), recs(sys.argv[2])
sys.exit(0 if a == b and sum(r[0] is not None for r in a) == 6 else 1)
PY
}
# the overlap counters of rank 0's log (first stage, dp 0): gather, pipe = 1 where expected
# (the steps after which validation, a sample or a checkpoint waited for the whole gather
# hand the next step nothing: SETTLED="2 3" says which)
counters() { # log gather pipe
  SETTLED="${SETTLED:-}" "$PY" - "$@" <<'PY'
import json, os, sys
log, gather, pipe = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
settled = {int(x) for x in os.environ["SETTLED"].split()}
steps = [r for r in map(json.loads, open(log)) if "loss" in r]
ok = steps[0]["param_overlapped"] == 0 # nothing is in flight before the first step
ok &= all((s["param_overlapped"] > 0) == (bool(gather) and s["step"] - 1 not in settled)
          for s in steps[1:])
ok &= all((s["pp_async"] > 0) == bool(pipe) for s in steps)
if not ok: print([(s["param_overlapped"], s["pp_async"]) for s in steps])
sys.exit(0 if ok else 1)
PY
}
# pipe_async name pipe: 0 where the run reports its pipeline path as host staging (no
# isend/irecv there, so the transfers stay blocking: --tensor-path staged, or ranks sharing one
# GPU under ZT_BACKEND=cuda), else pipe
pipe_async() {
  if grep -q "^tensor paths:.* pp: MPI with host staging" $out/${1}_on.out; then echo 0; else echo "$2"; fi
}
fail=0
# on and off identical, and each path taken where it applies
compare_on_off() { # name args...
  local name=$1 g=0 p=0; shift
  case " $* " in *" --zero 1 "*) g=1;; esac
  case " $* " in *" --pp "*) p=1;; esac
  p=$(pipe_async $name $p)
  if cmp -s $out/${name}_off/model.safetensors $out/${name}_on/model.safetensors &&
     same_log $out/${name}_off.jsonl $out/${name}_on.jsonl &&
     diff <(grep -a '^sample' $out/${name}_off.out) <(grep -a '^sample' $out/${name}_on.out) >/dev/null; then
    echo "ok   $name: bit-identical ($(grep -o '"[a-z]*_comm_ms":[0-9.]*' $out/${name}_on.jsonl | tail -3 | paste -sd' '))"
  else
    echo "FAIL $name: overlapped run differs from the blocking one"; fail=1
  fi
  if counters $out/${name}_on.jsonl $g $p && counters $out/${name}_off.jsonl 0 0; then :
  else echo "FAIL $name: overlap counters (param_overlapped, pp_async) not as expected"; fail=1; fi
}
exact() { # name np args...: on and off identical
  local name=$1 np=$2; shift 2
  run ${name}_off $np off "$@"
  run ${name}_on $np on --bucket-mib 0 "$@"
  compare_on_off $name "$@"
}
bounded() { # name np compare-args -- args...
  local name=$1 np=$2 cargs=(); shift 2
  while [ "$1" != "--" ]; do cargs+=("$1"); shift; done; shift
  run ${name}_off $np off "$@"
  run ${name}_on $np on --bucket-mib 0 "$@"
  if cmp -s $out/${name}_off/model.safetensors $out/${name}_on/model.safetensors; then
    echo "ok   $name: bit-identical"
  elif "$PY" tests/compare_models.py $out/${name}_off $out/${name}_on --steps 6 --lr 1e-3 \
      "${cargs[@]}" --log-a $out/${name}_off.jsonl --log-b $out/${name}_on.jsonl > $out/$name.cmp; then
    echo "ok   $name: within the reassociation bounds ($(tail -1 $out/$name.cmp))"
  else
    cat $out/$name.cmp; echo "FAIL $name"; fail=1
  fi
}
exact dp2z0 2 --micro-batch 3 --grad-accum 2 --zero 0
exact dp2z1 2 --micro-batch 3 --grad-accum 2 --zero 1
exact dp2z1_bf16 2 --micro-batch 3 --grad-accum 2 --zero 1 --param-dtype bf16
exact dp2z0_bf16 2 --micro-batch 3 --grad-accum 2 --zero 0 --param-dtype bf16
exact dp2z1_8bit 2 --micro-batch 3 --grad-accum 2 --zero 1 --optim adamw8bit --optim-min-8bit 256
exact pp2dp2z1 4 --pp 2 --micro-batch 2 --grad-accum 3 --zero 1
exact pp2dp2z0_gpipe 4 --pp 2 --micro-batch 2 --grad-accum 3 --zero 0 --schedule gpipe
exact pp2dp2z1_gpipe 4 --pp 2 --micro-batch 2 --grad-accum 3 --zero 1 --schedule gpipe
exact pp2dp2z1_bf16 4 --pp 2 --micro-batch 2 --grad-accum 3 --zero 1 --param-dtype bf16
exact pp4dp2z1 8 --n-layer 4 --pp 4 --micro-batch 2 --grad-accum 4 --zero 1
exact pp4z0_gpipe 4 --n-layer 4 --pp 4 --micro-batch 2 --grad-accum 4 --zero 0 --schedule gpipe
exact tp2dp2z1 4 --tp 2 --micro-batch 3 --grad-accum 2 --zero 1
# --sequence-parallel: the LayerNorm gradients are summed over tp before the backward
# announces them, so the buckets that start early carry final values
exact pp2tp2dp2z1_sp 8 --pp 2 --tp 2 --micro-batch 2 --grad-accum 2 --zero 1 --sequence-parallel
# the design card: --zero 1 --pp 4 --tp 2 with 8-bit AdamW on 8 ranks (dp 1: its gather
# pieces are on one rank, still left in flight and waited for by the forward)
exact card 8 --n-layer 4 --pp 4 --tp 2 --micro-batch 2 --grad-accum 4 --zero 1 --optim adamw8bit --optim-min-8bit 256
# validation, samples and checkpoints between steps: each waits for the whole gather first
BND="--pp 2 --micro-batch 2 --grad-accum 2 --zero 1 --val-every 2 --val-batches 2 --sample-every 3
     --sample-len 8 --ckpt-every 2"
run boundaries_off 4 off $BND --ckpt-dir $out/ck_boundaries_off
run boundaries_on 4 on --bucket-mib 0 $BND --ckpt-dir $out/ck_boundaries_on
SETTLED="2 3 4" compare_on_off boundaries $BND
# a resume from a checkpoint saved with overlap on, continued with overlap on: the
# uninterrupted blocking run's steps 4-6 and weights, bit for bit
RES="--micro-batch 2 --grad-accum 2 --zero 1 --pp 2"
run resume_off 4 off $RES
run resume_first 4 on --bucket-mib 0 $RES --ckpt-dir $out/ck_resume --ckpt-every 3
run resume_on 4 on --bucket-mib 0 $RES --resume $out/ck_resume/step-3
if cmp -s $out/resume_off/model.safetensors $out/resume_on/model.safetensors &&
   "$PY" tests/ckpt/compare_losses.py $out/resume_off.jsonl $out/resume_on.jsonl > $out/resume.cmp &&
   counters $out/resume_on.jsonl 1 "$(pipe_async resume 1)" >> $out/resume.cmp; then
  echo "ok   resume: overlap on from an overlapped checkpoint equals the blocking run"
else cat $out/resume.cmp; echo "FAIL resume"; fail=1; fi
exact tp2dp2z1_bf16 4 --tp 2 --micro-batch 3 --grad-accum 2 --zero 1 --param-dtype bf16
# the default bucket size: nothing starts before the backward ends (one bucket, or one
# piece per shard), the same sums
run dflt_off 2 off --micro-batch 3 --grad-accum 2 --zero 1
run dflt_on 2 on --micro-batch 3 --grad-accum 2 --zero 1
cmp -s $out/dflt_off/model.safetensors $out/dflt_on/model.safetensors && echo "ok   default bucket size: bit-identical" ||
  { echo "FAIL default bucket size"; fail=1; }
# every group staged through host buffers (--tensor-path staged, the path of GPU ranks sharing a
# device): the gather's broadcasts complete at issue, and staging has no isend/irecv, so the
# pipeline keeps its blocking transfers (pp_async 0); the same results either way
exact staged_pp2dp2z1 4 --pp 2 --micro-batch 2 --grad-accum 3 --zero 1 \
  --tensor-path staged
# ZT_COMM_TIMEOUT_S: every wait polled (wait_timed), the blocking path's calls nonblocking too
ZT_COMM_TIMEOUT_S=60 exact dp2z1_timeout 2 --micro-batch 3 --grad-accum 2 --zero 1
ZT_COMM_TIMEOUT_S=60 exact pp2dp2z1_timeout 4 --pp 2 --micro-batch 2 --grad-accum 3 --zero 1
bounded dp3z0 3 -- --micro-batch 2 --grad-accum 2 --zero 0
bounded dp3z1 3 -- --micro-batch 2 --grad-accum 2 --zero 1
bounded dp3z1_bf16 3 --bf16 -- --micro-batch 2 --grad-accum 2 --zero 1 --param-dtype bf16
bounded dp3z1_8bit 3 --adamw8bit --min-8bit 256 -- --micro-batch 2 --grad-accum 2 --zero 1 --optim adamw8bit --optim-min-8bit 256
# a bad option is refused by name
if build/zerotrain --overlap-comm maybe --steps 1 > $out/bad.out 2>&1; then
  echo "FAIL: --overlap-comm maybe accepted"; fail=1
else grep -q "overlap-comm" $out/bad.out && echo "ok   --overlap-comm maybe refused" || { cat $out/bad.out; fail=1; }; fi
[ $fail -eq 0 ] && echo "overlap: all cases passed"
exit $fail
