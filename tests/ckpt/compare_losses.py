#!/usr/bin/env python3
"""Compares the step losses of two zerotrain JSON-lines logs over the steps both hold.

    compare_losses.py A.jsonl B.jsonl [--rtol R]

--rtol 0 (the default) demands bit-identical losses (as logged, %.9g: fp32 round-trips).
Exits 1 on a mismatch or when the logs share no step."""
import json
import sys


def losses(path):
    out = {}
    for line in open(path):
        d = json.loads(line)
        if "loss" in d:
            out[d["step"]] = d["loss"]
    return out


def main():
    args = sys.argv[1:]
    rtol = 0.0
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    a, b = losses(args[0]), losses(args[1])
    common = sorted(set(a) & set(b))
    if not common:
        print("no common steps")
        return 1
    worst = 0.0
    for s in common:
        d = abs(a[s] - b[s])
        worst = max(worst, d / abs(a[s]))
        ok = d == 0.0 if rtol == 0 else d <= rtol * abs(a[s])
        print(f"step {s}: {a[s]:.9g} {b[s]:.9g} {'ok' if ok else 'MISMATCH'}")
        if not ok:
            return 1
    print(f"steps {common[0]}..{common[-1]}: max relative difference {worst:.3g} (rtol {rtol})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
