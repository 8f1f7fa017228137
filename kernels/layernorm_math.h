// LayerNorm over one row of C values (eps 1e-5 as GPT-2), forward and backward.
#ifndef ZT_LAYERNORM_MATH_H
#define ZT_LAYERNORM_MATH_H
#include "zt_hd.h"

#define ZT_LN_EPS 1e-5f

// Row sums in ZT_LN_LANES interleaved partial sums (lane l takes i = l mod ZT_LN_LANES),
// combined in lane order, then the tail: independent additions a CPU runs in vector lanes
// (one float chain waits on each add's latency: 768 adds per sum), and the same order on
// every backend, so the GPU's one-thread-per-row kernels still match the CPU bit for bit.
#define ZT_LN_LANES 16

// out = (x - mean) * rstd * w + b; returns mean and rstd for the backward.
static inline ZT_HD void zt_layernorm_row_forward(float *out, float *mean_out, float *rstd_out,
                                                  const float *x, const float *w, const float *b,
                                                  int C) {
    float ps[ZT_LN_LANES] = {0}, m = 0.0f, v = 0.0f;
    int body = C / ZT_LN_LANES * ZT_LN_LANES;
    for (int i = 0; i < body; i += ZT_LN_LANES)
        for (int l = 0; l < ZT_LN_LANES; l++) ps[l] += x[i + l];
    for (int l = 0; l < ZT_LN_LANES; l++) m += ps[l];
    for (int i = body; i < C; i++) m += x[i];
    m /= C;
    for (int l = 0; l < ZT_LN_LANES; l++) ps[l] = 0.0f;
    for (int i = 0; i < body; i += ZT_LN_LANES)
        for (int l = 0; l < ZT_LN_LANES; l++) {
            float d = x[i + l] - m;
            ps[l] += d * d;
        }
    for (int l = 0; l < ZT_LN_LANES; l++) v += ps[l];
    for (int i = body; i < C; i++) {
        float d = x[i] - m;
        v += d * d;
    }
    v /= C;
    float s = 1.0f / sqrtf(v + ZT_LN_EPS);
    for (int i = 0; i < C; i++) out[i] = (x[i] - m) * s * w[i] + b[i];
    *mean_out = m;
    *rstd_out = s;
}

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dout * w.
static inline ZT_HD void zt_layernorm_row_backward_dx(float *dx, const float *dout, const float *x,
                                                      const float *w, float mean, float rstd,
                                                      int C) {
    float pg[ZT_LN_LANES] = {0}, pgx[ZT_LN_LANES] = {0}, gmean = 0.0f, gxmean = 0.0f;
    int body = C / ZT_LN_LANES * ZT_LN_LANES;
    for (int i = 0; i < body; i += ZT_LN_LANES)
        for (int l = 0; l < ZT_LN_LANES; l++) {
            float g = dout[i + l] * w[i + l];
            pg[l] += g;
            pgx[l] += g * (x[i + l] - mean) * rstd;
        }
    for (int l = 0; l < ZT_LN_LANES; l++) {
        gmean += pg[l];
        gxmean += pgx[l];
    }
    for (int i = body; i < C; i++) {
        float g = dout[i] * w[i];
        gmean += g;
        gxmean += g * (x[i] - mean) * rstd;
    }
    gmean /= C;
    gxmean /= C;
    for (int i = 0; i < C; i++) {
        float xhat = (x[i] - mean) * rstd;
        dx[i] += (dout[i] * w[i] - gmean - xhat * gxmean) * rstd;
    }
}
#endif
