// The CUDA backend's ops on the bf16 residual stream (backend_ops.h's add_bf16,
// layernorm_forward_bf16in, residual_layernorm_forward_bf16, layernorm_backward_bf16in,
// encoder_forward_bf16out), callable from C (backend_cuda.c):
//   residual_bf16_ops_cuda.c  the ops through the fp32 kernels on widened values
//   residual_bf16_cuda.cu     the embedding written in bf16
// All pointers are device memory; work may still run when a call returns.
#ifndef ZT_RESIDUAL_BF16_CUDA_H
#define ZT_RESIDUAL_BF16_CUDA_H

#include "bf16_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

void zt_cuda_bf16_add(const zt_cuda_bf16 *b, zt_bf16 *out, const zt_bf16 *x, const zt_bf16 *y,
                      size_t n);
void zt_cuda_bf16_layernorm_forward_bf16in(const zt_cuda_bf16 *b, void *out, zt_dtype out_dt,
                                           float *mean, float *rstd, const zt_bf16 *inp,
                                           const zt_bf16 *w, const zt_bf16 *bias, int N, int C);
void zt_cuda_bf16_layernorm_backward_bf16in(const zt_cuda_bf16 *b, float *dinp, zt_bf16 *dw,
                                            zt_bf16 *db, const float *dout, const zt_bf16 *inp,
                                            const zt_bf16 *w, const float *mean,
                                            const float *rstd, int N, int C);
void zt_cuda_encoder_forward_bf16out(cudaStream_t st, zt_bf16 *out, const int32_t *tokens,
                                     const zt_bf16 *wte, const zt_bf16 *wpe, int vocab_lo,
                                     int vocab_rows, int N, int T, int C);

#ifdef __cplusplus
}
#endif
#endif
