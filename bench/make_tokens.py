"""Writes N random token ids < VOCAB as an llm.c token file, for the benchmarks:

    /usr/bin/python3 bench/make_tokens.py OUT.bin [N] [VOCAB]      (defaults 65536, 50257)

Format (the one data/ reads, docs/design.md §8): a header of 256 little-endian int32,
[20240520 (magic), 1 (version), N, 0 ...], then N little-endian uint16 tokens. Written to
OUT.bin.tmp and renamed, so a concurrent reader never sees half a file; OUT's folder is made
if missing (a fresh tree's build/bench).
"""
import os
import sys

import numpy as np


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 16
    vocab = int(sys.argv[3]) if len(sys.argv) > 3 else 50257
    header = np.zeros(256, dtype="<i4")
    header[:3] = [20240520, 1, n]
    tokens = np.random.default_rng(0).integers(0, vocab, n).astype("<u2")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".tmp", "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.tobytes())
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
