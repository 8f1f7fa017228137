// bfloat16 <-> fp32 conversion (bf16: the top 16 bits of an fp32), shared by CPU and GPU code.
#ifndef ZT_BF16_MATH_H
#define ZT_BF16_MATH_H
#include <stdint.h>
#include <string.h>

#include "zt_hd.h"

// A bf16 value by its bits: sign, 8 exponent bits (fp32's), 7 mantissa bits.
typedef uint16_t zt_bf16;

// fp32 -> bf16, round to nearest, ties to even (IEEE 754's default, as PyTorch and the GPU
// do). On the bits: add 0x7fff plus the lowest kept bit, then truncate; the carry runs into
// the exponent where it must, so the largest values round to Inf exactly as RNE with an
// unbounded exponent says (from 0x7f7f8000 up), and Inf stays Inf. A NaN would carry into
// the sign or become Inf, so it is kept by truncation with the quiet bit set (sign kept).
static inline ZT_HD zt_bf16 zt_bf16_from_fp32(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t nan = (u >> 16) | 0x0040u;
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (zt_bf16)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// bf16 -> fp32: exact (every bf16 is an fp32).
static inline ZT_HD float zt_bf16_to_fp32(zt_bf16 b) {
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#endif
