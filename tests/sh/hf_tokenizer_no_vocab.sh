#!/usr/bin/env bash
# Without a usable GPT-2 vocabulary at export time, a GPT-2-vocabulary (50257) --save and a
# `zerotrain export` still write the model: exit 0, model.safetensors and config.json (bos = eos
# = 50256), no tokenizer files, and exactly one warning that names the vocabulary file and
# scripts/fetch_gpt2_vocab.sh. The file missing (XDG_CACHE_HOME pointed at an empty place, so
# the default gpt2.tiktoken path does not exist), corrupt, and a tiktoken file that is not
# GPT-2's (the 256 bytes alone); and a --save over two ranks (pp 2). Needs nothing else. The
# environment's warnings (tests/env.sh) are not counted.
set -u
cd "$(dirname "$0")/../.."
source tests/env.sh
out=build/test_hf_tokenizer_no_vocab; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
fail=0
check() { # what, exit status, its output, dir, vocabulary path
  local what=$1 rc=$2 log=$3 d=$4 vocab=$5
  [ $rc -eq 0 ] || { echo "FAIL $what: exit $rc"; cat $log; fail=1; }
  local w; w=$(without_env_warnings $log | grep warning)
  local n; n=$(grep -c warning <<<"$w")
  if [ "$n" -eq 1 ] && grep -qF "$vocab" <<<"$w" && grep -q fetch_gpt2_vocab.sh <<<"$w"; then
    echo "ok   $what: one warning: $w"
  else
    echo "FAIL $what: $n warning lines (want one naming $vocab and scripts/fetch_gpt2_vocab.sh):"; cat $log; fail=1
  fi
  [ "$(ls $d | tr '\n' ' ')" = "config.json model.safetensors " ] && echo "ok   $what: model.safetensors and config.json" ||
    { echo "FAIL $what: files $(ls $d)"; fail=1; }
  grep -q '"bos_token_id": 50256,' $d/config.json && grep -q '"eos_token_id": 50256,' $d/config.json ||
    { echo "FAIL $what: config.json bos/eos: $(grep _token_id $d/config.json)"; fail=1; }
}
for case in missing corrupt bytes-only; do
  export XDG_CACHE_HOME=$PWD/$out/$case-cache
  vocab=$XDG_CACHE_HOME/zerotrain/gpt2.tiktoken
  if [ $case != missing ]; then
    mkdir -p $(dirname $vocab)
    if [ $case = corrupt ]; then echo "not a vocabulary" > $vocab
    else for b in $(seq 0 255); do printf "$(printf '\\%03o' $b)" | base64 | tr -d '\n'; echo " $b"; done > $vocab; fi
  fi
  build/zerotrain --n-layer 1 --n-head 2 --n-embd 32 --vocab 50257 --n-ctx 32 --seq 16 --micro-batch 1 \
      --steps 1 --val-every 0 --save $out/$case-saved --ckpt-dir $out/$case-ck > $out/$case-run.out 2>&1
  check "$case: --save" $? $out/$case-run.out $out/$case-saved $vocab
  build/zerotrain export $out/$case-ck --out $out/$case-exported > $out/$case-export.out 2>&1
  check "$case: export" $? $out/$case-export.out $out/$case-exported $vocab
done
# two ranks (pp 2): rank 0 exports, so still one warning
export XDG_CACHE_HOME=$PWD/$out/missing-cache
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )"
OMP_NUM_THREADS=1 $MPI -np 2 build/zerotrain --n-layer 2 --n-head 2 --n-embd 32 --vocab 50257 --n-ctx 32 \
    --seq 16 --micro-batch 1 --steps 1 --val-every 0 --pp 2 --save $out/pp2-saved > $out/pp2-run.out 2>&1
check "pp 2: --save" $? $out/pp2-run.out $out/pp2-saved $XDG_CACHE_HOME/zerotrain/gpt2.tiktoken
exit $fail
