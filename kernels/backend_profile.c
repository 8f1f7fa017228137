// The timing decorator (backend_profile.h). Every wrapper has one shape: mark, call the
// inner op, sync, add to the phase. Flops are counted for the products only: what the
// op must compute (attention: the causal triangle), not what a kernel executes.
#include "backend_profile.h"

#define ST(be) ((const zt_backend_profile_state *)(be)->impl)
#define IN(be) (ST(be)->inner)

// Runs `call` (an expression using `in`, the inner backend) timed under `phase`.
#define TIMED(phase, flops, call)                                          \
    do {                                                                   \
        const zt_backend *in = IN(be);                                     \
        zt_profile_mark mark_;                                             \
        zt_profile_begin(&mark_);                                          \
        call;                                                              \
        in->ops->sync(in);                                                 \
        zt_profile_end(ST(be)->acc, &mark_, phase, flops);                 \
    } while (0)

static void *p_alloc(const zt_backend *be, zt_mem_category cat, size_t bytes) {
    return IN(be)->ops->alloc(IN(be), cat, bytes);
}
static void p_free(const zt_backend *be, void *ptr) { IN(be)->ops->free(IN(be), ptr); }
static void p_memset(const zt_backend *be, void *dst, int byte, size_t bytes) {
    TIMED(ZT_PHASE_MEMORY, 0, in->ops->memset(in, dst, byte, bytes));
}
static void p_copy(const zt_backend *be, void *dst, const void *src, size_t bytes,
                   zt_copy_kind kind) {
    TIMED(ZT_PHASE_MEMORY, 0, in->ops->copy(in, dst, src, bytes, kind));
}
static void *p_map(const zt_backend *be, void *dev, size_t bytes, int read) {
    void *host;
    TIMED(ZT_PHASE_MEMORY, 0, host = in->ops->map(in, dev, bytes, read));
    return host;
}
static void p_unmap(const zt_backend *be, void *dev, void *host, size_t bytes, int write) {
    TIMED(ZT_PHASE_MEMORY, 0, in->ops->unmap(in, dev, host, bytes, write));
}
static void p_sync(const zt_backend *be) { IN(be)->ops->sync(IN(be)); }
static void *p_stream(const zt_backend *be) { return IN(be)->ops->stream(IN(be)); }
static int p_device(const zt_backend *be, char *id, size_t size) {
    return IN(be)->ops->device(IN(be), id, size);
}
static int p_memory_info(const zt_backend *be, size_t *free_b, size_t *total_b, size_t *held) {
    return IN(be)->ops->memory_info(IN(be), free_b, total_b, held);
}
static void *p_host_alloc(const zt_backend *be, zt_mem_category cat, size_t bytes) {
    return IN(be)->ops->host_alloc(IN(be), cat, bytes);
}
static void p_host_free(const zt_backend *be, void *ptr) { IN(be)->ops->host_free(IN(be), ptr); }
static void p_describe(const zt_backend *be, char *buf, size_t size) {
    IN(be)->ops->describe(IN(be), buf, size);
}
static void p_write_json(const zt_backend *be, FILE *f) { IN(be)->ops->write_json(IN(be), f); }

static void p_gemm(const zt_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                   const float *A, int lda, const float *B, int ldb, float beta, float *C,
                   int ldc) {
    TIMED(ZT_PHASE_GEMM, 2.0 * M * N * K,
          in->ops->gemm(in, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc));
}
static void p_encoder_forward(const zt_backend *be, float *out, const int32_t *tokens,
                              const float *wte, const float *wpe, int vocab_lo, int vocab_rows,
                              int N, int T, int C) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0,
          in->ops->encoder_forward(in, out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C));
}
static void p_encoder_backward(const zt_backend *be, float *dwte, float *dwpe, const float *dout,
                               const int32_t *tokens, int vocab_lo, int vocab_rows, int N, int T,
                               int C) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0,
          in->ops->encoder_backward(in, dwte, dwpe, dout, tokens, vocab_lo, vocab_rows, N, T, C));
}
static void p_layernorm_forward(const zt_backend *be, float *out, float *mean, float *rstd,
                                const float *inp, const float *w, const float *b, int N, int C) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0, in->ops->layernorm_forward(in, out, mean, rstd, inp, w, b, N, C));
}
static void p_residual_layernorm_forward(const zt_backend *be, float *res, float *out,
                                         float *mean, float *rstd, const float *a, const float *b,
                                         const float *w, const float *bias, int N, int C) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0,
          in->ops->residual_layernorm_forward(in, res, out, mean, rstd, a, b, w, bias, N, C));
}
static void p_layernorm_backward(const zt_backend *be, float *dinp, float *dw, float *db,
                                 const float *dout, const float *inp, const float *w,
                                 const float *mean, const float *rstd, int N, int C) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0,
          in->ops->layernorm_backward(in, dinp, dw, db, dout, inp, w, mean, rstd, N, C));
}
static void p_matmul_forward(const zt_backend *be, float *out, const float *inp, const float *w,
                             const float *bias, int N, int C, int OC) {
    TIMED(ZT_PHASE_GEMM, 2.0 * N * C * OC, in->ops->matmul_forward(in, out, inp, w, bias, N, C, OC));
}
static void p_matmul_backward(const zt_backend *be, float *dinp, float *dw, float *dbias,
                              const float *dout, const float *inp, const float *w, int N, int C,
                              int OC, int accumulate_dinp) {
    TIMED(ZT_PHASE_GEMM, 4.0 * N * C * OC,
          in->ops->matmul_backward(in, dinp, dw, dbias, dout, inp, w, N, C, OC, accumulate_dinp));
}
static void p_matmul_in_out_forward(const zt_backend *be, float *out, const float *inp,
                                    const float *w, const float *bias, int N, int C, int OC) {
    TIMED(ZT_PHASE_GEMM, 2.0 * N * C * OC,
          in->ops->matmul_in_out_forward(in, out, inp, w, bias, N, C, OC));
}
static void p_matmul_in_out_backward(const zt_backend *be, float *dinp, float *dw, float *dbias,
                                     const float *dout, const float *inp, const float *w, int N,
                                     int C, int OC, int accumulate_dinp) {
    TIMED(ZT_PHASE_GEMM, 4.0 * N * C * OC,
          in->ops->matmul_in_out_backward(in, dinp, dw, dbias, dout, inp, w, N, C, OC,
                                          accumulate_dinp));
}
static void p_gelu_forward(const zt_backend *be, float *out, const float *inp, size_t n) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0, in->ops->gelu_forward(in, out, inp, n));
}
// The fused c_fc + GELU counts as a product (its time is mostly the GEMM's; the GELU pass
// that rides along lands in the GEMM phase, which the profile's reader should know).
static void p_matmul_gelu_forward(const zt_backend *be, float *pre, float *out, const float *inp,
                                  const float *w, const float *bias, int N, int C, int OC) {
    TIMED(ZT_PHASE_GEMM, 2.0 * N * C * OC,
          in->ops->matmul_gelu_forward(in, pre, out, inp, w, bias, N, C, OC));
}
static void p_gelu_backward(const zt_backend *be, float *dinp, const float *inp,
                            const float *dout, size_t n) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0, in->ops->gelu_backward(in, dinp, inp, dout, n));
}
static void p_add(const zt_backend *be, float *out, const float *a, const float *b, size_t n) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0, in->ops->add(in, out, a, b, n));
}
// Causal attention's products: S = QK^T and PV forward (2), backward recomputes S and
// forms dP, dQ, dK, dV (5); each 2 * hs flops per (row, column <= row) pair, per head.
static double attention_flops(int products, int B, int T, int C) {
    return products * 2.0 * B * C * (T * (T + 1.0) / 2.0);
}
static void p_attention_forward(const zt_backend *be, float *out, float *lse, const float *qkv,
                                float *work, int B, int T, int C, int NH) {
    TIMED(ZT_PHASE_ATTENTION, attention_flops(2, B, T, C),
          in->ops->attention_forward(in, out, lse, qkv, work, B, T, C, NH));
}
static void p_attention_backward(const zt_backend *be, float *dqkv, const float *dout,
                                 const float *qkv, const float *lse, float *work, int B, int T,
                                 int C, int NH) {
    TIMED(ZT_PHASE_ATTENTION, attention_flops(5, B, T, C),
          in->ops->attention_backward(in, dqkv, dout, qkv, lse, work, B, T, C, NH));
}
static void p_attention_decode(const zt_backend *be, float *out, const float *q, const float *k,
                               const float *v, float *work, int n_q, int n_pos, int C, int NH) {
    TIMED(ZT_PHASE_ATTENTION, 4.0 * n_q * n_pos * C,
          in->ops->attention_decode(in, out, q, k, v, work, n_q, n_pos, C, NH));
}
static void p_ce_slice_stats(const zt_backend *be, float *row_max, float *target_logit,
                             const float *logits, const int32_t *targets, int n, int n_valid,
                             int vocab_lo, int ld) {
    TIMED(ZT_PHASE_LOSS, 0,
          in->ops->ce_slice_stats(in, row_max, target_logit, logits, targets, n, n_valid,
                                  vocab_lo, ld));
}
static void p_ce_slice_sumexp(const zt_backend *be, float *sumexp, const float *logits,
                              const float *row_max, int n, int n_valid, int ld) {
    TIMED(ZT_PHASE_LOSS, 0, in->ops->ce_slice_sumexp(in, sumexp, logits, row_max, n, n_valid, ld));
}
static void p_ce_slice_finish(const zt_backend *be, float *dlogits, float *losses,
                              const float *logits, const int32_t *targets, const float *row_max,
                              const float *sumexp, const float *target_logit, float scale, int n,
                              int n_valid, int vocab_lo, int ld) {
    TIMED(ZT_PHASE_LOSS, 0,
          in->ops->ce_slice_finish(in, dlogits, losses, logits, targets, row_max, sumexp,
                                   target_logit, scale, n, n_valid, vocab_lo, ld));
}
static double p_sum(const zt_backend *be, const float *x, size_t n) {
    double s;
    TIMED(ZT_PHASE_GRAD_NORM, 0, s = in->ops->sum(in, x, n));
    return s;
}
static void p_sum_into(const zt_backend *be, double *acc, const float *x, size_t n) {
    TIMED(ZT_PHASE_GRAD_NORM, 0, in->ops->sum_into(in, acc, x, n)); // as sum: the loss's
}
static void p_sumsq(const zt_backend *be, double out[2], const float *x, size_t n) {
    TIMED(ZT_PHASE_GRAD_NORM, 0, in->ops->sumsq(in, out, x, n));
}
static void p_adamw(const zt_backend *be, float *p, float *m, float *v, const float *g, size_t n,
                    float wd, const zt_adamw_hparams *h) {
    TIMED(ZT_PHASE_OPTIMIZER, 0, in->ops->adamw(in, p, m, v, g, n, wd, h));
}
static void p_adamw8bit(const zt_backend *be, float *p, const float *g, uint8_t *qm, uint8_t *qv,
                        float *absmax_m, float *absmax_v, size_t n, int block,
                        const float *map_m, const float *map_v, float wd,
                        const zt_adamw_hparams *h) {
    TIMED(ZT_PHASE_OPTIMIZER, 0,
          in->ops->adamw8bit(in, p, g, qm, qv, absmax_m, absmax_v, n, block, map_m, map_v, wd, h));
}

// ---- bf16 mixed precision: each op in the phase of its fp32 counterpart ----
static void p_gemm_mixed(const zt_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                         const void *A, zt_dtype at, int lda, const void *B, zt_dtype bt, int ldb,
                         float beta, void *C, zt_dtype ct, int ldc, void *work) {
    TIMED(ZT_PHASE_GEMM, 2.0 * M * N * K,
          in->ops->gemm_mixed(in, ta, tb, M, N, K, alpha, A, at, lda, B, bt, ldb, beta, C, ct,
                              ldc, work));
}
static void p_describe_gemm_mixed(const zt_backend *be, char *buf, size_t size) {
    IN(be)->ops->describe_gemm_mixed(IN(be), buf, size);
}
static void p_bias_forward_bf16(const zt_backend *be, float *out, const zt_bf16 *bias, int N,
                                int OC) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0, in->ops->bias_forward_bf16(in, out, bias, N, OC));
}
static void p_bias_backward_bf16(const zt_backend *be, zt_bf16 *dbias, const float *dout, int N,
                                 int OC) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0, in->ops->bias_backward_bf16(in, dbias, dout, N, OC));
}
static void p_encoder_forward_bf16(const zt_backend *be, float *out, const int32_t *tokens,
                                   const zt_bf16 *wte, const zt_bf16 *wpe, int vocab_lo,
                                   int vocab_rows, int N, int T, int C) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0,
          in->ops->encoder_forward_bf16(in, out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C));
}
static void p_encoder_backward_bf16(const zt_backend *be, zt_bf16 *dwte, zt_bf16 *dwpe,
                                    const float *dout, const int32_t *tokens, int vocab_lo,
                                    int vocab_rows, int N, int T, int C) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0,
          in->ops->encoder_backward_bf16(in, dwte, dwpe, dout, tokens, vocab_lo, vocab_rows, N, T,
                                         C));
}
static void p_layernorm_forward_bf16(const zt_backend *be, void *out, zt_dtype out_dt,
                                     float *mean, float *rstd, const float *inp,
                                     const zt_bf16 *w, const zt_bf16 *b, int N, int C) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0,
          in->ops->layernorm_forward_bf16(in, out, out_dt, mean, rstd, inp, w, b, N, C));
}
static void p_gelu_forward_bf16(const zt_backend *be, zt_bf16 *out, const float *inp, size_t n) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0, in->ops->gelu_forward_bf16(in, out, inp, n));
}
static void p_layernorm_backward_bf16(const zt_backend *be, float *dinp, zt_bf16 *dw,
                                      zt_bf16 *db, const float *dout, const float *inp,
                                      const zt_bf16 *w, const float *mean, const float *rstd,
                                      int N, int C) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0,
          in->ops->layernorm_backward_bf16(in, dinp, dw, db, dout, inp, w, mean, rstd, N, C));
}
static void p_sumsq_bf16(const zt_backend *be, double out[2], const zt_bf16 *x, size_t n) {
    TIMED(ZT_PHASE_GRAD_NORM, 0, in->ops->sumsq_bf16(in, out, x, n));
}
static void p_adamw_bf16(const zt_backend *be, float *master, zt_bf16 *p, float *m, float *v,
                         const zt_bf16 *g, size_t n, float wd, const zt_adamw_hparams *h) {
    TIMED(ZT_PHASE_OPTIMIZER, 0, in->ops->adamw_bf16(in, master, p, m, v, g, n, wd, h));
}
static void p_adamw8bit_bf16(const zt_backend *be, float *master, zt_bf16 *p, const zt_bf16 *g,
                             uint8_t *qm, uint8_t *qv, float *absmax_m, float *absmax_v, size_t n,
                             int block, const float *map_m, const float *map_v, float wd,
                             const zt_adamw_hparams *h) {
    TIMED(ZT_PHASE_OPTIMIZER, 0,
          in->ops->adamw8bit_bf16(in, master, p, g, qm, qv, absmax_m, absmax_v, n, block, map_m,
                                  map_v, wd, h));
}
static void p_bf16_from_fp32(const zt_backend *be, zt_bf16 *out, const float *x, size_t n) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0, in->ops->bf16_from_fp32(in, out, x, n));
}
static void p_bf16_to_fp32(const zt_backend *be, float *out, const zt_bf16 *x, size_t n) {
    TIMED(ZT_PHASE_ELEMENTWISE, 0, in->ops->bf16_to_fp32(in, out, x, n));
}

static const zt_backend_i profile_ops = {
    .name = NULL,    // the inner backend's (zt_backend_profile_init)
    .library = NULL, // the same
    .describe = p_describe,
    .write_json = p_write_json,
    .stream = p_stream,
    .device = p_device,
    .memory_info = p_memory_info,
    .host_alloc = p_host_alloc,
    .host_free = p_host_free,
    .alloc = p_alloc,
    .free = p_free,
    .memset = p_memset,
    .copy = p_copy,
    .map = p_map,
    .unmap = p_unmap,
    .sync = p_sync,
    .gemm = p_gemm,
    .encoder_forward = p_encoder_forward,
    .encoder_backward = p_encoder_backward,
    .layernorm_forward = p_layernorm_forward,
    .residual_layernorm_forward = p_residual_layernorm_forward,
    .layernorm_backward = p_layernorm_backward,
    .matmul_forward = p_matmul_forward,
    .matmul_backward = p_matmul_backward,
    .matmul_in_out_forward = p_matmul_in_out_forward,
    .matmul_in_out_backward = p_matmul_in_out_backward,
    .gelu_forward = p_gelu_forward,
    .matmul_gelu_forward = p_matmul_gelu_forward,
    .gelu_backward = p_gelu_backward,
    .add = p_add,
    .attention_forward = p_attention_forward,
    .attention_backward = p_attention_backward,
    .attention_decode = p_attention_decode,
    .ce_slice_stats = p_ce_slice_stats,
    .ce_slice_sumexp = p_ce_slice_sumexp,
    .ce_slice_finish = p_ce_slice_finish,
    .sum = p_sum,
    .sum_into = p_sum_into,
    .sumsq = p_sumsq,
    .adamw = p_adamw,
    .adamw8bit = p_adamw8bit,
    .gemm_mixed = p_gemm_mixed,
    .describe_gemm_mixed = p_describe_gemm_mixed,
    .bias_forward_bf16 = p_bias_forward_bf16,
    .bias_backward_bf16 = p_bias_backward_bf16,
    .encoder_forward_bf16 = p_encoder_forward_bf16,
    .encoder_backward_bf16 = p_encoder_backward_bf16,
    .layernorm_forward_bf16 = p_layernorm_forward_bf16,
    .gelu_forward_bf16 = p_gelu_forward_bf16,
    .layernorm_backward_bf16 = p_layernorm_backward_bf16,
    .sumsq_bf16 = p_sumsq_bf16,
    .adamw_bf16 = p_adamw_bf16,
    .adamw8bit_bf16 = p_adamw8bit_bf16,
    .bf16_from_fp32 = p_bf16_from_fp32,
    .bf16_to_fp32 = p_bf16_to_fp32,
};

// The bf16 group is NULL on a backend without it (caps.bf16 0): so it stays wrapped.
static void drop_bf16_ops(zt_backend_i *o) {
    o->gemm_mixed = NULL;
    o->describe_gemm_mixed = NULL;
    o->bias_forward_bf16 = NULL;
    o->bias_backward_bf16 = NULL;
    o->encoder_forward_bf16 = NULL;
    o->encoder_backward_bf16 = NULL;
    o->layernorm_forward_bf16 = NULL;
    o->gelu_forward_bf16 = NULL;
    o->layernorm_backward_bf16 = NULL;
    o->sumsq_bf16 = NULL;
    o->adamw_bf16 = NULL;
    o->adamw8bit_bf16 = NULL;
    o->bf16_from_fp32 = NULL;
    o->bf16_to_fp32 = NULL;
}

void zt_backend_profile_init(zt_backend *out, zt_backend_profile_state *st,
                             const zt_backend *inner, zt_profile *acc) {
    st->inner = inner;
    st->acc = acc;
    // callers that ask for the backend's name, capabilities or threads (the banner, the
    // attention scratch) see the inner backend's
    st->ops = profile_ops;
    st->ops.name = inner->ops->name;
    st->ops.library = inner->ops->library;
    if (!inner->caps->bf16) drop_bf16_ops(&st->ops);
    out->ops = &st->ops;
    out->caps = inner->caps;
    out->threads = inner->threads;
    out->impl = st;
}
