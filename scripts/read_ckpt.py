#!/usr/bin/env python3
"""Loads a zerotrain checkpoint (docs/checkpoints.md) into numpy arrays by name.

    read_ckpt.py CKPT [--hf] [--state] [--verify | --no-verify]
                                           prints every tensor's name, shape and norm

CKPT is a checkpoint directory (its newest complete step-N is taken: what `latest` names, or a
newer one a save committed before it stopped) or one step-N directory.
Every file's size and checksum are checked against the manifest: XXH3-64 (format versions 2
and 3) through the PyPI package xxhash, FNV-1a 64 (version 1) in pure Python (about 15 MB/s:
use --no-verify for a large old checkpoint). Version 3 manifests are sealed: manifest.json's
own XXH3-64 is in manifest.json.xxh3, checked first, and its data position is cross-checked
(samples = run_start's + global_batch per step since). Without xxhash a version 2 or 3
checkpoint is read unverified, with one line saying so; --verify makes that an error.
As a module: load(ckpt, hf=False, state=False, verify=None) returns (manifest,
{name: array}), raising ChecksumError on a mismatch (verify None: when xxhash allows it); with
state=True also "<name>:m" and "<name>:v" (8-bit state dequantized with the maps of
kernels/quant8_math.h is not reproduced here: 8-bit moments come back as
"<name>:qm"/"<name>:qv" codes and "<name>:am"/"<name>:av" per-segment absmax lists).
With hf=True, tensors are in Hugging Face GPT-2 layout (Conv1D weights transposed)."""
import json
import os
import struct
import sys

import numpy as np

try:
    import xxhash
except ImportError:
    xxhash = None

DT = {"F32": np.float32, "U8": np.uint8, "F16": np.float16}
NO_XXHASH = "the Python package xxhash is missing (pip install xxhash)"


class ChecksumError(Exception):
    pass


def fnv1a64(data, h=1469598103934665603):
    """FNV-1a 64 as src/core/rng.h zt_hash_bytes computes it, for version 1 checkpoints: its offset
    basis is ZT_FNV1A_BASIS, 1469598103934665603, a digit short of the standard
    14695981039346656037, and version 1 manifests hold that variant's value."""
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def checksum_of(man):
    """(algorithm, the file entries' key) of a manifest (docs/checkpoints.md)."""
    v = man.get("version")
    if v == 1:
        return "fnv1a-64", "fnv1a64"
    if v in (2, 3) and man.get("checksum") == "xxh3-64":
        return "xxh3-64", "digest"
    raise ValueError(f"manifest version {v} with checksum {man.get('checksum')!r}: "
                     "this script reads versions 1 (fnv1a-64), 2 and 3 (xxh3-64)")


def will_verify(alg, verify):
    """load's verify argument made definite: None verifies when xxhash allows it."""
    if verify and alg == "xxh3-64" and xxhash is None:
        raise ChecksumError(f"{NO_XXHASH}: the xxh3-64 checksums cannot be verified")
    return verify if verify is not None else alg != "xxh3-64" or xxhash is not None


def digest(alg, raw):
    return xxhash.xxh3_64_intdigest(raw) if alg == "xxh3-64" else fnv1a64(raw)


def q8_map(signed, decades=7, v_floor=True):
    """kernels/quant8_math.h zt_q8_make_map, in float64 rounded once to float32; v_floor
    False: bitsandbytes' unsigned map (0 where ours has its floor), which a manifest without
    optimizer.v_map was written with."""
    m, extra = [], 0 if signed else 1
    if signed:
        for E in range(decades):
            n = 1 << (decades - 1 - E)
            m += [-(0.1 + 0.9 * (2 * j + 1) / (2 * n)) / 10.0 ** E for j in range(n - 1, -1, -1)]
    m.append(0.55e-7 if not signed and v_floor else 0.0)  # ZT_Q8_V_FLOOR: no zero code for v
    for E in range(decades - 1, -1, -1):
        n = 1 << (decades - 1 - E + extra)
        m += [(0.1 + 0.9 * (2 * j + 1) / (2 * n)) / 10.0 ** E for j in range(n)]
    m.append(1.0)
    return np.array(m, np.float32)


def resolve(path):
    """As zerotrain resolves it (src/checkpoint/ckpt_load.c): the newest complete step-N."""
    if os.path.isfile(os.path.join(path, "manifest.json")):
        return path
    steps = [d for d in os.listdir(path) if d.startswith("step-") and d[5:].isdigit()
             and os.path.isfile(os.path.join(path, d, "manifest.json"))]
    if steps:
        return os.path.join(path, max(steps, key=lambda d: int(d[5:])))
    return os.path.join(path, open(os.path.join(path, "latest")).read().strip())


def check_manifest(d, raw, man, verify):
    """A version 3 manifest: its bytes against manifest.json.xxh3 (when verifying), and its
    data position against where its run began (docs/checkpoints.md)."""
    path, side = os.path.join(d, "manifest.json"), os.path.join(d, "manifest.json.xxh3")
    if man["version"] < 3:
        return
    if not os.path.isfile(side):
        raise ChecksumError(f"{path} has format version 3 but no manifest.json.xxh3 beside it")
    if verify:
        want = open(side).read().split()[0]
        h = xxhash.xxh3_64_intdigest(raw)
        if h != int(want, 16):
            raise ChecksumError(f"{path} does not match its checksum in {side} "
                                f"({h:016x}, recorded {want})")
    rs, gb = man["run_start"], man["config"]["global_batch"]
    if man["samples"] != rs["samples"] + (man["step"] - rs["step"]) * gb:
        raise ChecksumError(f"{path} is corrupt: samples {man['samples']}, but its run began at "
                            f"step {rs['step']} with {rs['samples']} samples and reads {gb} a step")


def read_safetensors(raw):
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    hdr.pop("__metadata__", None)
    base = 8 + n
    return {k: np.frombuffer(raw, DT[v["dtype"]], int(np.prod(v["shape"])),
                             base + v["data_offsets"][0]) for k, v in hdr.items()}


def load(ckpt, hf=False, state=False, verify=None):
    d = resolve(ckpt)
    raw = open(os.path.join(d, "manifest.json"), "rb").read()
    man = json.loads(raw)
    alg, hkey = checksum_of(man)
    if verify is None and not will_verify(alg, None):
        print(f"read_ckpt: {NO_XXHASH}: the xxh3-64 checksums are not verified", file=sys.stderr)
    verify = will_verify(alg, verify)
    check_manifest(d, raw, man, verify)
    shapes = {t["name"]: t for t in man["tensors"]}
    out, B = {}, man["optimizer"]["block_size"]
    maps = {"qm": q8_map(True), "qv": q8_map(False, v_floor="v_map" in man["optimizer"])}
    for t in man["tensors"]:
        out[t["name"]] = np.zeros(int(np.prod(t["shape"])), np.float32)
        if state:
            out[t["name"] + ":m"] = np.zeros(int(np.prod(t["shape"])), np.float32)
            out[t["name"] + ":v"] = np.zeros(int(np.prod(t["shape"])), np.float32)
    for f in man["files"]:
        path = os.path.join(d, f["name"])
        raw = open(path, "rb").read()
        if verify:
            if len(raw) != f["bytes"]:
                raise ChecksumError(f"{path}: {len(raw)} bytes, the manifest says {f['bytes']}")
            h = digest(alg, raw)
            if h != int(f[hkey], 16):
                raise ChecksumError(f"{path} is corrupt: its {alg} checksum {h:016x} differs "
                                    f"from the manifest's {f[hkey]}")
        st = read_safetensors(raw)
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
    verify = True if "--verify" in sys.argv else False if "--no-verify" in sys.argv else None
    try:
        man, ts = load(args[0], hf="--hf" in sys.argv, state="--state" in sys.argv,
                       verify=verify)
    except (ChecksumError, ValueError) as e:
        sys.exit(f"read_ckpt: error: {e}")
    print(f"step {man['step']}, samples {man['samples']}, optimizer {man['optimizer']}, "
          f"layout {man['layout']}")
    alg = checksum_of(man)[0]
    print(f"checksums: {len(man['files'])} files, {alg}, "
          + ("all equal the manifest's" if will_verify(alg, verify) else "not verified"))
    for k, v in ts.items():
        if isinstance(v, np.ndarray):
            print(f"{k:40s} {str(list(v.shape)):16s} norm {np.linalg.norm(v.astype(np.float64)):.6g}")
