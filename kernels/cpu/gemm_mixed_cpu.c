// The mixed-precision GEMM (backend.h's gemm_mixed): fp32 or bf16 A, B and C through
// zt_gemm_bf16, tiled to fit a fixed scratch (docs/design.md, "bf16").
//
// C is cut into tiles of mt rows and nt columns and K into chunks of at most kt. Per tile
// and chunk, an fp32 operand's piece is rounded to bf16 into the scratch (a bf16 operand is
// used where it lies, with its own leading dimension); zt_gemm_bf16 adds the chunk's products
// into an fp32 C: the caller's own, or for a bf16 C a tile widened into the scratch (beta
// applied with the first chunk) and rounded back once after the last. The scratch:
//
//   [ C tile, fp32 (bf16 C only) | fallback's widened operands, fp32 | op(A) bf16 | op(B) bf16 ]
//      mt*nt                        zt_gemm_bf16_workspace(mt,nt,kt)    mt*kt        kt*nt
//
// The fp32 parts come first, so the bf16 parts never misalign them.
#include <string.h>

#include "kernels.h"

// K chunks of at most this many (balanced: K = 3072 is 3 x 1024). Chunks cost only one more
// pass over the fp32 C tile each, and keep the operand tiles, and so the scratch a tile of C
// needs, independent of K (a weight gradient's K is the micro-batch's tokens).
#define ZT_GEMM_MIXED_K_CHUNK 1024

typedef struct {
    const void *p; // as stored: op(X) = X, or X^T when trans
    zt_dtype t;
    int ld, trans;
} operand;

typedef struct {
    int mt, nt, kt; // the largest tile and chunk
    float *c32;     // (mt, nt): a bf16 C's tile in fp32, else NULL
    float *widen;   // zt_gemm_bf16's scratch (the fallback's widened operands)
    zt_bf16 *a16;   // an fp32 A's piece rounded to bf16, else NULL
    zt_bf16 *b16;   // the same for B
} plan;

// Scratch bytes of an (mt, nt, kt) tile, in the layout above.
static size_t tile_bytes(const operand *a, const operand *b, zt_dtype ct, int mt, int nt,
                         int kt) {
    size_t bytes = zt_gemm_bf16_workspace(mt, nt, kt) * sizeof(float);
    if (ct == ZT_BF16) bytes += (size_t)mt * nt * sizeof(float);
    if (a->t == ZT_F32) bytes += (size_t)mt * kt * sizeof(zt_bf16);
    if (b->t == ZT_F32) bytes += (size_t)kt * nt * sizeof(zt_bf16);
    return bytes;
}

// The largest tiles that fit: the whole of C and balanced K chunks, then the longer side of
// the tile halved (then the chunk) until the scratch holds it. Halving the longer side keeps
// tiles square-ish, which converts the fewest operand values again.
static plan plan_tiles(const operand *a, const operand *b, zt_dtype ct, int M, int N, int K,
                       void *work, size_t work_bytes) {
    int chunks = (K + ZT_GEMM_MIXED_K_CHUNK - 1) / ZT_GEMM_MIXED_K_CHUNK;
    plan p = {M, N, chunks ? (K + chunks - 1) / chunks : 0, NULL, NULL, NULL, NULL};
    while (tile_bytes(a, b, ct, p.mt, p.nt, p.kt) > work_bytes) {
        int *longer = p.mt >= p.nt ? &p.mt : &p.nt;
        if (*longer > 1) *longer = (*longer + 1) / 2;
        else {
            ZT_ASSERTF(p.kt > 1, "gemm_mixed: %zu bytes of scratch hold no tile", work_bytes);
            p.kt = (p.kt + 1) / 2;
        }
    }
    char *at = work;
    if (ct == ZT_BF16) p.c32 = (float *)at, at += (size_t)p.mt * p.nt * sizeof(float);
    p.widen = (float *)at;
    at += zt_gemm_bf16_workspace(p.mt, p.nt, p.kt) * sizeof(float);
    if (a->t == ZT_F32) p.a16 = (zt_bf16 *)at, at += (size_t)p.mt * p.kt * sizeof(zt_bf16);
    if (b->t == ZT_F32) p.b16 = (zt_bf16 *)at;
    return p;
}

// op(X)'s piece [r0, r0 + rows) x [c0, c0 + cols) as bf16 with leading dimension *ld: where
// X lies when it is bf16, else rounded into buf (packed, as stored: still transposed when X
// is). Stored coordinates swap under a transpose.
static const zt_bf16 *operand_piece(const operand *x, int r0, int c0, int rows, int cols,
                                    zt_bf16 *buf, int *ld) {
    int sr0 = x->trans ? c0 : r0, sc0 = x->trans ? r0 : c0;
    int srows = x->trans ? cols : rows, scols = x->trans ? rows : cols;
    size_t off = (size_t)sr0 * x->ld + sc0;
    if (x->t == ZT_BF16) {
        *ld = x->ld;
        return (const zt_bf16 *)x->p + off;
    }
    *ld = scols > 1 ? scols : 1; // BLAS wants at least 1, even of an empty matrix
    zt_bf16_from_fp32_matrix(buf, *ld, (const float *)x->p + off, x->ld, srows, scols);
    return buf;
}

// C[i0.., j0..] (m, n) = alpha op(A)[i0.., :] op(B)[:, j0..] + beta C[i0.., j0..], K in chunks.
static void gemm_tile(const plan *p, const operand *a, const operand *b, int K, float alpha,
                      float beta, void *C, zt_dtype ct, int ldc, int i0, int j0, int m, int n) {
    size_t c_off = (size_t)i0 * ldc + j0;
    float *c = ct == ZT_BF16 ? p->c32 : (float *)C + c_off;
    int ld = ct == ZT_BF16 ? n : ldc;
    if (ct == ZT_BF16 && beta != 0.0f)
        zt_bf16_to_fp32_matrix(c, ld, (const zt_bf16 *)C + c_off, ldc, m, n);
    else if (ct == ZT_BF16) // beta 0 never reads C (as BLAS), so no NaN comes from the scratch
        memset(c, 0, (size_t)m * n * sizeof(float));
    int k0 = 0;
    do { // at least once: K = 0 still scales C by beta
        int kk = K - k0 < p->kt ? K - k0 : p->kt, lda, ldb;
        const zt_bf16 *pa = operand_piece(a, i0, k0, m, kk, p->a16, &lda);
        const zt_bf16 *pb = operand_piece(b, k0, j0, kk, n, p->b16, &ldb);
        zt_gemm_bf16(a->trans, b->trans, m, n, kk, alpha, pa, lda, pb, ldb,
                     k0 == 0 ? beta : 1.0f, c, ld, p->widen);
        k0 += kk;
    } while (k0 < K);
    if (ct == ZT_BF16) zt_bf16_from_fp32_matrix((zt_bf16 *)C + c_off, ldc, c, ld, m, n);
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
