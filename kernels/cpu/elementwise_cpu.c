// Elementwise kernels: GELU, residual add, accumulate.
#include <math.h>
#include <string.h>

#include "kernels.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
// Lets `omp simd` loops call glibc's libmvec tanhf (_ZGV*_tanhf, glibc >= 2.35): ~1.5 ns
// instead of ~28 ns per element for scalar tanhf, which made GELU forward + backward
// ~15% of a B=4 x T=64 step. Within 2 ulp of scalar tanhf (measured; 6.6e-8 relative
// from tanh in double). <math.h> declares it only under -ffast-math, which we never use.
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)
__attribute__((__simd__("notinbranch"))) float tanhf(float);
#endif
#endif
#include "gelu_math.h"

// GELU in blocks of ZT_GELU_BLOCK elements, the tail through a padded block: every
// element takes the same (vector) tanhf whatever n or the thread count, so results are
// bit-identical across thread counts.
#define ZT_GELU_BLOCK 16

static inline void gelu_block(float *out, const float *inp) {
#pragma omp simd
    for (int k = 0; k < ZT_GELU_BLOCK; k++) out[k] = zt_gelu(inp[k]);
}

// dinp may equal dout.
static inline void gelu_grad_block(float *dinp, const float *inp, const float *dout) {
#pragma omp simd
    for (int k = 0; k < ZT_GELU_BLOCK; k++) dinp[k] = zt_gelu_grad(inp[k]) * dout[k];
}

void zt_gelu_forward(float *out, const float *inp, size_t n) {
    size_t nb = n / ZT_GELU_BLOCK, i = nb * ZT_GELU_BLOCK;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < nb; b++)
        gelu_block(out + b * ZT_GELU_BLOCK, inp + b * ZT_GELU_BLOCK);
    if (i < n) {
        float x[ZT_GELU_BLOCK] = {0}, o[ZT_GELU_BLOCK];
        memcpy(x, inp + i, (n - i) * sizeof(float));
        gelu_block(o, x);
        memcpy(out + i, o, (n - i) * sizeof(float));
    }
}

// Block b's m <= ZT_GELU_BLOCK bf16 inputs widened into x, zeros past m (exact). A whole
// block (all but a tail) in a loop of fixed length, which the compiler makes one vector pass.
static inline size_t widen_block(float x[ZT_GELU_BLOCK], const zt_bf16 *inp, size_t n, size_t b) {
    size_t i = b * ZT_GELU_BLOCK, m = n - i < ZT_GELU_BLOCK ? n - i : ZT_GELU_BLOCK;
    if (m == ZT_GELU_BLOCK) {
#pragma omp simd
        for (int k = 0; k < ZT_GELU_BLOCK; k++) x[k] = zt_bf16_to_fp32(inp[i + k]);
        return m;
    }
    for (size_t k = 0; k < ZT_GELU_BLOCK; k++) x[k] = k < m ? zt_bf16_to_fp32(inp[i + k]) : 0.0f;
    return m;
}

// A block's first m results rounded into out (a whole block: one vector pass).
static inline void round_block(zt_bf16 *out, const float o[ZT_GELU_BLOCK], size_t m) {
    if (m == ZT_GELU_BLOCK) {
#pragma omp simd
        for (int k = 0; k < ZT_GELU_BLOCK; k++) out[k] = zt_bf16_from_fp32(o[k]);
        return;
    }
    for (size_t k = 0; k < m; k++) out[k] = zt_bf16_from_fp32(o[k]);
}

// Blocks widened, computed as zt_gelu_forward's and rounded: its values on the widened input.
void zt_gelu_forward_bf16(zt_bf16 *out, const zt_bf16 *inp, size_t n) {
    size_t nb = (n + ZT_GELU_BLOCK - 1) / ZT_GELU_BLOCK;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < nb; b++) {
        float x[ZT_GELU_BLOCK], o[ZT_GELU_BLOCK];
        size_t m = widen_block(x, inp, n, b), i = b * ZT_GELU_BLOCK;
        gelu_block(o, x);
        round_block(out + i, o, m);
    }
}

// zt_gelu_backward's blocks on the widened input; an fp32 dinp may be dout (each block reads
// its dout before it writes), a bf16 one is rounded once.
void zt_gelu_backward_bf16(void *dinp, zt_dtype dinp_dt, const zt_bf16 *inp, const float *dout,
                           size_t n) {
    size_t nb = (n + ZT_GELU_BLOCK - 1) / ZT_GELU_BLOCK;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < nb; b++) {
        float x[ZT_GELU_BLOCK], d[ZT_GELU_BLOCK] = {0}, o[ZT_GELU_BLOCK];
        size_t m = widen_block(x, inp, n, b), i = b * ZT_GELU_BLOCK;
        memcpy(d, dout + i, m * sizeof(float));
        gelu_grad_block(o, x, d);
        if (dinp_dt == ZT_BF16)
            round_block((zt_bf16 *)dinp + i, o, m);
        else
            memcpy((float *)dinp + i, o, m * sizeof(float));
    }
}

void zt_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
    size_t nb = n / ZT_GELU_BLOCK, i = nb * ZT_GELU_BLOCK;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < nb; b++)
        gelu_grad_block(dinp + b * ZT_GELU_BLOCK, inp + b * ZT_GELU_BLOCK,
                        dout + b * ZT_GELU_BLOCK);
    if (i < n) {
        float x[ZT_GELU_BLOCK] = {0}, d[ZT_GELU_BLOCK] = {0}, o[ZT_GELU_BLOCK];
        memcpy(x, inp + i, (n - i) * sizeof(float));
        memcpy(d, dout + i, (n - i) * sizeof(float));
        gelu_grad_block(o, x, d);
        memcpy(dinp + i, o, (n - i) * sizeof(float));
    }
}

void zt_matmul_gelu_forward(float *pre, float *out, const float *inp, const float *w,
                            const float *bias, int N, int C, int OC) {
    zt_matmul_forward(pre, inp, w, bias, N, C, OC);
    zt_gelu_forward(out, pre, (size_t)N * OC);
}

void zt_add(float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void zt_accumulate(float *y, const float *x, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}
