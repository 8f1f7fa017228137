// Tests of bf16: the conversions (kernels/bf16_math.h, kernels/cpu/bf16_cpu.c) against
// references built another way (field decoding, double arithmetic).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "test.h"

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float float_of(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static int bf16_is_nan(zt_bf16 b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// A bf16's value from its fields, in double: (-1)^s * 2^(e-127) * (1 + m/128), subnormal
// 2^-126 * m/128. unbounded: exponent field 255 with m = 0 is 2^128 (the value RNE compares
// with before it overflows) instead of Inf.
static double bf16_value(zt_bf16 b, int unbounded) {
    int s = b >> 15, e = (b >> 7) & 0xff, m = b & 0x7f;
    double v;
    if (e == 0) v = ldexp(m, -133);
    else if (e == 255 && !unbounded) v = m ? NAN : INFINITY;
    else v = ldexp(128 + m, e - 134);
    return s ? -v : v;
}

// Every bf16: the decode is the field value exactly (NaNs NaN, sign kept), and encoding the
// decoded value gives the same bits back; NaNs come back quiet with their sign (a quiet
// NaN's payload too).
ZT_TEST(bf16_decode_all) {
    for (uint32_t i = 0; i < 65536; i++) {
        zt_bf16 b = (zt_bf16)i;
        float x = zt_bf16_to_fp32(b);
        if (bf16_is_nan(b)) {
            CHECK(isnan(x));
            CHECK_EQ_INT(!!signbit(x), b >> 15);
            zt_bf16 r = zt_bf16_from_fp32(x);
            CHECK(bf16_is_nan(r) && (r & 0x0040) && (r >> 15) == (b >> 15));
            if (b & 0x0040) CHECK_EQ_INT(r, b);
            continue;
        }
        if ((double)x != bf16_value(b, 0) || !!signbit(x) != (b >> 15)) {
            fprintf(stderr, "  bf16 0x%04x decodes to %.9g, fields say %.9g\n", i, x,
                    bf16_value(b, 0));
            return ZT_FAIL;
        }
        CHECK_EQ_INT(zt_bf16_from_fp32(x), b);
    }
    return ZT_PASS;
}

// Hand-made cases: ties to even, just above and below halfway, carries into the exponent,
// signed zeros, subnormals, the largest finite value, overflow, Inf, NaNs.
ZT_TEST(bf16_round_crafted) {
    static const struct {
        uint32_t in;
        zt_bf16 want;
        const char *what;
    } t[] = {
        {0x3f800000, 0x3f80, "1.0 exact"},
        {0x3f808000, 0x3f80, "1 + 2^-8: tie, down to the even 1.0"},
        {0x3f808001, 0x3f81, "just above the tie: up"},
        {0x3f807fff, 0x3f80, "just below the tie: down"},
        {0x3f818000, 0x3f82, "1 + 3*2^-8: tie, up to the even 1 + 2^-6"},
        {0x3f817fff, 0x3f81, "just below that tie: down"},
        {0xbf808000, 0xbf80, "-(1 + 2^-8): tie, to the even -1.0"},
        {0xbf818000, 0xbf82, "-(1 + 3*2^-8): tie, to the even"},
        {0x3fff8000, 0x4000, "tie below 2.0 with an odd mantissa: carries into the exponent"},
        {0x3fff7fff, 0x3fff, "just below that tie"},
        {0x00000000, 0x0000, "+0"},
        {0x80000000, 0x8000, "-0"},
        {0x00000001, 0x0000, "smallest fp32 subnormal: to +0"},
        {0x80000001, 0x8000, "its negative: to -0"},
        {0x00008000, 0x0000, "half the smallest bf16 subnormal: tie, to the even 0"},
        {0x00008001, 0x0001, "just above: the smallest bf16 subnormal"},
        {0x00010000, 0x0001, "the smallest bf16 subnormal, exact"},
        {0x00018000, 0x0002, "tie between subnormals 1 and 2: the even 2"},
        {0x007f8000, 0x0080, "tie between the largest subnormal and the smallest normal"},
        {0x807fffff, 0x8080, "largest negative fp32 subnormal: up to the smallest normal"},
        {0x7f7f0000, 0x7f7f, "largest finite bf16, exact"},
        {0x7f7f7fff, 0x7f7f, "just below halfway to 2^128: stays finite"},
        {0x7f7f8000, 0x7f80, "halfway to 2^128: tie, to the even 2^128, i.e. Inf"},
        {0x7f7fffff, 0x7f80, "FLT_MAX: overflows to Inf"},
        {0xff7fffff, 0xff80, "-FLT_MAX: to -Inf"},
        {0x7f800000, 0x7f80, "Inf"},
        {0xff800000, 0xff80, "-Inf"},
        {0x7fc00000, 0x7fc0, "quiet NaN"},
        {0xffc00000, 0xffc0, "negative quiet NaN"},
        {0x7f800001, 0x7fc0, "signalling NaN, payload only in the dropped bits: quiet NaN"},
        {0xff800001, 0xffc0, "negative signalling NaN: negative quiet NaN"},
        {0x7f80ffff, 0x7fc0, "NaN that plain rounding would carry toward Inf"},
        {0x7fffffff, 0x7fff, "NaN that plain rounding would carry into the sign"},
        {0x7fa00000, 0x7fe0, "signalling NaN with a payload: quieted, payload kept"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        zt_bf16 got = zt_bf16_from_fp32(float_of(t[i].in));
        if (got != t[i].want) {
            fprintf(stderr, "  0x%08x (%s): got 0x%04x, want 0x%04x\n", t[i].in, t[i].what, got,
                    t[i].want);
            return ZT_FAIL;
        }
    }
    return ZT_PASS;
}

// RNE by value comparison in double: the two bf16 neighbours of |x| (truncation, and the
// next magnitude, 2^128 past the largest finite), the nearer wins, a tie goes to the even
// mantissa. Exact: x and both neighbours are multiples of x's ulp within 2^26 of it.
static zt_bf16 reference_round(uint32_t u) {
    zt_bf16 lo = (zt_bf16)(u >> 16), hi = (zt_bf16)(lo + 1);
    double ax = fabs((double)float_of(u));
    if (isinf(ax)) return lo;
    double below = ax - fabs(bf16_value(lo, 1)), above = fabs(bf16_value(hi, 1)) - ax;
    if (below < above) return lo;
    if (above < below) return hi;
    return (lo & 1) ? hi : lo;
}

// ~1e6 fp32 values: random bit patterns (every exponent, subnormals, Inf, NaN), values made
// to sit at or next to a tie, and values near 1; against reference_round (NaNs: quiet NaN,
// sign kept).
ZT_TEST(bf16_round_random) {
    uint64_t s = 12345;
    long n = 1000000, ties = 0;
    for (long i = 0; i < n; i++) {
        uint32_t u = (uint32_t)splitmix(&s);
        if (i % 4 == 1) u = (u & 0xffff0000u) | 0x8000u;                   // a tie
        if (i % 4 == 2) u = (u & 0xffff0000u) | (0x7fffu + (u >> 16) % 3); // beside one
        if (i % 4 == 3) u = 0x3f000000u | (u & 0x80ffffffu);               // [0.5, 2)
        zt_bf16 got = zt_bf16_from_fp32(float_of(u));
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            CHECK(bf16_is_nan(got) && (got & 0x0040) && (got >> 15) == (u >> 31));
            continue;
        }
        ties += (u & 0xffffu) == 0x8000u;
        zt_bf16 want = reference_round(u);
        if (got != want) {
            fprintf(stderr, "  0x%08x (%.9g): got 0x%04x, want 0x%04x\n", u, float_of(u), got,
                    want);
            return ZT_FAIL;
        }
    }
    printf("  %ld values, %ld exact ties\n", n, ties);
    CHECK(ties >= n / 5); // the tie cases above did run
    return ZT_PASS;
}

// The bulk conversions equal the scalar ones bit for bit (odd lengths for the vector
// tails, large enough to run on all threads), and the matrix form keeps out of the padding.
ZT_TEST(bf16_arrays) {
    size_t n = 3 * 65536 + 5;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    zt_bf16 *b = malloc(n * sizeof *b);
    uint64_t s = 7;
    for (size_t i = 0; i < n; i++) x[i] = float_of((uint32_t)splitmix(&s));
    zt_bf16_from_fp32_array(b, x, n);
    zt_bf16_to_fp32_array(y, b, n);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_INT(b[i], zt_bf16_from_fp32(x[i]));
        CHECK_EQ_INT(bits_of(y[i]), bits_of(zt_bf16_to_fp32(b[i])));
    }
    int rows = 300, cols = 257, ld_in = 260, ld_out = 263;
    for (size_t i = 0; i < (size_t)rows * ld_out; i++) y[i] = -7.0f; // padding sentinel
    zt_bf16_to_fp32_matrix(y, ld_out, b, ld_in, rows, cols);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ld_out; c++) {
            float want = c < cols ? zt_bf16_to_fp32(b[(size_t)r * ld_in + c]) : -7.0f;
            CHECK_EQ_INT(bits_of(y[(size_t)r * ld_out + c]), bits_of(want));
        }
    free(x), free(y), free(b);
    return ZT_PASS;
}

