// Fused causal attention on bf16 tensor cores (--cuda-attention flash), forward and backward,
// in FlashAttention-2's structure (docs/design.md "bf16"): no score leaves the chip.
//
// A block of 4 warps takes 64 rows (a warp 16) of one (batch, head) pair and walks the other
// side's blocks of 64 in shared memory; the products are m16n8k16 tiles (mma_bf16_cuda.cuh)
// on bf16 operands with fp32 sums, the softmax fp32 on the accumulators.
//   forward (per query block, key blocks 0..diagonal): S = scale Q K^T, the running max m and
//     sum l, O = O e^(m_old - m_new) + P V with P rounded to bf16; out = O / l, lse = m + ln l
//     (natural log, scale included: attention_forward's lse).
//   backward, deterministic (every sum in one thread's registers, in a fixed order):
//     D (a thread per query row): D_i = sum_c dO_ic O_ic from the forward's bf16 output O
//       (FlashAttention-2's; it equals sum_j P_ij dP_ij, dP = dO V^T), into `wide`;
//     kv (per key block, query blocks from the diagonal down): dV = P^T dO, dK = scale dS^T Q
//       with dS = P (dP - D);
//     q (per query block, key blocks 0..diagonal): dQ = scale dS K.
//   P is recomputed from q, k and lse; dO (fp32 or bf16) is rounded to bf16 as loaded, dS and P
//   are rounded to bf16 as the products' A operand.
// Shared memory: two tiles of 64 rows x (hs + 8) bf16 (the 8: rows 16 bytes apart in bank
// terms, so a fragment's 8 rows hit different banks), plus 512 bytes in kv: 36 KiB at hs 128.
// The products' B fragments come from shared memory by ldmatrix (one instruction a fragment).
// Left (bench/RESULTS.md, "One GPU: the fused attention"): the backward runs 7 products where
// FlashAttention-2 runs 5 (dQ recomputes S and dP rather than summing across key blocks, which
// would need atomics or a second pass); tiles are loaded without cp.async double buffering;
// the kv kernel holds dK, dV, K and V fragments in registers (247 a thread at hs 64 on sm_90,
// 2 blocks an SM), and at hs 80 and above ptxas keeps dK, dV in local memory.
#include "cuda_check.h"
#include "kernels_cuda.h"
#include "mma_bf16_cuda.cuh"
#include "vec128_cuda.cuh"

#define FL_ROWS 64 // rows of a block on either side (4 warps x 16)
#define FL_THREADS 128
#define FL_LD(HS) ((HS) + 8) // a tile's row stride in bf16
#define FL_NT (FL_ROWS / 8)  // n-tiles of 8 across a block of 64

// Where a pair's q, k or v (which = 0, 1, 2) of position t sits in qkv, and its o in out.
typedef struct {
    int b, h, T, C, NH, hs;
} fl_pair;

static __device__ inline fl_pair pair_of(int p, int T, int C, int NH) {
    fl_pair r = {p / NH, p % NH, T, C, NH, C / NH};
    return r;
}
static __device__ inline size_t qkv_at(const fl_pair *p, int t, int which) {
    return zt_qkv_at(p->b, t, which, p->h, p->T, p->C, p->hs);
}
static __device__ inline size_t btc_at(const fl_pair *p, int t) {
    return zt_btc_at(p->b, t, p->h, p->T, p->C, p->hs);
}
static __device__ inline size_t row_at(const fl_pair *p, int t) { // lse, D
    return zt_lse_at(p->b, p->h, t, p->T, p->NH);
}

// 8 consecutive values as bf16 pairs: bf16 copied, fp32 rounded (nearest even).
static __device__ inline zt_u128 load8(const zt_bf16 *x) { return *(const zt_u128 *)x; }
static __device__ inline zt_u128 load8(const float *x) {
    zt_u128 r;
    for (int k = 0; k < 4; k++) r.w[k] = zt_mma_pack(x[2 * k], x[2 * k + 1]);
    return r;
}

// Rows r0..r0+63 of a head's slice (hs values at src + row * ld) into a tile; rows at or past
// T as zeros, so the padded rows of a last block give finite scores and zero products.
template <int HS, typename S>
static __device__ void load_tile(zt_bf16 *tile, const S *src, size_t ld, int r0, int T) {
    for (int x = threadIdx.x; x < FL_ROWS * HS / 8; x += FL_THREADS) {
        int r = x / (HS / 8), c = x % (HS / 8) * 8;
        zt_u128 v = {{0, 0, 0, 0}};
        if (r0 + r < T) v = load8(src + (size_t)(r0 + r) * ld + c);
        *(zt_u128 *)(tile + r * FL_LD(HS) + c) = v;
    }
}

static __device__ inline uint32_t word_at(const zt_bf16 *p) { return *(const uint32_t *)p; }

// A fragments of rows row0..row0+15 of a tile, all HS columns.
template <int HS>
static __device__ void a_frags(uint32_t f[HS / 16][4], const zt_bf16 *tile, int row0) {
    int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
    const zt_bf16 *r = tile + (row0 + g) * FL_LD(HS) + 2 * t, *r8 = r + 8 * FL_LD(HS);
    for (int kk = 0; kk < HS / 16; kk++) {
        f[kk][0] = word_at(r + 16 * kk);
        f[kk][1] = word_at(r8 + 16 * kk);
        f[kk][2] = word_at(r + 16 * kk + 8);
        f[kk][3] = word_at(r8 + 16 * kk + 8);
    }
}

// s (16 x 64) = A (16 x HS, fragments f) times the tile's 64 rows transposed. B fragments by
// ldmatrix: lane l < 16 addresses row 8n + l % 8 of the tile at column 16 kk + 8 (l / 8), so
// r[0], r[1] are n-tile n's b[0] (row 8n + g, columns 16kk + 2t, +1) and b[1] (columns + 8).
template <int HS>
static __device__ void product_nt(float s[FL_NT][4], const uint32_t f[HS / 16][4],
                                  const zt_bf16 *tile) {
    int lane = threadIdx.x % 32;
    const zt_bf16 *row = tile + lane % 8 * FL_LD(HS) + 8 * (lane / 8 % 2);
    for (int n = 0; n < FL_NT; n++) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
        for (int kk = 0; kk < HS / 16; kk++) {
            uint32_t b[2];
            zt_ldsm_x2(b, row + 8 * n * FL_LD(HS) + 16 * kk);
            zt_mma_bf16(s[n], f[kk], b);
        }
    }
}

// o (16 x HS) += p (16 x 64, accumulator layout, rounded to bf16 here) times the tile. B
// fragments by ldmatrix .trans: lane l < 16 addresses tile row 16 kk + 8 (l / 8) + l % 8 at
// column 8n, so r[0] is n-tile n's b[0] (rows 16kk + 2t, +1 of column 8n + g) and r[1] its
// b[1] (rows + 8).
template <int HS>
static __device__ void product_nn(float o[HS / 8][4], const float p[FL_NT][4],
                                  const zt_bf16 *tile) {
    int lane = threadIdx.x % 32;
    for (int kk = 0; kk < FL_ROWS / 16; kk++) {
        // an accumulator pair of n-tiles (2kk, 2kk+1) is the A fragment of keys 16kk..16kk+15
        const float *p0 = p[2 * kk], *p1 = p[2 * kk + 1];
        uint32_t a[4] = {zt_mma_pack(p0[0], p0[1]), zt_mma_pack(p0[2], p0[3]),
                         zt_mma_pack(p1[0], p1[1]), zt_mma_pack(p1[2], p1[3])};
        const zt_bf16 *row = tile + (16 * kk + 8 * (lane / 8 % 2) + lane % 8) * FL_LD(HS);
        for (int n = 0; n < HS / 8; n++) {
            uint32_t b[2];
            zt_ldsm_x2_trans(b, row + 8 * n);
            zt_mma_bf16(o[n], a, b);
        }
    }
}

// Accumulator element e of n-tile n: its row (0..15) in the warp's 16 and column (0..63).
static __device__ inline int acc_row(int e) { return threadIdx.x % 32 / 4 + 8 * (e >> 1); }
static __device__ inline int acc_col(int n, int e) {
    return n * 8 + 2 * (threadIdx.x % 4) + (e & 1);
}

// The max and sum over a row's 4 lanes (a group holds a row's columns).
static __device__ inline float group_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(ZT_MMA_FULL, x, 1));
    return fmaxf(x, __shfl_xor_sync(ZT_MMA_FULL, x, 2));
}
static __device__ inline float group_sum(float x) {
    x += __shfl_xor_sync(ZT_MMA_FULL, x, 1);
    return x + __shfl_xor_sync(ZT_MMA_FULL, x, 2);
}

// Two fp32 values at out + off, stored as fp32 or rounded to bf16.
static __device__ inline void store2(void *out, int bf16, size_t off, float x, float y) {
    if (bf16) *(uint32_t *)((zt_bf16 *)out + off) = zt_mma_pack(x, y);
    else {
        ((float *)out)[off] = x;
        ((float *)out)[off + 1] = y;
    }
}

// This block's pair and block of 64 rows, those with the most work launched first: the last
// query blocks (last_first 1), the first key blocks (0).
static __device__ inline int block_pair(int pairs) { return blockIdx.x % pairs; }
static __device__ inline int block_index(int pairs, int nb, int last_first) {
    int k = blockIdx.x / pairs;
    return last_first ? nb - 1 - k : k;
}

// A query-side block (forward, dq): its pair, its block of 64 queries, the warp's first.
typedef struct {
    fl_pair p;
    int qb, i0;
} fl_queries;

static __device__ inline fl_queries queries_of(int B, int T, int C, int NH) {
    int nq = (T + FL_ROWS - 1) / FL_ROWS, qb = block_index(B * NH, nq, 1);
    fl_queries q = {pair_of(block_pair(B * NH), T, C, NH), qb,
                    qb * FL_ROWS + (int)threadIdx.x / 32 * 16};
    return q;
}

// ---- forward ----

// The online softmax of one key block on the warp's scores s (scaled, masked in place to
// probabilities): m, l are rows g and g+8's running max and sum; o rescaled.
template <int HS>
static __device__ void online_softmax(float s[FL_NT][4], float m[2], float l[2],
                                      float o[HS / 8][4]) {
    float mx[2] = {m[0], m[1]}, sum[2] = {0.0f, 0.0f}, alpha[2];
    for (int n = 0; n < FL_NT; n++)
        for (int e = 0; e < 4; e++) mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
    for (int r = 0; r < 2; r++) {
        mx[r] = group_max(mx[r]);
        alpha[r] = expf(m[r] - mx[r]); // 0 at the first block (m = -inf)
        m[r] = mx[r];
    }
    for (int n = 0; n < FL_NT; n++)
        for (int e = 0; e < 4; e++) {
            s[n][e] = expf(s[n][e] - mx[e >> 1]);
            sum[e >> 1] += s[n][e];
        }
    for (int r = 0; r < 2; r++) l[r] = alpha[r] * l[r] + group_sum(sum[r]);
    for (int n = 0; n < HS / 8; n++)
        for (int e = 0; e < 4; e++) o[n][e] *= alpha[e >> 1];
}

// Scores scaled, and -inf where key j0 + column > query i0 + row (the causal mask).
static __device__ inline void scale_mask(float s[FL_NT][4], float scale, int i0, int j0) {
    for (int n = 0; n < FL_NT; n++)
        for (int e = 0; e < 4; e++)
            s[n][e] = j0 + acc_col(n, e) <= i0 + acc_row(e) ? scale * s[n][e] : -INFINITY;
}

template <int HS>
static __global__ void __launch_bounds__(FL_THREADS)
    flash_forward_kernel(void *out, int out_bf16, float *lse, const zt_bf16 *qkv, int B, int T,
                         int C, int NH, float scale) {
    extern __shared__ zt_u128 fl_smem[];
    zt_bf16 *ks = (zt_bf16 *)fl_smem, *vs = ks + FL_ROWS * FL_LD(HS);
    fl_queries r = queries_of(B, T, C, NH);
    uint32_t qf[HS / 16][4];
    load_tile<HS>(ks, qkv + qkv_at(&r.p, 0, 0), 3 * (size_t)C, r.qb * FL_ROWS, T);
    __syncthreads();
    a_frags<HS>(qf, ks, threadIdx.x / 32 * 16);
    float o[HS / 8][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, s[FL_NT][4];
    for (int kb = 0; kb <= r.qb; kb++) {
        __syncthreads(); // the tiles' last readers are done
        load_tile<HS>(ks, qkv + qkv_at(&r.p, 0, 1), 3 * (size_t)C, kb * FL_ROWS, T);
        load_tile<HS>(vs, qkv + qkv_at(&r.p, 0, 2), 3 * (size_t)C, kb * FL_ROWS, T);
        __syncthreads();
        product_nt<HS>(s, qf, ks);
        scale_mask(s, scale, r.i0, kb * FL_ROWS);
        online_softmax<HS>(s, m, l, o);
        product_nn<HS>(o, s, vs);
    }
    for (int e = 0; e < 4; e += 2) {
        int i = r.i0 + acc_row(e);
        if (i >= T) continue;
        float inv = 1.0f / l[e >> 1];
        for (int n = 0; n < HS / 8; n++)
            store2(out, out_bf16, btc_at(&r.p, i) + acc_col(n, e), o[n][e] * inv,
                   o[n][e + 1] * inv);
        if (threadIdx.x % 4 == 0) lse[row_at(&r.p, i)] = m[e >> 1] + logf(l[e >> 1]);
    }
}

// ---- backward ----

// P recomputed from scaled, masked scores (in s) and each row's lse (rows g, g+8).
static __device__ inline void probs(float s[FL_NT][4], const float l[2]) {
    for (int n = 0; n < FL_NT; n++)
        for (int e = 0; e < 4; e++) s[n][e] = expf(s[n][e] - l[e >> 1]);
}

// The warp's rows' lse (or D) at rows i0 + g and i0 + g + 8 (0 past T).
static __device__ inline void row_pair(float r[2], const float *x, const fl_pair *p, int i0) {
    for (int k = 0; k < 2; k++) {
        int i = i0 + threadIdx.x % 32 / 4 + 8 * k;
        r[k] = i < p->T ? x[row_at(p, i)] : 0.0f;
    }
}

// Per query block, the warp's Q and dO fragments loaded through the two tiles.
template <int HS, typename G>
static __device__ void query_frags(uint32_t qf[HS / 16][4], uint32_t df[HS / 16][4],
                                   zt_bf16 *t0, zt_bf16 *t1, const zt_bf16 *qkv, const G *dout,
                                   const fl_pair *p, int qb) {
    load_tile<HS>(t0, qkv + qkv_at(p, 0, 0), 3 * (size_t)p->C, qb * FL_ROWS, p->T);
    load_tile<HS>(t1, dout + btc_at(p, 0), (size_t)p->C, qb * FL_ROWS, p->T);
    __syncthreads();
    a_frags<HS>(qf, t0, threadIdx.x / 32 * 16);
    a_frags<HS>(df, t1, threadIdx.x / 32 * 16);
}

// P and dP of the warp's 16 queries against key block kb (K in ks, V in vs).
template <int HS>
static __device__ void probs_dp(float s[FL_NT][4], float dp[FL_NT][4],
                                const uint32_t qf[HS / 16][4], const uint32_t df[HS / 16][4],
                                const zt_bf16 *ks, const zt_bf16 *vs, const float l[2],
                                float scale, int i0, int kb) {
    product_nt<HS>(s, qf, ks);
    scale_mask(s, scale, i0, kb * FL_ROWS);
    probs(s, l);
    product_nt<HS>(dp, df, vs);
}

template <int HS>
static __device__ void load_kv(zt_bf16 *ks, zt_bf16 *vs, const zt_bf16 *qkv, const fl_pair *p,
                               int kb) {
    __syncthreads(); // the tiles' last readers are done
    load_tile<HS>(ks, qkv + qkv_at(p, 0, 1), 3 * (size_t)p->C, kb * FL_ROWS, p->T);
    load_tile<HS>(vs, qkv + qkv_at(p, 0, 2), 3 * (size_t)p->C, kb * FL_ROWS, p->T);
    __syncthreads();
}

// D_i = sum_c dO_ic O_ic of each query row into D (B, NH, T): dO rounded to bf16 as the
// products take it, O the forward's bf16 output, the sum in fp32 in column order. A thread a
// (batch, position, head), heads fastest; 8 values an access.
template <int HS, typename G>
static __global__ void flash_d_kernel(float *D, const G *dout, const zt_bf16 *out, int B, int T,
                                      int C, int NH) {
    size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x, bt = x / NH;
    if (x >= (size_t)B * T * NH) return;
    fl_pair p = {(int)(bt / T), (int)(x % NH), T, C, NH, HS};
    int t = (int)(bt % T);
    size_t at = btc_at(&p, t);
    float d = 0.0f;
    for (int c = 0; c < HS; c += 8) {
        zt_u128 g = load8(dout + at + c), o = load8(out + at + c);
        for (int k = 0; k < 4; k++)
            d += zt_mma_lo(g.w[k]) * zt_mma_lo(o.w[k]) + zt_mma_hi(g.w[k]) * zt_mma_hi(o.w[k]);
    }
    D[row_at(&p, t)] = d;
}

// dS = P (dP - D) in place of dp, D per row (the kv kernel's transposed tiles take D per
// column instead).
static __device__ inline void ds_rows(float dp[FL_NT][4], const float s[FL_NT][4],
                                      const float d[2]) {
    for (int n = 0; n < FL_NT; n++)
        for (int e = 0; e < 4; e++) dp[n][e] = s[n][e] * (dp[n][e] - d[e >> 1]);
}

// At least 3 blocks an SM (at most 168 registers a thread): at hs 64 ptxas would take 174 and
// fit 2; with 3 (16 bytes spilled) an H200 ran GPT-2 124M's bf16 step 1.5% faster.
template <int HS, typename G>
static __global__ void __launch_bounds__(FL_THREADS, 3)
    flash_dq_kernel(void *dqkv, int dqkv_bf16, const G *dout, const zt_bf16 *qkv,
                    const float *lse, const float *D, int B, int T, int C, int NH, float scale) {
    extern __shared__ zt_u128 fl_smem[];
    zt_bf16 *ks = (zt_bf16 *)fl_smem, *vs = ks + FL_ROWS * FL_LD(HS);
    fl_queries r = queries_of(B, T, C, NH);
    uint32_t qf[HS / 16][4], df[HS / 16][4];
    query_frags<HS>(qf, df, ks, vs, qkv, dout, &r.p, r.qb);
    float l[2], d[2], dq[HS / 8][4] = {}, s[FL_NT][4], dp[FL_NT][4];
    row_pair(l, lse, &r.p, r.i0);
    row_pair(d, D, &r.p, r.i0);
    for (int kb = 0; kb <= r.qb; kb++) {
        load_kv<HS>(ks, vs, qkv, &r.p, kb);
        probs_dp<HS>(s, dp, qf, df, ks, vs, l, scale, r.i0, kb);
        ds_rows(dp, s, d);
        product_nn<HS>(dq, dp, ks);
    }
    for (int e = 0; e < 4; e += 2) {
        int i = r.i0 + acc_row(e);
        if (i >= T) continue;
        for (int n = 0; n < HS / 8; n++)
            store2(dqkv, dqkv_bf16, qkv_at(&r.p, i, 0) + acc_col(n, e), scale * dq[n][e],
                   scale * dq[n][e + 1]);
    }
}

// The kv kernel works on transposed tiles: the warp's 16 keys are the rows, a query block's 64
// queries the columns. P^T from K Q^T and each column's lse; key row j0 + r sees query column
// i0 + c where j0 + r <= i0 + c < T.
static __device__ inline void probs_t(float s[FL_NT][4], const float *lse_c, float scale, int j0,
                                      int i0, int T) {
    for (int n = 0; n < FL_NT; n++)
        for (int e = 0; e < 4; e++) {
            int c = acc_col(n, e), i = i0 + c;
            s[n][e] = j0 + acc_row(e) <= i && i < T ? expf(scale * s[n][e] - lse_c[c]) : 0.0f;
        }
}

template <int HS, typename G>
static __global__ void __launch_bounds__(FL_THREADS)
    flash_dkdv_kernel(void *dqkv, int dqkv_bf16, const G *dout, const zt_bf16 *qkv,
                      const float *lse, const float *D, int B, int T, int C, int NH,
                      float scale) {
    extern __shared__ zt_u128 fl_smem[];
    zt_bf16 *qs = (zt_bf16 *)fl_smem, *ds = qs + FL_ROWS * FL_LD(HS);
    float *lse_c = (float *)(ds + FL_ROWS * FL_LD(HS)), *d_c = lse_c + FL_ROWS;
    int nk = (T + FL_ROWS - 1) / FL_ROWS, kb = block_index(B * NH, nk, 0);
    fl_pair p = pair_of(block_pair(B * NH), T, C, NH);
    int j0 = kb * FL_ROWS + threadIdx.x / 32 * 16; // the warp's first key
    uint32_t kf[HS / 16][4], vf[HS / 16][4];
    load_tile<HS>(qs, qkv + qkv_at(&p, 0, 1), 3 * (size_t)C, kb * FL_ROWS, T);
    load_tile<HS>(ds, qkv + qkv_at(&p, 0, 2), 3 * (size_t)C, kb * FL_ROWS, T);
    __syncthreads();
    a_frags<HS>(kf, qs, threadIdx.x / 32 * 16);
    a_frags<HS>(vf, ds, threadIdx.x / 32 * 16);
    float dk[HS / 8][4] = {}, dv[HS / 8][4] = {}, s[FL_NT][4], dp[FL_NT][4];
    for (int qb = kb; qb < nk; qb++) {
        int i0 = qb * FL_ROWS;
        __syncthreads(); // the tiles' last readers are done
        load_tile<HS>(qs, qkv + qkv_at(&p, 0, 0), 3 * (size_t)C, i0, T);
        load_tile<HS>(ds, dout + btc_at(&p, 0), (size_t)C, i0, T);
        for (int c = threadIdx.x; c < FL_ROWS; c += FL_THREADS) {
            lse_c[c] = i0 + c < T ? lse[row_at(&p, i0 + c)] : 0.0f;
            d_c[c] = i0 + c < T ? D[row_at(&p, i0 + c)] : 0.0f;
        }
        __syncthreads();
        product_nt<HS>(s, kf, qs);
        probs_t(s, lse_c, scale, j0, i0, T);
        product_nn<HS>(dv, s, ds);
        product_nt<HS>(dp, vf, ds);
        for (int n = 0; n < FL_NT; n++)
            for (int e = 0; e < 4; e++) dp[n][e] = s[n][e] * (dp[n][e] - d_c[acc_col(n, e)]);
        product_nn<HS>(dk, dp, qs);
    }
    for (int e = 0; e < 4; e += 2) {
        int j = j0 + acc_row(e);
        if (j >= T) continue;
        for (int n = 0; n < HS / 8; n++) {
            int c = acc_col(n, e);
            store2(dqkv, dqkv_bf16, qkv_at(&p, j, 1) + c, scale * dk[n][e], scale * dk[n][e + 1]);
            store2(dqkv, dqkv_bf16, qkv_at(&p, j, 2) + c, dv[n][e], dv[n][e + 1]);
        }
    }
}

// ---- launchers ----

static size_t tiles_bytes(int hs) { return 2 * (size_t)FL_ROWS * FL_LD(hs) * sizeof(zt_bf16); }

static unsigned blocks_of(int B, int T, int NH) {
    size_t n = (size_t)B * NH * ((T + FL_ROWS - 1) / FL_ROWS);
    ZT_ASSERTF(n <= 2147483647u, "flash attention: %zu blocks exceed the grid", n);
    return (unsigned)n;
}

extern "C" int zt_cuda_attention_flash_fits(int T, int C, int NH) {
    int hs = NH > 0 && C % NH == 0 ? C / NH : 0;
    return T > 0 && hs > 0 && hs % 16 == 0 && hs <= ZT_FLASH_MAX_HS;
}

// The head sizes built (hs a multiple of 16 up to ZT_FLASH_MAX_HS): F<hs>::run(args).
template <template <int> class F, typename... A> static void by_head_size(int hs, A... a) {
    switch (hs) {
    case 16: F<16>::run(a...); break;
    case 32: F<32>::run(a...); break;
    case 48: F<48>::run(a...); break;
    case 64: F<64>::run(a...); break;
    case 80: F<80>::run(a...); break;
    case 96: F<96>::run(a...); break;
    case 112: F<112>::run(a...); break;
    case 128: F<128>::run(a...); break;
    default: ZT_ASSERTF(0, "flash attention: head size %d", hs);
    }
}

// The launches' common arguments.
typedef struct {
    cudaStream_t st;
    unsigned grid;
    int B, T, C, NH;
    float scale;
} fl_launch;

static fl_launch launch_of(cudaStream_t st, int B, int T, int C, int NH) {
    ZT_ASSERT(B > 0 && zt_cuda_attention_flash_fits(T, C, NH));
    fl_launch l = {st, blocks_of(B, T, NH), B, T, C, NH, 1.0f / sqrtf((float)(C / NH))};
    return l;
}

template <int HS> struct forward_launch {
    static void run(fl_launch l, void *out, int out_bf16, float *lse, const zt_bf16 *qkv) {
        flash_forward_kernel<HS><<<l.grid, FL_THREADS, tiles_bytes(HS), l.st>>>(
            out, out_bf16, lse, qkv, l.B, l.T, l.C, l.NH, l.scale);
        ZT_CUDA_LAUNCHED(l.st, "attention_flash_forward");
    }
};

extern "C" void zt_cuda_attention_flash_forward(cudaStream_t st, void *out, int out_bf16,
                                                float *lse, const zt_bf16 *qkv, int B, int T,
                                                int C, int NH) {
    fl_launch l = launch_of(st, B, T, C, NH);
    by_head_size<forward_launch>(C / NH, l, out, out_bf16, lse, qkv);
}

// The three backward kernels in order: D, then dK and dV, then dQ (each reads D).
template <int HS> struct backward_launch {
    template <typename G>
    static void run(fl_launch l, void *dqkv, int dqkv_bf16, const G *dout, const zt_bf16 *out,
                    const zt_bf16 *qkv, const float *lse, float *D) {
        size_t sh = tiles_bytes(HS), sh_kv = sh + 2 * FL_ROWS * sizeof(float);
        size_t rows = (size_t)l.B * l.T * l.NH;
        flash_d_kernel<HS, G><<<zt_grid_for(rows, ZT_CUDA_THREADS), ZT_CUDA_THREADS, 0, l.st>>>(
            D, dout, out, l.B, l.T, l.C, l.NH);
        ZT_CUDA_LAUNCHED(l.st, "attention_flash_d");
        flash_dkdv_kernel<HS, G><<<l.grid, FL_THREADS, sh_kv, l.st>>>(
            dqkv, dqkv_bf16, dout, qkv, lse, D, l.B, l.T, l.C, l.NH, l.scale);
        ZT_CUDA_LAUNCHED(l.st, "attention_flash_dkdv");
        flash_dq_kernel<HS, G><<<l.grid, FL_THREADS, sh, l.st>>>(
            dqkv, dqkv_bf16, dout, qkv, lse, D, l.B, l.T, l.C, l.NH, l.scale);
        ZT_CUDA_LAUNCHED(l.st, "attention_flash_dq");
    }
};

extern "C" void zt_cuda_attention_flash_backward(cudaStream_t st, void *dqkv, int dqkv_bf16,
                                                 const void *dout, int dout_bf16,
                                                 const zt_bf16 *out, const zt_bf16 *qkv,
                                                 const float *lse, float *D, int B, int T, int C,
                                                 int NH) {
    fl_launch l = launch_of(st, B, T, C, NH);
    ZT_ASSERTF(out, "flash attention backward: needs the forward's output (its row sums)");
    if (dout_bf16)
        by_head_size<backward_launch>(C / NH, l, dqkv, dqkv_bf16, (const zt_bf16 *)dout, out,
                                      qkv, lse, D);
    else
        by_head_size<backward_launch>(C / NH, l, dqkv, dqkv_bf16, (const float *)dout, out, qkv,
                                      lse, D);
}
