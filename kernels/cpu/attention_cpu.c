// Causal self-attention on BLAS: per (batch, head) S = QK^T/sqrt(hs), a masked row
// softmax, O = PV. The backward recomputes P from the saved log-sum-exp, so memory
// stays O(B*NH*T) instead of O(B*NH*T*T). The row softmax is softmax_math.h's, with the
// vector expf of softmax_cpu.c. The bf16 ops run the same functions on each (batch, head)
// pair's operands widened.
#include <math.h>
#include <omp.h>

#include "kernels.h"

// Two T*T scratch matrices per thread.
size_t zt_attention_workspace(int threads, int T) {
    if (threads <= 0) threads = omp_get_max_threads();
    return (size_t)threads * 2 * T * T;
}

// Causal blocks: rows go in blocks of ZT_ATT_BLOCK, and row block r only needs the
// columns [0, end of block r); the strictly upper blocks of S, P, dP are never computed
// nor read. At T = 256 that is 10 of 16 blocks (37.5% fewer attention flops), at
// T = 1024 136 of 256; at T <= 64 it is one block, as before.
#define ZT_ATT_BLOCK 64

// Row block [i0, i0 + ni) of P (ld T) from its scores in place: P[i, j] =
// exp(S[i, j] - lse[i]) for j <= i, 0 for i < j < i0 + ni.
static void causal_probs(float *P, const float *lse, int T, int i0, int ni) {
    for (int i = i0; i < i0 + ni; i++) {
        float *row = P + (size_t)i * T;
        zt_cpu_row_exp(row, row, lse[i], i + 1);
        for (int j = i + 1; j < i0 + ni; j++) row[j] = 0.0f;
    }
}

// sum_j p[j] * d[j] in ZT_DOT_LANES interleaved partial sums, combined in lane order
// (deterministic): a single float chain waits on each add's latency, up to T per row.
#define ZT_DOT_LANES 16
static float row_dot(const float *p, const float *d, int n) {
    float acc[ZT_DOT_LANES] = {0}, s = 0.0f;
    int body = n / ZT_DOT_LANES * ZT_DOT_LANES;
    for (int j = 0; j < body; j += ZT_DOT_LANES)
#pragma omp simd
        for (int l = 0; l < ZT_DOT_LANES; l++) acc[l] += p[j + l] * d[j + l];
    for (int l = 0; l < ZT_DOT_LANES; l++) s += acc[l];
    for (int j = body; j < n; j++) s += p[j] * d[j];
    return s;
}

// One (batch, head) pair's operands: q, k, v rows ld apart (3C in qkv, hs in a widened
// copy), out and dout rows ld_o apart, dq, dk, dv rows ld_d apart.
typedef struct {
    const float *q, *k, *v;
    int ld;
} att_in;

// Rows [0, T) of one pair: o = softmax(scale q k^T, causal) v, l its rows' log-sum-exp. S: T*T.
static void pair_forward(float *o, int ld_o, float *l, att_in in, float *S, int T, int hs,
                         float scale) {
    for (int i0 = 0; i0 < T; i0 += ZT_ATT_BLOCK) {
        int ni = T - i0 < ZT_ATT_BLOCK ? T - i0 : ZT_ATT_BLOCK, jn = i0 + ni;
        float *Sb = S + (size_t)i0 * T; // rows [i0, jn), columns [0, jn)
        zt_gemm(0, 1, ni, jn, hs, scale, in.q + (size_t)i0 * in.ld, in.ld, in.k, in.ld, 0.0f, Sb,
                T);
        for (int i = i0; i < jn; i++) {
            const float *row = S + (size_t)i * T;
            float m = zt_cpu_row_max(row, i + 1);
            l[i] = m + logf(zt_cpu_row_sumexp(row, i + 1, m));
        }
        causal_probs(S, l, T, i0, ni);
        zt_gemm(0, 0, ni, hs, jn, 1.0f, Sb, T, in.v, in.ld, 0.0f, o + (size_t)i0 * ld_o, ld_o);
    }
}

// One pair's dq, dk, dv (written) from dO (rows ld_o apart); P, dP: T*T each.
static void pair_backward(float *dq, float *dk, float *dv, int ld_d, const float *dO, int ld_o,
                          att_in in, const float *l, float *P, float *dP, int T, int hs,
                          float scale) {
    for (int i0 = 0; i0 < T; i0 += ZT_ATT_BLOCK) {
        int ni = T - i0 < ZT_ATT_BLOCK ? T - i0 : ZT_ATT_BLOCK, jn = i0 + ni;
        float *Pb = P + (size_t)i0 * T, *dPb = dP + (size_t)i0 * T;
        zt_gemm(0, 1, ni, jn, hs, scale, in.q + (size_t)i0 * in.ld, in.ld, in.k, in.ld, 0.0f, Pb,
                T);
        causal_probs(P, l, T, i0, ni);
        zt_gemm(0, 1, ni, jn, hs, 1.0f, dO + (size_t)i0 * ld_o, ld_o, in.v, in.ld, 0.0f, dPb, T);
        // softmax backward: dS = P * (dP - sum_j P dP), in place in dP
        for (int i = i0; i < jn; i++) {
            const float *p = P + (size_t)i * T;
            float *d = dP + (size_t)i * T;
            float dot = row_dot(p, d, i + 1);
#pragma omp simd
            for (int j = 0; j <= i; j++) d[j] = p[j] * (d[j] - dot);
            for (int j = i + 1; j < jn; j++) d[j] = 0.0f;
        }
        // dq rows [i0, jn) = scale * dS[i0:jn, 0:jn] @ k[0:jn]
        zt_gemm(0, 0, ni, hs, jn, scale, dPb, T, in.k, in.ld, 0.0f, dq + (size_t)i0 * ld_d, ld_d);
    }
    // dk, dv rows [j0, j0 + nj) take rows i >= j0 of dS and P (the lower blocks).
    for (int j0 = 0; j0 < T; j0 += ZT_ATT_BLOCK) {
        int nj = T - j0 < ZT_ATT_BLOCK ? T - j0 : ZT_ATT_BLOCK, ni = T - j0;
        size_t at = (size_t)j0 * T + j0;
        zt_gemm(1, 0, nj, hs, ni, scale, dP + at, T, in.q + (size_t)j0 * in.ld, in.ld, 0.0f,
                dk + (size_t)j0 * ld_d, ld_d);
        zt_gemm(1, 0, nj, hs, ni, 1.0f, P + at, T, dO + (size_t)j0 * ld_o, ld_o, 0.0f,
                dv + (size_t)j0 * ld_d, ld_d);
    }
}

// Each thread takes whole (b, h) pairs and calls BLAS on its own small matrices:
// OpenBLAS's OpenMP build runs single-threaded inside a parallel region, so there is
// one thread pool and no oversubscription (docs/machine.md).
void zt_attention_forward(float *out, float *lse, const float *qkv, float *work, int B, int T,
                          int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(dynamic)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *q = qkv + (size_t)b * T * 3 * C + h * hs;
        pair_forward(out + (size_t)b * T * C + h * hs, C, lse + (size_t)bh * T,
                     (att_in){q, q + C, q + 2 * C, 3 * C},
                     work + (size_t)omp_get_thread_num() * 2 * T * T, T, hs, scale);
    }
}

void zt_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                           float *work, int B, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(dynamic)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        float *P = work + (size_t)omp_get_thread_num() * 2 * T * T;
        size_t base = (size_t)b * T * 3 * C + h * hs;
        const float *q = qkv + base;
        float *dq = dqkv + base;
        pair_backward(dq, dq + C, dq + 2 * C, 3 * C, dout + (size_t)b * T * C + h * hs, C,
                      (att_in){q, q + C, q + 2 * C, 3 * C}, lse + (size_t)bh * T, P,
                      P + (size_t)T * T, T, hs, scale);
    }
}

// ---- bf16 operands: each pair's q, k, v (and a bf16 dout) widened (exact) into its own
// slice of `wide`, then the fp32 pair functions above on those values; a bf16 out or dqkv
// is the fp32 result rounded once. ----

// Floats of `wide` per pair: q, k, v, then one T x hs buffer per other bf16 operand.
static int wide_blocks(int bf16_out, int bf16_dout, int bf16_dqkv) {
    return 3 + bf16_out + bf16_dout + 3 * bf16_dqkv;
}

// The pair's q, k, v (rows 3C apart in qkv) widened into w: three (T, hs) blocks.
static att_in widen_pair(float *w, const zt_bf16 *qkv, int T, int C, int hs) {
    size_t th = (size_t)T * hs;
    for (int x = 0; x < 3; x++) zt_bf16_to_fp32_matrix(w + x * th, hs, qkv + x * C, 3 * C, T, hs);
    return (att_in){w, w + th, w + 2 * th, hs};
}

void zt_attention_forward_bf16(void *out, zt_dtype out_dt, float *lse, const zt_bf16 *qkv,
                               float *work, float *wide, int B, int T, int C, int NH) {
    int hs = C / NH, bf = out_dt == ZT_BF16, nw = wide_blocks(bf, 0, 0);
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(dynamic)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        size_t th = (size_t)T * hs, at = (size_t)b * T * C + h * hs;
        float *w = wide + (size_t)bh * nw * th;
        att_in in = widen_pair(w, qkv + (size_t)b * T * 3 * C + h * hs, T, C, hs);
        float *o = bf ? w + 3 * th : (float *)out + at;
        pair_forward(o, bf ? hs : C, lse + (size_t)bh * T, in,
                     work + (size_t)omp_get_thread_num() * 2 * T * T, T, hs, scale);
        if (bf) zt_bf16_from_fp32_matrix((zt_bf16 *)out + at, C, o, hs, T, hs);
    }
}

void zt_attention_backward_bf16(void *dqkv, zt_dtype dqkv_dt, const void *dout,
                                zt_dtype dout_dt, const zt_bf16 *qkv, const float *lse,
                                float *work, float *wide, int B, int T, int C, int NH) {
    int hs = C / NH, bo = dout_dt == ZT_BF16, bd = dqkv_dt == ZT_BF16;
    int nw = wide_blocks(0, bo, bd);
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(dynamic)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        size_t th = (size_t)T * hs, at = (size_t)b * T * C + h * hs;
        size_t base = (size_t)b * T * 3 * C + h * hs;
        float *w = wide + (size_t)bh * nw * th;
        float *P = work + (size_t)omp_get_thread_num() * 2 * T * T;
        att_in in = widen_pair(w, qkv + base, T, C, hs);
        const float *dO = bo ? w + 3 * th : (const float *)dout + at;
        if (bo) zt_bf16_to_fp32_matrix(w + 3 * th, hs, (const zt_bf16 *)dout + at, C, T, hs);
        float *dq = bd ? w + (3 + bo) * th : (float *)dqkv + base;
        int ld_d = bd ? hs : 3 * C;
        size_t step = bd ? th : (size_t)C; // from dq to dk to dv
        pair_backward(dq, dq + step, dq + 2 * step, ld_d, dO, bo ? hs : C, in,
                      lse + (size_t)bh * T, P, P + (size_t)T * T, T, hs, scale);
        for (int x = 0; bd && x < 3; x++)
            zt_bf16_from_fp32_matrix((zt_bf16 *)dqkv + base + x * C, 3 * C, dq + x * th, hs, T,
                                     hs);
    }
}

// Heads in parallel, each on its own (n_q, n_pos) block of work; inside the parallel
// region BLAS runs on the calling thread alone (docs/machine.md). The scale is the scores'
// GEMM alpha, as in the forward.
void zt_attention_decode(float *out, const float *q, const float *k, const float *v, float *work,
                         int n_q, int n_pos, int C, int NH) {
    int hs = C / NH, first = n_pos - n_q;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(static) if ((double)n_q * n_pos * C > 65536)
    for (int h = 0; h < NH; h++) {
        float *S = work + (size_t)h * n_q * n_pos;
        zt_gemm(0, 1, n_q, n_pos, hs, scale, q + h * hs, 3 * C, k + h * hs, C, 0.0f, S, n_pos);
        for (int i = 0; i < n_q; i++) {
            float *s = S + (size_t)i * n_pos;
            int seen = first + i + 1; // keys up to the query's own position
            float m = zt_cpu_row_max(s, seen);
            float lse = m + logf(zt_cpu_row_sumexp(s, seen, m));
            zt_cpu_row_exp(s, s, lse, seen);
            for (int j = seen; j < n_pos; j++) s[j] = 0.0f;
        }
        zt_gemm(0, 0, n_q, hs, n_pos, 1.0f, S, n_pos, v + h * hs, C, 0.0f, out + h * hs, C);
    }
}
