#!/usr/bin/env python3
"""Writes a Hugging Face dataset's text column as JSONL, one document a line, for `prepare`.

    python3 scripts/prepare_hf_dataset.py roneneldan/TinyStories --split train --out stories.jsonl
    python3 scripts/prepare_hf_dataset.py ./my_saved_dataset --out corpus.jsonl   # save_to_disk's
    build/zerotrain prepare --tokenizer gpt2 --jsonl stories.jsonl --field text \\
        --out stories_train.bin --val-out stories_val.bin --val-frac 0.01

DATASET is a directory written by `Dataset.save_to_disk` / `DatasetDict.save_to_disk` (read with
`load_from_disk`), or a name or path for `load_dataset` (streamed: rows are written as they
arrive, so a corpus larger than memory works). Each line is {"text": ...} whatever --field is
called in the dataset, written by json.dumps (ASCII, \\u escapes), so `prepare --jsonl` reads it
back exactly. Needs the `datasets` package (pip install datasets); it is imported only here,
when the script runs.
"""
import argparse
import json
import os
import sys


def rows(args):
    """The dataset's rows, in order."""
    try:
        import datasets  # imported lazily: the rest of zerotrain never needs it
    except ImportError:
        sys.exit("prepare_hf_dataset: the datasets package is missing; pip install datasets")
    if os.path.isdir(args.dataset) and (
        os.path.exists(os.path.join(args.dataset, "dataset_info.json"))
        or os.path.exists(os.path.join(args.dataset, "dataset_dict.json"))
    ):
        ds = datasets.load_from_disk(args.dataset)
        if isinstance(ds, datasets.DatasetDict):
            if args.split not in ds:
                sys.exit(f"prepare_hf_dataset: {args.dataset} has splits {sorted(ds)}, not "
                         f"{args.split!r}; pass --split")
            ds = ds[args.split]
    else:
        ds = datasets.load_dataset(args.dataset, args.config, split=args.split, streaming=True)
    return ds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", help="a save_to_disk directory, or a name for load_dataset")
    ap.add_argument("--config", default=None, help="the dataset's configuration name, if any")
    ap.add_argument("--split", default="train", help="default: train")
    ap.add_argument("--field", default="text", help="the column holding the text (default text)")
    ap.add_argument("--out", required=True, help="the JSONL file to write")
    ap.add_argument("--limit", type=int, default=0, help="write at most N documents (0: all)")
    args = ap.parse_args()
    n = 0
    tmp = f"{args.out}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="ascii") as f:
        for row in rows(args):
            if args.field not in row:
                os.unlink(tmp)
                sys.exit(f"prepare_hf_dataset: the dataset has columns {sorted(row)}, not "
                         f"{args.field!r}; pass --field")
            text = row[args.field]
            if not isinstance(text, str):
                os.unlink(tmp)
                sys.exit(f"prepare_hf_dataset: row {n}'s {args.field!r} is "
                         f"{type(text).__name__}, not a string; pass the text column with --field")
            f.write(json.dumps({"text": text}) + "\n")
            n += 1
            if args.limit and n >= args.limit:
                break
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {n} documents; next: zerotrain prepare --tokenizer gpt2 "
          f"--jsonl {args.out} --out TRAIN.bin --val-out VAL.bin")


if __name__ == "__main__":
    main()
