// LayerNorm over one row of C values (eps 1e-5 as GPT-2), forward and backward.
#ifndef ZT_LAYERNORM_MATH_H
#define ZT_LAYERNORM_MATH_H
#include "zt_hd.h"

#define ZT_LN_EPS 1e-5f

// out = (x - mean) * rstd * w + b; returns mean and rstd for the backward.
static inline ZT_HD void zt_layernorm_row_forward(float *out, float *mean_out, float *rstd_out,
                                                  const float *x, const float *w, const float *b,
                                                  int C) {
    float m = 0.0f;
    for (int i = 0; i < C; i++) m += x[i];
    m /= C;
    float v = 0.0f;
    for (int i = 0; i < C; i++) {
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
    float gmean = 0.0f, gxmean = 0.0f;
    for (int i = 0; i < C; i++) {
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
