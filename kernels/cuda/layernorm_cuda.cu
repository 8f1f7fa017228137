// LayerNorm on the GPU: a warp per row around layernorm_math.h's element expressions (loads
// coalesced across the warp, sums in a fixed shuffle tree), and dw, db as column sums over
// fixed row chunks (colsum_cuda.cuh). Deterministic run to run; the CPU sums in another
// order, which the GPU test bounds. The kernels are templates over the types they read and
// write (fp32, or bf16 rows, weights, outputs and weight gradients: elem_io_cuda.cuh), so the
// bf16 group's LayerNorms (fp32 or bf16 rows) are these kernels' arithmetic on the widened
// values, in one pass.
#include "block_reduce_cuda.cuh"
#include "colsum_cuda.cuh"
#include "cuda_check.h"
#include "elem_io_cuda.cuh"
#include "kernels_cuda.h"
#include "layernorm_math.h"
#include "residual_bf16_cuda.h"

// The warp's lanes (layernorm_math.h, "the GPU's warp per row"; cuda_layernorm_warp_host
// replays them on the host): lane `lane` takes columns lane, lane + 32, ..., widened as read.
#define LANES 32

// The warp's row, and its lane; 0 for the extra warps of the last block (whole warps leave).
static __device__ inline int ln_row(int N, int *row, int *lane) {
    *row = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32);
    *lane = threadIdx.x % 32;
    return *row < N;
}

template <typename X> static __device__ inline float lane_sum(const X *x, int C, int lane) {
    float s = 0.0f;
    for (int i = lane; i < C; i += LANES) s += zt_widen(x[i]);
    return s;
}

// res = a + b on the lane's columns (b fp32), stored once, and the sum of the values as stored
// (for fp32 r itself; for bf16 r rounded, which the LayerNorm then reads back).
template <typename R>
static __device__ inline float lane_add_sum(R *res, const R *a, const float *b, int C,
                                            int lane) {
    float s = 0.0f;
    for (int i = lane; i < C; i += LANES) {
        float r = zt_as_stored<R>(zt_widen(a[i]) + b[i]);
        zt_store(res + i, r);
        s += r;
    }
    return s;
}

template <typename X>
static __device__ inline float lane_sqdev(const X *x, float m, int C, int lane) {
    float s = 0.0f;
    for (int i = lane; i < C; i += LANES) {
        float d = zt_widen(x[i]) - m;
        s += d * d;
    }
    return s;
}

template <typename O, typename X, typename P>
static __device__ inline void lane_out(O *out, const X *x, const P *w, const P *b, float m,
                                       float s, int C, int lane) {
    for (int i = lane; i < C; i += LANES)
        zt_store(out + i, zt_ln_out(zt_widen(x[i]), m, s, zt_widen(w[i]), zt_widen(b[i])));
}

// The row's mean and rstd from its lanes' sums, its output, and the statistics (lane 0).
template <typename O, typename X, typename P>
static __device__ inline void ln_row_finish(O *out, float *mean, float *rstd, const X *x,
                                            const P *w, const P *b, float lane_total, int n,
                                            int C, int lane) {
    float m = zt_warp_sum(lane_total) / C;
    float s = zt_ln_rstd(zt_warp_sum(lane_sqdev(x, m, C, lane)), C);
    lane_out(out, x, w, b, m, s, C, lane);
    if (lane == 0) {
        mean[n] = m;
        rstd[n] = s;
    }
}

template <typename O, typename X, typename P>
static __global__ void layernorm_forward_kernel(O *out, float *mean, float *rstd, const X *inp,
                                                const P *w, const P *b, int N, int C) {
    int n, lane;
    if (!ln_row(N, &n, &lane)) return;
    size_t at = (size_t)n * C;
    ln_row_finish(out + at, mean, rstd, inp + at, w, b, lane_sum(inp + at, C, lane), n, C, lane);
}

// The residual add fused in: a and b read once, res written once and read back by the same
// lane (its own columns: no other thread touches them), so the sums are those
// layernorm_forward_kernel computes on res.
template <typename O, typename R, typename P>
static __global__ void residual_layernorm_forward_kernel(R *res, O *out, float *mean,
                                                         float *rstd, const R *a, const float *b,
                                                         const P *w, const P *bias, int N,
                                                         int C) {
    int n, lane;
    if (!ln_row(N, &n, &lane)) return;
    size_t at = (size_t)n * C;
    float total = lane_add_sum(res + at, a + at, b + at, C, lane);
    ln_row_finish(out + at, mean, rstd, (const R *)res + at, w, bias, total, n, C, lane);
}

// dinp fp32 or bf16 (D): each element widened, the term added in fp32, rounded once. The
// buffers do not overlap (the op's contract, backend_ops.h), and __restrict__ says so: without
// it the loads of the next elements wait for each store to dinp, and an H200 ran this kernel
// at 6% of its memory bandwidth (400 us at GPT-2 124M B16 T1024; with it `--profile` timed the
// whole op, dx and column sums, at 123 us a call against 502).
template <typename D, typename X, typename P>
static __global__ void layernorm_backward_dx_kernel(D *__restrict__ dinp,
                                                    const float *__restrict__ dout,
                                                    const X *__restrict__ inp,
                                                    const P *__restrict__ w,
                                                    const float *__restrict__ mean,
                                                    const float *__restrict__ rstd, int N,
                                                    int C) {
    int n, lane;
    if (!ln_row(N, &n, &lane)) return;
    size_t at = (size_t)n * C;
    const X *x = inp + at;
    const float *d = dout + at;
    float g = 0.0f, gx = 0.0f, m = mean[n], s = rstd[n];
    for (int i = lane; i < C; i += LANES) { // the lane's parts of sum(g), sum(g xhat), g = dout w
        float gi = d[i] * zt_widen(w[i]);
        g += gi;
        gx += gi * (zt_widen(x[i]) - m) * s;
    }
    g = zt_warp_sum(g) / C;
    gx = zt_warp_sum(gx) / C;
    for (int i = lane; i < C; i += LANES)
        zt_store(dinp + at + i, zt_widen(dinp[at + i]) +
                                    zt_ln_dx(d[i], zt_widen(x[i]), zt_widen(w[i]), m, s, g, gx));
}

// Row n's terms of column c: dw's dout xhat, db's dout.
template <typename X> struct ln_dwdb_terms {
    const float *dout;
    const X *inp;
    const float *mean, *rstd;
    int C;
    __device__ void operator()(float s[2], int n, int c) const {
        float d = dout[(size_t)n * C + c];
        s[0] += zt_ln_dw_term(d, zt_widen(inp[(size_t)n * C + c]), mean[n], rstd[n]);
        s[1] += d;
    }
};

template <typename O, typename X, typename P>
static void ln_forward(cudaStream_t st, O *out, float *mean, float *rstd, const X *inp,
                       const P *w, const P *b, int N, int C, const char *name) {
    ZT_ASSERT(N >= 0 && C > 0);
    if (!N) return;
    layernorm_forward_kernel<<<zt_ln_blocks(N), 32 * ZT_LN_WARPS, 0, st>>>(out, mean, rstd, inp,
                                                                           w, b, N, C);
    ZT_CUDA_LAUNCHED(st, name);
}

template <typename O, typename R, typename P>
static void residual_ln_forward(cudaStream_t st, R *res, O *out, float *mean, float *rstd,
                                const R *a, const float *b, const P *w, const P *bias, int N,
                                int C, const char *name) {
    ZT_ASSERT(N >= 0 && C > 0);
    if (!N) return;
    residual_layernorm_forward_kernel<<<zt_ln_blocks(N), 32 * ZT_LN_WARPS, 0, st>>>(
        res, out, mean, rstd, a, b, w, bias, N, C);
    ZT_CUDA_LAUNCHED(st, name);
}

// dw, db fp32 or bf16 (G): the column sums add into them in fp32, a bf16 one rounded once.
template <typename D, typename G, typename X, typename P>
static void ln_backward(cudaStream_t st, D *dinp, G *dw, G *db, const float *dout,
                        const X *inp, const P *w, const float *mean, const float *rstd,
                        float *work, int N, int C) {
    ZT_ASSERT(N >= 0 && C > 0);
    if (!N) return;
    layernorm_backward_dx_kernel<<<zt_ln_blocks(N), 32 * ZT_LN_WARPS, 0, st>>>(
        dinp, dout, inp, w, mean, rstd, N, C);
    ZT_CUDA_LAUNCHED(st, "layernorm_backward_dx");
    zt_colsum<2>(st, dw, db, work, ln_dwdb_terms<X>{dout, inp, mean, rstd, C}, N, C,
                 "layernorm_backward_dwdb");
}

extern "C" void zt_cuda_layernorm_forward(cudaStream_t st, float *out, float *mean, float *rstd,
                                          const float *inp, const float *w, const float *b,
                                          int N, int C) {
    ln_forward(st, out, mean, rstd, inp, w, b, N, C, "layernorm_forward");
}

extern "C" void zt_cuda_residual_layernorm_forward(cudaStream_t st, float *res, float *out,
                                                   float *mean, float *rstd, const float *a,
                                                   const float *b, const float *w,
                                                   const float *bias, int N, int C) {
    residual_ln_forward(st, res, out, mean, rstd, a, b, w, bias, N, C,
                        "residual_layernorm_forward");
}

extern "C" void zt_cuda_layernorm_backward(cudaStream_t st, float *dinp, float *dw, float *db,
                                           const float *dout, const float *inp, const float *w,
                                           const float *mean, const float *rstd, float *work,
                                           int N, int C) {
    ln_backward(st, dinp, dw, db, dout, inp, w, mean, rstd, work, N, C);
}

// ln_forward with bf16 weights into an out of type out_dt (fp32 or bf16).
template <typename X>
static void ln_forward_bf16w(cudaStream_t st, void *out, zt_dtype out_dt, float *mean,
                             float *rstd, const X *inp, const zt_bf16 *w, const zt_bf16 *b,
                             int N, int C, const char *name) {
    ZT_ASSERT(out_dt == ZT_F32 || out_dt == ZT_BF16);
    if (out_dt == ZT_F32) ln_forward(st, (float *)out, mean, rstd, inp, w, b, N, C, name);
    else ln_forward(st, (zt_bf16 *)out, mean, rstd, inp, w, b, N, C, name);
}

// fp32 rows, bf16 weights (the bf16 group's layernorm_forward_bf16).
extern "C" void zt_cuda_layernorm_forward_bf16(cudaStream_t st, void *out, zt_dtype out_dt,
                                               float *mean, float *rstd, const float *inp,
                                               const zt_bf16 *w, const zt_bf16 *b, int N,
                                               int C) {
    ln_forward_bf16w(st, out, out_dt, mean, rstd, inp, w, b, N, C, "layernorm_forward_bf16");
}

extern "C" void zt_cuda_layernorm_backward_bf16(cudaStream_t st, float *dinp, zt_bf16 *dw,
                                                zt_bf16 *db, const float *dout, const float *inp,
                                                const zt_bf16 *w, const float *mean,
                                                const float *rstd, float *work, int N, int C) {
    ln_backward(st, dinp, dw, db, dout, inp, w, mean, rstd, work, N, C);
}

extern "C" void zt_cuda_layernorm_forward_bf16in(cudaStream_t st, void *out, zt_dtype out_dt,
                                                 float *mean, float *rstd, const zt_bf16 *inp,
                                                 const zt_bf16 *w, const zt_bf16 *b, int N,
                                                 int C) {
    ln_forward_bf16w(st, out, out_dt, mean, rstd, inp, w, b, N, C, "layernorm_forward_bf16in");
}

extern "C" void zt_cuda_residual_layernorm_forward_bf16(cudaStream_t st, zt_bf16 *res,
                                                        void *out, zt_dtype out_dt, float *mean,
                                                        float *rstd, const zt_bf16 *a,
                                                        const float *b, const zt_bf16 *w,
                                                        const zt_bf16 *bias, int N, int C) {
    ZT_ASSERT(out_dt == ZT_F32 || out_dt == ZT_BF16);
    const char *name = "residual_layernorm_forward_bf16";
    if (out_dt == ZT_F32)
        residual_ln_forward(st, res, (float *)out, mean, rstd, a, b, w, bias, N, C, name);
    else
        residual_ln_forward(st, res, (zt_bf16 *)out, mean, rstd, a, b, w, bias, N, C, name);
}

extern "C" void zt_cuda_layernorm_backward_bf16in(cudaStream_t st, void *dinp, zt_dtype dinp_dt,
                                                  zt_bf16 *dw, zt_bf16 *db, const float *dout,
                                                  const zt_bf16 *inp, const zt_bf16 *w,
                                                  const float *mean, const float *rstd,
                                                  float *work, int N, int C) {
    ZT_ASSERT(dinp_dt == ZT_F32 || dinp_dt == ZT_BF16);
    if (dinp_dt == ZT_BF16)
        ln_backward(st, (zt_bf16 *)dinp, dw, db, dout, inp, w, mean, rstd, work, N, C);
    else ln_backward(st, (float *)dinp, dw, db, dout, inp, w, mean, rstd, work, N, C);
}
