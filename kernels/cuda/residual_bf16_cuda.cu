// Kernels of the bf16 residual stream on the GPU: the embedding written in bf16. One element per
// thread in a grid-stride loop; the two widened values added in fp32 and rounded by
// bf16_math.h (nearest even, as the CPU), so the result is the CPU's bit for bit.
#include "cuda_check.h"
#include "residual_bf16_cuda.h"

static __global__ void encoder_forward_bf16out_kernel(zt_bf16 *out, const int32_t *tokens,
                                                      const zt_bf16 *wte, const zt_bf16 *wpe,
                                                      int vocab_lo, int vocab_rows, int N, int T,
                                                      int C) {
    size_t total = (size_t)N * C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int n = (int)(i / C), c = (int)(i % C), row = tokens[n] - vocab_lo;
        float e = row >= 0 && row < vocab_rows ? zt_bf16_to_fp32(wte[(size_t)row * C + c]) : 0.0f;
        float p = wpe ? zt_bf16_to_fp32(wpe[(size_t)(n % T) * C + c]) : 0.0f;
        out[i] = zt_bf16_from_fp32(e + p);
    }
}

extern "C" void zt_cuda_encoder_forward_bf16out(cudaStream_t st, zt_bf16 *out,
                                                const int32_t *tokens, const zt_bf16 *wte,
                                                const zt_bf16 *wpe, int vocab_lo, int vocab_rows,
                                                int N, int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0);
    if (!N) return;
    size_t n = (size_t)N * C;
    encoder_forward_bf16out_kernel<<<zt_grid_stride(n, ZT_CUDA_THREADS), ZT_CUDA_THREADS, 0,
                                     st>>>(out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
    ZT_CUDA_LAUNCHED(st, "encoder_forward_bf16out");
}
