// The kernels that read or write parameters, by the model's dtype (fp32 or bf16): what
// training (gpt2.c) and the decoder (generate.c) call instead of the backend's ops, so the
// choice between the fp32 ops and the bf16 group is made once (docs/design.md, "bf16").
// Pointers are device memory; parameters and their gradients are of m->dtype, activations
// fp32 except where a dtype argument says (ZT_BF16 under bf16 where the training model
// stores them so: docs/design.md, "bf16"). Products with bf16 weights use the model's
// gemm_mixed scratch (m->a.gemm_work).
#ifndef ZT_GPT2_OPS_H
#define ZT_GPT2_OPS_H

#include "gpt2.h"

// out (N, OC) = inp (N, C) @ W + bias (bias NULL: none), W stored (OC, C) or, `in_out`,
// (C, OC) (the row-parallel layers: layout.h). inp of in_dt, out of out_dt (ZT_F32; or
// ZT_BF16 under bf16: the fp32 sum of product and bias rounded once).
void zt_gpt2_linear_forward(const zt_gpt2 *m, void *out, zt_dtype out_dt, const void *inp,
                            zt_dtype in_dt, const void *w, const void *bias, int N, int C, int OC,
                            int in_out);
// dinp (N, C) = dout @ W^T (written); dw += the weight gradient; dbias += dout's column sums
// (NULL: none). inp: the forward's input, of in_dt; dout of the model's dtype (under bf16 the
// gradients the products read are bf16 as stored: read as they lie).
void zt_gpt2_linear_backward(const zt_gpt2 *m, float *dinp, void *dw, void *dbias,
                             const void *dout, const void *inp, zt_dtype in_dt, const void *w,
                             int N, int C, int OC, int in_out);
// Its two halves, for a backward split into an input-gradient pass and a weight-gradient pass
// (zt_gpt2_backward_input / _weight): dinp written; dw, dbias added. The same calls as the
// combined one (bit-identical values).
void zt_gpt2_linear_backward_input(const zt_gpt2 *m, float *dinp, const void *dout,
                                   const void *w, int N, int C, int OC, int in_out);
void zt_gpt2_linear_backward_weight(const zt_gpt2 *m, void *dw, void *dbias, const void *dout,
                                    const void *inp, zt_dtype in_dt, int N, int C, int OC,
                                    int in_out);
// The input gradient of a product whose input was GELU's output: dpre (N, C) = gelu'(pre) *
// (dout @ W^T), W as zt_gpt2_linear_backward_input's, pre (N, C) GELU's input of the model's
// dtype. Under bf16 dpre is bf16 (gemm_epilogue_bf16's DGELU: the fp32 value rounded once,
// wide its scratch of N C floats); under fp32 dpre is wide (the product, then GELU's backward
// in place).
void zt_gpt2_linear_gelu_backward_input(const zt_gpt2 *m, void *dpre, float *wide,
                                        const void *dout, const void *w, const void *pre, int N,
                                        int C, int OC, int in_out);
// kernels.h's layernorm_forward / layernorm_backward with weights of the model's dtype; inp of
// in_dt (ZT_F32; or ZT_BF16 under bf16: widened, the statistics fp32), the forward's out of
// out_dt (ZT_F32; or ZT_BF16 under bf16: the fp32 row rounded).
void zt_gpt2_layernorm_forward(const zt_gpt2 *m, void *out, zt_dtype out_dt, float *mean,
                               float *rstd, const void *inp, zt_dtype in_dt, const void *w,
                               const void *b, int N, int C);
// res (N, C) = a + b, then zt_gpt2_layernorm_forward of res; res, a of the model's dtype (the
// residual stream), b fp32 (a projection's output summed over tp): under bf16 the fp32 sum
// rounded once, the LayerNorm on the rounded res. The backend's fused op (one pass).
void zt_gpt2_residual_layernorm_forward(const zt_gpt2 *m, void *res, void *out, zt_dtype out_dt,
                                        float *mean, float *rstd, const void *a, const float *b,
                                        const void *w, const void *bias, int N, int C);
// out (n) = a + b, out and a of the model's dtype, b fp32 (the residual add: under bf16 the
// fp32 sum rounded once); out may alias a.
void zt_gpt2_residual_add(const zt_gpt2 *m, void *out, const void *a, const float *b, size_t n);
// The MLP's c_fc and its GELU: pre (N, OC) = inp @ W + bias (W stored (OC, C)), out = gelu(pre),
// both of out_dt. Under fp32 the backend's matmul_gelu_forward (bias and GELU in one pass on a
// GPU), under bf16 zt_gpt2_linear_forward then zt_gpt2_gelu_forward.
void zt_gpt2_linear_gelu_forward(const zt_gpt2 *m, void *pre, void *out, zt_dtype out_dt,
                                 const void *inp, zt_dtype in_dt, const void *w, const void *bias,
                                 int N, int C, int OC);
// gelu_forward, inp and out of dt (ZT_BF16 under bf16 only: inp widened, out rounded).
void zt_gpt2_gelu_forward(const zt_gpt2 *m, void *out, zt_dtype dt, const void *inp, size_t n);
// kernels.h's layernorm_backward (dinp added into) with dinp of dinp_dt (ZT_F32; or ZT_BF16
// under bf16 with a bf16 inp: the residual stream's gradient, widened, added in fp32, rounded
// once).
void zt_gpt2_layernorm_backward(const zt_gpt2 *m, void *dinp, zt_dtype dinp_dt, void *dw,
                                void *db, const float *dout, const void *inp, zt_dtype in_dt,
                                const void *w, const float *mean, const float *rstd, int N,
                                int C);
// C (M, N) = op(A) @ op(B) + beta C, A, B, C of types at, bt, ct (ZT_F32, or a parameter,
// gradient or stored activation of the model's dtype): the lm-head's products with wte.
void zt_gpt2_weight_gemm(const zt_gpt2 *m, int ta, int tb, int M, int N, int Kd, const void *A,
                         zt_dtype at, int lda, const void *B, zt_dtype bt, int ldb, float beta,
                         void *C, zt_dtype ct, int ldc);
// kernels.h's encoder_forward / encoder_backward with wte, wpe of the model's dtype; the
// forward's out of out_dt (ZT_F32; or ZT_BF16 under bf16: the fp32 sum rounded once).
void zt_gpt2_encoder_forward(const zt_gpt2 *m, void *out, zt_dtype out_dt, const int32_t *tokens,
                             const void *wte, const void *wpe, int vocab_lo, int vocab_rows,
                             int N, int T, int C);
void zt_gpt2_encoder_backward(const zt_gpt2 *m, void *dwte, void *dwpe, const float *dout,
                              const int32_t *tokens, int vocab_lo, int vocab_rows, int N, int T,
                              int C);

#endif
