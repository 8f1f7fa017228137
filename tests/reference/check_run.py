#!/usr/bin/env python3
"""Checks a real `zerotrain` run against the PyTorch reference written by gpt2_ref.py:
the logged loss of every step (rtol 1e-5: the same fp32 sums in another order) and the
saved weights after the last step (bound as in tests/compare_models.py: 1% of the
largest possible movement steps*lr, and 2*steps*lr for the key bias, whose exact
gradient is zero).

    check_run.py REF_DIR RUN_LOG.jsonl SAVE_DIR
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from compare_models import load  # noqa: E402

CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def records(path):
    out = {}
    with open(path, "rb") as f:
        while True:
            b = f.read(4)
            if not b:
                return out
            name = f.read(struct.unpack("<i", b)[0]).decode()
            ndim = struct.unpack("<i", f.read(4))[0]
            dims = struct.unpack("<%dq" % ndim, f.read(8 * ndim))
            n = int(np.prod(dims)) if ndim else 1
            out[name] = np.frombuffer(f.read(4 * n), dtype="<f4").reshape(dims)


def main():
    ref_dir, log, save = sys.argv[1:4]
    cfg = json.load(open(os.path.join(ref_dir, "config.json")))
    exp = records(os.path.join(ref_dir, "expect.bin"))
    steps, lr = cfg["steps"], cfg["lr"]
    bad = []
    got = [json.loads(l)["loss"] for l in open(log) if '"loss"' in l]
    if len(got) != steps:
        bad.append("logged %d steps, expected %d" % (len(got), steps))
    for k, g in enumerate(got):
        want = float(exp["loss.step%d" % k][0])
        print("step %d loss %.7f (reference %.7f)" % (k + 1, g, want))
        if abs(g - want) > 1e-5 * abs(want):
            bad.append("step %d loss %.7f vs reference %.7f" % (k + 1, g, want))
    params = load(os.path.join(save, "model.safetensors"))
    bound, worst = 0.01 * steps * lr, 0.0
    for name, p in params.items():
        ref = exp["param." + name].astype(np.float64)
        p = p.astype(np.float64)
        if name.endswith(CONV1D):
            p = p.T  # Hugging Face stores Conv1D weights (in, out)
        if p.shape != ref.shape:
            bad.append("%s: shape %s vs reference %s" % (name, p.shape, ref.shape))
            continue
        d = np.abs(p - ref)
        if name.endswith("attn.c_attn.bias"):
            C = d.shape[0] // 3
            if d[C:2 * C].max() > 2 * steps * lr:
                bad.append("%s key part: %.3g" % (name, d[C:2 * C].max()))
            d = np.concatenate([d[:C], d[2 * C:]])
        worst = max(worst, d.max() / bound)
        if d.max() > bound:
            bad.append("%s: max diff %.3g > %.3g" % (name, d.max(), bound))
    print("saved weights: worst max|diff| / bound = %.4f" % worst)
    for b in bad:
        print("MISMATCH", b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
