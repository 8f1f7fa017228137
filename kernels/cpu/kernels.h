// The CPU kernels of the GPT-2 forward and backward: OpenMP loops around the shared
// math in kernels/*_math.h, matrix products through BLAS. Outputs first, inputs const,
// sizes last. Shapes use N = tokens (B*T), C = channels, OC = output channels.
// Backward kernels ADD into parameter gradients (accumulation over micro-batches);
// what they do to activation gradients is said per function.
#ifndef ZT_KERNELS_H
#define ZT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "bf16_math.h"
#include "common.h"
#include "dtype.h"

// Row-major C = alpha * op(A) @ op(B) + beta * C, op(X) = X or X^T. (M, N) result, K inner.
// Large products run on all OpenMP threads as tiles of C (gemm_cpu.c); called inside a
// parallel region it runs on the calling thread. The tiling follows the thread count, so
// (as with BLAS's own threading) the last bits of C may differ between thread counts.
void zt_gemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc);

// bf16 (bf16_cpu.c): out[i] = zt_bf16_from_fp32(in[i]) (round to nearest even) and
// out[i] = zt_bf16_to_fp32(in[i]) (exact), on all OpenMP threads for large n.
void zt_bf16_from_fp32_array(zt_bf16 *out, const float *in, size_t n);
void zt_bf16_to_fp32_array(float *out, const zt_bf16 *in, size_t n);
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
// fp32 C, alpha, beta: C = alpha * op(A) @ op(B) + beta * C, row-major. Two paths:
//   ZT_BF16_GEMM_DNNL      oneDNN's dnnl_gemm_bf16bf16f32, on CPUs with AVX512-BF16 or
//                          AMX-BF16 (its threads are the program's OpenMP pool);
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
// The path that runs (DNNL or FALLBACK, never AUTO).
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

// ---- bf16 mixed precision (backend.h's last op group; docs/design.md, "bf16") ----
// Parameters and their gradients bf16, activations fp32. Each kernel is its fp32
// counterpart's arithmetic on the widened (exact) bf16 values. One that adds into a bf16
// gradient starts its fp32 sums from the widened gradient, adds in the fp32 kernel's order and
// rounds each element once at the end of the call: its result is the fp32 kernel's on the
// widened gradient, rounded to bf16, bit for bit.

// The scratch the CPU backend's gemm_mixed takes (caps.gemm_mixed_workspace). 32 MiB holds,
// on the fallback path, pieces of op(A) and op(B) over a K chunk of 1024 rounded and widened
// (6 bytes a value) plus a bf16 C's tile in fp32: GPT-2's layer products up to 4096 tokens
// run as one tile per K chunk (the largest, a 3072 x 768 weight gradient, needs 31.5 MiB),
// the lm-head (50304 columns, at most 333 tokens a loss chunk) as 8 tiles 6288 wide. An
// operand is converted again per tile (op(A) once per column tile, op(B) per row tile):
// never for the layer products, for the lm-head 8 passes over its (tokens, 768) input
// against a product 50304 wide. Larger buys nothing there; 16 MiB would split the layers.
#define ZT_GEMM_MIXED_WORKSPACE ((size_t)32 << 20)

// Row-major C (M, N) = alpha op(A) op(B) + beta C with zt_gemm's arguments; A, B and C each
// ZT_F32 or ZT_BF16 (at, bt, ct). An fp32 A or B is rounded to bf16 (nearest even) before
// the products, so every product has bf16 operands (exact in fp32) and the sums are fp32, on
// zt_gemm_bf16's running path; a bf16 C is widened for beta and rounded once at the end.
// work: work_bytes of scratch (any M, N, K: C is cut into tiles of rows and columns and K
// into chunks that fit it; fatal only below a few dozen bytes). K chunks add into an fp32
// C, so the result is the fp32 sum in another order, within zt_gemm_bf16's bound.
void zt_gemm_mixed(int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A,
                   zt_dtype at, int lda, const void *B, zt_dtype bt, int ldb, float beta, void *C,
                   zt_dtype ct, int ldc, void *work, size_t work_bytes);
// out (N, OC) += bias (OC).
void zt_bias_forward_bf16(float *out, const zt_bf16 *bias, int N, int OC);
// zt_bias_backward into a bf16 dbias.
void zt_bias_backward_bf16(zt_bf16 *dbias, const float *dout, int N, int OC);
// zt_encoder_forward / zt_encoder_backward with bf16 wte, wpe and gradients. The backward
// adds each dwte and dwpe row's contributions in token order (as the fp32 kernel) and rounds
// once; it orders the tokens by row in a host index of N entries.
void zt_encoder_forward_bf16(float *out, const int32_t *tokens, const zt_bf16 *wte,
                             const zt_bf16 *wpe, int vocab_lo, int vocab_rows, int N, int T,
                             int C);
void zt_encoder_backward_bf16(zt_bf16 *dwte, zt_bf16 *dwpe, const float *dout,
                              const int32_t *tokens, int vocab_lo, int vocab_rows, int N, int T,
                              int C);
// zt_layernorm_forward / zt_layernorm_backward with bf16 w, b, dw, db. The weights are
// widened once per call into the caller's stack (C <= ZT_BF16_MAX_ROW). The forward's out is
// fp32 or bf16 (out_dt): a bf16 row is the fp32 row rounded.
#define ZT_BF16_MAX_ROW (1 << 14)
void zt_layernorm_forward_bf16(void *out, zt_dtype out_dt, float *mean, float *rstd,
                               const float *inp, const zt_bf16 *w, const zt_bf16 *b, int N,
                               int C);
void zt_layernorm_backward_bf16(float *dinp, zt_bf16 *dw, zt_bf16 *db, const float *dout,
                                const float *inp, const zt_bf16 *w, const float *mean,
                                const float *rstd, int N, int C);

// out (N, C) = wte[tokens] + wpe[position]; token n sits at position n % T.
// wte holds rows [vocab_lo, vocab_lo + vocab_rows) of the padded vocabulary; tokens
// outside that slice (another tp rank's) contribute zeros. wpe NULL adds no positions
// (under tp only one rank adds them before the all-reduce).
void zt_encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe,
                        int vocab_lo, int vocab_rows, int N, int T, int C);
// dwte (vocab_rows, C) +=, dwpe (T', C) += (NULL to skip); dout (N, C).
void zt_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                         int vocab_lo, int vocab_rows, int N, int T, int C);

// out, mean, rstd (N, C), (N), (N).
void zt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C);
// The residual add and the LayerNorm that reads it, in one pass over the rows: res (N, C) =
// a + b, then zt_layernorm_forward of res into out, mean, rstd; bit-identical to zt_add then
// zt_layernorm_forward (the same expressions in the same order). res may be a or b; out may
// alias none of the others.
void zt_residual_layernorm_forward(float *res, float *out, float *mean, float *rstd,
                                   const float *a, const float *b, const float *w,
                                   const float *bias, int N, int C);
// dinp (N, C) +=; dw, db (C) +=.
void zt_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C);

// out (N, OC) = inp (N, C) @ w^T (w: (OC, C)) + bias (OC, NULL for none).
void zt_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N,
                       int C, int OC);
// dinp (N, C) = dout @ w, added when accumulate_dinp; dw (OC, C) += dout^T @ inp;
// dbias (OC) += column sums of dout (NULL to skip).
void zt_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC, int accumulate_dinp);
// The same for a weight stored (in, out) (row-parallel layers, see layout.h): out (N, OC) =
// inp (N, C) @ w (C, OC) + bias; dinp = dout @ w^T; dw (C, OC) += inp^T @ dout.
void zt_matmul_in_out_forward(float *out, const float *inp, const float *w, const float *bias,
                              int N, int C, int OC);
void zt_matmul_in_out_backward(float *dinp, float *dw, float *dbias, const float *dout,
                               const float *inp, const float *w, int N, int C, int OC,
                               int accumulate_dinp);
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
// The MLP's c_fc with its GELU: pre (N, OC) = zt_matmul_forward(inp, w, bias), out (N, OC) =
// gelu(pre); both kept (the backward reads pre). On the CPU the two ops themselves (the
// bias is already inside the GEMM, as C's starting value), so bit-identical to them.
void zt_matmul_gelu_forward(float *pre, float *out, const float *inp, const float *w,
                            const float *bias, int N, int C, int OC);
// zt_gelu_forward's values rounded to bf16.
void zt_gelu_forward_bf16(zt_bf16 *out, const float *inp, size_t n);
// dinp = gelu'(inp) * dout (written, not added).
void zt_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);

// out = a + b.
void zt_add(float *out, const float *a, const float *b, size_t n);
// y += x.
void zt_accumulate(float *y, const float *x, size_t n);

// Causal self-attention of NH heads of size hs = C/NH over qkv (B, T, 3C) laid out as
// [q heads | k heads | v heads] per token. out (B, T, C); lse (B, NH, T) is each score
// row's log-sum-exp, kept for the backward, which recomputes the probabilities
// instead of storing (B, NH, T, T) of them. work: zt_attention_workspace floats for the
// threads the kernels run on (threads <= 0: omp_get_max_threads()).
size_t zt_attention_workspace(int threads, int T);
void zt_attention_forward(float *out, float *lse, const float *qkv, float *work, int B, int T,
                          int C, int NH);
// dqkv (B, T, 3C) written (not added).
void zt_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                           float *work, int B, int T, int C, int NH);

// n_q query rows against a KV cache (generation: a prompt's chunk, or one new token).
// Query i sits at position n_pos - n_q + i and sees the cache up to it: for each of NH
// heads of hs = C/NH, out[i, h] = softmax(q[i, h] . k[j, h] / sqrt(hs) over j <= that
// position) @ v[.., h]. q: n_q rows 3C apart (the q third of a qkv buffer's rows); out
// (n_q, C); k, v (n_pos, C), the cache's positions 0..n_pos-1, the chunk's own rows
// included. work: NH * n_q * n_pos floats. Scores and outputs are BLAS products, the rows
// the same softmax (max, log-sum-exp, exp) as zt_attention_forward's, so a cached decode
// matches the forward over the whole prefix to rounding.
void zt_attention_decode(float *out, const float *q, const float *k, const float *v, float *work,
                         int n_q, int n_pos, int C, int NH);

// Cross entropy over rows of logits (n, ld) holding columns [vocab_lo, vocab_lo + ld) of
// the padded vocabulary, of which the first n_valid are real tokens (the rest padding,
// never given probability). Three passes; between them the tp ranks of a split
// vocabulary take the max of row_max and the sums of sumexp and target_logit
// (src/model/vocab_loss.c), so each pass sees the whole row's numbers:
// row_max (n): max of the row's real columns (-inf when there are none);
// target_logit (n): the target's logit when this slice holds it, else 0.
void zt_ce_slice_stats(float *row_max, float *target_logit, const float *logits,
                       const int32_t *targets, int n, int n_valid, int vocab_lo, int ld);
// sumexp (n) = sum over the real columns of expf(x - row_max).
void zt_ce_slice_sumexp(float *sumexp, const float *logits, const float *row_max, int n,
                        int n_valid, int ld);
// losses (n) = lse - target_logit, lse = row_max + log(sumexp); dlogits (n, ld) =
// scale * (softmax - onehot) on the real columns, 0 on the padding. dlogits may alias
// logits.
void zt_ce_slice_finish(float *dlogits, float *losses, const float *logits,
                        const int32_t *targets, const float *row_max, const float *sumexp,
                        const float *target_logit, float scale, int n, int n_valid, int vocab_lo,
                        int ld);

// Row pieces of the softmax for the CPU kernels (softmax_cpu.c): softmax_math.h's
// max, sum of exp and exp, with a vectorized expf (a few ulp, as scalar expf), the same
// for every element whatever n or the thread count. n >= 0; out may equal x.
float zt_cpu_row_max(const float *x, int n);
// sum over i < n of expf(x[i] - m)
float zt_cpu_row_sumexp(const float *x, int n, float m);
// out[i] = expf(x[i] - sub) for i < n
void zt_cpu_row_exp(float *out, const float *x, float sub, int n);

#endif
