// LayerNorm on the GPU: a warp per row around layernorm_math.h's lane functions (loads
// coalesced across the warp, sums in a fixed shuffle tree), and dw, db as column sums over
// fixed row chunks (colsum_cuda.cuh). Deterministic run to run; the CPU sums in another
// order, which the GPU test bounds.
#include "block_reduce_cuda.cuh"
#include "colsum_cuda.cuh"
#include "cuda_check.h"
#include "kernels_cuda.h"
#include "layernorm_math.h"

// The warp's row, and its lane; 0 for the extra warps of the last block (whole warps leave).
static __device__ inline int ln_row(int N, int *row, int *lane) {
    *row = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32);
    *lane = threadIdx.x % 32;
    return *row < N;
}

static __global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd,
                                                const float *inp, const float *w, const float *b,
                                                int N, int C) {
    int n, lane;
    if (!ln_row(N, &n, &lane)) return;
    const float *x = inp + (size_t)n * C;
    float m = zt_warp_sum(zt_ln_lane_sum(x, C, lane, 32)) / C;
    float s = zt_ln_rstd(zt_warp_sum(zt_ln_lane_sqdev(x, m, C, lane, 32)), C);
    zt_ln_lane_out(out + (size_t)n * C, x, w, b, m, s, C, lane, 32);
    if (lane == 0) {
        mean[n] = m;
        rstd[n] = s;
    }
}

// The residual add fused in: a and b read once, res written once and read back by the same
// lane (its own columns: no other thread touches them), so the sums are those
// layernorm_forward_kernel computes on res.
static __global__ void residual_layernorm_forward_kernel(float *res, float *out, float *mean,
                                                         float *rstd, const float *a,
                                                         const float *b, const float *w,
                                                         const float *bias, int N, int C) {
    int n, lane;
    if (!ln_row(N, &n, &lane)) return;
    size_t at = (size_t)n * C;
    float *x = res + at;
    float m = zt_warp_sum(zt_ln_lane_add_sum(x, a + at, b + at, C, lane, 32)) / C;
    float s = zt_ln_rstd(zt_warp_sum(zt_ln_lane_sqdev(x, m, C, lane, 32)), C);
    zt_ln_lane_out(out + at, x, w, bias, m, s, C, lane, 32);
    if (lane == 0) {
        mean[n] = m;
        rstd[n] = s;
    }
}

static __global__ void layernorm_backward_dx_kernel(float *dinp, const float *dout,
                                                    const float *inp, const float *w,
                                                    const float *mean, const float *rstd, int N,
                                                    int C) {
    int n, lane;
    if (!ln_row(N, &n, &lane)) return;
    size_t at = (size_t)n * C;
    float g, gx;
    zt_ln_lane_dx_sums(&g, &gx, dout + at, inp + at, w, mean[n], rstd[n], C, lane, 32);
    g = zt_warp_sum(g) / C;
    gx = zt_warp_sum(gx) / C;
    zt_ln_lane_dx(dinp + at, dout + at, inp + at, w, mean[n], rstd[n], g, gx, C, lane, 32);
}

// Row n's terms of column c: dw's dout xhat, db's dout.
struct ln_dwdb_terms {
    const float *dout, *inp, *mean, *rstd;
    int C;
    __device__ void operator()(float s[2], int n, int c) const {
        float d = dout[(size_t)n * C + c];
        s[0] += zt_ln_dw_term(d, inp[(size_t)n * C + c], mean[n], rstd[n]);
        s[1] += d;
    }
};

extern "C" void zt_cuda_layernorm_forward(cudaStream_t st, float *out, float *mean, float *rstd,
                                          const float *inp, const float *w, const float *b,
                                          int N, int C) {
    ZT_ASSERT(N >= 0 && C > 0);
    if (!N) return;
    layernorm_forward_kernel<<<zt_ln_blocks(N), 32 * ZT_LN_WARPS, 0, st>>>(out, mean, rstd, inp,
                                                                           w, b, N, C);
    ZT_CUDA_LAUNCHED(st, "layernorm_forward");
}

extern "C" void zt_cuda_residual_layernorm_forward(cudaStream_t st, float *res, float *out,
                                                   float *mean, float *rstd, const float *a,
                                                   const float *b, const float *w,
                                                   const float *bias, int N, int C) {
    ZT_ASSERT(N >= 0 && C > 0);
    if (!N) return;
    residual_layernorm_forward_kernel<<<zt_ln_blocks(N), 32 * ZT_LN_WARPS, 0, st>>>(
        res, out, mean, rstd, a, b, w, bias, N, C);
    ZT_CUDA_LAUNCHED(st, "residual_layernorm_forward");
}

extern "C" void zt_cuda_layernorm_backward(cudaStream_t st, float *dinp, float *dw, float *db,
                                           const float *dout, const float *inp, const float *w,
                                           const float *mean, const float *rstd, float *work,
                                           int N, int C) {
    ZT_ASSERT(N >= 0 && C > 0);
    if (!N) return;
    layernorm_backward_dx_kernel<<<zt_ln_blocks(N), 32 * ZT_LN_WARPS, 0, st>>>(
        dinp, dout, inp, w, mean, rstd, N, C);
    ZT_CUDA_LAUNCHED(st, "layernorm_backward_dx");
    zt_colsum<2>(st, dw, db, work, ln_dwdb_terms{dout, inp, mean, rstd, C}, N, C,
                 "layernorm_backward_dwdb");
}
