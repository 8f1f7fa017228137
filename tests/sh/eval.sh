#!/usr/bin/env bash
# `zerotrain eval` (src/app/eval_cli.c): training's validation pass alone.
# - The val loss a training run logs at its last step equals eval's on the weights it left,
#   exactly (the same function, layout and samples): from --save (--init-from) and from the
#   checkpoint (--resume, parameters only).
# - Across layouts, on the same global batch: --pp 2 moves exact activations and sums the
#   same numbers in the same order, so it equals one rank exactly; --dp 2 (grad-accum 1)
#   computes the same micro-batch losses and adds them in another order in double
#   precision: 6 terms, within 6 * 2^-53 relative, so 1e-12. --pp 2 --tp 2 changes float
#   sums: each row-parallel product (attn.c_proj, K = C; mlp.c_proj, K = 4C) adds two
#   half-length partial sums, and the loss adds the two vocabulary halves' sums of
#   exponentials. A reordered sum of K fp32 terms lies within gamma_K = K u / (1 - K u),
#   u = 2^-24, of the exact one (relative to the sum of |terms|), so two orders differ by at
#   most 2 gamma_K. A token's loss passes 2L such sums and the loss's own (K <= max(4C, Vp)
#   = 256 here); taking the operations between them (LayerNorm, GELU, softmax) as not
#   amplifying relative errors, the losses differ by at most (2L + 1) 2 gamma_256 = 1.5e-4
#   relative (L = 2).
# - Random weights (--seed, no file) of a GPT-2 initialization give near-uniform logits
#   (standard deviation near 0.02 sqrt(C) = 0.16, so the loss exceeds ln 256 by about half
#   its square, 0.013): within 1% of ln 256; and the same in every layout.
# - bf16 (--param-dtype bf16): a bf16 run's logged val_loss equals eval's in bf16 on its
#   checkpoint and on its bf16 --save, exactly.
# - Inputs: --data alone is read as the validation tokens; a --config file's training keys
#   are ignored; training flags are refused, once, under mpirun.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/env.sh
PY=${PYTHON:-/usr/bin/python3}
out=build/test_eval; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root ) -x OMP_NUM_THREADS"
ZT=build/zerotrain
model="--n-layer 2 --n-head 4 --n-embd 64 --vocab 256 --n-ctx 64"
batch="--seq 32 --micro-batch 2 --val-batches 3"
fail=0
bad() { echo "FAIL $*"; fail=1; }

$ZT $model $batch --grad-accum 2 --steps 4 --lr 1e-3 --val-every 4 --save $out/saved \
    --ckpt-dir $out/ck --log $out/run.jsonl > $out/run.out 2>&1 || { cat $out/run.out; exit 1; }
logged=$(grep val_loss $out/run.jsonl | tail -1 | sed 's/.*"val_loss":\([0-9.e+-]*\).*/\1/')

# eval NAME NP ARGS...: runs eval --json into $out/NAME.json, prints its loss. Called in
# $(...): a failure goes to stderr and ends the script (set -e).
ev() {
  local name=$1 np=$2; shift 2
  if [ "$np" = 1 ]; then $ZT eval "$@" --json > $out/$name.json 2> $out/$name.err
  else $MPI -np $np $ZT eval "$@" --json > $out/$name.json 2> $out/$name.err; fi \
    || { echo "FAIL eval $name:" >&2; cat $out/$name.json $out/$name.err >&2; exit 1; }
  [ "$(wc -l < $out/$name.json)" = 1 ] ||
    { echo "FAIL eval $name: not one line of output: $(cat $out/$name.json)" >&2; exit 1; }
  $PY -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["loss"]))' $out/$name.json
}
# same A B TOL WHAT: |A - B| <= TOL |B| (TOL 0: equal)
same() {
  if $PY -c "import sys; a,b,t=$1,$2,$3; sys.exit(0 if abs(a-b) <= t*abs(b) else 1)"; then
    echo "ok   $4: $1 vs $2"
  else bad "$4: $1 vs $2 (tolerance $3 relative)"; fi
}

E="$batch --grad-accum 2"
saved=$(ev saved 1 --init-from $out/saved $E)
same "$saved" "$logged" 0 "eval --init-from the --save directory = the logged val_loss"
ck=$(ev ck 1 --resume $out/ck $E)
same "$ck" "$logged" 0 "eval --resume the checkpoint = the logged val_loss"
pp2=$(ev ck_pp2 2 --resume $out/ck $E --pp 2)
same "$pp2" "$ck" 0 "--pp 2 = one rank"
dp2=$(ev ck_dp2 2 --resume $out/ck $batch --grad-accum 1)
same "$dp2" "$ck" 1e-12 "--dp 2 (grad-accum 1) = one rank"
pp2tp2=$(ev ck_pp2_tp2 4 --resume $out/ck $E --pp 2 --tp 2)
same "$pp2tp2" "$ck" 1.5e-4 "--pp 2 --tp 2 = one rank"
# bf16: a bf16 run's logged val_loss is eval --param-dtype bf16's on its checkpoint (the
# masters rounded: the weights it ran) and on its --save (bf16), exactly
$ZT $model $batch --grad-accum 2 --steps 4 --lr 1e-3 --val-every 4 --param-dtype bf16 \
    --save $out/saved16 --ckpt-dir $out/ck16 --log $out/run16.jsonl > $out/run16.out 2>&1 ||
  { cat $out/run16.out; exit 1; }
logged16=$(grep val_loss $out/run16.jsonl | tail -1 | sed 's/.*"val_loss":\([0-9.e+-]*\).*/\1/')
ck16=$(ev ck16 1 --resume $out/ck16 $E --param-dtype bf16)
same "$ck16" "$logged16" 0 "bf16: eval --resume the checkpoint = the logged val_loss"
saved16=$(ev saved16 1 --init-from $out/saved16 $E --param-dtype bf16)
same "$saved16" "$logged16" 0 "bf16: eval --init-from the bf16 --save = the logged val_loss"
grep -q '"step":4,' $out/ck.json || bad "the checkpoint's step is not in the JSON: $(cat $out/ck.json)"
$PY - $out/ck_pp2_tp2.json <<'EOF' || bad "JSON fields"
import json, math, sys
r = json.load(open(sys.argv[1]))
assert abs(r["perplexity"] - math.exp(r["loss"])) <= 1e-6 * r["perplexity"], r
assert (r["world"], r["dp"], r["pp"], r["tp"]) == (4, 1, 2, 2), r
assert r["sequences"] == 3 * 2 * 2 and r["tokens"] == 12 * 32, r
assert r["data"].endswith("default_val.bin") and r["weights"].endswith("ck"), r
EOF

# random weights: near-uniform, and the same in every layout
rnd=$(ev random 1 $model $E --seed 7)
same "$rnd" 5.545177 0.01 "random weights: loss near ln 256"
rnd4=$(ev random_pp2_tp2 4 $model $E --seed 7 --pp 2 --tp 2)
same "$rnd4" "$rnd" 1.5e-4 "random weights: --pp 2 --tp 2 = one rank"

# the validation tokens: --val-data, else --data, else the default split (the same file here)
v=build/data/default_val.bin
a=$(ev val_data 1 --init-from $out/saved $E --val-data $v)
b=$(ev data 1 --init-from $out/saved $E --data $v)
same "$a" "$saved" 0 "--val-data default_val.bin = the default"
same "$b" "$saved" 0 "--data alone is the validation tokens"

# the human line: loss and perplexity, one line
# (stdout; stderr holds nothing but the environment's own warnings: tests/env.sh)
$ZT eval --resume $out/ck $E > $out/line.out 2> $out/line.err
grep -Eq "^eval: loss [0-9.]+ \| perplexity [0-9.]+ \| 384 tokens \(12 sequences of 32\) of .*default_val.bin \| weights $out/ck \(step 4\) \| dp 1 x pp 1 x tp 1$" $out/line.out \
  && [ "$(wc -l < $out/line.out)" = 1 ] && [ -z "$(without_env_warnings $out/line.err)" ] ||
  bad "the line: $(cat $out/line.out $out/line.err)"

# a --config file shared with training: its training keys are not eval's
printf '{"steps": 0, "lr": 0, "log": "/no/such/dir/x.jsonl", "micro-batch": 2}\n' > $out/shared.json
c=$(ev config 1 --config $out/shared.json --resume $out/ck --seq 32 --grad-accum 2 --val-batches 3)
same "$c" "$ck" 0 "a --config file's training keys are ignored"

# training flags are refused, once, on every layout
for flag in "--steps 0" "--lr 0" "--save $out/x"; do
  if $MPI -np 2 $ZT eval --resume $out/ck $E --pp 2 $flag > $out/refused.out 2>&1; then
    bad "eval $flag was accepted"
  else
    n=$(grep -c "is a training option; eval does not use it" $out/refused.out || true)
    [ "$n" = 1 ] && echo "ok   eval $flag refused once" || bad "eval $flag: message $n times: $(head -3 $out/refused.out)"
  fi
done
$ZT eval --resume $out/ck --init-from $out/saved > $out/both.out 2>&1 && bad "--resume with --init-from accepted" ||
  grep -q "not both" $out/both.out || bad "--resume with --init-from: $(cat $out/both.out)"
exit $fail
