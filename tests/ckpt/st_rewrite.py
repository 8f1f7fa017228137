#!/usr/bin/env python3
"""Rewrites a safetensors file by hand (no numpy, no safetensors package): every key gets
the `transformer.` prefix and lm_head.weight is added as a copy of wte.weight, the key
layout of Hugging Face's GPT2LMHeadModel.save_pretrained with an untied-looking head.

    st_rewrite.py IN.safetensors OUT.safetensors"""
import json
import struct
import sys


def read(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    meta = hdr.pop("__metadata__", None)
    return {k: (v, data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in hdr.items()}, meta


def write(path, tensors, meta):
    hdr, blobs, off = {}, [], 0
    if meta is not None:
        hdr["__metadata__"] = meta
    for k, (info, b) in tensors.items():
        hdr[k] = {"dtype": info["dtype"], "shape": info["shape"], "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


t, meta = read(sys.argv[1])
out = {"transformer." + k: v for k, v in t.items()}
out["lm_head.weight"] = t["wte.weight"]
write(sys.argv[2], out, meta)
