// bf16 kernels on the GPU: conversions, the bias, GELU on bf16 and the embedding with bf16
// weights.
// One element per thread in grid-stride loops; values widened exactly, computed in fp32 and
// rounded by bf16_math.h (nearest even, as the CPU), so where the CPU's element arithmetic is
// only conversions and adds the result is the CPU's bit for bit.
#include "cuda_check.h"
#include "bf16_cuda.h"
#include "gelu_math.h"

#define GRID_STRIDE(i, n)                                                        \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);      \
         i += (size_t)gridDim.x * blockDim.x)

static unsigned grid_of(size_t n) { return zt_grid_stride(n, ZT_CUDA_THREADS); }

static __global__ void from_fp32_kernel(zt_bf16 *out, const float *in, size_t n) {
    GRID_STRIDE(i, n) out[i] = zt_bf16_from_fp32(in[i]);
}

static __global__ void to_fp32_kernel(float *out, const zt_bf16 *in, size_t n) {
    GRID_STRIDE(i, n) out[i] = zt_bf16_to_fp32(in[i]);
}

static __global__ void round_matrix_kernel(zt_bf16 *out, int ld_out, const float *in, int ld_in,
                                           int rows, int cols) {
    GRID_STRIDE(i, (size_t)rows * cols)
    out[zt_sub_at(i, cols, ld_out)] = zt_bf16_from_fp32(in[zt_sub_at(i, cols, ld_in)]);
}

static __global__ void widen_matrix_kernel(float *out, int ld_out, const zt_bf16 *in, int ld_in,
                                           int rows, int cols) {
    GRID_STRIDE(i, (size_t)rows * cols)
    out[zt_sub_at(i, cols, ld_out)] = zt_bf16_to_fp32(in[zt_sub_at(i, cols, ld_in)]);
}

// A bit copy of a sub-matrix (bf16 or fp32 values as they are: T is uint16_t or float).
template <typename T>
static __global__ void copy_matrix_kernel(T *out, int ld_out, const T *in, int ld_in, int rows,
                                          int cols) {
    GRID_STRIDE(i, (size_t)rows * cols)
    out[zt_sub_at(i, cols, ld_out)] = in[zt_sub_at(i, cols, ld_in)];
}

static __global__ void bias_forward_kernel(float *out, const zt_bf16 *bias, int N, int OC) {
    GRID_STRIDE(i, (size_t)N * OC) out[i] += zt_bf16_to_fp32(bias[i % OC]);
}

static __global__ void bias_broadcast_kernel(zt_bf16 *out, const zt_bf16 *bias, int N, int OC) {
    GRID_STRIDE(i, (size_t)N * OC) out[i] = bias[i % OC];
}

static __global__ void gelu_forward_kernel(zt_bf16 *out, const zt_bf16 *inp, size_t n) {
    GRID_STRIDE(i, n) out[i] = zt_bf16_from_fp32(zt_gelu(zt_bf16_to_fp32(inp[i])));
}

// dinp may be dout: each element reads its dout before it writes.
static __global__ void gelu_backward_kernel(float *dinp, const zt_bf16 *inp, const float *dout,
                                            size_t n) {
    GRID_STRIDE(i, n) dinp[i] = zt_gelu_grad(zt_bf16_to_fp32(inp[i])) * dout[i];
}

static __global__ void sums_add_kernel(double *acc, const double *r, int first) {
    acc[0] = first ? r[0] : acc[0] + r[0];
    acc[1] = first ? r[1] : acc[1] + r[1];
}

static __global__ void encoder_forward_kernel(float *out, const int32_t *tokens,
                                              const zt_bf16 *wte, const zt_bf16 *wpe,
                                              int vocab_lo, int vocab_rows, int N, int T, int C) {
    GRID_STRIDE(i, (size_t)N * C) {
        int n = (int)(i / C), c = (int)(i % C), row = tokens[n] - vocab_lo;
        float e = row >= 0 && row < vocab_rows ? zt_bf16_to_fp32(wte[(size_t)row * C + c]) : 0.0f;
        float p = wpe ? zt_bf16_to_fp32(wpe[(size_t)(n % T) * C + c]) : 0.0f;
        out[i] = e + p;
    }
}

// The embedding's wte gradient from the tokens grouped by row (zt_cuda_embed_sort, the fp32
// backward's): block i, where a row's run starts, sums the run's tokens in token order into
// the widened gradient and rounds once (the CPU's sums: it sorts by row, then index).
static __global__ void encoder_backward_wte_kernel(zt_bf16 *dwte, const float *dout,
                                                   const uint64_t *keys, int N, int C) {
    size_t i = blockIdx.x;
    if (!zt_embed_run_start(keys, i)) return; // the same for the whole block
    size_t row = zt_embed_key_row(keys[i]), end = zt_embed_run_end(keys, (size_t)N, i);
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        zt_bf16 *g = dwte + row * C + c;
        *g = zt_bf16_from_fp32(zt_embed_run_add(zt_bf16_to_fp32(*g), dout, keys, i, end, C, c));
    }
}

// Position p's gradient takes tokens p, p + T, ... in order (the CPU's), one rounding.
static __global__ void encoder_backward_wpe_kernel(zt_bf16 *dwpe, const float *dout, int N, int T,
                                                   int C, int positions) {
    GRID_STRIDE(i, (size_t)positions * C) {
        int p = (int)(i / C), c = (int)(i % C);
        float acc = zt_embed_pos_add(zt_bf16_to_fp32(dwpe[i]), dout, p, N, T, C, c);
        dwpe[i] = zt_bf16_from_fp32(acc);
    }
}

extern "C" void zt_cuda_bf16_from_fp32(cudaStream_t st, zt_bf16 *out, const float *in, size_t n) {
    if (!n) return;
    from_fp32_kernel<<<grid_of(n), ZT_CUDA_THREADS, 0, st>>>(out, in, n);
    ZT_CUDA_LAUNCHED(st, "bf16_from_fp32");
}

extern "C" void zt_cuda_bf16_to_fp32(cudaStream_t st, float *out, const zt_bf16 *in, size_t n) {
    if (!n) return;
    to_fp32_kernel<<<grid_of(n), ZT_CUDA_THREADS, 0, st>>>(out, in, n);
    ZT_CUDA_LAUNCHED(st, "bf16_to_fp32");
}

extern "C" void zt_cuda_bf16_round_matrix(cudaStream_t st, zt_bf16 *out, int ld_out,
                                          const float *in, int ld_in, int rows, int cols) {
    ZT_ASSERT(rows >= 0 && cols >= 0 && ld_out >= cols && ld_in >= cols);
    if (!rows || !cols) return;
    size_t n = (size_t)rows * cols;
    round_matrix_kernel<<<grid_of(n), ZT_CUDA_THREADS, 0, st>>>(out, ld_out, in, ld_in, rows,
                                                                cols);
    ZT_CUDA_LAUNCHED(st, "bf16_round_matrix");
}

extern "C" void zt_cuda_bf16_widen_matrix(cudaStream_t st, float *out, int ld_out,
                                          const zt_bf16 *in, int ld_in, int rows, int cols) {
    ZT_ASSERT(rows >= 0 && cols >= 0 && ld_out >= cols && ld_in >= cols);
    if (!rows || !cols) return;
    size_t n = (size_t)rows * cols;
    widen_matrix_kernel<<<grid_of(n), ZT_CUDA_THREADS, 0, st>>>(out, ld_out, in, ld_in, rows,
                                                                cols);
    ZT_CUDA_LAUNCHED(st, "bf16_widen_matrix");
}

extern "C" void zt_cuda_copy_matrix(cudaStream_t st, void *out, int ld_out, const void *in,
                                    int ld_in, int rows, int cols, size_t elem) {
    ZT_ASSERT(rows >= 0 && cols >= 0 && ld_out >= cols && ld_in >= cols);
    ZT_ASSERT(elem == sizeof(zt_bf16) || elem == sizeof(float));
    if (!rows || !cols) return;
    unsigned g = grid_of((size_t)rows * cols);
    if (elem == sizeof(float))
        copy_matrix_kernel<<<g, ZT_CUDA_THREADS, 0, st>>>((float *)out, ld_out,
                                                          (const float *)in, ld_in, rows, cols);
    else
        copy_matrix_kernel<<<g, ZT_CUDA_THREADS, 0, st>>>((zt_bf16 *)out, ld_out,
                                                          (const zt_bf16 *)in, ld_in, rows, cols);
    ZT_CUDA_LAUNCHED(st, "copy_matrix");
}

extern "C" void zt_cuda_bias_forward_bf16(cudaStream_t st, float *out, const zt_bf16 *bias, int N,
                                          int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!N || !OC) return;
    bias_forward_kernel<<<grid_of((size_t)N * OC), ZT_CUDA_THREADS, 0, st>>>(out, bias, N, OC);
    ZT_CUDA_LAUNCHED(st, "bias_forward_bf16");
}

extern "C" void zt_cuda_bias_broadcast_bf16(cudaStream_t st, zt_bf16 *out, const zt_bf16 *bias,
                                            int N, int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    if (!N || !OC) return;
    bias_broadcast_kernel<<<grid_of((size_t)N * OC), ZT_CUDA_THREADS, 0, st>>>(out, bias, N, OC);
    ZT_CUDA_LAUNCHED(st, "bias_broadcast_bf16");
}

extern "C" void zt_cuda_gelu_forward_bf16(cudaStream_t st, zt_bf16 *out, const zt_bf16 *inp,
                                          size_t n) {
    if (!n) return;
    gelu_forward_kernel<<<grid_of(n), ZT_CUDA_THREADS, 0, st>>>(out, inp, n);
    ZT_CUDA_LAUNCHED(st, "gelu_forward_bf16");
}

extern "C" void zt_cuda_gelu_backward_bf16(cudaStream_t st, float *dinp, const zt_bf16 *inp,
                                           const float *dout, size_t n) {
    if (!n) return;
    gelu_backward_kernel<<<grid_of(n), ZT_CUDA_THREADS, 0, st>>>(dinp, inp, dout, n);
    ZT_CUDA_LAUNCHED(st, "gelu_backward_bf16");
}

extern "C" void zt_cuda_sums_add(cudaStream_t st, double *acc, const double *r, int first) {
    sums_add_kernel<<<1, 1, 0, st>>>(acc, r, first);
    ZT_CUDA_LAUNCHED(st, "sums_add");
}

extern "C" void zt_cuda_encoder_forward_bf16(cudaStream_t st, float *out, const int32_t *tokens,
                                             const zt_bf16 *wte, const zt_bf16 *wpe,
                                             int vocab_lo, int vocab_rows, int N, int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0);
    if (!N) return;
    encoder_forward_kernel<<<grid_of((size_t)N * C), ZT_CUDA_THREADS, 0, st>>>(
        out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
    ZT_CUDA_LAUNCHED(st, "encoder_forward_bf16");
}

extern "C" void zt_cuda_encoder_backward_bf16(const zt_cuda_bf16 *b, zt_bf16 *dwte,
                                              zt_bf16 *dwpe, const float *dout,
                                              const int32_t *tokens, int vocab_lo,
                                              int vocab_rows, int N, int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0);
    if (!N) return;
    cudaStream_t st = b->stream;
    const uint64_t *keys = zt_cuda_embed_sort(st, b->embed, tokens, vocab_lo, vocab_rows, N);
    encoder_backward_wte_kernel<<<(unsigned)N, ZT_CUDA_THREADS, 0, st>>>(dwte, dout, keys, N, C);
    ZT_CUDA_LAUNCHED(st, "encoder_backward_bf16 wte");
    if (!dwpe) return;
    int positions = N < T ? N : T;
    encoder_backward_wpe_kernel<<<grid_of((size_t)positions * C), ZT_CUDA_THREADS, 0, st>>>(
        dwpe, dout, N, T, C, positions);
    ZT_CUDA_LAUNCHED(st, "encoder_backward_bf16 wpe");
}
