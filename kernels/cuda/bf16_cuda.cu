// bf16 kernels on the GPU: conversions, the bias, GELU on bf16 and the embedding with bf16
// weights.
// Grid-stride loops, the flat maps in 128-bit groups (vec128_cuda.cuh); values widened
// exactly, computed in fp32 and rounded by bf16_math.h (nearest even, as the CPU), so where
// the CPU's element arithmetic is only conversions and adds the result is the CPU's bit for bit.
#include "cuda_check.h"
#include "bf16_cuda.h"
#include "elem_io_cuda.cuh"
#include "gelu_math.h"
#include "vec128_cuda.cuh"

#define GRID_STRIDE(i, n)                                                        \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);      \
         i += (size_t)gridDim.x * blockDim.x)

static unsigned grid_of(size_t n) { return zt_grid_stride(n, ZT_CUDA_THREADS); }

// The flat maps as vec128_cuda.cuh ops: 8 elements per group (one 128-bit access of bf16, two
// of fp32).
#define BF16_W 8

// The conversions, both ways (I, O: fp32 and bf16): widened as read, rounded as stored
// (elem_io_cuda.cuh).
template <typename O, typename I> struct convert_op {
    O *out;
    const I *in;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) I x[W];
        alignas(16) O y[W];
        zt_vload<W>(x, in + i);
        for (int k = 0; k < W; k++) zt_store(y + k, zt_widen(x[k]));
        zt_vstore<W>(out + i, y);
    }
};

template <typename O, typename I>
static __global__ void convert_matrix_kernel(O *out, int ld_out, const I *in, int ld_in,
                                             int rows, int cols) {
    GRID_STRIDE(i, (size_t)rows * cols)
    zt_store(&out[zt_sub_at(i, cols, ld_out)], zt_widen(in[zt_sub_at(i, cols, ld_in)]));
}

// A bit copy of a sub-matrix (bf16 or fp32 values as they are: T is uint16_t or float).
template <typename T>
static __global__ void copy_matrix_kernel(T *out, int ld_out, const T *in, int ld_in, int rows,
                                          int cols) {
    GRID_STRIDE(i, (size_t)rows * cols)
    out[zt_sub_at(i, cols, ld_out)] = in[zt_sub_at(i, cols, ld_in)];
}

// A group stays in one row (OC % W == 0).
struct bias_forward_op {
    float *out;
    const zt_bf16 *bias;
    int OC;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) float x[W];
        alignas(16) zt_bf16 b[W];
        zt_vload<W>(x, out + i);
        zt_vload<W>(b, bias + i % OC);
        for (int k = 0; k < W; k++) x[k] += zt_bf16_to_fp32(b[k]);
        zt_vstore<W>(out + i, x);
    }
};

struct bias_broadcast_op {
    zt_bf16 *out;
    const zt_bf16 *bias;
    int OC;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) zt_bf16 b[W];
        zt_vload<W>(b, bias + i % OC);
        zt_vstore<W>(out + i, b);
    }
};

struct gelu_forward_op {
    zt_bf16 *out;
    const zt_bf16 *inp;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) zt_bf16 x[W];
        zt_vload<W>(x, inp + i);
        for (int k = 0; k < W; k++) x[k] = zt_bf16_from_fp32(zt_gelu(zt_bf16_to_fp32(x[k])));
        zt_vstore<W>(out + i, x);
    }
};

// dinp fp32 or bf16 (G; elem_io_cuda.cuh rounds once); an fp32 dinp may be dout: a group
// reads its dout before it writes.
template <typename G> struct gelu_backward_op {
    G *dinp;
    const zt_bf16 *inp;
    const float *dout;
    template <int W> __device__ void run(size_t i) const {
        alignas(16) zt_bf16 x[W];
        alignas(16) float d[W];
        alignas(16) G o[W];
        zt_vload<W>(x, inp + i);
        zt_vload<W>(d, dout + i);
        for (int k = 0; k < W; k++) zt_store(o + k, zt_gelu_grad(zt_bf16_to_fp32(x[k])) * d[k]);
        zt_vstore<W>(dinp + i, o);
    }
};

// A group stays in one token's row (C % W == 0), so its wte and wpe elements are adjacent.
struct encoder_forward_op {
    float *out;
    const int32_t *tokens;
    const zt_bf16 *wte, *wpe;
    int vocab_lo, vocab_rows, T, C;
    template <int W> __device__ void run(size_t i) const {
        int n = (int)(i / C), c = (int)(i % C), row = tokens[n] - vocab_lo;
        alignas(16) zt_bf16 e[W], p[W];
        alignas(16) float y[W];
        int in_vocab = row >= 0 && row < vocab_rows;
        if (in_vocab) zt_vload<W>(e, wte + (size_t)row * C + c);
        if (wpe) zt_vload<W>(p, wpe + (size_t)(n % T) * C + c);
        for (int k = 0; k < W; k++)
            y[k] = (in_vocab ? zt_bf16_to_fp32(e[k]) : 0.0f) + (wpe ? zt_bf16_to_fp32(p[k]) : 0.0f);
        zt_vstore<W>(out + i, y);
    }
};

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
    int vec = zt_aligned16(out) && zt_aligned16(in);
    zt_vmap<BF16_W>(st, convert_op<zt_bf16, float>{out, in}, n, vec, "bf16_from_fp32");
}

extern "C" void zt_cuda_bf16_to_fp32(cudaStream_t st, float *out, const zt_bf16 *in, size_t n) {
    int vec = zt_aligned16(out) && zt_aligned16(in);
    zt_vmap<BF16_W>(st, convert_op<float, zt_bf16>{out, in}, n, vec, "bf16_to_fp32");
}

template <typename O, typename I>
static void convert_matrix(cudaStream_t st, O *out, int ld_out, const I *in, int ld_in, int rows,
                           int cols, const char *name) {
    ZT_ASSERT(rows >= 0 && cols >= 0 && ld_out >= cols && ld_in >= cols);
    if (!rows || !cols) return;
    size_t n = (size_t)rows * cols;
    convert_matrix_kernel<<<grid_of(n), ZT_CUDA_THREADS, 0, st>>>(out, ld_out, in, ld_in, rows,
                                                                  cols);
    ZT_CUDA_LAUNCHED(st, name);
}

extern "C" void zt_cuda_bf16_round_matrix(cudaStream_t st, zt_bf16 *out, int ld_out,
                                          const float *in, int ld_in, int rows, int cols) {
    convert_matrix(st, out, ld_out, in, ld_in, rows, cols, "bf16_round_matrix");
}

extern "C" void zt_cuda_bf16_widen_matrix(cudaStream_t st, float *out, int ld_out,
                                          const zt_bf16 *in, int ld_in, int rows, int cols) {
    convert_matrix(st, out, ld_out, in, ld_in, rows, cols, "bf16_widen_matrix");
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
    int vec = zt_aligned16(out) && zt_aligned16(bias) && OC % BF16_W == 0;
    zt_vmap<BF16_W>(st, bias_forward_op{out, bias, OC}, (size_t)N * OC, vec, "bias_forward_bf16");
}

extern "C" void zt_cuda_bias_broadcast_bf16(cudaStream_t st, zt_bf16 *out, const zt_bf16 *bias,
                                            int N, int OC) {
    ZT_ASSERT(N >= 0 && OC >= 0);
    int vec = zt_aligned16(out) && zt_aligned16(bias) && OC % BF16_W == 0;
    zt_vmap<BF16_W>(st, bias_broadcast_op{out, bias, OC}, (size_t)N * OC, vec,
                    "bias_broadcast_bf16");
}

extern "C" void zt_cuda_gelu_forward_bf16(cudaStream_t st, zt_bf16 *out, const zt_bf16 *inp,
                                          size_t n) {
    int vec = zt_aligned16(out) && zt_aligned16(inp);
    zt_vmap<BF16_W>(st, gelu_forward_op{out, inp}, n, vec, "gelu_forward_bf16");
}

extern "C" void zt_cuda_gelu_backward_bf16(cudaStream_t st, void *dinp, zt_dtype dinp_dt,
                                           const zt_bf16 *inp, const float *dout, size_t n) {
    int vec = zt_aligned16(dinp) && zt_aligned16(inp) && zt_aligned16(dout);
    if (dinp_dt == ZT_BF16)
        zt_vmap<BF16_W>(st, gelu_backward_op<zt_bf16>{(zt_bf16 *)dinp, inp, dout}, n, vec,
                        "gelu_backward_bf16");
    else
        zt_vmap<BF16_W>(st, gelu_backward_op<float>{(float *)dinp, inp, dout}, n, vec,
                        "gelu_backward_bf16");
}

extern "C" void zt_cuda_encoder_forward_bf16(cudaStream_t st, float *out, const int32_t *tokens,
                                             const zt_bf16 *wte, const zt_bf16 *wpe,
                                             int vocab_lo, int vocab_rows, int N, int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0);
    int vec = zt_aligned16(out) && zt_aligned16(wte) && zt_aligned16(wpe) && C % BF16_W == 0;
    zt_vmap<BF16_W>(st, encoder_forward_op{out, tokens, wte, wpe, vocab_lo, vocab_rows, T, C},
                    (size_t)N * C, vec, "encoder_forward_bf16");
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
