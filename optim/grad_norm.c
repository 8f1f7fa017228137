// Per-rank sum of squares for the global grad norm, and the clip factor.
#include "grad_norm.h"

#include <math.h>

void zt_grad_sumsq(double out[2], const float *grads, const zt_layout *lay, size_t lo, size_t hi,
                   int count_replicated, int count_tied) {
    double ss = 0.0, bad = 0.0;
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        if ((t->replicated && !count_replicated) || (t->tied && !count_tied)) continue;
        size_t a = t->offset > lo ? t->offset : lo;
        size_t b = zt_min_sz(t->offset + t->numel, hi);
        if (a >= b) continue;
        double s = 0.0, nb = 0.0;
#pragma omp parallel for reduction(+ : s, nb)
        for (size_t k = a; k < b; k++) {
            double g = grads[k];
            if (isfinite(g)) s += g * g;
            else nb += 1.0;
        }
        ss += s;
        bad += nb;
    }
    out[0] = ss;
    out[1] = bad;
}

float zt_clip_scale(double norm, float max_norm) {
    if (max_norm <= 0.0f) return 1.0f;
    double c = max_norm / (norm + 1e-6);
    return c < 1.0 ? (float)c : 1.0f;
}
