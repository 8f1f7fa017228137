// Elementwise CUDA kernels: GELU (gelu_math.h), residual add, the bias of the linear
// layers (alone, or with the GELU after c_fc in one pass) (one thread per element; grid-stride loops so any n fits the grid), and the bias
// gradient (column sums over fixed row chunks, colsum_cuda.cuh).
#include "colsum_cuda.cuh"
#include "cuda_check.h"
#include "gelu_math.h"
#include "kernels_cuda.h"

static __global__ void gelu_forward_kernel(float *out, const float *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = zt_gelu(inp[i]);
}

// One read of the GEMM's output and two writes, where fill_bias, a beta = 1 GEMM and
// gelu_forward read and write it twice more.
static __global__ void bias_gelu_forward_kernel(float *pre, float *out, const float *bias, int N,
                                                int OC) {
    size_t n = (size_t)N * OC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = bias ? pre[i] + bias[i % OC] : pre[i];
        pre[i] = x;
        out[i] = zt_gelu(x);
    }
}

// dinp may equal dout (as on the CPU).
static __global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout,
                                            size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dinp[i] = zt_gelu_grad(inp[i]) * dout[i];
}

static __global__ void add_kernel(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

// beta 0 writes zeros without reading (BLAS's rule: no NaN from an unset C).
static __global__ void scale_matrix_kernel(float *c, int ld, int rows, int cols, float beta) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)rows * cols;
         i += (size_t)gridDim.x * blockDim.x) {
        float *x = &c[zt_sub_at(i, cols, ld)];
        *x = beta == 0.0f ? 0.0f : beta * *x;
    }
}

static __global__ void fill_bias_kernel(float *out, const float *bias, int N, int OC) {
    size_t n = (size_t)N * OC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = bias[i % OC];
}

// Row n's term of column c of dbias: dout itself.
struct bias_terms {
    const float *dout;
    int OC;
    __device__ void operator()(float s[1], int n, int c) const { s[0] += dout[(size_t)n * OC + c]; }
};

// Enough blocks to fill the GPU, not one per element (grid-stride loops do the rest).
static unsigned elementwise_grid(size_t n) { return zt_grid_stride(n, ZT_CUDA_THREADS); }

extern "C" void zt_cuda_gelu_forward(cudaStream_t st, float *out, const float *inp, size_t n) {
    if (!n) return;
    gelu_forward_kernel<<<elementwise_grid(n), ZT_CUDA_THREADS, 0, st>>>(out, inp, n);
    ZT_CUDA_LAUNCHED(st, "gelu_forward");
}

extern "C" void zt_cuda_bias_gelu_forward(cudaStream_t st, float *pre, float *out,
                                          const float *bias, int N, int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!N || !OC) return;
    size_t n = (size_t)N * OC;
    bias_gelu_forward_kernel<<<elementwise_grid(n), ZT_CUDA_THREADS, 0, st>>>(pre, out, bias, N,
                                                                              OC);
    ZT_CUDA_LAUNCHED(st, "bias_gelu_forward");
}

extern "C" void zt_cuda_gelu_backward(cudaStream_t st, float *dinp, const float *inp,
                                      const float *dout, size_t n) {
    if (!n) return;
    gelu_backward_kernel<<<elementwise_grid(n), ZT_CUDA_THREADS, 0, st>>>(dinp, inp, dout, n);
    ZT_CUDA_LAUNCHED(st, "gelu_backward");
}

extern "C" void zt_cuda_add(cudaStream_t st, float *out, const float *a, const float *b,
                            size_t n) {
    if (!n) return;
    add_kernel<<<elementwise_grid(n), ZT_CUDA_THREADS, 0, st>>>(out, a, b, n);
    ZT_CUDA_LAUNCHED(st, "add");
}

extern "C" void zt_cuda_scale_matrix(cudaStream_t st, float *c, int ld, int rows, int cols,
                                     float beta) {
    ZT_ASSERT(rows >= 0 && cols >= 0 && ld >= cols);
    size_t n = (size_t)rows * cols;
    if (!n) return;
    scale_matrix_kernel<<<elementwise_grid(n), ZT_CUDA_THREADS, 0, st>>>(c, ld, rows, cols, beta);
    ZT_CUDA_LAUNCHED(st, "scale_matrix");
}

extern "C" void zt_cuda_fill_bias(cudaStream_t st, float *out, const float *bias, int N, int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!N || !OC) return;
    size_t n = (size_t)N * OC;
    fill_bias_kernel<<<elementwise_grid(n), ZT_CUDA_THREADS, 0, st>>>(out, bias, N, OC);
    ZT_CUDA_LAUNCHED(st, "fill_bias");
}

extern "C" void zt_cuda_bias_backward(cudaStream_t st, float *dbias, const float *dout,
                                      float *work, int N, int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!OC || !N) return;
    zt_colsum<1>(st, dbias, NULL, work, bias_terms{dout, OC}, N, OC, "bias_backward");
}
