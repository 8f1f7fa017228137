#!/usr/bin/env bash
# GPT-2 BPE against tiktoken: `prepare --tokenizer gpt2` must write exactly tiktoken's gpt2 ids
# (tiktoken loading the same gpt2.tiktoken offline) on a varied corpus (tests/bpe_tiktoken.py:
# the GPL-3, many scripts, whitespace runs, digits, contractions, emoji, code, long runs, control
# bytes, invalid UTF-8, random bytes, every Unicode code point), one file per document and all
# together, in both --invalid-utf8 modes, with the default chunks and with 1 KiB chunks (the
# streaming cuts must not change a single id). Installs tiktoken with pip when missing; SKIPs
# (77) when it or the vocabulary cannot be had (offline).
set -u
cd "$(dirname "$0")/../.."
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$ZT" ] || { echo "bpe_tiktoken: $ZT is not built"; exit 1; }
source tests/env.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_bpe_tiktoken.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
zt_gpt2_vocab "$tmp/cache" || { echo "SKIP: no gpt2.tiktoken and cannot fetch it (offline?)"; exit 77; }
if ! "$PY" -c "import tiktoken, numpy" 2>/dev/null; then
  "$PY" -m pip install -q tiktoken 2>/dev/null || "$PY" -m pip install -q --break-system-packages tiktoken ||
    { echo "SKIP: tiktoken is not installed and pip cannot install it (offline?)"; exit 77; }
fi
cases=$("$PY" tests/bpe_tiktoken.py corpus "$tmp/c") || exit 1
fail=0
run() { # name, mode, chunk-kb, files...
  local name=$1 mode=$2 kb=$3; shift 3
  local args=()
  for f in "$@"; do args+=(--text "$f"); done
  if ! "$ZT" prepare --tokenizer gpt2 --vocab "$VOCAB" --invalid-utf8 "$mode" --chunk-kb "$kb" \
       "${args[@]}" --out "$tmp/$name.bin" >"$tmp/$name.log" 2>&1; then
    echo "FAIL $name: prepare failed"; cat "$tmp/$name.log"; fail=1; return
  fi
  "$PY" tests/bpe_tiktoken.py check "$VOCAB" "$tmp/$name.bin" "$mode" "$@" || fail=1
}
for c in $cases; do
  modes="keep replace"; [ "$c" = unicode_sweep ] && modes=keep  # valid UTF-8: the modes agree
  for mode in $modes; do run "$c-$mode" "$mode" 1024 "$tmp/c/$c.txt"; done
done
all=(); for c in $cases; do all+=("$tmp/c/$c.txt"); done
run all-keep-1k keep 1 "${all[@]}"
run all-replace-1k replace 1 "${all[@]}"
# Threads must not change the ids: one thread against the default.
texts=(); for f in "${all[@]}"; do texts+=(--text "$f"); done  # TMPDIR may hold spaces
OMP_NUM_THREADS=1 "$ZT" prepare --tokenizer gpt2 --vocab "$VOCAB" --chunk-kb 1 \
  "${texts[@]}" --out "$tmp/one.bin" >/dev/null &&
  cmp "$tmp/one.bin" "$tmp/all-keep-1k.bin" && echo "same ids with 1 thread" || { echo "FAIL: 1 thread differs"; fail=1; }
exit $fail
