#!/usr/bin/env bash
# Bad input to `prepare --tokenizer gpt2`: a missing vocabulary (given and default), a malformed
# one, a --text that does not exist, a bad option value: each exits non-zero with one clear line
# on stderr that names the problem and the fix (besides the environment's warnings:
# tests/env.sh), and writes no output file. `prepare --help` lists the options. Needs no
# network: the vocabularies here are made up.
set -u
cd "$(dirname "$0")/../.."
source tests/env.sh
ZT=${ZT:-build/zerotrain}
[ -x "$ZT" ] || { echo "bpe_errors: $ZT is not built"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_bpe_errors.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
printf 'Some text.\nMore text.\n' > "$tmp/a.txt"
# A well-formed vocabulary of the 256 single bytes, and broken ones.
"${PYTHON:-/usr/bin/python3}" -c '
import base64, sys
with open(sys.argv[1], "w") as f:
    for b in range(256): f.write(base64.b64encode(bytes([b])).decode() + " %d\n" % b)' "$tmp/bytes.tiktoken"
{ head -100 "$tmp/bytes.tiktoken"; echo "this is not base64 100"; } > "$tmp/malformed.tiktoken"
head -200 "$tmp/bytes.tiktoken" > "$tmp/short.tiktoken"

expect() { # name, expected text on stderr, command...
  local name=$1 want=$2; shift 2
  rm -f "$tmp/out.bin"
  "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
  without_env_warnings "$tmp/e" > "$tmp/e1"
  local n; n=$(grep -ciF -- "$want" "$tmp/e1")
  if [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ "$n" -eq 1 ] && [ "$(wc -l < "$tmp/e1")" -eq 1 ] &&
     [ ! -e "$tmp/out.bin" ] && ! grep -qiE 'fatal|assert' "$tmp/e"; then
    echo "ok   $name: $(cat "$tmp/e1")"
  else
    echo "FAIL $name (exit $rc, want one line with '$want'):"; sed 's/^/      | /' "$tmp/e"; fail=1
  fi
}
P=("$ZT" prepare --tokenizer gpt2 --text "$tmp/a.txt" --out "$tmp/out.bin")
expect missing_vocab "cannot open vocabulary file $tmp/nope.tiktoken" "${P[@]}" --vocab "$tmp/nope.tiktoken"
expect missing_vocab_hint "scripts/fetch_gpt2_vocab.sh" "${P[@]}" --vocab "$tmp/nope.tiktoken"
expect default_vocab_missing "$tmp/home/.cache/zerotrain/gpt2.tiktoken" env -u XDG_CACHE_HOME HOME="$tmp/home" "${P[@]}"
expect malformed_vocab "line 101 is not \"<base64 token> <rank>\"" "${P[@]}" --vocab "$tmp/malformed.tiktoken"
expect short_vocab "fewer than the 256 single bytes" "${P[@]}" --vocab "$tmp/short.tiktoken"
expect vocab_is_dir "is not a regular file" "${P[@]}" --vocab "$tmp"
expect missing_text "cannot open text file $tmp/missing.txt" "$ZT" prepare --tokenizer gpt2 --vocab "$tmp/bytes.tiktoken" \
  --text "$tmp/a.txt" --text "$tmp/missing.txt" --out "$tmp/out.bin"
expect bad_tokenizer "--tokenizer gpt3: choose bytes or gpt2" "$ZT" prepare --tokenizer gpt3 --text "$tmp/a.txt" --out "$tmp/out.bin"
expect bad_invalid_mode "--invalid-utf8 drop: choose keep or replace" "${P[@]}" --invalid-utf8 drop
expect bytes_two_texts "exactly one --text" "$ZT" prepare --text "$tmp/a.txt" --text "$tmp/a.txt" --out "$tmp/out.bin"
# Control: the same command with a usable vocabulary works (the cases above are not vacuous).
if "$ZT" prepare --tokenizer gpt2 --vocab "$tmp/bytes.tiktoken" --text "$tmp/a.txt" --text "$tmp/a.txt" \
     --out "$tmp/ok.bin" --val-out "$tmp/ok_val.bin" --val-frac 0.25 >"$tmp/o" 2>&1 &&
   [ "$(stat -c %s "$tmp/ok.bin")" -eq $((1024 + 2 * 34)) ] && [ "$(stat -c %s "$tmp/ok_val.bin")" -eq $((1024 + 2 * 12)) ]; then
  echo "ok   control: $(cat "$tmp/o")"
else
  echo "FAIL control:"; cat "$tmp/o"; ls -l "$tmp"; fail=1
fi
help=$("$ZT" prepare --help)
for f in --text --out --val-out --val-frac --tokenizer --vocab --invalid-utf8 --chunk-kb; do
  grep -q -- "$f" <<<"$help" || { echo "FAIL: prepare --help lacks $f"; fail=1; }
done
exit $fail
