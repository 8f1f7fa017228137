// Elementwise CUDA kernels: GELU (gelu_math.h), residual add, the bias of the linear
// layers. One thread per element; grid-stride loops so any n fits the grid.
#include "cuda_check.h"
#include "gelu_math.h"
#include "kernels_cuda.h"

static __global__ void gelu_forward_kernel(float *out, const float *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = zt_gelu(inp[i]);
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

static __global__ void fill_bias_kernel(float *out, const float *bias, int N, int OC) {
    size_t n = (size_t)N * OC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = bias[i % OC];
}

// One thread per column, rows in order: the CPU's summation order (zt_bias_backward), so
// the result is the same bit for bit. Reads are coalesced across a warp's columns.
// TODO(perf): OC threads is little parallelism for small OC; split rows into chunks
// reduced in a fixed order when this shows in a profile.
static __global__ void bias_backward_kernel(float *dbias, const float *dout, int N, int OC) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OC) return;
    float s = dbias[o];
    for (int n = 0; n < N; n++) s += dout[(size_t)n * OC + o];
    dbias[o] = s;
}

// Enough blocks to fill the GPU, not one per element (grid-stride loops do the rest).
static unsigned elementwise_grid(size_t n) { return zt_grid_stride(n, ZT_CUDA_THREADS); }

extern "C" void zt_cuda_gelu_forward(cudaStream_t st, float *out, const float *inp, size_t n) {
    if (!n) return;
    gelu_forward_kernel<<<elementwise_grid(n), ZT_CUDA_THREADS, 0, st>>>(out, inp, n);
    ZT_CUDA_LAUNCHED(st, "gelu_forward");
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

extern "C" void zt_cuda_fill_bias(cudaStream_t st, float *out, const float *bias, int N, int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!N || !OC) return;
    size_t n = (size_t)N * OC;
    fill_bias_kernel<<<elementwise_grid(n), ZT_CUDA_THREADS, 0, st>>>(out, bias, N, OC);
    ZT_CUDA_LAUNCHED(st, "fill_bias");
}

extern "C" void zt_cuda_bias_backward(cudaStream_t st, float *dbias, const float *dout, int N,
                                      int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!OC) return;
    bias_backward_kernel<<<ZT_CUDA_GRID(OC), ZT_CUDA_THREADS, 0, st>>>(dbias, dout, N, OC);
    ZT_CUDA_LAUNCHED(st, "bias_backward");
}
