// Bulk bf16 <-> fp32 conversions: OpenMP over large arrays around bf16_math.h's scalar rules.
// The loops are branch-free; `simd` because gcc's -O2 cost model leaves loops of unknown
// length scalar (checked with -fopt-info-vec: 32-byte vectors with it, none without).
#include "kernels.h"

// Below this many elements one thread converts: a parallel region costs a few µs, about
// what one core converts in 64 K elements.
#define ZT_BF16_PARALLEL_MIN ((size_t)1 << 16)

void zt_bf16_from_fp32_array(zt_bf16 *out, const float *in, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= ZT_BF16_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) out[i] = zt_bf16_from_fp32(in[i]);
}

void zt_bf16_to_fp32_array(float *out, const zt_bf16 *in, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= ZT_BF16_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) out[i] = zt_bf16_to_fp32(in[i]);
}

// Rows taken dynamically, 16 at a time, as zt_gemm's tiles: a thread the OS preempts holds up
// one block, not half the matrix (GPT-2's 2304 x 768 weight on 2 shared cores: median 0.39 ms
// against 0.66 ms with static halves).
void zt_bf16_to_fp32_matrix(float *out, int ld_out, const zt_bf16 *in, int ld_in, int rows,
                            int cols) {
#pragma omp parallel for schedule(dynamic, 16) if ((size_t)rows * cols >= ZT_BF16_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * ld_out;
        const zt_bf16 *x = in + (size_t)r * ld_in;
#pragma omp simd
        for (int c = 0; c < cols; c++) o[c] = zt_bf16_to_fp32(x[c]);
    }
}

void zt_bf16_from_fp32_matrix(zt_bf16 *out, int ld_out, const float *in, int ld_in, int rows,
                              int cols) {
#pragma omp parallel for schedule(dynamic, 16) if ((size_t)rows * cols >= ZT_BF16_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        zt_bf16 *o = out + (size_t)r * ld_out;
        const float *x = in + (size_t)r * ld_in;
#pragma omp simd
        for (int c = 0; c < cols; c++) o[c] = zt_bf16_from_fp32(x[c]);
    }
}

void zt_bf16_round_fp32_matrix(float *out, int ld_out, const float *in, int ld_in, int rows,
                               int cols) {
#pragma omp parallel for schedule(dynamic, 16) if ((size_t)rows * cols >= ZT_BF16_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * ld_out;
        const float *x = in + (size_t)r * ld_in;
#pragma omp simd
        for (int c = 0; c < cols; c++) o[c] = zt_bf16_to_fp32(zt_bf16_from_fp32(x[c]));
    }
}
