// Matrix products through BLAS (OpenBLAS, OpenMP build: it shares our thread pool).
//
// Long products (the lm-head's 50304 columns, the MLP's 3072) are cut into tiles of
// whole rows or columns of C that the threads take dynamically, each tile one
// single-threaded BLAS call (OpenBLAS runs single-threaded inside a parallel region).
// OpenBLAS's own threading splits a product statically and synchronizes its threads
// per block, so a thread the OS preempts (another process on the machine) stalls the
// others; with dynamic tiles the running thread takes its work. Each tile packs the
// other operand again, which costs ~34/width of the product's time on this machine
// (8 tiles of 384 columns: 6-9% slower on an idle machine), so tiles are at least
// ZT_GEMM_TILE_MIN wide and shorter products stay with BLAS's threading.
// Measured on 2 shared cores: 8 tiles for every product made a B=4 x T=256 step ~10%
// faster under load (~3.5) but the B*T = 1024 layer products 6-9% slower when idle;
// with this minimum width the layer products get 2 tiles or BLAS's threading (idle
// speed kept, steps the same within noise) and the lm-head 8 tiles. Results may differ
// from one BLAS call in the last bits (another split of the same sums).
#include <cblas.h>
#include <omp.h>

#include "kernels.h"

// Below this many multiply-adds a product is left to BLAS as is (tests, tiny models).
#define ZT_GEMM_TILE_MIN_WORK ((double)(1 << 24))
// The narrowest tile (repacking overhead ~3%), and at most this many tiles per thread.
#define ZT_GEMM_TILE_MIN 1024
#define ZT_GEMM_TILES_PER_THREAD 4

static void gemm1(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void zt_gemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc) {
    int nt = omp_get_max_threads();
    if (nt < 2 || omp_in_parallel() || (double)M * N * K < ZT_GEMM_TILE_MIN_WORK) {
        gemm1(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    // Cut the longer side of C into nt * k equal tiles (a multiple of 16 wide, but the
    // last), k as large as the minimum width allows.
    int by_cols = N >= M, D = by_cols ? N : M;
    int k = D / (nt * ZT_GEMM_TILE_MIN);
    if (k > ZT_GEMM_TILES_PER_THREAD) k = ZT_GEMM_TILES_PER_THREAD;
    if (k < 1) {
        gemm1(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    int want = nt * k;
    int tile = ((D + want - 1) / want + 15) / 16 * 16;
    int tiles = (D + tile - 1) / tile;
#pragma omp parallel for schedule(dynamic, 1)
    for (int t = 0; t < tiles; t++) {
        int d0 = t * tile, d = D - d0 < tile ? D - d0 : tile;
        if (by_cols) // C[:, d0:d0+d] = op(A) @ op(B)[:, d0:d0+d]
            gemm1(trans_a, trans_b, M, d, K, alpha, A, lda,
                  B + (trans_b ? (size_t)d0 * ldb : (size_t)d0), ldb, beta, C + d0, ldc);
        else // C[d0:d0+d, :] = op(A)[d0:d0+d, :] @ op(B)
            gemm1(trans_a, trans_b, d, N, K, alpha, A + (trans_a ? (size_t)d0 : (size_t)d0 * lda),
                  lda, B, ldb, beta, C + (size_t)d0 * ldc, ldc);
    }
}
