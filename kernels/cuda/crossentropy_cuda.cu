// The three passes of the sliced softmax cross entropy (kernels.h) on the GPU, over fp32 or
// bf16 logits (backend_ops.h's ce_slice_* and ce_slice_*_bf16): one block per row; thread t
// runs softmax_math.h's row arithmetic on groups t, t + 256, ... of W consecutive columns
// (launch_math.h; one 128-bit access each: 4 fp32 or 8 bf16, vec128_cuda.cuh; W = 1, single
// columns, where the row length or an address does not allow it), each logit widened as read,
// and the block combines the threads' results in a fixed tree (max; sum; nothing to combine
// for the gradient). Statistics and losses are fp32; a bf16 gradient is rounded once, in
// place. With W = 1 a warp's loads were 64 bytes of bf16 and an H200 ran these passes at a
// quarter of its memory bandwidth.
#include "cuda_check.h" // first: it declares the C helpers extern "C"
#include "bf16_cuda.h"
#include "block_reduce_cuda.cuh"
#include "elem_io_cuda.cuh"
#include "kernels_cuda.h"
#include "softmax_math.h"
#include "vec128_cuda.cuh"

#define CE_THREADS ZT_CE_THREADS
static_assert(CE_THREADS <= ZT_REDUCE_MAX_THREADS, "zt_block_reduce's buffer");

// Columns W g .. W g + W - 1 of row x, widened.
template <int W, typename T>
static __device__ inline void ce_group(float v[W], const T *x, int g) {
    T e[W];
    zt_vload<W>(e, x + (size_t)g * W);
    for (int k = 0; k < W; k++) v[k] = zt_widen(e[k]);
}

// zt_row_max_strided's, zt_row_sumexp_strided's (scale 1: scale * x is x exactly) and
// zt_ce_row_backward_strided's element arithmetic, on the widened logits of the thread's
// groups; the groups end at zt_ce_groups(n_valid, W) (W | ld, so the last stays in the row).
template <int W, typename T>
static __global__ void ce_stats_kernel(float *row_max, float *target_logit, const T *logits,
                                       const int32_t *targets, int n_valid, int vocab_lo,
                                       int ld) {
    int r = blockIdx.x;
    const T *x = logits + (size_t)r * ld;
    float m = -INFINITY;
    for (int g = threadIdx.x; g < zt_ce_groups(n_valid, W); g += blockDim.x) {
        float v[W];
        ce_group<W>(v, x, g);
        for (int k = 0; k < W; k++)
            if (g * W + k < n_valid) m = v[k] > m ? v[k] : m;
    }
    m = zt_block_reduce(m, zt_op_max_f());
    if (threadIdx.x == 0) {
        row_max[r] = m; // -inf for a slice of padding only
        int t = targets[r] - vocab_lo;
        target_logit[r] = t >= 0 && t < n_valid ? zt_widen(x[t]) : 0.0f;
    }
}

template <int W, typename T>
static __global__ void ce_sumexp_kernel(float *sumexp, const T *logits, const float *row_max,
                                        int n_valid, int ld) {
    int r = blockIdx.x;
    const T *x = logits + (size_t)r * ld;
    float s = 0.0f, m = row_max[r];
    for (int g = threadIdx.x; g < zt_ce_groups(n_valid, W); g += blockDim.x) {
        float v[W];
        ce_group<W>(v, x, g);
        for (int k = 0; k < W; k++)
            if (g * W + k < n_valid) s += expf(v[k] - m);
    }
    s = zt_block_reduce(s, zt_op_sum_f());
    if (threadIdx.x == 0) sumexp[r] = s;
}

// dlogits may alias logits: each group is read whole, then written, by one thread. The groups
// cover [0, ld): the padding's gradient is 0.
template <int W, typename T>
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
    for (int g = threadIdx.x; g < ld / W; g += blockDim.x) {
        float v[W];
        T d[W];
        ce_group<W>(v, x, g);
        for (int k = 0; k < W; k++) {
            int i = g * W + k;
            zt_store(&d[k], i < n_valid ? scale * (expf(v[k] - lse) - (i == t ? 1.0f : 0.0f))
                                        : 0.0f);
        }
        zt_vstore<W>(dx + (size_t)g * W, d);
    }
}

// The vector width a row's accesses take: 16 bytes of T where the row length and every row
// pointer allow it, else single columns.
template <typename T> static int ce_width(int ld, const void *a, const void *b) {
    const int W = 16 / sizeof(T);
    return ld % W == 0 && zt_aligned16(a) && zt_aligned16(b) ? W : 1;
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
    if (ce_width<T>(ld, logits, logits) > 1)
        ce_stats_kernel<16 / sizeof(T), T><<<n, CE_THREADS, 0, st>>>(
            row_max, target_logit, logits, targets, n_valid, vocab_lo, ld);
    else
        ce_stats_kernel<1, T><<<n, CE_THREADS, 0, st>>>(row_max, target_logit, logits, targets,
                                                        n_valid, vocab_lo, ld);
    ZT_CUDA_LAUNCHED(st, name);
}

template <typename T>
static void ce_sumexp(cudaStream_t st, float *sumexp, const T *logits, const float *row_max,
                      int n, int n_valid, int ld, const char *name) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    if (ce_width<T>(ld, logits, logits) > 1)
        ce_sumexp_kernel<16 / sizeof(T), T><<<n, CE_THREADS, 0, st>>>(sumexp, logits, row_max,
                                                                      n_valid, ld);
    else ce_sumexp_kernel<1, T><<<n, CE_THREADS, 0, st>>>(sumexp, logits, row_max, n_valid, ld);
    ZT_CUDA_LAUNCHED(st, name);
}

template <typename T>
static void ce_finish(cudaStream_t st, T *dlogits, float *losses, const T *logits,
                      const int32_t *targets, const float *row_max, const float *sumexp,
                      const float *target_logit, float scale, int n, int n_valid, int vocab_lo,
                      int ld, const char *name) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    if (ce_width<T>(ld, logits, dlogits) > 1)
        ce_finish_kernel<16 / sizeof(T), T><<<n, CE_THREADS, 0, st>>>(
            dlogits, losses, logits, targets, row_max, sumexp, target_logit, scale, n_valid,
            vocab_lo, ld);
    else
        ce_finish_kernel<1, T><<<n, CE_THREADS, 0, st>>>(dlogits, losses, logits, targets,
                                                         row_max, sumexp, target_logit, scale,
                                                         n_valid, vocab_lo, ld);
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
