// Causal self-attention on the GPU through cuBLAS (tensor cores under --tf32), forward and
// backward, in query blocks: per chunk of (batch, head) pairs and block of ZT_ATT_QBLOCK
// query rows, S = scale Q K^T over the causal key prefix, a warp per row turns S into P
// and keeps the row's log-sum-exp, O = P V. The backward walks the blocks from the last
// and recomputes P from the LSE: dP = dO V^T, dS = P (dP - rowsum(P dP)), dV += P^T dO,
// dK += scale dS^T Q, dQ = scale dS K. The last block covers every key, so it writes dK
// and dV (beta 0) and the earlier ones add (beta 1): a fixed order, deterministic. Scores
// live in the caller's workspace (zt_cuda_attention_workspace: O(T), not O(T^2) per
// layer). The layout and offsets are launch_math.h's, the row math attention_math.h's;
// cuda_attention_blocked_host replays both on the host against the CPU attention.
#include <cublas_v2.h>

#include "attention_math.h"
#include "block_reduce_cuda.cuh"
#include "cuda_check.h"
#include "kernels_cuda.h"
#include "launch_math.h"

#define ROW_THREADS 256 // 8 warps, a row each

// The base and kind of each pointer array a chunk's GEMMs take.
typedef struct {
    float *base[ZT_ATT_MAX_ARRAYS];
    zt_att_op kind[ZT_ATT_MAX_ARRAYS];
    int n;
} att_operands;

// arrays[(a nq + qb) ZT_ATT_PAIRS + g] = operand a of pair p0 + g for query block qb. ops is
// indexed at run time, so ptxas gives it 112 bytes of stack (no spills): once per chunk.
static __global__ void att_pointers_kernel(float **arrays, att_operands ops, int p0, int G,
                                           int nq, int T, int C, int NH) {
    int total = ops.n * nq * G;
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < total; x += gridDim.x * blockDim.x) {
        int g = x % G, qb = x / G % nq, a = x / G / nq;
        size_t off = zt_att_operand_at(ops.kind[a], p0 + g, g, qb, T, C, NH);
        arrays[((size_t)a * nq + qb) * ZT_ATT_PAIRS + g] = ops.base[a] + off;
    }
}

// The warp's rows: warp w of the launch takes row r = w % m of pair g = w / m.
static __device__ inline int warp_row(int m, int G, int *g, int *r) {
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    *g = w / m;
    *r = w % m;
    return w < G * m;
}

// Scores of query block [i0, i0 + m) to probabilities in place, the rows' LSE to lse.
static __global__ void att_softmax_kernel(float *S, float *lse, int p0, int G, int i0, int m,
                                          int T, int NH) {
    int g, r, lane = threadIdx.x % 32;
    if (!warp_row(m, G, &g, &r)) return; // whole warps leave together
    int i = i0 + r, p = p0 + g;
    float *row = S + zt_att_score_at(g, r, T);
    float mx, s;
    zt_att_lane_stats(row, i + 1, lane, 32, &mx, &s);
    zt_warp_merge_softmax(&mx, &s);
    float l = mx + logf(s);
    if (lane == 0) lse[zt_lse_at(p / NH, p % NH, i, T, NH)] = l;
    zt_att_lane_probs(row, row, i0 + m, i + 1, l, lane, 32);
}

// The backward's rows: S (scores) to P and dP to dS, in place.
static __global__ void att_softmax_backward_kernel(float *S, float *dP, const float *lse, int p0,
                                                   int G, int i0, int m, int T, int NH) {
    int g, r, lane = threadIdx.x % 32;
    if (!warp_row(m, G, &g, &r)) return;
    int i = i0 + r, p = p0 + g, n = i0 + m;
    size_t at = zt_att_score_at(g, r, T);
    float l = lse[zt_lse_at(p / NH, p % NH, i, T, NH)];
    float D = zt_warp_sum(zt_att_lane_probs_dot(S + at, S + at, dP + at, n, i + 1, l, lane, 32));
    zt_att_lane_ds(dP + at, S + at, dP + at, n, D, lane, 32);
}

// Row-major C_g (M, N) = alpha op(A_g) op(B_g) + beta C_g for the G pairs of the arrays, by
// the transpose identity of zt_gemm_row_to_col (pointers there only pick the order).
static void batched(cublasHandle_t hb, int ta, int tb, int M, int N, int K, float alpha,
                    float *const *A, int lda, float *const *B, int ldb, float beta,
                    float *const *Cm, int ldc, int G) {
    zt_col_major_gemm c = zt_gemm_row_to_col(ta, tb, M, N, K, (const float *)A, lda,
                                             (const float *)B, ldb);
    const float *const *first = (const float *const *)c.first;
    const float *const *second = (const float *const *)c.second;
    ZT_CHECK_CUBLAS(cublasSgemmBatched(
        hb, c.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N, c.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N,
        c.m, c.n, c.k, &alpha, first, c.ld_first, second, c.ld_second, &beta, Cm, ldc, G));
}

typedef struct {
    cublasHandle_t hb;
    cudaStream_t st;
    float **arrays; // the chunk's pointer arrays (in the workspace)
    int p0, G, nq, T, C, NH;
} att_chunk;

static float *const *arr(const att_chunk *c, int a, int qb) {
    return c->arrays + ((size_t)a * c->nq + qb) * ZT_ATT_PAIRS;
}

static void fill_pointers(const att_chunk *c, const att_operands *ops) {
    int total = ops->n * c->nq * c->G;
    att_pointers_kernel<<<zt_grid_stride((size_t)total, ZT_CUDA_THREADS), ZT_CUDA_THREADS, 0,
                          c->st>>>(c->arrays, *ops, c->p0, c->G, c->nq, c->T, c->C, c->NH);
    ZT_CUDA_LAUNCHED(c->st, "attention_pointers");
}

static unsigned row_grid(int G, int m) { return zt_grid_for((size_t)G * m * 32, ROW_THREADS); }

static att_chunk chunk_of(cublasHandle_t hb, cudaStream_t st, float *work, int p0, int pairs,
                          int T, int C, int NH) {
    att_chunk c = {hb, st, (float **)(work + 2 * zt_att_scores_floats(T)), p0,
                   zt_att_chunk_pairs(p0, pairs), zt_att_qblocks(T), T, C, NH};
    return c;
}

static void check_shape(int B, int T, int C, int NH) {
    ZT_ASSERT(B > 0 && T > 0 && NH > 0 && C % NH == 0);
    ZT_ASSERTF((size_t)B * NH <= 2147483647u / 32, "CUDA attention: too many (batch, head) pairs");
}

enum { F_Q, F_K, F_V, F_O, F_S }; // the forward's arrays

extern "C" void zt_cuda_attention_gemm_forward(cublasHandle_t hb, cudaStream_t st, float *out,
                                               float *lse, const float *qkv, float *work, int B,
                                               int T, int C, int NH) {
    check_shape(B, T, C, NH);
    int hs = C / NH, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs), *q = (float *)qkv;
    att_operands ops = {{q, q, q, out, work},
                        {ZT_ATT_OP_Q, ZT_ATT_OP_K, ZT_ATT_OP_V, ZT_ATT_OP_O, ZT_ATT_OP_S}, 5};
    for (int p0 = 0; p0 < B * NH; p0 += ZT_ATT_PAIRS) {
        att_chunk c = chunk_of(hb, st, work, p0, B * NH, T, C, NH);
        fill_pointers(&c, &ops);
        for (int qb = 0; qb < c.nq; qb++) {
            int i0 = qb * ZT_ATT_QBLOCK, m = zt_att_block_rows(qb, T);
            batched(hb, 0, 1, m, i0 + m, hs, scale, arr(&c, F_Q, qb), ld, arr(&c, F_K, qb), ld,
                    0.0f, arr(&c, F_S, qb), T, c.G);
            att_softmax_kernel<<<row_grid(c.G, m), ROW_THREADS, 0, st>>>(work, lse, p0, c.G, i0,
                                                                         m, T, NH);
            ZT_CUDA_LAUNCHED(st, "attention_softmax");
            batched(hb, 0, 0, m, hs, i0 + m, 1.0f, arr(&c, F_S, qb), T, arr(&c, F_V, qb), ld,
                    0.0f, arr(&c, F_O, qb), C, c.G);
        }
    }
}

enum { B_Q, B_K, B_V, B_DQ, B_DK, B_DV, B_DO, B_S, B_DP }; // the backward's arrays

extern "C" void zt_cuda_attention_gemm_backward(cublasHandle_t hb, cudaStream_t st, float *dqkv,
                                                const float *dout, const float *qkv,
                                                const float *lse, float *work, int B, int T,
                                                int C, int NH) {
    check_shape(B, T, C, NH);
    int hs = C / NH, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs), *q = (float *)qkv, *dP = work + zt_att_scores_floats(T);
    att_operands ops = {{q, q, q, dqkv, dqkv, dqkv, (float *)dout, work, dP},
                        {ZT_ATT_OP_Q, ZT_ATT_OP_K, ZT_ATT_OP_V, ZT_ATT_OP_Q, ZT_ATT_OP_K,
                         ZT_ATT_OP_V, ZT_ATT_OP_O, ZT_ATT_OP_S, ZT_ATT_OP_S},
                        9};
    for (int p0 = 0; p0 < B * NH; p0 += ZT_ATT_PAIRS) {
        att_chunk c = chunk_of(hb, st, work, p0, B * NH, T, C, NH);
        fill_pointers(&c, &ops);
        for (int qb = c.nq - 1; qb >= 0; qb--) { // the last block first: it covers all keys
            int i0 = qb * ZT_ATT_QBLOCK, m = zt_att_block_rows(qb, T);
            int n = i0 + m;
            float acc = qb == c.nq - 1 ? 0.0f : 1.0f;
            batched(hb, 0, 1, m, n, hs, scale, arr(&c, B_Q, qb), ld, arr(&c, B_K, qb), ld, 0.0f,
                    arr(&c, B_S, qb), T, c.G);
            batched(hb, 0, 1, m, n, hs, 1.0f, arr(&c, B_DO, qb), C, arr(&c, B_V, qb), ld, 0.0f,
                    arr(&c, B_DP, qb), T, c.G);
            att_softmax_backward_kernel<<<row_grid(c.G, m), ROW_THREADS, 0, st>>>(
                work, dP, lse, p0, c.G, i0, m, T, NH);
            ZT_CUDA_LAUNCHED(st, "attention_softmax_backward");
            batched(hb, 1, 0, n, hs, m, 1.0f, arr(&c, B_S, qb), T, arr(&c, B_DO, qb), C, acc,
                    arr(&c, B_DV, qb), ld, c.G);
            batched(hb, 1, 0, n, hs, m, scale, arr(&c, B_DP, qb), T, arr(&c, B_Q, qb), ld, acc,
                    arr(&c, B_DK, qb), ld, c.G);
            batched(hb, 0, 0, m, hs, n, scale, arr(&c, B_DP, qb), T, arr(&c, B_K, qb), ld, 0.0f,
                    arr(&c, B_DQ, qb), ld, c.G);
        }
    }
}
