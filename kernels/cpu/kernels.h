// The CPU kernels of the GPT-2 forward and backward: OpenMP loops around the shared
// math in kernels/*_math.h, matrix products through BLAS. A kernel zt_<op> is the CPU's
// backend op <op> without the backend argument: its shapes, aliasing and NULL arguments are
// the op's contract in kernels/backend_ops.h; what is said here is how the CPU computes it
// (threads, order, scratch). The helpers that are no op say what they compute.
#ifndef ZT_KERNELS_H
#define ZT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "bf16_math.h"
#include "common.h"
#include "dtype.h"

// backend_ops.h's gemm. Large products run on all OpenMP threads as tiles of C
// (gemm_cpu.c); called inside a parallel region it runs on the calling thread. The tiling
// follows the thread count, so (as with BLAS's own threading) the last bits of C may differ
// between thread counts.
void zt_gemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc);

// bf16 (bf16_cpu.c): out[i] = zt_bf16_from_fp32(in[i]) (round to nearest even) and
// out[i] = zt_bf16_to_fp32(in[i]) (exact), on all OpenMP threads for large n.
void zt_bf16_from_fp32_array(zt_bf16 *out, const float *in, size_t n);
void zt_bf16_to_fp32_array(float *out, const zt_bf16 *in, size_t n);
// The same on one row of n values, on the calling thread, in one vector loop: for a kernel's
// threads, which convert rows inside their own parallel region.
void zt_bf16_from_fp32_row(zt_bf16 *out, const float *in, int n);
void zt_bf16_to_fp32_row(float *out, const zt_bf16 *in, int n);
// out (rows, cols), leading dimension ld_out = in (rows, cols), leading dimension ld_in,
// widened to fp32 (exact); rows in parallel.
void zt_bf16_to_fp32_matrix(float *out, int ld_out, const zt_bf16 *in, int ld_in, int rows,
                            int cols);
// The reverse: out (rows, cols), ld_out = in (rows, cols), ld_in, rounded to bf16 (nearest even).
void zt_bf16_from_fp32_matrix(zt_bf16 *out, int ld_out, const float *in, int ld_in, int rows,
                              int cols);
// Both in one pass: out = in rounded to bf16 and widened back, kept fp32 (the values
// zt_bf16_from_fp32_matrix then zt_bf16_to_fp32_matrix give, bit for bit). out != in.
void zt_bf16_round_fp32_matrix(float *out, int ld_out, const float *in, int ld_in, int rows,
                               int cols);

// The bf16 GEMM (gemm_bf16_cpu.c): zt_gemm's arguments and meaning with bf16 A and B,
// fp32 C, alpha, beta: C = alpha * op(A) @ op(B) + beta * C, row-major. Three paths:
//   ZT_BF16_GEMM_DNNL_MATMUL  oneDNN's matmul primitive (matmul_dnnl_cpu.c), and
//   ZT_BF16_GEMM_DNNL      oneDNN's dnnl_gemm_bf16bf16f32, both on CPUs with AVX512-BF16 or
//                          AMX-BF16 (their threads are the program's OpenMP pool);
//   ZT_BF16_GEMM_FALLBACK  A and B widened to fp32 in `work` (exact), then zt_gemm.
// Either way the products of two bf16 are exact in fp32 and the sums are fp32: the paths
// differ only in summation order (docs/design.md, "bf16").
// zt_bf16_gemm_path is public (backend.h): --bf16-gemm chooses it when the backend opens.

// What the CPU and the linked oneDNN offer.
typedef struct {
    int avx512_bf16; // AVX512-BF16 (vdpbf16ps), with the OS's AVX-512 state
    int amx_bf16;    // AMX-BF16 (tdpbf16ps), with the OS's tile state
    int dnnl_isa;    // dnnl_get_effective_cpu_isa(): the most oneDNN dispatches to
} zt_bf16_cpu;

// This CPU (detected once).
const zt_bf16_cpu *zt_bf16_cpu_get(void);
// ZT_OK when oneDNN has bf16 instructions to run on `cpu`; else ZT_ERR with the reason
// (zt_error_message). Pure, for tests.
zt_status zt_gemm_bf16_dnnl_check(const zt_bf16_cpu *cpu);
// Chooses the path (the CPU backend's open, for --bf16-gemm; tests, benches; before the GEMMs
// run, not during). DNNL where the check fails: ZT_ERR with its message, the path unchanged.
zt_status zt_gemm_bf16_set_path(zt_bf16_gemm_path path);
// The path that runs (never AUTO, which takes DNNL_MATMUL where the check passes, else
// FALLBACK).
zt_bf16_gemm_path zt_gemm_bf16_path(void);
// One line for a banner, e.g. "bf16 GEMM: fp32 fallback (widen + OpenBLAS sgemm; CPU has
// no AVX512-BF16 or AMX-BF16)".
void zt_gemm_bf16_describe(char *buf, size_t size);
// Floats of `work` the running path needs for an (M, N, K) product: M*K + K*N on the
// fallback (op(A) and op(B) widened), 0 on oneDNN (work may then be NULL). Size it after
// the path is chosen.
size_t zt_gemm_bf16_workspace(int M, int N, int K);
// C (M, N) = alpha op(A) op(B) + beta C, BLAS's meaning on both paths: M or N = 0 touches
// nothing, K = 0 gives beta C (beta 0 writes zeros without reading C).
void zt_gemm_bf16(int trans_a, int trans_b, int M, int N, int K, float alpha, const zt_bf16 *A,
                  int lda, const zt_bf16 *B, int ldb, float beta, float *C, int ldc, float *work);

// oneDNN's matmul primitive (matmul_dnnl_cpu.c): C (M, N) = alpha op(A) op(B) + bias + beta C
// with bf16 A and B, an fp32 or bf16 C (ct; bf16: the sum in fp32, rounded once) and bias N
// bf16 values added to every row (NULL: none), zt_gemm's arguments, M, N, K > 0. A
// primitive per transposes, sizes, leading dimensions, C's type, bias or not and scalars is
// made on first use and cached (32, the oldest replaced; held until the process ends).
// Fatal where oneDNN has none: choose the path through
// zt_gemm_bf16_set_path, which checks. zt_matmul_dnnl_check: ZT_OK where oneDNN has a bf16
// matmul on this CPU (it makes one small primitive), else ZT_ERR with the reason; ask
// zt_gemm_bf16_dnnl_check first (oneDNN emulates bf16 on AVX-512 CPUs without it).
// zt_matmul_dnnl_stats: the cache's lookups that found a primitive, that made one, and how
// many it holds (tests).
zt_status zt_matmul_dnnl_check(void);
void zt_matmul_dnnl(int trans_a, int trans_b, int M, int N, int K, float alpha, const zt_bf16 *A,
                    int lda, const zt_bf16 *B, int ldb, float beta, void *C, zt_dtype ct,
                    int ldc, const zt_bf16 *bias);
void zt_matmul_dnnl_stats(size_t *hits, size_t *misses, int *cached);

// ---- bf16 mixed precision (backend_ops.h's ZT_OPS_BF16 group; docs/design.md, "bf16") ----
// A kernel that adds into a bf16 gradient adds in the fp32 kernel's order, so its result is
// the fp32 kernel's on the widened gradient, rounded to bf16, bit for bit.

// The scratch the CPU backend's gemm_mixed takes (caps.gemm_mixed_workspace). 32 MiB holds,
// on the fallback path, pieces of op(A) and op(B) over a K chunk of 1024 rounded and widened
// (6 bytes a value) plus a bf16 C's tile in fp32: GPT-2's layer products up to 4096 tokens
// run as one tile per K chunk (the largest, a 3072 x 768 weight gradient, needs 31.5 MiB),
// the lm-head (50304 columns, at most 333 tokens a loss chunk) as 8 tiles 6288 wide. An
// operand is converted again per tile (op(A) once per column tile, op(B) per row tile):
// never for the layer products, for the lm-head 8 passes over its (tokens, 768) input
// against a product 50304 wide. Larger buys nothing there; 16 MiB would split the layers.
#define ZT_GEMM_MIXED_WORKSPACE ((size_t)32 << 20)

// backend_ops.h's gemm_mixed, its products on zt_gemm_bf16's running path. work: work_bytes
// of scratch (any M, N, K: C is cut into tiles of rows and columns and K into chunks that
// fit it; fatal only below a few dozen bytes). K chunks add into an fp32 C, so the result is
// the fp32 sum in another order, within zt_gemm_bf16's bound.
void zt_gemm_mixed(int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A,
                   zt_dtype at, int lda, const void *B, zt_dtype bt, int ldb, float beta, void *C,
                   zt_dtype ct, int ldc, void *work, size_t work_bytes);
// backend_ops.h's gemm_epilogue_bf16 with ZT_EPILOGUE_BIAS as one matmul primitive, the bias
// its own, where gemm_mixed's product is one call of it (bf16 A on the matmul path): returns
// 1. Elsewhere it does nothing and returns 0 (the caller runs the unfused ops).
int zt_gemm_mixed_bias(int trans_a, int trans_b, int M, int N, int K, const void *A,
                       zt_dtype at, int lda, const zt_bf16 *B, int ldb, void *C, zt_dtype ct,
                       const zt_bf16 *bias);
void zt_bias_forward_bf16(float *out, const zt_bf16 *bias, int N, int OC);
void zt_bias_broadcast_bf16(zt_bf16 *out, const zt_bf16 *bias, int N, int OC);
void zt_bias_backward_bf16(zt_bf16 *dbias, const void *dout, zt_dtype dout_dt, int N, int OC);
// The backward orders the tokens by row in a host index of N entries.
void zt_encoder_forward_bf16(float *out, const int32_t *tokens, const zt_bf16 *wte,
                             const zt_bf16 *wpe, int vocab_lo, int vocab_rows, int N, int T,
                             int C);
// zt_encoder_forward_bf16 into bf16, each sum rounded once.
void zt_encoder_forward_bf16out(zt_bf16 *out, const int32_t *tokens, const zt_bf16 *wte,
                                const zt_bf16 *wpe, int vocab_lo, int vocab_rows, int N, int T,
                                int C);
void zt_encoder_backward_bf16(zt_bf16 *dwte, zt_bf16 *dwpe, const float *dout,
                              const int32_t *tokens, int vocab_lo, int vocab_rows, int N, int T,
                              int C);
// The LayerNorms widen the bf16 weights once per call into the caller's stack (C <=
// ZT_BF16_MAX_ROW).
#define ZT_BF16_MAX_ROW (1 << 14)
void zt_layernorm_forward_bf16(void *out, zt_dtype out_dt, float *mean, float *rstd,
                               const float *inp, const zt_bf16 *w, const zt_bf16 *b, int N,
                               int C);
void zt_layernorm_backward_bf16(float *dinp, zt_bf16 *dw, zt_bf16 *db, const float *dout,
                                const float *inp, const zt_bf16 *w, const float *mean,
                                const float *rstd, int N, int C);
// zt_layernorm_backward_bf16 of a bf16 inp, each row widened (layernorm_cpu.c), into an fp32
// or bf16 dinp (dinp_dt: each row widened, added into, rounded once).
void zt_layernorm_backward_bf16in(void *dinp, zt_dtype dinp_dt, zt_bf16 *dw, zt_bf16 *db,
                                  const float *dout, const zt_bf16 *inp, const zt_bf16 *w,
                                  const float *mean, const float *rstd, int N, int C);
// The residual stream in bf16 (residual_bf16_cpu.c): backend_ops.h's add_bf16,
// layernorm_forward_bf16in and residual_layernorm_forward_bf16; the fused one is bit-identical
// to the other two in turn.
void zt_add_bf16(zt_bf16 *out, const zt_bf16 *a, const float *b, size_t n);
void zt_layernorm_forward_bf16in(void *out, zt_dtype out_dt, float *mean, float *rstd,
                                 const zt_bf16 *inp, const zt_bf16 *w, const zt_bf16 *b, int N,
                                 int C);
void zt_residual_layernorm_forward_bf16(zt_bf16 *res, void *out, zt_dtype out_dt, float *mean,
                                        float *rstd, const zt_bf16 *a, const float *b,
                                        const zt_bf16 *w, const zt_bf16 *bias, int N, int C);

void zt_encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe,
                        int vocab_lo, int vocab_rows, int N, int T, int C);
void zt_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                         int vocab_lo, int vocab_rows, int N, int T, int C);

void zt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C);
// In one pass over the rows, bit-identical to zt_add then zt_layernorm_forward (the same
// expressions in the same order).
void zt_residual_layernorm_forward(float *res, float *out, float *mean, float *rstd,
                                   const float *a, const float *b, const float *w,
                                   const float *bias, int N, int C);
void zt_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C);

void zt_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N,
                       int C, int OC);
void zt_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC, int accumulate_dinp);
void zt_matmul_in_out_forward(float *out, const float *inp, const float *w, const float *bias,
                              int N, int C, int OC);
void zt_matmul_in_out_backward(float *dinp, float *dw, float *dbias, const float *dout,
                               const float *inp, const float *w, int N, int C, int OC,
                               int accumulate_dinp);
// The halves of the two above (backend_ops.h): the combined ones call them, input first.
void zt_matmul_backward_input(float *dinp, const float *dout, const float *w, int N, int C,
                              int OC, int accumulate_dinp);
void zt_matmul_backward_weight(float *dw, float *dbias, const float *dout, const float *inp,
                               int N, int C, int OC);
void zt_matmul_in_out_backward_input(float *dinp, const float *dout, const float *w, int N,
                                     int C, int OC, int accumulate_dinp);
void zt_matmul_in_out_backward_weight(float *dw, float *dbias, const float *dout,
                                      const float *inp, int N, int C, int OC);
// dbias (OC) += column sums of dout (N, OC).
void zt_bias_backward(float *dbias, const float *dout, int N, int OC);

// Column-sum reductions (bias, LayerNorm dw/db, embedding) give each thread one block of
// columns: C over `threads`, rounded up to a multiple of 16, at most ZT_COLUMN_BLOCK_MAX
// (a stack accumulator's size). Each column is still summed from row 0 down, so the
// result does not depend on the width (docs/design.md, "Backward kernels").
#define ZT_COLUMN_BLOCK_MAX 512
static inline int zt_column_block_width(int C, int threads) {
    int width = ((C + threads - 1) / threads + 15) / 16 * 16;
    return width < ZT_COLUMN_BLOCK_MAX ? width : ZT_COLUMN_BLOCK_MAX;
}
// A column block's fp32 accumulator over a gradient g of dtype dt (ZT_F32 or ZT_BF16),
// elements [off, off + w): load widens (exact), store rounds once (bf16) or copies. The one
// place the fp32 and bf16 column-sum kernels differ.
static inline void zt_acc_load(float *acc, const void *g, zt_dtype dt, size_t off, int w) {
    if (dt == ZT_BF16)
        for (int i = 0; i < w; i++) acc[i] = zt_bf16_to_fp32(((const zt_bf16 *)g)[off + i]);
    else
        for (int i = 0; i < w; i++) acc[i] = ((const float *)g)[off + i];
}
static inline void zt_acc_store(void *g, zt_dtype dt, size_t off, const float *acc, int w) {
    if (dt == ZT_BF16)
        for (int i = 0; i < w; i++) ((zt_bf16 *)g)[off + i] = zt_bf16_from_fp32(acc[i]);
    else
        for (int i = 0; i < w; i++) ((float *)g)[off + i] = acc[i];
}

void zt_gelu_forward(float *out, const float *inp, size_t n);
// The two ops themselves (the bias is already inside the GEMM, as C's starting value), so
// bit-identical to zt_matmul_forward then zt_gelu_forward.
void zt_matmul_gelu_forward(float *pre, float *out, const float *inp, const float *w,
                            const float *bias, int N, int C, int OC);
void zt_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
// The same on bf16 inp, widened a block at a time into the fp32 kernels' blocks: their values
// bit for bit (the forward's out, and the backward's dinp where dinp_dt is bf16, rounded once).
void zt_gelu_forward_bf16(zt_bf16 *out, const zt_bf16 *inp, size_t n);
void zt_gelu_backward_bf16(void *dinp, zt_dtype dinp_dt, const zt_bf16 *inp, const float *dout,
                           size_t n);

void zt_add(float *out, const float *a, const float *b, size_t n);
// y += x.
void zt_accumulate(float *y, const float *x, size_t n);

// The attention's work: zt_attention_workspace floats for the threads the kernels run on
// (threads <= 0: omp_get_max_threads()), the CPU's caps.attention_workspace.
size_t zt_attention_workspace(int threads, int T);
void zt_attention_forward(float *out, float *lse, const float *qkv, float *work, int B, int T,
                          int C, int NH);
void zt_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                           float *work, int B, int T, int C, int NH);
// The bf16 ops (backend_ops.h, attention_forward_bf16 and attention_backward_bf16): per
// (batch, head) pair its q, k, v widened into its own slice of `wide`, then the fp32
// functions' arithmetic, in their order, on those values.
void zt_attention_forward_bf16(void *out, zt_dtype out_dt, float *lse, const zt_bf16 *qkv,
                               float *work, float *wide, int B, int T, int C, int NH);
void zt_attention_backward_bf16(void *dqkv, zt_dtype dqkv_dt, const void *dout,
                                zt_dtype dout_dt, const zt_bf16 *qkv, const float *lse,
                                float *work, float *wide, int B, int T, int C, int NH);

// Scores and outputs are BLAS products, the rows the same softmax (max, log-sum-exp, exp)
// as zt_attention_forward's.
void zt_attention_decode(float *out, const float *q, const float *k, const float *v, float *work,
                         int n_q, int n_pos, int C, int NH);

// The cross entropy's three passes.
void zt_ce_slice_stats(float *row_max, float *target_logit, const float *logits,
                       const int32_t *targets, int n, int n_valid, int vocab_lo, int ld);
void zt_ce_slice_sumexp(float *sumexp, const float *logits, const float *row_max, int n,
                        int n_valid, int ld);
void zt_ce_slice_finish(float *dlogits, float *losses, const float *logits,
                        const int32_t *targets, const float *row_max, const float *sumexp,
                        const float *target_logit, float scale, int n, int n_valid, int vocab_lo,
                        int ld);
// The same over bf16 logits (backend_ops.h's *_bf16): the fp32 passes' values on the
// widened logits, bit for bit, dlogits rounded once.
void zt_ce_slice_stats_bf16(float *row_max, float *target_logit, const zt_bf16 *logits,
                            const int32_t *targets, int n, int n_valid, int vocab_lo, int ld);
void zt_ce_slice_sumexp_bf16(float *sumexp, const zt_bf16 *logits, const float *row_max, int n,
                             int n_valid, int ld);
void zt_ce_slice_finish_bf16(zt_bf16 *dlogits, float *losses, const zt_bf16 *logits,
                             const int32_t *targets, const float *row_max, const float *sumexp,
                             const float *target_logit, float scale, int n, int n_valid,
                             int vocab_lo, int ld);

// Row pieces of the softmax for the CPU kernels (softmax_cpu.c): softmax_math.h's
// max, sum of exp and exp, with a vectorized expf (a few ulp, as scalar expf), the same
// for every element whatever n or the thread count. n >= 0; out may equal x.
float zt_cpu_row_max(const float *x, int n);
// sum over i < n of expf(x[i] - m)
float zt_cpu_row_sumexp(const float *x, int n, float m);
// out[i] = expf(x[i] - sub) for i < n
void zt_cpu_row_exp(float *out, const float *x, float sub, int n);
// The three on a bf16 row, widened a block at a time: their values on the widened row, bit for
// bit (the same blocks, the same vector expf); zt_cpu_row_ce_grad_bf16 writes the cross
// entropy's gradient scale * (exp(x - lse) - [i == target]) rounded to bf16 (out may be x).
float zt_cpu_row_max_bf16(const zt_bf16 *x, int n);
float zt_cpu_row_sumexp_bf16(const zt_bf16 *x, int n, float m);
void zt_cpu_row_ce_grad_bf16(zt_bf16 *out, const zt_bf16 *x, float lse, int target, float scale,
                             int n);

#endif
