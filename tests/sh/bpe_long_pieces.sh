#!/usr/bin/env bash
# Long pieces (text the pattern cannot cut: a run of one letter, a line of digits) in bounded
# memory, with tiktoken's ids:
#   1. 1 MiB single pieces (one letter, "ab" and "abc" repeated, digits in order and at random,
#      spaces, a two-byte letter, random ACGT, random lowercase, invalid bytes in both
#      --invalid-utf8 modes) and 1 MiB of random base64 without a newline, read in 64 KiB chunks
#      so the carry grows: the ids equal tiktoken's. (The long-piece search against the heap
#      merge on more and longer pieces: build/zt_tests bpe_gpt2_long_search.)
#   2. a 32 MiB run of one letter on one thread, under an address-space limit of the run's base
#      (a tiny input's VmPeak) + 10 bytes per byte: it must fit, its peak RSS above the base
#      must stay within 6.5 bytes per byte (docs/tokenizer.md states at most 6.2: the text, 4
#      for the ids reserved one per byte, 1/8 for the dead positions, at most 1 for the pair
#      memo; a run of one letter touches only a quarter of the ids: ~2), and its ids must be tiktoken's
#      pattern for that run (one id repeated). The merge used to take 36 bytes per byte and
#      died under such a limit ("out of memory merging a 33554432-byte piece", rc 134).
#   3. the same run where it cannot fit (a memory cgroup of 64 MiB, faked with ZT_CGROUP_DIR;
#      an address-space limit of base + 3 bytes per byte): one clear error before the stretch is
#      read further, rc 1, no output file.
# Installs tiktoken with pip when missing; SKIPs (77) when it or the vocabulary cannot be had.
set -u
cd "$(dirname "$0")/../.."
. tests/env.sh
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$ZT" ] || { echo "bpe_long_pieces: $ZT is not built"; exit 1; }
VOCAB=${ZT_GPT2_VOCAB:-${XDG_CACHE_HOME:-$HOME/.cache}/zerotrain/gpt2.tiktoken}
if [ ! -f "$VOCAB" ]; then
  bash scripts/fetch_gpt2_vocab.sh "$VOCAB" || { echo "SKIP: no gpt2.tiktoken and cannot fetch it (offline?)"; exit 77; }
fi
if ! "$PY" -c "import tiktoken, numpy" 2>/dev/null; then
  "$PY" -m pip install -q tiktoken 2>/dev/null || "$PY" -m pip install -q --break-system-packages tiktoken ||
    { echo "SKIP: tiktoken is not installed and pip cannot install it (offline?)"; exit 77; }
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_bpe_long.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
prep() { "$ZT" prepare --tokenizer gpt2 --vocab "$VOCAB" "$@"; }

# 1. tiktoken on 1 MiB pieces.
cases=$("$PY" tests/bpe_tiktoken.py long "$tmp/c" 1) || exit 1
# tiktoken's regex overflows its stack on 1 MiB of spaces: that one piece is merged whole there.
for c in $cases; do
  modes=keep; [ "$c" = run_invalid ] && modes="keep replace"
  for mode in $modes; do
    if ! prep --invalid-utf8 "$mode" --chunk-kb 64 --text "$tmp/c/$c.txt" --out "$tmp/$c.bin" >"$tmp/log" 2>&1; then
      echo "FAIL $c ($mode): prepare failed"; cat "$tmp/log"; fail=1; continue
    fi
    ref=$mode; [ "$c" = run_spaces ] && ref=piece
    "$PY" tests/bpe_tiktoken.py check "$VOCAB" "$tmp/$c.bin" "$ref" "$tmp/c/$c.txt" || fail=1
  done
done

# 2. 32 MiB of 'a' within the bound.
n=$((32 << 20))
head -c "$n" /dev/zero | tr '\0' a > "$tmp/a32.txt"
printf 'a\n' > "$tmp/tiny.txt"
export OMP_NUM_THREADS=1
read -r rc base_rss base_vm < <("$PY" tests/bpe_tiktoken.py measure 0 "$ZT" prepare --tokenizer gpt2 \
  --vocab "$VOCAB" --text "$tmp/tiny.txt" --out "$tmp/tiny.bin" 2>/dev/null | tail -1)
[ "$rc" = 0 ] || { echo "FAIL: prepare on a tiny input failed"; exit 1; }
as_kb=$((base_vm + 10 * n / 1024))
read -r rc rss vm < <("$PY" tests/bpe_tiktoken.py measure "$as_kb" "$ZT" prepare --tokenizer gpt2 \
  --vocab "$VOCAB" --text "$tmp/a32.txt" --out "$tmp/a32.bin" 2>"$tmp/log" | tail -1)
per_byte=$("$PY" -c "print(f'{($rss - $base_rss) * 1024 / $n:.2f}')")
echo "32 MiB run of 'a' under ulimit -v $as_kb KiB (base VmPeak $base_vm KiB): rc $rc, peak RSS $rss KiB (base $base_rss), $per_byte bytes per byte"
if [ "$rc" != 0 ]; then
  echo "FAIL: the 32 MiB run did not fit in base + 10 bytes per byte"; tail -3 "$tmp/log"; fail=1
else
  "$PY" -c "import sys; sys.exit(0 if $per_byte <= 6.5 else 1)" ||
    { echo "FAIL: $per_byte bytes of RSS per byte, over the 6.5 allowed"; fail=1; }
  "$PY" tests/bpe_tiktoken.py uniform "$VOCAB" "$tmp/a32.bin" "$tmp/c/run_a.txt" || fail=1
fi

# 3. Where it cannot fit: one error, rc 1, nothing written.
expect_error() { # name, expected text, as_kb
  rm -f "$tmp/x.bin"
  read -r rc _ _ < <("$PY" tests/bpe_tiktoken.py measure "$3" "$ZT" prepare --tokenizer gpt2 \
    --vocab "$VOCAB" --text "$tmp/a32.txt" --out "$tmp/x.bin" 2>"$tmp/e0" | tail -1)
  without_env_warnings "$tmp/e0" > "$tmp/e" # the environment's own (tests/env.sh)
  if [ "$rc" = 1 ] && [ "$(wc -l < "$tmp/e")" -eq 1 ] && grep -qF "no place where GPT-2's pattern allows a cut" "$tmp/e" &&
     grep -qF -- "$2" "$tmp/e" && grep -qF "$tmp/a32.txt" "$tmp/e" && [ ! -e "$tmp/x.bin" ]; then
    echo "ok   $1: $(cat "$tmp/e")"
  else
    echo "FAIL $1: rc $rc, wanted 1 and one line naming the stretch and \"$2\":"; cat "$tmp/e"; fail=1
  fi
}
mkdir -p "$tmp/cg"
echo $((64 << 20)) > "$tmp/cg/memory.max"
echo 0 > "$tmp/cg/memory.current"
ZT_CGROUP_DIR="$tmp/cg" expect_error "memory cgroup of 64 MiB" "memory available" 0
expect_error "ulimit -v of base + 3 bytes per byte" "ulimit -v" $((base_vm + 3 * n / 1024))
exit $fail
