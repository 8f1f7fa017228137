// Token + position embedding lookup and its backward (vocab-parallel aware).
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

void zt_encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe,
                        int vocab_lo, int vocab_rows, int N, int T, int C) {
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        float *o = out + (size_t)n * C;
        const float *p = wpe ? wpe + (size_t)(n % T) * C : NULL;
        int row = tokens[n] - vocab_lo;
        const float *e = row >= 0 && row < vocab_rows ? wte + (size_t)row * C : NULL;
        for (int c = 0; c < C; c++) o[c] = (e ? e[c] : 0.0f) + (p ? p[c] : 0.0f);
    }
}

void zt_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                         int vocab_lo, int vocab_rows, int N, int T, int C) {
    // Threads own channel blocks (zt_column_block_width), so a token repeated in the
    // batch never races and the sum order is fixed (deterministic across thread counts).
    int width = zt_column_block_width(C, omp_get_max_threads());
    int blocks = (C + width - 1) / width;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < blocks; blk++) {
        int c0 = blk * width, c1 = c0 + width < C ? c0 + width : C;
        for (int n = 0; n < N; n++) {
            const float *d = dout + (size_t)n * C;
            int row = tokens[n] - vocab_lo;
            if (row >= 0 && row < vocab_rows) {
                float *e = dwte + (size_t)row * C;
                for (int c = c0; c < c1; c++) e[c] += d[c];
            }
            if (dwpe) {
                float *p = dwpe + (size_t)(n % T) * C;
                for (int c = c0; c < c1; c++) p[c] += d[c];
            }
        }
    }
}

// Token n's embedding row (NULL outside this vocabulary slice) and position row (NULL
// without wpe) of bf16 tables.
static void embed_rows(const zt_bf16 **e, const zt_bf16 **p, int n, const int32_t *tokens,
                       const zt_bf16 *wte, const zt_bf16 *wpe, int vocab_lo, int vocab_rows,
                       int T, int C) {
    int row = tokens[n] - vocab_lo;
    *e = row >= 0 && row < vocab_rows ? wte + (size_t)row * C : NULL;
    *p = wpe ? wpe + (size_t)(n % T) * C : NULL;
}
static inline float embed_sum(const zt_bf16 *e, const zt_bf16 *p, int c) {
    return (e ? zt_bf16_to_fp32(e[c]) : 0.0f) + (p ? zt_bf16_to_fp32(p[c]) : 0.0f);
}

void zt_encoder_forward_bf16(float *out, const int32_t *tokens, const zt_bf16 *wte,
                             const zt_bf16 *wpe, int vocab_lo, int vocab_rows, int N, int T,
                             int C) {
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const zt_bf16 *e, *p;
        embed_rows(&e, &p, n, tokens, wte, wpe, vocab_lo, vocab_rows, T, C);
        for (int c = 0; c < C; c++) out[(size_t)n * C + c] = embed_sum(e, p, c);
    }
}

void zt_encoder_forward_bf16out(zt_bf16 *out, const int32_t *tokens, const zt_bf16 *wte,
                                const zt_bf16 *wpe, int vocab_lo, int vocab_rows, int N, int T,
                                int C) {
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const zt_bf16 *e, *p;
        embed_rows(&e, &p, n, tokens, wte, wpe, vocab_lo, vocab_rows, T, C);
        for (int c = 0; c < C; c++) out[(size_t)n * C + c] = zt_bf16_from_fp32(embed_sum(e, p, c));
    }
}

// Orders token indices by (dwte row, index), for qsort_r: each row's tokens then sit together
// in the order the fp32 kernel adds them.
static int by_row_then_index(const void *x, const void *y, void *tokens) {
    int32_t i = *(const int32_t *)x, j = *(const int32_t *)y;
    int32_t ti = ((const int32_t *)tokens)[i], tj = ((const int32_t *)tokens)[j];
    return ti != tj ? (ti > tj) - (ti < tj) : (i > j) - (i < j);
}

// acc[0..w) += dout's rows at idx[0..n), columns [c0, c0 + w), in that order.
static void add_rows(float *acc, const float *dout, const int32_t *idx, int n, int C, int c0,
                     int w) {
    for (int k = 0; k < n; k++) {
        const float *d = dout + (size_t)idx[k] * C + c0;
#pragma omp simd
        for (int c = 0; c < w; c++) acc[c] += d[c];
    }
}

// A bf16 row takes one rounding per call, so a row's contributions are summed in fp32 before
// it is touched: the tokens of this slice are sorted by row once (serially, N log N), then
// threads own channel blocks as in the fp32 kernel and walk the rows. dwpe's position p takes
// tokens p, p + T, ...: already in order.
void zt_encoder_backward_bf16(zt_bf16 *dwte, zt_bf16 *dwpe, const float *dout,
                              const int32_t *tokens, int vocab_lo, int vocab_rows, int N, int T,
                              int C) {
    // one small host allocation per micro-batch (4 bytes a token), next to its N log N sort
    int32_t *idx = malloc((size_t)(N > 0 ? N : 1) * sizeof *idx);
    ZT_ASSERTF(idx, "encoder_backward_bf16: out of host memory for %d token indices", N);
    int n_in = 0;
    for (int n = 0; n < N; n++)
        if (tokens[n] - vocab_lo >= 0 && tokens[n] - vocab_lo < vocab_rows) idx[n_in++] = n;
    qsort_r(idx, (size_t)n_in, sizeof idx[0], by_row_then_index, (void *)tokens);
    int width = zt_column_block_width(C, omp_get_max_threads());
    int blocks = (C + width - 1) / width, positions = N < T ? N : T;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < blocks; blk++) {
        int c0 = blk * width, w = C - c0 < width ? C - c0 : width;
        float acc[ZT_COLUMN_BLOCK_MAX];
        for (int k = 0, run; k < n_in; k += run) {
            size_t off = (size_t)(tokens[idx[k]] - vocab_lo) * C + c0;
            for (run = 1; k + run < n_in && tokens[idx[k + run]] == tokens[idx[k]]; run++) {}
            zt_acc_load(acc, dwte, ZT_BF16, off, w);
            add_rows(acc, dout, idx + k, run, C, c0, w);
            zt_acc_store(dwte, ZT_BF16, off, acc, w);
        }
        for (int p = 0; dwpe && p < positions; p++) {
            zt_acc_load(acc, dwpe, ZT_BF16, (size_t)p * C + c0, w);
            for (int32_t n = p; n < N; n += T) add_rows(acc, dout, &n, 1, C, c0, w);
            zt_acc_store(dwpe, ZT_BF16, (size_t)p * C + c0, acc, w);
        }
    }
    free(idx);
}
