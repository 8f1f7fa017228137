// The CUDA backend: backend.h's table on one GPU. Memory through cudaMalloc (counted per
// category by the tagged allocator, no managed-memory fallback), one stream for all
// work, cuBLAS for GEMM (row-major through the transpose identity), and the kernels of
// kernels/*_cuda.cu. Compiled by gcc, as C, in `make cuda` only.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "backend_impl.h"
#include "bf16_cuda.h"
#include "cuda_check.h"
#include "kernels_cuda.h"
#include "launch_math.h"
#include "residual_bf16_cuda.h"

typedef struct {
    void *ptr;
    size_t bytes;
    zt_mem_category cat;
} cuda_block;

// Small write-only host views (a micro-batch's tokens) come from pinned buffers, and their
// write-back is an asynchronous copy the buffer's event tracks: the step does not wait for
// the GPU to upload a batch (map, unmap). 8 x 1 MiB: tokens of B x T up to 256 K each.
#define MAP_POOL 8
#define MAP_POOL_BYTES ((size_t)1 << 20)

typedef struct {
    void *host;        // (MAP_POOL_BYTES) pinned
    cudaEvent_t done;  // recorded after the buffer's last upload
    int mapped;        // handed out by map, not yet unmapped
} pinned_view;

typedef struct {
    int device;
    int tf32;             // TF32 tensor cores in fp32 GEMMs (--tf32)
    zt_cuda_attention attention; // --cuda-attention: blocked, rows, flash or auto (backend.h)
    cudaStream_t stream;
    cublasHandle_t cublas;
    void *cublas_ws;      // (ZT_CUDA_CUBLAS_WORKSPACE bytes)
    double *reduce;       // (ZT_CUDA_REDUCE_WORK) the sums' scratch
    float *colsum;        // (ZT_CUDA_COLSUM_WORK) the column sums' partials (bias, LayerNorm)
    uint64_t *embed;      // (ZT_CUDA_EMBED_WORK) the embedding backward's sort keys
    zt_cuda_bf16 bf16;    // the bf16 ops' stream, cuBLASLt handle and plans, sort keys
    cuda_block *blocks;   // live allocations, for the accounting on free
    pinned_view pool[MAP_POOL];
    int pool_next;        // the next pool buffer map tries
    size_t nblocks, capblocks;
} cuda_impl;

static cuda_impl *impl_of(const zt_backend *be) { return (cuda_impl *)be->impl; }

// ---- memory ----

static void *cuda_alloc_raw(cuda_impl *c, zt_mem_category cat, size_t bytes) {
    if (bytes == 0) return NULL;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); // an allocation failure is not sticky: clear it
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        zt_fatal(__FILE__, __LINE__,
                 "out of GPU memory: cudaMalloc of %zu bytes (%.2f GiB) of %s on GPU %d failed "
                 "(%s); %.2f GiB of %.2f GiB free. Plan the run with `zerotrain memory` and "
                 "lower --micro-batch or raise --zero/--pp/--tp",
                 bytes, bytes / 1073741824.0, zt_mem_category_name(cat), c->device,
                 cudaGetErrorString(e), free_b / 1073741824.0, total_b / 1073741824.0);
    }
    ZT_CHECK_CUDA(cudaMemsetAsync(p, 0, bytes, c->stream));
    if (c->nblocks == c->capblocks) {
        size_t cap = c->capblocks ? 2 * c->capblocks : 64;
        cuda_block *nb = realloc(c->blocks, cap * sizeof *nb);
        ZT_ASSERTF(nb, "out of host memory for the GPU allocation table");
        c->blocks = nb;
        c->capblocks = cap;
    }
    c->blocks[c->nblocks++] = (cuda_block){p, bytes, cat};
    zt_mem_count_alloc(cat, bytes);
    return p;
}

static void cuda_free_raw(cuda_impl *c, void *ptr) {
    if (!ptr) return;
    for (size_t i = 0; i < c->nblocks; i++)
        if (c->blocks[i].ptr == ptr) {
            zt_mem_count_free(c->blocks[i].cat, c->blocks[i].bytes);
            c->blocks[i] = c->blocks[--c->nblocks];
            // cudaFree waits for the device: nothing in flight still uses the block
            ZT_CHECK_CUDA(cudaFree(ptr));
            return;
        }
    zt_fatal(__FILE__, __LINE__, "GPU free of a pointer the CUDA backend did not allocate");
}

static void *cuda_alloc(const zt_backend *be, zt_mem_category cat, size_t bytes) {
    return cuda_alloc_raw(impl_of(be), cat, bytes);
}
static void cuda_free(const zt_backend *be, void *ptr) { cuda_free_raw(impl_of(be), ptr); }

static void cuda_memset(const zt_backend *be, void *dst, int byte, size_t bytes) {
    if (bytes) ZT_CHECK_CUDA(cudaMemsetAsync(dst, byte, bytes, impl_of(be)->stream));
}

// Host-to-device and device-to-host copies wait for their transfer, so the host buffer
// may be reused or read when copy returns; device-to-device ones stay in the stream.
static void cuda_copy(const zt_backend *be, void *dst, const void *src, size_t bytes,
                      zt_copy_kind kind) {
    if (!bytes || dst == src) return;
    cudaStream_t st = impl_of(be)->stream;
    enum cudaMemcpyKind k = kind == ZT_COPY_H2D   ? cudaMemcpyHostToDevice
                            : kind == ZT_COPY_D2H ? cudaMemcpyDeviceToHost
                                                  : cudaMemcpyDeviceToDevice;
    ZT_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, k, st));
    if (kind != ZT_COPY_D2D) ZT_CHECK_CUDA(cudaStreamSynchronize(st));
}

// A pool buffer for a small write-only view, once its previous upload is done; NULL when
// the view is large, read, or the next buffer is still mapped (then plain host memory).
static void *pool_map(cuda_impl *c, size_t bytes, int read) {
    pinned_view *v = &c->pool[c->pool_next];
    if (read || bytes > MAP_POOL_BYTES || v->mapped) return NULL;
    c->pool_next = (c->pool_next + 1) % MAP_POOL;
    ZT_CHECK_CUDA(cudaEventSynchronize(v->done)); // its last upload has read it
    v->mapped = 1;
    memset(v->host, 0, bytes);
    return v->host;
}

// Unmaps a pool view (1) or says it is not one (0): the write-back stays in the stream.
static int pool_unmap(cuda_impl *c, void *dev, void *host, size_t bytes, int write) {
    for (int i = 0; i < MAP_POOL; i++) {
        pinned_view *v = &c->pool[i];
        if (v->host != host) continue;
        if (write) {
            ZT_CHECK_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, c->stream));
            ZT_CHECK_CUDA(cudaEventRecord(v->done, c->stream));
        }
        v->mapped = 0;
        return 1;
    }
    return 0;
}

// The view is a pinned pool buffer (small, write-only: a batch's upload in the step) or
// plain host memory (not counted: it lives only between map and unmap, for
// initialization, checkpoints and checks).
static void *cuda_map(const zt_backend *be, void *dev, size_t bytes, int read) {
    if (!bytes) return NULL;
    void *pooled = pool_map(impl_of(be), bytes, read);
    if (pooled) return pooled;
    void *host = malloc(bytes);
    ZT_ASSERTF(host, "out of host memory mapping %zu bytes of GPU memory", bytes);
    if (read) cuda_copy(be, host, dev, bytes, ZT_COPY_D2H);
    else memset(host, 0, bytes);
    return host;
}

static void cuda_unmap(const zt_backend *be, void *dev, void *host, size_t bytes, int write) {
    if (!host || pool_unmap(impl_of(be), dev, host, bytes, write)) return;
    if (write) cuda_copy(be, dev, host, bytes, ZT_COPY_H2D);
    free(host);
}

// Any error of a kernel since the last sync shows here (every step boundary).
static void cuda_sync(const zt_backend *be) {
    cudaError_t e = cudaStreamSynchronize(impl_of(be)->stream);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess)
        zt_fatal(__FILE__, __LINE__,
                 "CUDA error %s (%s) in the work since the last sync (build with "
                 "ZT_CUDA_DEBUG=1 to name the kernel)",
                 cudaGetErrorName(e), cudaGetErrorString(e));
}

// Host name and PCI bus id: NCCL's own test for "Duplicate GPU detected" (two ranks of one
// communicator whose GPUs have the same host and bus id), so the grid's choice matches it.
static int cuda_device(const zt_backend *be, char *id, size_t size) {
    const cuda_impl *c = impl_of(be);
    char host[128] = "", bus[32] = "";
    if (gethostname(host, sizeof host) != 0) host[0] = 0;
    host[sizeof host - 1] = 0;
    ZT_CHECK_CUDA(cudaDeviceGetPCIBusId(bus, (int)sizeof bus, c->device));
    if (size) snprintf(id, size, "%s/%s", host, bus);
    return c->device;
}

// cudaMemGetInfo on this backend's GPU (the current device of this thread since open); held:
// what its allocation table holds (after open, the fixed workspace).
static int cuda_memory_info(const zt_backend *be, size_t *free_b, size_t *total_b,
                            size_t *held) {
    const cuda_impl *c = impl_of(be);
    ZT_CHECK_CUDA(cudaSetDevice(c->device));
    ZT_CHECK_CUDA(cudaMemGetInfo(free_b, total_b));
    *held = 0;
    for (size_t i = 0; i < c->nblocks; i++) *held += c->blocks[i].bytes;
    return 1;
}

// Pinned, so the staging copies run at the bus's speed; not counted by the tagged allocator,
// whose counts are device memory on this backend.
static void *cuda_host_alloc(const zt_backend *be, zt_mem_category cat, size_t bytes) {
    if (bytes == 0) return NULL;
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
    if (e != cudaSuccess)
        zt_fatal(__FILE__, __LINE__, "out of pinned host memory: cudaHostAlloc of %zu bytes of "
                 "%s failed (%s)", bytes, zt_mem_category_name(cat), cudaGetErrorString(e));
    memset(p, 0, bytes);
    return p;
}
static void cuda_host_free(const zt_backend *be, void *ptr) {
    if (ptr) ZT_CHECK_CUDA(cudaFreeHost(ptr));
}

// ---- GEMM and the linear layers ----

#define ST (impl_of(be)->stream)

// Row-major C (M, N) = alpha op(A) op(B) + beta C is column-major C^T (N, M) = alpha
// op(B)^T op(A)^T + beta C^T: the same buffers, operands swapped, dimensions swapped
// (launch_math.h's zt_gemm_row_to_col, checked on the host against a column-major
// reference in cuda_launch_math_host).
static void cuda_gemm(const zt_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                      const float *A, int lda, const float *B, int ldb, float beta, float *C,
                      int ldc) {
    if (M <= 0 || N <= 0) return;
    zt_col_major_gemm g = zt_gemm_row_to_col(ta, tb, M, N, K, A, lda, B, ldb);
    ZT_CHECK_CUBLAS(cublasSgemm(impl_of(be)->cublas, g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N,
                                g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &alpha,
                                g.first, g.ld_first, g.second, g.ld_second, &beta, C, ldc));
}

static void cuda_matmul_forward(const zt_backend *be, float *out, const float *inp,
                                const float *w, const float *bias, int N, int C, int OC) {
    if (bias) zt_cuda_fill_bias(impl_of(be)->stream, out, bias, N, OC);
    cuda_gemm(be, 0, 1, N, OC, C, 1.0f, inp, C, w, C, bias ? 1.0f : 0.0f, out, OC);
}

// c_fc with its GELU: the GEMM (beta 0), then the bias and the GELU in one pass.
static void cuda_matmul_gelu_forward(const zt_backend *be, float *pre, float *out,
                                     const float *inp, const float *w, const float *bias, int N,
                                     int C, int OC) {
    cuda_gemm(be, 0, 1, N, OC, C, 1.0f, inp, C, w, C, 0.0f, pre, OC);
    zt_cuda_bias_gelu_forward(impl_of(be)->stream, pre, out, bias, N, OC);
}

static void cuda_matmul_in_out_forward(const zt_backend *be, float *out, const float *inp,
                                       const float *w, const float *bias, int N, int C, int OC) {
    if (bias) zt_cuda_fill_bias(impl_of(be)->stream, out, bias, N, OC);
    cuda_gemm(be, 0, 0, N, OC, C, 1.0f, inp, C, w, OC, bias ? 1.0f : 0.0f, out, OC);
}

// The backward's halves (backend_ops.h); the combined ops are the two, input first.
static void cuda_matmul_backward_input(const zt_backend *be, float *dinp, const float *dout,
                                       const float *w, int N, int C, int OC, int acc) {
    cuda_gemm(be, 0, 0, N, C, OC, 1.0f, dout, OC, w, C, acc ? 1.0f : 0.0f, dinp, C);
}
static void cuda_matmul_backward_weight(const zt_backend *be, float *dw, float *dbias,
                                        const float *dout, const float *inp, int N, int C,
                                        int OC) {
    cuda_gemm(be, 1, 0, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw, C);
    if (dbias) zt_cuda_bias_backward(ST, dbias, dout, impl_of(be)->colsum, N, OC);
}
static void cuda_matmul_backward(const zt_backend *be, float *dinp, float *dw, float *dbias,
                                 const float *dout, const float *inp, const float *w, int N,
                                 int C, int OC, int acc) {
    cuda_matmul_backward_input(be, dinp, dout, w, N, C, OC, acc);
    cuda_matmul_backward_weight(be, dw, dbias, dout, inp, N, C, OC);
}

static void cuda_matmul_in_out_backward_input(const zt_backend *be, float *dinp,
                                              const float *dout, const float *w, int N, int C,
                                              int OC, int acc) {
    cuda_gemm(be, 0, 1, N, C, OC, 1.0f, dout, OC, w, OC, acc ? 1.0f : 0.0f, dinp, C);
}
static void cuda_matmul_in_out_backward_weight(const zt_backend *be, float *dw, float *dbias,
                                               const float *dout, const float *inp, int N, int C,
                                               int OC) {
    cuda_gemm(be, 1, 0, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dw, OC);
    if (dbias) zt_cuda_bias_backward(ST, dbias, dout, impl_of(be)->colsum, N, OC);
}
static void cuda_matmul_in_out_backward(const zt_backend *be, float *dinp, float *dw,
                                        float *dbias, const float *dout, const float *inp,
                                        const float *w, int N, int C, int OC, int acc) {
    cuda_matmul_in_out_backward_input(be, dinp, dout, w, N, C, OC, acc);
    cuda_matmul_in_out_backward_weight(be, dw, dbias, dout, inp, N, C, OC);
}

// ---- the kernels: thin forwards to kernels_cuda.h with the backend's stream ----

static void cuda_encoder_forward(const zt_backend *be, float *out, const int32_t *tokens,
                                 const float *wte, const float *wpe, int vocab_lo,
                                 int vocab_rows, int N, int T, int C) {
    zt_cuda_encoder_forward(ST, out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
}
static void cuda_encoder_backward(const zt_backend *be, float *dwte, float *dwpe,
                                  const float *dout, const int32_t *tokens, int vocab_lo,
                                  int vocab_rows, int N, int T, int C) {
    zt_cuda_encoder_backward(ST, dwte, dwpe, dout, tokens, impl_of(be)->embed, vocab_lo,
                             vocab_rows, N, T, C);
}
static void cuda_layernorm_forward(const zt_backend *be, float *out, float *mean, float *rstd,
                                   const float *inp, const float *w, const float *b, int N,
                                   int C) {
    zt_cuda_layernorm_forward(ST, out, mean, rstd, inp, w, b, N, C);
}
static void cuda_residual_layernorm_forward(const zt_backend *be, float *res, float *out,
                                            float *mean, float *rstd, const float *a,
                                            const float *b, const float *w, const float *bias,
                                            int N, int C) {
    zt_cuda_residual_layernorm_forward(ST, res, out, mean, rstd, a, b, w, bias, N, C);
}
static void cuda_layernorm_backward(const zt_backend *be, float *dinp, float *dw, float *db,
                                    const float *dout, const float *inp, const float *w,
                                    const float *mean, const float *rstd, int N, int C) {
    zt_cuda_layernorm_backward(ST, dinp, dw, db, dout, inp, w, mean, rstd, impl_of(be)->colsum, N,
                               C);
}
static void cuda_gelu_forward(const zt_backend *be, float *out, const float *inp, size_t n) {
    zt_cuda_gelu_forward(ST, out, inp, n);
}
static void cuda_gelu_backward(const zt_backend *be, float *dinp, const float *inp,
                               const float *dout, size_t n) {
    zt_cuda_gelu_backward(ST, dinp, inp, dout, n);
}
static void cuda_add(const zt_backend *be, float *out, const float *a, const float *b, size_t n) {
    zt_cuda_add(ST, out, a, b, n);
}
// The query-blocked cuBLAS attention on `work` (zt_cuda_attention_workspace floats), or with
// --cuda-attention rows the one-block-per-row kernels, which need none: the first
// version, kept for comparing the two on a GPU and as a fallback until they have been.
// --cuda-attention flash and auto run the blocked ones for fp32 models (the fused kernels take
// bf16 q, k, v).
static int rows_kernels(const zt_backend *be) {
    return impl_of(be)->attention == ZT_CUDA_ATTENTION_ROWS;
}
static void cuda_attention_forward(const zt_backend *be, float *out, float *lse,
                                   const float *qkv, float *work, int B, int T, int C, int NH) {
    if (rows_kernels(be)) zt_cuda_attention_forward(ST, out, lse, qkv, B, T, C, NH);
    else zt_cuda_attention_gemm_forward(impl_of(be)->cublas, ST, out, lse, qkv, work, B, T, C, NH);
}
static void cuda_attention_backward(const zt_backend *be, float *dqkv, const float *dout,
                                    const float *qkv, const float *lse, float *work, int B,
                                    int T, int C, int NH) {
    if (rows_kernels(be)) zt_cuda_attention_backward(ST, dqkv, dout, qkv, lse, B, T, C, NH);
    else
        zt_cuda_attention_gemm_backward(impl_of(be)->cublas, ST, dqkv, dout, qkv, lse, work, B, T,
                                        C, NH);
}
// One query row at a time, each against the cache up to its position, in stream order;
// `work` holds one row's scores (NH * n_pos floats) at a time.
static void cuda_attention_decode(const zt_backend *be, float *out, const float *q, const float *k,
                                  const float *v, float *work, int n_q, int n_pos, int C, int NH) {
    for (int i = 0; i < n_q; i++)
        zt_cuda_attention_decode(ST, out + (size_t)i * C, q + (size_t)i * 3 * C, k, v, work,
                                 n_pos - n_q + i + 1, C, NH);
}
static void cuda_ce_slice_stats(const zt_backend *be, float *row_max, float *target_logit,
                                const float *logits, const int32_t *targets, int n, int n_valid,
                                int vocab_lo, int ld) {
    zt_cuda_ce_slice_stats(ST, row_max, target_logit, logits, targets, n, n_valid, vocab_lo, ld);
}
static void cuda_ce_slice_sumexp(const zt_backend *be, float *sumexp, const float *logits,
                                 const float *row_max, int n, int n_valid, int ld) {
    zt_cuda_ce_slice_sumexp(ST, sumexp, logits, row_max, n, n_valid, ld);
}
static void cuda_ce_slice_finish(const zt_backend *be, float *dlogits, float *losses,
                                 const float *logits, const int32_t *targets,
                                 const float *row_max, const float *sumexp,
                                 const float *target_logit, float scale, int n, int n_valid,
                                 int vocab_lo, int ld) {
    zt_cuda_ce_slice_finish(ST, dlogits, losses, logits, targets, row_max, sumexp, target_logit,
                            scale, n, n_valid, vocab_lo, ld);
}

// ---- reductions that come back to the host ----

static double cuda_sum(const zt_backend *be, const float *x, size_t n) {
    double r;
    zt_cuda_reduce(ST, impl_of(be)->reduce, x, n, 0);
    cuda_copy(be, &r, impl_of(be)->reduce, sizeof r, ZT_COPY_D2H);
    return r;
}

// cuda_sum without the copy: the reduction, then a one-thread add into *acc, in the stream.
static void cuda_sum_into(const zt_backend *be, double *acc, const float *x, size_t n) {
    zt_cuda_reduce(ST, impl_of(be)->reduce, x, n, 0);
    zt_cuda_accumulate(ST, acc, impl_of(be)->reduce);
}

// out[0..1] += the two results of the sums' scratch, copied back (the host waits).
static void add_sums_back(const zt_backend *be, double out[2]) {
    double r[2];
    cuda_copy(be, r, impl_of(be)->reduce, sizeof r, ZT_COPY_D2H);
    out[0] += r[0];
    out[1] += r[1];
}

static void cuda_sumsq(const zt_backend *be, double out[2], const float *x, size_t n) {
    zt_cuda_reduce(ST, impl_of(be)->reduce, x, n, 1);
    add_sums_back(be, out);
}

// ---- optimizers ----

static void cuda_adamw(const zt_backend *be, float *p, float *m, float *v, const float *g,
                       size_t n, float wd, const zt_adamw_hparams *h) {
    zt_cuda_adamw(ST, p, m, v, g, n, wd, *h);
}

static void cuda_adamw8bit(const zt_backend *be, float *p, const float *g, uint8_t *qm,
                           uint8_t *qv, float *absmax_m, float *absmax_v, size_t n, int block,
                           const float *map_m, const float *map_v, float wd,
                           const zt_adamw_hparams *h) {
    zt_q8_maps maps;
    memcpy(maps.m, map_m, sizeof maps.m);
    memcpy(maps.v, map_v, sizeof maps.v);
    zt_cuda_adamw8bit(ST, p, g, qm, qv, absmax_m, absmax_v, n, block, &maps, wd, *h);
}

// ---- bf16 mixed precision (bf16_cuda.h) ----

#define BF (&impl_of(be)->bf16)

static void cuda_gemm_mixed(const zt_backend *be, int ta, int tb, int M, int N, int K,
                            float alpha, const void *A, zt_dtype at, int lda, const void *B,
                            zt_dtype bt, int ldb, float beta, void *C, zt_dtype ct, int ldc,
                            void *work) {
    zt_cuda_gemm_mixed(BF, ta, tb, M, N, K, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, work);
}
// The bias or GELU's backward in cuBLASLt's epilogue where it applies (a bf16 A and C),
// else the ops that define the op.
static int cuda_gemm_epilogue_bf16(const zt_backend *be, zt_epilogue ep, int ta, int tb, int M,
                                   int N, int K, const void *A, zt_dtype at, int lda,
                                   const zt_bf16 *B, int ldb, void *C, zt_dtype ct,
                                   const zt_bf16 *vec, const zt_bf16 *aux, float *wide,
                                   void *work) {
    int dgelu = ep == ZT_EPILOGUE_DGELU;
    if (at == ZT_BF16 && ct == ZT_BF16 &&
        zt_cuda_gemm_epilogue(BF, dgelu, ta, tb, M, N, K, A, lda, B, ldb, C,
                              dgelu ? aux : vec, work))
        return 1;
    zt_gemm_epilogue_unfused(be, ep, ta, tb, M, N, K, A, at, lda, B, ldb, C, ct, vec, aux, wide,
                             work);
    return 0;
}
// Attention on bf16 operands: under --cuda-attention flash, the fused kernels on bf16 tensor
// cores for the head sizes they take (the backward's row sums in `wide`); otherwise qkv (and a
// bf16 dout) widened whole into `wide`, then the fp32 attention, its result rounded when bf16
// is asked for (docs/design.md "bf16").
static int use_flash(const zt_backend *be, int T, int C, int NH) {
    zt_cuda_attention a = impl_of(be)->attention;
    return (a == ZT_CUDA_ATTENTION_FLASH || a == ZT_CUDA_ATTENTION_AUTO) &&
           zt_cuda_attention_flash_fits(T, C, NH);
}
static void cuda_attention_forward_bf16(const zt_backend *be, void *out, zt_dtype out_dt,
                                        float *lse, const zt_bf16 *qkv, float *work,
                                        float *wide, int B, int T, int C, int NH) {
    if (use_flash(be, T, C, NH)) {
        zt_cuda_attention_flash_forward(ST, out, out_dt == ZT_BF16, lse, qkv, B, T, C, NH);
        return;
    }
    size_t NC = (size_t)B * T * C;
    float *o = out_dt == ZT_BF16 ? wide + 3 * NC : out;
    zt_cuda_bf16_to_fp32(ST, wide, qkv, 3 * NC);
    cuda_attention_forward(be, o, lse, wide, work, B, T, C, NH);
    if (o != out) zt_cuda_bf16_from_fp32(ST, out, o, NC);
}
static void cuda_attention_backward_bf16(const zt_backend *be, void *dqkv, zt_dtype dqkv_dt,
                                         const void *dout, zt_dtype dout_dt, const zt_bf16 *out,
                                         const zt_bf16 *qkv, const float *lse, float *work,
                                         float *wide, int B, int T, int C, int NH) {
    if (use_flash(be, T, C, NH)) {
        zt_cuda_attention_flash_backward(ST, dqkv, dqkv_dt == ZT_BF16, dout, dout_dt == ZT_BF16,
                                         out, qkv, lse, wide, B, T, C, NH);
        return;
    }
    size_t NC = (size_t)B * T * C;
    const float *dO = dout_dt == ZT_BF16 ? wide + 3 * NC : dout;
    float *dq = dqkv_dt == ZT_BF16 ? wide + 3 * NC + (dO != dout ? NC : 0) : dqkv;
    zt_cuda_bf16_to_fp32(ST, wide, qkv, 3 * NC);
    if (dO != dout) zt_cuda_bf16_to_fp32(ST, (float *)dO, dout, NC);
    cuda_attention_backward(be, dq, dO, wide, lse, work, B, T, C, NH);
    if (dq != dqkv) zt_cuda_bf16_from_fp32(ST, dqkv, dq, 3 * NC);
}
static void cuda_describe_gemm_mixed(const zt_backend *be, char *buf, size_t size) {
    zt_cuda_gemm_mixed_describe(buf, size);
}
static void cuda_bias_forward_bf16(const zt_backend *be, float *out, const zt_bf16 *bias, int N,
                                   int OC) {
    zt_cuda_bias_forward_bf16(ST, out, bias, N, OC);
}
static void cuda_bias_backward_bf16(const zt_backend *be, zt_bf16 *dbias, const void *dout,
                                    zt_dtype dout_dt, int N, int OC) {
    zt_cuda_bias_backward_bf16(ST, dbias, dout, dout_dt, impl_of(be)->colsum, N, OC);
}
static void cuda_encoder_forward_bf16(const zt_backend *be, float *out, const int32_t *tokens,
                                      const zt_bf16 *wte, const zt_bf16 *wpe, int vocab_lo,
                                      int vocab_rows, int N, int T, int C) {
    zt_cuda_encoder_forward_bf16(ST, out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
}
static void cuda_encoder_forward_bf16out(const zt_backend *be, zt_bf16 *out,
                                         const int32_t *tokens, const zt_bf16 *wte,
                                         const zt_bf16 *wpe, int vocab_lo, int vocab_rows, int N,
                                         int T, int C) {
    zt_cuda_encoder_forward_bf16out(ST, out, tokens, wte, wpe, vocab_lo, vocab_rows, N, T, C);
}
static void cuda_encoder_backward_bf16(const zt_backend *be, zt_bf16 *dwte, zt_bf16 *dwpe,
                                       const float *dout, const int32_t *tokens, int vocab_lo,
                                       int vocab_rows, int N, int T, int C) {
    zt_cuda_encoder_backward_bf16(BF, dwte, dwpe, dout, tokens, vocab_lo, vocab_rows, N, T, C);
}
static void cuda_layernorm_forward_bf16(const zt_backend *be, void *out, zt_dtype out_dt,
                                        float *mean, float *rstd, const float *inp,
                                        const zt_bf16 *w, const zt_bf16 *b, int N, int C) {
    zt_cuda_layernorm_forward_bf16(ST, out, out_dt, mean, rstd, inp, w, b, N, C);
}
static void cuda_add_bf16(const zt_backend *be, zt_bf16 *out, const zt_bf16 *a, const float *b,
                          size_t n) {
    zt_cuda_add_bf16(ST, out, a, b, n);
}
static void cuda_layernorm_forward_bf16in(const zt_backend *be, void *out, zt_dtype out_dt,
                                          float *mean, float *rstd, const zt_bf16 *inp,
                                          const zt_bf16 *w, const zt_bf16 *b, int N, int C) {
    zt_cuda_layernorm_forward_bf16in(ST, out, out_dt, mean, rstd, inp, w, b, N, C);
}
static void cuda_residual_layernorm_forward_bf16(const zt_backend *be, zt_bf16 *res, void *out,
                                                 zt_dtype out_dt, float *mean, float *rstd,
                                                 const zt_bf16 *a, const float *b,
                                                 const zt_bf16 *w, const zt_bf16 *bias, int N,
                                                 int C) {
    zt_cuda_residual_layernorm_forward_bf16(ST, res, out, out_dt, mean, rstd, a, b, w, bias, N,
                                            C);
}
static void cuda_bias_broadcast_bf16(const zt_backend *be, zt_bf16 *out, const zt_bf16 *bias,
                                     int N, int OC) {
    zt_cuda_bias_broadcast_bf16(ST, out, bias, N, OC);
}
static void cuda_gelu_forward_bf16(const zt_backend *be, zt_bf16 *out, const zt_bf16 *inp,
                                   size_t n) {
    zt_cuda_gelu_forward_bf16(ST, out, inp, n);
}
static void cuda_gelu_backward_bf16(const zt_backend *be, void *dinp, zt_dtype dinp_dt,
                                    const zt_bf16 *inp, const float *dout, size_t n) {
    zt_cuda_gelu_backward_bf16(ST, dinp, dinp_dt, inp, dout, n);
}
static void cuda_ce_slice_stats_bf16(const zt_backend *be, float *row_max, float *target_logit,
                                     const zt_bf16 *logits, const int32_t *targets, int n,
                                     int n_valid, int vocab_lo, int ld) {
    zt_cuda_ce_slice_stats_bf16(ST, row_max, target_logit, logits, targets, n, n_valid, vocab_lo,
                                ld);
}
static void cuda_ce_slice_sumexp_bf16(const zt_backend *be, float *sumexp, const zt_bf16 *logits,
                                      const float *row_max, int n, int n_valid, int ld) {
    zt_cuda_ce_slice_sumexp_bf16(ST, sumexp, logits, row_max, n, n_valid, ld);
}
static void cuda_ce_slice_finish_bf16(const zt_backend *be, zt_bf16 *dlogits, float *losses,
                                      const zt_bf16 *logits, const int32_t *targets,
                                      const float *row_max, const float *sumexp,
                                      const float *target_logit, float scale, int n, int n_valid,
                                      int vocab_lo, int ld) {
    zt_cuda_ce_slice_finish_bf16(ST, dlogits, losses, logits, targets, row_max, sumexp,
                                 target_logit, scale, n, n_valid, vocab_lo, ld);
}
static void cuda_layernorm_backward_bf16(const zt_backend *be, float *dinp, zt_bf16 *dw,
                                         zt_bf16 *db, const float *dout, const float *inp,
                                         const zt_bf16 *w, const float *mean, const float *rstd,
                                         int N, int C) {
    zt_cuda_layernorm_backward_bf16(ST, dinp, dw, db, dout, inp, w, mean, rstd,
                                    impl_of(be)->colsum, N, C);
}
static void cuda_sumsq_bf16(const zt_backend *be, double out[2], const zt_bf16 *x, size_t n) {
    zt_cuda_reduce_bf16(ST, impl_of(be)->reduce, x, n, 1);
    add_sums_back(be, out);
}
static void cuda_adamw_bf16(const zt_backend *be, float *master, zt_bf16 *p, float *m, float *v,
                            const zt_bf16 *g, size_t n, float wd, const zt_adamw_hparams *h) {
    zt_cuda_adamw_bf16(ST, master, p, m, v, g, n, wd, *h);
}
static void cuda_adamw8bit_bf16(const zt_backend *be, float *master, zt_bf16 *p,
                                const zt_bf16 *g, uint8_t *qm, uint8_t *qv, float *absmax_m,
                                float *absmax_v, size_t n, int block, const float *map_m,
                                const float *map_v, float wd, const zt_adamw_hparams *h) {
    zt_q8_maps maps;
    memcpy(maps.m, map_m, sizeof maps.m);
    memcpy(maps.v, map_v, sizeof maps.v);
    zt_cuda_adamw8bit_bf16(ST, master, p, g, qm, qv, absmax_m, absmax_v, n, block, &maps, wd,
                           *h);
}
static void cuda_layernorm_backward_bf16in(const zt_backend *be, void *dinp, zt_dtype dinp_dt,
                                           zt_bf16 *dw, zt_bf16 *db, const float *dout,
                                           const zt_bf16 *inp, const zt_bf16 *w,
                                           const float *mean, const float *rstd, int N, int C) {
    zt_cuda_layernorm_backward_bf16in(ST, dinp, dinp_dt, dw, db, dout, inp, w, mean, rstd,
                                      impl_of(be)->colsum, N, C);
}
static void cuda_bf16_from_fp32(const zt_backend *be, zt_bf16 *out, const float *in, size_t n) {
    zt_cuda_bf16_from_fp32(ST, out, in, n);
}
static void cuda_bf16_to_fp32(const zt_backend *be, float *out, const zt_bf16 *in, size_t n) {
    zt_cuda_bf16_to_fp32(ST, out, in, n);
}

#undef BF
#undef ST

static void cuda_describe(const zt_backend *be, char *buf, size_t size) {
    struct cudaDeviceProp p;
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    if (cudaGetDeviceProperties(&p, impl_of(be)->device) != cudaSuccess) p.name[0] = 0;
    snprintf(buf, size, "GPU %d %s (sm_%d%d, %.1f GiB), CUDA runtime %d.%d, cuBLAS%s",
             impl_of(be)->device, p.name, p.major, p.minor, p.totalGlobalMem / 1073741824.0,
             rt / 1000, rt % 1000 / 10, impl_of(be)->tf32 ? " with TF32" : "");
}

static void cuda_write_json(const zt_backend *be, FILE *f) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, impl_of(be)->device) != cudaSuccess) p.name[0] = 0;
    fprintf(f, "{\"backend\":\"cuda\",\"gpu\":%d,\"gpu_name\":\"", impl_of(be)->device);
    for (const char *c = p.name; *c; c++)
        if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) fputc(*c, f);
    fprintf(f, "\",\"tf32\":%s}", impl_of(be)->tf32 ? "true" : "false");
}

static void *cuda_stream(const zt_backend *be) { return (void *)impl_of(be)->stream; }

// Every op of backend_ops.h is cuda_<op> above (one that is missing does not compile).
static const zt_backend_i cuda_ops = {
    .name = "cuda",
    .library = "gpu",
#define ZT_OP(ret, name, ...) .name = cuda_##name,
#include "backend_ops.h"
#undef ZT_OP
};

// ---- open / close ----

static void set_tf32(cuda_impl *c, int on) {
    // CUBLAS_DEFAULT_MATH keeps fp32 GEMMs in full fp32 (no TF32 tensor cores).
    ZT_CHECK_CUBLAS(cublasSetMathMode(c->cublas, on ? CUBLAS_TF32_TENSOR_OP_MATH
                                                    : CUBLAS_DEFAULT_MATH));
    c->tf32 = on;
}

static zt_status cuda_open(zt_backend *be, const zt_backend_options *opt) {
    int device = 0, count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return zt_errorf("--backend cuda: no usable GPU (%s: %s); use --backend cpu",
                         cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (count == 0) return zt_errorf("--backend cuda: this machine has no GPU; use --backend cpu");
    ZT_TRY(zt_backend_pick_device(opt->device, opt->local_rank, count, &device));
    cuda_impl *c = calloc(1, sizeof *c);
    ZT_ASSERTF(c, "out of host memory");
    c->device = device;
    be->impl = c;
    be->ops = &cuda_ops;
    be->caps = &zt_backend_cuda_entry.caps;
    be->threads = 1; // kernels are issued from one host thread
    ZT_CHECK_CUDA(cudaSetDevice(device));
    ZT_CHECK_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    ZT_CHECK_CUBLAS(cublasCreate(&c->cublas));
    ZT_CHECK_CUBLAS(cublasSetStream(c->cublas, c->stream));
    size_t before = zt_mem_current(ZT_MEM_WORKSPACE);
    c->cublas_ws = cuda_alloc_raw(c, ZT_MEM_WORKSPACE, ZT_CUDA_CUBLAS_WORKSPACE);
    ZT_CHECK_CUBLAS(cublasSetWorkspace(c->cublas, c->cublas_ws, ZT_CUDA_CUBLAS_WORKSPACE));
    c->reduce = cuda_alloc_raw(c, ZT_MEM_WORKSPACE, ZT_CUDA_REDUCE_WORK * sizeof(double));
    c->colsum = cuda_alloc_raw(c, ZT_MEM_WORKSPACE, ZT_CUDA_COLSUM_WORK * sizeof(float));
    c->embed = cuda_alloc_raw(c, ZT_MEM_WORKSPACE, ZT_CUDA_EMBED_WORK * sizeof(uint64_t));
    ZT_CHECK_CUBLAS(cublasLtCreate(&c->bf16.lt));
    c->bf16.stream = c->stream;
    c->bf16.embed = c->embed;
    // exactly what caps.fixed_workspace states (the planner counts it)
    ZT_ASSERT(zt_mem_current(ZT_MEM_WORKSPACE) - before == ZT_CUDA_FIXED_WORKSPACE);
    set_tf32(c, opt->tf32);
    for (int i = 0; i < MAP_POOL; i++) {
        ZT_CHECK_CUDA(cudaHostAlloc(&c->pool[i].host, MAP_POOL_BYTES, cudaHostAllocDefault));
        ZT_CHECK_CUDA(cudaEventCreateWithFlags(&c->pool[i].done, cudaEventDisableTiming));
    }
    c->attention = opt->attention;
    ZT_CHECK_CUDA(cudaStreamSynchronize(c->stream));
    return ZT_OK;
}

static void cuda_close(zt_backend *be) {
    cuda_impl *c = be ? impl_of(be) : NULL;
    if (!c) return;
    if (c->stream) cudaStreamSynchronize(c->stream);
    if (c->cublas) cublasDestroy(c->cublas);
    zt_cuda_gemm_mixed_free(&c->bf16);
    if (c->bf16.lt) cublasLtDestroy(c->bf16.lt);
    cuda_free_raw(c, c->reduce);
    for (int i = 0; i < MAP_POOL; i++) {
        if (c->pool[i].host) cudaFreeHost(c->pool[i].host);
        if (c->pool[i].done) cudaEventDestroy(c->pool[i].done);
    }
    cuda_free_raw(c, c->colsum);
    cuda_free_raw(c, c->embed);
    cuda_free_raw(c, c->cublas_ws);
    // a leak is a bug, but not one to end a finished run for: say it, then free them
    if (c->nblocks)
        fprintf(stderr, "zerotrain: warning: the CUDA backend closes with %zu GPU allocations "
                        "never freed (first: %zu bytes of %s)\n",
                c->nblocks, c->blocks[0].bytes, zt_mem_category_name(c->blocks[0].cat));
    while (c->nblocks) cuda_free_raw(c, c->blocks[0].ptr);
    free(c->blocks);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
    be->impl = NULL;
    be->ops = NULL;
}

// The attention's scores go through a workspace of query blocks (launch_math.h);
// gemm_mixed's scratch holds cuBLASLt's workspace and the tiles' converted operands; the
// fixed workspace is what cuda_open allocates (cuBLAS's workspace, the sums', the column
// sums', the embedding backward's).
const zt_backend_entry zt_backend_cuda_entry = {
    .caps = {.name = "cuda", .built = 1, .tf32 = 1, .multi_rank = 1, .device_memory = 1,
             .bf16 = 1, .max_tokens = ZT_EMBED_MAX_TOKENS,
             .gemm_mixed_workspace = ZT_CUDA_GEMM_MIXED_WORKSPACE,
             .attention_workspace = zt_cuda_attention_workspace,
             .fixed_workspace = ZT_CUDA_FIXED_WORKSPACE},
    .open = cuda_open,
    .close = cuda_close,
};
