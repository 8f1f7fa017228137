#!/usr/bin/env python3
"""The largest one-step move of any parameter, in units of the base learning rate, from a run
saved with --ckpt-every 1 (docs/checkpoints.md; read by scripts/read_ckpt.py).

    adamw8bit_moves.py CKPT_DIR --lr LR      prints: max_move_lr <x> step <k> <tensor>[<index>]

Moves are step k-1 -> k for k = 2..K (step 0 is not saved; step 1 starts from zero state,
where 8-bit and fp32 AdamW take the same step, |update| <= lr). Under --param-dtype bf16 the
checkpoint holds the fp32 master weights, so the move is the optimizer's own, before bf16
rounding. Used by bench/adamw8bit_sweep.sh."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import read_ckpt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("--lr", type=float, required=True)
    args = ap.parse_args()
    steps = sorted(int(d[5:]) for d in os.listdir(args.ckpt)
                   if d.startswith("step-") and d[5:].isdigit())
    if len(steps) < 2:
        sys.exit("adamw8bit_moves: need at least two step-N checkpoints (--ckpt-every 1)")
    worst, where, prev = -1.0, "", None
    for k in steps:
        _, ts = read_ckpt.load(os.path.join(args.ckpt, "step-%d" % k), verify=False)
        if prev is not None:
            for name, a in ts.items():
                d = np.abs(a.astype(np.float64) - prev[name]) / args.lr
                i = int(np.argmax(d))
                if d.flat[i] > worst:
                    worst = float(d.flat[i])
                    where = "step %d %s%s" % (k, name, list(np.unravel_index(i, a.shape)))
        prev = {n: a.astype(np.float64) for n, a in ts.items()}
    print("max_move_lr %.4g %s" % (worst, where))


if __name__ == "__main__":
    main()
