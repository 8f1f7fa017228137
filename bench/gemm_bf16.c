// bf16 GEMM throughput at GPT-2 shapes: fp32 zt_gemm (OpenBLAS sgemm), the bf16 GEMM through
// oneDNN (where the CPU has bf16 instructions) and through the fallback (widen + sgemm), in
// one run, repetitions interleaved so that noise on a shared machine hits all three.
//
//   OMP_NUM_THREADS=2 build/gemm_bf16 [--reps N] [--warmup N]
//
// Shapes are M x K x N (tokens x inputs x outputs), in the form the model uses: NT for a
// weight stored (out, in) (c_attn, c_fc, the lm-head), NN for one stored (in, out) (c_proj).
// Every implementation gets the same values (bf16-rounded; fp32 gets them widened), C = A B
// (beta 0); the fallback's time includes its widening. Prints one RESULT line per shape and
// implementation (the median of the reps, and the best: on a shared machine the best is the
// nearer to an idle one) and the largest difference from fp32 relative to max |C|, a check
// that each computed the same product.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas_core.h"
#include "kernels.h"

typedef struct {
    int M, K, N, tb;
    const char *op; // GPT-2 124M's product of that shape (forward)
} shape;

static const shape shapes[] = {
    {256, 768, 2304, 1, "attn.c_attn"},
    {256, 3072, 768, 0, "mlp.c_proj"},
    {256, 768, 50304, 1, "lm_head"},
    {1024, 768, 3072, 1, "mlp.c_fc"},
};

enum { IMPL_FP32, IMPL_DNNL, IMPL_FALLBACK, IMPLS };
static const char *impl_name[IMPLS] = {"fp32", "bf16_dnnl", "bf16_fallback"};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    zt_bf16 *a, *b;
    float *fa, *fb, *c[IMPLS], *work;
} buffers;

static void run(int impl, const shape *s, const buffers *m) {
    int ldb = s->tb ? s->K : s->N;
    if (impl == IMPL_FP32) {
        zt_gemm(0, s->tb, s->M, s->N, s->K, 1, m->fa, s->K, m->fb, ldb, 0, m->c[impl], s->N);
        return;
    }
    zt_gemm_bf16_set_path(impl == IMPL_DNNL ? ZT_BF16_GEMM_DNNL : ZT_BF16_GEMM_FALLBACK);
    zt_gemm_bf16(0, s->tb, s->M, s->N, s->K, 1, m->a, s->K, m->b, ldb, 0, m->c[impl], s->N,
                 m->work);
}

static void bench_shape(const shape *s, int reps, int warmup, int have_dnnl) {
    size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
    buffers m = {malloc(na * 2), malloc(nb * 2), malloc(na * 4), malloc(nb * 4), {0}, NULL};
    for (int i = 0; i < IMPLS; i++) m.c[i] = calloc(nc, 4);
    m.work = malloc((na + nb) * 4); // the fallback's zt_gemm_bf16_workspace
    unsigned seed = 1;
    for (size_t i = 0; i < na + nb; i++) {
        seed = seed * 1664525u + 1013904223u;
        float x = (float)(seed >> 8) * 0x1p-23f - 1.0f; // [-1, 1)
        if (i < na) m.a[i] = zt_bf16_from_fp32(x);
        else m.b[i - na] = zt_bf16_from_fp32(x);
    }
    zt_bf16_to_fp32_array(m.fa, m.a, na), zt_bf16_to_fp32_array(m.fb, m.b, nb);
    double *t[IMPLS];
    for (int i = 0; i < IMPLS; i++) t[i] = calloc(reps, sizeof(double));
    for (int r = -warmup; r < reps; r++)
        for (int i = 0; i < IMPLS; i++) {
            if (i == IMPL_DNNL && !have_dnnl) continue;
            double t0 = now();
            run(i, s, &m);
            if (r >= 0) t[i][r] = now() - t0;
        }
    double cmax = 0;
    for (size_t j = 0; j < nc; j++) cmax = fmax(cmax, fabs(m.c[IMPL_FP32][j]));
    for (int i = 0; i < IMPLS; i++) {
        if (i == IMPL_DNNL && !have_dnnl) {
            printf("RESULT op=%s shape=%dx%dx%d form=N%c impl=%s ms=nan gflops=nan "
                   "best_gflops=nan reldiff=nan\n",
                   s->op, s->M, s->K, s->N, s->tb ? 'T' : 'N', impl_name[i]);
            continue;
        }
        qsort(t[i], reps, sizeof(double), cmp_double);
        double med = t[i][reps / 2], diff = 0;
        for (size_t j = 0; j < nc; j++) diff = fmax(diff, fabs(m.c[i][j] - m.c[IMPL_FP32][j]));
        double flop = 2.0 * s->M * s->N * s->K;
        printf("RESULT op=%s shape=%dx%dx%d form=N%c impl=%s ms=%.3f gflops=%.1f "
               "best_gflops=%.1f reldiff=%.2g\n",
               s->op, s->M, s->K, s->N, s->tb ? 'T' : 'N', impl_name[i], 1e3 * med,
               flop / med * 1e-9, flop / t[i][0] * 1e-9, diff / cmax);
        free(t[i]);
    }
    fflush(stdout);
    free(m.a), free(m.b), free(m.fa), free(m.fb), free(m.work);
    for (int i = 0; i < IMPLS; i++) free(m.c[i]);
}

int main(int argc, char **argv) {
    zt_blas_init(argv); // the BLAS kernels users get (may re-execute)
    int reps = 7, warmup = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) warmup = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--reps N] [--warmup N]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    char line[512];
    zt_blas_describe(line, sizeof line);
    printf("blas: %s\nthreads: %d\n", line, omp_get_max_threads());
    zt_gemm_bf16_describe(line, sizeof line);
    printf("%s\n", line);
    int have_dnnl = zt_gemm_bf16_dnnl_check(zt_bf16_cpu_get()) == ZT_OK;
    if (!have_dnnl) printf("bf16_dnnl not run: %s\n", zt_error_message());
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        bench_shape(&shapes[i], reps, warmup, have_dnnl);
    return 0;
}
