#!/usr/bin/env python3
"""Compares two zerotrain runs: their Hugging Face safetensors exports and, optionally,
their JSON-lines logs (step losses). Used by the layout-equivalence tests.

    compare_models.py A_DIR B_DIR --steps K --lr LR [--log-a A.jsonl --log-b B.jsonl]

Bounds (why they are what they are):
- loss: the same global batch in another layout sums the same fp32 terms in another
  order; the per-step mean loss agrees to a few ulps of fp32 relative, so rtol 1e-5.
- parameters: after K AdamW steps a parameter has moved by at most ~K*lr. The layouts
  reassociate gradient sums (relative error ~1e-6), which Adam's normalized update
  m/sqrt(v) passes on in proportion; PARAM_FRAC * K * lr (1% of the largest possible
  movement) is far above that and far below a real error (a wrong or missing gradient
  moves a parameter by ~lr per step).
- with 8-bit optimizer state (--adamw8bit; kernels/quant8_math.h's maps): a
  reassociation-level change of a gradient can move a moment across a quantization midpoint,
  so that element's stored m or v differs by one code from then on. One code is a small
  part of the block's absmax (the rounding bound: at most 2h = 1.4% for m, 0.7% for v) but
  not of a small element's own value (up to 2x at the bottom of the m map), and Adam
  normalizes the element's update by its own sqrt(v): one flip can change that element's
  updates by up to their whole size for the steps that follow. So no per-element bound
  short of an element's whole travel follows from the arithmetic; two bounds do:
  * travel (every element): one step moves an element by at most lr (R8 + wd |p|), with
    R8 = FM sqrt(FV) RHO: RHO = max over t <= K of fp32 AdamW's |m^/sqrt(v^)| by
    Cauchy-Schwarz, (1-b1)/sqrt(1-b2) sqrt(sum_{i<t} (b1^2/b2)^i) sqrt(1-b2^t)/(1-b1^t)
    (1 at t = 1), and FM = 2 (a stored m is at most twice its value), FV = 3.45 (a stored
    v at least 1/FV of its value: quant8_math.h). Two runs then differ by at most twice K
    such steps (the learning rate never exceeds --lr). R8 is the one-step ratio from a shared
    state; over a run the 8-bit moments are not fp32's EMA, so across K steps it is a safety
    bound checked by simulation (2-element blocks, 20 steps: at most 0.45 R8) and by the sweep,
    not a derivation. It catches a jump in one layout that the other does not make (a v stored
    as 0 under a non-zero m made jumps of up to 460 lr; usually the same in both layouts).
  * flips (each tensor with 8-bit state, >= --min-8bit values): an element differs by more than
    the float bound (PARAM_FRAC * K * lr) only after a flip. A gradient perturbed by a
    relative DELTA (1e-6, float reassociation) flips a moment lying within DELTA |x| (m) or
    2 DELTA |x| (v) of a midpoint: for values spread over a gap, probability
    2 DELTA |x| / gap <= 2 DELTA / GM per step for m and 4 DELTA / GV for v, where GM =
    1.41% and GV = 0.70% are the smallest gaps relative to the larger code (the top of each
    map). Over K steps about FLIP = K (2 DELTA / GM + 4 DELTA / GV) of a tensor's elements
    (1.4% at K = 20) may exceed the float bound. This share is an estimate, not a bound:
    DELTA is the typical reassociation error (a cancelling sum's is larger), the absmax moves
    too, and flips are not independent across steps; the sweep's worst used 3.4% of it. A
    missing or wrong gradient moves every element of its tensor and fails this; a bug confined
    to fewer elements than the share (one block, a few embedding rows) can pass: the travel
    bound alone guards those.
  bf16 runs with 8-bit state (--adamw8bit --bf16) keep the bf16 bounds below (the travel
  bound with R8): its gradient-rounding term (up to Adam's whole step for an element whose
  micro-batch gradients cancel) is the same kind of event as a flip, and DELTA = 2^-8
  would make FLIP above 1 (no limit). Their losses: flips drift the weights within the
  same bound as bf16's roundings do, so the two drifts add (an argument and a measurement,
  not a derivation): 2 x BF16_LOSS_RTOL (2e-4,
  still below one run's fp32 -> bf16 change, 3.6e-4; 20-step runs measured up to 1.1e-4
  with 8-bit state and 8e-5 without, seed 3). Measured with bench/adamw8bit_sweep.sh (50 seeds,
  fp32 and bf16, dp 2 and dp 2 x pp 2 x tp 2; bench/RESULTS.md).
- tp also reassociates the forward (the row-parallel layers' partial sums), so every
  gradient differs at the float level, not only the sums over ranks; with fp32 AdamW the
  worst measured in tests/sh/tp_equivalence.sh is 3% of the bound (26% with another
  initialization: one element of 16384 whose gradient was near zero, which Adam normalizes;
  the median was 4e-5 of the bound).
- bf16 runs (--bf16, tests/sh/bf16_layouts.sh): the weights are the fp32 masters rounded to
  bf16, so two runs whose masters differ by d may hold bf16 neighbours: |a - b| <= d + one
  bf16 ulp of the value (2^(e-7)), which the check subtracts first. The masters differ
  because the layouts round the bf16 gradients at other points: a gradient accumulated over
  A micro-batches is rounded A times (relative 2^-9 each) and the dp sum once per pairwise
  add, in another order, so a gradient differs by up to ~A * 2^-8 of its partial sums (3% at
  A = 4). Adam passes a relative change of g to its update at most about twice (m in
  proportion, sqrt(v) half), so a well-conditioned element moves <= ~0.06 * K * lr apart;
  an element whose micro-batch gradients cancel (|g| far below its partial sums) can have
  its update's sign decided by the rounding, up to Adam's whole step. So two bounds, as for
  8-bit state above:
  * travel (every element): 2 K steps of lr (RHO + wd |p|) (R8 for it with 8-bit state).
  * share (each tensor): at most K * BF16_SIGN of its elements (floor) beyond BF16_FRAC * K * lr.
    BF16_FRAC = 0.25 covers the well-conditioned elements as measured: worst 0.19 over every
    layout of bf16_layouts.sh (AdamW and 8-bit, dp/ZeRO/pp/tp, seed 11), 99.9% of elements
    within 0.12. Beyond it lie the elements whose sign a rounding decides: since the residual
    stream is bf16 too (docs/design.md, "bf16"), a float-level difference between two runs
    (another order of sums, another backend) moves a stored activation by one bf16 ulp where
    it crosses a rounding boundary, so a gradient differs by up to ~BF16_SIGN = 2^-8 of its
    terms, and each step the elements whose |g| lies that close to zero (for gradients spread
    over their tensor's scale, about that share of them) may take Adam's step the other way:
    K * 2^-8 of a tensor (1.6% at K = 4) is an estimate in FLIP's sense, not a bound. Measured:
    CUDA against the CPU (cuda_bf16_shapes.sh, n_embd 48) one element of 72000 beyond, at
    0.35 K lr. A missing or wrong gradient moves every element of its tensor and fails the
    share; the travel bound alone guards a bug confined to fewer elements. For scale: the same
    run in fp32 instead of bf16 (one rank) moves its worst element 0.43 * K * lr and the loss
    3.6e-4 relative; a dropped or doubled gradient moves every element of a tensor by ~K * lr.
  Losses: BF16_LOSS_RTOL = 1e-4 (measured worst 1.5e-5 over the layouts): the first step's
  weights are identical and its loss differs by fp32 reassociation only; later ones by the
  weights' drift above, 4x below the fp32 -> bf16 change of the same run.
- the key part of attn.c_attn.bias has an exactly-zero true gradient (softmax ignores a
  constant added to a whole score row): both runs update it from rounding noise, which
  Adam normalizes to +-lr, so its only honest bound is 2*K*lr.
"""
import argparse
import json
import struct
import sys

import numpy as np

PARAM_FRAC = 0.01
BF16_FRAC = 0.25
BF16_LOSS_RTOL = 1e-4
BF16_SIGN = 2.0 ** -8  # a bf16 rounding's relative size: the share of signs it may decide
MIN_8BIT = 4096  # --optim-min-8bit's default: smaller tensors keep fp32 state
Q8_FM, Q8_FV = 2.0, 3.45  # kernels/quant8_math.h: stored m <= 2x, stored v >= value / 3.45
Q8_GM, Q8_GV = 0.9 / 64, 0.9 / 128  # smallest one-code gaps relative to the larger code
FLOAT_DELTA = 1e-6  # relative change of an fp32 gradient by reassociation


def adam_ratio_bound(steps, b1, b2):
    """max over t <= steps of fp32 AdamW's |m^ / sqrt(v^)| (Cauchy-Schwarz; the docstring)."""
    best = 0.0
    for t in range(1, steps + 1):
        geo = sum((b1 * b1 / b2) ** i for i in range(t))
        r = (1 - b1) / (1 - b2) ** 0.5 * geo ** 0.5 * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
        best = max(best, r)
    return best


def flip_fraction(steps):
    """The share of an 8-bit tensor's elements that one-code flips may move apart."""
    return steps * (2 * FLOAT_DELTA / Q8_GM + 4 * FLOAT_DELTA / Q8_GV)


def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in hdr.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        if info["dtype"] == "BF16":  # the top 16 bits of an fp32
            bits = np.frombuffer(data[a:b], dtype="<u2").astype(np.uint32) << 16
            out[name] = bits.view(np.float32).reshape(info["shape"])
        else:
            out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(info["shape"])
    return out


def bf16_ulp(x):
    """The spacing of bf16 values at |x| (8 significant bits): 2^(exponent - 7)."""
    e = np.floor(np.log2(np.maximum(np.abs(x), 2.0 ** -126)))
    return 2.0 ** (e - 7)


def losses(path, key="loss"):
    return [json.loads(l)[key] for l in open(path) if '"%s"' % key in l]


def check_travel_share(name, d, p, bound, args, share, why):
    """The travel and share bounds (docstring) for one tensor: every element within Adam's
    travel (with 8-bit state's ratio where it has it), at most share x size elements beyond
    bound (`why`: the events that may move them that far)."""
    bad = []
    ratio = adam_ratio_bound(args.steps, args.beta1, args.beta2)
    if args.adamw8bit:
        ratio *= Q8_FM * Q8_FV ** 0.5
    travel = 2 * args.steps * args.lr * (ratio + args.weight_decay * p)
    if (d > travel).any():
        i = int(np.argmax(d - travel))
        bad.append("%s: diff %.3g at %d exceeds Adam's travel bound %.3g" % (name, d.flat[i], i, travel.flat[i]))
    n_out, cap = int((d > bound).sum()), int(share * d.size)
    if n_out:
        print("%s: %d of %d values beyond %.3g (%s: at most %d), worst %.3g"
              % (name, n_out, d.size, bound, why, cap, d.max()))
    if n_out > cap:
        bad.append("%s: %d values differ by more than %.3g, more than %s explain (%d)" % (name, n_out, bound, why, cap))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--log-a")
    ap.add_argument("--log-b")
    ap.add_argument("--param-frac", type=float, default=None)
    ap.add_argument("--bf16", action="store_true", help="bf16 runs: the bf16 bounds")
    ap.add_argument("--adamw8bit", action="store_true", help="8-bit optimizer state: its bounds")
    ap.add_argument("--min-8bit", type=int, default=MIN_8BIT, help="the runs' --optim-min-8bit")
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    args = ap.parse_args()
    frac = args.param_frac or (BF16_FRAC if args.bf16 else PARAM_FRAC)
    loss_rtol = BF16_LOSS_RTOL * (2 if args.adamw8bit else 1) if args.bf16 else 1e-5
    A, B = load(args.a + "/model.safetensors"), load(args.b + "/model.safetensors")
    bad = []
    if set(A) != set(B):
        bad.append("tensor names differ: %s" % sorted(set(A) ^ set(B)))
    bound = frac * args.steps * args.lr
    worst = (0.0, "")
    for name in sorted(set(A) & set(B)):
        a, b = A[name].astype(np.float64), B[name].astype(np.float64)
        if a.shape != b.shape:
            bad.append("%s: shape %s vs %s" % (name, a.shape, b.shape))
            continue
        d, p = np.abs(a - b), np.maximum(np.abs(a), np.abs(b))
        if args.bf16:  # one bf16 ulp: masters a little apart may round to neighbours
            d = np.maximum(d - bf16_ulp(np.maximum(np.abs(a), np.abs(b))), 0.0)
        if name.endswith("attn.c_attn.bias"):  # HF layout (3C,): [q | k | v]
            C = a.shape[0] // 3
            kd, d = d[C:2 * C], np.concatenate([d[:C], d[2 * C:]])
            p = np.concatenate([p[:C], p[2 * C:]])
            if kd.max() > 2 * args.steps * args.lr:
                bad.append("%s (key part): max diff %.3g > %.3g" % (name, kd.max(), 2 * args.steps * args.lr))
        m = float(d.max()) if d.size else 0.0
        if m / bound > worst[0]:
            worst = (m / bound, name)
        if args.bf16:
            bad += check_travel_share(name, d, p, bound, args, args.steps * BF16_SIGN,
                                      "signs bf16 roundings decide")
        elif args.adamw8bit and d.size >= args.min_8bit:  # 8-bit state
            bad += check_travel_share(name, d, p, bound, args, flip_fraction(args.steps),
                                      "8-bit one-code flips")
        elif m > bound:
            bad.append("%s: max diff %.3g > bound %.3g" % (name, m, bound))
    print("parameters: worst max|diff| / bound = %.4f (%s), bound %.3g" % (worst[0], worst[1], bound))
    if args.log_a:
        la, lb = losses(args.log_a), losses(args.log_b)
        if len(la) != len(lb) or len(la) != args.steps:
            bad.append("step counts differ: %d vs %d (expected %d)" % (len(la), len(lb), args.steps))
        for i, (x, y) in enumerate(zip(la, lb)):
            if abs(x - y) > loss_rtol * abs(y):
                bad.append("step %d loss %.7f vs %.7f" % (i + 1, x, y))
        print("losses: max rel diff %.3g over %d steps" % (max(abs(x - y) / abs(y) for x, y in zip(la, lb)), len(la)))
        va, vb = losses(args.log_a, "val_loss"), losses(args.log_b, "val_loss")
        if len(va) != len(vb) or any(abs(x - y) > loss_rtol * abs(y) for x, y in zip(va, vb)):
            bad.append("validation losses differ: %s vs %s" % (va, vb))
    for b in bad:
        print("MISMATCH", b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
