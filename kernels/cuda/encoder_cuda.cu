// Token + position embedding on the GPU, forward and backward (vocab-parallel aware, as
// encoder_cpu.c).
#include "cuda_check.h"
#include "kernels_cuda.h"

static __global__ void encoder_forward_kernel(float *out, const int32_t *tokens, const float *wte,
                                              const float *wpe, int vocab_lo, int vocab_rows,
                                              int N, int T, int C) {
    size_t total = (size_t)N * C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int n = (int)(i / C), c = (int)(i % C);
        int row = tokens[n] - vocab_lo;
        float e = row >= 0 && row < vocab_rows ? wte[(size_t)row * C + c] : 0.0f;
        float p = wpe ? wpe[(size_t)(n % T) * C + c] : 0.0f;
        out[i] = e + p;
    }
}

// One thread per channel, tokens in order: a token repeated in the batch never races,
// and every sum runs in the CPU's order (encoder_cpu.c), so the result is the same bit
// for bit and deterministic. Reads and writes are coalesced across a warp's channels.
// TODO(perf): only C threads (768 for GPT-2) walk all N tokens; bucket the tokens by
// value (a sort, then one warp per distinct token) when this shows in a profile.
static __global__ void encoder_backward_kernel(float *dwte, float *dwpe, const float *dout,
                                               const int32_t *tokens, int vocab_lo,
                                               int vocab_rows, int N, int T, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int n = 0; n < N; n++) {
        float d = dout[(size_t)n * C + c];
        int row = tokens[n] - vocab_lo;
        if (row >= 0 && row < vocab_rows) dwte[(size_t)row * C + c] += d;
        if (dwpe) dwpe[(size_t)(n % T) * C + c] += d;
    }
}

extern "C" void zt_cuda_encoder_forward(cudaStream_t st, float *out, const int32_t *tokens,
                                        const float *wte, const float *wpe, int vocab_lo,
                                        int vocab_rows, int N, int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0);
    if (!N) return;
    unsigned g = zt_grid_stride((size_t)N * C, ZT_CUDA_THREADS);
    encoder_forward_kernel<<<g, ZT_CUDA_THREADS, 0, st>>>(out, tokens, wte, wpe, vocab_lo,
                                                          vocab_rows, N, T, C);
    ZT_CUDA_LAUNCHED(st, "encoder_forward");
}

extern "C" void zt_cuda_encoder_backward(cudaStream_t st, float *dwte, float *dwpe,
                                         const float *dout, const int32_t *tokens, int vocab_lo,
                                         int vocab_rows, int N, int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0);
    if (!N) return;
    encoder_backward_kernel<<<ZT_CUDA_GRID(C), ZT_CUDA_THREADS, 0, st>>>(
        dwte, dwpe, dout, tokens, vocab_lo, vocab_rows, N, T, C);
    ZT_CUDA_LAUNCHED(st, "encoder_backward");
}
