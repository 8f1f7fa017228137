// Element loads and stores over fp32 and bf16, for kernels templated on the types they read and
// write (crossentropy_cuda.cu, layernorm_cuda.cu, elementwise_cuda.cu's add, colsum_cuda.cuh,
// optim_cuda.cu, bf16_cuda.cu's conversions): a bf16 is widened
// (exact) as it is read and an fp32 result rounded once (bf16_math.h: nearest even, as the
// CPU) as it is stored, so one template computes the fp32 kernel's arithmetic on either type.
#ifndef ZT_ELEM_IO_CUDA_CUH
#define ZT_ELEM_IO_CUDA_CUH

#include "cuda_check.h" // first: it declares the C helpers extern "C"
#include "bf16_math.h"

static __device__ inline float zt_widen(float x) { return x; }
static __device__ inline float zt_widen(zt_bf16 x) { return zt_bf16_to_fp32(x); }
static __device__ inline void zt_store(float *p, float v) { *p = v; }
static __device__ inline void zt_store(zt_bf16 *p, float v) { *p = zt_bf16_from_fp32(v); }

// v as a T holds it: what a later widening load of the stored value returns.
template <typename T> static __device__ inline float zt_as_stored(float v) {
    T t;
    zt_store(&t, v);
    return zt_widen(t);
}
#endif
