#!/usr/bin/env python3
"""Rewrites a step directory's manifest.json.xxh3 from its manifest.json, as zerotrain's save
seals it (docs/checkpoints.md, version 3): for tests that edit a manifest on purpose and want
the checks behind the seal to see the edit. XXH3-64 through the PyPI package xxhash, else
through the system's libxxhash (the library zerotrain links) by ctypes.

    reseal.py STEP_DIR"""
import ctypes
import ctypes.util
import os
import sys


def xxh3_64(data):
    try:
        import xxhash
        return xxhash.xxh3_64_intdigest(data)
    except ImportError:
        lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
        lib.XXH3_64bits.restype = ctypes.c_uint64
        lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        return lib.XXH3_64bits(data, len(data))


d = sys.argv[1]
raw = open(os.path.join(d, "manifest.json"), "rb").read()
with open(os.path.join(d, "manifest.json.xxh3"), "w") as f:
    f.write(f"{xxh3_64(raw):016x}  manifest.json\n")
