// The sliced cross entropy's three passes over bf16 logits (backend_ops.h's ce_slice_*_bf16):
// crossentropy_cuda.cu's kernels, one block per row and thread t on columns t, t + 256, ...,
// combined in the same fixed tree, with each logit widened (exact) as it is read; the
// statistics and losses fp32, the gradient rounded once into bf16 in place.
#include "cuda_check.h" // first: it declares the C helpers extern "C"
#include "bf16_cuda.h"
#include "block_reduce_cuda.cuh"
#include "softmax_math.h"

#define CE_THREADS 256
static_assert(CE_THREADS <= ZT_REDUCE_MAX_THREADS, "zt_block_reduce's buffer");

static __device__ float logit_at(const zt_bf16 *x, int i) { return zt_bf16_to_fp32(x[i]); }

static __global__ void ce_stats_bf16_kernel(float *row_max, float *target_logit,
                                            const zt_bf16 *logits, const int32_t *targets,
                                            int n_valid, int vocab_lo, int ld) {
    int r = blockIdx.x;
    const zt_bf16 *x = logits + (size_t)r * ld;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < n_valid; i += blockDim.x) {
        float v = logit_at(x, i);
        m = v > m ? v : m;
    }
    m = zt_block_reduce(m, zt_op_max_f());
    if (threadIdx.x == 0) {
        row_max[r] = m; // -inf for a slice of padding only
        int t = targets[r] - vocab_lo;
        target_logit[r] = t >= 0 && t < n_valid ? logit_at(x, t) : 0.0f;
    }
}

// zt_row_sumexp_strided's sum (its scale 1: scale * x is x exactly) on the widened values.
static __global__ void ce_sumexp_bf16_kernel(float *sumexp, const zt_bf16 *logits,
                                             const float *row_max, int n_valid, int ld) {
    int r = blockIdx.x;
    const zt_bf16 *x = logits + (size_t)r * ld;
    float s = 0.0f, m = row_max[r];
    for (int i = threadIdx.x; i < n_valid; i += blockDim.x) s += expf(logit_at(x, i) - m);
    s = zt_block_reduce(s, zt_op_sum_f());
    if (threadIdx.x == 0) sumexp[r] = s;
}

// dlogits may alias logits: each element is read, then written, by one thread.
// zt_ce_row_backward_strided's element, rounded.
static __global__ void ce_finish_bf16_kernel(zt_bf16 *dlogits, float *losses,
                                             const zt_bf16 *logits, const int32_t *targets,
                                             const float *row_max, const float *sumexp,
                                             const float *target_logit, float scale, int n_valid,
                                             int vocab_lo, int ld) {
    int r = blockIdx.x;
    float lse = row_max[r] + logf(sumexp[r]);
    if (threadIdx.x == 0) losses[r] = zt_ce_loss(lse, target_logit[r]);
    const zt_bf16 *x = logits + (size_t)r * ld;
    zt_bf16 *dx = dlogits + (size_t)r * ld;
    int t = targets[r] - vocab_lo; // outside [0, n_valid) when another slice has it
    for (int i = threadIdx.x; i < n_valid; i += blockDim.x)
        dx[i] = zt_bf16_from_fp32(scale * (expf(logit_at(x, i) - lse) - (i == t ? 1.0f : 0.0f)));
    for (int i = n_valid + threadIdx.x; i < ld; i += blockDim.x) dx[i] = 0; // padding
}

static void ce_check(int n, int n_valid, int ld) {
    ZT_ASSERT(n >= 0 && n_valid >= 0 && n_valid <= ld);
    ZT_ASSERTF(n <= 2147483647, "cross entropy: %d rows exceed the grid", n);
}

extern "C" void zt_cuda_ce_slice_stats_bf16(cudaStream_t st, float *row_max, float *target_logit,
                                            const zt_bf16 *logits, const int32_t *targets, int n,
                                            int n_valid, int vocab_lo, int ld) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    ce_stats_bf16_kernel<<<n, CE_THREADS, 0, st>>>(row_max, target_logit, logits, targets,
                                                   n_valid, vocab_lo, ld);
    ZT_CUDA_LAUNCHED(st, "ce_slice_stats_bf16");
}

extern "C" void zt_cuda_ce_slice_sumexp_bf16(cudaStream_t st, float *sumexp, const zt_bf16 *logits,
                                             const float *row_max, int n, int n_valid, int ld) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    ce_sumexp_bf16_kernel<<<n, CE_THREADS, 0, st>>>(sumexp, logits, row_max, n_valid, ld);
    ZT_CUDA_LAUNCHED(st, "ce_slice_sumexp_bf16");
}

extern "C" void zt_cuda_ce_slice_finish_bf16(cudaStream_t st, zt_bf16 *dlogits, float *losses,
                                             const zt_bf16 *logits, const int32_t *targets,
                                             const float *row_max, const float *sumexp,
                                             const float *target_logit, float scale, int n,
                                             int n_valid, int vocab_lo, int ld) {
    ce_check(n, n_valid, ld);
    if (!n) return;
    ce_finish_bf16_kernel<<<n, CE_THREADS, 0, st>>>(dlogits, losses, logits, targets, row_max,
                                                    sumexp, target_logit, scale, n_valid,
                                                    vocab_lo, ld);
    ZT_CUDA_LAUNCHED(st, "ce_slice_finish_bf16");
}
