// Block-wide reductions for the CUDA kernels (device code only). Every thread of the
// block must call them; all receive the result. The combination order is fixed by the
// thread index (a tree over shared memory), so results are deterministic run to run.
#ifndef ZT_BLOCK_REDUCE_CUDA_CUH
#define ZT_BLOCK_REDUCE_CUDA_CUH

#include "launch_math.h"
#include "softmax_math.h"

// Largest block these helpers take (every caller launches at most this many threads).
// Each instantiation holds this many T of static shared memory (4 KiB for a double).
#define ZT_REDUCE_MAX_THREADS 512

template <typename T, typename Op>
static __device__ T zt_block_reduce(T x, Op op) {
    __shared__ T buf[ZT_REDUCE_MAX_THREADS];
    int t = threadIdx.x, n = blockDim.x;
    __syncthreads(); // buf may still be read by a previous call
    buf[t] = x;
    __syncthreads();
    // fold the tail above the largest power of two first, then halve
    int p = 1;
    while (p * 2 <= n) p *= 2;
    if (t + p < n) buf[t] = op(buf[t], buf[t + p]);
    __syncthreads();
    for (int s = p / 2; s > 0; s /= 2) {
        if (t < s) buf[t] = op(buf[t], buf[t + s]);
        __syncthreads();
    }
    T r = buf[0];
    __syncthreads();
    return r;
}

struct zt_op_sum_d {
    __device__ double operator()(double a, double b) const { return a + b; }
};
struct zt_op_sum_f {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct zt_op_max_f {
    __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};

// A row's (max, sum of exp(x - max)) pair, merged across the block with softmax_math.h's
// zt_softmax_merge (the same merge that combines chunks and tp slices).
struct zt_softmax_pair {
    float m, s;
};
struct zt_op_softmax_merge {
    __device__ zt_softmax_pair operator()(zt_softmax_pair a, zt_softmax_pair b) const {
        zt_softmax_merge(&a.m, &a.s, b.m, b.s);
        return a;
    }
};

// Warp-wide combinations in a fixed shuffle-down tree (lane l < off takes lane l + off,
// off = 16, 8, 4, 2, 1), lane 0's result to every lane: the order the host tests replay
// (tests/test_cuda.c, emu_warp_sum and emu_merge_stats). Every lane of the warp calls them.
#define ZT_WARP_ALL 0xffffffffu
static __device__ inline float zt_warp_sum(float x) {
    for (int off = 16; off > 0; off /= 2) x += __shfl_down_sync(ZT_WARP_ALL, x, off);
    return __shfl_sync(ZT_WARP_ALL, x, 0);
}
// A row's (max, sum of exp(x - max)) pairs merged with zt_softmax_merge.
static __device__ inline void zt_warp_merge_softmax(float *m, float *s) {
    for (int off = 16; off > 0; off /= 2) {
        float m2 = __shfl_down_sync(ZT_WARP_ALL, *m, off);
        float s2 = __shfl_down_sync(ZT_WARP_ALL, *s, off);
        zt_softmax_merge(m, s, m2, s2);
    }
    *m = __shfl_sync(ZT_WARP_ALL, *m, 0);
    *s = __shfl_sync(ZT_WARP_ALL, *s, 0);
}

// The contiguous piece [lo, hi) of [0, n) that thread t of nt owns (launch_math.h's
// zt_piece_int).
static __device__ inline void zt_thread_piece(int n, int t, int nt, int *lo, int *hi) {
    zt_piece_int(n, t, nt, lo, hi);
}

#endif
