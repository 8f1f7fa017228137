// gemm_mixed on the GPU (backend.h): bf16 operands, fp32 sums on tensor cores through
// cuBLASLt (CUDA_R_16BF A and B, CUBLAS_COMPUTE_32F, an fp32 C). Compiled by gcc, as C, in
// `make cuda` only.
//
// cuBLASLt takes both operands in one type, so an fp32 operand is rounded to bf16 first (what
// the CPU does: every product has bf16 operands), and a bf16 C is widened into fp32 for beta,
// the products added there and rounded once at the end (bf16_math.h's rounding, the CPU's).
// Both need scratch, so C is cut into tiles and K into chunks as on the CPU
// (launch_math.h's zt_gemm_plan_tiles, the same plan): the scratch, carved by the model from
// its workspace (caps.gemm_mixed_workspace, so the planner counts it), is
//
//   [ cuBLASLt's workspace | C tile, fp32 (bf16 C) | op(A) piece, bf16 | op(B) piece, bf16 ]
//     ZT_CUDA_LT_WORKSPACE   mt*nt                   mt*kt (fp32 A)      kt*nt (fp32 B)
//
// each part 256-byte aligned. A bf16 operand is read where it lies.
//
// Each product's descriptors, layouts and the heuristic's algorithm form a plan, cached in the
// backend's fixed table (lt_cache_math.h) under everything they depend on: transposes,
// sizes, leading dimensions, types and the pointers' alignment classes, so a plan chosen for
// 256-byte aligned operands never runs on a less aligned piece. A step's ~10 shapes then
// cost a lookup each instead of a heuristic query and seven descriptor calls.
#include <cublasLt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bf16_cuda.h"
#include "cuda_check.h"

#define PART_ALIGN ((int)ZT_LT_ALIGN_MAX) // cuBLASLt's default alignment of every operand

typedef struct {
    const void *p; // as stored: op(X) = X, or X^T when trans
    zt_dtype t;
    int ld, trans;
} operand;

// One call's fixed part: operands, C, and where the tile's scratch parts lie.
typedef struct {
    zt_cuda_bf16 *b;
    operand a, bm;
    int K;
    float alpha, beta;
    void *C;
    zt_dtype ct;
    int ldc;
    zt_gemm_tiles t;
    void *lt_ws;
    float *c32;
    zt_bf16 *pa, *pb;
} job;

static void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t at,
                     const void *v, size_t size) {
    ZT_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, at, v, size));
}

// fp32 sums and scalars; op(first), op(second) as the flags say.
static cublasLtMatmulDesc_t lt_desc(int trans_first, int trans_second) {
    cublasOperation_t t1 = trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t t2 = trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtMatmulDesc_t op;
    ZT_CHECK_CUBLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    ZT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA,
                                                   &t1, sizeof t1));
    ZT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB,
                                                   &t2, sizeof t2));
    return op;
}

// A column-major (rows, cols) matrix with leading dimension ld.
static cublasLtMatrixLayout_t lt_layout(int type, int rows, int cols, int ld) {
    cublasLtMatrixLayout_t l;
    ZT_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&l, (cudaDataType_t)type, rows, cols, ld));
    return l;
}

// cuBLASLt's first choice within its workspace at the key's alignments.
static cublasLtMatmulAlgo_t lt_algo(const zt_cuda_bf16 *b, const zt_cuda_lt_plan *p,
                                    const zt_lt_key *k) {
    cublasLtMatmulPreference_t pref;
    ZT_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = ZT_CUDA_LT_WORKSPACE;
    uint32_t a1 = k->align_first, a2 = k->align_second, ac = k->align_c;
    set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &a1, sizeof a1);
    set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &a2, sizeof a2);
    set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac);
    set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac);
    cublasLtMatmulHeuristicResult_t h;
    int found = 0;
    ZT_CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(b->lt, p->op, p->first, p->second, p->c, p->c,
                                                   pref, 1, &h, &found));
    ZT_ASSERTF(found > 0, "cuBLASLt has no bf16 GEMM for these operands (alignment %u, %u, %u)",
               a1, a2, ac);
    cublasLtMatmulPreferenceDestroy(pref);
    return h.algo;
}

static void plan_free(zt_cuda_lt_plan *p) {
    cublasLtMatrixLayoutDestroy(p->c);
    cublasLtMatrixLayoutDestroy(p->second);
    cublasLtMatrixLayoutDestroy(p->first);
    cublasLtMatmulDescDestroy(p->op);
}

// The plan of key k: from the cache, or made and cached (replacing the oldest when the table
// is full: cuBLASLt reads the descriptors when a call enqueues, and before the cache this file
// freed them right after each call).
static const zt_cuda_lt_plan *lt_plan(zt_cuda_bf16 *b, const zt_lt_key *k) {
    int i = zt_lt_find(&b->lt_index, k), replaced;
    if (i >= 0) return &b->lt_plans[i];
    zt_cuda_lt_plan p;
    p.op = lt_desc(k->trans_first, k->trans_second);
    p.first = lt_layout(k->type_first, k->trans_first ? k->k : k->m,
                        k->trans_first ? k->m : k->k, k->ld_first);
    p.second = lt_layout(k->type_second, k->trans_second ? k->n : k->k,
                         k->trans_second ? k->k : k->n, k->ld_second);
    p.c = lt_layout(k->type_c, k->m, k->n, k->ldc);
    p.algo = lt_algo(b, &p, k);
    i = zt_lt_insert(&b->lt_index, k, &replaced);
    if (replaced) plan_free(&b->lt_plans[i]);
    b->lt_plans[i] = p;
    return &b->lt_plans[i];
}

// Row-major C (M, N) = alpha op(A) op(B) + beta C, A and B bf16, C fp32, as the column-major
// product launch_math.h's zt_gemm_row_to_col gives (the pointers pass through it untouched).
static void lt_matmul(const job *j, int ta, int tb, int M, int N, int K, const zt_bf16 *A,
                      int lda, const zt_bf16 *B, int ldb, float beta, float *C, int ldc) {
    zt_col_major_gemm g = zt_gemm_row_to_col(ta, tb, M, N, K, (const float *)(const void *)A,
                                             lda, (const float *)(const void *)B, ldb);
    zt_lt_key k = zt_lt_key_of(&g, ldc, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, C);
    const zt_cuda_lt_plan *p = lt_plan(j->b, &k);
    ZT_CHECK_CUBLAS(cublasLtMatmul(j->b->lt, p->op, &j->alpha, g.first, p->first, g.second,
                                   p->second, &beta, C, p->c, C, p->c, &p->algo, j->lt_ws,
                                   ZT_CUDA_LT_WORKSPACE, j->b->stream));
}

// op(X)'s piece [r0, r0 + rows) x [c0, c0 + cols) in bf16 with leading dimension *ld: where
// X lies when it is bf16, else rounded into buf (packed as stored: still transposed).
static const zt_bf16 *piece(const job *j, const operand *x, int r0, int c0, int rows, int cols,
                            zt_bf16 *buf, int *ld) {
    size_t off = zt_op_at(x->trans, r0, c0, x->ld);
    if (x->t == ZT_BF16) {
        *ld = x->ld;
        return (const zt_bf16 *)x->p + off;
    }
    int srows = x->trans ? cols : rows, scols = x->trans ? rows : cols;
    *ld = scols;
    zt_cuda_bf16_round_matrix(j->b->stream, buf, scols, (const float *)x->p + off, x->ld, srows,
                              scols);
    return buf;
}

// C[i0.., j0..] (m, n) = alpha op(A)[i0.., :] op(B)[:, j0..] + beta C[i0.., j0..], K in chunks.
static void gemm_tile(const job *j, int i0, int j0, int m, int n) {
    cudaStream_t st = j->b->stream;
    int c16 = j->ct == ZT_BF16, ld = c16 ? n : j->ldc;
    size_t c_off = (size_t)i0 * j->ldc + j0;
    float *c = c16 ? j->c32 : (float *)j->C + c_off;
    if (c16 && j->beta != 0.0f)
        zt_cuda_bf16_widen_matrix(st, c, ld, (const zt_bf16 *)j->C + c_off, j->ldc, m, n);
    else if (c16) // beta 0 never reads C (as BLAS): no NaN from the scratch
        ZT_CHECK_CUDA(cudaMemsetAsync(c, 0, (size_t)m * n * sizeof(float), st));
    for (int k0 = 0, kk; k0 < j->K; k0 += kk) {
        int lda, ldb;
        kk = j->K - k0 < j->t.kt ? j->K - k0 : j->t.kt;
        const zt_bf16 *pa = piece(j, &j->a, i0, k0, m, kk, j->pa, &lda);
        const zt_bf16 *pb = piece(j, &j->bm, k0, j0, kk, n, j->pb, &ldb);
        lt_matmul(j, j->a.trans, j->bm.trans, m, n, kk, pa, lda, pb, ldb, k0 ? 1.0f : j->beta, c,
                  ld);
    }
    if (j->K == 0) zt_cuda_scale_matrix(st, c, ld, m, n, j->beta); // the empty sum: beta C
    if (c16) zt_cuda_bf16_round_matrix(st, (zt_bf16 *)j->C + c_off, j->ldc, c, ld, m, n);
}

void zt_cuda_gemm_mixed(zt_cuda_bf16 *b, int trans_a, int trans_b, int M, int N, int K,
                        float alpha, const void *A, zt_dtype at, int lda, const void *B,
                        zt_dtype bt, int ldb, float beta, void *C, zt_dtype ct, int ldc,
                        void *work) {
    ZT_ASSERTF((at == ZT_F32 || at == ZT_BF16) && (bt == ZT_F32 || bt == ZT_BF16) &&
                   (ct == ZT_F32 || ct == ZT_BF16),
               "gemm_mixed: A, B and C must be f32 or bf16 (got %s, %s, %s)", zt_dtype_name(at),
               zt_dtype_name(bt), zt_dtype_name(ct));
    ZT_ASSERT(M >= 0 && N >= 0 && K >= 0);
    if (M == 0 || N == 0) return;
    ZT_ASSERTF((uintptr_t)work % PART_ALIGN == 0, "gemm_mixed: scratch not %d-byte aligned",
               PART_ALIGN);
    zt_gemm_scratch s = {ct == ZT_BF16, at == ZT_F32, bt == ZT_F32, sizeof(zt_bf16), PART_ALIGN};
    job j = {b, {A, at, lda, trans_a}, {B, bt, ldb, trans_b}, K, alpha, beta, C, ct, ldc,
             zt_gemm_plan_tiles(M, N, K, ZT_GEMM_MIXED_K_CHUNK, &s,
                                ZT_CUDA_GEMM_MIXED_WORKSPACE - ZT_CUDA_LT_WORKSPACE),
             work, NULL, NULL, NULL};
    ZT_ASSERTF(j.t.kt > 0 || K == 0, "gemm_mixed: the scratch holds no tile");
    char *tiles = (char *)work + ZT_CUDA_LT_WORKSPACE;
    j.c32 = (float *)tiles;
    j.pa = (zt_bf16 *)(tiles + zt_gemm_part_c(j.t, &s));
    j.pb = (zt_bf16 *)(tiles + zt_gemm_part_c(j.t, &s) + zt_gemm_part_a(j.t, &s));
    for (int i0 = 0; i0 < M; i0 += j.t.mt)
        for (int j0 = 0; j0 < N; j0 += j.t.nt)
            gemm_tile(&j, i0, j0, M - i0 < j.t.mt ? M - i0 : j.t.mt,
                      N - j0 < j.t.nt ? N - j0 : j.t.nt);
}

void zt_cuda_gemm_mixed_describe(char *buf, size_t size) {
    size_t v = cublasLtGetVersion();
    snprintf(buf, size,
             "bf16 GEMM: cuBLASLt %zu.%zu.%zu, bf16 operands (fp32 ones rounded on the GPU), "
             "fp32 accumulation on tensor cores",
             v / 10000, v / 100 % 100, v % 100);
}

void zt_cuda_gemm_mixed_free(zt_cuda_bf16 *b) {
    for (int i = 0; i < b->lt_index.used; i++) plan_free(&b->lt_plans[i]);
    memset(&b->lt_index, 0, sizeof b->lt_index);
}
