// Row softmax pieces shared by attention and the cross-entropy loss. Rows are combined
// as (max, sum of exp(x - max)) pairs, so a row split across tp ranks (vocab-parallel
// loss) or across chunks reduces to the same numbers without overflow.
#ifndef ZT_SOFTMAX_MATH_H
#define ZT_SOFTMAX_MATH_H
#include "zt_hd.h"

static inline ZT_HD float zt_row_max(const float *x, int n) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

// sum of exp(scale*x[i] - m) over i < n.
static inline ZT_HD float zt_row_sumexp(const float *x, int n, float scale, float m) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += expf(scale * x[i] - m);
    return s;
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
static inline ZT_HD void zt_ce_row_backward(float *dx, const float *x, int n, float lse, int target,
                                            float scale) {
    for (int i = 0; i < n; i++) dx[i] = scale * (expf(x[i] - lse) - (i == target ? 1.0f : 0.0f));
}
#endif
