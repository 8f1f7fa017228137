// Launchers of the CUDA kernels (kernels/*_cuda.cu), callable from C (backend_cuda.c).
// Each takes its stream first, then the arguments of the backend op of the same name
// (kernels/backend_ops.h says what each computes: outputs first, inputs const, sizes last). All
// pointers are device memory; scalars and structs by value. Each checks its
// preconditions, launches on `stream` and checks the launch (ZT_CUDA_LAUNCHED in
// cuda_check.h): the work may still be running when it returns.
#ifndef ZT_KERNELS_CUDA_H
#define ZT_KERNELS_CUDA_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "adamw_math.h"
#include "launch_math.h"
#include "quant8_math.h"

#ifdef __cplusplus
extern "C" {
#endif

void zt_cuda_encoder_forward(cudaStream_t st, float *out, const int32_t *tokens, const float *wte,
                             const float *wpe, int vocab_lo, int vocab_rows, int N, int T, int C);
// The embedding backward's grouping of tokens by row (launch_math.h, "the embedding
// backward"), shared by the fp32 and bf16 backwards: the N keys zt_embed_key(tokens[n], ...)
// sorted, in work (2 N keys of device memory: ZT_CUDA_EMBED_WORK holds 0 < N <=
// ZT_EMBED_MAX_TOKENS; more is a fatal bug, the run was refused at start). Returns the half
// of work holding the sorted keys, valid once the stream reaches it.
const uint64_t *zt_cuda_embed_sort(cudaStream_t st, uint64_t *work, const int32_t *tokens,
                                   int vocab_lo, int vocab_rows, int N);
// work: ZT_CUDA_EMBED_WORK keys of device memory (launch_math.h), for zt_cuda_embed_sort.
void zt_cuda_encoder_backward(cudaStream_t st, float *dwte, float *dwpe, const float *dout,
                              const int32_t *tokens, uint64_t *work, int vocab_lo,
                              int vocab_rows, int N, int T, int C);
void zt_cuda_layernorm_forward(cudaStream_t st, float *out, float *mean, float *rstd,
                               const float *inp, const float *w, const float *b, int N, int C);
// res = a + b, then zt_cuda_layernorm_forward of res: a warp per row reads a and b once,
// writes res and sums it as it goes (the same lane sums as the LayerNorm of res).
void zt_cuda_residual_layernorm_forward(cudaStream_t st, float *res, float *out, float *mean,
                                        float *rstd, const float *a, const float *b,
                                        const float *w, const float *bias, int N, int C);
// work: ZT_CUDA_COLSUM_WORK floats of device memory (launch_math.h) for dw's and db's column
// sums, as zt_cuda_bias_backward's.
void zt_cuda_layernorm_backward(cudaStream_t st, float *dinp, float *dw, float *db,
                                const float *dout, const float *inp, const float *w,
                                const float *mean, const float *rstd, float *work, int N, int C);
// out (N, OC) rows = bias (the matmul's C before a beta = 1 GEMM).
void zt_cuda_fill_bias(cudaStream_t st, float *out, const float *bias, int N, int OC);
// dbias (OC) += column sums of dout (N, OC); work: ZT_CUDA_COLSUM_WORK floats of device
// memory for the row chunks' partial sums (one launch's, reused by the next in the stream).
void zt_cuda_bias_backward(cudaStream_t st, float *dbias, const float *dout, float *work, int N,
                           int OC);
void zt_cuda_gelu_forward(cudaStream_t st, float *out, const float *inp, size_t n);
// pre (N, OC) += bias (OC, NULL for none), then out = gelu(pre): a GEMM's output (beta 0)
// given its bias and GELU in one pass (the c_fc layer; the backward reads pre).
void zt_cuda_bias_gelu_forward(cudaStream_t st, float *pre, float *out, const float *bias, int N,
                               int OC);
void zt_cuda_gelu_backward(cudaStream_t st, float *dinp, const float *inp, const float *dout,
                           size_t n);
void zt_cuda_add(cudaStream_t st, float *out, const float *a, const float *b, size_t n);
// c (rows, cols; leading dimension ld) *= beta; beta 0 writes zeros without reading c.
void zt_cuda_scale_matrix(cudaStream_t st, float *c, int ld, int rows, int cols, float beta);
void zt_cuda_attention_forward(cudaStream_t st, float *out, float *lse, const float *qkv, int B,
                               int T, int C, int NH);
void zt_cuda_attention_backward(cudaStream_t st, float *dqkv, const float *dout, const float *qkv,
                                const float *lse, int B, int T, int C, int NH);
// attention_forward / attention_backward in query blocks through cuBLAS on `hb` (whose
// stream is st and whose math mode, TF32 or not, the GEMMs take): work is
// zt_cuda_attention_workspace(0, T) floats of device memory (launch_math.h).
void zt_cuda_attention_gemm_forward(cublasHandle_t hb, cudaStream_t st, float *out, float *lse,
                                    const float *qkv, float *work, int B, int T, int C, int NH);
void zt_cuda_attention_gemm_backward(cublasHandle_t hb, cudaStream_t st, float *dqkv,
                                     const float *dout, const float *qkv, const float *lse,
                                     float *work, int B, int T, int C, int NH);
// attention_forward_bf16 / attention_backward_bf16 fused on bf16 tensor cores
// (attention_flash_cuda.cu), for the shapes zt_cuda_attention_flash_fits accepts (a head size
// a multiple of 16 up to ZT_FLASH_MAX_HS). out and dqkv fp32 or bf16 (out_bf16, dqkv_bf16),
// dout likewise (dout_bf16); out the forward's bf16 output; D: B*NH*T floats of device
// scratch (the backward's row sums, rowsum(dO o out)).
#define ZT_FLASH_MAX_HS 128
int zt_cuda_attention_flash_fits(int T, int C, int NH);
void zt_cuda_attention_flash_forward(cudaStream_t st, void *out, int out_bf16, float *lse,
                                     const uint16_t *qkv, int B, int T, int C, int NH);
void zt_cuda_attention_flash_backward(cudaStream_t st, void *dqkv, int dqkv_bf16,
                                      const void *dout, int dout_bf16, const uint16_t *out,
                                      const uint16_t *qkv, const float *lse, float *D, int B,
                                      int T, int C, int NH);
void zt_cuda_attention_decode(cudaStream_t st, float *out, const float *q, const float *k,
                              const float *v, float *work, int n_pos, int C, int NH);
void zt_cuda_ce_slice_stats(cudaStream_t st, float *row_max, float *target_logit,
                            const float *logits, const int32_t *targets, int n, int n_valid,
                            int vocab_lo, int ld);
void zt_cuda_ce_slice_sumexp(cudaStream_t st, float *sumexp, const float *logits,
                             const float *row_max, int n, int n_valid, int ld);
void zt_cuda_ce_slice_finish(cudaStream_t st, float *dlogits, float *losses, const float *logits,
                             const int32_t *targets, const float *row_max, const float *sumexp,
                             const float *target_logit, float scale, int n, int n_valid,
                             int vocab_lo, int ld);
// Sum of x (mode 0), or the sum of the finite x^2 and the count of the non-finite x
// (mode 1), in double, into work[0] (and work[1]); work: ZT_CUDA_REDUCE_WORK doubles of
// device memory (the blocks' partial results follow the two outputs). Two kernels: each
// block sums a fixed range, then one block adds the blocks' results in block order, so
// the result does not change from run to run.
// (ZT_CUDA_REDUCE_BLOCKS and ZT_CUDA_REDUCE_WORK: launch_math.h, which the planner reads.)
void zt_cuda_reduce(cudaStream_t st, double *work, const float *x, size_t n, int mode);
// *acc += *x, one double each in device memory (after zt_cuda_reduce: the loss's running sum).
void zt_cuda_accumulate(cudaStream_t st, double *acc, const double *x);
void zt_cuda_adamw(cudaStream_t st, float *p, float *m, float *v, const float *g, size_t n,
                   float wd, zt_adamw_hparams h);
// The two 256-entry code maps, passed to the kernel by value (2 KiB of parameters).
typedef struct {
    float m[ZT_Q8_CODES], v[ZT_Q8_CODES];
} zt_q8_maps;
void zt_cuda_adamw8bit(cudaStream_t st, float *p, const float *g, uint8_t *qm, uint8_t *qv,
                       float *absmax_m, float *absmax_v, size_t n, int block,
                       const zt_q8_maps *maps, float wd, zt_adamw_hparams h);

#ifdef __cplusplus
}
#endif
#endif
