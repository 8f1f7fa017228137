// LayerNorm forward and backward over rows, with fp32 or bf16 (mixed precision) weights and
// weight gradients: one implementation, the bf16 weights widened once per call.
#include <omp.h>

#include "kernels.h"
#include "layernorm_math.h"

// x as fp32: x itself; as bf16: widened into buf (C floats).
static const float *widened(const void *x, zt_dtype dt, float *buf, int C) {
    if (dt == ZT_F32) return x;
    zt_bf16_to_fp32_row(buf, x, C);
    return buf;
}

// n values of x (fp32 or bf16) from element `at`: x's own, or widened into buf. Rows inside
// the threads' loops convert with the row functions: the array ones would open an OpenMP
// region per row (per row piece in the column pass: the backward ran 5x slower than its fp32
// op on GPT-2's rows).
static const float *row_of(const void *x, zt_dtype dt, size_t at, float *buf, int n) {
    if (dt == ZT_F32) return (const float *)x + at;
    zt_bf16_to_fp32_row(buf, (const zt_bf16 *)x + at, n);
    return buf;
}

// out: fp32, or (out_dt bf16) each row computed into a thread's fp32 row and rounded.
static void layernorm_forward(void *out, zt_dtype out_dt, float *mean, float *rstd,
                              const float *inp, const void *w, const void *b, zt_dtype pt, int N,
                              int C) {
    ZT_ASSERTF(pt == ZT_F32 || C <= ZT_BF16_MAX_ROW, "layernorm: C = %d > %d", C, ZT_BF16_MAX_ROW);
    float wbuf[pt == ZT_F32 ? 1 : C], bbuf[pt == ZT_F32 ? 1 : C];
    const float *wf = widened(w, pt, wbuf, C), *bf = widened(b, pt, bbuf, C);
#pragma omp parallel
    {
        float row[out_dt == ZT_F32 ? 1 : C];
#pragma omp for
        for (int n = 0; n < N; n++) {
            float *o = out_dt == ZT_F32 ? (float *)out + (size_t)n * C : row;
            zt_layernorm_row_forward(o, mean + n, rstd + n, inp + (size_t)n * C, wf, bf, C);
            if (out_dt == ZT_BF16) zt_bf16_from_fp32_row((zt_bf16 *)out + (size_t)n * C, row, C);
        }
    }
}

// inp fp32 or (it) bf16: a bf16 row or column piece widened into the thread's stack. dinp fp32
// or (gt) bf16: a bf16 row widened into the thread's stack, added into in fp32, rounded once.
static void layernorm_backward(void *dinp, zt_dtype gt, void *dw, void *db, zt_dtype pt,
                               const float *dout, const void *inp, zt_dtype it, const void *w,
                               const float *mean, const float *rstd, int N, int C) {
    ZT_ASSERTF(pt == ZT_F32 || C <= ZT_BF16_MAX_ROW, "layernorm: C = %d > %d", C, ZT_BF16_MAX_ROW);
    float wbuf[pt == ZT_F32 ? 1 : C];
    const float *wf = widened(w, pt, wbuf, C);
#pragma omp parallel
    {
        float xrow[it == ZT_F32 ? 1 : C], xcol[ZT_COLUMN_BLOCK_MAX], drow[gt == ZT_F32 ? 1 : C];
#pragma omp for
        for (int n = 0; n < N; n++) {
            size_t at = (size_t)n * C;
            float *dx = (float *)dinp + at;
            if (gt == ZT_BF16) {
                zt_bf16_to_fp32_row(drow, (const zt_bf16 *)dinp + at, C);
                dx = drow;
            }
            zt_layernorm_row_backward_dx(dx, dout + at, row_of(inp, it, at, xrow, C), wf, mean[n],
                                         rstd[n], C);
            if (gt == ZT_BF16) zt_bf16_from_fp32_row((zt_bf16 *)dinp + at, drow, C);
        }
        // dw, db: threads own column blocks, each column summed from row 0 down (a fixed
        // order) in stack accumulators, as zt_bias_backward.
        int width = zt_column_block_width(C, omp_get_num_threads());
        int blocks = (C + width - 1) / width;
#pragma omp for schedule(static)
        for (int blk = 0; blk < blocks; blk++) {
            int c0 = blk * width, wd = C - c0 < width ? C - c0 : width;
            float sw[ZT_COLUMN_BLOCK_MAX], sb[ZT_COLUMN_BLOCK_MAX];
            zt_acc_load(sw, dw, pt, (size_t)c0, wd);
            zt_acc_load(sb, db, pt, (size_t)c0, wd);
            for (int n = 0; n < N; n++) {
                const float *d = dout + (size_t)n * C + c0;
                const float *x = row_of(inp, it, (size_t)n * C + c0, xcol, wd);
                float m = mean[n], r = rstd[n];
#pragma omp simd
                for (int c = 0; c < wd; c++) {
                    sb[c] += d[c];
                    sw[c] += zt_ln_dw_term(d[c], x[c], m, r);
                }
            }
            zt_acc_store(dw, pt, (size_t)c0, sw, wd);
            zt_acc_store(db, pt, (size_t)c0, sb, wd);
        }
    }
}

void zt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C) {
    layernorm_forward(out, ZT_F32, mean, rstd, inp, w, b, ZT_F32, N, C);
}

void zt_residual_layernorm_forward(float *res, float *out, float *mean, float *rstd,
                                   const float *a, const float *b, const float *w,
                                   const float *bias, int N, int C) {
    // Row by row, so the row just added is still in cache when the LayerNorm reads it.
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        size_t at = (size_t)n * C;
        for (int c = 0; c < C; c++) res[at + c] = a[at + c] + b[at + c]; // zt_add's expression
        zt_layernorm_row_forward(out + at, mean + n, rstd + n, res + at, w, bias, C);
    }
}

void zt_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C) {
    layernorm_backward(dinp, ZT_F32, dw, db, ZT_F32, dout, inp, ZT_F32, w, mean, rstd, N, C);
}

void zt_layernorm_forward_bf16(void *out, zt_dtype out_dt, float *mean, float *rstd,
                               const float *inp, const zt_bf16 *w, const zt_bf16 *b, int N,
                               int C) {
    ZT_ASSERT(out_dt == ZT_F32 || out_dt == ZT_BF16);
    layernorm_forward(out, out_dt, mean, rstd, inp, w, b, ZT_BF16, N, C);
}

void zt_layernorm_backward_bf16(float *dinp, zt_bf16 *dw, zt_bf16 *db, const float *dout,
                                const float *inp, const zt_bf16 *w, const float *mean,
                                const float *rstd, int N, int C) {
    layernorm_backward(dinp, ZT_F32, dw, db, ZT_BF16, dout, inp, ZT_F32, w, mean, rstd, N, C);
}

void zt_layernorm_backward_bf16in(void *dinp, zt_dtype dinp_dt, zt_bf16 *dw, zt_bf16 *db,
                                  const float *dout, const zt_bf16 *inp, const zt_bf16 *w,
                                  const float *mean, const float *rstd, int N, int C) {
    ZT_ASSERT(dinp_dt == ZT_F32 || dinp_dt == ZT_BF16);
    layernorm_backward(dinp, dinp_dt, dw, db, ZT_BF16, dout, inp, ZT_BF16, w, mean, rstd, N, C);
}
