// Softmax cross entropy over rows of logits, forward and backward in one pass.
#include <math.h>

#include "kernels.h"
#include "softmax_math.h"

void zt_crossentropy_forward_backward(float *dlogits, float *losses, const float *logits,
                                      const int32_t *targets, float scale, int n, int V, int ld) {
#pragma omp parallel for
    for (int r = 0; r < n; r++) {
        const float *x = logits + (size_t)r * ld;
        float m = zt_row_max(x, V);
        float lse = m + logf(zt_row_sumexp(x, V, 1.0f, m));
        losses[r] = zt_ce_loss(lse, x[targets[r]]);
        float *dx = dlogits + (size_t)r * ld;
        zt_ce_row_backward(dx, x, V, lse, targets[r], scale);
        for (int i = V; i < ld; i++) dx[i] = 0.0f;
    }
}
