#!/usr/bin/env python3
"""Writes a safetensors file that a lax reader accepts and a strict one refuses, from a good
one (no numpy, no safetensors package: the header is written as text, so that it can hold
what json.dumps never writes, a key twice).

    st_lax.py IN.safetensors OUT.safetensors CASE

CASE:
  duplicate     h.0.ln_1.weight a second time, pointing at h.0.ln_2.weight's bytes
  overlap       every h.N.ln_1.weight pointing at h.0.ln_1.weight's bytes
  fractional    wte.weight's first dimension written 256.5 (the bytes unchanged)
  meta_array    __metadata__ as an array
  huge_offsets  an empty tensor at data_offsets [8.9e49, 8.9e49]
  huge_shape    wte.weight of shape [2^40, 2^24] (2^64 elements: 0 in 64 bits) at [0, 0]
  wide_shape    wte.weight of shape [2^31, 0] (no element, a dimension past an int)
  layer_max     one more tensor, h.2147483647.ln_1.weight (a copy of h.0.ln_1.weight)
"""
import json
import struct
import sys


def read(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    meta = hdr.pop("__metadata__", None)
    data = raw[8 + n:]
    return hdr, meta, data


def entry(info, offsets, shape=None):
    return '{"dtype": %s, "shape": %s, "data_offsets": %s}' % (
        json.dumps(info["dtype"]), shape or json.dumps(info["shape"]), offsets)


def main(src, dst, case):
    hdr, meta, data = read(src)
    meta_text = json.dumps(meta if meta is not None else {"format": "pt"})
    if case == "meta_array":
        meta_text = '["format", "pt"]'
    items = []  # (key, entry text)
    for k, v in hdr.items():
        off = json.dumps(v["data_offsets"])
        shape = None
        bare = k[len("transformer."):] if k.startswith("transformer.") else k
        if case == "overlap" and bare.endswith(".ln_1.weight"):
            off = json.dumps(hdr[k.replace(bare, "h.0.ln_1.weight")]["data_offsets"])
        if case == "fractional" and bare == "wte.weight":
            shape = "[%s.5, %d]" % (v["shape"][0], v["shape"][1])
        if case == "huge_shape" and bare == "wte.weight":
            shape, off = "[%d, %d]" % (2**40, 2**24), "[0, 0]"
        if case == "wide_shape" and bare == "wte.weight":
            shape, off = "[%d, 0]" % 2**31, "[0, 0]"
        items.append((k, entry(v, off, shape)))
    if case == "wide_shape":  # wte's bytes, owned by a tensor of their own (no hole: that is
        # refused first, tests/test_safetensors.c)
        w = hdr.get("wte.weight") or hdr["transformer.wte.weight"]
        b, e = w["data_offsets"]
        items.append(("wte_bytes", '{"dtype": "U8", "shape": [%d], "data_offsets": [%d, %d]}' % (e - b, b, e)))
    if case == "duplicate":
        items.append(("h.0.ln_1.weight",
                      entry(hdr["h.0.ln_1.weight"], json.dumps(hdr["h.0.ln_2.weight"]["data_offsets"]))))
    if case == "huge_offsets":
        items.append(("empty", '{"dtype": "F32", "shape": [0], "data_offsets": [8.9e49, 8.9e49]}'))
    if case == "layer_max":
        v = hdr["h.0.ln_1.weight"]
        b, e = v["data_offsets"]
        items.append(("h.2147483647.ln_1.weight", entry(v, json.dumps([len(data), len(data) + e - b]))))
        data += data[b:e]
    text = "{" + ", ".join(['"__metadata__": ' + meta_text] +
                           ['%s: %s' % (json.dumps(k), e) for k, e in items]) + "}"
    h = text.encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
