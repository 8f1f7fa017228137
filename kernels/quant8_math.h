// Block-wise dynamic 8-bit quantization (Dettmers et al. 2021, "8-bit Optimizers via
// Block-wise Quantization"): the two dynamic maps and the quantize / dequantize of one
// value against its block's absmax. Plain C, host and device (ZT_HD).
//
// The maps follow bitsandbytes' create_dynamic_map(signed=True/False) with its defaults
// max_exponent_bits=7, total_bits=8 (bitsandbytes/functional.py; the optimizer fills
// qmap1 = create_dynamic_map(signed=True) for the first moment and qmap2 =
// create_dynamic_map(signed=False) for the second, bitsandbytes/optim/optimizer.py
// fill_qmap). Dynamic tree quantization writes a value as sign, then E zero bits (the
// decade 10^-E, E = 0..6), an indicator 1 bit, then F linear fraction bits over
// [0.1, 1]; each of the 2^F fractions is the middle of its bin. The unsigned map
// spends the sign bit on one more fraction bit. Two extra codes hold 0 and 1 in the signed
// map; the unsigned map has no 0 (below).
//
//   signed:   decade 10^-E holds 2^(6-E) values (64, 32, ..., 1) on each side of 0,
//             127 + 127 + {0, 1} = 256 codes, from -0.99296875 up to +1.
//   unsigned: decade 10^-E holds 2^(7-E) values (128, 64, ..., 2), 254 + {ZT_Q8_V_FLOOR,
//             1} = 256 codes in [0.55e-7, 1].
//
// The unsigned map is the second moment's, and it has no zero code (issue 41; the
// "zero-point problem" of Li, Chen and Zhu, "Memory Efficient Optimizers with 4-bit
// States", NeurIPS 2023, whose second-moment maps exclude zero). With bitsandbytes' map,
// v below half its smallest code (1.6e-7 of the block's absmax: a gradient under ~4e-4 of
// the block's largest in a first step; under a long-running largest, ~1.8e-3 at beta2 0.95
// and ~1.3e-2 at 0.999) was
// stored as 0 while m, whose map reaches 2.75e-7, was not, and the next update was
// lr m / eps: hundreds of lr from a gradient that is rounding noise. Where bitsandbytes
// kept 0 we keep ZT_Q8_V_FLOOR, the one value the tree's formula gives for the next decade
// (E = 7: the middle of [0.1, 1] x 1e-7), so a stored v is never below 5.5e-8 of its
// block's absmax and never below its true value by more than the factor
// (map[0] + map[1]) / (2 map[0]) = 3.45 (sqrt 1.86): with a stored m at most twice its
// value, the update can exceed fp32 AdamW's by 2 x 1.86 = 3.7 at most, never by m / eps. v that is truly 0 is stored as the floor too; its
// m is then 0 (the signed map keeps 0) and the update 0 / sqrt(floor) = 0. docs/design.md,
// "8-bit AdamW's second moment", has the measurements that chose this design.
//
// The signed map is therefore not symmetric at its ends: +1 has a code, -1 does not (its
// nearest code, -0.99296875, is exactly half a top-decade gap away, so the rounding
// bound below still holds). Everything else is mirrored: map[127 + k] = -map[127 - k].
#ifndef ZT_QUANT8_MATH_H
#define ZT_QUANT8_MATH_H
#include <stdint.h>

#include "zt_hd.h"

#define ZT_Q8_CODES 256
#define ZT_Q8_DECADES 7 // bitsandbytes' max_exponent_bits: values down to ~1e-7
// The unsigned (second-moment) map's smallest code, where bitsandbytes' map has 0:
// 10^-7 (0.1 + 0.9 / 2), rounded once to float.
#define ZT_Q8_V_FLOOR 5.5e-8f
// The largest block of values sharing one absmax (bitsandbytes' largest blockwise size):
// a kernel may hold one block's values in fp32 on its stack.
#define ZT_Q8_MAX_BLOCK 4096

// Fills map[256] in ascending order: the signed map (is_signed) for the first moment or
// the unsigned one for the second. The entries are generated in ascending order (each
// decade lies strictly inside (10^-(E+1), 10^-E)), so no sort is needed. Computed in
// double and rounded once to float: bitsandbytes computes the fractions with a float32
// torch.linspace, so about half of its entries differ from these by 1-2 float ulps
// (relative 1.5e-7 at most; checked against a NumPy transcription of its function).
static inline ZT_HD void zt_q8_make_map(float map[ZT_Q8_CODES], int is_signed) {
    int k = 0;
    // fraction bits per decade: signed 6 - E, unsigned 7 - E (the sign bit reused)
    int extra = is_signed ? 0 : 1;
    if (is_signed) { // negatives, largest magnitude first
        for (int E = 0; E < ZT_Q8_DECADES; E++) {
            double scale = 1.0;
            for (int i = 0; i < E; i++) scale *= 10.0; // exact: 10^E < 2^53
            int n = 1 << (ZT_Q8_DECADES - 1 - E);
            for (int j = n - 1; j >= 0; j--)
                map[k++] = (float)(-(0.1 + 0.9 * (2.0 * j + 1.0) / (2.0 * n)) / scale);
        }
    }
    map[k++] = is_signed ? 0.0f : ZT_Q8_V_FLOOR; // no zero code for v (above)
    for (int E = ZT_Q8_DECADES - 1; E >= 0; E--) { // positives, smallest first
        double scale = 1.0;
        for (int i = 0; i < E; i++) scale *= 10.0;
        int n = 1 << (ZT_Q8_DECADES - 1 - E + extra);
        for (int j = 0; j < n; j++)
            map[k++] = (float)((0.1 + 0.9 * (2.0 * j + 1.0) / (2.0 * n)) / scale);
    }
    map[k++] = 1.0f;
}

// The code of the map entry nearest to r (r normally in [-1, 1]; outside, the end codes).
// Binary search over the sorted map, then an exact comparison with the midpoint of the
// two bracketing entries: neighbouring entries are floats of one sign within a factor of
// 6 of each other (or one is 0), so their sum and half are exact in double and the
// decision is exact. A tie (r exactly on a midpoint) goes to the entry of smaller
// magnitude (toward zero), so quantization commutes with negation wherever the map is
// mirrored.
// NaN gives code 0 (the caller keeps NaN out: the trainer skips non-finite steps).
// Nearest rounding never flips a sign (0 is a signed code; the unsigned map holds only
// v >= 0, whose values under ZT_Q8_V_FLOOR round up to it). bitsandbytes' kernel also moves a
// negative m that rounds to 0 onto the smallest negative code (its quantize_2D is not
// exact-nearest and it guards the sign); we keep plain nearest, symmetric in sign.
static inline ZT_HD uint8_t zt_q8_nearest(const float *map, float r) {
    if (!(r > map[0])) return 0;
    if (r >= map[ZT_Q8_CODES - 1]) return ZT_Q8_CODES - 1;
    int lo = 0, hi = ZT_Q8_CODES - 1; // invariant: map[lo] <= r < map[hi]
    while (hi - lo > 1) {
        int mid = (lo + hi) >> 1;
        if (map[mid] <= r)
            lo = mid;
        else
            hi = mid;
    }
    double m = 0.5 * ((double)map[lo] + (double)map[hi]);
    double x = (double)r;
    if (x < m) return (uint8_t)lo;
    if (x > m) return (uint8_t)hi;
    return (uint8_t)(fabsf(map[lo]) <= fabsf(map[hi]) ? lo : hi);
}

// Code of x in a block whose absmax (max |value|, >= |x|) is `absmax`: x / absmax (IEEE
// division, not a reciprocal multiply, so an independent reference reproduces it; nvcc
// keeps `/` IEEE unless -use_fast_math or -prec-div=false, which docs/design.md's coding rules rule out),
// then the nearest entry. absmax == 0 (an all-zero block) gives the code of 0 (unsigned:
// ZT_Q8_V_FLOOR's code, which dequantizes to 0 x 0 = 0 there).
static inline ZT_HD uint8_t zt_q8_quantize(const float *map, float x, float absmax) {
    float r = absmax > 0.0f ? x / absmax : 0.0f;
    return zt_q8_nearest(map, r);
}

static inline ZT_HD float zt_q8_dequantize(const float *map, uint8_t q, float absmax) {
    return map[q] * absmax;
}

// Rounding bound: with r = fl(x / A), q = zt_q8_quantize(map, x, A), h the half gap of the
// two map entries bracketing r (for signed r in [-1, map[0]) the distance to map[0] is at
// most 1 + map[0] = 0.00703125, which is the first half gap), and u = 2^-24 the float unit
// roundoff:
//   |x/A - r| <= u |r| <= u;  |r - map[q]| <= h;  |fl(map[q] A) - map[q] A| <= u A + 2^-150
//   => |zt_q8_dequantize(q) - x| <= A (h + 2u) + 2^-150   (the 2^-150: a subnormal product;
//      a quotient that underflows errs by at most 2^-150 A, far below A h >= 1.6e-7 A).
// h is at most 0.00703 (signed, top decade: 0.9/64/2) and 0.00352 (unsigned: 0.9/128/2),
// so the state error is below 0.71% (m) and 0.36% (v) of the block's absmax. (Unsigned r
// below ZT_Q8_V_FLOOR is at most 5.5e-8 from it, under the first half gap 1.35e-7.)
// Relative to the value itself the error is largest at the bottom of each map: a stored m
// is at most twice its true value (0.55e-6 holds values from 0.275e-6), a stored v at least
// 1/3.45 of its true value (above); tests/compare_models.py builds its 8-bit bounds on these.
#endif
