// The backend seam: where tensors live and what runs on them (docs/design.md, "Backends").
// The model (src/model/gpt2.c), the loss, the trainer, the optimizers and the grad norm reach
// tensor memory only through a zt_backend: its allocator, memset, copies, host views
// (map/unmap) and kernels. The CPU backend (backend_cpu.c) is kernels.h's OpenMP + BLAS
// code and host memory; a GPU backend implements the same table with device memory,
// CUDA kernels and cuBLAS, and is tested against the CPU one.
//
// Conventions every backend keeps:
// - "Device" pointers are what alloc returned (plus offsets); on the CPU they are host
//   pointers. Host code never dereferences a device pointer: it maps it.
// - Every op takes the backend first; a backend with a stream issues its work there in
//   order. Work may still be running when an op returns, except where a result comes
//   back to the host (map with read, sum, sumsq, copy to the host): those wait for it.
// - Kernel arguments follow kernels.h (outputs first, inputs const, sizes last) and mean
//   exactly what kernels.h says; kernels.h is the CPU backend's implementation.
// - Failure of the backend itself (out of device memory, a launch error) is fatal with a
//   message naming what failed; user input never reaches a backend unchecked.
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

typedef enum { ZT_COPY_H2D = 0, ZT_COPY_D2H, ZT_COPY_D2D } zt_copy_kind;

typedef struct zt_backend zt_backend;

typedef struct zt_backend_i {
    const char *name;    // "cpu", "cuda"
    const char *library; // what describe reports on: "blas", "gpu"

    // ---- what the products run on ----
    // One line on the library and kernels (the run's banner), and the same as one JSON
    // object without a newline (the log's header line).
    void (*describe)(const zt_backend *be, char *buf, size_t size);
    void (*write_json)(const zt_backend *be, FILE *f);

    // ---- memory ----
    // `bytes` of device memory, zero-filled, counted under `cat` by the tagged allocator
    // (memory.h). NULL only for bytes == 0. Free with free (NULL accepted).
    void *(*alloc)(const zt_backend *be, zt_mem_category cat, size_t bytes);
    void (*free)(const zt_backend *be, void *ptr);
    // dst[0..bytes) = byte (device memory).
    void (*memset)(const zt_backend *be, void *dst, int byte, size_t bytes);
    // Copies between host and device (kind says which side each pointer is on).
    void (*copy)(const zt_backend *be, void *dst, const void *src, size_t bytes,
                 zt_copy_kind kind);
    // A host view of device memory [dev, dev + bytes): with `read` it holds the device's
    // values, without it zeros. unmap with `write` stores the view back into the device
    // memory, then releases the view. On the CPU the view is `dev` itself (no copy).
    // For host code that is not in the step: initialization, checkpoints, checks.
    void *(*map)(const zt_backend *be, void *dev, size_t bytes, int read);
    void (*unmap)(const zt_backend *be, void *dev, void *host, size_t bytes, int write);
    // Waits until all issued work is done; a failure in it is fatal (with the kernel's
    // error). Called at every step boundary.
    void (*sync)(const zt_backend *be);
    // The queue its work runs on (a cudaStream_t), for a comm backend that orders its
    // collectives with the kernels (comm/comm_nccl.h); NULL where work runs as it is issued.
    void *(*stream)(const zt_backend *be);
    // The device it runs on: returns its index as this process numbers them (after
    // CUDA_VISIBLE_DEVICES) and writes to id (size bytes, NUL-terminated) a name of the
    // physical device that is the same in every process and differs between devices
    // (CUDA: host name and PCI bus id, what NCCL compares to refuse two ranks on one GPU),
    // so the grid can tell which ranks share one. -1 and "" on a backend without a device.
    int (*device)(const zt_backend *be, char *id, size_t size);
    // The memory of that device now (the fit check before a run allocates): 1 with *free_b
    // and *total_b as the device reports them (CUDA: cudaMemGetInfo) and *held the bytes
    // this backend holds there through its allocator (after open: its fixed buffers,
    // caps.fixed_workspace), already missing from *free_b but counted by the planner too;
    // 0 (all three 0) on a backend without device memory (the CPU: host memory is checked).
    int (*memory_info)(const zt_backend *be, size_t *free_b, size_t *total_b, size_t *held);
    // Host memory its copies are fastest from and to (pinned on a GPU): `bytes`, zero-filled,
    // for the comm staging buffers; NULL only for 0 bytes, out of memory is fatal. Counted
    // under `cat` where host memory is the backend's memory (the CPU), not on a GPU (the
    // allocator's counts are device memory there). Free with host_free (NULL accepted).
    void *(*host_alloc)(const zt_backend *be, zt_mem_category cat, size_t bytes);
    void (*host_free)(const zt_backend *be, void *ptr);

    // ---- the model's kernels (kernels.h has each one's shapes and rules) ----
    void (*gemm)(const zt_backend *be, int trans_a, int trans_b, int M, int N, int K, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
    void (*encoder_forward)(const zt_backend *be, float *out, const int32_t *tokens,
                            const float *wte, const float *wpe, int vocab_lo, int vocab_rows,
                            int N, int T, int C);
    void (*encoder_backward)(const zt_backend *be, float *dwte, float *dwpe, const float *dout,
                             const int32_t *tokens, int vocab_lo, int vocab_rows, int N, int T,
                             int C);
    void (*layernorm_forward)(const zt_backend *be, float *out, float *mean, float *rstd,
                              const float *inp, const float *w, const float *b, int N, int C);
    // res = a + b, then layernorm_forward of res: the residual add and the LayerNorm that
    // follows it in one pass (kernels.h's zt_residual_layernorm_forward). The CPU's is
    // bit-identical to add then layernorm_forward; a GPU's may differ as its layernorm_forward.
    void (*residual_layernorm_forward)(const zt_backend *be, float *res, float *out, float *mean,
                                       float *rstd, const float *a, const float *b,
                                       const float *w, const float *bias, int N, int C);
    void (*layernorm_backward)(const zt_backend *be, float *dinp, float *dw, float *db,
                               const float *dout, const float *inp, const float *w,
                               const float *mean, const float *rstd, int N, int C);
    void (*matmul_forward)(const zt_backend *be, float *out, const float *inp, const float *w,
                           const float *bias, int N, int C, int OC);
    void (*matmul_backward)(const zt_backend *be, float *dinp, float *dw, float *dbias,
                            const float *dout, const float *inp, const float *w, int N, int C,
                            int OC, int accumulate_dinp);
    void (*matmul_in_out_forward)(const zt_backend *be, float *out, const float *inp,
                                  const float *w, const float *bias, int N, int C, int OC);
    void (*matmul_in_out_backward)(const zt_backend *be, float *dinp, float *dw, float *dbias,
                                   const float *dout, const float *inp, const float *w, int N,
                                   int C, int OC, int accumulate_dinp);
    void (*gelu_forward)(const zt_backend *be, float *out, const float *inp, size_t n);
    // pre = matmul_forward(inp, w, bias), out = gelu(pre), both kept (the MLP's c_fc; the
    // backward reads pre): the bias and the GELU in one pass on a GPU (kernels.h's
    // zt_matmul_gelu_forward). The CPU's is bit-identical to matmul_forward then gelu_forward.
    void (*matmul_gelu_forward)(const zt_backend *be, float *pre, float *out, const float *inp,
                                const float *w, const float *bias, int N, int C, int OC);
    void (*gelu_backward)(const zt_backend *be, float *dinp, const float *inp, const float *dout,
                          size_t n);
    void (*add)(const zt_backend *be, float *out, const float *a, const float *b, size_t n);
    void (*attention_forward)(const zt_backend *be, float *out, float *lse, const float *qkv,
                              float *work, int B, int T, int C, int NH);
    void (*attention_backward)(const zt_backend *be, float *dqkv, const float *dout,
                               const float *qkv, const float *lse, float *work, int B, int T,
                               int C, int NH);
    // n_q queries against a KV cache (generation, src/model/generate.c; kernels.h has the
    // rules): out (n_q, C) for q (n_q rows 3C apart), query i at position n_pos - n_q + i
    // against k, v (n_pos, C) rows up to it, NH heads of C/NH. work: NH * n_q * n_pos
    // floats. NULL on a backend without it (zt_decoder_init refuses that backend).
    void (*attention_decode)(const zt_backend *be, float *out, const float *q, const float *k,
                             const float *v, float *work, int n_q, int n_pos, int C, int NH);
    void (*ce_slice_stats)(const zt_backend *be, float *row_max, float *target_logit,
                           const float *logits, const int32_t *targets, int n, int n_valid,
                           int vocab_lo, int ld);
    void (*ce_slice_sumexp)(const zt_backend *be, float *sumexp, const float *logits,
                            const float *row_max, int n, int n_valid, int ld);
    void (*ce_slice_finish)(const zt_backend *be, float *dlogits, float *losses,
                            const float *logits, const int32_t *targets, const float *row_max,
                            const float *sumexp, const float *target_logit, float scale, int n,
                            int n_valid, int vocab_lo, int ld);

    // ---- reductions that come back to the host ----
    // Sum of x[0..n) in double.
    double (*sum)(const zt_backend *be, const float *x, size_t n);
    // *acc += sum of x[0..n) in double, as `sum`, with acc one double of the backend's memory:
    // nothing comes back, so a GPU need not wait (the training loss stays on the device until
    // the step's end, when one copy reads it).
    void (*sum_into)(const zt_backend *be, double *acc, const float *x, size_t n);
    // out[0] += sum of x[i]^2 over the finite x[i] (in double), out[1] += count of the
    // non-finite ones.
    void (*sumsq)(const zt_backend *be, double out[2], const float *x, size_t n);

    // ---- optimizer kernels (optim/) ----
    // AdamW on n elements: p, m, v updated from g (adamw_math.h); h is host memory.
    void (*adamw)(const zt_backend *be, float *p, float *m, float *v, const float *g, size_t n,
                  float wd, const zt_adamw_hparams *h);
    // 8-bit AdamW on n elements in blocks of `block` values (optim/adamw8bit.h): per
    // block, dequantize qm/qv with absmax_m/absmax_v[j], update, requantize with the
    // block's new absmax. map_m, map_v: the 256-entry code maps, host memory.
    void (*adamw8bit)(const zt_backend *be, float *p, const float *g, uint8_t *qm, uint8_t *qv,
                      float *absmax_m, float *absmax_v, size_t n, int block, const float *map_m,
                      const float *map_v, float wd, const zt_adamw_hparams *h);

    // ---- bf16 mixed precision (docs/design.md, "bf16") ----
    // NULL on a backend whose caps.bf16 is 0. Parameters and their gradients are bf16,
    // activations fp32. A kernel that adds into a bf16 gradient sums its own contributions
    // in fp32 and rounds once per element per call (round to nearest even, bf16_math.h).
    //
    // C (M, N) = alpha op(A) op(B) + beta C, row-major with gemm's arguments, A, B and C
    // each fp32 or bf16 (at, bt, ct). The products have bf16 operands: an fp32 A or B is
    // rounded to bf16 first (what a tensor core or a bf16 dot product computes); the sums
    // are fp32. A bf16 C is widened for beta and rounded once at the end. work: the
    // caller's scratch of caps.gemm_mixed_workspace bytes (any M, N, K: the backend tiles).
    void (*gemm_mixed)(const zt_backend *be, int trans_a, int trans_b, int M, int N, int K,
                       float alpha, const void *A, zt_dtype at, int lda, const void *B,
                       zt_dtype bt, int ldb, float beta, void *C, zt_dtype ct, int ldc,
                       void *work);
    // One line on what gemm_mixed's products run on (a bf16 run's banner), e.g. the CPU's
    // "bf16 GEMM: oneDNN ..." or "bf16 GEMM: fp32 fallback ...": its speed depends on it.
    void (*describe_gemm_mixed)(const zt_backend *be, char *buf, size_t size);
    // out (N, OC) += bias (OC).
    void (*bias_forward_bf16)(const zt_backend *be, float *out, const zt_bf16 *bias, int N,
                              int OC);
    // dbias (OC) += column sums of dout (N, OC).
    void (*bias_backward_bf16)(const zt_backend *be, zt_bf16 *dbias, const float *dout, int N,
                               int OC);
    // encoder_forward / encoder_backward with bf16 wte, wpe and their gradients.
    void (*encoder_forward_bf16)(const zt_backend *be, float *out, const int32_t *tokens,
                                 const zt_bf16 *wte, const zt_bf16 *wpe, int vocab_lo,
                                 int vocab_rows, int N, int T, int C);
    void (*encoder_backward_bf16)(const zt_backend *be, zt_bf16 *dwte, zt_bf16 *dwpe,
                                  const float *dout, const int32_t *tokens, int vocab_lo,
                                  int vocab_rows, int N, int T, int C);
    // layernorm_forward / layernorm_backward with bf16 weight, bias and their gradients; the
    // forward's out is fp32 or bf16 (out_dt: the row computed in fp32, rounded once).
    void (*layernorm_forward_bf16)(const zt_backend *be, void *out, zt_dtype out_dt, float *mean,
                                   float *rstd, const float *inp, const zt_bf16 *w,
                                   const zt_bf16 *b, int N, int C);
    // gelu_forward with out rounded to bf16.
    void (*gelu_forward_bf16)(const zt_backend *be, zt_bf16 *out, const float *inp, size_t n);
    void (*layernorm_backward_bf16)(const zt_backend *be, float *dinp, zt_bf16 *dw, zt_bf16 *db,
                                    const float *dout, const float *inp, const zt_bf16 *w,
                                    const float *mean, const float *rstd, int N, int C);
    // sumsq over bf16 values (the gradient's norm): out[0] += sum of the finite x[i]^2 in
    // double, out[1] += count of the non-finite ones.
    void (*sumsq_bf16)(const zt_backend *be, double out[2], const zt_bf16 *x, size_t n);
    // AdamW on n elements with fp32 master weights: master, m, v updated from the bf16
    // gradient g exactly as adamw updates p (adamw_math.h), then p = master rounded to bf16.
    void (*adamw_bf16)(const zt_backend *be, float *master, zt_bf16 *p, float *m, float *v,
                       const zt_bf16 *g, size_t n, float wd, const zt_adamw_hparams *h);
    // adamw8bit with fp32 master weights and a bf16 gradient, p = master rounded to bf16.
    void (*adamw8bit_bf16)(const zt_backend *be, float *master, zt_bf16 *p, const zt_bf16 *g,
                           uint8_t *qm, uint8_t *qv, float *absmax_m, float *absmax_v, size_t n,
                           int block, const float *map_m, const float *map_v, float wd,
                           const zt_adamw_hparams *h);
    // out[i] = in[i] rounded to bf16 (nearest even) / widened to fp32 (exact), device memory.
    void (*bf16_from_fp32)(const zt_backend *be, zt_bf16 *out, const float *in, size_t n);
    void (*bf16_to_fp32)(const zt_backend *be, float *out, const zt_bf16 *in, size_t n);
} zt_backend_i;

// The CPU's bf16 GEMM (kernels/cpu/kernels.h): its two paths, or the pick by the CPU.
typedef enum {
    ZT_BF16_GEMM_AUTO = 0, // oneDNN where the CPU has bf16 instructions, else the fallback
    ZT_BF16_GEMM_DNNL,     // oneDNN's dnnl_gemm_bf16bf16f32
    ZT_BF16_GEMM_FALLBACK, // A and B widened to fp32, then the fp32 GEMM
} zt_bf16_gemm_path;

// What a backend supports, known without opening it: the option checks and the planner ask.
typedef struct {
    const char *name;  // "cpu", "cuda"
    int built;         // compiled into this binary
    int tf32;          // honours zt_backend_options.tf32
    int bf16_gemm;     // honours zt_backend_options.bf16_gemm
    int multi_rank;    // several ranks' tensors can move through the comm backends
    int device_memory; // tensors live off the host (a GPU's memory)
    int bf16;          // the bf16 mixed-precision ops (zt_backend_i's last group)
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
typedef struct {
    int device;  // the GPU a device backend runs on (0-based; -1: picked from local_rank by
                 // zt_backend_pick_device); the CPU ignores it
    int local_rank; // this process's rank among those of its machine (-1: unknown)
    int threads; // host threads for the kernels; 0: OpenMP's default (OMP_NUM_THREADS)
    int tf32;    // TF32 tensor cores in fp32 products (a backend whose caps.tf32 is 1)
    zt_bf16_gemm_path bf16_gemm; // the bf16 GEMM's path (a backend whose caps.bf16_gemm is
                                 // 1; others take AUTO only)
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

// Opens backend `name` with `opt` into *be (zt_backend_check first). ZT_ERR with one clear message for a name that is
// unknown or not built into this binary, an option it does not support, a GPU that is missing.
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

// The CPU backend, already open with OpenMP's default threads: for tests and tools that
// need no options. The pointer is static.
const zt_backend *zt_backend_cpu(void);

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
