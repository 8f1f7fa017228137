// The CUDA backend's bf16 op group (backend_ops.h's ZT_OPS_BF16 group; docs/design.md, "bf16"),
// callable from C (backend_cuda.c). Each op means what the backend_ops.h entry of its name says.
//   bf16_cuda.cu      kernels that read bf16 and write bf16 or fp32, computing in fp32 with
//                     bf16_math.h's conversions (the CPU's round to nearest even)
//   crossentropy_cuda.cu  the loss's passes over bf16 logits (templates shared with fp32's)
//   optim_cuda.cu, elementwise_cuda.cu, layernorm_cuda.cu  ops on bf16 weights or gradients
//                     as the fp32 kernels' templates: widened as read, rounded once as stored,
//                     one pass each (the fp32 kernel's arithmetic, as the CPU)
//   gemm_lt_cuda.c    gemm_mixed through cuBLASLt (bf16 operands, fp32 sums, tensor cores)
// All pointers are device memory; work may still run when a call returns.
#ifndef ZT_BF16_CUDA_H
#define ZT_BF16_CUDA_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "adamw_math.h"
#include "bf16_math.h"
#include "dtype.h"
#include "kernels_cuda.h"
#include "launch_math.h"
#include "lt_cache_math.h"

#ifdef __cplusplus
extern "C" {
#endif

// One cached cuBLASLt plan (gemm_lt_cuda.c): the matmul descriptor, the layouts of the two
// operands and C, and the heuristic's algorithm for them (found 0: it had none, so the
// product takes the padded form).
typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t first, second, c;
    cublasLtMatmulAlgo_t algo;
    int found;
} zt_cuda_lt_plan;

// What the bf16 ops of one backend share: its stream, a cuBLASLt handle and its plans, the
// embedding backward's sort keys.
typedef struct {
    cudaStream_t stream;
    cublasLtHandle_t lt;
    zt_lt_index lt_index;                         // which plan a slot holds
    zt_cuda_lt_plan lt_plans[ZT_LT_CACHE_SLOTS];  // slot for slot with lt_index.keys
    uint64_t *embed; // (ZT_CUDA_EMBED_WORK) the backend's embedding sort keys
} zt_cuda_bf16;

// ---- kernels (bf16_cuda.cu) ----
void zt_cuda_bf16_from_fp32(cudaStream_t st, zt_bf16 *out, const float *in, size_t n);
void zt_cuda_bf16_to_fp32(cudaStream_t st, float *out, const zt_bf16 *in, size_t n);
// (rows, cols) sub-matrices, row-major with leading dimensions: out = in rounded / widened.
void zt_cuda_bf16_round_matrix(cudaStream_t st, zt_bf16 *out, int ld_out, const float *in,
                               int ld_in, int rows, int cols);
void zt_cuda_bf16_widen_matrix(cudaStream_t st, float *out, int ld_out, const zt_bf16 *in,
                               int ld_in, int rows, int cols);
// out = in, a (rows, cols) sub-matrix of elem-byte values (2: bf16, 4: fp32), bits unchanged.
void zt_cuda_copy_matrix(cudaStream_t st, void *out, int ld_out, const void *in, int ld_in,
                         int rows, int cols, size_t elem);
void zt_cuda_bias_forward_bf16(cudaStream_t st, float *out, const zt_bf16 *bias, int N, int OC);
void zt_cuda_bias_broadcast_bf16(cudaStream_t st, zt_bf16 *out, const zt_bf16 *bias, int N,
                                 int OC);
void zt_cuda_gelu_forward_bf16(cudaStream_t st, zt_bf16 *out, const zt_bf16 *inp, size_t n);
// dinp fp32 (may be dout) or bf16 (dinp_dt: the fp32 value rounded once).
void zt_cuda_gelu_backward_bf16(cudaStream_t st, void *dinp, zt_dtype dinp_dt,
                                const zt_bf16 *inp, const float *dout, size_t n);
void zt_cuda_encoder_forward_bf16(cudaStream_t st, float *out, const int32_t *tokens,
                                  const zt_bf16 *wte, const zt_bf16 *wpe, int vocab_lo,
                                  int vocab_rows, int N, int T, int C);
// Groups the tokens by row in b->embed (zt_cuda_embed_sort), as the fp32 backward does.
void zt_cuda_encoder_backward_bf16(const zt_cuda_bf16 *b, zt_bf16 *dwte, zt_bf16 *dwpe,
                                   const float *dout, const int32_t *tokens, int vocab_lo,
                                   int vocab_rows, int N, int T, int C);

// ---- the loss over bf16 logits (crossentropy_cuda.cu, with the fp32 passes) ----
void zt_cuda_ce_slice_stats_bf16(cudaStream_t st, float *row_max, float *target_logit,
                                 const zt_bf16 *logits, const int32_t *targets, int n,
                                 int n_valid, int vocab_lo, int ld);
void zt_cuda_ce_slice_sumexp_bf16(cudaStream_t st, float *sumexp, const zt_bf16 *logits,
                                  const float *row_max, int n, int n_valid, int ld);
void zt_cuda_ce_slice_finish_bf16(cudaStream_t st, zt_bf16 *dlogits, float *losses,
                                  const zt_bf16 *logits, const int32_t *targets,
                                  const float *row_max, const float *sumexp,
                                  const float *target_logit, float scale, int n, int n_valid,
                                  int vocab_lo, int ld);

// ---- the fp32 kernels' templates on bf16, one pass each (optim_cuda.cu, elementwise_cuda.cu,
// layernorm_cuda.cu): the same launches, lanes and sums as the fp32 launcher of the name ----
// zt_cuda_reduce over bf16 values (widened, exact).
void zt_cuda_reduce_bf16(cudaStream_t st, double *work, const zt_bf16 *x, size_t n, int mode);
// zt_cuda_adamw / zt_cuda_adamw8bit on the fp32 master with the widened gradient, then
// p = master rounded, in the same kernel.
void zt_cuda_adamw_bf16(cudaStream_t st, float *master, zt_bf16 *p, float *m, float *v,
                        const zt_bf16 *g, size_t n, float wd, zt_adamw_hparams h);
void zt_cuda_adamw8bit_bf16(cudaStream_t st, float *master, zt_bf16 *p, const zt_bf16 *g,
                            uint8_t *qm, uint8_t *qv, float *absmax_m, float *absmax_v, size_t n,
                            int block, const zt_q8_maps *maps, float wd, zt_adamw_hparams h);
// zt_cuda_bias_backward into a bf16 dbias: widened, the column sums added in fp32, rounded
// once; dout fp32 or bf16 (dout_dt, widened). work as zt_cuda_bias_backward's.
void zt_cuda_bias_backward_bf16(cudaStream_t st, zt_bf16 *dbias, const void *dout,
                                zt_dtype dout_dt, float *work, int N, int OC);
// zt_cuda_layernorm_forward with bf16 w, b; out fp32 or bf16 (out_dt).
void zt_cuda_layernorm_forward_bf16(cudaStream_t st, void *out, zt_dtype out_dt, float *mean,
                                    float *rstd, const float *inp, const zt_bf16 *w,
                                    const zt_bf16 *b, int N, int C);
// zt_cuda_layernorm_backward with bf16 w, dw, db: dw and db take the column sums in fp32 and
// are rounded once. work as zt_cuda_layernorm_backward's.
void zt_cuda_layernorm_backward_bf16(cudaStream_t st, float *dinp, zt_bf16 *dw, zt_bf16 *db,
                                     const float *dout, const float *inp, const zt_bf16 *w,
                                     const float *mean, const float *rstd, float *work, int N,
                                     int C);

// ---- gemm_mixed (gemm_lt_cuda.c) ----
// backend_ops.h's gemm_mixed; work: ZT_CUDA_GEMM_MIXED_WORKSPACE bytes, any 4-byte alignment
// (aligned to 256 inside). Plans for new shapes go into b's cache (host memory of
// cuBLASLt's; the first step makes them). bf16 A and B run as one cuBLASLt call where they
// lie; an fp32 operand is rounded in tiles and K chunks; a tile cuBLASLt has no algorithm
// for runs padded (gemm_lt_cuda.c, "Three forms").
void zt_cuda_gemm_mixed(zt_cuda_bf16 *b, int trans_a, int trans_b, int M, int N, int K,
                        float alpha, const void *A, zt_dtype at, int lda, const void *B,
                        zt_dtype bt, int ldb, float beta, void *C, zt_dtype ct, int ldc,
                        void *work);
// backend_ops.h's gemm_epilogue_bf16 with bf16 A and C as one cuBLASLt call, the bias (dgelu
// 0: v the bias) or GELU's backward (dgelu 1: v GELU's input) in its epilogue; work as
// zt_cuda_gemm_mixed's. Returns 0 with nothing enqueued where the fused form does not apply:
// rows not at 16 bytes, GELU's input rows not a multiple of 8 values, K = 0, or a cuBLASLt
// without the epilogue or an algorithm for it (the caller runs the unfused ops).
int zt_cuda_gemm_epilogue(zt_cuda_bf16 *b, int dgelu, int trans_a, int trans_b, int M, int N,
                          int K, const zt_bf16 *A, int lda, const zt_bf16 *B, int ldb,
                          zt_bf16 *C, const zt_bf16 *v, void *work);
void zt_cuda_gemm_mixed_describe(char *buf, size_t size);
// Frees the cached plans (at close, before the cuBLASLt handle); b's index is empty after.
void zt_cuda_gemm_mixed_free(zt_cuda_bf16 *b);

#ifdef __cplusplus
}
#endif
#endif
