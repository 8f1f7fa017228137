// LayerNorm forward and backward over rows.
#include <omp.h>

#include "kernels.h"
#include "layernorm_math.h"

void zt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C) {
#pragma omp parallel for
    for (int n = 0; n < N; n++)
        zt_layernorm_row_forward(out + (size_t)n * C, mean + n, rstd + n, inp + (size_t)n * C, w,
                                 b, C);
}

void zt_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C) {
#pragma omp parallel
    {
#pragma omp for
        for (int n = 0; n < N; n++)
            zt_layernorm_row_backward_dx(dinp + (size_t)n * C, dout + (size_t)n * C,
                                         inp + (size_t)n * C, w, mean[n], rstd[n], C);
        // dw, db: threads own column blocks, each column summed from row 0 down (a fixed
        // order) in stack accumulators, as zt_bias_backward.
        int width = zt_column_block_width(C, omp_get_num_threads());
        int blocks = (C + width - 1) / width;
#pragma omp for schedule(static)
        for (int blk = 0; blk < blocks; blk++) {
            int c0 = blk * width, wd = C - c0 < width ? C - c0 : width;
            float sw[ZT_COLUMN_BLOCK_MAX], sb[ZT_COLUMN_BLOCK_MAX];
            for (int c = 0; c < wd; c++) sw[c] = dw[c0 + c], sb[c] = db[c0 + c];
            for (int n = 0; n < N; n++) {
                const float *d = dout + (size_t)n * C + c0, *x = inp + (size_t)n * C + c0;
                float m = mean[n], r = rstd[n];
#pragma omp simd
                for (int c = 0; c < wd; c++) {
                    sb[c] += d[c];
                    sw[c] += d[c] * (x[c] - m) * r;
                }
            }
            for (int c = 0; c < wd; c++) dw[c0 + c] = sw[c], db[c0 + c] = sb[c];
        }
    }
}
