// Checks for CUDA, cuBLAS and kernel launches: always-on, fatal with file and line
// (common.h's zt_fatal, which ends every rank). C and CUDA.
#ifndef ZT_CUDA_CHECK_H
#define ZT_CUDA_CHECK_H

#include <cuda_runtime_api.h>
// the C library first, outside extern "C" (C++ wraps these headers with overloads)
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "common.h"
#ifdef __cplusplus
}
#endif
#include "launch_math.h" // ZT_CUDA_THREADS, ZT_CUDA_GRID and the kernels' other geometry

#define ZT_CHECK_CUDA(call)                                                              \
    do {                                                                                 \
        cudaError_t zt_cu_e_ = (call);                                                   \
        if (zt_cu_e_ != cudaSuccess)                                                     \
            zt_fatal(__FILE__, __LINE__, "CUDA error %s (%s) in %s",                     \
                     cudaGetErrorName(zt_cu_e_), cudaGetErrorString(zt_cu_e_), #call);    \
    } while (0)

// cuBLAS and cuBLASLt calls (both return a cublasStatus_t), in C files that include
// cublas_v2.h or cublasLt.h.
#define ZT_CHECK_CUBLAS(call)                                                             \
    do {                                                                                  \
        cublasStatus_t zt_cb_s_ = (call);                                                 \
        if (zt_cb_s_ != CUBLAS_STATUS_SUCCESS)                                            \
            zt_fatal(__FILE__, __LINE__, "cuBLAS error %s (%s) in %s",                    \
                     cublasGetStatusName(zt_cb_s_), cublasGetStatusString(zt_cb_s_), #call); \
    } while (0)

// After every kernel launch: a bad launch (configuration, too much shared memory) shows
// here at once; an error while the kernel runs shows at the next sync (backend.h's
// sync, every step boundary), or right here in a ZT_CUDA_DEBUG build, which waits for
// each kernel so the failing one is named.
#ifdef ZT_CUDA_DEBUG
#define ZT_CUDA_LAUNCHED(st, name)                                                       \
    do {                                                                                 \
        ZT_CHECK_CUDA(cudaGetLastError());                                               \
        cudaError_t zt_cu_e_ = cudaStreamSynchronize(st);                                \
        if (zt_cu_e_ != cudaSuccess)                                                     \
            zt_fatal(__FILE__, __LINE__, "CUDA error %s (%s) in kernel %s",              \
                     cudaGetErrorName(zt_cu_e_), cudaGetErrorString(zt_cu_e_), name);     \
    } while (0)
#else
#define ZT_CUDA_LAUNCHED(st, name) ZT_CHECK_CUDA(cudaGetLastError())
#endif

#endif
