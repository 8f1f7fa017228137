#!/usr/bin/env bash
# GPT-2 BPE throughput: zerotrain's `prepare --tokenizer gpt2` against tiktoken (Python, the same
# gpt2.tiktoken loaded offline) on the same corpus, one thread and all threads, in MB/s of
# UTF-8 text (vocabulary loading excluded on both sides). The corpus: the GPL-3 text repeated
# to BENCH_MB (default 32) MB, plus tests/bpe_tiktoken.py's many-scripts sample. The ids are
# checked equal first. Usage: bash bench/tokenizer.sh   (results: bench/RESULTS.md)
#
# MODE=long bash bench/tokenizer.sh: long pieces instead (one thread; results: bench/RESULTS.md,
# "Long pieces"):
#   - tiktoken's ids on every kind of tests/bpe_tiktoken.py long at CHECK_MB MiB (default 10;
#     0 for none);
#   - LONG_KINDS (default: one letter, digits, random lowercase) at LONG_MB MiB (default 100):
#     wall time and peak RSS from /usr/bin/time -v, for ZT and for BASE (an older build, e.g. the
#     one before the bounded merge; optional), whose ids must be equal (two exact implementations);
#     TIKTOKEN_LONG=1 also compares ZT with tiktoken on them (slow: ~2 min and 5 GB per 100 MiB);
#   - loading gpt2.tiktoken plus one token of 100 KB, 1 MB and 4 MB of 'a' (BASE: 100 KB only,
#     it is quadratic).
#
# MODE=ratio bash bench/tokenizer.sh: ordinary text against single pieces of the same size
# (RATIO_MB MiB, default 100): the GPL-3 repeated, and RATIO_KINDS (default: one letter, "ab",
# "1234567890" repeated, random lowercase, random digits); the same command (`prepare
# --tokenizer gpt2`, vocabulary loading included) with THREADS threads and with one, the best
# wall time of REPS (default 3) runs each (the machine is shared), and each piece's ratio to
# the ordinary text. Results: bench/RESULTS.md, "Long pieces: time against ordinary text".
set -euo pipefail
cd "$(dirname "$0")/.."
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
VOCAB=${ZT_GPT2_VOCAB:-${XDG_CACHE_HOME:-$HOME/.cache}/zerotrain/gpt2.tiktoken}
MB=${BENCH_MB:-32}
THREADS=${THREADS:-$(nproc)}
[ -f "$VOCAB" ] || bash scripts/fetch_gpt2_vocab.sh "$VOCAB"
"$PY" -c "import tiktoken" 2>/dev/null || "$PY" -m pip install -q --break-system-packages tiktoken
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_bench_tok.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# One prepare on one thread under /usr/bin/time -v: "wall_s peak_rss_kib" on stdout.
timed_prepare() { # zerotrain, vocab, text, out
  OMP_NUM_THREADS=1 /usr/bin/time -v "$1" prepare --tokenizer gpt2 --vocab "$2" --text "$3" --out "$4" \
    >/dev/null 2>"$tmp/time.txt" || { echo "prepare failed:" >&2; tail -3 "$tmp/time.txt" >&2; return 1; }
  awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]}
              /Maximum resident set size/ {m = $2} END {printf "%.2f %d\n", s, m}' "$tmp/time.txt"
}

long_pieces() {
  echo "long pieces: $(nproc) cores; $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg)"
  local kinds c
  kinds=""  # CHECK_MB=0: none
  [ "${CHECK_MB:-10}" != 0 ] && kinds=$("$PY" tests/bpe_tiktoken.py long "$tmp/small" "${CHECK_MB:-10}")
  for c in $kinds; do
    local ref=keep; [ "$c" = run_spaces ] && ref=piece  # tiktoken's regex overflows on them
    timed_prepare "$ZT" "$VOCAB" "$tmp/small/$c.txt" "$tmp/zt.bin" >/dev/null
    "$PY" tests/bpe_tiktoken.py check "$VOCAB" "$tmp/zt.bin" "$ref" "$tmp/small/$c.txt"
  done
  kinds=$("$PY" tests/bpe_tiktoken.py long "$tmp/big" "${LONG_MB:-100}" ${LONG_KINDS:-run_a run_digits run_lower})
  for c in $kinds; do
    echo "$c ${LONG_MB:-100} MiB: zerotrain wall_s peak_rss_kib $(timed_prepare "$ZT" "$VOCAB" "$tmp/big/$c.txt" "$tmp/zt.bin")"
    if [ -n "${BASE:-}" ]; then
      echo "$c ${LONG_MB:-100} MiB: base      wall_s peak_rss_kib $(timed_prepare "$BASE" "$VOCAB" "$tmp/big/$c.txt" "$tmp/base.bin")"
      cmp -s "$tmp/zt.bin" "$tmp/base.bin" && echo "$c: same ids as base" || echo "$c: DIFFERENT ids from base"
    fi
    [ -n "${TIKTOKEN_LONG:-}" ] && "$PY" tests/bpe_tiktoken.py check "$VOCAB" "$tmp/zt.bin" piece "$tmp/big/$c.txt"
    rm -f "$tmp/big/$c.txt"
  done
  printf 'a\n' > "$tmp/tiny.txt"
  for kb in 100 1000 4000; do
    "$PY" -c "import base64, sys; open(sys.argv[2], 'wb').write(open(sys.argv[1], 'rb').read() +
              base64.b64encode(b'a' * int(sys.argv[3]) * 1000) + b' 50256\n')" "$VOCAB" "$tmp/v.tiktoken" "$kb"
    echo "vocabulary + one ${kb} KB token: zerotrain load+prepare wall_s peak_rss_kib $(timed_prepare "$ZT" "$tmp/v.tiktoken" "$tmp/tiny.txt" "$tmp/t.bin")"
    [ -n "${BASE:-}" ] && [ "$kb" = 100 ] &&
      echo "vocabulary + one ${kb} KB token: base      load+prepare wall_s peak_rss_kib $(timed_prepare "$BASE" "$tmp/v.tiktoken" "$tmp/tiny.txt" "$tmp/t.bin")"
  done
}
# The best wall time of REPS runs of one prepare with $1 threads on $2.
best_wall() { # threads, text
  local best="" w
  for _ in $(seq "${REPS:-3}"); do
    OMP_NUM_THREADS=$1 /usr/bin/time -f %e "$ZT" prepare --tokenizer gpt2 --vocab "$VOCAB" --text "$2" \
      --out "$tmp/r.bin" >/dev/null 2>"$tmp/time.txt" || { echo "prepare failed:" >&2; tail -3 "$tmp/time.txt" >&2; return 1; }
    w=$(tail -1 "$tmp/time.txt")
    best=$(awk -v a="$best" -v b="$w" 'BEGIN {print (a == "" || b < a) ? b : a}')
  done
  echo "$best"
}

ratio() {
  local mb=${RATIO_MB:-100} kinds c t base w
  echo "ratio: $(nproc) cores; $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$PY" -c "import sys; g = open('/usr/share/common-licenses/GPL-3', 'rb').read(); n = int(sys.argv[2]) << 20
open(sys.argv[1], 'wb').write((g * (n // len(g) + 1))[:n])" "$tmp/ordinary.txt" "$mb"
  kinds=$("$PY" tests/bpe_tiktoken.py long "$tmp/r" "$mb" ${RATIO_KINDS:-run_a run_ab run_digits run_lower run_rand_digits})
  for t in "$THREADS" 1; do
    base=$(best_wall "$t" "$tmp/ordinary.txt")
    echo "threads=$t: ordinary text (GPL-3 repeated) $mb MiB: best of ${REPS:-3} ${base} s"
    for c in $kinds; do
      w=$(best_wall "$t" "$tmp/r/$c.txt")
      echo "threads=$t: $c $mb MiB (one piece): best of ${REPS:-3} $w s, $(awk -v a="$w" -v b="$base" 'BEGIN {printf "%.2f", a / b}') x the ordinary text"
    done
  done
}
if [ "${MODE:-}" = long ]; then long_pieces; exit; fi
if [ "${MODE:-}" = ratio ]; then ratio; exit; fi
"$PY" tests/bpe_tiktoken.py corpus "$tmp/c" >/dev/null
"$PY" - "$tmp/corpus.txt" "$MB" "$tmp/c/scripts.txt" <<'PYEOF'
import sys
gpl = open("/usr/share/common-licenses/GPL-3", "rb").read()
mixed = open(sys.argv[3], "rb").read()
unit = gpl + mixed
n = int(float(sys.argv[2]) * 1e6) // len(unit) + 1
open(sys.argv[1], "wb").write(unit * n)
PYEOF
echo "corpus: $(stat -c %s "$tmp/corpus.txt") bytes; $(nproc) cores; $(lscpu | sed -n 's/^Model name: *//p')"
OMP_NUM_THREADS=$THREADS "$ZT" prepare --tokenizer gpt2 --vocab "$VOCAB" --text "$tmp/corpus.txt" --out "$tmp/zt.bin" >/dev/null 2>&1
"$PY" tests/bpe_tiktoken.py check "$VOCAB" "$tmp/zt.bin" keep "$tmp/corpus.txt"
for t in 1 "$THREADS"; do
  for rep in 1 2 3; do
    OMP_NUM_THREADS=$t "$ZT" prepare --tokenizer gpt2 --vocab "$VOCAB" --text "$tmp/corpus.txt" --out "$tmp/zt.bin" 2>/dev/null |
      sed "s/^/zerotrain threads=$t: /"
  done
  for rep in 1 2 3; do "$PY" tests/bpe_tiktoken.py bench "$VOCAB" "$tmp/corpus.txt" "$t"; done
done
