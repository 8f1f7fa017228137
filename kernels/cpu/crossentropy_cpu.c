// Softmax cross entropy over rows of logits whose columns may be one slice of a
// vocabulary split over tp ranks (docs/design.md §5), in three passes so that the ranks can
// combine each row's max, sum of exponentials and target logit between them
// (src/model/vocab_loss.c). Forward and backward together: the gradient overwrites the logits.
#include <math.h>

#include "kernels.h"
#include "softmax_math.h"

void zt_ce_slice_stats(float *row_max, float *target_logit, const float *logits,
                       const int32_t *targets, int n, int n_valid, int vocab_lo, int ld) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const float *x = logits + (size_t)r * ld;
        row_max[r] = zt_cpu_row_max(x, n_valid); // -inf for a slice of padding only
        int t = targets[r] - vocab_lo;
        target_logit[r] = t >= 0 && t < n_valid ? x[t] : 0.0f;
    }
}

void zt_ce_slice_sumexp(float *sumexp, const float *logits, const float *row_max, int n,
                        int n_valid, int ld) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++)
        sumexp[r] = zt_cpu_row_sumexp(logits + (size_t)r * ld, n_valid, row_max[r]);
}

void zt_ce_slice_finish(float *dlogits, float *losses, const float *logits,
                        const int32_t *targets, const float *row_max, const float *sumexp,
                        const float *target_logit, float scale, int n, int n_valid, int vocab_lo,
                        int ld) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const float *x = logits + (size_t)r * ld;
        float lse = row_max[r] + logf(sumexp[r]);
        losses[r] = zt_ce_loss(lse, target_logit[r]);
        // zt_ce_row_backward's scale * (expf(x - lse) - onehot), with the vector expf:
        // the target's e - 1 is formed before scaling, as there. x may be dx.
        float *dx = dlogits + (size_t)r * ld;
        zt_cpu_row_exp(dx, x, lse, n_valid);
        int t = targets[r] - vocab_lo;
        if (t >= 0 && t < n_valid) dx[t] -= 1.0f;
        for (int i = 0; i < n_valid; i++) dx[i] *= scale;
        for (int i = n_valid; i < ld; i++) dx[i] = 0.0f; // padded rows never learn
    }
}

// ---- over bf16 logits: the passes above on the widened values (softmax_cpu.c's bf16 rows)

void zt_ce_slice_stats_bf16(float *row_max, float *target_logit, const zt_bf16 *logits,
                            const int32_t *targets, int n, int n_valid, int vocab_lo, int ld) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const zt_bf16 *x = logits + (size_t)r * ld;
        row_max[r] = zt_cpu_row_max_bf16(x, n_valid);
        int t = targets[r] - vocab_lo;
        target_logit[r] = t >= 0 && t < n_valid ? zt_bf16_to_fp32(x[t]) : 0.0f;
    }
}

void zt_ce_slice_sumexp_bf16(float *sumexp, const zt_bf16 *logits, const float *row_max, int n,
                             int n_valid, int ld) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++)
        sumexp[r] = zt_cpu_row_sumexp_bf16(logits + (size_t)r * ld, n_valid, row_max[r]);
}

void zt_ce_slice_finish_bf16(zt_bf16 *dlogits, float *losses, const zt_bf16 *logits,
                             const int32_t *targets, const float *row_max, const float *sumexp,
                             const float *target_logit, float scale, int n, int n_valid,
                             int vocab_lo, int ld) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        float lse = row_max[r] + logf(sumexp[r]);
        losses[r] = zt_ce_loss(lse, target_logit[r]);
        zt_bf16 *dx = dlogits + (size_t)r * ld;
        zt_cpu_row_ce_grad_bf16(dx, logits + (size_t)r * ld, lse, targets[r] - vocab_lo, scale,
                                n_valid);
        for (int i = n_valid; i < ld; i++) dx[i] = 0; // padded rows never learn (+0.0)
    }
}
