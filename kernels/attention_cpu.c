// Causal self-attention on BLAS: per (batch, head) S = QK^T/sqrt(hs), a masked row
// softmax, O = PV. The backward recomputes P from the saved log-sum-exp, so memory
// stays O(B*NH*T) instead of O(B*NH*T*T). The row softmax is softmax_math.h's, with the
// vector expf of softmax_cpu.c.
#include <math.h>
#include <omp.h>

#include "kernels.h"

// Two T*T scratch matrices per thread.
size_t zt_attention_workspace(int T) { return (size_t)omp_get_max_threads() * 2 * T * T; }

// P[i, j] = exp(S[i, j] - lse[i]) for j <= i, 0 above the diagonal.
static void causal_probs(float *P, const float *lse, int T) {
    for (int i = 0; i < T; i++) {
        float *row = P + (size_t)i * T;
        zt_cpu_row_exp(row, row, lse[i], i + 1);
        for (int j = i + 1; j < T; j++) row[j] = 0.0f;
    }
}

// Each thread takes whole (b, h) pairs and calls BLAS on its own small matrices:
// OpenBLAS's OpenMP build runs single-threaded inside a parallel region, so there is
// one thread pool and no oversubscription (MACHINE.md).
void zt_attention_forward(float *out, float *lse, const float *qkv, float *work, int B, int T,
                          int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(dynamic)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        float *S = work + (size_t)omp_get_thread_num() * 2 * T * T;
        const float *q = qkv + (size_t)b * T * 3 * C + h * hs;
        const float *k = q + C, *v = q + 2 * C;
        float *l = lse + (size_t)bh * T;
        zt_gemm(0, 1, T, T, hs, scale, q, 3 * C, k, 3 * C, 0.0f, S, T);
        for (int i = 0; i < T; i++) {
            const float *row = S + (size_t)i * T;
            float m = zt_cpu_row_max(row, i + 1);
            l[i] = m + logf(zt_cpu_row_sumexp(row, i + 1, m));
        }
        causal_probs(S, l, T);
        zt_gemm(0, 0, T, hs, T, 1.0f, S, T, v, 3 * C, 0.0f, out + (size_t)b * T * C + h * hs, C);
    }
}

void zt_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                           float *work, int B, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(dynamic)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        float *P = work + (size_t)omp_get_thread_num() * 2 * T * T;
        float *dP = P + (size_t)T * T;
        size_t base = (size_t)b * T * 3 * C + h * hs;
        const float *q = qkv + base, *k = q + C, *v = q + 2 * C;
        float *dq = dqkv + base, *dk = dq + C, *dv = dq + 2 * C;
        const float *dO = dout + (size_t)b * T * C + h * hs;
        zt_gemm(0, 1, T, T, hs, scale, q, 3 * C, k, 3 * C, 0.0f, P, T);
        causal_probs(P, lse + (size_t)bh * T, T);
        zt_gemm(0, 1, T, T, hs, 1.0f, dO, C, v, 3 * C, 0.0f, dP, T);
        // softmax backward: dS = P * (dP - sum_j P dP), in place in dP
        for (int i = 0; i < T; i++) {
            const float *p = P + (size_t)i * T;
            float *d = dP + (size_t)i * T;
            float dot = 0.0f;
            for (int j = 0; j <= i; j++) dot += p[j] * d[j];
            for (int j = 0; j <= i; j++) d[j] = p[j] * (d[j] - dot);
            for (int j = i + 1; j < T; j++) d[j] = 0.0f;
        }
        zt_gemm(0, 0, T, hs, T, scale, dP, T, k, 3 * C, 0.0f, dq, 3 * C);
        zt_gemm(1, 0, T, hs, T, scale, dP, T, q, 3 * C, 0.0f, dk, 3 * C);
        zt_gemm(1, 0, T, hs, T, 1.0f, P, T, dO, C, 0.0f, dv, 3 * C);
    }
}
