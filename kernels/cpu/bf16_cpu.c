// Bulk bf16 <-> fp32 conversions: OpenMP over large arrays around bf16_math.h's scalar rules.
// The loops are branch-free; `simd` because gcc's -O2 cost model leaves loops of unknown
// length scalar (checked with -fopt-info-vec: 32-byte vectors with it, none without).
#include <omp.h>

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

void zt_bf16_to_fp32_row(float *out, const zt_bf16 *in, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) out[i] = zt_bf16_to_fp32(in[i]);
}

void zt_bf16_from_fp32_row(zt_bf16 *out, const float *in, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) out[i] = zt_bf16_from_fp32(in[i]);
}

static void round_fp32_row(float *out, const float *in, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) out[i] = zt_bf16_to_fp32(zt_bf16_from_fp32(in[i]));
}

typedef enum { TO_FP32, FROM_FP32, ROUND_FP32 } conversion;

static void convert_row(conversion c, void *out, const void *in, int cols) {
    switch (c) {
    case TO_FP32: zt_bf16_to_fp32_row(out, in, cols); break;
    case FROM_FP32: zt_bf16_from_fp32_row(out, in, cols); break;
    case ROUND_FP32: round_fp32_row(out, in, cols); break;
    }
}

// Conversion c on each row. Rows taken dynamically, 16 at a time, as zt_gemm's tiles: a
// thread the OS preempts holds up one block, not half the matrix (GPT-2's 2304 x 768 weight
// on 2 shared cores: median 0.39 ms against 0.66 ms with static halves). A small matrix, or
// one a kernel's thread converts inside its own parallel region, runs on the calling thread
// without entering a region: even one that runs on one thread costs about a microsecond to
// set up (bf16 attention at T = 64 converts 7 blocks per head: 0.3 ms a layer).
static void each_row(conversion c, void *out, size_t out_row, const void *in, size_t in_row,
                     int rows, int cols) {
    char *o = out;
    const char *x = in;
    if ((size_t)rows * cols < ZT_BF16_PARALLEL_MIN || omp_in_parallel()) {
        for (int r = 0; r < rows; r++) convert_row(c, o + r * out_row, x + r * in_row, cols);
        return;
    }
#pragma omp parallel for schedule(dynamic, 16)
    for (int r = 0; r < rows; r++) convert_row(c, o + r * out_row, x + r * in_row, cols);
}

void zt_bf16_to_fp32_matrix(float *out, int ld_out, const zt_bf16 *in, int ld_in, int rows,
                            int cols) {
    each_row(TO_FP32, out, (size_t)ld_out * sizeof *out, in, (size_t)ld_in * sizeof *in,
             rows, cols);
}

void zt_bf16_from_fp32_matrix(zt_bf16 *out, int ld_out, const float *in, int ld_in, int rows,
                              int cols) {
    each_row(FROM_FP32, out, (size_t)ld_out * sizeof *out, in, (size_t)ld_in * sizeof *in,
             rows, cols);
}

void zt_bf16_round_fp32_matrix(float *out, int ld_out, const float *in, int ld_in, int rows,
                               int cols) {
    each_row(ROUND_FP32, out, (size_t)ld_out * sizeof *out, in,
             (size_t)ld_in * sizeof *in, rows, cols);
}
