// Token + position embedding on the GPU, forward and backward (vocab-parallel aware, as
// encoder_cpu.c). The backward buckets the tokens by dwte row and adds each row's tokens in
// token order, a block per row (launch_math.h, "the embedding backward"): the CPU's sums, bit
// for bit, without one thread per channel walking every token.
#include "cuda_check.h"
#include "kernels_cuda.h"
#include "launch_math.h"

static __global__ void encoder_forward_kernel(float *out, const int32_t *tokens, const float *wte,
                                              const float *wpe, int vocab_lo, int vocab_rows,
                                              int N, int T, int C) {
    size_t total = (size_t)N * C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int n = (int)(i / C), c = (int)(i % C);
        int row = tokens[n] - vocab_lo;
        float e = row >= 0 && row < vocab_rows ? wte[(size_t)row * C + c] : 0.0f;
        float p = wpe ? wpe[(size_t)(n % T) * C + c] : 0.0f;
        out[i] = e + p;
    }
}

// The fallback for calls beyond the bucket scratch: one thread per channel, tokens in
// order (the CPU's order, so bit for bit the same; deterministic).
static __global__ void encoder_backward_kernel(float *dwte, float *dwpe, const float *dout,
                                               const int32_t *tokens, int vocab_lo,
                                               int vocab_rows, int N, int T, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int n = 0; n < N; n++) {
        float d = dout[(size_t)n * C + c];
        int row = tokens[n] - vocab_lo;
        if (row >= 0 && row < vocab_rows) dwte[(size_t)row * C + c] += d;
        if (dwpe) dwpe[(size_t)(n % T) * C + c] += d;
    }
}

// ---- the bucketed backward (launch_math.h, "the embedding backward") ----

// The dwte row of token n, or -1 outside this slice.
static __device__ inline int enc_row(const int32_t *tokens, int n, int vocab_lo, int vocab_rows) {
    int row = tokens[n] - vocab_lo;
    return row >= 0 && row < vocab_rows ? row : -1;
}

static __global__ void enc_count_kernel(int *count, const int32_t *tokens, int vocab_lo,
                                        int vocab_rows, int N) {
    int n = blockIdx.x * blockDim.x + threadIdx.x, row;
    if (n < N && (row = enc_row(tokens, n, vocab_lo, vocab_rows)) >= 0) atomicAdd(&count[row], 1);
}

// One block: off[r] = sum of count[0, r) (off[rows] the total), cursor = off. Each thread
// sums a contiguous piece, thread 0 scans the pieces' sums, each thread writes its piece.
static __global__ void enc_scan_kernel(int *off, int *cursor, const int *count, int rows) {
    __shared__ int base[ZT_ENC_SCAN_THREADS];
    int lo, hi, s = 0;
    zt_piece_int(rows, threadIdx.x, blockDim.x, &lo, &hi);
    for (int r = lo; r < hi; r++) s += count[r];
    base[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        int acc = 0;
        for (int t = 0; t < (int)blockDim.x; t++) {
            int v = base[t];
            base[t] = acc;
            acc += v;
        }
        off[rows] = acc;
    }
    __syncthreads();
    s = base[threadIdx.x];
    for (int r = lo; r < hi; r++) {
        int c = count[r]; // before off[r] is written: off may be count itself
        off[r] = cursor[r] = s;
        s += c;
    }
}

static __global__ void enc_scatter_kernel(int *idx, int *cursor, const int32_t *tokens,
                                          int vocab_lo, int vocab_rows, int N) {
    int n = blockIdx.x * blockDim.x + threadIdx.x, row;
    if (n < N && (row = enc_row(tokens, n, vocab_lo, vocab_rows)) >= 0)
        idx[atomicAdd(&cursor[row], 1)] = n;
}

// sorted: each bucket's indices in increasing order (whatever order the scatter left).
static __global__ void enc_rank_kernel(int *sorted, const int *idx, const int *off,
                                       const int32_t *tokens, int vocab_lo, int vocab_rows,
                                       int N) {
    int n = blockIdx.x * blockDim.x + threadIdx.x, row;
    if (n < N && (row = enc_row(tokens, n, vocab_lo, vocab_rows)) >= 0)
        sorted[off[row] + zt_enc_rank(idx, off[row], off[row + 1], n)] = n;
}

// Block r: dwte row r += its tokens' gradient rows, in token order.
static __global__ void enc_dwte_kernel(float *dwte, const float *dout, const int *sorted,
                                       const int *off, int C) {
    int r = blockIdx.x, lo = off[r], hi = off[r + 1];
    for (int c = threadIdx.x; c < C && lo < hi; c += blockDim.x) {
        float s = dwte[(size_t)r * C + c];
        for (int k = lo; k < hi; k++) s += dout[(size_t)sorted[k] * C + c];
        dwte[(size_t)r * C + c] = s;
    }
}

// dwpe (T, C) += dout rows n = t, t + T, ... in order: a thread per (t, c).
static __global__ void enc_dwpe_kernel(float *dwpe, const float *dout, int N, int T, int C) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    float s = dwpe[i];
    for (size_t n = i / C; n < (size_t)N; n += T) s += dout[n * C + i % C];
    dwpe[i] = s;
}

extern "C" void zt_cuda_encoder_forward(cudaStream_t st, float *out, const int32_t *tokens,
                                        const float *wte, const float *wpe, int vocab_lo,
                                        int vocab_rows, int N, int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0);
    if (!N) return;
    unsigned g = zt_grid_stride((size_t)N * C, ZT_CUDA_THREADS);
    encoder_forward_kernel<<<g, ZT_CUDA_THREADS, 0, st>>>(out, tokens, wte, wpe, vocab_lo,
                                                          vocab_rows, N, T, C);
    ZT_CUDA_LAUNCHED(st, "encoder_forward");
}

// work: ZT_CUDA_ENC_WORK ints: count/off (rows + 1), cursor (rows + 1), idx, sorted (N each).
static void encoder_backward_bucketed(cudaStream_t st, float *dwte, const float *dout,
                                      const int32_t *tokens, int *work, int vocab_lo,
                                      int vocab_rows, int N, int C) {
    int *count = work, *cursor = work + ZT_ENC_MAX_ROWS + 1;
    int *idx = cursor + ZT_ENC_MAX_ROWS + 1, *sorted = idx + ZT_ENC_MAX_TOKENS;
    unsigned gn = zt_grid_for((size_t)N, ZT_CUDA_THREADS);
    ZT_CHECK_CUDA(cudaMemsetAsync(count, 0, ((size_t)vocab_rows + 1) * sizeof(int), st));
    enc_count_kernel<<<gn, ZT_CUDA_THREADS, 0, st>>>(count, tokens, vocab_lo, vocab_rows, N);
    ZT_CUDA_LAUNCHED(st, "encoder_backward_count");
    // offsets in place of the counts: the scan reads a piece's counts before writing them
    enc_scan_kernel<<<1, ZT_ENC_SCAN_THREADS, 0, st>>>(count, cursor, count, vocab_rows);
    ZT_CUDA_LAUNCHED(st, "encoder_backward_scan");
    enc_scatter_kernel<<<gn, ZT_CUDA_THREADS, 0, st>>>(idx, cursor, tokens, vocab_lo,
                                                       vocab_rows, N);
    ZT_CUDA_LAUNCHED(st, "encoder_backward_scatter");
    enc_rank_kernel<<<gn, ZT_CUDA_THREADS, 0, st>>>(sorted, idx, count, tokens, vocab_lo,
                                                    vocab_rows, N);
    ZT_CUDA_LAUNCHED(st, "encoder_backward_rank");
    enc_dwte_kernel<<<vocab_rows, ZT_CUDA_THREADS, 0, st>>>(dwte, dout, sorted, count, C);
    ZT_CUDA_LAUNCHED(st, "encoder_backward_dwte");
}

extern "C" void zt_cuda_encoder_backward(cudaStream_t st, float *dwte, float *dwpe,
                                         const float *dout, const int32_t *tokens, int *work,
                                         int vocab_lo, int vocab_rows, int N, int T, int C) {
    ZT_ASSERT(N >= 0 && T > 0 && C > 0 && vocab_rows >= 0);
    if (!N) return;
    if (vocab_rows > ZT_ENC_MAX_ROWS || N > ZT_ENC_MAX_TOKENS) { // beyond the scratch
        encoder_backward_kernel<<<ZT_CUDA_GRID(C), ZT_CUDA_THREADS, 0, st>>>(
            dwte, dwpe, dout, tokens, vocab_lo, vocab_rows, N, T, C);
        ZT_CUDA_LAUNCHED(st, "encoder_backward");
        return;
    }
    if (vocab_rows) encoder_backward_bucketed(st, dwte, dout, tokens, work, vocab_lo, vocab_rows,
                                              N, C);
    if (dwpe) {
        enc_dwpe_kernel<<<ZT_CUDA_GRID((size_t)T * C), ZT_CUDA_THREADS, 0, st>>>(dwpe, dout, N, T,
                                                                               C);
        ZT_CUDA_LAUNCHED(st, "encoder_backward_dwpe");
    }
}
