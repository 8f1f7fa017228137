// Row softmax pieces for the CPU kernels (attention, cross entropy): the math of
// softmax_math.h with expf vectorized through glibc's libmvec. Scalar glibc expf costs
// ~5 ns; the vector one ~1 ns per element (2-core AMD EPYC, AVX2), and the loss alone
// takes 2 * B*T*V of them per step.
//
// Rows go in blocks of ZT_VBLOCK floats and a short tail through a padded block, so
// every element takes the same vector expf whatever the row length, its offset or the
// thread count: results stay bit-identical across thread counts.
#include <math.h>
#include <string.h>

#include "kernels.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
// glibc's <math.h> declares the libmvec variants (_ZGV*_expf) only under -ffast-math,
// which we never use (it would change more than expf); this declaration lets
// `omp simd` loops call them. libmvec's expf is within 4 ulp (glibc's libm-test-ulps;
// measured: 3 ulp from scalar expf, 2.2e-7 relative from exp in double).
__attribute__((__simd__("notinbranch"))) float expf(float);
#endif

#define ZT_VBLOCK 16

float zt_cpu_row_max(const float *x, int n) {
    float mb[ZT_VBLOCK];
    for (int k = 0; k < ZT_VBLOCK; k++) mb[k] = -INFINITY;
    int i = 0;
    for (; i + ZT_VBLOCK <= n; i += ZT_VBLOCK)
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) mb[k] = x[i + k] > mb[k] ? x[i + k] : mb[k];
    float m = -INFINITY;
    for (int k = 0; k < ZT_VBLOCK; k++) m = mb[k] > m ? mb[k] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m; // max is exact in any order
    return m;
}

float zt_cpu_row_sumexp(const float *x, int n, float m) {
    float acc[ZT_VBLOCK] = {0};
    int i = 0;
    for (; i + ZT_VBLOCK <= n; i += ZT_VBLOCK)
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) acc[k] += expf(x[i + k] - m);
    if (i < n) {
        float t[ZT_VBLOCK];
        for (int k = 0; k < ZT_VBLOCK; k++) t[k] = i + k < n ? x[i + k] : -INFINITY; // exp -> 0
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) acc[k] += expf(t[k] - m);
    }
    float s = 0.0f;
    for (int k = 0; k < ZT_VBLOCK; k++) s += acc[k]; // fixed order: deterministic
    return s;
}

void zt_cpu_row_exp(float *out, const float *x, float sub, int n) {
    int i = 0;
    for (; i + ZT_VBLOCK <= n; i += ZT_VBLOCK)
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) out[i + k] = expf(x[i + k] - sub);
    if (i < n) {
        float t[ZT_VBLOCK] = {0}, o[ZT_VBLOCK];
        memcpy(t, x + i, (size_t)(n - i) * sizeof(float));
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) o[k] = expf(t[k] - sub);
        memcpy(out + i, o, (size_t)(n - i) * sizeof(float));
    }
}

// ---- bf16 rows: each block widened into w first, then the fp32 functions' own loops on w,
// so every element takes the same vector expf as there (bit-identical on widened rows).

// Block i's values widened into w, `pad` past n. A whole block (all but a row's tail) in a
// loop of fixed length, which the compiler makes one vector pass (the loss's bf16 passes ran
// 2-4x slower than their fp32 ones with the per-element test).
static inline void widen_block(float w[ZT_VBLOCK], const zt_bf16 *x, int i, int n, float pad) {
    if (i + ZT_VBLOCK <= n) {
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) w[k] = zt_bf16_to_fp32(x[i + k]);
        return;
    }
    for (int k = 0; k < ZT_VBLOCK; k++) w[k] = i + k < n ? zt_bf16_to_fp32(x[i + k]) : pad;
}

float zt_cpu_row_max_bf16(const zt_bf16 *x, int n) {
    float mb[ZT_VBLOCK], w[ZT_VBLOCK], m = -INFINITY;
    for (int k = 0; k < ZT_VBLOCK; k++) mb[k] = -INFINITY;
    for (int i = 0; i < n; i += ZT_VBLOCK) { // max is exact in any order
        widen_block(w, x, i, n, -INFINITY);
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) mb[k] = w[k] > mb[k] ? w[k] : mb[k];
    }
    for (int k = 0; k < ZT_VBLOCK; k++) m = mb[k] > m ? mb[k] : m;
    return m;
}

float zt_cpu_row_sumexp_bf16(const zt_bf16 *x, int n, float m) {
    float acc[ZT_VBLOCK] = {0}, w[ZT_VBLOCK];
    int i = 0;
    for (; i + ZT_VBLOCK <= n; i += ZT_VBLOCK)
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) acc[k] += expf(zt_bf16_to_fp32(x[i + k]) - m);
    if (i < n) {
        widen_block(w, x, i, n, -INFINITY); // exp -> 0 past n, as the fp32 tail
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) acc[k] += expf(w[k] - m);
    }
    float s = 0.0f;
    for (int k = 0; k < ZT_VBLOCK; k++) s += acc[k]; // zt_cpu_row_sumexp's order
    return s;
}

// zt_ce_slice_finish's element arithmetic: e = expf(x - lse), e - 1 at the target, times scale.
// Chunks of ZT_CE_CHUNK values: widened in one vector loop, the blocks' expf, then the target
// and scale and the rounding in loops over the chunk (GPT-2's 256 x 50304 logits on 2
// threads: 4.6 -> 3.2 ms, fp32's pass 4.4; per block, the widening and rounding around each
// expf call). The last block is padded with zeros, as zt_cpu_row_exp's tail.
#define ZT_CE_CHUNK 256
void zt_cpu_row_ce_grad_bf16(zt_bf16 *out, const zt_bf16 *x, float lse, int target, float scale,
                             int n) {
    float w[ZT_CE_CHUNK], e[ZT_CE_CHUNK];
    for (int i0 = 0; i0 < n; i0 += ZT_CE_CHUNK) {
        int m = n - i0 < ZT_CE_CHUNK ? n - i0 : ZT_CE_CHUNK;
        int padded = (m + ZT_VBLOCK - 1) / ZT_VBLOCK * ZT_VBLOCK;
        zt_bf16_to_fp32_row(w, x + i0, m);
        for (int k = m; k < padded; k++) w[k] = 0.0f;
        for (int b = 0; b < padded; b += ZT_VBLOCK)
#pragma omp simd
            for (int k = 0; k < ZT_VBLOCK; k++) e[b + k] = expf(w[b + k] - lse);
        // e - 0 is e exactly (e >= +0 or NaN): the target's e - 1 without a branch
#pragma omp simd
        for (int k = 0; k < m; k++)
            out[i0 + k] = zt_bf16_from_fp32((e[k] - (i0 + k == target ? 1.0f : 0.0f)) * scale);
    }
}
