// The residual stream in bf16 (docs/design.md, "bf16"): its add and the LayerNorms that read it,
// each the fp32 kernel's arithmetic on the widened values, rounded once where it writes bf16.
#include "kernels.h"
#include "layernorm_math.h"

static inline zt_bf16 add_one(zt_bf16 a, float b) {
    return zt_bf16_from_fp32(zt_bf16_to_fp32(a) + b);
}

// Threads only from 64k elements (as bf16_cpu.c): below that the fork costs more than the adds.
void zt_add_bf16(zt_bf16 *out, const zt_bf16 *a, const float *b, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= ((size_t)1 << 16))
    for (size_t i = 0; i < n; i++) out[i] = add_one(a[i], b[i]);
}

// One row: x (C floats) normalized into out, fp32 or rounded to bf16 through row.
static void row_forward(void *out, zt_dtype out_dt, float *mean, float *rstd, const float *x,
                        const float *w, const float *b, float *row, int C) {
    float *o = out_dt == ZT_F32 ? out : row;
    zt_layernorm_row_forward(o, mean, rstd, x, w, b, C);
    if (out_dt == ZT_BF16) zt_bf16_from_fp32_row(out, row, C);
}

// a bf16 rows, b fp32 rows: res = a + b rounded (b NULL: res = a, nothing written), then its
// LayerNorm. The rows' element loops are vector loops (`simd`, the row conversions): gcc's
// -O2 leaves loops of unknown length scalar (GPT-2 124M at 256 tokens, 2 threads: residual
// add and LayerNorm 276 -> 82 us a call, the LayerNorm alone 189 -> 72 us).
static void residual_layernorm(zt_bf16 *res, void *out, zt_dtype out_dt, float *mean,
                               float *rstd, const zt_bf16 *a, const float *b, const zt_bf16 *w,
                               const zt_bf16 *bias, int N, int C) {
    ZT_ASSERTF(C > 0 && C <= ZT_BF16_MAX_ROW, "layernorm: C = %d > %d", C, ZT_BF16_MAX_ROW);
    ZT_ASSERT(out_dt == ZT_F32 || out_dt == ZT_BF16);
    float wf[C], bf[C];
    zt_bf16_to_fp32_row(wf, w, C);
    zt_bf16_to_fp32_row(bf, bias, C);
    size_t osize = out_dt == ZT_F32 ? sizeof(float) : sizeof(zt_bf16);
#pragma omp parallel
    {
        float x[C], row[C];
#pragma omp for
        for (int n = 0; n < N; n++) {
            size_t at = (size_t)n * C;
            if (b) {
#pragma omp simd
                for (int c = 0; c < C; c++) {
                    res[at + c] = add_one(a[at + c], b[at + c]);
                    x[c] = zt_bf16_to_fp32(res[at + c]);
                }
            } else {
                zt_bf16_to_fp32_row(x, a + at, C);
            }
            row_forward((char *)out + at * osize, out_dt, mean + n, rstd + n, x, wf, bf, row, C);
        }
    }
}

void zt_layernorm_forward_bf16in(void *out, zt_dtype out_dt, float *mean, float *rstd,
                                 const zt_bf16 *inp, const zt_bf16 *w, const zt_bf16 *b, int N,
                                 int C) {
    residual_layernorm(NULL, out, out_dt, mean, rstd, inp, NULL, w, b, N, C);
}

void zt_residual_layernorm_forward_bf16(zt_bf16 *res, void *out, zt_dtype out_dt, float *mean,
                                        float *rstd, const zt_bf16 *a, const float *b,
                                        const zt_bf16 *w, const zt_bf16 *bias, int N, int C) {
    residual_layernorm(res, out, out_dt, mean, rstd, a, b, w, bias, N, C);
}
