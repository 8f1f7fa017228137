#!/usr/bin/env bash
# Every Unicode code point against tiktoken (issue 28): `prepare --tokenizer gpt2` must give
# tiktoken's gpt2 ids for each code point but the surrogates in each of tests/bpe_unicode_sweep.py's
# contexts (between letters, after spaces, before a digit, around contractions, on a line of its
# own, repeated, at the start and the end of the text), compared context by context so that a
# mismatch names the code point and the context. Checks the pre-tokenizer's generated classes
# (src/tokenizer/unicode_class.c) against the regex engine GPT-2's pattern is defined by.
# Installs tiktoken with pip when missing; SKIPs (77) when it or the vocabulary cannot be had.
set -u
cd "$(dirname "$0")/../.."
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$ZT" ] || { echo "bpe_unicode_sweep: $ZT is not built"; exit 1; }
source tests/env.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_bpe_sweep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
zt_gpt2_vocab "$tmp/cache" || { echo "SKIP: no gpt2.tiktoken and cannot fetch it (offline?)"; exit 77; }
if ! "$PY" -c "import tiktoken, numpy" 2>/dev/null; then
  "$PY" -m pip install -q tiktoken 2>/dev/null || "$PY" -m pip install -q --break-system-packages tiktoken ||
    { echo "SKIP: tiktoken is not installed and pip cannot install it (offline?)"; exit 77; }
fi
"$PY" -c "import tiktoken; print('tiktoken', tiktoken.__version__)"
contexts=$("$PY" tests/bpe_unicode_sweep.py write "$tmp") || exit 1
for c in $contexts; do
  "$ZT" prepare --tokenizer gpt2 --vocab "$VOCAB" --invalid-utf8 keep --text "$tmp/$c.txt" \
    --out "$tmp/$c.bin" >"$tmp/$c.log" 2>&1 || { echo "FAIL $c: prepare failed"; cat "$tmp/$c.log"; exit 1; }
done
"$PY" tests/bpe_unicode_sweep.py check "$VOCAB" "$tmp"
