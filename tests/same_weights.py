#!/usr/bin/env python3
"""Whether two safetensors files hold the same tensors bit for bit, matched by name (the
export writes them in the order of the ranks' layouts, so a layout that orders a rank's
blocks differently, e.g. --schedule interleaved, writes the same tensors in another order).

    same_weights.py A.safetensors B.safetensors

Exit 0 when every name, dtype, shape and byte agrees; else prints the first differences and
exits 1."""
import json
import struct
import sys


def tensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    return {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items()}


def main():
    a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
    bad = sorted(set(a) ^ set(b))
    for name in sorted(set(a) & set(b)):
        if a[name] != b[name]:
            bad.append(name)
    for name in bad[:5]:
        print(f"differs: {name}")
    print(f"{len(a)} tensors, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
