// LayerNorm on the GPU around layernorm_math.h's row functions, the CPU's own math.
#include "cuda_check.h"
#include "kernels_cuda.h"
#include "layernorm_math.h"

// One thread per row runs zt_layernorm_row_forward itself: the CPU's arithmetic in the
// CPU's order (bit-identical to the CPU when nvcc contracts no FMAs: -fmad=false).
// TODO(perf): a warp per row (coalesced, a shuffle reduction) changes the summation
// order; do it with a tolerance test when the profile asks for it.
static __global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd,
                                                const float *inp, const float *w, const float *b,
                                                int N, int C) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    zt_layernorm_row_forward(out + (size_t)n * C, mean + n, rstd + n, inp + (size_t)n * C, w, b,
                             C);
}

static __global__ void layernorm_backward_dx_kernel(float *dinp, const float *dout,
                                                    const float *inp, const float *w,
                                                    const float *mean, const float *rstd, int N,
                                                    int C) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    zt_layernorm_row_backward_dx(dinp + (size_t)n * C, dout + (size_t)n * C, inp + (size_t)n * C,
                                 w, mean[n], rstd[n], C);
}

// dw, db: one thread per column, rows in order (layernorm_cpu.c's order).
static __global__ void layernorm_backward_dw_kernel(float *dw, float *db, const float *dout,
                                                    const float *inp, const float *mean,
                                                    const float *rstd, int N, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float sw = dw[c], sb = db[c];
    for (int n = 0; n < N; n++) {
        float d = dout[(size_t)n * C + c];
        sb += d;
        sw += d * (inp[(size_t)n * C + c] - mean[n]) * rstd[n];
    }
    dw[c] = sw;
    db[c] = sb;
}

extern "C" void zt_cuda_layernorm_forward(cudaStream_t st, float *out, float *mean, float *rstd,
                                          const float *inp, const float *w, const float *b,
                                          int N, int C) {
    ZT_ASSERT(N >= 0 && C > 0);
    if (!N) return;
    layernorm_forward_kernel<<<ZT_CUDA_GRID(N), ZT_CUDA_THREADS, 0, st>>>(out, mean, rstd, inp,
                                                                          w, b, N, C);
    ZT_CUDA_LAUNCHED(st, "layernorm_forward");
}

extern "C" void zt_cuda_layernorm_backward(cudaStream_t st, float *dinp, float *dw, float *db,
                                           const float *dout, const float *inp, const float *w,
                                           const float *mean, const float *rstd, int N, int C) {
    ZT_ASSERT(N >= 0 && C > 0);
    if (!N) return;
    layernorm_backward_dx_kernel<<<ZT_CUDA_GRID(N), ZT_CUDA_THREADS, 0, st>>>(
        dinp, dout, inp, w, mean, rstd, N, C);
    ZT_CUDA_LAUNCHED(st, "layernorm_backward_dx");
    layernorm_backward_dw_kernel<<<ZT_CUDA_GRID(C), ZT_CUDA_THREADS, 0, st>>>(dw, db, dout, inp,
                                                                              mean, rstd, N, C);
    ZT_CUDA_LAUNCHED(st, "layernorm_backward_dw");
}
