#!/usr/bin/env bash
# GPT-2 BPE throughput: zerotrain's `prepare --tokenizer gpt2` against tiktoken (Python, the same
# gpt2.tiktoken loaded offline) on the same corpus, one thread and all threads, in MB/s of
# UTF-8 text (vocabulary loading excluded on both sides). The corpus: the GPL-3 text repeated
# to BENCH_MB (default 32) MB, plus tests/bpe_tiktoken.py's many-scripts sample. The ids are
# checked equal first. Usage: bash bench/tokenizer.sh   (results: bench/RESULTS.md)
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
