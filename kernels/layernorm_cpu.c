// LayerNorm forward and backward over rows.
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
        // dw, db: threads own column ranges (no races, fixed order).
#pragma omp for schedule(static)
        for (int c0 = 0; c0 < C; c0 += 16) {
            int c1 = c0 + 16 < C ? c0 + 16 : C;
            for (int n = 0; n < N; n++) {
                const float *d = dout + (size_t)n * C, *x = inp + (size_t)n * C;
                for (int c = c0; c < c1; c++) {
                    db[c] += d[c];
                    dw[c] += d[c] * (x[c] - mean[n]) * rstd[n];
                }
            }
        }
    }
}
