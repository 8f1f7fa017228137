// The CPU backend: host memory through the tagged allocator, and kernels.h's OpenMP
// loops and BLAS products behind the backend table (backend.h).
#include <math.h>
#include <omp.h>
#include <string.h>

#include "backend.h"
#include "backend_impl.h"
#include "blas_core.h"
#include "common.h"
#include "kernels.h"
#include "quant8_math.h"

static void cpu_describe(const zt_backend *be, char *buf, size_t size) {
    zt_blas_describe(buf, size);
}
static void cpu_write_json(const zt_backend *be, FILE *f) { zt_blas_write_json(f); }
static void *cpu_stream(const zt_backend *be) { return NULL; }
static int cpu_device(const zt_backend *be, char *id, size_t size) {
    if (size) id[0] = 0;
    return -1;
}
// no device memory: the trainer checks host memory (src/app/train_checks.c)
static int cpu_memory_info(const zt_backend *be, size_t *free_b, size_t *total_b,
                           size_t *held) {
    *free_b = *total_b = *held = 0;
    return 0;
}
// Host memory is the CPU backend's memory: counted like alloc's.
static void *cpu_host_alloc(const zt_backend *be, zt_mem_category cat, size_t bytes) {
    return zt_mem_alloc(cat, bytes);
}
static void cpu_host_free(const zt_backend *be, void *ptr) { zt_mem_free(ptr); }

static void *cpu_alloc(const zt_backend *be, zt_mem_category cat, size_t bytes) {
    return zt_mem_alloc(cat, bytes);
}
static void cpu_free(const zt_backend *be, void *ptr) { zt_mem_free(ptr); }
// Large fills (the gradient buffer, every step) on all threads: one core's stores do not
// reach the memory bandwidth (gpt2's 498 MB: 61 ms on one thread, 31 ms on two). One
// contiguous piece per thread, not small chunks: a piece this large is past glibc's
// non-temporal threshold, so memset streams it without reading each line first (1 MiB
// chunks: 23-26 ms on two threads, halves: 10-14 ms).
#define ZT_MEMSET_PARALLEL_MIN ((size_t)4 << 20)
static void cpu_memset(const zt_backend *be, void *dst, int byte, size_t bytes) {
    if (bytes < ZT_MEMSET_PARALLEL_MIN || omp_in_parallel()) {
        if (bytes) memset(dst, byte, bytes);
        return;
    }
#pragma omp parallel
    {
        size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
        size_t piece = (bytes / nt + 4095) / 4096 * 4096, at = piece * t;
        if (at < bytes) memset((char *)dst + at, byte, zt_min_sz(piece, bytes - at));
    }
}
static void cpu_copy(const zt_backend *be, void *dst, const void *src, size_t bytes,
                     zt_copy_kind kind) {
    if (bytes && dst != src) memcpy(dst, src, bytes);
}
// Host and device memory are one: the view is the memory itself.
static void *cpu_map(const zt_backend *be, void *dev, size_t bytes, int read) {
    if (!read && bytes) memset(dev, 0, bytes);
    return dev;
}
static void cpu_unmap(const zt_backend *be, void *dev, void *host, size_t bytes, int write) {
    ZT_ASSERTF(host == dev, "unmap of a view that map did not return");
}
static void cpu_sync(const zt_backend *be) {}

static void cpu_gemm(const zt_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb, float beta, float *C,
                     int ldc) {
    zt_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
static void cpu_encoder_forward(const zt_backend *be, float *out, const int32_t *tokens,
                                const float *wte, const float *wpe, int vocab_lo, int vocab_rows,
                                int N, int T, int C) {
    zt_encoder_forward(out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
}
static void cpu_encoder_backward(const zt_backend *be, float *dwte, float *dwpe,
                                 const float *dout, const int32_t *tokens, int vocab_lo,
                                 int vocab_rows, int N, int T, int C) {
    zt_encoder_backward(dwte, dwpe, dout, tokens, vocab_lo, vocab_rows, N, T, C);
}
static void cpu_layernorm_forward(const zt_backend *be, float *out, float *mean, float *rstd,
                                  const float *inp, const float *w, const float *b, int N,
                                  int C) {
    zt_layernorm_forward(out, mean, rstd, inp, w, b, N, C);
}
static void cpu_residual_layernorm_forward(const zt_backend *be, float *res, float *out,
                                           float *mean, float *rstd, const float *a,
                                           const float *b, const float *w, const float *bias,
                                           int N, int C) {
    zt_residual_layernorm_forward(res, out, mean, rstd, a, b, w, bias, N, C);
}
static void cpu_layernorm_backward(const zt_backend *be, float *dinp, float *dw, float *db,
                                   const float *dout, const float *inp, const float *w,
                                   const float *mean, const float *rstd, int N, int C) {
    zt_layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
static void cpu_matmul_forward(const zt_backend *be, float *out, const float *inp,
                               const float *w, const float *bias, int N, int C, int OC) {
    zt_matmul_forward(out, inp, w, bias, N, C, OC);
}
static void cpu_matmul_backward(const zt_backend *be, float *dinp, float *dw, float *dbias,
                                const float *dout, const float *inp, const float *w, int N,
                                int C, int OC, int acc) {
    zt_matmul_backward(dinp, dw, dbias, dout, inp, w, N, C, OC, acc);
}
static void cpu_matmul_in_out_forward(const zt_backend *be, float *out, const float *inp,
                                      const float *w, const float *bias, int N, int C, int OC) {
    zt_matmul_in_out_forward(out, inp, w, bias, N, C, OC);
}
static void cpu_matmul_in_out_backward(const zt_backend *be, float *dinp, float *dw,
                                       float *dbias, const float *dout, const float *inp,
                                       const float *w, int N, int C, int OC, int acc) {
    zt_matmul_in_out_backward(dinp, dw, dbias, dout, inp, w, N, C, OC, acc);
}
static void cpu_matmul_backward_input(const zt_backend *be, float *dinp, const float *dout,
                                      const float *w, int N, int C, int OC, int acc) {
    zt_matmul_backward_input(dinp, dout, w, N, C, OC, acc);
}
static void cpu_matmul_backward_weight(const zt_backend *be, float *dw, float *dbias,
                                       const float *dout, const float *inp, int N, int C,
                                       int OC) {
    zt_matmul_backward_weight(dw, dbias, dout, inp, N, C, OC);
}
static void cpu_matmul_in_out_backward_input(const zt_backend *be, float *dinp,
                                             const float *dout, const float *w, int N, int C,
                                             int OC, int acc) {
    zt_matmul_in_out_backward_input(dinp, dout, w, N, C, OC, acc);
}
static void cpu_matmul_in_out_backward_weight(const zt_backend *be, float *dw, float *dbias,
                                              const float *dout, const float *inp, int N, int C,
                                              int OC) {
    zt_matmul_in_out_backward_weight(dw, dbias, dout, inp, N, C, OC);
}
static void cpu_gelu_forward(const zt_backend *be, float *out, const float *inp, size_t n) {
    zt_gelu_forward(out, inp, n);
}
static void cpu_matmul_gelu_forward(const zt_backend *be, float *pre, float *out,
                                    const float *inp, const float *w, const float *bias, int N,
                                    int C, int OC) {
    zt_matmul_gelu_forward(pre, out, inp, w, bias, N, C, OC);
}
static void cpu_gelu_backward(const zt_backend *be, float *dinp, const float *inp,
                              const float *dout, size_t n) {
    zt_gelu_backward(dinp, inp, dout, n);
}
static void cpu_add(const zt_backend *be, float *out, const float *a, const float *b, size_t n) {
    zt_add(out, a, b, n);
}
static void cpu_attention_forward(const zt_backend *be, float *out, float *lse, const float *qkv,
                                  float *work, int B, int T, int C, int NH) {
    zt_attention_forward(out, lse, qkv, work, B, T, C, NH);
}
static void cpu_attention_backward(const zt_backend *be, float *dqkv, const float *dout,
                                   const float *qkv, const float *lse, float *work, int B, int T,
                                   int C, int NH) {
    zt_attention_backward(dqkv, dout, qkv, lse, work, B, T, C, NH);
}
static void cpu_attention_decode(const zt_backend *be, float *out, const float *q, const float *k,
                                 const float *v, float *work, int n_q, int n_pos, int C, int NH) {
    zt_attention_decode(out, q, k, v, work, n_q, n_pos, C, NH);
}
static void cpu_ce_slice_stats(const zt_backend *be, float *row_max, float *target_logit,
                               const float *logits, const int32_t *targets, int n, int n_valid,
                               int vocab_lo, int ld) {
    zt_ce_slice_stats(row_max, target_logit, logits, targets, n, n_valid, vocab_lo, ld);
}
static void cpu_ce_slice_sumexp(const zt_backend *be, float *sumexp, const float *logits,
                                const float *row_max, int n, int n_valid, int ld) {
    zt_ce_slice_sumexp(sumexp, logits, row_max, n, n_valid, ld);
}
static void cpu_ce_slice_finish(const zt_backend *be, float *dlogits, float *losses,
                                const float *logits, const int32_t *targets,
                                const float *row_max, const float *sumexp,
                                const float *target_logit, float scale, int n, int n_valid,
                                int vocab_lo, int ld) {
    zt_ce_slice_finish(dlogits, losses, logits, targets, row_max, sumexp, target_logit, scale, n,
                       n_valid, vocab_lo, ld);
}

// Sequential: its callers sum a micro-batch's per-token losses, in a fixed order.
static double cpu_sum(const zt_backend *be, const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}
static void cpu_sum_into(const zt_backend *be, double *acc, const float *x, size_t n) {
    *acc += cpu_sum(be, x, n);
}

// One vectorized pass: the squares summed in double, which stays finite unless some x is Inf
// or NaN (a float's square is below 2^256, so no count of them overflows a double). Only
// then a second pass counts those and sums the finite values' squares alone (a diverged
// step, once). 2.3x faster than a loop with a finiteness branch, which gcc does not
// vectorize (gpt2's 124M gradients: 90 -> 39 ms).
// ZT_SUMSQ_LANES independent partial sums per thread: one vector of doubles waits on the
// previous add's latency for every 4 values and does not keep up with the memory.
#define ZT_SUMSQ_LANES 32
// Below these sizes (biases, LayerNorm weights) waking the other threads costs more than
// the pass itself: one thread does it.
#define ZT_SUMSQ_PARALLEL_MIN 32768
#define ZT_ADAMW_PARALLEL_MIN 4096
// Adds the squares (in double) of ZT_SUMSQ_LANES values from x into acc; a bf16 block is
// widened in the same vector pass.
static inline void sumsq_lanes(double *acc, const float *x) {
#pragma omp simd
    for (int l = 0; l < ZT_SUMSQ_LANES; l++) acc[l] += (double)x[l] * x[l];
}
static inline void sumsq_lanes_bf16(double *acc, const zt_bf16 *x) {
#pragma omp simd
    for (int l = 0; l < ZT_SUMSQ_LANES; l++) {
        float v = zt_bf16_to_fp32(x[l]);
        acc[l] += (double)v * v;
    }
}

static inline float value_at(const void *x, zt_dtype dt, size_t k) {
    return dt == ZT_BF16 ? zt_bf16_to_fp32(((const zt_bf16 *)x)[k]) : ((const float *)x)[k];
}

// sumsq over fp32 or bf16 values (widened: exact); the branch is per block of lanes, not
// per value. A bf16 block is widened in the lanes' own loop (GPT-2 124M's bf16 gradients on
// 2 threads of an AVX512-BF16 EPYC: 12.8 ms through a copy on the stack, 10.6 without it,
// 9.3 without the lane of x * 0).
static void sumsq(double out[2], const void *x, zt_dtype dt, size_t n) {
    double s = 0.0;
    size_t blocks = n / ZT_SUMSQ_LANES;
#pragma omp parallel reduction(+ : s) if (n >= ZT_SUMSQ_PARALLEL_MIN)
    {
        double acc[ZT_SUMSQ_LANES] = {0};
#pragma omp for schedule(static)
        for (size_t b = 0; b < blocks; b++) {
            size_t k = b * ZT_SUMSQ_LANES;
            if (dt == ZT_BF16)
                sumsq_lanes_bf16(acc, (const zt_bf16 *)x + k);
            else
                sumsq_lanes(acc, (const float *)x + k);
        }
        for (int l = 0; l < ZT_SUMSQ_LANES; l++) s += acc[l];
    }
    for (size_t k = blocks * ZT_SUMSQ_LANES; k < n; k++) {
        float v = value_at(x, dt, k);
        s += (double)v * v;
    }
    if (isfinite(s)) {
        out[0] += s;
        return;
    }
    double bad = 0.0;
    s = 0.0;
#pragma omp parallel for reduction(+ : s, bad) schedule(static)
    for (size_t k = 0; k < n; k++) {
        float v = value_at(x, dt, k);
        if (isfinite(v)) s += (double)v * v;
        else bad += 1.0;
    }
    out[0] += s;
    out[1] += bad;
}

static void cpu_sumsq(const zt_backend *be, double out[2], const float *x, size_t n) {
    sumsq(out, x, ZT_F32, n);
}
static void cpu_sumsq_bf16(const zt_backend *be, double out[2], const zt_bf16 *x, size_t n) {
    sumsq(out, x, ZT_BF16, n);
}

// Each thread reads the hyperparameters into its own copy: through `h`, which the
// stores to p, m, v might alias, the vector loop reloads them for every element (gpt2's
// update on 2 threads: 85-100 -> 62-77 ms a step; streaming its 7 arrays takes ~55 ms).
static void cpu_adamw(const zt_backend *be, float *p, float *m, float *v, const float *g,
                      size_t n, float wd, const zt_adamw_hparams *h) {
#pragma omp parallel if (n >= ZT_ADAMW_PARALLEL_MIN)
    {
        const zt_adamw_hparams hp = *h;
#pragma omp for simd schedule(static)
        for (size_t k = 0; k < n; k++) zt_adamw_update(&p[k], &m[k], &v[k], g[k], wd, &hp);
    }
}

// adamw with fp32 master weights and a bf16 gradient: the master is cpu_adamw's p, bit for
// bit, on the widened gradient.
static void cpu_adamw_bf16(const zt_backend *be, float *master, zt_bf16 *p, float *m, float *v,
                           const zt_bf16 *g, size_t n, float wd, const zt_adamw_hparams *h) {
#pragma omp parallel if (n >= ZT_ADAMW_PARALLEL_MIN)
    {
        const zt_adamw_hparams hp = *h; // a thread's own copy, as in cpu_adamw
#pragma omp for simd schedule(static)
        for (size_t k = 0; k < n; k++) {
            zt_adamw_update(&master[k], &m[k], &v[k], zt_bf16_to_fp32(g[k]), wd, &hp);
            p[k] = zt_bf16_from_fp32(master[k]);
        }
    }
}

// One block of an 8-bit piece: dequantize, fp32 AdamW update, requantize with the
// block's new absmax (max |value| after the update, so no value is clipped). The values
// in flight stay in fp32 on the stack.
static void adamw8bit_block(float *p, const float *g, uint8_t *qm, uint8_t *qv, float *absmax_m,
                            float *absmax_v, size_t n, const float *map_m, const float *map_v,
                            float wd, const zt_adamw_hparams *h) {
    float m[ZT_Q8_MAX_BLOCK], v[ZT_Q8_MAX_BLOCK];
    float am = *absmax_m, av = *absmax_v, new_am = 0.0f, new_av = 0.0f;
    for (size_t i = 0; i < n; i++) {
        m[i] = zt_q8_dequantize(map_m, qm[i], am);
        v[i] = zt_q8_dequantize(map_v, qv[i], av);
        zt_adamw_update(&p[i], &m[i], &v[i], g[i], wd, h);
        float a = fabsf(m[i]);
        if (a > new_am) new_am = a;
        if (v[i] > new_av) new_av = v[i];
    }
    *absmax_m = new_am;
    *absmax_v = new_av;
    for (size_t i = 0; i < n; i++) {
        qm[i] = zt_q8_quantize(map_m, m[i], new_am);
        qv[i] = zt_q8_quantize(map_v, v[i], new_av);
    }
}

// The 8-bit pieces, fp32 (p16 NULL, g fp32) or mixed: g bf16, widened a block at a time
// into the stack, p the fp32 master and p16 = p rounded to bf16 after each block's update.
static void adamw8bit(float *p, zt_bf16 *p16, const void *g, zt_dtype gt, uint8_t *qm,
                      uint8_t *qv, float *absmax_m, float *absmax_v, size_t n, int block,
                      const float *map_m, const float *map_v, float wd,
                      const zt_adamw_hparams *h) {
    size_t B = (size_t)block, nb = (n + B - 1) / B;
    ZT_ASSERT(block > 0 && block <= ZT_Q8_MAX_BLOCK);
#pragma omp parallel
    {
        const zt_adamw_hparams hp = *h; // a thread's own copy, as in cpu_adamw
        float wide[gt == ZT_BF16 ? ZT_Q8_MAX_BLOCK : 1];
#pragma omp for schedule(static)
        for (size_t j = 0; j < nb; j++) {
            size_t s = j * B, len = zt_min_sz(B, n - s);
            const float *gb = (const float *)g + s;
            if (gt == ZT_BF16) {
                const zt_bf16 *gs = (const zt_bf16 *)g + s;
                for (size_t i = 0; i < len; i++) wide[i] = zt_bf16_to_fp32(gs[i]);
                gb = wide;
            }
            adamw8bit_block(p + s, gb, qm + s, qv + s, absmax_m + j, absmax_v + j, len, map_m,
                            map_v, wd, &hp);
            for (size_t i = 0; p16 && i < len; i++) p16[s + i] = zt_bf16_from_fp32(p[s + i]);
        }
    }
}

static void cpu_adamw8bit(const zt_backend *be, float *p, const float *g, uint8_t *qm,
                          uint8_t *qv, float *absmax_m, float *absmax_v, size_t n, int block,
                          const float *map_m, const float *map_v, float wd,
                          const zt_adamw_hparams *h) {
    adamw8bit(p, NULL, g, ZT_F32, qm, qv, absmax_m, absmax_v, n, block, map_m, map_v, wd, h);
}

static void cpu_adamw8bit_bf16(const zt_backend *be, float *master, zt_bf16 *p, const zt_bf16 *g,
                               uint8_t *qm, uint8_t *qv, float *absmax_m, float *absmax_v,
                               size_t n, int block, const float *map_m, const float *map_v,
                               float wd, const zt_adamw_hparams *h) {
    adamw8bit(master, p, g, ZT_BF16, qm, qv, absmax_m, absmax_v, n, block, map_m, map_v, wd, h);
}

// ---- bf16 mixed precision: kernels.h's *_bf16 and zt_gemm_mixed ----
static void cpu_gemm_mixed(const zt_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                           const void *A, zt_dtype at, int lda, const void *B, zt_dtype bt,
                           int ldb, float beta, void *C, zt_dtype ct, int ldc, void *work) {
    zt_gemm_mixed(ta, tb, M, N, K, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, work,
                  be->caps->gemm_mixed_workspace);
}
static int cpu_gemm_epilogue_bf16(const zt_backend *be, zt_epilogue ep, int ta, int tb, int M,
                                  int N, int K, const void *A, zt_dtype at, int lda,
                                  const zt_bf16 *B, int ldb, void *C, zt_dtype ct,
                                  const zt_bf16 *vec, const zt_bf16 *aux, float *wide,
                                  void *work) {
    if (ep == ZT_EPILOGUE_BIAS && zt_gemm_mixed_bias(ta, tb, M, N, K, A, at, lda, B, ldb, C, ct,
                                                     vec))
        return 1;
    zt_gemm_epilogue_unfused(be, ep, ta, tb, M, N, K, A, at, lda, B, ldb, C, ct, vec, aux, wide,
                             work);
    return 0;
}
static void cpu_describe_gemm_mixed(const zt_backend *be, char *buf, size_t size) {
    zt_gemm_bf16_describe(buf, size);
}
static void cpu_bias_forward_bf16(const zt_backend *be, float *out, const zt_bf16 *bias, int N,
                                  int OC) {
    zt_bias_forward_bf16(out, bias, N, OC);
}
static void cpu_bias_backward_bf16(const zt_backend *be, zt_bf16 *dbias, const void *dout,
                                   zt_dtype dout_dt, int N, int OC) {
    zt_bias_backward_bf16(dbias, dout, dout_dt, N, OC);
}
static void cpu_encoder_forward_bf16(const zt_backend *be, float *out, const int32_t *tokens,
                                     const zt_bf16 *wte, const zt_bf16 *wpe, int vocab_lo,
                                     int vocab_rows, int N, int T, int C) {
    zt_encoder_forward_bf16(out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
}
static void cpu_encoder_forward_bf16out(const zt_backend *be, zt_bf16 *out,
                                        const int32_t *tokens, const zt_bf16 *wte,
                                        const zt_bf16 *wpe, int vocab_lo, int vocab_rows, int N,
                                        int T, int C) {
    zt_encoder_forward_bf16out(out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
}
static void cpu_encoder_backward_bf16(const zt_backend *be, zt_bf16 *dwte, zt_bf16 *dwpe,
                                      const float *dout, const int32_t *tokens, int vocab_lo,
                                      int vocab_rows, int N, int T, int C) {
    zt_encoder_backward_bf16(dwte, dwpe, dout, tokens, vocab_lo, vocab_rows, N, T, C);
}
static void cpu_layernorm_forward_bf16(const zt_backend *be, void *out, zt_dtype out_dt,
                                       float *mean, float *rstd, const float *inp,
                                       const zt_bf16 *w, const zt_bf16 *b, int N, int C) {
    zt_layernorm_forward_bf16(out, out_dt, mean, rstd, inp, w, b, N, C);
}
static void cpu_add_bf16(const zt_backend *be, zt_bf16 *out, const zt_bf16 *a, const float *b,
                         size_t n) {
    zt_add_bf16(out, a, b, n);
}
static void cpu_layernorm_forward_bf16in(const zt_backend *be, void *out, zt_dtype out_dt,
                                         float *mean, float *rstd, const zt_bf16 *inp,
                                         const zt_bf16 *w, const zt_bf16 *b, int N, int C) {
    zt_layernorm_forward_bf16in(out, out_dt, mean, rstd, inp, w, b, N, C);
}
static void cpu_residual_layernorm_forward_bf16(const zt_backend *be, zt_bf16 *res, void *out,
                                                zt_dtype out_dt, float *mean, float *rstd,
                                                const zt_bf16 *a, const float *b,
                                                const zt_bf16 *w, const zt_bf16 *bias, int N,
                                                int C) {
    zt_residual_layernorm_forward_bf16(res, out, out_dt, mean, rstd, a, b, w, bias, N, C);
}
static void cpu_bias_broadcast_bf16(const zt_backend *be, zt_bf16 *out, const zt_bf16 *bias,
                                    int N, int OC) {
    zt_bias_broadcast_bf16(out, bias, N, OC);
}
static void cpu_gelu_forward_bf16(const zt_backend *be, zt_bf16 *out, const zt_bf16 *inp,
                                  size_t n) {
    zt_gelu_forward_bf16(out, inp, n);
}
static void cpu_gelu_backward_bf16(const zt_backend *be, void *dinp, zt_dtype dinp_dt,
                                   const zt_bf16 *inp, const float *dout, size_t n) {
    zt_gelu_backward_bf16(dinp, dinp_dt, inp, dout, n);
}
static void cpu_ce_slice_stats_bf16(const zt_backend *be, float *row_max, float *target_logit,
                                    const zt_bf16 *logits, const int32_t *targets, int n,
                                    int n_valid, int vocab_lo, int ld) {
    zt_ce_slice_stats_bf16(row_max, target_logit, logits, targets, n, n_valid, vocab_lo, ld);
}
static void cpu_ce_slice_sumexp_bf16(const zt_backend *be, float *sumexp, const zt_bf16 *logits,
                                     const float *row_max, int n, int n_valid, int ld) {
    zt_ce_slice_sumexp_bf16(sumexp, logits, row_max, n, n_valid, ld);
}
static void cpu_ce_slice_finish_bf16(const zt_backend *be, zt_bf16 *dlogits, float *losses,
                                     const zt_bf16 *logits, const int32_t *targets,
                                     const float *row_max, const float *sumexp,
                                     const float *target_logit, float scale, int n, int n_valid,
                                     int vocab_lo, int ld) {
    zt_ce_slice_finish_bf16(dlogits, losses, logits, targets, row_max, sumexp, target_logit,
                            scale, n, n_valid, vocab_lo, ld);
}
static void cpu_layernorm_backward_bf16(const zt_backend *be, float *dinp, zt_bf16 *dw,
                                        zt_bf16 *db, const float *dout, const float *inp,
                                        const zt_bf16 *w, const float *mean, const float *rstd,
                                        int N, int C) {
    zt_layernorm_backward_bf16(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
static void cpu_layernorm_backward_bf16in(const zt_backend *be, void *dinp, zt_dtype dinp_dt,
                                          zt_bf16 *dw, zt_bf16 *db, const float *dout,
                                          const zt_bf16 *inp, const zt_bf16 *w, const float *mean,
                                          const float *rstd, int N, int C) {
    zt_layernorm_backward_bf16in(dinp, dinp_dt, dw, db, dout, inp, w, mean, rstd, N, C);
}
static void cpu_attention_forward_bf16(const zt_backend *be, void *out, zt_dtype out_dt,
                                       float *lse, const zt_bf16 *qkv, float *work, float *wide,
                                       int B, int T, int C, int NH) {
    zt_attention_forward_bf16(out, out_dt, lse, qkv, work, wide, B, T, C, NH);
}
// The CPU's backward recomputes P and dP a row at a time, so it has D without `out`.
static void cpu_attention_backward_bf16(const zt_backend *be, void *dqkv, zt_dtype dqkv_dt,
                                        const void *dout, zt_dtype dout_dt, const zt_bf16 *out,
                                        const zt_bf16 *qkv, const float *lse, float *work,
                                        float *wide, int B, int T, int C, int NH) {
    zt_attention_backward_bf16(dqkv, dqkv_dt, dout, dout_dt, qkv, lse, work, wide, B, T, C, NH);
}
static void cpu_bf16_from_fp32(const zt_backend *be, zt_bf16 *out, const float *in, size_t n) {
    zt_bf16_from_fp32_array(out, in, n);
}
static void cpu_bf16_to_fp32(const zt_backend *be, float *out, const zt_bf16 *in, size_t n) {
    zt_bf16_to_fp32_array(out, in, n);
}

// Every op of backend_ops.h is cpu_<op> above (one that is missing does not compile).
static const zt_backend_i cpu_ops = {
    .name = "cpu",
    .library = "blas",
#define ZT_OP(ret, name, ...) .name = cpu_##name,
#include "backend_ops.h"
#undef ZT_OP
};

// OpenBLAS picks its kernels before main(): the fix re-executes (blas_core.h).
static int cpu_start(char **argv) {
    zt_blas_init(argv);
    return zt_blas_info_get()->generic;
}

static zt_status cpu_open(zt_backend *be, const zt_backend_options *opt) {
    // one OpenMP pool for the kernels and OpenBLAS (docs/machine.md, "Threads")
    if (opt->threads > 0) omp_set_num_threads(opt->threads);
    if (zt_gemm_bf16_set_path(opt->bf16_gemm) != ZT_OK) {
        char why[512]; // the message is rewritten below: copied out of its buffer first
        snprintf(why, sizeof why, "%s", zt_error_message());
        return zt_errorf("--bf16-gemm %s: %s: give --bf16-gemm fallback (or auto, which picks "
                         "it on this machine)",
                         opt->bf16_gemm == ZT_BF16_GEMM_DNNL_MATMUL ? "onednn-matmul" : "onednn",
                         why);
    }
    be->ops = &cpu_ops;
    be->caps = &zt_backend_cpu_entry.caps;
    be->threads = omp_get_max_threads();
    return ZT_OK;
}

static void cpu_close(zt_backend *be) { (void)be; }

const zt_backend_entry zt_backend_cpu_entry = {
    .caps = {.name = "cpu", .built = 1, .bf16_gemm = 1, .multi_rank = 1, .bf16 = 1,
             .gemm_mixed_workspace = ZT_GEMM_MIXED_WORKSPACE,
             .attention_workspace = zt_attention_workspace},
    .open = cpu_open,
    .close = cpu_close,
    .start = cpu_start,
    .unset_env = zt_blas_unset_env,
};
