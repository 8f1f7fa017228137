// The row work of the GPU's blocked attention (kernels/cuda/attention_gemm_cuda.cu), one warp
// per score row: what lane `lane` of `lanes` computes over the columns j = lane + k lanes of
// a row. The warp then combines the lanes' results in a fixed tree (shuffle down by 16, 8,
// 4, 2, 1; lane 0's result broadcast), so every run sums in the same order. The host test
// (tests/test_cuda.c, cuda_attention_blocked_host) runs these functions lane by lane in that
// tree against the CPU attention, so the arithmetic the GPU runs is checked without one.
#ifndef ZT_ATTENTION_MATH_H
#define ZT_ATTENTION_MATH_H
#include "softmax_math.h"
#include "zt_hd.h"

// The lane's (max, sum of exp(x - max)) over its columns of x[0, valid): (-inf, 0) when it
// has none, which zt_softmax_merge leaves alone.
static inline ZT_HD void zt_att_lane_stats(const float *x, int valid, int lane, int lanes,
                                           float *m, float *s) {
    *m = zt_row_max_strided(x, valid, lane, lanes);
    *s = zt_row_sumexp_strided(x, valid, lane, lanes, 1.0f, *m);
}

// Row i of a query block holds keys [0, n): p[j] = exp(x[j] - lse) for j < valid (= i + 1,
// the causal prefix), 0 for valid <= j < n, so the block's GEMMs over n keys see zeros
// beyond the diagonal. In place (p may be x).
static inline ZT_HD void zt_att_lane_probs(float *p, const float *x, int n, int valid, float lse,
                                           int lane, int lanes) {
    for (int j = lane; j < n; j += lanes) p[j] = j < valid ? expf(x[j] - lse) : 0.0f;
}

// The backward's first pass: p as zt_att_lane_probs (in place over the scores x), and the
// lane's part of D = sum_j p[j] dp[j] (the softmax's row term; equal to rowsum(dO * O)).
static inline ZT_HD float zt_att_lane_probs_dot(float *p, const float *x, const float *dp, int n,
                                                int valid, float lse, int lane, int lanes) {
    float d = 0.0f;
    for (int j = lane; j < n; j += lanes) {
        float pj = j < valid ? expf(x[j] - lse) : 0.0f;
        p[j] = pj;
        d += pj * dp[j];
    }
    return d;
}

// The second pass: ds[j] = p[j] (dp[j] - D), in place over dp (0 beyond the diagonal,
// where p is 0).
static inline ZT_HD void zt_att_lane_ds(float *ds, const float *p, const float *dp, int n,
                                        float D, int lane, int lanes) {
    for (int j = lane; j < n; j += lanes) ds[j] = p[j] * (dp[j] - D);
}
#endif
