#!/usr/bin/env bash
# The tokenizer files an export writes and which files a later export replaces. A GPT-2-vocabulary
# (50257) --save writes vocab.json (50257 ids), merges.txt (its header and all 50000 merges),
# special_tokens_map.json and tokenizer_config.json next to the model; a byte-level one (256)
# writes none. Saving into a directory that holds an earlier export: the earlier export's
# tokenizer files go with it (a byte-level model after a GPT-2 one leaves none behind), while a
# user's files stay, a user's tokenizer files too (they carry no export mark), unless the new
# export writes the same name. Both ways of replacing: the directory swap, and the file-by-file
# fallback for file systems without RENAME_EXCHANGE (build/libzt_faults.so refuses the exchange:
# tests/preload/faults.c). Needs the GPT-2
# vocabulary (tokenizer files are made from it); SKIPs (77) when it cannot be had.
set -u
cd "$(dirname "$0")/../.."
source tests/env.sh
export LC_ALL=C  # ls and sort in byte order: NOTES.txt before config.json
PY=${PYTHON:-/usr/bin/python3}
out=build/test_hf_tokenizer_files; rm -rf $out; mkdir -p $out
zt_gpt2_vocab $out/cache || { echo "SKIP: no gpt2.tiktoken and cannot fetch it (offline?)"; exit 77; }
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
small="--n-layer 1 --n-head 2 --n-embd 32 --n-ctx 32 --seq 16 --micro-batch 1 --steps 1 --val-every 0"
save() { # vocab, dir, [env...]
  local v=$1 d=$2; shift 2
  env "$@" build/zerotrain $small --vocab $v --save $d > $out/run.out 2>&1 || { cat $out/run.out; exit 1; }
  if without_env_warnings $out/run.out | grep -q warning; then echo "FAIL: a warning:"; cat $out/run.out; fail=1; fi
}
fail=0
files_are() { # dir, expected names (sorted, space-separated), what
  local got; got=$(ls $1 | sort | tr '\n' ' ')
  if [ "$got" = "$2 " ]; then echo "ok   $3: $got"; else echo "FAIL $3: $got (want $2)"; fail=1; fi
}
TOK="config.json merges.txt model.safetensors special_tokens_map.json tokenizer_config.json vocab.json"

d=$out/m
save 50257 $d
files_are $d "$TOK" "GPT-2 vocabulary"
"$PY" - $d <<'PY' || fail=1
import json, sys
d = sys.argv[1]
v = json.load(open(f"{d}/vocab.json", encoding="utf-8"))
m = open(f"{d}/merges.txt", encoding="utf-8").read().split("\n")
c = json.load(open(f"{d}/config.json"))
t = json.load(open(f"{d}/tokenizer_config.json"))
s = json.load(open(f"{d}/special_tokens_map.json"))
checks = [
    (len(v) == 50257 and sorted(v.values()) == list(range(50257)), "vocab.json: ids 0..50256 once each"),
    (v.get("<|endoftext|>") == 50256 and v.get("!") == 0 and v.get("\u0120the") == 262, "vocab.json: <|endoftext|> 50256, ! 0, Ġthe 262"),
    (m[0] == "#version: 0.2" and len(m) == 50002 and m[-1] == "", "merges.txt: header, 50000 merges, final newline"),
    (m[1:5] == ["\u0120 t", "\u0120 a", "h e", "i n"], "merges.txt: GPT-2's first merges"),
    (all(len(x.split(" ")) == 2 and "".join(x.split(" ")) in v for x in m[1:-1]), "merges.txt: each merge makes a token"),
    (c["bos_token_id"] == 50256 and c["eos_token_id"] == 50256, "config.json: bos = eos = 50256"),
    (t["model_max_length"] == 32 and t["eos_token"] == "<|endoftext|>" and t["zerotrain_export"] is True, "tokenizer_config.json"),
    (s == {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}, "special_tokens_map.json"),
]
for ok, what in checks:
    print(("ok   " if ok else "FAIL ") + what)
sys.exit(0 if all(ok for ok, _ in checks) else 1)
PY

for how in swap fallback; do
  env=(); [ $how = fallback ] && env=(LD_PRELOAD=$PWD/build/libzt_faults.so
                                     ZT_FAULT_NO_RENAME_EXCHANGE=1 ZT_FAULT_LOG=$out/faults.log)
  d=$out/$how
  save 50257 $d
  echo "my notes" > $d/NOTES.txt
  save 256 $d "${env[@]}"
  files_are $d "NOTES.txt config.json model.safetensors" "$how: bytes after GPT-2: the export's tokenizer files went"
  "$PY" -c "import json,sys; c=json.load(open('$d/config.json')); sys.exit(0 if c['bos_token_id'] is None and c['eos_token_id'] is None else 1)" &&
    echo "ok   $how: byte-level config.json: bos = eos = null" || { echo "FAIL $how: byte-level bos/eos: $(grep _token_id $d/config.json)"; fail=1; }
  echo '{"mine": 1}' > $d/vocab.json
  echo '{"tokenizer_class": "MyTokenizer"}' > $d/tokenizer_config.json
  save 256 $d "${env[@]}"
  files_are $d "NOTES.txt config.json model.safetensors tokenizer_config.json vocab.json" "$how: a user's tokenizer files stay"
  [ "$(cat $d/vocab.json)" = '{"mine": 1}' ] || { echo "FAIL $how: the user's vocab.json changed"; fail=1; }
  save 50257 $d "${env[@]}"
  files_are $d "NOTES.txt $TOK" "$how: GPT-2 over a user's tokenizer files: the export's replace them"
  cmp -s $d/vocab.json $out/m/vocab.json && cmp -s $d/tokenizer_config.json $out/m/tokenizer_config.json ||
    { echo "FAIL $how: the export's tokenizer files did not replace the user's"; fail=1; }
  [ "$(cat $d/NOTES.txt)" = "my notes" ] || { echo "FAIL $how: a user's file was lost"; fail=1; }
done
grep -q 'RENAME_EXCHANGE refused' $out/faults.log 2>/dev/null ||
  { echo "FAIL: the fallback runs never met a refused exchange (build/libzt_faults.so not loaded?)"; fail=1; }
[ -z "$(ls $out | grep tmp || true)" ] || { echo "FAIL: a temporary directory was left: $(ls $out)"; fail=1; }
[ -z "$(ls $out/* | grep tmp || true)" ] || { echo "FAIL: a temporary file was left: $(ls $out/*)"; fail=1; }
exit $fail
