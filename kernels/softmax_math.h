// Row softmax pieces shared by attention and the cross-entropy loss. Rows are combined
// as (max, sum of exp(x - max)) pairs, so a row split across tp ranks (vocab-parallel
// loss) or across chunks reduces to the same numbers without overflow.
#ifndef ZT_SOFTMAX_MATH_H
#define ZT_SOFTMAX_MATH_H
#include "zt_hd.h"

// Each row function in a strided form over x[start], x[start + stride], ... below n (a GPU
// thread's or warp lane's share of a row: consecutive threads read consecutive values) and the
// contiguous form, which is the strided one from 0 by 1.
static inline ZT_HD float zt_row_max_strided(const float *x, int n, int start, int stride) {
    float m = -INFINITY;
    for (int i = start; i < n; i += stride) m = x[i] > m ? x[i] : m;
    return m;
}
static inline ZT_HD float zt_row_max(const float *x, int n) {
    return zt_row_max_strided(x, n, 0, 1);
}

// sum of exp(scale*x[i] - m) over the row's i < n.
static inline ZT_HD float zt_row_sumexp_strided(const float *x, int n, int start, int stride,
                                                float scale, float m) {
    float s = 0.0f;
    for (int i = start; i < n; i += stride) s += expf(scale * x[i] - m);
    return s;
}
static inline ZT_HD float zt_row_sumexp(const float *x, int n, float scale, float m) {
    return zt_row_sumexp_strided(x, n, 0, 1, scale, m);
}

// Merges two partial (max, sumexp) pairs into *m, *s.
static inline ZT_HD void zt_softmax_merge(float *m, float *s, float m2, float s2) {
    float mm = *m > m2 ? *m : m2;
    if (mm == -INFINITY) return;
    *s = *s * expf(*m - mm) + s2 * expf(m2 - mm);
    *m = mm;
}

// Cross entropy of one row from its log-sum-exp: loss = lse - x[target].
static inline ZT_HD float zt_ce_loss(float lse, float target_logit) { return lse - target_logit; }

// dlogits[i] = scale * (softmax_i - [i == target]) for i < n (this slice's columns,
// `target` relative to the slice, outside [0, n) when another slice owns it).
static inline ZT_HD void zt_ce_row_backward_strided(float *dx, const float *x, int n, int start,
                                                    int stride, float lse, int target,
                                                    float scale) {
    for (int i = start; i < n; i += stride)
        dx[i] = scale * (expf(x[i] - lse) - (i == target ? 1.0f : 0.0f));
}
static inline ZT_HD void zt_ce_row_backward(float *dx, const float *x, int n, float lse, int target,
                                            float scale) {
    zt_ce_row_backward_strided(dx, x, n, 0, 1, lse, target, scale);
}
#endif
