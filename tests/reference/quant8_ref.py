#!/usr/bin/env python3
"""Independent NumPy reference for zerotrain's block-wise dynamic 8-bit quantization
(kernels/quant8_math.h, compared against by the adamw8bit_reference test).

Written from the papers, not from the C: Dettmers (2015) "8-Bit Approximations for
Parallelism in Deep Learning" and Dettmers et al. (2021) "8-bit Optimizers via Block-wise
Quantization". Dynamic tree quantization: after the sign bit, E zero bits choose the decade
10^-E, a 1 bit ends the exponent, and the remaining F bits are a linear fraction over
[0.1, 1] whose codes stand for the middles of 2^F equal bins. With 8 bits and exponents
E = 0..6 (bitsandbytes' max_exponent_bits=7) a signed value has F = 6 - E; the unsigned
variant (Adam's second moment is never negative) spends the sign bit on the fraction,
F = 7 - E. The two codes left over hold 0 and 1 in the signed map; in the unsigned one
they hold 1 and, instead of 0, 0.55e-7: the second moment's map excludes zero (Li, Chen
and Zhu (2023) "Memory Efficient Optimizers with 4-bit States": a v stored as 0 under a
non-zero m makes the update m / eps), and 0.55e-7 is what the tree's formula gives for the
next decade, E = 7 with F = 0 (the middle of [0.1, 1] x 1e-7). Block-wise quantization (2021): a block
is normalized by its absmax, each value takes the nearest code, and dequantization is
code value * absmax.

Conventions shared with the C (they are choices, not in the paper):
  * r = x / absmax in float32 (IEEE division); absmax == 0 means r = 0;
  * nearest code by exact distance, ties (r exactly midway) to the code of smaller
    magnitude; here found by brute force over all 256 codes in float64 (exact for any r
    near a midpoint: the neighbours and r are floats of similar size);
  * dequantized value = float32(map[code] * absmax).

    /usr/bin/python3 tests/reference/quant8_ref.py --out FILE

FILE (little-endian):

    offset  size      field
    0       8         magic "ZTQ8REF1"
    8       4         uint32 n_cases
    12      4         uint32 0 (reserved)
    16      256*4     float32 signed map, ascending
    1040    256*4     float32 unsigned map, ascending
    2064    ...       n_cases cases, each:
                        uint32   kind     0: signed map (first moment), 1: unsigned (second)
                        uint32   n        values in the block
                        char[32] name     NUL-padded ASCII
                        float32  absmax   max |x|
                        float32  x[n]
                        uint8    code[n]
                        float32  deq[n]
"""
import argparse
import struct

import numpy as np

N_DECADES = 7  # E = 0..6


def dynamic_map(signed):
    values = [0.0 if signed else 0.55e-7, 1.0]
    for E in range(N_DECADES):
        F = (6 - E) if signed else (7 - E)
        edges = np.linspace(0.1, 1.0, 2**F + 1)
        middles = (edges[:-1] + edges[1:]) / 2.0
        vals = middles * 10.0 ** (-E)
        values += vals.tolist()
        if signed:
            values += (-vals).tolist()
    m = np.array(sorted(values), dtype=np.float64).astype(np.float32)
    assert m.size == 256 and np.all(np.diff(m) > 0)
    return m


def quantize_block(x, qmap):
    x = np.asarray(x, dtype=np.float32)
    absmax = np.float32(np.max(np.abs(x))) if x.size else np.float32(0)
    if absmax > 0:
        r = (x / absmax).astype(np.float32)
    else:
        r = np.zeros_like(x)
    m64 = qmap.astype(np.float64)
    d = np.abs(r.astype(np.float64)[:, None] - m64[None, :])
    best = d.min(axis=1, keepdims=True)
    cand = d == best
    # among equally near codes, the one of smallest magnitude
    mag = np.where(cand, np.abs(m64)[None, :], np.inf)
    code = np.argmin(mag, axis=1).astype(np.uint8)
    deq = (qmap[code] * absmax).astype(np.float32)
    return absmax, code, deq


def ties(qmap):
    """Every midpoint of neighbouring codes that is a float32, with its two float
    neighbours, plus 1.0 so that absmax is 1 and r == x exactly."""
    out = [np.float32(1.0)]
    m64 = qmap.astype(np.float64)
    for a, b in zip(m64[:-1], m64[1:]):
        mid = (a + b) / 2.0
        f = np.float32(mid)
        if float(f) == mid:
            out += [f, np.nextafter(f, np.float32(-2)), np.nextafter(f, np.float32(2))]
    return np.array(out, dtype=np.float32)


def ties_scaled(qmap, absmax=np.float32(0.7)):
    """Exact midpoints again, in a block whose absmax is not a power of two: for each
    float midpoint, an x with float32(x / absmax) == midpoint exactly (so a quantizer that
    multiplies by a rounded 1/absmax instead of dividing can land on the other side)."""
    out = [absmax]
    m64 = qmap.astype(np.float64)
    for a, b in zip(m64[:-1], m64[1:]):
        mid = (a + b) / 2.0
        f = np.float32(mid)
        if float(f) != mid:
            continue
        x = np.float32(mid * float(absmax))
        for _ in range(4):  # walk at most a few ulps to the x whose quotient is exact
            q = np.float32(x / absmax)
            if q == f:
                out.append(x)
                break
            x = np.nextafter(x, np.float32(np.inf) if q < f else np.float32(-np.inf))
    return np.array(out, dtype=np.float32)


def cases(rng):
    """(name, signed-kind values); the unsigned kind uses |values|."""
    c = []
    c.append(("zeros", np.zeros(256, np.float32)))
    x = rng.standard_normal(256).astype(np.float32) * np.float32(1e-3)
    x[17] = np.float32(1e4)
    c.append(("outlier", x))
    # subnormals only: absmax itself subnormal (float32 subnormals are below 1.18e-38)
    mag = np.exp(rng.uniform(np.log(1.4e-45), np.log(1.1e-38), 256)).astype(np.float32)
    c.append(("denormals", (mag * rng.choice([-1, 1], 256)).astype(np.float32)))
    # subnormals inside a block of normal values
    x = rng.standard_normal(256).astype(np.float32)
    x[::7] = (rng.uniform(-1, 1, x[::7].size) * 1e-39).astype(np.float32)
    c.append(("mixed_denormals", x))
    c.append(("normal", rng.standard_normal(256).astype(np.float32)))
    c.append(("normal_small", (rng.standard_normal(256) * 1e-8).astype(np.float32)))
    c.append(("normal_large", (rng.standard_normal(256) * 1e3).astype(np.float32)))
    c.append(("partial_last_block", rng.standard_normal(77).astype(np.float32)))
    # log-uniform magnitudes across every decade of the map and below it
    mag = np.exp(rng.uniform(np.log(1e-9), 0.0, 4095))
    x = np.concatenate([[1.0], mag * rng.choice([-1, 1], 4095)]).astype(np.float32)
    c.append(("sweep", x))
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    maps = [dynamic_map(True), dynamic_map(False)]
    records = []
    for kind in (0, 1):
        qmap = maps[kind]
        named = cases(rng) + [("ties", ties(qmap)), ("ties_scaled", ties_scaled(qmap))]
        for name, x in named:
            x = np.asarray(x, np.float32)
            if kind == 1:
                x = np.abs(x)
            absmax, code, deq = quantize_block(x, qmap)
            records.append((kind, name, x, absmax, code, deq))
    with open(args.out, "wb") as f:
        f.write(b"ZTQ8REF1")
        f.write(struct.pack("<II", len(records), 0))
        f.write(maps[0].astype("<f4").tobytes())
        f.write(maps[1].astype("<f4").tobytes())
        for kind, name, x, absmax, code, deq in records:
            f.write(struct.pack("<II", kind, x.size))
            f.write(name.encode("ascii").ljust(32, b"\0")[:32])
            f.write(struct.pack("<f", float(absmax)))
            f.write(x.astype("<f4").tobytes())
            f.write(code.astype(np.uint8).tobytes())
            f.write(deq.astype("<f4").tobytes())
    print(f"quant8_ref: {len(records)} cases -> {args.out}")


if __name__ == "__main__":
    main()
