// gemm_mixed on the GPU (backend.h): bf16 operands, fp32 sums on tensor cores through
// cuBLASLt (CUDA_R_16BF A and B, CUBLAS_COMPUTE_32F, an fp32 or bf16 C). Compiled by gcc, as
// C, in `make cuda` only.
//
// Three forms, chosen per product (docs/design.md, "bf16"):
//   direct:   A and B bf16: one cuBLASLt call on the operands where they lie, C of its own
//             type (a bf16 D is the fp32 sum rounded once, the CPU's rounding); no scratch,
//             no K chunks.
//   convert:  an fp32 operand is rounded to bf16 first (cuBLASLt takes both operands in one
//             type), so C is cut into tiles and K into chunks to fit the scratch, as on the
//             CPU (launch_math.h's zt_gemm_plan_tiles, the same plan); a bf16 C is then
//             widened into an fp32 tile for beta, the chunks' products added there and
//             rounded once at the end. A bf16 operand is read where it lies.
//   padded:   where a tile's operands or C as they lie do not start and have rows at 16
//             bytes (odd leading dimensions, e.g. 2014-byte rows, or odd offsets), the loads
//             cuBLASLt's tensor-core kernels make, or where its heuristic has no algorithm
//             for them, every operand and C go through the scratch, each row padded to 16
//             bytes and each part 256-byte aligned. The same sums, in more passes.
// The scratch, carved by the model from its workspace (caps.gemm_mixed_workspace, so the
// planner counts it) and aligned here (the carver gives 64 bytes, cuBLASLt wants 256):
//
//   [ to 256 | cuBLASLt's workspace | C tile, fp32 | op(A) piece, bf16 | op(B) piece, bf16 ]
//     < 256    ZT_CUDA_LT_WORKSPACE   (mt, nt)       (mt, kt)            (kt, nt)
//
// each part 256-byte aligned, rows padded to 8 values.
//
// Each product's descriptors, layouts and the heuristic's algorithm (or its answer that it
// has none) form a plan, cached in the backend's fixed table (lt_cache_math.h) under
// everything they depend on: transposes, sizes, leading dimensions, types and the pointers'
// alignment classes, so a plan chosen for 256-byte aligned operands never runs on a less
// aligned piece; for gemm_epilogue_bf16's fused form also the epilogue and its input's
// class (the input's pointer is set on the cached descriptor before each call). A step's ~10
// shapes then cost a lookup each instead of a heuristic query and seven descriptor calls.
#include <cublasLt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bf16_cuda.h"
#include "cuda_check.h"

#define PART_ALIGN ((size_t)ZT_LT_ALIGN_MAX) // cuBLASLt's default alignment of every operand
#define ROW_PAD 8 // values a scratch row is padded to: 16 bytes of bf16, 32 of fp32

typedef struct {
    const void *p; // as stored: op(X) = X, or X^T when trans
    zt_dtype t;
    int ld, trans;
} operand;

typedef enum { FORM_DIRECT, FORM_CONVERT, FORM_PADDED } form;

// One call's fixed part: operands, C, the form, and where the tile's scratch parts lie.
typedef struct {
    zt_cuda_bf16 *b;
    operand a, bm;
    int K;
    float alpha, beta;
    void *C;
    zt_dtype ct;
    int ldc;
    zt_gemm_scratch s; // which parts the form keeps in scratch
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

// cuBLASLt's first choice within its workspace at the key's alignments into p->algo;
// p->found 0 where it has none (the caller takes the padded form).
static void lt_algo(const zt_cuda_bf16 *b, zt_cuda_lt_plan *p, const zt_lt_key *k) {
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
    // Some cuBLASLt versions answer "not supported" instead of 0 results: both mean none.
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(b->lt, p->op, p->first, p->second, p->c,
                                                       p->c, pref, 1, &h, &found);
    ZT_ASSERTF(st == CUBLAS_STATUS_SUCCESS || st == CUBLAS_STATUS_NOT_SUPPORTED,
               "cublasLtMatmulAlgoGetHeuristic failed: status %d", (int)st);
    cublasLtMatmulPreferenceDestroy(pref);
    p->found = st == CUBLAS_STATUS_SUCCESS && found > 0;
    if (p->found) p->algo = h.algo;
}

static void plan_free(zt_cuda_lt_plan *p) {
    cublasLtMatrixLayoutDestroy(p->c);
    cublasLtMatrixLayoutDestroy(p->second);
    cublasLtMatrixLayoutDestroy(p->first);
    cublasLtMatmulDescDestroy(p->op);
}

static int set_epilogue(cublasLtMatmulDesc_t op, const zt_lt_key *k, const void *v);

// The plan of key k: from the cache, or made and cached (replacing the oldest when the table
// is full: cuBLASLt reads the descriptors when a call enqueues, and before the cache this file
// freed them right after each call). A plan without an algorithm is cached too, so the
// heuristic is asked once. v: the epilogue's vector or matrix (k->epilogue 0: none).
static zt_cuda_lt_plan *lt_plan(zt_cuda_bf16 *b, const zt_lt_key *k, const void *v) {
    int i = zt_lt_find(&b->lt_index, k), replaced;
    if (i >= 0) return &b->lt_plans[i];
    zt_cuda_lt_plan p;
    p.op = lt_desc(k->trans_first, k->trans_second);
    p.first = lt_layout(k->type_first, k->trans_first ? k->k : k->m,
                        k->trans_first ? k->m : k->k, k->ld_first);
    p.second = lt_layout(k->type_second, k->trans_second ? k->n : k->k,
                         k->trans_second ? k->k : k->n, k->ld_second);
    p.c = lt_layout(k->type_c, k->m, k->n, k->ldc);
    if (k->epilogue && !set_epilogue(p.op, k, v))
        p.found = 0;
    else
        lt_algo(b, &p, k);
    i = zt_lt_insert(&b->lt_index, k, &replaced);
    if (replaced) plan_free(&b->lt_plans[i]);
    b->lt_plans[i] = p;
    return &b->lt_plans[i];
}

// One cuBLASLt product: row-major C (M, N) = alpha op(A) op(B) + beta C, A and B bf16, C of
// type ct, as the column-major product launch_math.h's zt_gemm_row_to_col gives (the
// pointers pass through it untouched).
typedef struct {
    int M, N, K;
    const zt_bf16 *A, *B;
    int lda, ldb;
    float beta;
    void *C;
    zt_dtype ct;
    int ldc;
} lt_call;

static zt_col_major_gemm col_major(const job *j, const lt_call *c) {
    return zt_gemm_row_to_col(j->a.trans, j->bm.trans, c->M, c->N, c->K,
                              (const float *)(const void *)c->A, c->lda,
                              (const float *)(const void *)c->B, c->ldb);
}

static const zt_cuda_lt_plan *call_plan(const job *j, const lt_call *c) {
    zt_col_major_gemm g = col_major(j, c);
    int type_c = c->ct == ZT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    zt_lt_key k = zt_lt_key_of(&g, c->ldc, CUDA_R_16BF, CUDA_R_16BF, type_c, c->C);
    return lt_plan(j->b, &k, NULL);
}

static void lt_run(const job *j, const lt_call *c) {
    zt_col_major_gemm g = col_major(j, c);
    const zt_cuda_lt_plan *p = call_plan(j, c);
    ZT_ASSERTF(p->found, "cuBLASLt has no bf16 GEMM for %d x %d x %d with 256-byte aligned "
               "operands and 16-byte rows", c->M, c->N, c->K);
    ZT_CHECK_CUBLAS(cublasLtMatmul(j->b->lt, p->op, &j->alpha, g.first, p->first, g.second,
                                   p->second, &c->beta, c->C, p->c, c->C, p->c, &p->algo,
                                   j->lt_ws, ZT_CUDA_LT_WORKSPACE, j->b->stream));
}

// The leading dimension of a scratch part whose rows hold `cols` values.
static int padded_ld(int cols) { return (int)zt_align_up((size_t)(cols > 1 ? cols : 1), ROW_PAD); }

// op(X)'s piece [r0, r0 + rows) x [c0, c0 + cols) in bf16 with leading dimension *ld: where
// X lies when it is not copied, else at buf (as stored: still transposed), brought there
// when `bring` (rounded from fp32, or copied from bf16).
static const zt_bf16 *piece(const job *j, const operand *x, int copy, int r0, int c0, int rows,
                            int cols, zt_bf16 *buf, int *ld, int bring) {
    size_t off = zt_op_at(x->trans, r0, c0, x->ld);
    if (!copy) {
        *ld = x->ld;
        return (const zt_bf16 *)x->p + off;
    }
    int srows = x->trans ? cols : rows, scols = x->trans ? rows : cols;
    *ld = padded_ld(scols);
    if (bring && x->t == ZT_BF16)
        zt_cuda_copy_matrix(j->b->stream, buf, *ld, (const zt_bf16 *)x->p + off, x->ld, srows,
                            scols, sizeof(zt_bf16));
    else if (bring)
        zt_cuda_bf16_round_matrix(j->b->stream, buf, *ld, (const float *)x->p + off, x->ld,
                                  srows, scols);
    return buf;
}

// The call of K chunk [k0, k0 + kk) of the tile at (i0, j0), (m, n); its pieces brought into
// the scratch when `bring`.
static lt_call chunk_call(const job *j, int i0, int j0, int m, int n, int k0, int kk, int bring) {
    lt_call c = {m, n, kk, NULL, NULL, 0, 0, k0 ? 1.0f : j->beta, NULL, j->ct, j->ldc};
    c.A = piece(j, &j->a, j->s.copy_a, i0, k0, m, kk, j->pa, &c.lda, bring);
    c.B = piece(j, &j->bm, j->s.copy_b, k0, j0, kk, n, j->pb, &c.ldb, bring);
    if (j->s.c32) {
        c.C = j->c32, c.ct = ZT_F32, c.ldc = padded_ld(n);
    } else {
        c.C = (char *)j->C + ((size_t)i0 * j->ldc + j0) * zt_dtype_size(j->ct);
    }
    return c;
}

// The tile's K chunks' sizes: kt each, the last shorter.
static int chunk_len(const job *j, int k0) { return j->K - k0 < j->t.kt ? j->K - k0 : j->t.kt; }

// Whether a matrix read or written where it lies starts and has rows at 16 bytes, what
// cuBLASLt's tensor-core kernels load (its heuristic may offer slower ones, or none).
static int rows_aligned(const void *p, int ld, size_t elem) {
    return (uintptr_t)p % 16 == 0 && (size_t)ld * elem % 16 == 0;
}

// Whether every call of the tile reads and writes 16-byte rows and cuBLASLt has an
// algorithm for it (asked before any runs, so a tile takes the padded form whole).
static int tile_runs_as_is(const job *j, int i0, int j0, int m, int n) {
    for (int k0 = 0, kk; k0 < j->K; k0 += kk) {
        kk = chunk_len(j, k0);
        lt_call c = chunk_call(j, i0, j0, m, n, k0, kk, 0);
        if (!rows_aligned(c.A, c.lda, sizeof(zt_bf16)) ||
            !rows_aligned(c.B, c.ldb, sizeof(zt_bf16)) ||
            !rows_aligned(c.C, c.ldc, zt_dtype_size(c.ct)) || !call_plan(j, &c)->found)
            return 0;
    }
    return 1;
}

// C's tile in fp32 scratch (ld padded) before the chunks: C widened or copied for beta, or 0.
static void c_tile_in(const job *j, size_t c_off, int m, int n) {
    cudaStream_t st = j->b->stream;
    int ld = padded_ld(n);
    const char *c = (const char *)j->C + c_off * zt_dtype_size(j->ct);
    if (j->beta == 0.0f) // beta 0 never reads C (as BLAS): no NaN from the scratch
        ZT_CHECK_CUDA(cudaMemsetAsync(j->c32, 0, (size_t)m * ld * sizeof(float), st));
    else if (j->ct == ZT_BF16)
        zt_cuda_bf16_widen_matrix(st, j->c32, ld, (const zt_bf16 *)c, j->ldc, m, n);
    else
        zt_cuda_copy_matrix(st, j->c32, ld, c, j->ldc, m, n, sizeof(float));
}

// The fp32 tile back into C: rounded once (bf16) or copied.
static void c_tile_out(const job *j, size_t c_off, int m, int n) {
    cudaStream_t st = j->b->stream;
    int ld = padded_ld(n);
    char *c = (char *)j->C + c_off * zt_dtype_size(j->ct);
    if (j->ct == ZT_BF16)
        zt_cuda_bf16_round_matrix(st, (zt_bf16 *)c, j->ldc, j->c32, ld, m, n);
    else
        zt_cuda_copy_matrix(st, c, j->ldc, j->c32, ld, m, n, sizeof(float));
}

// C[i0.., j0..] (m, n) = alpha op(A)[i0.., :] op(B)[:, j0..] + beta C[i0.., j0..], K in chunks.
static void gemm_tile(const job *j, int i0, int j0, int m, int n) {
    size_t c_off = (size_t)i0 * j->ldc + j0;
    if (j->s.c32) c_tile_in(j, c_off, m, n);
    for (int k0 = 0, kk; k0 < j->K; k0 += kk) {
        kk = chunk_len(j, k0);
        lt_call c = chunk_call(j, i0, j0, m, n, k0, kk, 1);
        lt_run(j, &c);
    }
    if (j->K == 0) // the empty sum: beta C (a bf16 C is in the fp32 tile: see job_of)
        zt_cuda_scale_matrix(j->b->stream, j->s.c32 ? j->c32 : (float *)j->C + c_off,
                             j->s.c32 ? padded_ld(n) : j->ldc, m, n, j->beta);
    if (j->s.c32) c_tile_out(j, c_off, m, n);
}

// The job of form f: what it keeps in scratch, its tiles and chunks (no K chunks where
// nothing is copied) and where the parts lie in `work`, aligned up to 256 bytes.
static job job_of(zt_cuda_bf16 *b, form f, const operand *a, const operand *bm, int M, int N,
                  int K, float alpha, float beta, void *C, zt_dtype ct, int ldc, void *work) {
    int pad = f == FORM_PADDED;
    zt_gemm_scratch s = {pad || (ct == ZT_BF16 && (f == FORM_CONVERT || K == 0)),
                         pad || a->t == ZT_F32, pad || bm->t == ZT_F32, sizeof(zt_bf16),
                         PART_ALIGN, ROW_PAD};
    int k_chunk = s.copy_a || s.copy_b ? ZT_GEMM_MIXED_K_CHUNK : K;
    char *base = (char *)zt_align_up((uintptr_t)work, PART_ALIGN);
    size_t tile_bytes = ZT_CUDA_GEMM_MIXED_WORKSPACE - ZT_CUDA_LT_WORKSPACE - PART_ALIGN;
    job j = {b, *a, *bm, K, alpha, beta, C, ct, ldc, s,
             zt_gemm_plan_tiles(M, N, K, k_chunk, &s, tile_bytes), base, NULL, NULL, NULL};
    ZT_ASSERTF(j.t.kt > 0 || K == 0, "gemm_mixed: the scratch holds no tile");
    char *tiles = base + ZT_CUDA_LT_WORKSPACE;
    j.c32 = (float *)tiles;
    j.pa = (zt_bf16 *)(tiles + zt_gemm_part_c(j.t, &s));
    j.pb = (zt_bf16 *)(tiles + zt_gemm_part_c(j.t, &s) + zt_gemm_part_a(j.t, &s));
    return j;
}

// Every tile of job j; a tile whose operands or C do not lie in 16-byte rows, or that
// cuBLASLt has no algorithm for, as a product of its own in the padded form (`padded`: the
// product's padded job, NULL when j is one).
static void run_tiles(const job *j, const job *padded, int M, int N) {
    for (int i0 = 0; i0 < M; i0 += j->t.mt)
        for (int j0 = 0; j0 < N; j0 += j->t.nt) {
            int m = M - i0 < j->t.mt ? M - i0 : j->t.mt, n = N - j0 < j->t.nt ? N - j0 : j->t.nt;
            if (!padded || tile_runs_as_is(j, i0, j0, m, n)) {
                gemm_tile(j, i0, j0, m, n);
                continue;
            }
            // the tile as a product of its own, padded: its pieces of A, B and C
            const job *p = padded;
            operand a = p->a, bm = p->bm;
            a.p = (const char *)a.p + zt_op_at(a.trans, i0, 0, a.ld) * zt_dtype_size(a.t);
            bm.p = (const char *)bm.p + zt_op_at(bm.trans, 0, j0, bm.ld) * zt_dtype_size(bm.t);
            void *c = (char *)p->C + ((size_t)i0 * p->ldc + j0) * zt_dtype_size(p->ct);
            job t = job_of(p->b, FORM_PADDED, &a, &bm, m, n, p->K, p->alpha, p->beta, c, p->ct,
                           p->ldc, p->lt_ws);
            run_tiles(&t, NULL, m, n);
        }
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
    operand a = {A, at, lda, trans_a}, bm = {B, bt, ldb, trans_b};
    form f = at == ZT_BF16 && bt == ZT_BF16 ? FORM_DIRECT : FORM_CONVERT;
    job j = job_of(b, f, &a, &bm, M, N, K, alpha, beta, C, ct, ldc, work);
    job p = job_of(b, FORM_PADDED, &a, &bm, M, N, K, alpha, beta, C, ct, ldc, work);
    run_tiles(&j, &p, M, N);
}

// ---- gemm_epilogue_bf16's fused form ----

// cuBLASLt's numbers for the epilogue values and attributes set below (cublasLt.h's ABI),
// named here: the headers the CUDA emulation compiles against declare only what gemm_mixed
// sets, and its cuBLASLt answers the epilogue "not supported" (so the unfused ops run there).
// A real toolkit's header must agree.
enum {
    LT_EPILOGUE_BIAS = 4,
    LT_EPILOGUE_DGELU = 192,
    LT_BIAS_POINTER = 8,
    LT_AUX_POINTER = 11,
    LT_AUX_LD = 12,
};
#ifdef CUBLAS_VERSION
_Static_assert(LT_EPILOGUE_BIAS == (int)CUBLASLT_EPILOGUE_BIAS &&
                   LT_EPILOGUE_DGELU == (int)CUBLASLT_EPILOGUE_DGELU &&
                   LT_BIAS_POINTER == (int)CUBLASLT_MATMUL_DESC_BIAS_POINTER &&
                   LT_AUX_POINTER == (int)CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER &&
                   LT_AUX_LD == (int)CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
               "cuBLASLt's epilogue values differ from gemm_lt_cuda.c's");
#endif

static int desc_set(cublasLtMatmulDesc_t op, int attr, const void *v, size_t size) {
    return cublasLtMatmulDescSetAttribute(op, (cublasLtMatmulDescAttributes_t)attr, v, size) ==
           CUBLAS_STATUS_SUCCESS;
}

// The epilogue's input: the bias vector, or GELU's input matrix.
static int set_epilogue_input(cublasLtMatmulDesc_t op, int epilogue, const void *v) {
    return desc_set(op, epilogue == LT_EPILOGUE_BIAS ? LT_BIAS_POINTER : LT_AUX_POINTER, &v,
                    sizeof v);
}

// Sets k's epilogue on op, reading v (the heuristic takes its alignment from the pointer); 0
// where this cuBLASLt refuses an attribute. The bias and GELU's input take D's type, bf16
// (cuBLASLt's default); GELU's input has D's shape, m rows column-major.
static int set_epilogue(cublasLtMatmulDesc_t op, const zt_lt_key *k, const void *v) {
    uint32_t e = (uint32_t)k->epilogue;
    int64_t aux_ld = k->m;
    if (!desc_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e)) return 0;
    if (e == LT_EPILOGUE_DGELU && !desc_set(op, LT_AUX_LD, &aux_ld, sizeof aux_ld)) return 0;
    return set_epilogue_input(op, k->epilogue, v);
}

int zt_cuda_gemm_epilogue(zt_cuda_bf16 *b, int dgelu, int trans_a, int trans_b, int M, int N,
                          int K, const zt_bf16 *A, int lda, const zt_bf16 *B, int ldb,
                          zt_bf16 *C, const zt_bf16 *v, void *work) {
    if (M == 0 || N == 0 || K == 0 || !rows_aligned(A, lda, sizeof *A) ||
        !rows_aligned(B, ldb, sizeof *B) || !rows_aligned(C, N, sizeof *C) ||
        (dgelu && N % 8)) // GELU's input: ld a multiple of 8
        return 0;
    zt_col_major_gemm g = zt_gemm_row_to_col(trans_a, trans_b, M, N, K,
                                             (const float *)(const void *)A, lda,
                                             (const float *)(const void *)B, ldb);
    zt_lt_key k = zt_lt_key_of(&g, N, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, C);
    k.epilogue = dgelu ? LT_EPILOGUE_DGELU : LT_EPILOGUE_BIAS;
    k.align_epilogue = zt_lt_align_class((uintptr_t)v);
    zt_cuda_lt_plan *p = lt_plan(b, &k, v);
    if (!p->found) return 0;
    ZT_ASSERTF(set_epilogue_input(p->op, k.epilogue, v), "cuBLASLt: the epilogue's input");
    const float one = 1.0f, zero = 0.0f;
    void *lt_ws = (void *)zt_align_up((uintptr_t)work, PART_ALIGN);
    ZT_CHECK_CUBLAS(cublasLtMatmul(b->lt, p->op, &one, g.first, p->first, g.second, p->second,
                                   &zero, C, p->c, C, p->c, &p->algo, lt_ws,
                                   ZT_CUDA_LT_WORKSPACE, b->stream));
    return 1;
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
