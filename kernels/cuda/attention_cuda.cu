// Causal self-attention on the GPU, forward and backward, keeping only the log-sum-exp
// of each score row (as attention_cpu.c): no (B, NH, T, T) buffer exists; the backward
// recomputes the probabilities. One block per (batch, head, row) holds that row's
// scores in shared memory (T floats), so memory is O(B*NH*T) on top of the inputs.
// The row's softmax is softmax_math.h's: each thread takes zt_row_max and zt_row_sumexp
// of its piece of the row, and zt_softmax_merge combines the pieces.
//
// The first, simple version: every block re-reads k and v rows from L2 and leaves tensor
// cores idle. Training runs attention_gemm_cuda.cu's query blocks through cuBLAS; these
// forward and backward kernels run under --cuda-attention rows (backend_cuda.c), kept to
// compare the two on a GPU. The decode kernel below is generation's.
#include "block_reduce_cuda.cuh"
#include "cuda_check.h"
#include "kernels_cuda.h"
#include "softmax_math.h"

#define ATT_THREADS 128
static_assert(ATT_THREADS <= ZT_REDUCE_MAX_THREADS, "zt_block_reduce's buffer");
// The index arithmetic (which row a block takes, where q, k, v of a head sit, the shared
// memory each kernel asks for) is launch_math.h's, checked on the host.

static __device__ inline float dot(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

// qkv (B, T, 3C): q, k, v of head h of row (b, t) at zt_qkv_at(b, t, 0 | 1 | 2, h, ...); the
// macros take the kernel's own h, T, C and hs.
#define Q_AT(p, b, t) ((p) + zt_qkv_at(b, t, 0, h, T, C, hs))
#define K_AT(p, b, t) ((p) + zt_qkv_at(b, t, 1, h, T, C, hs))
#define V_AT(p, b, t) ((p) + zt_qkv_at(b, t, 2, h, T, C, hs))

// Block (b, h, i): out row i of head h; its lse.
static __global__ void attention_forward_kernel(float *out, float *lse, const float *qkv, int T,
                                                int C, int NH, float scale) {
    extern __shared__ float sh[];
    zt_att_row r = zt_att_row_of(blockIdx.x, T, NH);
    int hs = C / NH, b = r.b, h = r.h, i = r.i;
    float *s = sh, *qs = sh + T; // s: (i + 1) scores, then probabilities; qs: (hs)
    for (int d = threadIdx.x; d < hs; d += blockDim.x) qs[d] = Q_AT(qkv, b, i)[d];
    __syncthreads();
    for (int j = threadIdx.x; j <= i; j += blockDim.x)
        s[j] = dot(qs, K_AT(qkv, b, j), hs); // unscaled q.k
    __syncthreads();
    int lo, hi;
    zt_thread_piece(i + 1, threadIdx.x, blockDim.x, &lo, &hi);
    // scale > 0, so scale * max(x) is max(scale * x) exactly
    zt_softmax_pair pr;
    pr.m = scale * zt_row_max(s + lo, hi - lo);
    pr.s = hi > lo ? zt_row_sumexp(s + lo, hi - lo, scale, pr.m) : 0.0f;
    pr = zt_block_reduce(pr, zt_op_softmax_merge());
    float l = pr.m + logf(pr.s);
    if (threadIdx.x == 0) lse[zt_lse_at(b, h, i, T, NH)] = l;
    for (int j = threadIdx.x; j <= i; j += blockDim.x) s[j] = expf(scale * s[j] - l);
    __syncthreads();
    float *o = out + zt_btc_at(b, i, h, T, C, hs);
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j <= i; j++) acc += s[j] * V_AT(qkv, b, j)[d];
        o[d] = acc;
    }
}

// The backward in three kernels, with dS = P * (dP - D), dP = dO v^T, D_i = sum_j P_ij
// dP_ij:
//   rows:    D_i, parked in dq's first element of row i (dq is written last);
//   columns: dk_j = scale * sum_{i>=j} dS_ij q_i, dv_j = sum_{i>=j} P_ij dO_i;
//   rows:    dq_i = scale * sum_{j<=i} dS_ij k_j (reading D_i back first).
// Parking D in dqkv keeps the backward free of workspace beyond shared memory.

// p = P_ij and dp = dP_ij, recomputed from q_i, k_j, v_j, dO_i and lse_i.
static __device__ inline void probs_at(float *p, float *dp, const float *qi, const float *kj,
                                       const float *vj, const float *doi, float lse_i, int hs,
                                       float scale) {
    *p = expf(scale * dot(qi, kj, hs) - lse_i);
    *dp = dot(doi, vj, hs);
}

static __global__ void attention_backward_rowsum_kernel(float *dqkv, const float *dout,
                                                        const float *qkv, const float *lse,
                                                        int T, int C, int NH, float scale) {
    extern __shared__ float sh[];
    zt_att_row r = zt_att_row_of(blockIdx.x, T, NH);
    int hs = C / NH, b = r.b, h = r.h, i = r.i;
    float *qs = sh, *dos = sh + hs;
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        qs[d] = Q_AT(qkv, b, i)[d];
        dos[d] = dout[zt_btc_at(b, i, h, T, C, hs) + d];
    }
    __syncthreads();
    float l = lse[zt_lse_at(b, h, i, T, NH)], acc = 0.0f;
    for (int j = threadIdx.x; j <= i; j += blockDim.x) {
        float p, dp;
        probs_at(&p, &dp, qs, K_AT(qkv, b, j), V_AT(qkv, b, j), dos, l, hs, scale);
        acc += p * dp;
    }
    acc = zt_block_reduce(acc, zt_op_sum_f());
    if (threadIdx.x == 0) *Q_AT(dqkv, b, i) = acc; // parked in dq's first element of row i
}

static __global__ void attention_backward_kv_kernel(float *dqkv, const float *dout,
                                                    const float *qkv, const float *lse, int T,
                                                    int C, int NH, float scale) {
    extern __shared__ float sh[];
    zt_att_row rj = zt_att_row_of(blockIdx.x, T, NH);
    int hs = C / NH, b = rj.b, h = rj.h, j = rj.i;
    int ni = T - j; // rows i = j .. T-1
    float *ks = sh, *vs = sh + hs, *P = sh + 2 * hs, *dS = P + ni;
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        ks[d] = K_AT(qkv, b, j)[d];
        vs[d] = V_AT(qkv, b, j)[d];
    }
    __syncthreads();
    for (int r = threadIdx.x; r < ni; r += blockDim.x) {
        int i = j + r;
        const float *qi = Q_AT(qkv, b, i);
        const float *doi = dout + zt_btc_at(b, i, h, T, C, hs);
        float D = *Q_AT(dqkv, b, i);
        float p, dp;
        probs_at(&p, &dp, qi, ks, vs, doi, lse[zt_lse_at(b, h, i, T, NH)], hs, scale);
        P[r] = p;
        dS[r] = p * (dp - D);
    }
    __syncthreads();
    float *dk = K_AT(dqkv, b, j), *dv = V_AT(dqkv, b, j);
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        float ak = 0.0f, av = 0.0f;
        for (int r = 0; r < ni; r++) {
            int i = j + r;
            ak += dS[r] * Q_AT(qkv, b, i)[d];
            av += P[r] * dout[zt_btc_at(b, i, h, T, C, hs) + d];
        }
        dk[d] = scale * ak;
        dv[d] = av;
    }
}

static __global__ void attention_backward_q_kernel(float *dqkv, const float *dout,
                                                   const float *qkv, const float *lse, int T,
                                                   int C, int NH, float scale) {
    extern __shared__ float sh[];
    zt_att_row r = zt_att_row_of(blockIdx.x, T, NH);
    int hs = C / NH, b = r.b, h = r.h, i = r.i;
    float *qs = sh, *dos = sh + hs, *dS = sh + 2 * hs;
    float *dq = Q_AT(dqkv, b, i);
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        qs[d] = Q_AT(qkv, b, i)[d];
        dos[d] = dout[zt_btc_at(b, i, h, T, C, hs) + d];
    }
    float D = dq[0]; // parked by the rowsum kernel; read by all before anyone writes dq
    __syncthreads();
    float l = lse[zt_lse_at(b, h, i, T, NH)];
    for (int j = threadIdx.x; j <= i; j += blockDim.x) {
        float p, dp;
        probs_at(&p, &dp, qs, K_AT(qkv, b, j), V_AT(qkv, b, j), dos, l, hs, scale);
        dS[j] = p * (dp - D);
    }
    __syncthreads();
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j <= i; j++) acc += dS[j] * K_AT(qkv, b, j)[d];
        dq[d] = scale * acc;
    }
}

static unsigned attention_grid(int B, int T, int C, int NH, size_t shared) {
    ZT_ASSERT(B > 0 && T > 0 && NH > 0 && C % NH == 0);
    ZT_ASSERTF(shared <= ZT_ATT_SHARED_MAX,
               "CUDA attention: T = %d needs %zu bytes of shared memory per block, more than "
               "the %d this kernel takes (TODO: tile longer rows)",
               T, shared, ZT_ATT_SHARED_MAX);
    size_t blocks = (size_t)B * NH * T;
    ZT_ASSERTF(blocks <= 2147483647u, "CUDA attention: %zu blocks exceed the grid", blocks);
    return (unsigned)blocks;
}

extern "C" void zt_cuda_attention_forward(cudaStream_t st, float *out, float *lse,
                                          const float *qkv, int B, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t shared = zt_att_shared_forward(T, hs);
    unsigned g = attention_grid(B, T, C, NH, shared);
    attention_forward_kernel<<<g, ATT_THREADS, shared, st>>>(out, lse, qkv, T, C, NH, scale);
    ZT_CUDA_LAUNCHED(st, "attention_forward");
}

extern "C" void zt_cuda_attention_backward(cudaStream_t st, float *dqkv, const float *dout,
                                           const float *qkv, const float *lse, int B, int T,
                                           int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t sh_row = zt_att_shared_rowsum(hs), sh_kv = zt_att_shared_kv(T, hs);
    size_t sh_q = zt_att_shared_q(T, hs);
    unsigned g = attention_grid(B, T, C, NH, sh_kv);
    attention_backward_rowsum_kernel<<<g, ATT_THREADS, sh_row, st>>>(dqkv, dout, qkv, lse, T, C,
                                                                     NH, scale);
    ZT_CUDA_LAUNCHED(st, "attention_backward_rowsum");
    attention_backward_kv_kernel<<<g, ATT_THREADS, sh_kv, st>>>(dqkv, dout, qkv, lse, T, C, NH,
                                                                scale);
    ZT_CUDA_LAUNCHED(st, "attention_backward_kv");
    attention_backward_q_kernel<<<g, ATT_THREADS, sh_q, st>>>(dqkv, dout, qkv, lse, T, C, NH,
                                                              scale);
    ZT_CUDA_LAUNCHED(st, "attention_backward_q");
}

// Generation: block h takes head h of one query against n_pos cached rows. The scores go
// to `work` (NH * n_pos floats of device memory, the op's contract) rather than shared
// memory, so any n_ctx fits; the softmax is the forward kernel's.
static __global__ void attention_decode_kernel(float *out, const float *q, const float *k,
                                               const float *v, float *work, int n_pos, int C,
                                               int NH, float scale) {
    int hs = C / NH, h = blockIdx.x;
    float *s = work + (size_t)h * n_pos;
    const float *qh = q + h * hs;
    for (int j = threadIdx.x; j < n_pos; j += blockDim.x)
        s[j] = dot(qh, k + (size_t)j * C + h * hs, hs); // unscaled q.k
    __syncthreads();
    int lo, hi;
    zt_thread_piece(n_pos, threadIdx.x, blockDim.x, &lo, &hi);
    zt_softmax_pair pr;
    pr.m = scale * zt_row_max(s + lo, hi - lo);
    pr.s = hi > lo ? zt_row_sumexp(s + lo, hi - lo, scale, pr.m) : 0.0f;
    pr = zt_block_reduce(pr, zt_op_softmax_merge());
    float l = pr.m + logf(pr.s);
    for (int j = threadIdx.x; j < n_pos; j += blockDim.x) s[j] = expf(scale * s[j] - l);
    __syncthreads();
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < n_pos; j++) acc += s[j] * v[(size_t)j * C + h * hs + d];
        out[h * hs + d] = acc;
    }
}

extern "C" void zt_cuda_attention_decode(cudaStream_t st, float *out, const float *q,
                                         const float *k, const float *v, float *work, int n_pos,
                                         int C, int NH) {
    ZT_ASSERT(n_pos > 0 && NH > 0 && C % NH == 0);
    float scale = 1.0f / sqrtf((float)(C / NH));
    attention_decode_kernel<<<NH, ATT_THREADS, 0, st>>>(out, q, k, v, work, n_pos, C, NH, scale);
    ZT_CUDA_LAUNCHED(st, "attention_decode");
}
