#!/usr/bin/env bash
# scripts/prepare_hf_dataset.py: a Hugging Face dataset built here (datasets.Dataset.from_dict,
# saved with save_to_disk, as a DatasetDict too) written as JSONL, then `prepare --jsonl`, gives
# the same tokens as its documents given as text files; a missing column is refused by name.
# Runs in this test's own virtual environment (build/venv_datasets, with the system's packages
# visible: pip install datasets); SKIPs with the reason where `datasets` cannot be installed, or
# GPT-2's vocabulary cannot be had.
set -u
cd "$(dirname "$0")/../.."
source tests/env.sh
ZT=${ZT:-build/zerotrain}
out=build/test_prepare_hf_dataset; rm -rf $out; mkdir -p $out
venv=build/venv_datasets
if ! $venv/bin/python -c "import datasets" 2>/dev/null; then
  ${PYTHON:-/usr/bin/python3} -m venv --system-site-packages $venv > $out/venv.log 2>&1 &&
  timeout 600 $venv/bin/pip install -q datasets >> $out/venv.log 2>&1 ||
  { echo "SKIP: cannot install datasets into $venv: $(tail -1 $out/venv.log)"; exit 77; }
fi
zt_gpt2_vocab $out/cache || { echo "SKIP: GPT-2's vocabulary cannot be had (offline)"; exit 77; }
PY=$venv/bin/python
export HF_DATASETS_DISABLE_PROGRESS_BARS=1
$PY - $out <<'PYEOF' || exit 1
import sys, datasets
out = sys.argv[1]
docs = ["First \"document\"\nwith\ttabs and a \\ backslash.", "Zweites: naïve café 日本 🚀",
        "", "third\r\nwith CRLF and \u2028 a line separator"]
ds = datasets.Dataset.from_dict({"id": list(range(len(docs))), "content": docs})
ds.save_to_disk(f"{out}/ds")
datasets.DatasetDict({"train": ds, "validation": ds.select([1])}).save_to_disk(f"{out}/dd")
for i, d in enumerate(docs):
    open(f"{out}/doc{i}.txt", "wb").write(d.encode("utf-8"))
PYEOF
fail=0
$PY scripts/prepare_hf_dataset.py $out/ds --field content --out $out/corpus.jsonl || fail=1
$PY scripts/prepare_hf_dataset.py $out/dd --split validation --field content --out $out/val.jsonl || fail=1
$ZT prepare --tokenizer gpt2 --jsonl $out/corpus.jsonl --out $out/jsonl.bin > /dev/null || fail=1
$ZT prepare --tokenizer gpt2 --text $out/doc0.txt --text $out/doc1.txt --text $out/doc2.txt \
  --text $out/doc3.txt --out $out/text.bin > /dev/null || fail=1
$ZT prepare --tokenizer gpt2 --jsonl $out/val.jsonl --out $out/val_j.bin > /dev/null || fail=1
$ZT prepare --tokenizer gpt2 --text $out/doc1.txt --out $out/val_t.bin > /dev/null || fail=1
if [ $fail -eq 0 ] && cmp $out/jsonl.bin $out/text.bin && cmp $out/val_j.bin $out/val_t.bin; then
  echo "ok: the dataset's column through JSONL prepares as its documents as text files (both splits)"
else echo "FAIL: the Hugging Face dataset's tokens differ"; fail=1; fi
$PY scripts/prepare_hf_dataset.py $out/ds --out $out/bad.jsonl > $out/bad.out 2>&1
if [ $? -ne 0 ] && grep -q "columns \['content', 'id'\], not 'text'; pass --field" $out/bad.out && [ ! -e $out/bad.jsonl ]; then
  echo "ok: a missing column is named: $(tail -1 $out/bad.out)"
else echo "FAIL: missing column: $(cat $out/bad.out)"; fail=1; fi
exit $fail
