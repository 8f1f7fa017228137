// The optimizer and grad-norm kernels on the GPU: AdamW (adamw_math.h), 8-bit AdamW
// (quant8_math.h: the CPU's blocks, maps and rounding), and the double-precision sums. Each
// is a template over the type of the values it reads (fp32, or the bf16 group's bf16
// gradients: elem_io_cuda.cuh widens them as read), so the bf16 ops are the fp32 kernels'
// arithmetic on the widened values in one pass; the bf16 AdamWs also store p = the master
// rounded, in the same kernel.
#include "block_reduce_cuda.cuh"
#include "cuda_check.h" // first: it declares the C helpers extern "C"
#include "bf16_cuda.h"
#include "elem_io_cuda.cuh"
#include "kernels_cuda.h"

#define REDUCE_THREADS 512
static_assert(REDUCE_THREADS <= ZT_REDUCE_MAX_THREADS, "zt_block_reduce's buffer");

// Block b sums its contiguous range of x; work[2 + 2b], work[3 + 2b] get the partials.
template <typename X>
static __global__ void reduce_partial_kernel(double *work, const X *x, size_t n, int mode) {
    size_t lo, hi;
    zt_piece(n, blockIdx.x, gridDim.x, &lo, &hi);
    double s = 0.0, bad = 0.0;
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        double v = zt_widen(x[i]);
        if (mode == 0) s += v;
        else if (isfinite(v)) s += v * v;
        else bad += 1.0;
    }
    s = zt_block_reduce(s, zt_op_sum_d());
    bad = zt_block_reduce(bad, zt_op_sum_d());
    if (threadIdx.x == 0) {
        work[2 + 2 * blockIdx.x] = s;
        work[3 + 2 * blockIdx.x] = bad;
    }
}

static __global__ void reduce_final_kernel(double *work, int nblocks) {
    if (threadIdx.x != 0) return;
    double s = 0.0, bad = 0.0;
    for (int b = 0; b < nblocks; b++) {
        s += work[2 + 2 * b];
        bad += work[3 + 2 * b];
    }
    work[0] = s;
    work[1] = bad;
}

template <typename X>
static void reduce(cudaStream_t st, double *work, const X *x, size_t n, int mode) {
    ZT_ASSERT(mode == 0 || mode == 1);
    unsigned nb = zt_reduce_blocks(n, ZT_CUDA_REDUCE_BLOCKS, REDUCE_THREADS);
    reduce_partial_kernel<<<nb, REDUCE_THREADS, 0, st>>>(work, x, n, mode);
    ZT_CUDA_LAUNCHED(st, "reduce_partial");
    reduce_final_kernel<<<1, 32, 0, st>>>(work, (int)nb);
    ZT_CUDA_LAUNCHED(st, "reduce_final");
}

extern "C" void zt_cuda_reduce(cudaStream_t st, double *work, const float *x, size_t n,
                               int mode) {
    reduce(st, work, x, n, mode);
}

extern "C" void zt_cuda_reduce_bf16(cudaStream_t st, double *work, const zt_bf16 *x, size_t n,
                                    int mode) {
    reduce(st, work, x, n, mode);
}

static __global__ void accumulate_kernel(double *acc, const double *x) { *acc += *x; }

extern "C" void zt_cuda_accumulate(cudaStream_t st, double *acc, const double *x) {
    accumulate_kernel<<<1, 1, 0, st>>>(acc, x);
    ZT_CUDA_LAUNCHED(st, "accumulate");
}

// p16: NULL (fp32), or the bf16 weights, set to p rounded once p is updated.
template <typename G>
static __global__ void adamw_kernel(float *p, zt_bf16 *p16, float *m, float *v, const G *g,
                                    size_t n, float wd, zt_adamw_hparams h) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        zt_adamw_update(&p[i], &m[i], &v[i], zt_widen(g[i]), wd, &h);
        if (p16) p16[i] = zt_bf16_from_fp32(p[i]);
    }
}

template <typename G>
static void adamw(cudaStream_t st, float *p, zt_bf16 *p16, float *m, float *v, const G *g,
                  size_t n, float wd, zt_adamw_hparams h, const char *name) {
    if (!n) return;
    unsigned grid = zt_grid_stride(n, ZT_CUDA_THREADS);
    adamw_kernel<<<grid, ZT_CUDA_THREADS, 0, st>>>(p, p16, m, v, g, n, wd, h);
    ZT_CUDA_LAUNCHED(st, name);
}

extern "C" void zt_cuda_adamw(cudaStream_t st, float *p, float *m, float *v, const float *g,
                              size_t n, float wd, zt_adamw_hparams h) {
    adamw(st, p, (zt_bf16 *)NULL, m, v, g, n, wd, h, "adamw");
}

extern "C" void zt_cuda_adamw_bf16(cudaStream_t st, float *master, zt_bf16 *p, float *m,
                                   float *v, const zt_bf16 *g, size_t n, float wd,
                                   zt_adamw_hparams h) {
    adamw(st, master, p, m, v, g, n, wd, h, "adamw_bf16");
}

// One thread block per quantization block, as backend_cpu.c's adamw8bit_block: each
// thread dequantizes and updates its values (held in registers), the block takes the
// new absmax (max is exact in any order), then each thread requantizes its values. The
// maps come by value and are copied to shared memory for the binary searches.
#define Q8_THREADS ZT_Q8_THREADS
static_assert(Q8_THREADS <= ZT_REDUCE_MAX_THREADS, "zt_block_reduce's buffer");
#define Q8_PER_THREAD ZT_Q8_PER_THREAD(ZT_Q8_MAX_BLOCK)

// p16 as adamw_kernel's.
template <typename G>
static __global__ void adamw8bit_kernel(float *p, zt_bf16 *p16, const G *g, uint8_t *qm,
                                        uint8_t *qv, float *absmax_m, float *absmax_v, size_t n,
                                        int block, zt_q8_maps maps, float wd,
                                        zt_adamw_hparams h) {
    __shared__ float map_m[ZT_Q8_CODES], map_v[ZT_Q8_CODES];
    for (int i = threadIdx.x; i < ZT_Q8_CODES; i += blockDim.x) {
        map_m[i] = maps.m[i];
        map_v[i] = maps.v[i];
    }
    __syncthreads();
    size_t j = blockIdx.x, s = j * (size_t)block;
    int len = zt_q8_block_len(n, j, block);
    float am = absmax_m[j], av = absmax_v[j], new_am = 0.0f, new_av = 0.0f;
    float m[Q8_PER_THREAD], v[Q8_PER_THREAD];
#pragma unroll
    for (int k = 0; k < Q8_PER_THREAD; k++) {
        int i = threadIdx.x + k * Q8_THREADS;
        if (i < len) {
            m[k] = zt_q8_dequantize(map_m, qm[s + i], am);
            v[k] = zt_q8_dequantize(map_v, qv[s + i], av);
            zt_adamw_update(&p[s + i], &m[k], &v[k], zt_widen(g[s + i]), wd, &h);
            if (p16) p16[s + i] = zt_bf16_from_fp32(p[s + i]);
            new_am = fmaxf(new_am, fabsf(m[k]));
            new_av = fmaxf(new_av, v[k]);
        }
    }
    // the CPU's `if (a > new_am)` and fmaxf agree except on NaN, which the trainer keeps
    // out (it skips non-finite steps before the optimizer)
    new_am = zt_block_reduce(new_am, zt_op_max_f());
    new_av = zt_block_reduce(new_av, zt_op_max_f());
    if (threadIdx.x == 0) {
        absmax_m[j] = new_am;
        absmax_v[j] = new_av;
    }
#pragma unroll
    for (int k = 0; k < Q8_PER_THREAD; k++) {
        int i = threadIdx.x + k * Q8_THREADS;
        if (i < len) {
            qm[s + i] = zt_q8_quantize(map_m, m[k], new_am);
            qv[s + i] = zt_q8_quantize(map_v, v[k], new_av);
        }
    }
}

template <typename G>
static void adamw8bit(cudaStream_t st, float *p, zt_bf16 *p16, const G *g, uint8_t *qm,
                      uint8_t *qv, float *absmax_m, float *absmax_v, size_t n, int block,
                      const zt_q8_maps *maps, float wd, zt_adamw_hparams h, const char *name) {
    ZT_ASSERT(block > 0 && block <= ZT_Q8_MAX_BLOCK);
    if (!n) return;
    size_t nb = (n + block - 1) / block;
    ZT_ASSERTF(nb <= 2147483647u, "%s: %zu blocks exceed the grid", name, nb);
    adamw8bit_kernel<<<(unsigned)nb, Q8_THREADS, 0, st>>>(p, p16, g, qm, qv, absmax_m, absmax_v,
                                                          n, block, *maps, wd, h);
    ZT_CUDA_LAUNCHED(st, name);
}

extern "C" void zt_cuda_adamw8bit(cudaStream_t st, float *p, const float *g, uint8_t *qm,
                                  uint8_t *qv, float *absmax_m, float *absmax_v, size_t n,
                                  int block, const zt_q8_maps *maps, float wd,
                                  zt_adamw_hparams h) {
    adamw8bit(st, p, (zt_bf16 *)NULL, g, qm, qv, absmax_m, absmax_v, n, block, maps, wd, h,
              "adamw8bit");
}

extern "C" void zt_cuda_adamw8bit_bf16(cudaStream_t st, float *master, zt_bf16 *p,
                                       const zt_bf16 *g, uint8_t *qm, uint8_t *qv,
                                       float *absmax_m, float *absmax_v, size_t n, int block,
                                       const zt_q8_maps *maps, float wd, zt_adamw_hparams h) {
    adamw8bit(st, master, p, g, qm, qv, absmax_m, absmax_v, n, block, maps, wd, h,
              "adamw8bit_bf16");
}
