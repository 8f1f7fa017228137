// The mixed-precision GEMM (backend.h's gemm_mixed): fp32 or bf16 A, B and C through
// zt_gemm_bf16's paths, tiled to fit a fixed scratch (docs/design.md, "bf16").
//
// C is cut into tiles of mt rows and nt columns and K into chunks of at most kt. Per tile
// and chunk, each operand's piece is brought to what the GEMM path takes, then the chunk's
// products are added into an fp32 C: the caller's own, or for a bf16 C a tile widened into
// the scratch (beta applied with the first chunk) and rounded back once after the last.
//   oneDNN:   an fp32 piece is rounded to bf16 into the scratch; a bf16 operand is used
//             where it lies, with its own leading dimension; zt_gemm_bf16. With both
//             operands bf16: K in one chunk, and on the matmul primitive a bf16 C written
//             by it (its fp32 sum rounded once: the same contract) with no tile.
//   fallback: every piece goes to zt_gemm as fp32 holding bf16 values: a bf16 one widened,
//             an fp32 one rounded to bf16 and widened back in the same pass (through
//             zt_gemm_bf16 it was rounded into bf16 scratch, then widened from there: two
//             passes, the same values). The products are those zt_gemm_bf16 forms.
// The scratch:
//
//   [ C tile, fp32 (bf16 C only) | op(A) piece | op(B) piece ]
//      mt*nt                        mt*kt         kt*nt        elements of `elem` bytes:
//                                                              bf16 (oneDNN), fp32 (fallback)
//
// The fp32 part comes first, so the bf16 parts never misalign it.
#include <string.h>

#include "kernels.h"
#include "launch_math.h"

typedef struct {
    const void *p; // as stored: op(X) = X, or X^T when trans
    zt_dtype t;
    int ld, trans;
} operand;

typedef struct {
    int mt, nt, kt; // the largest tile and chunk
    int fallback;   // no bf16 kernels: the pieces go to zt_gemm as fp32
    int matmul;     // oneDNN's matmul primitive (it writes a bf16 C itself)
    float *c32;     // (mt, nt): a bf16 C's tile in fp32, else NULL (C written where it lies)
    void *a, *b;    // op(A)'s and op(B)'s pieces (bf16 or fp32), NULL where used in place
} plan;

// Whether an operand's piece is copied into the scratch: always on the fallback (zt_gemm
// takes fp32), on oneDNN only an fp32 one (rounded to bf16).
static int copied(const plan *p, const operand *x) { return p->fallback || x->t == ZT_F32; }

// The largest tiles that fit (launch_math.h's zt_gemm_plan_tiles, the CUDA backend's plan
// too): the whole of C and balanced K chunks, then the longer side of the tile halved (then
// the chunk) until the scratch holds it. Halving the longer side keeps tiles square-ish,
// which converts the fewest operand values again. Where nothing is copied (bf16 A and B on
// oneDNN) K is one chunk, and the matmul primitive writes a bf16 C where it lies: one call,
// no scratch, as the GPU's direct form. The parts lie as drawn above, unaligned.
static plan plan_tiles(const operand *a, const operand *b, zt_dtype ct, int M, int N, int K,
                       void *work, size_t work_bytes) {
    zt_bf16_gemm_path path = zt_gemm_bf16_path();
    plan p = {0, 0, 0, path == ZT_BF16_GEMM_FALLBACK, path == ZT_BF16_GEMM_DNNL_MATMUL, NULL,
              NULL, NULL};
    size_t elem = p.fallback ? sizeof(float) : sizeof(zt_bf16);
    int direct = !copied(&p, a) && !copied(&p, b);
    zt_gemm_scratch s = {ct == ZT_BF16 && !(direct && p.matmul && K > 0), copied(&p, a),
                         copied(&p, b), elem, 1, 1};
    zt_gemm_tiles t =
        zt_gemm_plan_tiles(M, N, K, direct ? K : ZT_GEMM_MIXED_K_CHUNK, &s, work_bytes);
    ZT_ASSERTF(t.kt > 0 || K == 0, "gemm_mixed: %zu bytes of scratch hold no tile", work_bytes);
    p.mt = t.mt, p.nt = t.nt, p.kt = t.kt;
    char *at = work;
    p.c32 = s.c32 ? (float *)at : NULL;
    p.a = s.copy_a ? at + zt_gemm_part_c(t, &s) : NULL;
    p.b = s.copy_b ? at + zt_gemm_part_c(t, &s) + zt_gemm_part_a(t, &s) : NULL;
    return p;
}

// op(X)'s piece [r0, r0 + rows) x [c0, c0 + cols) as the path takes it, with leading
// dimension *ld: where X lies when it is bf16 on oneDNN, else converted into buf (packed, as
// stored: still transposed when X is). Stored coordinates swap under a transpose.
static const void *operand_piece(const plan *p, const operand *x, int r0, int c0, int rows,
                                 int cols, void *buf, int *ld) {
    int srows = x->trans ? cols : rows, scols = x->trans ? rows : cols;
    size_t off = zt_op_at(x->trans, r0, c0, x->ld);
    if (!copied(p, x)) {
        *ld = x->ld;
        return (const zt_bf16 *)x->p + off;
    }
    *ld = scols > 1 ? scols : 1; // BLAS wants at least 1, even of an empty matrix
    if (!p->fallback)
        zt_bf16_from_fp32_matrix(buf, *ld, (const float *)x->p + off, x->ld, srows, scols);
    else if (x->t == ZT_BF16)
        zt_bf16_to_fp32_matrix(buf, *ld, (const zt_bf16 *)x->p + off, x->ld, srows, scols);
    else
        zt_bf16_round_fp32_matrix(buf, *ld, (const float *)x->p + off, x->ld, srows, scols);
    return buf;
}

// C[i0.., j0..] (m, n) = alpha op(A)[i0.., :] op(B)[:, j0..] + beta C[i0.., j0..], K in chunks.
static void gemm_tile(const plan *p, const operand *a, const operand *b, int K, float alpha,
                      float beta, void *C, zt_dtype ct, int ldc, int i0, int j0, int m, int n) {
    size_t c_off = (size_t)i0 * ldc + j0;
    if (!p->c32 && ct == ZT_BF16) { // the matmul primitive, one call (plan_tiles)
        zt_matmul_dnnl(a->trans, b->trans, m, n, K, alpha, (const zt_bf16 *)a->p +
                       zt_op_at(a->trans, i0, 0, a->ld), a->ld, (const zt_bf16 *)b->p +
                       zt_op_at(b->trans, 0, j0, b->ld), b->ld, beta, (zt_bf16 *)C + c_off,
                       ZT_BF16, ldc, NULL);
        return;
    }
    float *c = p->c32 ? p->c32 : (float *)C + c_off;
    int ld = p->c32 ? n : ldc;
    if (p->c32 && beta != 0.0f)
        zt_bf16_to_fp32_matrix(c, ld, (const zt_bf16 *)C + c_off, ldc, m, n);
    else if (p->c32) // beta 0 never reads C (as BLAS), so no NaN comes from the scratch
        memset(c, 0, (size_t)m * n * sizeof(float));
    int k0 = 0;
    do { // at least once: K = 0 still scales C by beta
        int kk = K - k0 < p->kt ? K - k0 : p->kt, lda, ldb;
        const void *pa = operand_piece(p, a, i0, k0, m, kk, p->a, &lda);
        const void *pb = operand_piece(p, b, k0, j0, kk, n, p->b, &ldb);
        float bk = k0 == 0 ? beta : 1.0f;
        if (p->fallback)
            zt_gemm(a->trans, b->trans, m, n, kk, alpha, pa, lda, pb, ldb, bk, c, ld);
        else
            zt_gemm_bf16(a->trans, b->trans, m, n, kk, alpha, pa, lda, pb, ldb, bk, c, ld, NULL);
        k0 += kk;
    } while (k0 < K);
    if (p->c32) zt_bf16_from_fp32_matrix((zt_bf16 *)C + c_off, ldc, c, ld, m, n);
}

void zt_gemm_mixed(int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A,
                   zt_dtype at, int lda, const void *B, zt_dtype bt, int ldb, float beta, void *C,
                   zt_dtype ct, int ldc, void *work, size_t work_bytes) {
    ZT_ASSERTF((at == ZT_F32 || at == ZT_BF16) && (bt == ZT_F32 || bt == ZT_BF16) &&
                   (ct == ZT_F32 || ct == ZT_BF16),
               "gemm_mixed: A, B and C must be f32 or bf16 (got %s, %s, %s)", zt_dtype_name(at),
               zt_dtype_name(bt), zt_dtype_name(ct));
    ZT_ASSERT(M >= 0 && N >= 0 && K >= 0);
    if (M == 0 || N == 0) return;
    operand a = {A, at, lda, trans_a}, b = {B, bt, ldb, trans_b};
    plan p = plan_tiles(&a, &b, ct, M, N, K, work, work_bytes);
    for (int i0 = 0; i0 < M; i0 += p.mt)
        for (int j0 = 0; j0 < N; j0 += p.nt)
            gemm_tile(&p, &a, &b, K, alpha, beta, C, ct, ldc, i0, j0,
                      M - i0 < p.mt ? M - i0 : p.mt, N - j0 < p.nt ? N - j0 : p.nt);
}

// The bias added by oneDNN to the fp32 sum before a bf16 C is rounded, as bias_broadcast_bf16
// and gemm_mixed's beta 1 (or an fp32 C and bias_forward_bf16) do: one add, the same values;
// it saves their pass over C (0.1 ms of GPT-2 124M's biased forward products at 256 tokens,
// 4 to 13%, on an AVX512-BF16 EPYC).
int zt_gemm_mixed_bias(int trans_a, int trans_b, int M, int N, int K, const void *A,
                       zt_dtype at, int lda, const zt_bf16 *B, int ldb, void *C, zt_dtype ct,
                       const zt_bf16 *bias) {
    if (at != ZT_BF16 || M == 0 || N == 0 || K == 0 ||
        zt_gemm_bf16_path() != ZT_BF16_GEMM_DNNL_MATMUL)
        return 0;
    zt_matmul_dnnl(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ct, N, bias);
    return 1;
}
