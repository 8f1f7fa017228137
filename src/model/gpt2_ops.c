// The kernels that read or write parameters, by the model's dtype (docs/design.md, "bf16"):
// fp32 runs the fused fp32 ops, bf16 the mixed-precision group (bf16 weights and weight
// gradients; activations fp32, or bf16 where the training model stores them so, the residual
// stream among them: the table in docs/design.md, "bf16"). Shared by training (gpt2.c) and
// the decoder (generate.c).
#include "gpt2_ops.h"

// A kernel call on the model's backend: K(layernorm_forward, out, ...).
#define K(fn, ...) m->be->ops->fn(m->be, __VA_ARGS__)

static int is_bf16(const zt_gpt2 *m) { return m->dtype == ZT_BF16; }

// out (N, OC) = inp (N, C) @ W + bias, W stored (OC, C) or, `in_out`, (C, OC) (layout.h).
// Under bf16 the bias is the product's epilogue (gemm_epilogue_bf16: a bf16 out is the fp32
// sum of product and bias rounded once).
void zt_gpt2_linear_forward(const zt_gpt2 *m, void *out, zt_dtype out_dt, const void *inp,
                            zt_dtype in_dt, const void *w, const void *bias, int N, int C, int OC,
                            int in_out) {
    if (!is_bf16(m)) {
        ZT_ASSERT(in_dt == ZT_F32 && out_dt == ZT_F32);
        if (in_out)
            K(matmul_in_out_forward, out, inp, w, bias, N, C, OC);
        else
            K(matmul_forward, out, inp, w, bias, N, C, OC);
        return;
    }
    if (bias)
        K(gemm_epilogue_bf16, ZT_EPILOGUE_BIAS, 0, !in_out, N, OC, C, inp, in_dt, C, w,
          in_out ? OC : C, out, out_dt, bias, NULL, NULL, m->a.gemm_work);
    else
        K(gemm_mixed, 0, !in_out, N, OC, C, 1.0f, inp, in_dt, C, w, ZT_BF16, in_out ? OC : C,
          0.0f, out, out_dt, OC, m->a.gemm_work);
}

// Under bf16 a product's output gradient dout is bf16 as the backward stores it (the residual
// stream's gradient, d(fch), dqkv: docs/design.md, "bf16"), so both products read two bf16
// operands as they lie (gemm_mixed's direct form: no rounding pass, no K chunks).

// The input-gradient product: dinp (N, C) = dout @ W^T, written.
static void backward_input_bf16(const zt_gpt2 *m, float *dinp, const zt_bf16 *dout,
                                const void *w, int N, int C, int OC, int in_out) {
    K(gemm_mixed, 0, in_out, N, C, OC, 1.0f, dout, ZT_BF16, OC, w, ZT_BF16, in_out ? OC : C,
      0.0f, dinp, ZT_F32, C, m->a.gemm_work);
}

// The weight-gradient product into the bf16 dw (written while dw is still zeroed this step:
// zt_gpt2_grad_beta); the bias gradient a column sum of dout in fp32, rounded once into dbias.
static void backward_weight_bf16(const zt_gpt2 *m, void *dw, void *dbias, const zt_bf16 *dout,
                                 const void *inp, zt_dtype in_dt, int N, int C, int OC,
                                 int in_out) {
    void *work = m->a.gemm_work;
    float beta = zt_gpt2_grad_beta(m, dw);
    if (in_out) // dw (C, OC) += inp^T @ dout
        K(gemm_mixed, 1, 0, C, OC, N, 1.0f, inp, in_dt, C, dout, ZT_BF16, OC, beta, dw, ZT_BF16,
          OC, work);
    else // dw (OC, C) += dout^T @ inp
        K(gemm_mixed, 1, 0, OC, C, N, 1.0f, dout, ZT_BF16, OC, inp, in_dt, C, beta, dw, ZT_BF16,
          C, work);
    if (dbias) K(bias_backward_bf16, dbias, dout, ZT_BF16, N, OC);
}

// dinp (N, C) = dout @ W^T (written); dw += the weight gradient, dbias += dout's column sums.
void zt_gpt2_linear_backward(const zt_gpt2 *m, float *dinp, void *dw, void *dbias,
                             const void *dout, const void *inp, zt_dtype in_dt, const void *w,
                             int N, int C, int OC, int in_out) {
    if (!is_bf16(m)) {
        ZT_ASSERT(in_dt == ZT_F32);
        if (in_out)
            K(matmul_in_out_backward, dinp, dw, dbias, dout, inp, w, N, C, OC, 0);
        else
            K(matmul_backward, dinp, dw, dbias, dout, inp, w, N, C, OC, 0);
        return;
    }
    backward_input_bf16(m, dinp, dout, w, N, C, OC, in_out);
    backward_weight_bf16(m, dw, dbias, dout, inp, in_dt, N, C, OC, in_out);
}

void zt_gpt2_linear_backward_input(const zt_gpt2 *m, float *dinp, const void *dout,
                                   const void *w, int N, int C, int OC, int in_out) {
    if (!is_bf16(m)) {
        if (in_out) K(matmul_in_out_backward_input, dinp, dout, w, N, C, OC, 0);
        else K(matmul_backward_input, dinp, dout, w, N, C, OC, 0);
        return;
    }
    backward_input_bf16(m, dinp, dout, w, N, C, OC, in_out);
}

void zt_gpt2_linear_backward_weight(const zt_gpt2 *m, void *dw, void *dbias, const void *dout,
                                    const void *inp, zt_dtype in_dt, int N, int C, int OC,
                                    int in_out) {
    if (!is_bf16(m)) {
        ZT_ASSERT(in_dt == ZT_F32);
        if (in_out) K(matmul_in_out_backward_weight, dw, dbias, dout, inp, N, C, OC);
        else K(matmul_backward_weight, dw, dbias, dout, inp, N, C, OC);
        return;
    }
    backward_weight_bf16(m, dw, dbias, dout, inp, in_dt, N, C, OC, in_out);
}

void zt_gpt2_linear_gelu_backward_input(const zt_gpt2 *m, void *dpre, float *wide,
                                        const void *dout, const void *w, const void *pre, int N,
                                        int C, int OC, int in_out) {
    if (!is_bf16(m)) {
        ZT_ASSERT(dpre == wide);
        zt_gpt2_linear_backward_input(m, wide, dout, w, N, C, OC, in_out);
        K(gelu_backward, wide, pre, wide, (size_t)N * C);
        return;
    }
    K(gemm_epilogue_bf16, ZT_EPILOGUE_DGELU, 0, in_out, N, C, OC, dout, ZT_BF16, OC, w,
      in_out ? OC : C, dpre, ZT_BF16, NULL, pre, wide, m->a.gemm_work);
}

void zt_gpt2_layernorm_forward(const zt_gpt2 *m, void *out, zt_dtype out_dt, float *mean,
                               float *rstd, const void *inp, zt_dtype in_dt, const void *w,
                               const void *b, int N, int C) {
    ZT_ASSERT(in_dt == ZT_F32 || is_bf16(m));
    if (in_dt == ZT_BF16) {
        K(layernorm_forward_bf16in, out, out_dt, mean, rstd, inp, w, b, N, C);
        return;
    }
    if (is_bf16(m)) {
        K(layernorm_forward_bf16, out, out_dt, mean, rstd, inp, w, b, N, C);
        return;
    }
    ZT_ASSERT(out_dt == ZT_F32);
    K(layernorm_forward, out, mean, rstd, inp, w, b, N, C);
}

void zt_gpt2_gelu_forward(const zt_gpt2 *m, void *out, zt_dtype dt, const void *inp, size_t n) {
    ZT_ASSERT(dt == ZT_F32 || is_bf16(m));
    if (dt == ZT_BF16)
        K(gelu_forward_bf16, out, inp, n);
    else
        K(gelu_forward, out, inp, n);
}

void zt_gpt2_residual_layernorm_forward(const zt_gpt2 *m, void *res, void *out, zt_dtype out_dt,
                                        float *mean, float *rstd, const void *a, const float *b,
                                        const void *w, const void *bias, int N, int C) {
    if (is_bf16(m)) {
        K(residual_layernorm_forward_bf16, res, out, out_dt, mean, rstd, a, b, w, bias, N, C);
        return;
    }
    ZT_ASSERT(out_dt == ZT_F32);
    K(residual_layernorm_forward, res, out, mean, rstd, a, b, w, bias, N, C);
}

void zt_gpt2_residual_add(const zt_gpt2 *m, void *out, const void *a, const float *b, size_t n) {
    if (is_bf16(m)) K(add_bf16, out, a, b, n);
    else K(add, out, a, b, n);
}

void zt_gpt2_linear_gelu_forward(const zt_gpt2 *m, void *pre, void *out, zt_dtype out_dt,
                                 const void *inp, zt_dtype in_dt, const void *w, const void *bias,
                                 int N, int C, int OC) {
    if (is_bf16(m)) {
        zt_gpt2_linear_forward(m, pre, out_dt, inp, in_dt, w, bias, N, C, OC, 0);
        zt_gpt2_gelu_forward(m, out, out_dt, pre, (size_t)N * OC);
        return;
    }
    ZT_ASSERT(in_dt == ZT_F32 && out_dt == ZT_F32);
    K(matmul_gelu_forward, pre, out, inp, w, bias, N, C, OC);
}

void zt_gpt2_layernorm_backward(const zt_gpt2 *m, void *dinp, zt_dtype dinp_dt, void *dw,
                                void *db, const float *dout, const void *inp, zt_dtype in_dt,
                                const void *w, const float *mean, const float *rstd, int N,
                                int C) {
    ZT_ASSERT(in_dt == ZT_F32 || is_bf16(m));
    ZT_ASSERT(dinp_dt == ZT_F32 || in_dt == ZT_BF16);
    if (in_dt == ZT_BF16)
        K(layernorm_backward_bf16in, dinp, dinp_dt, dw, db, dout, inp, w, mean, rstd, N, C);
    else if (is_bf16(m))
        K(layernorm_backward_bf16, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    else
        K(layernorm_backward, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

// C (M, N) = op(A) @ op(B) + beta C with B a parameter (or, ct bf16, C a gradient): the
// lm-head's products with wte.
void zt_gpt2_weight_gemm(const zt_gpt2 *m, int ta, int tb, int M, int N, int Kd, const void *A,
                         zt_dtype at, int lda, const void *B, zt_dtype bt, int ldb, float beta,
                         void *C, zt_dtype ct, int ldc) {
    if (!is_bf16(m)) {
        ZT_ASSERT(at == ZT_F32 && bt == ZT_F32 && ct == ZT_F32);
        K(gemm, ta, tb, M, N, Kd, 1.0f, A, lda, B, ldb, beta, C, ldc);
    } else {
        K(gemm_mixed, ta, tb, M, N, Kd, 1.0f, A, at, lda, B, bt, ldb, beta, C, ct, ldc,
          m->a.gemm_work);
    }
}

// out (N, C) = wte[tokens] + wpe[positions] (kernels.h's encoder_forward), by dtype; a bf16
// out is the fp32 sum rounded once.
void zt_gpt2_encoder_forward(const zt_gpt2 *m, void *out, zt_dtype out_dt, const int32_t *tokens,
                             const void *wte, const void *wpe, int vocab_lo, int vocab_rows,
                             int N, int T, int C) {
    ZT_ASSERT(out_dt == ZT_F32 || is_bf16(m));
    if (out_dt == ZT_BF16)
        K(encoder_forward_bf16out, out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
    else if (is_bf16(m))
        K(encoder_forward_bf16, out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
    else
        K(encoder_forward, out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
}

void zt_gpt2_encoder_backward(const zt_gpt2 *m, void *dwte, void *dwpe, const float *dout,
                              const int32_t *tokens, int vocab_lo, int vocab_rows, int N, int T,
                              int C) {
    zt_gpt2_grad_beta(m, dwte); // it adds onto the zeros: dwte is no longer zeroed
    if (is_bf16(m))
        K(encoder_backward_bf16, dwte, dwpe, dout, tokens, vocab_lo, vocab_rows, N, T, C);
    else
        K(encoder_backward, dwte, dwpe, dout, tokens, vocab_lo, vocab_rows, N, T, C);
}
