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

// ---- bf16: zt_gelu_forward's and zt_gelu_backward's blocks on the widened input (exact),
// rounded once where the output is bf16: its values bit for bit. A whole block is one vector
// pass, widening and rounding in the same loop as the 16-wide tanhf (through copies on the
// stack, and a memcpy per block in the backward, both ran 1.9x slower than the fp32 ops); the
// tail goes through a zero-padded block, as there.

static inline void gelu_block_bf16(zt_bf16 *out, const zt_bf16 *inp) {
#pragma omp simd
    for (int k = 0; k < ZT_GELU_BLOCK; k++)
        out[k] = zt_bf16_from_fp32(zt_gelu(zt_bf16_to_fp32(inp[k])));
}

// dinp fp32 (it may be dout: each element reads its dout before it writes) or bf16 (dt).
static inline void gelu_grad_block_bf16(void *dinp, zt_dtype dt, const zt_bf16 *inp,
                                        const float *dout) {
    if (dt == ZT_BF16) {
        zt_bf16 *o = dinp;
#pragma omp simd
        for (int k = 0; k < ZT_GELU_BLOCK; k++)
            o[k] = zt_bf16_from_fp32(zt_gelu_grad(zt_bf16_to_fp32(inp[k])) * dout[k]);
    } else {
        float *o = dinp;
#pragma omp simd
        for (int k = 0; k < ZT_GELU_BLOCK; k++)
            o[k] = zt_gelu_grad(zt_bf16_to_fp32(inp[k])) * dout[k];
    }
}

void zt_gelu_forward_bf16(zt_bf16 *out, const zt_bf16 *inp, size_t n) {
    size_t nb = n / ZT_GELU_BLOCK, i = nb * ZT_GELU_BLOCK;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < nb; b++)
        gelu_block_bf16(out + b * ZT_GELU_BLOCK, inp + b * ZT_GELU_BLOCK);
    if (i < n) {
        zt_bf16 x[ZT_GELU_BLOCK] = {0}, o[ZT_GELU_BLOCK];
        memcpy(x, inp + i, (n - i) * sizeof *x);
        gelu_block_bf16(o, x);
        memcpy(out + i, o, (n - i) * sizeof *o);
    }
}

void zt_gelu_backward_bf16(void *dinp, zt_dtype dinp_dt, const zt_bf16 *inp, const float *dout,
                           size_t n) {
    size_t nb = n / ZT_GELU_BLOCK, i = nb * ZT_GELU_BLOCK, es = zt_dtype_size(dinp_dt);
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < nb; b++)
        gelu_grad_block_bf16((char *)dinp + b * ZT_GELU_BLOCK * es, dinp_dt,
                             inp + b * ZT_GELU_BLOCK, dout + b * ZT_GELU_BLOCK);
    if (i < n) {
        zt_bf16 x[ZT_GELU_BLOCK] = {0};
        float d[ZT_GELU_BLOCK] = {0}, o[ZT_GELU_BLOCK]; // o: room for either type
        memcpy(x, inp + i, (n - i) * sizeof *x);
        memcpy(d, dout + i, (n - i) * sizeof *d);
        gelu_grad_block_bf16(o, dinp_dt, x, d);
        memcpy((char *)dinp + i * es, o, (n - i) * es);
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
