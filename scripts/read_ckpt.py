#!/usr/bin/env python3
"""Loads a zerotrain checkpoint (docs/checkpoints.md) into numpy arrays by name.

    read_ckpt.py CKPT [--hf] [--state]     prints every tensor's name, shape and norm

CKPT is a checkpoint directory (its `latest` is taken) or one step-N directory.
As a module: load(ckpt, hf=False, state=False) returns (manifest, {name: array}); with
state=True also "<name>:m" and "<name>:v" (8-bit state dequantized with the maps of
kernels/quant8_math.h is not reproduced here: 8-bit moments come back as
"<name>:qm"/"<name>:qv" codes and "<name>:am"/"<name>:av" per-segment absmax lists).
With hf=True, tensors are in Hugging Face GPT-2 layout (Conv1D weights transposed)."""
import json
import os
import struct
import sys

import numpy as np

DT = {"F32": np.float32, "U8": np.uint8, "F16": np.float16}


def q8_map(signed, decades=7):
    """kernels/quant8_math.h zt_q8_make_map, in float64 rounded once to float32."""
    m, extra = [], 0 if signed else 1
    if signed:
        for E in range(decades):
            n = 1 << (decades - 1 - E)
            m += [-(0.1 + 0.9 * (2 * j + 1) / (2 * n)) / 10.0 ** E for j in range(n - 1, -1, -1)]
    m.append(0.0)
    for E in range(decades - 1, -1, -1):
        n = 1 << (decades - 1 - E + extra)
        m += [(0.1 + 0.9 * (2 * j + 1) / (2 * n)) / 10.0 ** E for j in range(n)]
    m.append(1.0)
    return np.array(m, np.float32)


def resolve(path):
    if os.path.exists(os.path.join(path, "manifest.json")):
        return path
    latest = os.path.join(path, "latest")
    if os.path.exists(latest):
        return os.path.join(path, open(latest).read().strip())
    steps = [d for d in os.listdir(path) if d.startswith("step-")
             and os.path.exists(os.path.join(path, d, "manifest.json"))]
    return os.path.join(path, max(steps, key=lambda d: int(d[5:])))


def read_safetensors(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    hdr.pop("__metadata__", None)
    base = 8 + n
    return {k: np.frombuffer(raw, DT[v["dtype"]], int(np.prod(v["shape"])),
                             base + v["data_offsets"][0]) for k, v in hdr.items()}


def load(ckpt, hf=False, state=False):
    d = resolve(ckpt)
    man = json.load(open(os.path.join(d, "manifest.json")))
    shapes = {t["name"]: t for t in man["tensors"]}
    out, B = {}, man["optimizer"]["block_size"]
    maps = {"qm": q8_map(True), "qv": q8_map(False)}
    for t in man["tensors"]:
        out[t["name"]] = np.zeros(int(np.prod(t["shape"])), np.float32)
        if state:
            out[t["name"] + ":m"] = np.zeros(int(np.prod(t["shape"])), np.float32)
            out[t["name"] + ":v"] = np.zeros(int(np.prod(t["shape"])), np.float32)
    for f in man["files"]:
        st = read_safetensors(os.path.join(d, f["name"]))
        for key, arr in st.items():
            name, kind, g, phase, blk, rest = key.split("|")
            g = int(g)
            if kind == "param":
                out[name][g:g + arr.size] = arr
            elif state and kind in ("m", "v"):
                out[f"{name}:{kind}"][g:g + arr.size] = arr
            elif state and kind in ("qm", "qv"):
                absmax = st["|".join([name, "a" + kind[1], str(g), phase, blk, rest])]
                block = (int(phase) + np.arange(arr.size)) // B
                out[f"{name}:{kind[1]}"][g:g + arr.size] = maps[kind][arr] * absmax[block]
    for name, t in shapes.items():
        out[name] = out[name].reshape(t["shape"])
        if hf and t["hf_transposed"]:
            out[name] = out[name].T.copy()
    return man, out


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    man, ts = load(args[0], hf="--hf" in sys.argv, state="--state" in sys.argv)
    print(f"step {man['step']}, samples {man['samples']}, optimizer {man['optimizer']}, "
          f"layout {man['layout']}")
    for k, v in ts.items():
        if isinstance(v, np.ndarray):
            print(f"{k:40s} {str(list(v.shape)):16s} norm {np.linalg.norm(v.astype(np.float64)):.6g}")
