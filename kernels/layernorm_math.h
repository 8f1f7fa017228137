// LayerNorm over one row of C values (eps 1e-5 as GPT-2), forward and backward.
#ifndef ZT_LAYERNORM_MATH_H
#define ZT_LAYERNORM_MATH_H
#include "zt_hd.h"

#define ZT_LN_EPS 1e-5f

// Row sums in ZT_LN_LANES interleaved partial sums (lane l takes i = l mod ZT_LN_LANES),
// combined in lane order, then the tail: independent additions a CPU runs in vector lanes
// (one float chain waits on each add's latency: 768 adds per sum), and the same order on
// every backend that runs these row functions (the GPU runs the warp's lane functions below).
#define ZT_LN_LANES 16

// The per-element expressions, one definition for the CPU's rows and the GPU's lanes.
static inline ZT_HD float zt_ln_out(float x, float m, float s, float w, float b) {
    return (x - m) * s * w + b;
}
static inline ZT_HD float zt_ln_rstd(float sqdev_sum, int C) {
    return 1.0f / sqrtf(sqdev_sum / C + ZT_LN_EPS);
}
// dx's term: (g - mean(g) - xhat mean(g xhat)) rstd with g = dout w.
static inline ZT_HD float zt_ln_dx(float dout, float x, float w, float mean, float rstd,
                                   float gmean, float gxmean) {
    float xhat = (x - mean) * rstd;
    return (dout * w - gmean - xhat * gxmean) * rstd;
}
// dw's term of one row (the column sums of the backward): dout xhat.
static inline ZT_HD float zt_ln_dw_term(float dout, float x, float mean, float rstd) {
    return dout * (x - mean) * rstd;
}

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
    float s = zt_ln_rstd(v, C);
    ZT_SIMD
    for (int i = 0; i < C; i++) out[i] = zt_ln_out(x[i], m, s, w[i], b[i]);
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
    ZT_SIMD
    for (int i = 0; i < C; i++) dx[i] += zt_ln_dx(dout[i], x[i], w[i], mean, rstd, gmean, gxmean);
}

// ---- the GPU's warp per row (kernels/cuda/layernorm_cuda.cu) ----
// Lane `lane` of a warp's 32 takes columns i = lane + 32 k (a warp's loads coalesce), with the
// per-element expressions above, and the warp adds the lanes' partial sums in a fixed
// shuffle-down tree (16, 8, 4, 2, 1; lane 0's sum to all): deterministic, but not the CPU's
// order, so the GPU test bounds the difference and cuda_layernorm_warp_host replays the lanes
// in that tree on the host. The lane loops are the kernels' templates (fp32 or bf16 elements).
#endif
