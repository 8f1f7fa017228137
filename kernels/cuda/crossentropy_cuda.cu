// The three passes of the sliced softmax cross entropy (kernels.h) on the GPU: one block
// per row; thread t runs softmax_math.h's strided row functions on columns t, t + 256, ...
// (a warp's loads coalesce), and the block combines the threads' results in a fixed tree
// (max; sum; nothing to combine for the gradient).
#include "block_reduce_cuda.cuh"
#include "cuda_check.h"
#include "kernels_cuda.h"
#include "softmax_math.h"

#define CE_THREADS 256
static_assert(CE_THREADS <= ZT_REDUCE_MAX_THREADS, "zt_block_reduce's buffer");

static __global__ void ce_stats_kernel(float *row_max, float *target_logit, const float *logits,
                                       const int32_t *targets, int n_valid, int vocab_lo,
                                       int ld) {
    int r = blockIdx.x;
    const float *x = logits + (size_t)r * ld;
    float m = zt_block_reduce(zt_row_max_strided(x, n_valid, threadIdx.x, blockDim.x),
                              zt_op_max_f());
    if (threadIdx.x == 0) {
        row_max[r] = m; // -inf for a slice of padding only
        int t = targets[r] - vocab_lo;
        target_logit[r] = t >= 0 && t < n_valid ? x[t] : 0.0f;
    }
}

static __global__ void ce_sumexp_kernel(float *sumexp, const float *logits, const float *row_max,
                                        int n_valid, int ld) {
    int r = blockIdx.x;
    float s = zt_row_sumexp_strided(logits + (size_t)r * ld, n_valid, threadIdx.x, blockDim.x,
                                    1.0f, row_max[r]);
    s = zt_block_reduce(s, zt_op_sum_f());
    if (threadIdx.x == 0) sumexp[r] = s;
}

// dlogits may alias logits: each element is read, then written, by one thread.
static __global__ void ce_finish_kernel(float *dlogits, float *losses, const float *logits,
                                        const int32_t *targets, const float *row_max,
                                        const float *sumexp, const float *target_logit,
                                        float scale, int n_valid, int vocab_lo, int ld) {
    int r = blockIdx.x;
    float lse = row_max[r] + logf(sumexp[r]);
    if (threadIdx.x == 0) losses[r] = zt_ce_loss(lse, target_logit[r]);
    const float *x = logits + (size_t)r * ld;
    float *dx = dlogits + (size_t)r * ld;
    int t = targets[r] - vocab_lo; // outside [0, n_valid) when another slice has it
    zt_ce_row_backward_strided(dx, x, n_valid, threadIdx.x, blockDim.x, lse, t, scale);
    for (int i = n_valid + threadIdx.x; i < ld; i += blockDim.x) dx[i] = 0.0f; // padding
}

static void ce_check(int n, int n_valid, int ld) {
    ZT_ASSERT(n >= 0 && n_valid >= 0 && n_valid <= ld);
    ZT_ASSERTF(n <= 2147483647, "cross entropy: %d rows exceed the grid", n);
}

extern "C" void zt_cuda_ce_slice_stats(cudaStream_t st, float *row_max, float *target_logit,
                                       const float *logits, const int32_t *targets, int n,
                                       int n_valid, int vocab_lo, int ld) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    ce_stats_kernel<<<n, CE_THREADS, 0, st>>>(row_max, target_logit, logits, targets, n_valid,
                                              vocab_lo, ld);
    ZT_CUDA_LAUNCHED(st, "ce_slice_stats");
}

extern "C" void zt_cuda_ce_slice_sumexp(cudaStream_t st, float *sumexp, const float *logits,
                                        const float *row_max, int n, int n_valid, int ld) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    ce_sumexp_kernel<<<n, CE_THREADS, 0, st>>>(sumexp, logits, row_max, n_valid, ld);
    ZT_CUDA_LAUNCHED(st, "ce_slice_sumexp");
}

extern "C" void zt_cuda_ce_slice_finish(cudaStream_t st, float *dlogits, float *losses,
                                        const float *logits, const int32_t *targets,
                                        const float *row_max, const float *sumexp,
                                        const float *target_logit, float scale, int n,
                                        int n_valid, int vocab_lo, int ld) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    ce_finish_kernel<<<n, CE_THREADS, 0, st>>>(dlogits, losses, logits, targets, row_max, sumexp,
                                               target_logit, scale, n_valid, vocab_lo, ld);
    ZT_CUDA_LAUNCHED(st, "ce_slice_finish");
}
