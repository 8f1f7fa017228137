// The three passes of the sliced softmax cross entropy (kernels.h) on the GPU, over fp32 or
// bf16 logits (backend_ops.h's ce_slice_* and ce_slice_*_bf16): one block per row; thread t
// runs softmax_math.h's strided row arithmetic on columns t, t + 256, ... (a warp's loads
// coalesce), each logit widened (exact) as it is read, and the block combines the threads'
// results in a fixed tree (max; sum; nothing to combine for the gradient). Statistics and
// losses are fp32; a bf16 gradient is rounded once, in place.
#include "cuda_check.h" // first: it declares the C helpers extern "C"
#include "bf16_cuda.h"
#include "block_reduce_cuda.cuh"
#include "elem_io_cuda.cuh"
#include "kernels_cuda.h"
#include "softmax_math.h"

#define CE_THREADS 256
static_assert(CE_THREADS <= ZT_REDUCE_MAX_THREADS, "zt_block_reduce's buffer");

// zt_row_max_strided's, zt_row_sumexp_strided's (scale 1: scale * x is x exactly) and
// zt_ce_row_backward_strided's element arithmetic, on the widened logits.
template <typename T>
static __global__ void ce_stats_kernel(float *row_max, float *target_logit, const T *logits,
                                       const int32_t *targets, int n_valid, int vocab_lo,
                                       int ld) {
    int r = blockIdx.x;
    const T *x = logits + (size_t)r * ld;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < n_valid; i += blockDim.x) {
        float v = zt_widen(x[i]);
        m = v > m ? v : m;
    }
    m = zt_block_reduce(m, zt_op_max_f());
    if (threadIdx.x == 0) {
        row_max[r] = m; // -inf for a slice of padding only
        int t = targets[r] - vocab_lo;
        target_logit[r] = t >= 0 && t < n_valid ? zt_widen(x[t]) : 0.0f;
    }
}

template <typename T>
static __global__ void ce_sumexp_kernel(float *sumexp, const T *logits, const float *row_max,
                                        int n_valid, int ld) {
    int r = blockIdx.x;
    const T *x = logits + (size_t)r * ld;
    float s = 0.0f, m = row_max[r];
    for (int i = threadIdx.x; i < n_valid; i += blockDim.x) s += expf(zt_widen(x[i]) - m);
    s = zt_block_reduce(s, zt_op_sum_f());
    if (threadIdx.x == 0) sumexp[r] = s;
}

// dlogits may alias logits: each element is read, then written, by one thread.
template <typename T>
static __global__ void ce_finish_kernel(T *dlogits, float *losses, const T *logits,
                                        const int32_t *targets, const float *row_max,
                                        const float *sumexp, const float *target_logit,
                                        float scale, int n_valid, int vocab_lo, int ld) {
    int r = blockIdx.x;
    float lse = row_max[r] + logf(sumexp[r]);
    if (threadIdx.x == 0) losses[r] = zt_ce_loss(lse, target_logit[r]);
    const T *x = logits + (size_t)r * ld;
    T *dx = dlogits + (size_t)r * ld;
    int t = targets[r] - vocab_lo; // outside [0, n_valid) when another slice has it
    for (int i = threadIdx.x; i < n_valid; i += blockDim.x)
        zt_store(dx + i, scale * (expf(zt_widen(x[i]) - lse) - (i == t ? 1.0f : 0.0f)));
    for (int i = n_valid + threadIdx.x; i < ld; i += blockDim.x) zt_store(dx + i, 0.0f); // padding
}

static void ce_check(int n, int n_valid, int ld) {
    ZT_ASSERT(n >= 0 && n_valid >= 0 && n_valid <= ld);
    ZT_ASSERTF(n <= 2147483647, "cross entropy: %d rows exceed the grid", n);
}

template <typename T>
static void ce_stats(cudaStream_t st, float *row_max, float *target_logit, const T *logits,
                     const int32_t *targets, int n, int n_valid, int vocab_lo, int ld,
                     const char *name) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    ce_stats_kernel<T><<<n, CE_THREADS, 0, st>>>(row_max, target_logit, logits, targets,
                                                 n_valid, vocab_lo, ld);
    ZT_CUDA_LAUNCHED(st, name);
}

template <typename T>
static void ce_sumexp(cudaStream_t st, float *sumexp, const T *logits, const float *row_max,
                      int n, int n_valid, int ld, const char *name) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    ce_sumexp_kernel<T><<<n, CE_THREADS, 0, st>>>(sumexp, logits, row_max, n_valid, ld);
    ZT_CUDA_LAUNCHED(st, name);
}

template <typename T>
static void ce_finish(cudaStream_t st, T *dlogits, float *losses, const T *logits,
                      const int32_t *targets, const float *row_max, const float *sumexp,
                      const float *target_logit, float scale, int n, int n_valid, int vocab_lo,
                      int ld, const char *name) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    ce_finish_kernel<T><<<n, CE_THREADS, 0, st>>>(dlogits, losses, logits, targets, row_max,
                                                  sumexp, target_logit, scale, n_valid,
                                                  vocab_lo, ld);
    ZT_CUDA_LAUNCHED(st, name);
}

extern "C" void zt_cuda_ce_slice_stats(cudaStream_t st, float *row_max, float *target_logit,
                                       const float *logits, const int32_t *targets, int n,
                                       int n_valid, int vocab_lo, int ld) {
    ce_stats(st, row_max, target_logit, logits, targets, n, n_valid, vocab_lo, ld,
             "ce_slice_stats");
}

extern "C" void zt_cuda_ce_slice_sumexp(cudaStream_t st, float *sumexp, const float *logits,
                                        const float *row_max, int n, int n_valid, int ld) {
    ce_sumexp(st, sumexp, logits, row_max, n, n_valid, ld, "ce_slice_sumexp");
}

extern "C" void zt_cuda_ce_slice_finish(cudaStream_t st, float *dlogits, float *losses,
                                        const float *logits, const int32_t *targets,
                                        const float *row_max, const float *sumexp,
                                        const float *target_logit, float scale, int n,
                                        int n_valid, int vocab_lo, int ld) {
    ce_finish(st, dlogits, losses, logits, targets, row_max, sumexp, target_logit, scale, n,
              n_valid, vocab_lo, ld, "ce_slice_finish");
}

extern "C" void zt_cuda_ce_slice_stats_bf16(cudaStream_t st, float *row_max, float *target_logit,
                                            const zt_bf16 *logits, const int32_t *targets, int n,
                                            int n_valid, int vocab_lo, int ld) {
    ce_stats(st, row_max, target_logit, logits, targets, n, n_valid, vocab_lo, ld,
             "ce_slice_stats_bf16");
}

extern "C" void zt_cuda_ce_slice_sumexp_bf16(cudaStream_t st, float *sumexp, const zt_bf16 *logits,
                                             const float *row_max, int n, int n_valid, int ld) {
    ce_sumexp(st, sumexp, logits, row_max, n, n_valid, ld, "ce_slice_sumexp_bf16");
}

extern "C" void zt_cuda_ce_slice_finish_bf16(cudaStream_t st, zt_bf16 *dlogits, float *losses,
                                             const zt_bf16 *logits, const int32_t *targets,
                                             const float *row_max, const float *sumexp,
                                             const float *target_logit, float scale, int n,
                                             int n_valid, int vocab_lo, int ld) {
    ce_finish(st, dlogits, losses, logits, targets, row_max, sumexp, target_logit, scale, n,
              n_valid, vocab_lo, ld, "ce_slice_finish_bf16");
}
