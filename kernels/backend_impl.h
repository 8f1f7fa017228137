// What each backend implementation gives the registry (kernels/backend.c): its capabilities,
// how to open and close it, and its process-wide set-up. Private to kernels/: everything
// above reaches a backend by name through backend.h.
#ifndef ZT_BACKEND_IMPL_H
#define ZT_BACKEND_IMPL_H

#include "backend.h"

typedef struct {
    zt_backend_caps caps;
    // Fills *be (ops, caps, threads, impl); the registry has checked the options against caps.
    zt_status (*open)(zt_backend *be, const zt_backend_options *opt);
    void (*close)(zt_backend *be); // accepts a zeroed or half-built *be
    int (*start)(char **argv);     // zt_backends_start's part; NULL: nothing to do
    void (*unset_env)(void);       // zt_backends_unset_env's part; NULL: nothing to do
} zt_backend_entry;

// The registry's check of a table, run when a backend opens (fatal there: a bug): NULL when
// every slot backend_ops.h requires is filled (the ZT_OPS_BF16 group only where bf16 is 1),
// else the name of the first empty one.
const char *zt_backend_missing_op(const zt_backend_i *ops, int bf16);

// backend_ops.h's gemm_epilogue_bf16 as the ops that define it, from be's own table
// (backend_unfused.c): the CPU's, and a GPU's where its epilogue does not apply.
void zt_gemm_epilogue_unfused(const zt_backend *be, zt_epilogue ep, int trans_a, int trans_b,
                              int M, int N, int K, const void *A, zt_dtype at, int lda,
                              const zt_bf16 *B, int ldb, void *C, zt_dtype ct,
                              const zt_bf16 *vec, const zt_bf16 *aux, float *wide, void *work);

// kernels/cpu/backend_cpu.c
extern const zt_backend_entry zt_backend_cpu_entry;
// kernels/cuda/backend_cuda.c in `make cuda`, kernels/cuda/backend_nocuda.c otherwise
extern const zt_backend_entry zt_backend_cuda_entry;

#endif
