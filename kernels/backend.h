// The backend seam: where tensors live and what runs on them (docs/design.md, "Backends").
// The model (src/model/gpt2.c), the loss, the trainer, the optimizers and the grad norm reach
// tensor memory only through a zt_backend: its allocator, memset, copies, host views
// (map/unmap) and kernels, the ops of backend_ops.h, which says what each one means. The CPU
// backend (kernels/cpu/backend_cpu.c) is kernels.h's OpenMP + BLAS code and host memory; a
// GPU backend (kernels/cuda/backend_cuda.c) implements the same ops with device memory, CUDA
// kernels and cuBLAS, and is tested against the CPU one. Callers open a backend by name
// (zt_backend_open) and call its ops through the table: be->ops->gemm(be, ...).
#ifndef ZT_BACKEND_H
#define ZT_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "adamw_math.h"
#include "bf16_math.h"
#include "common.h"
#include "dtype.h"
#include "memory.h"
#include "profile.h"

typedef enum { ZT_COPY_H2D = 0, ZT_COPY_D2H, ZT_COPY_D2D } zt_copy_kind;
// The element-wise pass gemm_epilogue_bf16 applies to its product (backend_ops.h).
typedef enum { ZT_EPILOGUE_BIAS = 0, ZT_EPILOGUE_DGELU } zt_epilogue;

typedef struct zt_backend zt_backend;

// ---- the op list's helpers (backend_ops.h has the list and how to read an entry) ----
// Which backends fill an op's slot.
typedef enum {
    ZT_OPS_ALL = 0, // every backend: never NULL
    ZT_OPS_BF16,    // a backend whose caps.bf16 is 1; NULL on one without the bf16 ops
} zt_op_group;
// The phase of an op --profile does not time (host queries, the allocator, sync).
#define ZT_OP_UNTIMED (-1)
// An entry's return code as its C type.
#define ZT_OP_RET(code) ZT_OP_RET_##code
#define ZT_OP_RET_void void
#define ZT_OP_RET_int int
#define ZT_OP_RET_double double
#define ZT_OP_RET_ptr void *
// An entry's (type, name)(type, name)... as the parameters that follow the backend,
// ", type name, type name", and as the arguments that pass them on, ", name, name". Each
// pair's macro ends with the other's name, which takes the next pair; the one left at the
// end is pasted with _END into nothing.
#define ZT_OP_PARAMS(pairs) ZT_OP_LAST_END(ZT_OP_PARAM_A pairs)
#define ZT_OP_ARGS(pairs) ZT_OP_LAST_END(ZT_OP_ARG_A pairs)
#define ZT_OP_PARAM_A(type, name) , type name ZT_OP_PARAM_B
#define ZT_OP_PARAM_B(type, name) , type name ZT_OP_PARAM_A
#define ZT_OP_ARG_A(type, name) , name ZT_OP_ARG_B
#define ZT_OP_ARG_B(type, name) , name ZT_OP_ARG_A
#define ZT_OP_PARAM_A_END
#define ZT_OP_PARAM_B_END
#define ZT_OP_ARG_A_END
#define ZT_OP_ARG_B_END
#define ZT_OP_LAST_END(...) ZT_OP_PASTE_END(__VA_ARGS__)
#define ZT_OP_PASTE_END(...) __VA_ARGS__##_END

// The table a backend fills: its name, its library, and one slot per op of backend_ops.h,
// `returns (*name)(const zt_backend *be, params...)`. The ops' contract is in that list.
typedef struct zt_backend_i {
    const char *name;    // "cpu", "cuda"
    const char *library; // what describe reports on: "blas", "gpu"
#define ZT_OP(ret, name, group, phase, flops, params) \
    ZT_OP_RET(ret) (*name)(const zt_backend *be ZT_OP_PARAMS(params));
#include "backend_ops.h"
#undef ZT_OP
} zt_backend_i;

// The CPU's bf16 GEMM (kernels/cpu/kernels.h): its three paths, or the pick by the CPU.
typedef enum {
    ZT_BF16_GEMM_AUTO = 0,   // oneDNN's matmul where the CPU has bf16 instructions, else the
                             // fallback
    ZT_BF16_GEMM_DNNL,       // oneDNN's gemm API, dnnl_gemm_bf16bf16f32
    ZT_BF16_GEMM_FALLBACK,   // A and B widened to fp32, then the fp32 GEMM
    ZT_BF16_GEMM_DNNL_MATMUL, // oneDNN's matmul primitive, cached per product
} zt_bf16_gemm_path;

// What a backend supports, known without opening it: the option checks and the planner ask.
typedef struct {
    const char *name;  // "cpu", "cuda"
    int built;         // compiled into this binary
    int tf32;          // honours zt_backend_options.tf32
    int bf16_gemm;     // honours zt_backend_options.bf16_gemm
    int multi_rank;    // several ranks' tensors can move through the comm backends
    int device_memory; // tensors live off the host (a GPU's memory)
    int bf16;          // the bf16 mixed-precision ops (backend_ops.h's ZT_OPS_BF16 group)
    int max_tokens;    // tokens a micro-batch may hold (0: any): the CUDA embedding backward's
                       // sort scratch, sized at open (launch_math.h, ZT_EMBED_MAX_TOKENS)
    size_t gemm_mixed_workspace; // bytes of scratch gemm_mixed takes (0: none)
    size_t fixed_workspace; // bytes the backend allocates itself when it opens, counted by the
                            // allocator as workspace and held until it closes (0: none)
    // Floats of scratch the attention kernels need for sequences of T positions when the
    // kernels run on `threads` host threads (0: none).
    size_t (*attention_workspace)(int threads, int T);
} zt_backend_caps;

// What a run asks of a backend when it opens one.
// The CUDA attention kernels: blocked (cuBLAS products over query blocks), rows (one block per
// query row: the first kernels, kept as a reference; no scratch), flash (bf16 models: fused
// kernels on bf16 tensor cores; fp32 models and other head sizes run blocked) or auto (the
// run's default: flash, which an H200 measured 1.34x faster than blocked at GPT-2 124M bf16;
// zeroed options stay blocked).
typedef enum {
    ZT_CUDA_ATTENTION_BLOCKED,
    ZT_CUDA_ATTENTION_ROWS,
    ZT_CUDA_ATTENTION_FLASH,
    ZT_CUDA_ATTENTION_AUTO
} zt_cuda_attention;

typedef struct {
    int device;  // the GPU a device backend runs on (0-based; -1: picked from local_rank by
                 // zt_backend_pick_device); the CPU ignores it
    int local_rank; // this process's rank among those of its machine (-1: unknown)
    int threads; // host threads for the kernels; 0: OpenMP's default (OMP_NUM_THREADS)
    int tf32;    // TF32 tensor cores in fp32 products (a backend whose caps.tf32 is 1)
    zt_bf16_gemm_path bf16_gemm; // the bf16 GEMM's path (a backend whose caps.bf16_gemm is
                                 // 1; others take AUTO only)
    zt_cuda_attention attention; // the CUDA backend's attention kernels; others ignore it
} zt_backend_options;

struct zt_backend {
    const zt_backend_i *ops;
    const zt_backend_caps *caps;
    int threads; // the host threads its kernels run on
    void *impl;  // the backend's own state (CUDA: device, stream, cuBLAS handle)
};

// The names of every backend zerotrain knows, built in or not, NULL-terminated.
extern const char *const zt_backend_names[];

// What backend `name` supports; NULL for a name that is not in zt_backend_names.
const zt_backend_caps *zt_backend_caps_of(const char *name);

// ZT_ERR with one clear message where backend `name` cannot be opened with `opt`: a name that
// is unknown or not built into this binary, an option it does not support. Opens nothing.
zt_status zt_backend_check(const char *name, const zt_backend_options *opt);

// Which GPU a rank opens (pure). want >= 0 (--device N): that one, on every rank of the
// machine. want == -1: local_rank mod count, so a machine's ranks take its GPUs in turn and
// ranks beyond the count share them (the grid then routes those groups' tensors through MPI
// with host staging: NCCL refuses two ranks of one communicator on one GPU); an unknown
// local rank (-1) takes GPU 0. count: the GPUs this process sees, CUDA_VISIBLE_DEVICES
// applied, so indices are the visible ones (a launcher that gives each rank one GPU by that
// variable makes every rank's pick 0, its own). ZT_ERR with the fix for no GPU, a GPU that
// does not exist, want < -1.
zt_status zt_backend_pick_device(int want, int local_rank, int count, int *device);

// Opens backend `name` with `opt` into *be (zt_backend_check first). ZT_ERR with one clear
// message for a name that is unknown or not built into this binary, an option it does not
// support, a GPU that is missing. A backend whose table lacks an op (backend_ops.h) is a bug:
// fatal, naming the op.
// Close it with zt_backend_close after everything allocated through it has been freed.
zt_status zt_backend_open(zt_backend *be, const char *name, const zt_backend_options *opt);
// Releases what open made; accepts a zeroed or half-built *be.
void zt_backend_close(zt_backend *be);

// Floats of scratch the attention kernels of `be` need for sequences of T positions.
size_t zt_backend_attention_workspace(const zt_backend *be, int T);

// Once, first in main(), before MPI_Init and before any kernel: the process-wide set-up of
// the backends built in. The CPU's picks the OpenBLAS kernels and may re-execute the program
// with `argv` (then it does not return: kernels/cpu/blas_core.h). Returns 1 where the kernels
// that will run are below what the machine offers, 0 otherwise.
int zt_backends_start(char **argv);
// Before this process starts other programs that are zerotrain's ranks (`zerotrain launch`
// execs mpirun): takes back the variables zt_backends_start set for this process alone, so
// each rank decides for itself and reports its own choice, not a launcher's as the user's.
void zt_backends_unset_env(void);

// Typed shorthands for the calls host code makes most.
static inline void *zt_be_alloc(const zt_backend *be, zt_mem_category cat, size_t bytes) {
    return be->ops->alloc(be, cat, bytes);
}
static inline void zt_be_free(const zt_backend *be, void *ptr) { be->ops->free(be, ptr); }
static inline void *zt_be_map(const zt_backend *be, void *dev, size_t bytes, int read) {
    return be->ops->map(be, dev, bytes, read);
}
static inline void zt_be_unmap(const zt_backend *be, void *dev, void *host, size_t bytes,
                               int write) {
    be->ops->unmap(be, dev, host, bytes, write);
}

#endif
