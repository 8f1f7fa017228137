// Column sums over rows in chunks (device code and its host launcher, for the .cu files that
// include it): out0[c] (and out1[c]) += sum over rows n of f(n, c), in two passes over
// launch_math.h's chunks (zt_col_chunks), on `work` (ZT_CUDA_COLSUM_WORK floats of device
// memory, the backend's). Pass 1: a thread per (column, chunk) sums its rows in order; pass 2:
// a warp per column, lane l adding chunks l, l + 32, ... in order and the lanes in
// zt_warp_sum's fixed tree (hundreds of chunks would be a long serial loop for one thread).
// Deterministic, not the CPU's order.
// The outputs are fp32 or bf16 (O): a bf16 one is widened, summed into in fp32 and rounded
// once, as the CPU's bf16 gradients (docs/design.md, "Where fp32 accumulation sits").
#ifndef ZT_COLSUM_CUDA_CUH
#define ZT_COLSUM_CUDA_CUH

#include "block_reduce_cuda.cuh"
#include "cuda_check.h"
#include "elem_io_cuda.cuh"
#include "launch_math.h"

#define ZT_COL_FINISH_WARPS 8 // columns per finishing block of 256 threads

// F: a functor with `void operator()(float s[NOUT], int n, int c) const` adding row n's
// terms of column c to s.
template <int NOUT, typename F>
static __global__ void colsum_partial_kernel(float *work, F f, int N, int c0, int nc,
                                             int chunks) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, lo, hi;
    if (c >= nc) return;
    zt_piece_int(N, blockIdx.y, chunks, &lo, &hi);
    float s[NOUT] = {0.0f};
    for (int n = lo; n < hi; n++) f(s, n, c0 + c);
    for (int j = 0; j < NOUT; j++) work[zt_col_partial_at(j, blockIdx.y, c, chunks, nc)] = s[j];
}

template <int NOUT, typename O>
static __global__ void colsum_finish_kernel(O *out0, O *out1, const float *work, int c0, int nc,
                                            int chunks) {
    int c = blockIdx.x * ZT_COL_FINISH_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (c >= nc) return; // the whole warp: c is the warp's
    O *out[2] = {out0, out1};
    for (int j = 0; j < NOUT; j++) {
        float s = 0.0f;
        for (int k = lane; k < chunks; k += 32) s += work[zt_col_partial_at(j, k, c, chunks, nc)];
        s = zt_warp_sum(s);
        if (lane == 0) zt_store(&out[j][c0 + c], zt_widen(out[j][c0 + c]) + s);
    }
}

template <int NOUT, typename O, typename F>
static void zt_colsum(cudaStream_t st, O *out0, O *out1, float *work, F f, int N, int C,
                      const char *what) {
    for (int c0 = 0; c0 < C; c0 += ZT_COL_TILE) {
        int nc = C - c0 < ZT_COL_TILE ? C - c0 : ZT_COL_TILE, chunks = zt_col_chunks(N, nc);
        dim3 grid(zt_grid_for((size_t)nc, ZT_CUDA_THREADS), chunks);
        colsum_partial_kernel<NOUT><<<grid, ZT_CUDA_THREADS, 0, st>>>(work, f, N, c0, nc,
                                                                      chunks);
        ZT_CUDA_LAUNCHED(st, what);
        colsum_finish_kernel<NOUT, O><<<zt_grid_for((size_t)nc, ZT_COL_FINISH_WARPS),
                                        32 * ZT_COL_FINISH_WARPS, 0, st>>>(out0, out1, work, c0,
                                                                           nc, chunks);
        ZT_CUDA_LAUNCHED(st, what);
    }
}
#endif
