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
// rounded once where the output is bf16: its values bit for bit. A thread takes chunks of
// ZT_GELU_CHUNK values: widened in one vector loop, the fp32 blocks over them, rounded in
// another (GPT-2 124M's c_fc at 256 tokens, 2 threads: forward 378 -> 256 us, backward into
// bf16 464 -> 315; fp32's 203 and 258. Widening and rounding in each block's own loop, around
// the tanhf call, was 355 and 410). The last chunk's last block is padded with zeros, as
// there.
#define ZT_GELU_CHUNK 256

static inline void widen_chunk(float *x, const zt_bf16 *inp, size_t m) {
    size_t padded = (m + ZT_GELU_BLOCK - 1) / ZT_GELU_BLOCK * ZT_GELU_BLOCK;
    zt_bf16_to_fp32_row(x, inp, (int)m);
    for (size_t k = m; k < padded; k++) x[k] = 0.0f;
}

// m <= ZT_GELU_CHUNK values.
static inline void gelu_chunk_bf16(zt_bf16 *out, const zt_bf16 *inp, size_t m) {
    float x[ZT_GELU_CHUNK], o[ZT_GELU_CHUNK];
    widen_chunk(x, inp, m);
    for (size_t b = 0; b < m; b += ZT_GELU_BLOCK) gelu_block(o + b, x + b);
    zt_bf16_from_fp32_row(out, o, (int)m);
}

// m <= ZT_GELU_CHUNK values; dinp fp32 (it may be dout: the chunk reads all of its dout
// before it writes) or bf16 (dt).
static inline void gelu_grad_chunk_bf16(void *dinp, zt_dtype dt, const zt_bf16 *inp,
                                        const float *dout, size_t m) {
    float x[ZT_GELU_CHUNK], o[ZT_GELU_CHUNK], d[ZT_GELU_BLOCK] = {0};
    size_t full = m / ZT_GELU_BLOCK * ZT_GELU_BLOCK;
    widen_chunk(x, inp, m);
    for (size_t b = 0; b < full; b += ZT_GELU_BLOCK) gelu_grad_block(o + b, x + b, dout + b);
    if (full < m) {
        memcpy(d, dout + full, (m - full) * sizeof *d);
        gelu_grad_block(o + full, x + full, d);
    }
    if (dt == ZT_F32)
        memcpy(dinp, o, m * sizeof *o);
    else
        zt_bf16_from_fp32_row(dinp, o, (int)m);
}

static size_t chunk_len(size_t n, size_t c) {
    return n - c * ZT_GELU_CHUNK < ZT_GELU_CHUNK ? n - c * ZT_GELU_CHUNK : ZT_GELU_CHUNK;
}

void zt_gelu_forward_bf16(zt_bf16 *out, const zt_bf16 *inp, size_t n) {
    size_t nc = (n + ZT_GELU_CHUNK - 1) / ZT_GELU_CHUNK;
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < nc; c++)
        gelu_chunk_bf16(out + c * ZT_GELU_CHUNK, inp + c * ZT_GELU_CHUNK, chunk_len(n, c));
}

void zt_gelu_backward_bf16(void *dinp, zt_dtype dinp_dt, const zt_bf16 *inp, const float *dout,
                           size_t n) {
    size_t nc = (n + ZT_GELU_CHUNK - 1) / ZT_GELU_CHUNK, es = zt_dtype_size(dinp_dt);
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < nc; c++) {
        size_t at = c * ZT_GELU_CHUNK;
        gelu_grad_chunk_bf16((char *)dinp + at * es, dinp_dt, inp + at, dout + at,
                             chunk_len(n, c));
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
