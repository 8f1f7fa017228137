#!/usr/bin/env bash
# `zerotrain generate` on bad input: each case must exit 1 by itself (no crash, no
# "fatal"/"assertion", which are for bugs) with its message on stderr exactly once, naming
# the problem. A good run first is the control that shows the cases are not vacuous.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ZT=${ZT:-build/zerotrain}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
out=build/test_generate_errors; rm -rf $out; mkdir -p $out
fail=0
# a saved 1-layer model for the checkpoint cases
$ZT --n-layer 1 --n-head 2 --n-embd 32 --n-ctx 32 --steps 1 --micro-batch 1 --seq 16 \
    --save $out/model > $out/train.out 2>&1 || { cat $out/train.out; exit 1; }
$ZT generate --init-from $out/model --prompt "ok" --max-new 4 > $out/good.out 2>&1 \
    || { echo "FAIL control: a good run failed"; cat $out/good.out; fail=1; }
case_() { # name, pattern the message must hold, args...
  local name=$1 pat=$2; shift 2
  timeout 60 $ZT generate "$@" > $out/$name.out 2> $out/$name.err
  local rc=$?
  local n=$(grep -c '^zerotrain: error:' $out/$name.err)
  if [ $rc -ne 1 ] || [ "$n" -ne 1 ] || grep -qiE 'fatal|assertion' $out/$name.err \
      || ! grep -q -- "$pat" $out/$name.err; then
    echo "FAIL $name: exit $rc, $n error lines, want one holding '$pat':"; sed 's/^/  | /' $out/$name.err
    fail=1
  else
    echo "ok   $name: $(cat $out/$name.err)"
  fi
}
case_ missing_vocab "cannot open vocabulary file" --model tiny --vocab 50257 \
    --vocab-file $out/no_such.tiktoken --prompt "hello"
case_ prompt_too_long "at most 7" --model tiny --n-ctx 8 --prompt "longer than eight bytes"
case_ prompt_ids_too_long "at most 3" --model tiny --n-ctx 4 --prompt-ids 1,2,3,4,5
case_ id_out_of_range "token 256 (item 2) is outside" --model tiny --prompt-ids 7,256
case_ id_negative "outside the model's vocabulary" --model tiny --prompt-ids -1
case_ id_not_a_number "item 2 is not a number" --model tiny --prompt-ids 1,x
case_ shape_contradicts "n-layer" --init-from $out/model --n-layer 2 --prompt "x"
case_ missing_checkpoint "no_such_dir" --init-from $out/no_such_dir --prompt "x"
case_ text_for_other_vocab "give --prompt-ids" --model tiny --vocab 300 --prompt "x"
case_ tp_without_ranks "mpirun -np 2" --model tiny --tp 2 --prompt "x"
case_ both_prompts "not both" --model tiny --prompt "x" --prompt-ids 1
case_ bad_top_p "--top-p" --model tiny --prompt "x" --top-p 1.5
case_ cuda_with_tp "one rank" --model tiny --prompt "x" --backend cuda --tp 2
case_ cuda_backend "backend cuda" --model tiny --prompt "x" --backend cuda  # CPU build or no GPU
exit $fail
