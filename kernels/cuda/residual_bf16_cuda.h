// The CUDA backend's ops on the bf16 residual stream (backend_ops.h's add_bf16,
// layernorm_forward_bf16in, residual_layernorm_forward_bf16, layernorm_backward_bf16in,
// encoder_forward_bf16out), callable from C (backend_cuda.c), each one pass as its fp32 op:
//   elementwise_cuda.cu    the add (the fp32 add's template, 128-bit accesses)
//   layernorm_cuda.cu      the LayerNorms (the fp32 kernels' templates: the same lanes and
//                          trees on the widened values)
//   residual_bf16_cuda.cu  the embedding written in bf16
// All pointers are device memory; work may still run when a call returns.
#ifndef ZT_RESIDUAL_BF16_CUDA_H
#define ZT_RESIDUAL_BF16_CUDA_H

#include "bf16_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

// out = a + b, a bf16, b fp32: the fp32 sum rounded once.
void zt_cuda_add_bf16(cudaStream_t st, zt_bf16 *out, const zt_bf16 *a, const float *b,
                      size_t n);
void zt_cuda_layernorm_forward_bf16in(cudaStream_t st, void *out, zt_dtype out_dt, float *mean,
                                      float *rstd, const zt_bf16 *inp, const zt_bf16 *w,
                                      const zt_bf16 *b, int N, int C);
// res = a + b rounded (a bf16, b fp32), then the LayerNorm of res as stored: one warp per
// row, as zt_cuda_residual_layernorm_forward.
void zt_cuda_residual_layernorm_forward_bf16(cudaStream_t st, zt_bf16 *res, void *out,
                                             zt_dtype out_dt, float *mean, float *rstd,
                                             const zt_bf16 *a, const float *b,
                                             const zt_bf16 *w, const zt_bf16 *bias, int N, int C);
// work: ZT_CUDA_COLSUM_WORK floats of device memory, as zt_cuda_layernorm_backward's; dw and
// db take the column sums in fp32 and are rounded once; dinp fp32 or bf16 (dinp_dt: widened,
// added into in fp32, rounded once).
void zt_cuda_layernorm_backward_bf16in(cudaStream_t st, void *dinp, zt_dtype dinp_dt,
                                       zt_bf16 *dw, zt_bf16 *db, const float *dout,
                                       const zt_bf16 *inp, const zt_bf16 *w, const float *mean,
                                       const float *rstd, float *work, int N, int C);
void zt_cuda_encoder_forward_bf16out(cudaStream_t st, zt_bf16 *out, const int32_t *tokens,
                                     const zt_bf16 *wte, const zt_bf16 *wpe, int vocab_lo,
                                     int vocab_rows, int N, int T, int C);

#ifdef __cplusplus
}
#endif
#endif
