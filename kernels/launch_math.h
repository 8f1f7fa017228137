// Launch geometry and index arithmetic of the CUDA kernels (kernels/cuda/*.cu), as plain C
// (ZT_HD) so that a host test checks it where there is no GPU (tests/test_cuda.c,
// cuda_launch_math_host): the grids, the part of a range each block or thread owns, how an
// attention block's index maps to (batch, head, row), where q, k, v and their gradients sit
// in a (B, T, 3C) buffer, the shared memory each attention kernel asks for, the embedding
// backward's sort by row, and the cuBLAS arguments that compute a row-major
// product. The kernels and backend_cuda.c call these functions, so what the host test checks
// is what runs.
#ifndef ZT_LAUNCH_MATH_H
#define ZT_LAUNCH_MATH_H
#include <stddef.h>
#include <stdint.h>

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

// ---- attention on cuBLAS (attention_gemm_cuda.cu): query blocks of (batch, head) pairs ----
// Pairs p = b NH + h go in chunks of up to ZT_ATT_PAIRS; a chunk's query rows in blocks of
// ZT_ATT_QBLOCK. Block [i0, i1) of pair g of the chunk holds its scores against the causal
// keys [0, i1) at score buffer + g ZT_ATT_QBLOCK T, row r at + r T (ld T). Each GEMM runs
// over the whole chunk as one cublasSgemmBatched call with pointer arrays, which a kernel
// fills on the device from zt_att_operand_at. Issue 25's GPU estimate chose the sizes:
// 128 rows compute 12% more scores than the causal half at T = 1024 (256: 25%), and 64 pairs
// keep a GEMM at ~600 MFLOP (well above the launch cost) in 64 MiB of scores at T = 1024.
#define ZT_ATT_QBLOCK 128
#define ZT_ATT_PAIRS 64

// Query blocks of a sequence of T: ceil(T / ZT_ATT_QBLOCK); block qb's rows start at
// qb ZT_ATT_QBLOCK, the last block is short; the pairs of the chunk from pair p0.
static inline ZT_HD int zt_att_qblocks(int T) { return (T + ZT_ATT_QBLOCK - 1) / ZT_ATT_QBLOCK; }
static inline ZT_HD int zt_att_block_rows(int qb, int T) {
    int left = T - qb * ZT_ATT_QBLOCK;
    return left < ZT_ATT_QBLOCK ? left : ZT_ATT_QBLOCK;
}
static inline ZT_HD int zt_att_chunk_pairs(int p0, int pairs) {
    return pairs - p0 < ZT_ATT_PAIRS ? pairs - p0 : ZT_ATT_PAIRS;
}

// The operands a batched GEMM takes per pair. A launcher lists the arrays it needs (a base
// and a kind each); array a for query block qb sits at (a zt_att_qblocks(T) + qb)
// ZT_ATT_PAIRS in the pointer area, one pointer per pair of the chunk.
// Q, K, V: slices of a (B, T, 3C) buffer (qkv or dqkv), rows 3C apart, Q from row i0;
// O: a (B, T, C) buffer (out or dout) from row i0; S: a score buffer (scores, dP).
typedef enum { ZT_ATT_OP_Q, ZT_ATT_OP_K, ZT_ATT_OP_V, ZT_ATT_OP_O, ZT_ATT_OP_S } zt_att_op;
#define ZT_ATT_MAX_ARRAYS 9 // the backward's: Q K V dQ dK dV dO S dP

// Offset in a score buffer of row r of pair g of the chunk (ld T).
static inline ZT_HD size_t zt_att_score_at(int g, int r, int T) {
    return ((size_t)g * ZT_ATT_QBLOCK + r) * (size_t)T;
}

// Offset in floats, from its buffer's base, of operand `kind` of pair p for query block qb.
static inline ZT_HD size_t zt_att_operand_at(zt_att_op kind, int p, int g, int qb, int T, int C,
                                             int NH) {
    int b = p / NH, h = p % NH, hs = C / NH, i0 = qb * ZT_ATT_QBLOCK;
    switch (kind) {
    case ZT_ATT_OP_Q: return zt_qkv_at(b, i0, 0, h, T, C, hs);
    case ZT_ATT_OP_K: return zt_qkv_at(b, 0, 1, h, T, C, hs);
    case ZT_ATT_OP_V: return zt_qkv_at(b, 0, 2, h, T, C, hs);
    case ZT_ATT_OP_O: return zt_btc_at(b, i0, h, T, C, hs);
    default: return zt_att_score_at(g, 0, T);
    }
}

// Floats of the blocked attention's workspace for sequences of T (zt_backend_caps'
// attention_workspace; `threads` does not matter on a GPU): two score buffers (scores or P;
// dP or dS) of ZT_ATT_PAIRS x ZT_ATT_QBLOCK x T, then the pointer arrays (two floats a
// pointer, 8-byte aligned since the buffers are an even number of floats). T = 1024: 16.8 M
// floats (64 MiB), shared by every layer.
static inline ZT_HD size_t zt_att_scores_floats(int T) {
    return (size_t)ZT_ATT_PAIRS * ZT_ATT_QBLOCK * (size_t)T;
}
static inline ZT_HD size_t zt_att_pointers(int T) {
    return (size_t)ZT_ATT_MAX_ARRAYS * zt_att_qblocks(T) * ZT_ATT_PAIRS;
}
static inline size_t zt_cuda_attention_workspace(int threads, int T) {
    (void)threads;
    return 2 * zt_att_scores_floats(T) + 2 * zt_att_pointers(T);
}

// ---- column sums (colsum_cuda.cuh: bias gradients, LayerNorm's dw and db) ----
// Columns go in tiles of ZT_COL_TILE; a tile's rows are split into zt_col_chunks(N, nc)
// chunks (chunk k: zt_piece_int(N, k, chunks)), a thread per (column, chunk) sums its chunk's
// rows in order into a partial, then a warp per column adds the partials onto the output
// (lane l chunks l, l + 32, ... in order, the lanes in a fixed tree). The chunks depend only
// on N and the tile's width, so the sums do not depend on the GPU. As many chunks as the
// scratch holds partials for (ZT_COL_PARTIALS per output: 64 chunks of a whole tile), so
// every tile runs about 2^18 threads, what an H100's 132 SMs hold at once (at C = 768: 341
// chunks, where a fixed 64 left the GPU mostly idle: docs/design.md, "Column sums"); at most
// one a ZT_COL_MIN_ROWS rows (few rows: few chunks) and at most ZT_COL_MAX_CHUNKS (a grid's y
// extent).
#define ZT_COL_TILE 4096
#define ZT_COL_PARTIALS (64 * ZT_COL_TILE)
#define ZT_COL_MIN_ROWS 16
#define ZT_COL_MAX_CHUNKS 4096
#define ZT_CUDA_COLSUM_WORK ((size_t)2 * ZT_COL_PARTIALS)

// The chunks of N rows for a tile of nc columns (1 <= nc <= ZT_COL_TILE).
static inline ZT_HD int zt_col_chunks(int N, int nc) {
    int fit = ZT_COL_PARTIALS / nc, by_rows = N / ZT_COL_MIN_ROWS;
    int k = fit < by_rows ? fit : by_rows;
    k = k < ZT_COL_MAX_CHUNKS ? k : ZT_COL_MAX_CHUNKS;
    return k > 1 ? k : 1;
}

// Offset in the scratch of partial j (0, 1) of chunk k for column c of a tile of nc columns
// in `chunks` chunks.
static inline ZT_HD size_t zt_col_partial_at(int j, int k, int c, int chunks, int nc) {
    return ((size_t)j * chunks + k) * nc + (size_t)c;
}

// ---- LayerNorm rows (layernorm_cuda.cu): a warp per row ----
#define ZT_LN_WARPS 8 // rows per block of 256 threads

// Blocks for N rows: warp w of the grid takes row w (the last block's extra warps none).
static inline ZT_HD unsigned zt_ln_blocks(int N) { return zt_grid_for((size_t)N, ZT_LN_WARPS); }

// ---- cross entropy (crossentropy_cuda.cu): a block per row ----
// The row's threads take groups of W consecutive columns (W = 16 bytes of the logits' type
// where the row length allows, else 1), thread t groups t, t + ZT_CE_THREADS, ...: the
// statistics the groups holding the n_valid real columns, the gradient the groups of the whole
// row (the padding's gradient 0).
#define ZT_CE_THREADS 256
// Groups of W columns that hold the first n: ceil(n / W).
static inline ZT_HD int zt_ce_groups(int n, int W) { return (n + W - 1) / W; }

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

// ---- the embedding backward (encoder_cuda.cu, bf16_cuda.cu): tokens grouped by row ----
// A wte row's gradient takes its tokens in token order, as the CPU ops (encoder_cpu.c): fp32
// adds them into the row one by one; bf16 sums them in fp32 from the widened row and rounds
// once. The GPU groups the batch's N tokens by row once, for both dtypes: unique keys (row,
// token index) merge-sorted on the device, then a block per key, where a row's run starts,
// sums the run in order (zt_embed_run_add) and stores it as its dtype does. The positions'
// gradient needs no grouping: position p's tokens are p, p + T, ... (zt_embed_pos_add).
//
// Why the sort and not the buckets fp32 had (N tokens, V rows in the vocabulary slice;
// GPT-2: N = 16K, V = 50K, P = ceil(log2 N) = 14):
//   buckets: count (N atomics), a one-block scan of V counters, scatter (N atomics, any
//     order), rank each token among its bucket (the sum of the squared bucket sizes: N^2 =
//     2.7e8 reads when one token fills the batch), then V blocks: a memset and 5 launches;
//     scratch 4 (2 V + 2 N) bytes, bounded in both, so a one-thread-per-channel kernel
//     (every token read C times) took the calls past it: two paths to keep bit-identical.
//   sort: keys, P merge passes of N binary searches (N P (P + 1) / 2 = 1.7M key reads
//     whatever the repeats), then N blocks, the non-starts returning at once: P + 2
//     launches; scratch 16 N bytes whatever V, no atomics, one path.
// (Grouping on the host would need the device's tokens copied back and waited for
// mid-backward.)
// The scratch (ZT_CUDA_EMBED_WORK keys, 16 MiB) is the backend's, allocated at open; a
// micro-batch of more than ZT_EMBED_MAX_TOKENS tokens is refused before the run starts
// (caps.max_tokens), as a status.
#define ZT_EMBED_MAX_TOKENS (1 << 20)
#define ZT_CUDA_EMBED_WORK (2 * (size_t)ZT_EMBED_MAX_TOKENS) // keys (uint64_t): two buffers

// A token's sort key: its row in the vocabulary slice in the high 32 bits (ZT_EMBED_OUTSIDE,
// past every row, for a token outside the slice), its index in the batch in the low ones.
// The keys are unique, so they have one sorted order whatever the schedule: by row, then
// token index, the CPU's (encoder_cpu.c).
#define ZT_EMBED_OUTSIDE 0xffffffffu
static inline ZT_HD uint64_t zt_embed_key(int32_t token, int vocab_lo, int vocab_rows, int n) {
    int64_t row = (int64_t)token - vocab_lo;
    uint32_t r = row >= 0 && row < vocab_rows ? (uint32_t)row : ZT_EMBED_OUTSIDE;
    return (uint64_t)r << 32 | (uint32_t)n;
}
static inline ZT_HD uint32_t zt_embed_key_row(uint64_t key) { return (uint32_t)(key >> 32); }
static inline ZT_HD int zt_embed_key_token(uint64_t key) { return (int)(uint32_t)key; }

// The merge sort's passes over n keys: ceil(log2 n); pass p merges runs of 2^p pairwise.
static inline ZT_HD int zt_merge_passes(size_t n) {
    int p = 0;
    while (((size_t)1 << p) < n) p++;
    return p;
}

// Where one merge pass moves key i of n (runs of `width` sorted keys, merged pairwise): the
// pair's start, plus its place in its own run, plus the keys of the sibling run (run ^ 1)
// below it (a binary search). The keys are unique, so both runs agree on every comparison
// and the places are a permutation; a last run with no sibling stays where it is.
static inline ZT_HD size_t zt_merge_dest(const uint64_t *keys, size_t n, size_t i,
                                          size_t width) {
    size_t run = i / width, pair = (run & ~(size_t)1) * width;
    size_t s = (run ^ 1) * width < n ? (run ^ 1) * width : n;
    size_t lo = s, hi = s + width < n ? s + width : n;
    uint64_t k = keys[i];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k) lo = mid + 1;
        else hi = mid;
    }
    return pair + (i - run * width) + (lo - s);
}

// In n sorted keys: whether key i starts a row's run (and the row is in the slice), and the
// end of the run that starts at i.
static inline ZT_HD int zt_embed_run_start(const uint64_t *keys, size_t i) {
    uint32_t r = zt_embed_key_row(keys[i]);
    return r != ZT_EMBED_OUTSIDE && (i == 0 || zt_embed_key_row(keys[i - 1]) != r);
}
static inline ZT_HD size_t zt_embed_run_end(const uint64_t *keys, size_t n, size_t i) {
    uint32_t r = zt_embed_key_row(keys[i]);
    size_t e = i + 1;
    while (e < n && zt_embed_key_row(keys[e]) == r) e++;
    return e;
}
// acc plus channel c of the gradients of the run's tokens [i, end), in sorted (token) order.
static inline ZT_HD float zt_embed_run_add(float acc, const float *dout, const uint64_t *keys,
                                           size_t i, size_t end, int C, int c) {
    for (size_t k = i; k < end; k++) acc += dout[(size_t)zt_embed_key_token(keys[k]) * C + c];
    return acc;
}
// acc plus channel c of the gradients of position p's tokens p, p + T, ... below N, in order.
static inline ZT_HD float zt_embed_pos_add(float acc, const float *dout, int p, int N, int T,
                                           int C, int c) {
    for (size_t n = (size_t)p; n < (size_t)N; n += (size_t)T) acc += dout[n * C + c];
    return acc;
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

// ---- the CUDA backend's own buffers, allocated once at open (workspace) ----
// Here, as plain C, so that the backend allocates from these constants and states their sum
// in its caps (caps.fixed_workspace) in a build with or without CUDA: the planner counts
// what a CUDA run allocates, and the two cannot drift.
// cuBLAS's workspace, given to it at open so it allocates none in the step: 32 MiB is what
// cuBLAS documents as enough for Hopper.
#define ZT_CUDA_CUBLAS_WORKSPACE ((size_t)32 << 20)
// The sums' scratch (zt_cuda_reduce, kernels_cuda.h): two results, then each block's two
// partial results, in double.
#define ZT_CUDA_REDUCE_BLOCKS 256
#define ZT_CUDA_REDUCE_WORK (2 + 2 * ZT_CUDA_REDUCE_BLOCKS)
// Their sum, with the column sums' partials and the embedding backward's buckets (above), in
// bytes: what opening the CUDA backend adds to the allocator's workspace.
#define ZT_CUDA_FIXED_WORKSPACE                                                              \
    (ZT_CUDA_CUBLAS_WORKSPACE + ZT_CUDA_REDUCE_WORK * sizeof(double) +                       \
     ZT_CUDA_COLSUM_WORK * sizeof(float) + ZT_CUDA_EMBED_WORK * sizeof(uint64_t))

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
// bytes a value; each part starts `align` bytes aligned (cuBLASLt's operands: 256), and each
// side of a part is counted rounded up to a multiple of `pad` values, so a piece may be
// stored with its rows padded (the GPU's: 16-byte rows, whatever its width; 1: packed).
typedef struct {
    int c32, copy_a, copy_b;
    size_t elem, align, pad;
} zt_gemm_scratch;

typedef struct {
    int mt, nt, kt; // the largest tile of C and chunk of K (kt 0: no tile fits)
} zt_gemm_tiles;

static inline ZT_HD size_t zt_align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Values of a (rows, cols) part with both sides padded to s->pad: room for it stored either
// way round (a transposed operand's piece) with padded rows.
static inline ZT_HD size_t zt_gemm_part_values(int rows, int cols, const zt_gemm_scratch *s) {
    return zt_align_up((size_t)rows, s->pad) * zt_align_up((size_t)cols, s->pad);
}

// Bytes of each part: the fp32 C tile, op(A)'s piece, op(B)'s piece (0 where not kept).
static inline ZT_HD size_t zt_gemm_part_c(zt_gemm_tiles t, const zt_gemm_scratch *s) {
    return s->c32 ? zt_align_up(zt_gemm_part_values(t.mt, t.nt, s) * sizeof(float), s->align)
                  : 0;
}
static inline ZT_HD size_t zt_gemm_part_a(zt_gemm_tiles t, const zt_gemm_scratch *s) {
    return s->copy_a ? zt_align_up(zt_gemm_part_values(t.mt, t.kt, s) * s->elem, s->align) : 0;
}
static inline ZT_HD size_t zt_gemm_part_b(zt_gemm_tiles t, const zt_gemm_scratch *s) {
    return s->copy_b ? zt_align_up(zt_gemm_part_values(t.kt, t.nt, s) * s->elem, s->align) : 0;
}
static inline ZT_HD size_t zt_gemm_tile_bytes(zt_gemm_tiles t, const zt_gemm_scratch *s) {
    return zt_gemm_part_c(t, s) + zt_gemm_part_a(t, s) + zt_gemm_part_b(t, s);
}

// The largest tiles that fit `bytes` (both backends' plan): the whole of C and
// K in balanced chunks of at most k_chunk (k_chunk >= K: one chunk), then the longer side of the tile halved (then the
// chunk) until the scratch holds it: square-ish tiles convert the fewest values again.
static inline ZT_HD zt_gemm_tiles zt_gemm_plan_tiles(int M, int N, int K, int k_chunk,
                                                      const zt_gemm_scratch *s, size_t bytes) {
    int chunks = k_chunk > 0 ? (K + k_chunk - 1) / k_chunk : 0;
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
