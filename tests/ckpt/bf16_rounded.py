#!/usr/bin/env python3
"""Checks a BF16 model.safetensors against the F32 one it should be the rounding of: the
same names and shapes, the F32 file all F32, the BF16 file all BF16, and every bf16 value's
bits those of its fp32 value rounded to nearest, ties to even. numpy only; the rounding is
written here from its definition (keep the top 16 bits; round up when the dropped 16 bits
exceed half, or equal half and the kept lowest bit is odd), not as zerotrain's formula.

    bf16_rounded.py F32.safetensors BF16.safetensors
    bf16_rounded.py --all DTYPE FILE          (only: every tensor has DTYPE)"""
import json
import struct
import sys

import numpy as np


def read(path):
    """{name: (dtype, shape, raw bytes)} of a safetensors file."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    hdr.pop("__metadata__", None)
    data = raw[8 + n:]
    return {k: (v["dtype"], tuple(v["shape"]), data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in hdr.items()}


def all_dtype(t, want, path):
    bad = sorted(k for k, v in t.items() if v[0] != want)
    if bad:
        print(f"FAIL {path}: not {want}: {', '.join(bad[:5])} ({len(bad)} of {len(t)})")
    return not bad


def rne(u32):
    kept, dropped = u32 >> 16, u32 & 0xFFFF
    up = (dropped > 0x8000) | ((dropped == 0x8000) & ((kept & 1) == 1))
    return (kept + up).astype(np.uint16)


def main():
    if sys.argv[1] == "--all":
        sys.exit(0 if all_dtype(read(sys.argv[3]), sys.argv[2], sys.argv[3]) else 1)
    f32, b16 = read(sys.argv[1]), read(sys.argv[2])
    ok = all_dtype(f32, "F32", sys.argv[1]) and all_dtype(b16, "BF16", sys.argv[2])
    if sorted(f32) != sorted(b16):
        print(f"FAIL: tensor names differ: {sorted(set(f32) ^ set(b16))[:5]}")
        sys.exit(1)
    n, ties, worst = 0, 0, 0
    for k in sorted(f32):
        if f32[k][1] != b16[k][1]:
            print(f"FAIL {k}: shape {f32[k][1]} vs {b16[k][1]}")
            ok = False
            continue
        u = np.frombuffer(f32[k][2], dtype="<u4").astype(np.uint64)
        if not np.isfinite(np.frombuffer(f32[k][2], dtype="<f4")).all():
            print(f"FAIL {k}: non-finite fp32 values (the rounding here is for finite ones)")
            ok = False
        got = np.frombuffer(b16[k][2], dtype="<u2")
        if got.size != u.size:
            print(f"FAIL {k}: {got.size} bf16 values for {u.size} fp32 ones")
            ok = False
            continue
        want = rne(u)
        wrong = np.flatnonzero(got != want)
        if wrong.size:
            i = wrong[0]
            print(f"FAIL {k}: {wrong.size} values not rounded to nearest even, first [{i}]: "
                  f"fp32 {int(u[i]):#010x} gave {int(got[i]):#06x}, want {int(want[i]):#06x}")
            ok = False
        n += u.size
        ties += int(((u & 0xFFFF) == 0x8000).sum())
        # how far the rounding moved a value, in bf16 units of its last place (at most 1/2)
        diff = np.abs(u.astype(np.int64) - (want.astype(np.int64) << 16))
        worst = max(worst, int(diff.max()) if diff.size else 0)
    print(f"{len(f32)} tensors, {n} values, {ties} exact ties; max |fp32 - bf16| "
          f"{worst / 65536:.4f} ulp(bf16)")
    sys.exit(0 if ok else 1)


main()
