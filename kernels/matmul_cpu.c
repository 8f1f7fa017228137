// Linear layers (out = inp @ w^T + b) on BLAS, and their backward.
#include "kernels.h"

static void fill_bias(float *out, const float *bias, int N, int OC) {
    if (!bias) return;
#pragma omp parallel for
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) out[(size_t)n * OC + o] = bias[o];
}

void zt_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N,
                       int C, int OC) {
    fill_bias(out, bias, N, OC);
    zt_gemm(0, 1, N, OC, C, 1.0f, inp, C, w, C, bias ? 1.0f : 0.0f, out, OC);
}

void zt_matmul_in_out_forward(float *out, const float *inp, const float *w, const float *bias,
                              int N, int C, int OC) {
    fill_bias(out, bias, N, OC);
    zt_gemm(0, 0, N, OC, C, 1.0f, inp, C, w, OC, bias ? 1.0f : 0.0f, out, OC);
}

void zt_bias_backward(float *dbias, const float *dout, int N, int OC) {
#pragma omp parallel for schedule(static)
    for (int o0 = 0; o0 < OC; o0 += 16) {
        int o1 = o0 + 16 < OC ? o0 + 16 : OC;
        for (int n = 0; n < N; n++) {
            const float *d = dout + (size_t)n * OC;
            for (int o = o0; o < o1; o++) dbias[o] += d[o];
        }
    }
}

void zt_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC, int accumulate_dinp) {
    zt_gemm(0, 0, N, C, OC, 1.0f, dout, OC, w, C, accumulate_dinp ? 1.0f : 0.0f, dinp, C);
    zt_gemm(1, 0, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw, C);
    if (dbias) zt_bias_backward(dbias, dout, N, OC);
}

void zt_matmul_in_out_backward(float *dinp, float *dw, float *dbias, const float *dout,
                               const float *inp, const float *w, int N, int C, int OC,
                               int accumulate_dinp) {
    zt_gemm(0, 1, N, C, OC, 1.0f, dout, OC, w, OC, accumulate_dinp ? 1.0f : 0.0f, dinp, C);
    zt_gemm(1, 0, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dw, OC);
    if (dbias) zt_bias_backward(dbias, dout, N, OC);
}
