// bf16 GEMM throughput at GPT-2 shapes: fp32 zt_gemm (OpenBLAS sgemm), the bf16 GEMM through
// oneDNN's matmul primitive and its gemm API (where the CPU has bf16 instructions) and
// through the fallback (widen + sgemm), in one run, repetitions interleaved so that noise on
// a shared machine hits all of them.
//
//   OMP_NUM_THREADS=2 build/gemm_bf16 [--reps N] [--warmup N] [--tokens N]...
//
// GPT-2 124M's products of one block and the lm-head, for each --tokens (default 256 and
// 1024: B4 T64 and B4 T256), in the three forms the model runs (src/model/gpt2.c, the
// matmul ops): forward out = inp w^T (NT; NN for a weight stored (in, out), the c_projs),
// input gradient dinp = dout w (NN; NT), weight gradient dw += dout^T inp (TN, beta 1;
// dw += inp^T dout for (in, out)). Shapes print as M x K x N. The lm-head runs over all the
// tokens here (the model cuts it into loss chunks). Every implementation gets the same values
// (bf16-rounded; fp32 gets them widened); the fallback's time includes its widening. Prints
// one RESULT line per product and implementation (the median of the reps, and the best: on
// a shared machine the best is the nearer to an idle one) and the largest difference from
// fp32 relative to max |C|, a check that each computed the same product.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas_core.h"
#include "kernels.h"

typedef struct {
    int M, K, N, ta, tb;
    float beta;
    const char *op, *form; // GPT-2 124M's layer, and fwd, dinp or dw
} shape;

// GPT-2 124M's weights: inputs, outputs, and whether stored (out, in) (column-parallel
// layers, the tied lm-head) or (in, out) (the row-parallel c_projs: layout.h).
typedef struct {
    const char *op;
    int in, out, out_in;
} layer;
static const layer layers[] = {
    {"attn.c_attn", 768, 2304, 1}, {"attn.c_proj", 768, 768, 0}, {"mlp.c_fc", 768, 3072, 1},
    {"mlp.c_proj", 3072, 768, 0},  {"lm_head", 768, 50304, 1},
};

// Form f (0 forward, 1 input gradient, 2 weight gradient) of layer l over n tokens.
static shape shape_of(const layer *l, int f, int n) {
    int C = l->in, OC = l->out, oi = l->out_in;
    if (f == 0) return (shape){n, C, OC, 0, oi, 0.0f, l->op, "fwd"};
    if (f == 1) return (shape){n, OC, C, 0, !oi, 0.0f, l->op, "dinp"};
    if (oi) return (shape){OC, n, C, 1, 0, 1.0f, l->op, "dw"};
    return (shape){C, n, OC, 1, 0, 1.0f, l->op, "dw"};
}

enum { IMPL_FP32, IMPL_MATMUL, IMPL_DNNL, IMPL_FALLBACK, IMPLS };
static const char *impl_name[IMPLS] = {"fp32", "bf16_dnnl_matmul", "bf16_dnnl_gemm",
                                       "bf16_fallback"};
static const zt_bf16_gemm_path impl_path[IMPLS] = {ZT_BF16_GEMM_AUTO, ZT_BF16_GEMM_DNNL_MATMUL,
                                                   ZT_BF16_GEMM_DNNL, ZT_BF16_GEMM_FALLBACK};

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

// The product once (beta 1 forms accumulate into C: the same work every time).
static void run(int impl, const shape *s, const buffers *m) {
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    if (impl == IMPL_FP32) {
        zt_gemm(s->ta, s->tb, s->M, s->N, s->K, 1, m->fa, lda, m->fb, ldb, s->beta, m->c[impl],
                s->N);
        return;
    }
    zt_gemm_bf16_set_path(impl_path[impl]);
    zt_gemm_bf16(s->ta, s->tb, s->M, s->N, s->K, 1, m->a, lda, m->b, ldb, s->beta, m->c[impl],
                 s->N, m->work);
}

static void bench_shape(const shape *s, int reps, int warmup, const int have[IMPLS]) {
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
            if (!have[i]) continue;
            if (s->beta != 0.0f) memset(m.c[i], 0, nc * 4); // each rep from the same C
            double t0 = now();
            run(i, s, &m);
            if (r >= 0) t[i][r] = now() - t0;
        }
    double cmax = 0;
    for (size_t j = 0; j < nc; j++) cmax = fmax(cmax, fabs(m.c[IMPL_FP32][j]));
    for (int i = 0; i < IMPLS; i++) {
        char form[16];
        snprintf(form, sizeof form, "%s-%c%c", s->form, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N');
        if (!have[i]) {
            printf("RESULT op=%s shape=%dx%dx%d form=%s impl=%s ms=nan gflops=nan "
                   "best_gflops=nan reldiff=nan\n",
                   s->op, s->M, s->K, s->N, form, impl_name[i]);
            continue;
        }
        qsort(t[i], reps, sizeof(double), cmp_double);
        double med = t[i][reps / 2], diff = 0;
        for (size_t j = 0; j < nc; j++) diff = fmax(diff, fabs(m.c[i][j] - m.c[IMPL_FP32][j]));
        double flop = 2.0 * s->M * s->N * s->K;
        printf("RESULT op=%s shape=%dx%dx%d form=%s impl=%s ms=%.3f gflops=%.1f "
               "best_gflops=%.1f reldiff=%.2g\n",
               s->op, s->M, s->K, s->N, form, impl_name[i], 1e3 * med,
               flop / med * 1e-9, flop / t[i][0] * 1e-9, diff / cmax);
        free(t[i]);
    }
    fflush(stdout);
    free(m.a), free(m.b), free(m.fa), free(m.fb), free(m.work);
    for (int i = 0; i < IMPLS; i++) free(m.c[i]);
}

int main(int argc, char **argv) {
    zt_blas_init(argv); // the BLAS kernels users get (may re-execute)
    int reps = 7, warmup = 1, tokens[8], ntok = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--tokens") == 0 && i + 1 < argc && ntok < 8 &&
                 atoi(argv[i + 1]) > 0)
            tokens[ntok++] = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--reps N] [--warmup N] [--tokens N]...\n", argv[0]);
            return 2;
        }
    }
    if (!ntok) tokens[ntok++] = 256, tokens[ntok++] = 1024;
    if (reps < 1) reps = 1;
    char line[512];
    zt_blas_describe(line, sizeof line);
    printf("blas: %s\nthreads: %d\n", line, omp_get_max_threads());
    zt_gemm_bf16_describe(line, sizeof line);
    printf("%s\n", line);
    int have[IMPLS] = {1, 0, 0, 1};
    for (int i = IMPL_MATMUL; i <= IMPL_DNNL; i++) {
        have[i] = zt_gemm_bf16_set_path(impl_path[i]) == ZT_OK;
        if (!have[i]) printf("%s not run: %s\n", impl_name[i], zt_error_message());
    }
    for (int t = 0; t < ntok; t++)
        for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++)
            for (int f = 0; f < 3; f++) {
                shape s = shape_of(&layers[l], f, tokens[t]);
                bench_shape(&s, reps, warmup, have);
            }
    return 0;
}
