// The CUDA backend (backend.h's table on one GPU): device memory through cudaMalloc,
// counted by the tagged allocator; one stream; cuBLAS for GEMM; the kernels of
// kernels/*_cuda.cu around the shared math of kernels/*_math.h.
// Built by `make cuda` only (build/zerotrain-cuda, build/zt_tests_cuda). A build without
// CUDA links backend_nocuda.c instead, whose init fails with a message saying so.
#ifndef ZT_BACKEND_CUDA_H
#define ZT_BACKEND_CUDA_H

#include "backend.h"
#include "common.h"

// 1 in a binary built with the CUDA backend (make cuda), 0 otherwise.
int zt_backend_cuda_built(void);

// Opens GPU `device` (0-based): its stream and cuBLAS handle in *be (be->impl owns them).
// ZT_ERR with a clear message when the binary has no CUDA backend, no GPU is present (or
// the driver cannot be reached) or `device` is out of range. On success free it with
// zt_backend_cuda_free after everything allocated through it has been freed.
zt_status zt_backend_cuda_init(zt_backend *be, int device);
// Releases what init made; accepts a zeroed or half-built *be.
void zt_backend_cuda_free(zt_backend *be);

// TF32 tensor-core GEMMs (--tf32): off by default, so fp32 products are exact fp32 as on
// the CPU. No effect on a backend that is not CUDA.
void zt_backend_cuda_set_tf32(zt_backend *be, int on);

// The backend's stream (a cudaStream_t), for the NCCL comm backend (comm_nccl.h), so
// collectives are ordered with the kernels. NULL where there is no CUDA backend.
void *zt_backend_cuda_stream(const zt_backend *be);

#endif
