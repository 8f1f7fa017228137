// Token + position embedding on the GPU, forward and backward (vocab-parallel aware, as
// encoder_cpu.c). The backward groups the tokens by row (a merge sort of (row, token) keys,
// zt_cuda_embed_sort, which bf16_cuda.cu's backward shares) and adds each row's tokens in
// token order, a block per row (launch_math.h, "the embedding backward"): the CPU's sums, bit
// for bit.
#include "cuda_check.h"
#include "kernels_cuda.h"
#include "launch_math.h"
#include "vec128_cuda.cuh"

// 4 fp32 per 128-bit access (vec128_cuda.cuh); a group stays in one token's row (C % 4 == 0).
#define FP32_W 4

struct encoder_forward_op {
    float *out;
    const int32_t *tokens;
    const float *wte, *wpe;
    int vocab_lo, vocab_rows, T, C;
    template <int W> __device__ void run(size_t i) const {
        int n = (int)(i / C), c = (int)(i % C), row = tokens[n] - vocab_lo;
        alignas(16) float e[W], p[W];
        int in_vocab = row >= 0 && row < vocab_rows;
        if (in_vocab) zt_vload<W>(e, wte + (size_t)row * C + c);
        if (wpe) zt_vload<W>(p, wpe + (size_t)(n % T) * C + c);
        for (int k = 0; k < W; k++) e[k] = (in_vocab ? e[k] : 0.0f) + (wpe ? p[k] : 0.0f);
        zt_vstore<W>(out + i, e);
    }
};

// ---- the backward: the tokens grouped by row (launch_math.h, "the embedding backward") ----

#define GRID_STRIDE(i, n)                                                        \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);      \
         i += (size_t)gridDim.x * blockDim.x)

static __global__ void embed_keys_kernel(uint64_t *keys, const int32_t *tokens, int vocab_lo,
                                         int vocab_rows, int N) {
    GRID_STRIDE(i, (size_t)N) keys[i] = zt_embed_key(tokens[i], vocab_lo, vocab_rows, (int)i);
}

static __global__ void merge_pass_kernel(uint64_t *out, const uint64_t *in, size_t n,
                                         size_t width) {
    GRID_STRIDE(i, n) out[zt_merge_dest(in, n, i, width)] = in[i];
}

// Block i: if a row's run starts at sorted key i, the row += the run's gradients, in token
// order (the CPU's adds). Threads take channels, so reads and writes are coalesced; the keys
// are the same address across the block.
static __global__ void embed_wte_kernel(float *dwte, const float *dout, const uint64_t *keys,
                                        int N, int C) {
    size_t i = blockIdx.x;
    if (!zt_embed_run_start(keys, i)) return; // the same for the whole block
    size_t row = zt_embed_key_row(keys[i]), end = zt_embed_run_end(keys, (size_t)N, i);
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float *g = dwte + row * C + c;
        *g = zt_embed_run_add(*g, dout, keys, i, end, C, c);
    }
}

// dwpe (positions, C) += each position's tokens' gradients in order: a thread per (p, c).
static __global__ void embed_wpe_kernel(float *dwpe, const float *dout, int N, int T, int C,
                                        int positions) {
    GRID_STRIDE(i, (size_t)positions * C) {
        int p = (int)(i / C), c = (int)(i % C);
        dwpe[i] = zt_embed_pos_add(dwpe[i], dout, p, N, T, C, c);
    }
}

extern "C" void zt_cuda_encoder_forward(cudaStream_t st, float *out, const int32_t *tokens,
                                        const float *wte, const float *wpe, int vocab_lo,
                                        int vocab_rows, int N, int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0);
    if (!N) return;
    int vec = zt_aligned16(out) && zt_aligned16(wte) && zt_aligned16(wpe) && C % FP32_W == 0;
    zt_vmap<FP32_W>(st, encoder_forward_op{out, tokens, wte, wpe, vocab_lo, vocab_rows, T, C},
                    (size_t)N * C, vec, "encoder_forward");
}

extern "C" const uint64_t *zt_cuda_embed_sort(cudaStream_t st, uint64_t *work,
                                              const int32_t *tokens, int vocab_lo,
                                              int vocab_rows, int N) {
    ZT_ASSERT(N > 0 && vocab_rows >= 0);
    ZT_ASSERTF(N <= ZT_EMBED_MAX_TOKENS, "embedding backward: %d tokens; the sort's scratch "
               "holds %d (caps.max_tokens should have refused the run)", N, ZT_EMBED_MAX_TOKENS);
    uint64_t *keys[2] = {work, work + N};
    unsigned g = zt_grid_stride((size_t)N, ZT_CUDA_THREADS);
    embed_keys_kernel<<<g, ZT_CUDA_THREADS, 0, st>>>(keys[0], tokens, vocab_lo, vocab_rows, N);
    ZT_CUDA_LAUNCHED(st, "embed_sort keys");
    int passes = zt_merge_passes((size_t)N);
    for (int p = 0; p < passes; p++) {
        merge_pass_kernel<<<g, ZT_CUDA_THREADS, 0, st>>>(keys[(p + 1) % 2], keys[p % 2],
                                                         (size_t)N, (size_t)1 << p);
        ZT_CUDA_LAUNCHED(st, "embed_sort merge");
    }
    return keys[passes % 2];
}

extern "C" void zt_cuda_encoder_backward(cudaStream_t st, float *dwte, float *dwpe,
                                         const float *dout, const int32_t *tokens,
                                         uint64_t *work, int vocab_lo, int vocab_rows, int N,
                                         int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0 && vocab_rows >= 0);
    if (!N) return;
    const uint64_t *keys = zt_cuda_embed_sort(st, work, tokens, vocab_lo, vocab_rows, N);
    embed_wte_kernel<<<(unsigned)N, ZT_CUDA_THREADS, 0, st>>>(dwte, dout, keys, N, C);
    ZT_CUDA_LAUNCHED(st, "encoder_backward wte");
    if (!dwpe) return;
    int positions = N < T ? N : T;
    embed_wpe_kernel<<<zt_grid_stride((size_t)positions * C, ZT_CUDA_THREADS), ZT_CUDA_THREADS,
                       0, st>>>(dwpe, dout, N, T, C, positions);
    ZT_CUDA_LAUNCHED(st, "encoder_backward wpe");
}
