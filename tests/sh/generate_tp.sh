#!/usr/bin/env bash
# Tensor-parallel generation against one rank: `generate --tp 2` and `--tp 4` must print
# the same token ids as one process, greedy and sampled (temperature, top-k, top-p), on a
# random model (vocabulary 300: padded to 384 at tp 1, 512 at tp 2 and 4, so rank 3's
# lm-head slice at tp 4 is all padding) and on a briefly trained one loaded with
# --init-from. The ranks compare their sampled tokens at every step (fatal if they differ),
# so a pass also shows every rank drew the same token. An error under mpirun prints once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=build/test_generate_tp; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
ZT=build/zerotrain
fail=0
# a small model trained for 400 steps (loss 2.7) on the default text, saved as a Hugging Face directory
$ZT --n-layer 2 --n-head 4 --n-embd 64 --n-ctx 64 --seq 64 --micro-batch 8 --steps 400 \
    --lr 4e-3 --warmup 20 --save $out/trained > $out/train.out 2>&1 || { cat $out/train.out; exit 1; }
random="--n-layer 2 --n-head 4 --n-embd 32 --vocab 300 --n-ctx 48 --seed 5"
modes=("--temperature 0" "--temperature 0.9 --seed 3" "--temperature 1.2 --top-k 20 --seed 4"
       "--temperature 0.8 --top-p 0.9 --seed 9")
n=0
for model in "$random --prompt-ids 1,7,42,299" "--init-from $out/trained --prompt This"; do
  for mode in "${modes[@]}"; do
    n=$((n + 1))
    args="generate $model $mode --max-new 40 --ids"
    $ZT $args > $out/$n.tp1 2> $out/$n.tp1.err || { cat $out/$n.tp1.err; exit 1; }
    for tp in 2 4; do
      $MPI -np $tp $ZT $args --tp $tp > $out/$n.tp$tp 2> $out/$n.tp$tp.err \
          || { cat $out/$n.tp$tp.err; exit 1; }
      if cmp -s $out/$n.tp1 $out/$n.tp$tp; then
        echo "ok   tp $tp = tp 1: $model $mode: $(head -c 60 $out/$n.tp1)..."
      else
        echo "MISMATCH tp $tp vs tp 1: $args"; echo "  tp1: $(cat $out/$n.tp1)"
        echo "  tp$tp: $(cat $out/$n.tp$tp)"; fail=1
      fi
    done
  done
done
# the sampled runs are not all the greedy one (the flags reach the sampler)
[ "$(cat $out/1.tp1)" != "$(cat $out/2.tp1)" ] || { echo "sampling gave the greedy ids"; fail=1; }
# the trained model's greedy text is made of the text's bytes: a sanity check of the load
$ZT generate --init-from $out/trained --prompt "This" --temperature 0 --max-new 20 > $out/text.out 2>/dev/null
echo "trained greedy text: $(cat $out/text.out)"
# a bad input under mpirun: one message in all
set +e
$MPI -np 2 $ZT generate $random --prompt-ids 1,300 --tp 2 > $out/err.out 2>&1
rc=$?
set -e
n_err=$(grep -c 'zerotrain: error:' $out/err.out || true)
if [ $rc -eq 0 ] || [ "$n_err" -ne 1 ]; then
  echo "FAIL: bad ids under mpirun: exit $rc, $n_err error lines"; cat $out/err.out; fail=1
else
  echo "ok   bad ids under mpirun: $(grep 'zerotrain: error:' $out/err.out)"
fi
exit $fail
