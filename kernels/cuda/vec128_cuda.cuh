// 128-bit element-wise maps: each thread moves groups of W elements (8 bf16 or 4 fp32 per
// 16-byte access), a scalar tail after the last whole group, and the scalar map (W = 1) when an
// operand is not 16-byte aligned. Per element the same arithmetic as W = 1, so both paths give
// the same bits (tests/test_cuda.c's cuda_vec128 compares them).
#ifndef ZT_VEC128_CUDA_CUH
#define ZT_VEC128_CUDA_CUH

#include <string.h>

#include "cuda_check.h"

// One 16-byte access (CUDA's int4, which the CPU emulation lacks: an aligned struct of the same
// size loads as one 128-bit instruction).
struct alignas(16) zt_u128 {
    uint32_t w[4];
};

// W elements of T from p into x (p 16-byte aligned when W * sizeof(T) is a multiple of 16: then
// one 128-bit access per 16 bytes, else element by element). The local side moves by memcpy
// (which compiles to register moves) so no value is read through another type (C++'s
// aliasing rule: g++ in the CPU emulation reorders such reads).
template <int W, typename T> static __device__ inline void zt_vload(T *x, const T *p) {
    if ((W * sizeof(T)) % 16 == 0)
        for (int k = 0; k < (int)(W * sizeof(T) / 16); k++) {
            zt_u128 v = reinterpret_cast<const zt_u128 *>(p)[k];
            memcpy((char *)x + 16 * k, &v, 16); // not a cast: x is T's, and stays T's
        }
    else
        for (int k = 0; k < W; k++) x[k] = p[k];
}

template <int W, typename T> static __device__ inline void zt_vstore(T *p, const T *x) {
    if ((W * sizeof(T)) % 16 == 0)
        for (int k = 0; k < (int)(W * sizeof(T) / 16); k++) {
            zt_u128 v;
            memcpy(&v, (const char *)x + 16 * k, 16);
            reinterpret_cast<zt_u128 *>(p)[k] = v;
        }
    else
        for (int k = 0; k < W; k++) p[k] = x[k];
}

// Op::template run<W>(i) maps elements i .. i + W - 1 (i a multiple of W on the grouped path).
template <int W, typename Op> static __global__ void zt_vmap_kernel(Op op, size_t n) {
    size_t groups = n / W, stride = (size_t)gridDim.x * blockDim.x;
    size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (size_t g = t; g < groups; g += stride) op.template run<W>(g * W);
    if (W > 1 && groups * W + t < n) op.template run<1>(groups * W + t); // the tail: < W elements
}

static inline int zt_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

// Runs op over n elements: groups of W when vector_ok (every operand 16-byte aligned, row
// lengths multiples of W), else one element per thread. Grid-stride, so any n fits the grid.
template <int W, typename Op>
static void zt_vmap(cudaStream_t st, Op op, size_t n, int vector_ok, const char *name) {
    if (!n) return;
    if (vector_ok)
        zt_vmap_kernel<W><<<zt_grid_stride(n / W + 1, ZT_CUDA_THREADS), ZT_CUDA_THREADS, 0, st>>>(
            op, n);
    else
        zt_vmap_kernel<1><<<zt_grid_stride(n, ZT_CUDA_THREADS), ZT_CUDA_THREADS, 0, st>>>(op, n);
    ZT_CUDA_LAUNCHED(st, name);
}

#endif
