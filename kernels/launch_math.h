// Launch geometry and index arithmetic of the CUDA kernels (kernels/cuda/*.cu), as plain C
// (ZT_HD) so that a host test checks it where there is no GPU (tests/test_cuda.c,
// cuda_launch_math_host): the grids, the part of a range each block or thread owns, how an
// attention block's index maps to (batch, head, row), where q, k, v and their gradients sit
// in a (B, T, 3C) buffer, the shared memory each attention kernel asks for, and the cuBLAS
// arguments that compute a row-major product. The kernels and backend_cuda.c call these
// functions, so what the host test checks is what runs.
#ifndef ZT_LAUNCH_MATH_H
#define ZT_LAUNCH_MATH_H
#include <stddef.h>

#include "zt_hd.h"

// ---- grids ----

// Threads per block of the one-thread-per-element kernels.
#define ZT_CUDA_THREADS 256
// The largest grid of the grid-stride kernels (blocks of ZT_CUDA_THREADS): more blocks than
// any GPU holds at once, so capping there costs nothing, and the loops do the rest.
#define ZT_CUDA_MAX_GRID (65535u * 8u)

// Blocks of `threads` for n items one per thread: ceil(n / threads); 0 for n == 0.
static inline ZT_HD unsigned zt_grid_for(size_t n, unsigned threads) {
    return (unsigned)((n + threads - 1) / threads);
}
#define ZT_CUDA_GRID(n) zt_grid_for((size_t)(n), ZT_CUDA_THREADS)

// The grid of a grid-stride loop over n items in blocks of `threads`: one item per thread
// up to ZT_CUDA_MAX_GRID blocks, and at least one block.
static inline ZT_HD unsigned zt_grid_stride(size_t n, unsigned threads) {
    unsigned g = zt_grid_for(n, threads);
    return g < ZT_CUDA_MAX_GRID ? (g ? g : 1u) : ZT_CUDA_MAX_GRID;
}

// ---- pieces of a range ----

// The contiguous piece [lo, hi) of [0, n) that part t of nt owns: ceil(n / nt) items each,
// the last pieces shorter or empty (lo = hi = n). Pieces, not a stride, so that the shared
// row functions (softmax_math.h) run on plain arrays. The int form is the threads' of a
// block over a row (32-bit division on the GPU), the size_t one the blocks' of a sum.
static inline ZT_HD void zt_piece(size_t n, size_t t, size_t nt, size_t *lo, size_t *hi) {
    size_t per = (n + nt - 1) / nt;
    *lo = t * per < n ? t * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}
static inline ZT_HD void zt_piece_int(int n, int t, int nt, int *lo, int *hi) {
    int per = (n + nt - 1) / nt;
    *lo = t * per < n ? t * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}

// The grid of the double-precision sums (optim_cuda.cu's zt_cuda_reduce): `max_blocks`
// blocks of `threads`, fewer where n has fewer than one item per thread, at least one (n = 0
// writes zeros); block b then sums zt_piece(n, b, blocks).
static inline ZT_HD unsigned zt_reduce_blocks(size_t n, unsigned max_blocks, unsigned threads) {
    unsigned nb = max_blocks;
    if (n < (size_t)nb * threads) nb = zt_grid_for(n, threads);
    return nb ? nb : 1u;
}

// ---- attention (attention_cuda.cu): one block per (batch, head, row) ----

// Dynamic shared memory an attention block may ask for: 48 KiB without opting in to more
// (cudaFuncSetAttribute), less the block reduction's 4 KiB of static shared memory.
#define ZT_ATT_SHARED_MAX (44 * 1024)

typedef struct {
    int b, h, i; // batch, head, row (a query row, or a key row in the kv kernel)
} zt_att_row;

// Blocks run over (b, h) pairs in order, T rows each: block = (b NH + h) T + i.
static inline ZT_HD zt_att_row zt_att_row_of(unsigned block, int T, int NH) {
    int bh = (int)(block / (unsigned)T);
    zt_att_row r = {bh / NH, bh % NH, (int)(block % (unsigned)T)};
    return r;
}

// Offset in a (B, T, 3C) qkv or dqkv buffer of head h's slice of part `which` (0 q, 1 k,
// 2 v) of row (b, t): q, k, v of head h at h hs, C + h hs and 2C + h hs of the row.
static inline ZT_HD size_t zt_qkv_at(int b, int t, int which, int h, int T, int C, int hs) {
    return ((size_t)b * T + t) * 3 * C + (size_t)(which * C + h * hs); // a row fits an int
}

// Offset in a (B, T, C) buffer (the output and its gradient) of head h's slice of row (b, t).
static inline ZT_HD size_t zt_btc_at(int b, int t, int h, int T, int C, int hs) {
    return ((size_t)b * T + t) * C + (size_t)(h * hs);
}

// Index in the (B, NH, T) log-sum-exp of row i of head h of batch b.
static inline ZT_HD size_t zt_lse_at(int b, int h, int i, int T, int NH) {
    return ((size_t)b * NH + h) * T + i;
}

// Dynamic shared memory of each attention kernel, in bytes, for T positions and head size hs:
// forward: the row's T scores and q (hs); backward rowsum: q and dO; kv: k, v, and P and dS
// for up to T rows; q: q, dO and dS for up to T keys.
static inline ZT_HD size_t zt_att_shared_forward(int T, int hs) {
    return (size_t)(T + hs) * sizeof(float);
}
static inline ZT_HD size_t zt_att_shared_rowsum(int hs) { return (size_t)2 * hs * sizeof(float); }
static inline ZT_HD size_t zt_att_shared_kv(int T, int hs) {
    return (size_t)(2 * hs + 2 * T) * sizeof(float);
}
static inline ZT_HD size_t zt_att_shared_q(int T, int hs) {
    return (size_t)(2 * hs + T) * sizeof(float);
}

// ---- 8-bit AdamW (optim_cuda.cu): one block per quantization block ----

// Threads per quantization block, and the values each thread holds: thread t takes values
// t + k ZT_Q8_THREADS, k < ZT_Q8_PER_THREAD, which covers blocks of up to ZT_Q8_MAX_BLOCK
// (quant8_math.h) values exactly when ZT_Q8_THREADS divides it.
#define ZT_Q8_THREADS 256
#define ZT_Q8_PER_THREAD(max_block) (((max_block) + ZT_Q8_THREADS - 1) / ZT_Q8_THREADS)

// Values in quantization block j of n values in blocks of `block`: the last one is short.
static inline ZT_HD int zt_q8_block_len(size_t n, size_t j, int block) {
    size_t s = j * (size_t)block;
    return (int)(n - s < (size_t)block ? n - s : (size_t)block);
}

// ---- cuBLAS ----

// Row-major C (M, N) = op(A) op(B) is column-major C^T (N, M) = op(B)^T op(A)^T: the same
// buffers with the operands swapped and M, N swapped; each operand keeps its transpose flag
// and leading dimension. The arguments of the column-major call (cublasSgemm's order:
// transa, transb, m, n, k, A, lda, B, ldb).
typedef struct {
    int trans_first, trans_second; // 1: transpose (CUBLAS_OP_T), 0: CUBLAS_OP_N
    int m, n, k;
    const float *first, *second;
    int ld_first, ld_second;
} zt_col_major_gemm;

static inline ZT_HD zt_col_major_gemm zt_gemm_row_to_col(int trans_a, int trans_b, int M, int N,
                                                          int K, const float *A, int lda,
                                                          const float *B, int ldb) {
    zt_col_major_gemm g = {trans_b, trans_a, N, M, K, B, A, ldb, lda};
    return g;
}

// ---- gemm_mixed (gemm_lt_cuda.c, and the CPU's gemm_mixed_cpu.c): tiles of C, chunks of
// K, operand pieces in scratch ----

// gemm_mixed's scratch (caps.gemm_mixed_workspace: the model carves it, the planner counts
// it; here so that a build without CUDA states the same caps): cuBLASLt's workspace (32 MiB,
// what cuBLAS documents for Hopper), then 32 MiB for a tile's converted operands and fp32 C.
#define ZT_CUDA_LT_WORKSPACE ((size_t)32 << 20)
#define ZT_CUDA_GEMM_MIXED_WORKSPACE (ZT_CUDA_LT_WORKSPACE + ((size_t)32 << 20))

// K chunks of at most this many (balanced: K = 3072 is 3 x 1024). Chunks cost only one more
// pass over the fp32 C tile each, and keep the operand tiles, and so the scratch a tile of C
// needs, independent of K (a weight gradient's K is the micro-batch's tokens).
#define ZT_GEMM_MIXED_K_CHUNK 1024

// Offset in a stored row-major X (leading dimension ld) of op(X)'s element (r, c): op(X) = X,
// or X^T when trans (the stored coordinates swap).
static inline ZT_HD size_t zt_op_at(int trans, int r, int c, int ld) {
    return trans ? (size_t)c * ld + r : (size_t)r * ld + c;
}

// Offset of element i of a (rows, cols) sub-matrix read row by row, in a row-major matrix
// with leading dimension ld (the conversion kernels' one thread per element).
static inline ZT_HD size_t zt_sub_at(size_t i, int cols, int ld) {
    return i / (size_t)cols * ld + i % (size_t)cols;
}

// What a tile of gemm_mixed keeps in scratch: a bf16 C's tile in fp32 (c32), and op(A)'s
// (mt, kt) and op(B)'s (kt, nt) pieces where an operand is converted (copy_a, copy_b), `elem`
// bytes a value; each part starts `align` bytes aligned (cuBLASLt's operands: 256).
typedef struct {
    int c32, copy_a, copy_b;
    size_t elem, align;
} zt_gemm_scratch;

typedef struct {
    int mt, nt, kt; // the largest tile of C and chunk of K (kt 0: no tile fits)
} zt_gemm_tiles;

static inline ZT_HD size_t zt_align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Bytes of each part: the fp32 C tile, op(A)'s piece, op(B)'s piece (0 where not kept).
static inline ZT_HD size_t zt_gemm_part_c(zt_gemm_tiles t, const zt_gemm_scratch *s) {
    return s->c32 ? zt_align_up((size_t)t.mt * t.nt * sizeof(float), s->align) : 0;
}
static inline ZT_HD size_t zt_gemm_part_a(zt_gemm_tiles t, const zt_gemm_scratch *s) {
    return s->copy_a ? zt_align_up((size_t)t.mt * t.kt * s->elem, s->align) : 0;
}
static inline ZT_HD size_t zt_gemm_part_b(zt_gemm_tiles t, const zt_gemm_scratch *s) {
    return s->copy_b ? zt_align_up((size_t)t.kt * t.nt * s->elem, s->align) : 0;
}
static inline ZT_HD size_t zt_gemm_tile_bytes(zt_gemm_tiles t, const zt_gemm_scratch *s) {
    return zt_gemm_part_c(t, s) + zt_gemm_part_a(t, s) + zt_gemm_part_b(t, s);
}

// The largest tiles that fit `bytes` (both backends' plan): the whole of C and
// K in balanced chunks of at most k_chunk, then the longer side of the tile halved (then the
// chunk) until the scratch holds it: square-ish tiles convert the fewest values again.
static inline ZT_HD zt_gemm_tiles zt_gemm_plan_tiles(int M, int N, int K, int k_chunk,
                                                      const zt_gemm_scratch *s, size_t bytes) {
    int chunks = (K + k_chunk - 1) / k_chunk;
    zt_gemm_tiles t = {M, N, chunks ? (K + chunks - 1) / chunks : 0};
    while (zt_gemm_tile_bytes(t, s) > bytes) {
        int *longer = t.mt >= t.nt ? &t.mt : &t.nt;
        if (*longer > 1) *longer = (*longer + 1) / 2;
        else if (t.kt > 1) t.kt = (t.kt + 1) / 2;
        else {
            t.kt = 0;
            break;
        }
    }
    return t;
}
#endif
