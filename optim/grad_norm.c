// Per-rank sum of squares for the global grad norm, and the clip factor.
#include "grad_norm.h"

#include <math.h>

// Runs of adjacent counted tensors go to the backend as one range: one pass (and on the
// CPU one parallel region) instead of one per tensor, most of them small.
// One range's sum of squares, by the gradient's dtype.
static void sumsq_range(const zt_backend *be, double out[2], const void *grads, zt_dtype dt,
                        size_t a, size_t b) {
    if (dt == ZT_BF16) be->ops->sumsq_bf16(be, out, (const zt_bf16 *)grads + a, b - a);
    else be->ops->sumsq(be, out, (const float *)grads + a, b - a);
}

void zt_grad_sumsq(const zt_backend *be, double out[2], const void *grads, zt_dtype dt,
                   const zt_layout *lay, size_t lo, size_t hi, int count_replicated,
                   int count_tied) {
    out[0] = out[1] = 0.0;
    size_t run_a = 0, run_b = 0; // the pending range [run_a, run_b)
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        if ((t->replicated && !count_replicated) || (t->tied && !count_tied)) continue;
        size_t a = t->offset > lo ? t->offset : lo;
        size_t b = zt_min_sz(t->offset + t->numel, hi);
        if (a >= b) continue;
        if (a != run_b) {
            if (run_b > run_a) sumsq_range(be, out, grads, dt, run_a, run_b);
            run_a = a;
        }
        run_b = b;
    }
    if (run_b > run_a) sumsq_range(be, out, grads, dt, run_a, run_b);
}

float zt_clip_scale(double norm, float max_norm) {
    if (max_norm <= 0.0f) return 1.0f;
    double c = max_norm / (norm + 1e-6);
    return c < 1.0 ? (float)c : 1.0f;
}
