#!/usr/bin/env bash
# `prepare --tokenizer gpt2 --jsonl FILE --field text`: a JSONL corpus whose documents hold every
# kind of JSON string escape (\n \t \r \b \f \" \\ \/, \uXXXX of the BMP and surrogate pairs
# beyond it, and raw UTF-8 besides) gives the same token file, byte for byte, as the same
# documents written as text files and given as --text (each preceded by <|endoftext|>), with
# --val-out too; mixed --text and --jsonl keep the order given. Bad lines are refused with
# one error naming the file and line. Needs GPT-2's vocabulary (SKIP without it).
set -u
cd "$(dirname "$0")/../.."
source tests/env.sh
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
out=build/test_prepare_jsonl; rm -rf $out; mkdir -p $out
zt_gpt2_vocab $out/cache || { echo "SKIP: GPT-2's vocabulary cannot be had (offline)"; exit 77; }
fail=0
# The documents (as Python strings) and the JSONL lines, written by hand so that every escape
# appears: json.dumps alone never writes \/ and writes either \u escapes or raw UTF-8.
$PY - $out <<'PYEOF'
import json, sys
out = sys.argv[1]
docs = [
    "Line one\nline two\ttabbed \"quoted\" back\\slash and a/slash",
    "carriage\rreturn, form\ffeed, back\bspace",
    "BMP escapes: caf\u00e9 \u4e2d\u6587 \u20ac and one beyond it: \U0001F600 \U00010348",
    "raw UTF-8: naïve façade 日本語 🚀 Ωμέγα",
    "",
    "   spaces, then digits 12345 and a very long word " + "x" * 3000,
]
lines = [
    r'{"text": "Line one\nline two\ttabbed \"quoted\" back\\slash and a\/slash", "id": 1}',
    r'{"id": 2, "text": "carriage\rreturn, form\ffeed, back\bspace"}',
    r'{"text": "BMP escapes: caf\u00e9 \u4E2D\u6587 \u20ac and one beyond it: \ud83d\ude00 \uD800\uDF48"}',
    json.dumps({"text": docs[3]}, ensure_ascii=False),
    '{"text": ""}',
    "",
    json.dumps({"meta": {"text": 1}, "text": docs[5]}),
]
for i, (d, l) in enumerate(zip(docs, [lines[0], lines[1], lines[2], lines[3], lines[4], lines[6]])):
    assert json.loads(l)["text"] == d, i
    with open(f"{out}/doc{i}.txt", "wb") as f:
        f.write(d.encode("utf-8"))
with open(f"{out}/corpus.jsonl", "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
with open(f"{out}/other.jsonl", "w", encoding="utf-8") as f:
    f.write(json.dumps({"body": "a document in another field"}) + "\n")
with open(f"{out}/other.txt", "w", encoding="utf-8") as f:
    f.write("a document in another field")
PYEOF
texts=(); for i in 0 1 2 3 4 5; do texts+=(--text $out/doc$i.txt); done
$ZT prepare --tokenizer gpt2 "${texts[@]}" --out $out/text.bin --val-out $out/text_val.bin \
  --val-frac 0.2 > $out/text.out 2>&1 || { cat $out/text.out; exit 1; }
$ZT prepare --tokenizer gpt2 --jsonl $out/corpus.jsonl --field text --out $out/jsonl.bin \
  --val-out $out/jsonl_val.bin --val-frac 0.2 > $out/jsonl.out 2>&1 || { cat $out/jsonl.out; exit 1; }
cat $out/jsonl.out
if cmp $out/text.bin $out/jsonl.bin && cmp $out/text_val.bin $out/jsonl_val.bin; then
  echo "ok: the JSONL corpus prepares identically to its documents as text files"
else echo "FAIL: JSONL and text files differ"; fail=1; fi
grep -q ': 6 documents' $out/jsonl.out || { echo "FAIL: not 6 documents"; fail=1; }
# mixed, in the order given; --field picks another field
$ZT prepare --tokenizer gpt2 --jsonl $out/other.jsonl --field body "${texts[@]}" \
  --out $out/mixed_j.bin > /dev/null 2>&1 &&
$ZT prepare --tokenizer gpt2 --text $out/other.txt "${texts[@]}" --out $out/mixed_t.bin > /dev/null 2>&1 &&
cmp $out/mixed_j.bin $out/mixed_t.bin && echo "ok: --jsonl and --text mixed in order, --field body" ||
  { echo "FAIL: mixed --jsonl/--text"; fail=1; }
# bad input: one error line naming the file and line, nothing written
expect() { # name, expected text, jsonl line(s)
  printf '%s\n' "$3" > $out/bad.jsonl; rm -f $out/bad.bin
  $ZT prepare --tokenizer gpt2 --jsonl $out/bad.jsonl --out $out/bad.bin > /dev/null 2> $out/e
  local rc=$?; without_env_warnings $out/e > $out/e1
  if [ $rc -ne 0 ] && grep -qF -- "$2" $out/e1 && [ "$(wc -l < $out/e1)" -eq 1 ] && [ ! -e $out/bad.bin ]; then
    echo "ok: $1: $(cat $out/e1)"
  else echo "FAIL: $1 (exit $rc): $(cat $out/e)"; fail=1; fi
}
expect "not JSON" "bad.jsonl, line 2 is not a valid JSON object" $'{"text": "a"}\n{text: b}'
expect "no field" 'line 1 has no string field "text"' '{"body": "a"}'
expect "number field" 'no string field "text"' '{"text": 3}'
expect "NUL escape" 'line 1: the text holds \u0000' '{"text": "a\u0000b"}'
expect "lone surrogate" "line 1 is not a valid JSON object" '{"text": "a\ud800b"}'
$ZT prepare --jsonl $out/corpus.jsonl --out $out/bad.bin > /dev/null 2> $out/e
grep -q "add --tokenizer gpt2" $out/e && echo "ok: bytes + --jsonl refused" || { echo "FAIL: bytes + jsonl: $(cat $out/e)"; fail=1; }
exit $fail
