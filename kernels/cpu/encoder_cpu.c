// Token + position embedding lookup and its backward (vocab-parallel aware).
#include <omp.h>
#include <string.h>

#include "kernels.h"

void zt_encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe,
                        int vocab_lo, int vocab_rows, int N, int T, int C) {
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        float *o = out + (size_t)n * C;
        const float *p = wpe ? wpe + (size_t)(n % T) * C : NULL;
        int row = tokens[n] - vocab_lo;
        const float *e = row >= 0 && row < vocab_rows ? wte + (size_t)row * C : NULL;
        for (int c = 0; c < C; c++) o[c] = (e ? e[c] : 0.0f) + (p ? p[c] : 0.0f);
    }
}

void zt_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                         int vocab_lo, int vocab_rows, int N, int T, int C) {
    // Threads own channel blocks (zt_column_block_width), so a token repeated in the
    // batch never races and the sum order is fixed (deterministic across thread counts).
    int width = zt_column_block_width(C, omp_get_max_threads());
    int blocks = (C + width - 1) / width;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < blocks; blk++) {
        int c0 = blk * width, c1 = c0 + width < C ? c0 + width : C;
        for (int n = 0; n < N; n++) {
            const float *d = dout + (size_t)n * C;
            int row = tokens[n] - vocab_lo;
            if (row >= 0 && row < vocab_rows) {
                float *e = dwte + (size_t)row * C;
                for (int c = c0; c < c1; c++) e[c] += d[c];
            }
            if (dwpe) {
                float *p = dwpe + (size_t)(n % T) * C;
                for (int c = c0; c < c1; c++) p[c] += d[c];
            }
        }
    }
}
