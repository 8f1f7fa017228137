// Elementwise CUDA kernels: GELU (gelu_math.h), residual add (fp32, and bf16 for the bf16
// residual stream), the bias of the linear
// layers (alone, or with the GELU after c_fc in one pass) (128-bit accesses, vec128_cuda.cuh;
// grid-stride loops so any n fits the grid), and the bias
// gradient (column sums over fixed row chunks, colsum_cuda.cuh; fp32, or bf16 for the bf16
// group's: widened, summed into in fp32, rounded once).
#include "colsum_cuda.cuh"
#include "cuda_check.h"
#include "elem_io_cuda.cuh"
#include "gelu_math.h"
#include "kernels_cuda.h"
#include "residual_bf16_cuda.h"
#include "vec128_cuda.cuh"

// The flat maps as vec128_cuda.cuh ops: 4 fp32 or 8 bf16 per 128-bit access.
#define FP32_W 4
#define BF16_W 8

struct gelu_forward_op {
    float *out;
    const float *inp;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) float x[W];
        zt_vload<W>(x, inp + i);
        for (int k = 0; k < W; k++) x[k] = zt_gelu(x[k]);
        zt_vstore<W>(out + i, x);
    }
};

// One read of the GEMM's output and two writes, where fill_bias, a beta = 1 GEMM and
// gelu_forward read and write it twice more. A group stays in one row (OC % W == 0).
struct bias_gelu_forward_op {
    float *pre, *out;
    const float *bias;
    int OC;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) float x[W], b[W];
        zt_vload<W>(x, pre + i);
        if (bias) {
            zt_vload<W>(b, bias + i % OC);
            for (int k = 0; k < W; k++) x[k] += b[k];
            zt_vstore<W>(pre + i, x);
        }
        for (int k = 0; k < W; k++) x[k] = zt_gelu(x[k]);
        zt_vstore<W>(out + i, x);
    }
};

// dinp may equal dout (as on the CPU): a group reads before it writes.
struct gelu_backward_op {
    float *dinp;
    const float *inp, *dout;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) float x[W], d[W];
        zt_vload<W>(x, inp + i);
        zt_vload<W>(d, dout + i);
        for (int k = 0; k < W; k++) x[k] = zt_gelu_grad(x[k]) * d[k];
        zt_vstore<W>(dinp + i, x);
    }
};

// out and a fp32 or bf16 (T: the bf16 residual stream's add_bf16), b fp32: the widened values
// added in fp32, rounded once as stored (elem_io_cuda.cuh).
template <typename T> struct add_op {
    T *out;
    const T *a;
    const float *b;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) T x[W];
        alignas(16) float y[W];
        zt_vload<W>(x, a + i);
        zt_vload<W>(y, b + i);
        for (int k = 0; k < W; k++) zt_store(x + k, zt_widen(x[k]) + zt_widen(y[k]));
        zt_vstore<W>(out + i, x);
    }
};

struct fill_bias_op {
    float *out;
    const float *bias;
    int OC;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) float b[W];
        zt_vload<W>(b, bias + i % OC);
        zt_vstore<W>(out + i, b);
    }
};

// beta 0 writes zeros without reading (BLAS's rule: no NaN from an unset C).
static __global__ void scale_matrix_kernel(float *c, int ld, int rows, int cols, float beta) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)rows * cols;
         i += (size_t)gridDim.x * blockDim.x) {
        float *x = &c[zt_sub_at(i, cols, ld)];
        *x = beta == 0.0f ? 0.0f : beta * *x;
    }
}

// Row n's term of column c of dbias: dout itself (fp32, or bf16 widened).
template <typename T> struct bias_terms {
    const T *dout;
    int OC;
    __device__ void operator()(float s[1], int n, int c) const {
        s[0] += zt_widen(dout[(size_t)n * OC + c]);
    }
};

// Enough blocks to fill the GPU, not one per element (grid-stride loops do the rest).
static unsigned elementwise_grid(size_t n) { return zt_grid_stride(n, ZT_CUDA_THREADS); }

extern "C" void zt_cuda_gelu_forward(cudaStream_t st, float *out, const float *inp, size_t n) {
    int vec = zt_aligned16(out) && zt_aligned16(inp);
    zt_vmap<FP32_W>(st, gelu_forward_op{out, inp}, n, vec, "gelu_forward");
}

extern "C" void zt_cuda_bias_gelu_forward(cudaStream_t st, float *pre, float *out,
                                          const float *bias, int N, int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!N || !OC) return;
    int vec = zt_aligned16(pre) && zt_aligned16(out) && zt_aligned16(bias) && OC % FP32_W == 0;
    zt_vmap<FP32_W>(st, bias_gelu_forward_op{pre, out, bias, OC}, (size_t)N * OC, vec,
                    "bias_gelu_forward");
}

extern "C" void zt_cuda_gelu_backward(cudaStream_t st, float *dinp, const float *inp,
                                      const float *dout, size_t n) {
    int vec = zt_aligned16(dinp) && zt_aligned16(inp) && zt_aligned16(dout);
    zt_vmap<FP32_W>(st, gelu_backward_op{dinp, inp, dout}, n, vec, "gelu_backward");
}

extern "C" void zt_cuda_add(cudaStream_t st, float *out, const float *a, const float *b,
                            size_t n) {
    int vec = zt_aligned16(out) && zt_aligned16(a) && zt_aligned16(b);
    zt_vmap<FP32_W>(st, add_op<float>{out, a, b}, n, vec, "add");
}

extern "C" void zt_cuda_add_bf16(cudaStream_t st, zt_bf16 *out, const zt_bf16 *a,
                                 const float *b, size_t n) {
    int vec = zt_aligned16(out) && zt_aligned16(a) && zt_aligned16(b);
    zt_vmap<BF16_W>(st, add_op<zt_bf16>{out, a, b}, n, vec, "add_bf16");
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
    int vec = zt_aligned16(out) && zt_aligned16(bias) && OC % FP32_W == 0;
    zt_vmap<FP32_W>(st, fill_bias_op{out, bias, OC}, (size_t)N * OC, vec, "fill_bias");
}

extern "C" void zt_cuda_bias_backward(cudaStream_t st, float *dbias, const float *dout,
                                      float *work, int N, int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!OC || !N) return;
    zt_colsum<1, float>(st, dbias, NULL, work, bias_terms<float>{dout, OC}, N, OC,
                        "bias_backward");
}

extern "C" void zt_cuda_bias_backward_bf16(cudaStream_t st, zt_bf16 *dbias, const void *dout,
                                           zt_dtype dout_dt, float *work, int N, int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!OC || !N) return;
    if (dout_dt == ZT_BF16)
        zt_colsum<1, zt_bf16>(st, dbias, NULL, work,
                              bias_terms<zt_bf16>{(const zt_bf16 *)dout, OC}, N, OC,
                              "bias_backward_bf16");
    else
        zt_colsum<1, zt_bf16>(st, dbias, NULL, work, bias_terms<float>{(const float *)dout, OC},
                              N, OC, "bias_backward_bf16");
}
