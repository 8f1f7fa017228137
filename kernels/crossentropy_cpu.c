// Softmax cross entropy over rows of logits, forward and backward in one pass.
#include <math.h>

#include "kernels.h"
#include "softmax_math.h"

void zt_crossentropy_forward_backward(float *dlogits, float *losses, const float *logits,
                                      const int32_t *targets, float scale, int n, int V, int ld) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const float *x = logits + (size_t)r * ld;
        float m = zt_cpu_row_max(x, V);
        float lse = m + logf(zt_cpu_row_sumexp(x, V, m));
        int t = targets[r];
        losses[r] = zt_ce_loss(lse, x[t]);
        // zt_ce_row_backward's scale * (expf(x - lse) - onehot), with the vector expf:
        // the target's e - 1 is formed before scaling, as there. x may be dx.
        float *dx = dlogits + (size_t)r * ld;
        zt_cpu_row_exp(dx, x, lse, V);
        if (t >= 0 && t < V) dx[t] -= 1.0f;
        for (int i = 0; i < V; i++) dx[i] *= scale;
        for (int i = V; i < ld; i++) dx[i] = 0.0f;
    }
}
