#!/usr/bin/env python3
"""Rewrites a checkpoint step directory in place into format version 1, as zerotrain wrote it
before version 2: the manifest without "checksum" (and without version 3's "run_start" and
seal, manifest.json.xxh3), version 1, and each file's FNV-1a 64 under "fnv1a64" instead of its
XXH3-64 "digest" (the shard files themselves did not change). The manifest is edited as text,
so it is byte for byte what the version-1 writer printed.

    to_v1.py STEP_DIR"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from read_ckpt import fnv1a64  # noqa: E402

d = sys.argv[1]
path = os.path.join(d, "manifest.json")
text = open(path).read()
assert '"version": 3,\n  "checksum": "xxh3-64",\n' in text, f"{path} is not a version 3 manifest"
text = text.replace('"version": 3,\n  "checksum": "xxh3-64",\n', '"version": 1,\n')
text, n = re.subn(r'  "run_start": \{[^}]*\},\n', '', text)
assert n == 1, f"{path}: no run_start"
os.remove(os.path.join(d, "manifest.json.xxh3"))


def old(m):
    h = fnv1a64(open(os.path.join(d, m.group(2)), "rb").read())
    return f'{m.group(1)}"fnv1a64": "{h:016x}"'


text, n = re.subn(r'("name": "([^"]+)", "rank": \d+, "bytes": \d+, )"digest": "[0-9a-f]{16}"', old,
                  text)
assert n > 0, f"{path}: no file entries"
open(path, "w").write(text)
print(f"{path}: version 1, {n} files with FNV-1a 64")
