// Tests of the CPU backend's bf16 mixed-precision ops (backend.h's last group; kernels/cpu):
// each against its fp32 op on the widened inputs. Where the bf16 op runs the fp32 kernel's
// own arithmetic and rounds once (bias, layernorm, encoder, sumsq, the optimizers), the
// result must be the fp32 op's rounded to bf16 bit for bit; gemm_mixed against the exact
// product of the bf16-rounded operands within a derived bound, on both GEMM paths.
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_profile.h"
#include "kernels.h"
#include "quant8_math.h"
#include "test.h"

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
// uniform in [-1, 1)
static float unif(uint64_t *s) { return (float)((double)(splitmix(s) >> 11) * 0x1p-52 - 1.0); }
static void fill_f32(float *x, size_t n, float scale, uint64_t *s) {
    for (size_t i = 0; i < n; i++) x[i] = scale * unif(s);
}
static void fill_bf16(zt_bf16 *x, size_t n, float scale, uint64_t *s) {
    for (size_t i = 0; i < n; i++) x[i] = zt_bf16_from_fp32(scale * unif(s));
}
static float *widen(const zt_bf16 *x, size_t n) {
    float *w = malloc(n * sizeof *w + 1);
    zt_bf16_to_fp32_array(w, x, n);
    return w;
}
// Bit-equality of n floats (tolerance 0), reporting the first difference.
static int same_f32(const char *what, const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            fprintf(stderr, "  %s[%zu]: %.9g, want %.9g (bit for bit)\n", what, i, got[i], want[i]);
            return 0;
        }
    return 1;
}
// got (bf16) == want (fp32) rounded to bf16, bit for bit.
static int is_rounded(const char *what, const zt_bf16 *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (got[i] != zt_bf16_from_fp32(want[i])) {
            fprintf(stderr, "  %s[%zu]: 0x%04x (%.9g), want round(%.9g) = 0x%04x\n", what, i,
                    got[i], zt_bf16_to_fp32(got[i]), want[i], zt_bf16_from_fp32(want[i]));
            return 0;
        }
    return 1;
}

// ---- gemm_mixed ----

typedef struct {
    int ta, tb, M, N, K, pad; // pad: extra columns of every leading dimension
    float alpha, beta;
    zt_dtype at, bt, ct;
    size_t work; // scratch bytes (small ones force tiles of C and chunks of K)
} mixed_case;

static double gamma_n(double n, double u) { return n * u / (1 - n * u); }

// A matrix of `rows` x ld in dtype dt, random in [-1, 1), and its values as the product
// sees them: bf16 stays, fp32 is rounded to bf16 (then widened to double, exact).
static void *make_operand(zt_dtype dt, size_t n, double *seen, uint64_t *s) {
    void *x = malloc(n * zt_dtype_size(dt) + 1);
    for (size_t i = 0; i < n; i++) {
        float v = unif(s);
        if (dt == ZT_BF16) ((zt_bf16 *)x)[i] = zt_bf16_from_fp32(v);
        else ((float *)x)[i] = v;
        seen[i] = zt_bf16_to_fp32(zt_bf16_from_fp32(v));
    }
    return x;
}

// One case against the exact product (dgemm on the values as rounded). An fp32 C: the
// products are exact in fp32 (two 8-bit significands), so the result differs from the exact
// one by fp32 roundings only. Each of C[i,j]'s K + 1 terms (the products and beta c) passes
// at most K additions in any order or blocking (K chunks included: kt - 1 in its chunk, then
// one per chunk into C, at most K in all) plus one multiplication (alpha, beta):
//   |got - exact| <= gamma_{K+1} S,  S = |alpha| sum_k |a_ik||b_kj| + |beta||c_ij|,
// u = 2^-24; we allow gamma_{K+2} (one to spare) plus dgemm's own (u = 2^-53). A bf16 C is
// y (the fp32 result, within that bound) rounded once to nearest: |rn(y) - y| <= 2^-8 |y|
// (8 significant bits: half an ulp is at most 2^-8 of the value) and |y| <= |exact| + bound:
//   |got - exact| <= bound (1 + 2^-8) + 2^-8 |exact|.
// That last term dominates a bf16 C and is nearly reached: just above a power of two the
// rounding errs by 2^-8 |y| / (1 + 2^-8), so worst ratios up to ~0.996 come from the one
// rounding alone, on every path (the fallback shows 0.92 and 0.995 here). oneDNN's kernels
// (AMX tiles, AVX512-BF16 pairs) add the exact products in fp32 in blocks of K: one of the
// orders the gamma bound covers. They flush subnormals, which a relative bound would not
// cover, but none arise: every operand is 0 or at least 2^-52 in magnitude, so every sum of
// products is a multiple of 2^-118.
// Padding columns of C must keep their values.
static int check_mixed(const mixed_case *g, double *worst) {
    int ar = g->ta ? g->K : g->M, ac = g->ta ? g->M : g->K, lda = ac + g->pad;
    int br = g->tb ? g->N : g->K, bc = g->tb ? g->K : g->N, ldb = bc + g->pad;
    int ldc = g->N + g->pad;
    size_t na = (size_t)ar * lda, nb = (size_t)br * ldb, nc = (size_t)g->M * ldc;
    uint64_t s = (uint64_t)g->M * 1000003u + g->N * 1009u + g->K + g->at * 7 + g->bt * 11 + g->ct;
    double *da = malloc(na * 8 + 8), *db = malloc(nb * 8 + 8), *xa = malloc(na * 8 + 8);
    double *xb = malloc(nb * 8 + 8), *exact = malloc(nc * 8), *sum = malloc(nc * 8);
    double *c0 = malloc(nc * 8);
    void *A = make_operand(g->at, na, da, &s), *B = make_operand(g->bt, nb, db, &s);
    void *C = malloc(nc * zt_dtype_size(g->ct)), *work = malloc(g->work + 1);
    for (size_t i = 0; i < nc; i++) {
        float v = unif(&s);
        if (g->ct == ZT_BF16) ((zt_bf16 *)C)[i] = zt_bf16_from_fp32(v);
        else ((float *)C)[i] = v;
        c0[i] = exact[i] = g->ct == ZT_BF16 ? zt_bf16_to_fp32(zt_bf16_from_fp32(v)) : v;
    }
    for (size_t i = 0; i < na; i++) xa[i] = fabs(da[i]);
    for (size_t i = 0; i < nb; i++) xb[i] = fabs(db[i]);
    CBLAS_TRANSPOSE ta = g->ta ? CblasTrans : CblasNoTrans, tb = g->tb ? CblasTrans : CblasNoTrans;
    cblas_dgemm(CblasRowMajor, ta, tb, g->M, g->N, g->K, g->alpha, da, lda > 0 ? lda : 1, db,
                ldb > 0 ? ldb : 1, g->beta, exact, ldc);
    memset(sum, 0, nc * 8);
    cblas_dgemm(CblasRowMajor, ta, tb, g->M, g->N, g->K, 1, xa, lda > 0 ? lda : 1, xb,
                ldb > 0 ? ldb : 1, 0, sum, ldc);
    zt_gemm_mixed(g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, g->at, lda, B, g->bt, ldb, g->beta,
                  C, g->ct, ldc, work, g->work);
    double g32 = gamma_n(g->K + 2, 0x1p-24), g64 = gamma_n(g->K + 2, 0x1p-53), ub = 0x1p-8;
    int bad = 0;
    for (int i = 0; i < g->M && !bad; i++)
        for (int j = 0; j < ldc; j++) {
            size_t k = (size_t)i * ldc + j;
            double got = g->ct == ZT_BF16 ? zt_bf16_to_fp32(((zt_bf16 *)C)[k]) : ((float *)C)[k];
            if (j >= g->N) {
                if (got != c0[k]) {
                    fprintf(stderr, "  C[%d,%d] is padding, written: %.9g\n", i, j, got);
                    bad = 1;
                    break;
                }
                continue;
            }
            double scale = fabs(g->alpha) * sum[k] + fabs(g->beta) * fabs(c0[k]);
            double tol = (g32 + g64) * scale;
            if (g->ct == ZT_BF16) tol = tol * (1 + ub) + ub * fabs(exact[k]);
            double e = fabs(got - exact[k]);
            if (tol > 0 && e / tol > *worst) *worst = e / tol;
            if (!(e <= tol)) {
                fprintf(stderr, "  C[%d,%d] = %.9g, exact %.9g, bound %.3g\n", i, j, got,
                        exact[k], tol);
                bad = 1;
                break;
            }
        }
    free(da), free(db), free(xa), free(xb), free(exact), free(sum), free(c0);
    free(A), free(B), free(C), free(work);
    return bad;
}

#define KIB ((size_t)1 << 10)
// Every dtype combination in all four transposes with padding, beta 0 and 1 for a bf16 C;
// scratch small enough for many tiles (sizes that do not divide them) and K chunks (K > 1024);
// BLAS's edges (K = 0 with beta 0 and not, K = 1, M or N = 0); the production scratch with
// a lm-head product wider than one tile (16 tokens x 50304).
static int run_mixed_cases(void) {
    static const zt_dtype dts[2] = {ZT_F32, ZT_BF16};
    int n = 0;
    for (int d = 0; d < 8; d++)
        for (int t = 0; t < 4; t++) {
            mixed_case c = {t & 1, t >> 1, 37, 29, 70, 3, t == 3 ? -1.5f : 1.0f,
                            (t + d) & 1 ? 1.0f : 0.0f, dts[d & 1], dts[(d >> 1) & 1], dts[d >> 2],
                            ZT_GEMM_MIXED_WORKSPACE};
            double worst = 0;
            for (int tiny = 0; tiny < 2; tiny++) { // one tile, then tiles of a few rows
                c.work = tiny ? 12 * KIB : ZT_GEMM_MIXED_WORKSPACE;
                if (check_mixed(&c, &worst)) {
                    fprintf(stderr, "  FAIL: %c%c A %s B %s C %s beta %g scratch %zu\n",
                            c.ta ? 'T' : 'N', c.tb ? 'T' : 'N', zt_dtype_name(c.at),
                            zt_dtype_name(c.bt), zt_dtype_name(c.ct), c.beta, c.work);
                    return ZT_FAIL;
                }
                n++;
            }
            if (t == 1 && d == 7)
                printf("  e.g. TN bf16 A, B, C, beta 0: worst |err|/bound %.3g\n", worst);
        }
    static const mixed_case big[] = {
        // K = 1100: two chunks of 550; 40 KiB: tiles of C too
        {0, 1, 45, 33, 1100, 2, 1.0f, 1.0f, ZT_F32, ZT_F32, ZT_BF16, 40 * KIB},
        {1, 0, 45, 33, 1100, 0, 0.5f, 0.0f, ZT_BF16, ZT_F32, ZT_F32, 40 * KIB},
        {0, 0, 5, 4, 0, 1, 1.0f, 0.5f, ZT_F32, ZT_F32, ZT_BF16, 64},     // K = 0: C = beta C
        {1, 1, 5, 4, 0, 1, 1.0f, 0.5f, ZT_BF16, ZT_F32, ZT_F32, 64},     // ... fp32 C
        {0, 1, 5, 4, 0, 1, 1.0f, 0.0f, ZT_BF16, ZT_BF16, ZT_BF16, 64},   // ... beta 0: zeros
        {1, 0, 6, 3, 1, 1, -1.5f, 0.5f, ZT_F32, ZT_BF16, ZT_BF16, 64},   // K = 1
        {0, 0, 0, 4, 3, 1, 1.0f, 0.5f, ZT_F32, ZT_F32, ZT_F32, 64},      // M = 0
        {0, 0, 5, 0, 3, 1, 1.0f, 0.5f, ZT_F32, ZT_F32, ZT_BF16, 64},     // N = 0: C untouched
        {0, 0, 1, 1, 1, 0, 1.0f, 0.0f, ZT_F32, ZT_F32, ZT_BF16, 64},     // the smallest scratch
        {0, 1, 16, 50304, 768, 0, 1.0f, 0.0f, ZT_F32, ZT_BF16, ZT_F32, ZT_GEMM_MIXED_WORKSPACE},
        {1, 0, 768, 300, 16, 0, 1.0f, 1.0f, ZT_F32, ZT_F32, ZT_BF16, 256 * KIB},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        double worst = 0;
        int bad = check_mixed(&big[i], &worst);
        printf("  %c%c M=%d N=%d K=%d A %s B %s C %s scratch %zu: worst |err|/bound %.3g %s\n",
               big[i].ta ? 'T' : 'N', big[i].tb ? 'T' : 'N', big[i].M, big[i].N, big[i].K,
               zt_dtype_name(big[i].at), zt_dtype_name(big[i].bt), zt_dtype_name(big[i].ct),
               big[i].work, worst, bad ? "FAIL" : "ok");
        if (bad) return ZT_FAIL;
        n++;
    }
    printf("  %d cases\n", n);
    return ZT_PASS;
}

// The fallback (widen + sgemm), forced: it runs on every CPU.
ZT_TEST(bf16_gemm_mixed_fallback) {
    CHECK(zt_gemm_bf16_set_path(ZT_BF16_GEMM_FALLBACK) == ZT_OK);
    int r = run_mixed_cases();
    zt_gemm_bf16_set_path(ZT_BF16_GEMM_AUTO);
    return r;
}

// oneDNN's bf16 kernels, where the CPU has AVX512-BF16 or AMX-BF16 (SKIP elsewhere).
ZT_TEST(bf16_gemm_mixed_dnnl) {
    if (zt_gemm_bf16_set_path(ZT_BF16_GEMM_DNNL) != ZT_OK) {
        printf("  SKIP: %s\n", zt_error_message());
        return ZT_SKIP;
    }
    int r = run_mixed_cases();
    zt_gemm_bf16_set_path(ZT_BF16_GEMM_AUTO);
    return r;
}

// oneDNN's matmul primitive (SKIP where oneDNN has none for bf16): the same cases, a bf16 C
// written by the primitive itself where A and B are bf16; then its cache: the cases again
// find every primitive made the first time (no new ones) and give the same C bit for bit.
ZT_TEST(bf16_gemm_mixed_dnnl_matmul) {
    if (zt_gemm_bf16_set_path(ZT_BF16_GEMM_DNNL_MATMUL) != ZT_OK) {
        printf("  SKIP: %s\n", zt_error_message());
        return ZT_SKIP;
    }
    int r = run_mixed_cases();
    size_t hits, misses, hits2, misses2;
    int cached;
    zt_matmul_dnnl_stats(&hits, &misses, &cached);
    printf("  matmul primitives: %zu made, %zu found, %d cached\n", misses, hits, cached);
    mixed_case c = {0, 1, 64, 48, 80, 0, 1.0f, 1.0f, ZT_BF16, ZT_BF16, ZT_BF16,
                    ZT_GEMM_MIXED_WORKSPACE};
    double worst = 0;
    if (r == ZT_PASS && (check_mixed(&c, &worst) || check_mixed(&c, &worst))) r = ZT_FAIL;
    zt_matmul_dnnl_stats(&hits2, &misses2, &cached);
    printf("  one product twice: %zu made, %zu found (worst |err|/bound %.3g)\n",
           misses2 - misses, hits2 - hits, worst);
    CHECK(misses2 - misses <= 1 && hits2 - hits >= 1);
    zt_gemm_bf16_set_path(ZT_BF16_GEMM_AUTO);
    return r;
}

// ---- the parameter kernels: the fp32 kernel's result rounded once ----
//
// Why bit for bit: each bf16 kernel loads the widened gradient (exact) into the fp32
// kernel's accumulator, runs the same additions in the same order (thread-count
// independent: columns are split, never rows) and rounds each element once. So its fp32
// value before the rounding IS the fp32 kernel's result y, and the bf16 result is rn(y):
// against the exact sum it errs by the fp32 order bound plus 2^-8 |y| (half an ulp of 8
// significant bits), which kernel_* tests already bound for y.

static const int k_threads[] = {1, 2, 3};

ZT_TEST(bf16_bias) {
    const zt_backend *be = zt_test_cpu();
    int N = 67, OC = 1100; // OC over two 512-wide blocks, with a tail
    uint64_t s = 1;
    zt_bf16 *bias = malloc(OC * 2), *dbias = malloc(OC * 2), *got = malloc(OC * 2);
    float *out = malloc((size_t)N * OC * 4), *ref = malloc((size_t)N * OC * 4);
    float *dout = malloc((size_t)N * OC * 4);
    zt_bf16 *dout16 = malloc((size_t)N * OC * 2);
    fill_bf16(bias, OC, 2.0f, &s), fill_bf16(dbias, OC, 4.0f, &s);
    fill_f32(out, (size_t)N * OC, 1.0f, &s), fill_f32(dout, (size_t)N * OC, 1.0f, &s);
    fill_bf16(dout16, (size_t)N * OC, 1.0f, &s);
    float *wb = widen(bias, OC), *ref_db = widen(dbias, OC), *ref_db16 = widen(dbias, OC);
    float *wdout16 = widen(dout16, (size_t)N * OC);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) ref[(size_t)n * OC + o] = out[(size_t)n * OC + o] + wb[o];
    be->ops->bias_forward_bf16(be, out, bias, N, OC);
    CHECK(same_f32("bias forward", out, ref, (size_t)N * OC));
    zt_bias_backward(ref_db, dout, N, OC);
    zt_bias_backward(ref_db16, wdout16, N, OC); // a bf16 dout: the fp32 kernel's on it widened
    int before = omp_get_max_threads();
    for (int t = 0; t < 3; t++) { // the same bits on any thread count
        omp_set_num_threads(k_threads[t]);
        memcpy(got, dbias, OC * 2);
        be->ops->bias_backward_bf16(be, got, dout, ZT_F32, N, OC);
        CHECK(is_rounded("bias backward", got, ref_db, OC));
        memcpy(got, dbias, OC * 2);
        be->ops->bias_backward_bf16(be, got, dout16, ZT_BF16, N, OC);
        CHECK(is_rounded("bias backward, bf16 dout", got, ref_db16, OC));
    }
    omp_set_num_threads(before);
    free(bias), free(dbias), free(got), free(out), free(ref), free(dout), free(wb), free(ref_db);
    free(dout16), free(ref_db16), free(wdout16);
    return ZT_PASS;
}

// GELU on bf16: the forward is zt_gelu_forward's values on the widened input rounded, the
// backward zt_gelu_backward's on it bit for bit (the same blocks' arithmetic on exact
// inputs), in place too, or rounded once into a bf16 dinp, the tail block included, on any
// thread count.
ZT_TEST(bf16_gelu) {
    const zt_backend *be = zt_test_cpu();
    size_t n = 4099;
    uint64_t s = 9;
    float *ref = malloc(n * 4), *dout = malloc(n * 4), *din = malloc(n * 4);
    float *rdin = malloc(n * 4);
    zt_bf16 *inp = malloc(n * 2), *out = malloc(n * 2), *din16 = malloc(n * 2);
    fill_bf16(inp, n, 4.0f, &s), fill_f32(dout, n, 1.0f, &s);
    float *winp = widen(inp, n);
    zt_gelu_forward(ref, winp, n);
    zt_gelu_backward(rdin, winp, dout, n);
    int ok = 1, before = omp_get_max_threads();
    for (int t = 0; t < 3 && ok; t++) {
        omp_set_num_threads(k_threads[t]);
        be->ops->gelu_forward_bf16(be, out, inp, n);
        ok = is_rounded("gelu bf16", out, ref, n);
        be->ops->gelu_backward_bf16(be, din, ZT_F32, inp, dout, n);
        ok = ok && same_f32("gelu backward bf16", din, rdin, n);
        memcpy(din, dout, n * 4); // dinp = dout
        be->ops->gelu_backward_bf16(be, din, ZT_F32, inp, din, n);
        ok = ok && same_f32("gelu backward bf16 in place", din, rdin, n);
        be->ops->gelu_backward_bf16(be, din16, ZT_BF16, inp, dout, n);
        ok = ok && is_rounded("gelu backward into bf16", din16, rdin, n);
    }
    omp_set_num_threads(before);
    free(ref), free(dout), free(din), free(rdin), free(inp), free(out), free(winp), free(din16);
    return ok ? ZT_PASS : ZT_FAIL;
}

// The bias broadcast, then a product into the bf16 out with beta 1 (what the model's bf16
// linear layers run): the broadcast is exact; the sum of product and bias is the fp32 sum
// rounded once, checked against the exact sum in double within gemm_mixed's bound plus the
// one rounding of the bf16 C.
ZT_TEST(bf16_bias_broadcast) {
    const zt_backend *be = zt_test_cpu();
    int N = 37, OC = 75, C = 129;
    uint64_t s = 5;
    zt_bf16 *bias = malloc(OC * 2), *out = malloc((size_t)N * OC * 2);
    zt_bf16 *x = malloc((size_t)N * C * 2), *w = malloc((size_t)OC * C * 2);
    fill_bf16(bias, OC, 1.0f, &s), fill_bf16(x, (size_t)N * C, 1.0f, &s);
    fill_bf16(w, (size_t)OC * C, 1.0f, &s);
    be->ops->bias_broadcast_bf16(be, out, bias, N, OC);
    for (int n = 0; n < N; n++) CHECK(memcmp(out + (size_t)n * OC, bias, (size_t)OC * 2) == 0);
    void *work = malloc(be->caps->gemm_mixed_workspace);
    be->ops->gemm_mixed(be, 0, 1, N, OC, C, 1.0f, x, ZT_BF16, C, w, ZT_BF16, C, 1.0f, out,
                        ZT_BF16, OC, work);
    double worst = 0.0;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double exact = zt_bf16_to_fp32(bias[o]), mag = fabs(exact);
            for (int k = 0; k < C; k++) {
                double p = (double)zt_bf16_to_fp32(x[(size_t)n * C + k]) *
                           zt_bf16_to_fp32(w[(size_t)o * C + k]);
                exact += p, mag += fabs(p);
            }
            // C + 1 fp32 terms (products exact): gamma_{C+1} mag; then one bf16 rounding,
            // 2^-8 relative to the result (which is within that of exact)
            double got = zt_bf16_to_fp32(out[(size_t)n * OC + o]), err = fabs(got - exact);
            double tol = gamma_n(C + 1, 0x1p-24) * mag * (1 + 0x1p-8) + 0x1p-8 * fabs(exact);
            CHECK(err <= tol);
            if (err > worst) worst = err;
        }
    printf("  bias + product into bf16: max |diff| %.3g\n", worst);
    free(bias), free(out), free(x), free(w), free(work);
    return ZT_PASS;
}

// gemm_epilogue_bf16 (the model's bf16 linear layers and the MLP's input gradient through
// GELU) against the exact products in double, x (N, C) by w (OC, C) transposed: BIAS into
// bf16 (C + 1 fp32 terms rounded once) and into fp32 (C + 1 terms, no rounding after); DGELU
// against the fp32 GELU backward of the exact product rounded to fp32 (gelu' of the same
// widened aux, so only the products' fp32 sum and the roundings differ).
ZT_TEST(bf16_gemm_epilogue) {
    const zt_backend *be = zt_test_cpu();
    int N = 37, OC = 75, C = 129;
    size_t no = (size_t)N * OC;
    uint64_t s = 11;
    zt_bf16 *bias = malloc(OC * 2), *x = malloc((size_t)N * C * 2);
    zt_bf16 *w = malloc((size_t)OC * C * 2), *aux = malloc(no * 2), *o16 = malloc(no * 2);
    float *o32 = malloc(no * 4), *wide = malloc(no * 4), *p32 = malloc(no * 4);
    float *g = malloc(no * 4), *waux = NULL;
    double *exact = malloc(no * sizeof(double)), *mag = malloc(no * sizeof(double));
    fill_bf16(bias, OC, 1.0f, &s), fill_bf16(x, (size_t)N * C, 1.0f, &s);
    fill_bf16(w, (size_t)OC * C, 1.0f, &s), fill_bf16(aux, no, 4.0f, &s);
    waux = widen(aux, no);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double e = 0.0, m = 0.0;
            for (int k = 0; k < C; k++) {
                double p = (double)zt_bf16_to_fp32(x[(size_t)n * C + k]) *
                           zt_bf16_to_fp32(w[(size_t)o * C + k]);
                e += p, m += fabs(p);
            }
            exact[(size_t)n * OC + o] = e, mag[(size_t)n * OC + o] = m;
            p32[(size_t)n * OC + o] = (float)e;
        }
    void *work = malloc(be->caps->gemm_mixed_workspace);
    be->ops->gemm_epilogue_bf16(be, ZT_EPILOGUE_DGELU, 0, 1, N, OC, C, x, ZT_BF16, C, w, C, o16,
                                ZT_BF16, NULL, aux, wide, work);
    zt_gelu_backward(g, waux, p32, no); // gelu'(aux) * fl(exact), fp32
    double worst[3] = {0, 0, 0}, gmax = 1.13; // max |gelu'| of the tanh form is 1.129
    for (size_t i = 0; i < no; i++) {
        double gv = zt_bf16_to_fp32(o16[i]), err = fabs(gv - g[i]);
        // |gelu'| (gamma_C mag + u |p|) from the sum, u |g| per fp32 product on each side,
        // then the bf16 step of the result
        double tol = gmax * (gamma_n(C, 0x1p-24) * mag[i] + 0x1p-24 * fabs(exact[i])) *
                         (1 + 0x1p-8) + 2 * 0x1p-24 * fabs(g[i]) + 0x1p-8 * fabs(g[i]);
        CHECK(err <= tol);
        if (err > worst[2]) worst[2] = err;
    }
    // BIAS on the path this CPU chose and on the fallback: fused where the product is one
    // oneDNN matmul primitive (its own bias), else the unfused ops.
    zt_bf16_gemm_path paths[2] = {ZT_BF16_GEMM_AUTO, ZT_BF16_GEMM_FALLBACK};
    for (int pi = 0; pi < 2; pi++) {
        CHECK(zt_gemm_bf16_set_path(paths[pi]) == ZT_OK);
        int fused = zt_gemm_bf16_path() == ZT_BF16_GEMM_DNNL_MATMUL;
        CHECK(be->ops->gemm_epilogue_bf16(be, ZT_EPILOGUE_BIAS, 0, 1, N, OC, C, x, ZT_BF16, C,
                                          w, C, o16, ZT_BF16, bias, NULL, NULL, work) == fused);
        CHECK(be->ops->gemm_epilogue_bf16(be, ZT_EPILOGUE_BIAS, 0, 1, N, OC, C, x, ZT_BF16, C,
                                          w, C, o32, ZT_F32, bias, NULL, NULL, work) == fused);
        worst[0] = worst[1] = 0.0;
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) {
                size_t i = (size_t)n * OC + o;
                double b = zt_bf16_to_fp32(bias[o]), e = exact[i] + b, m = mag[i] + fabs(b);
                // C + 1 fp32 terms (products exact): gamma_{C+1} m; a bf16 C then one
                // rounding, 2^-8 relative to the result (which is within that of e)
                double t32 = gamma_n(C + 1, 0x1p-24) * m;
                double t16 = t32 * (1 + 0x1p-8) + 0x1p-8 * fabs(e);
                double e16 = fabs(zt_bf16_to_fp32(o16[i]) - e), e32 = fabs(o32[i] - e);
                CHECK(e16 <= t16 && e32 <= t32);
                if (e16 > worst[0]) worst[0] = e16;
                if (e32 > worst[1]) worst[1] = e32;
            }
        printf("  BIAS %s: into bf16 %.3g, into fp32 %.3g (max |diff|)\n",
               fused ? "fused" : "unfused", worst[0], worst[1]);
    }
    zt_gemm_bf16_set_path(ZT_BF16_GEMM_AUTO);
    printf("  DGELU %.3g (max |diff|)\n", worst[2]);
    free(bias), free(x), free(w), free(aux), free(o16), free(o32), free(wide), free(p32);
    free(g), free(waux), free(exact), free(mag), free(work);
    return ZT_PASS;
}

// The loss's three passes over bf16 logits: the fp32 passes' values on the widened logits bit
// for bit (statistics, losses; the same blocks and vector expf), dlogits their gradient
// rounded once, in place too; a slice with padding columns, a tail block, and targets inside
// the slice, before it and past it (another tp rank's).
ZT_TEST(bf16_cross_entropy) {
    const zt_backend *be = zt_test_cpu();
    enum { n = 9 };
    int ld = 1037, valid = 1030, lo = 100;
    size_t nl = (size_t)n * ld;
    uint64_t s = 21;
    zt_bf16 *x = malloc(nl * 2), *dx = malloc(nl * 2), *inplace = malloc(nl * 2);
    fill_bf16(x, nl, 8.0f, &s);
    float *wx = widen(x, nl), *rdx = malloc(nl * 4);
    int32_t targets[n] = {100, 101, 99, 1129, 1130, 1500, 600, 350, 1000};
    float mx[n], tl[n], se[n], loss[n], rmx[n], rtl[n], rse[n], rloss[n], loss2[n];
    zt_ce_slice_stats(rmx, rtl, wx, targets, n, valid, lo, ld);
    zt_ce_slice_sumexp(rse, wx, rmx, n, valid, ld);
    zt_ce_slice_finish(rdx, rloss, wx, targets, rmx, rse, rtl, 0.25f, n, valid, lo, ld);
    be->ops->ce_slice_stats_bf16(be, mx, tl, x, targets, n, valid, lo, ld);
    CHECK(same_f32("ce row_max", mx, rmx, n) && same_f32("ce target_logit", tl, rtl, n));
    be->ops->ce_slice_sumexp_bf16(be, se, x, mx, n, valid, ld);
    CHECK(same_f32("ce sumexp", se, rse, n));
    be->ops->ce_slice_finish_bf16(be, dx, loss, x, targets, mx, se, tl, 0.25f, n, valid, lo, ld);
    CHECK(same_f32("ce losses", loss, rloss, n) && is_rounded("ce dlogits", dx, rdx, nl));
    memcpy(inplace, x, nl * 2);
    be->ops->ce_slice_finish_bf16(be, inplace, loss2, inplace, targets, mx, se, tl, 0.25f, n,
                                  valid, lo, ld);
    CHECK(memcmp(inplace, dx, nl * 2) == 0 && same_f32("ce losses in place", loss2, rloss, n));
    free(x), free(dx), free(inplace), free(wx), free(rdx);
    return ZT_PASS;
}

ZT_TEST(bf16_layernorm) {
    const zt_backend *be = zt_test_cpu();
    int N = 33, C = 1037; // C over two column blocks with a tail, not a multiple of 16 lanes
    size_t NC = (size_t)N * C;
    uint64_t s = 2;
    zt_bf16 *w = malloc(C * 2), *b = malloc(C * 2), *dw = malloc(C * 2), *db = malloc(C * 2);
    zt_bf16 *gw = malloc(C * 2), *gb = malloc(C * 2);
    float *inp = malloc(NC * 4), *out = malloc(NC * 4), *ref = malloc(NC * 4);
    float *dout = malloc(NC * 4), *dinp0 = malloc(NC * 4), *dinp = malloc(NC * 4);
    float *rdinp = malloc(NC * 4), mean[33], rstd[33], rmean[33], rrstd[33];
    fill_bf16(w, C, 1.5f, &s), fill_bf16(b, C, 0.5f, &s), fill_bf16(dw, C, 3.0f, &s);
    fill_bf16(db, C, 3.0f, &s), fill_f32(inp, NC, 2.0f, &s), fill_f32(dout, NC, 1.0f, &s);
    fill_f32(dinp0, NC, 1.0f, &s);
    float *ww = widen(w, C), *wb = widen(b, C), *rdw = widen(dw, C), *rdb = widen(db, C);
    zt_layernorm_forward(ref, rmean, rrstd, inp, ww, wb, N, C);
    be->ops->layernorm_forward_bf16(be, out, ZT_F32, mean, rstd, inp, w, b, N, C);
    CHECK(same_f32("ln out", out, ref, NC) && same_f32("ln mean", mean, rmean, N));
    CHECK(same_f32("ln rstd", rstd, rrstd, N));
    zt_bf16 *out16 = malloc(NC * 2); // a bf16 out: the fp32 row rounded, mean and rstd the same
    be->ops->layernorm_forward_bf16(be, out16, ZT_BF16, mean, rstd, inp, w, b, N, C);
    CHECK(is_rounded("ln out bf16", out16, ref, NC) && same_f32("ln mean", mean, rmean, N));
    free(out16);
    memcpy(rdinp, dinp0, NC * 4);
    zt_layernorm_backward(rdinp, rdw, rdb, dout, inp, ww, mean, rstd, N, C);
    int before = omp_get_max_threads();
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(k_threads[t]);
        memcpy(dinp, dinp0, NC * 4), memcpy(gw, dw, C * 2), memcpy(gb, db, C * 2);
        be->ops->layernorm_backward_bf16(be, dinp, gw, gb, dout, inp, w, mean, rstd, N, C);
        CHECK(same_f32("ln dinp", dinp, rdinp, NC));
        CHECK(is_rounded("ln dw", gw, rdw, C) && is_rounded("ln db", gb, rdb, C));
    }
    omp_set_num_threads(before);
    free(w), free(b), free(dw), free(db), free(gw), free(gb), free(inp), free(out), free(ref);
    free(dout), free(dinp0), free(dinp), free(rdinp), free(ww), free(wb), free(rdw), free(rdb);
    return ZT_PASS;
}

// The bf16 residual stream: add_bf16 is zt_add on the widened values rounded once;
// layernorm_forward_bf16in is layernorm_forward_bf16 on the widened rows (the same row
// arithmetic: bit for bit, fp32 and bf16 out); the fused residual_layernorm_forward_bf16 is
// the two in turn, bit for bit, also with res aliasing a (as the model's block calls it);
// layernorm_backward_bf16in is layernorm_backward_bf16 on the widened rows, bit for bit, and
// into a bf16 dinp (the residual stream's gradient) its values on the widened dinp rounded
// once.
ZT_TEST(bf16_residual_stream) {
    const zt_backend *be = zt_test_cpu();
    int N = 37, C = 1037; // C not a multiple of the 16 lanes
    size_t NC = (size_t)N * C;
    uint64_t s = 4;
    zt_bf16 *a = malloc(NC * 2), *res = malloc(NC * 2);
    zt_bf16 *res2 = malloc(NC * 2), *o16 = malloc(NC * 2), *r16 = malloc(NC * 2);
    zt_bf16 *w = malloc(C * 2), *bias = malloc(C * 2);
    float *b = malloc(NC * 4); // the projection's fp32 sum
    float *sum = malloc(NC * 4), *out = malloc(NC * 4), *ref = malloc(NC * 4);
    float mean[37], rstd[37], rmean[37], rrstd[37];
    fill_bf16(a, NC, 3.0f, &s), fill_f32(b, NC, 1.0f, &s);
    fill_bf16(w, C, 1.5f, &s), fill_bf16(bias, C, 0.5f, &s);
    float *wa = widen(a, NC);
    zt_add(sum, wa, b, NC);
    be->ops->add_bf16(be, res, a, b, NC);
    CHECK(is_rounded("add_bf16", res, sum, NC));
    float *wres = widen(res, NC);
    for (int o = 0; o < 2; o++) {
        zt_dtype dt = o ? ZT_BF16 : ZT_F32;
        void *got = o ? (void *)o16 : (void *)out;
        zt_layernorm_forward_bf16(ref, ZT_F32, rmean, rrstd, wres, w, bias, N, C);
        be->ops->layernorm_forward_bf16in(be, got, dt, mean, rstd, res, w, bias, N, C);
        CHECK(same_f32("ln mean", mean, rmean, N) && same_f32("ln rstd", rstd, rrstd, N));
        CHECK(o ? is_rounded("ln out bf16", o16, ref, NC) : same_f32("ln out", out, ref, NC));
    }
    be->ops->layernorm_forward_bf16in(be, r16, ZT_BF16, rmean, rrstd, res, w, bias, N, C);
    memcpy(res2, a, NC * 2); // res aliasing a
    be->ops->residual_layernorm_forward_bf16(be, res2, o16, ZT_BF16, mean, rstd, res2, b, w, bias,
                                             N, C);
    CHECK(memcmp(res2, res, NC * 2) == 0 && memcmp(o16, r16, NC * 2) == 0);
    CHECK(same_f32("fused mean", mean, rmean, N) && same_f32("fused rstd", rstd, rrstd, N));
    // the backward on bf16 rows: layernorm_backward_bf16 on the widened rows, bit for bit
    float *dout = malloc(NC * 4), *dinp = malloc(NC * 4), *rdinp = malloc(NC * 4);
    zt_bf16 *dw = malloc(C * 2), *db = malloc(C * 2), *rdw = malloc(C * 2), *rdb = malloc(C * 2);
    fill_f32(dout, NC, 1.0f, &s), fill_f32(rdinp, NC, 1.0f, &s);
    fill_bf16(rdw, C, 3.0f, &s), fill_bf16(rdb, C, 3.0f, &s);
    memcpy(dinp, rdinp, NC * 4), memcpy(dw, rdw, C * 2), memcpy(db, rdb, C * 2);
    zt_bf16 *d16 = malloc(NC * 2);
    zt_bf16_from_fp32_array(d16, dinp, NC);
    float *rd16 = widen(d16, NC); // the fp32 op on the widened bf16 dinp: the reference
    zt_bf16 *rdw2 = malloc(C * 2), *rdb2 = malloc(C * 2);
    memcpy(rdw2, rdw, C * 2), memcpy(rdb2, rdb, C * 2);
    be->ops->layernorm_backward_bf16(be, rd16, rdw2, rdb2, dout, wres, w, mean, rstd, N, C);
    be->ops->layernorm_backward_bf16(be, rdinp, rdw, rdb, dout, wres, w, mean, rstd, N, C);
    int before = omp_get_max_threads();
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(k_threads[t]);
        float *gi = malloc(NC * 4);
        zt_bf16 *gw = malloc(C * 2), *gb = malloc(C * 2);
        memcpy(gi, dinp, NC * 4), memcpy(gw, dw, C * 2), memcpy(gb, db, C * 2);
        be->ops->layernorm_backward_bf16in(be, gi, ZT_F32, gw, gb, dout, res, w, mean, rstd, N,
                                           C);
        int same = same_f32("ln dinp", gi, rdinp, NC) && !memcmp(gw, rdw, C * 2) &&
                   !memcmp(gb, rdb, C * 2);
        zt_bf16 *g16 = malloc(NC * 2);
        memcpy(g16, d16, NC * 2), memcpy(gw, dw, C * 2), memcpy(gb, db, C * 2);
        be->ops->layernorm_backward_bf16in(be, g16, ZT_BF16, gw, gb, dout, res, w, mean, rstd,
                                           N, C);
        same = same && is_rounded("ln dinp bf16", g16, rd16, NC) && !memcmp(gw, rdw2, C * 2) &&
               !memcmp(gb, rdb2, C * 2);
        free(gi), free(gw), free(gb), free(g16);
        CHECK(same);
    }
    omp_set_num_threads(before);
    free(dout), free(dinp), free(rdinp), free(dw), free(db), free(rdw), free(rdb);
    free(d16), free(rd16), free(rdw2), free(rdb2);
    free(a), free(b), free(res), free(res2), free(o16), free(r16), free(w), free(bias);
    free(sum), free(out), free(ref), free(wa), free(wres);
    return ZT_PASS;
}

// A vocab slice [vocab_lo, vocab_lo + rows) with tokens repeated (a row's contributions
// must be summed before its one rounding) and tokens outside it; N not a multiple of T.
ZT_TEST(bf16_encoder) {
    const zt_backend *be = zt_test_cpu();
    int N = 203, T = 16, C = 530, V = 40, lo = 10, rows = 20;
    size_t NC = (size_t)N * C;
    uint64_t s = 3;
    int32_t tok[203];
    for (int n = 0; n < N; n++) tok[n] = (int32_t)(splitmix(&s) % (uint64_t)V);
    zt_bf16 *wte = malloc((size_t)rows * C * 2), *wpe = malloc((size_t)T * C * 2);
    zt_bf16 *dwte = malloc((size_t)rows * C * 2), *dwpe = malloc((size_t)T * C * 2);
    zt_bf16 *gwte = malloc((size_t)rows * C * 2), *gwpe = malloc((size_t)T * C * 2);
    float *out = malloc(NC * 4), *ref = malloc(NC * 4), *dout = malloc(NC * 4);
    fill_bf16(wte, (size_t)rows * C, 1.0f, &s), fill_bf16(wpe, (size_t)T * C, 0.5f, &s);
    fill_bf16(dwte, (size_t)rows * C, 2.0f, &s), fill_bf16(dwpe, (size_t)T * C, 2.0f, &s);
    fill_f32(dout, NC, 1.0f, &s);
    float *wwte = widen(wte, (size_t)rows * C), *wwpe = widen(wpe, (size_t)T * C);
    float *rdwte = widen(dwte, (size_t)rows * C), *rdwpe = widen(dwpe, (size_t)T * C);
    for (int with_wpe = 0; with_wpe < 2; with_wpe++) {
        zt_encoder_forward(ref, tok, wwte, with_wpe ? wwpe : NULL, lo, rows, N, T, C);
        be->ops->encoder_forward_bf16(be, out, tok, wte, with_wpe ? wpe : NULL, lo, rows, N, T,
                                      C);
        CHECK(same_f32("encoder out", out, ref, NC));
        zt_bf16 *o16 = malloc(NC * 2); // a bf16 out: the fp32 sum rounded once
        be->ops->encoder_forward_bf16out(be, o16, tok, wte, with_wpe ? wpe : NULL, lo, rows, N, T,
                                         C);
        int rounded = is_rounded("encoder out bf16", o16, ref, NC);
        free(o16);
        CHECK(rounded);
    }
    zt_encoder_backward(rdwte, rdwpe, dout, tok, lo, rows, N, T, C);
    int before = omp_get_max_threads();
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(k_threads[t]);
        memcpy(gwte, dwte, (size_t)rows * C * 2), memcpy(gwpe, dwpe, (size_t)T * C * 2);
        be->ops->encoder_backward_bf16(be, gwte, gwpe, dout, tok, lo, rows, N, T, C);
        CHECK(is_rounded("dwte", gwte, rdwte, (size_t)rows * C));
        CHECK(is_rounded("dwpe", gwpe, rdwpe, (size_t)T * C));
        memcpy(gwte, dwte, (size_t)rows * C * 2); // dwpe NULL: wte's rows alone
        be->ops->encoder_backward_bf16(be, gwte, NULL, dout, tok, lo, rows, N, T, C);
        CHECK(is_rounded("dwte without wpe", gwte, rdwte, (size_t)rows * C));
    }
    omp_set_num_threads(before);
    free(wte), free(wpe), free(dwte), free(dwpe), free(gwte), free(gwpe), free(out), free(ref);
    free(dout), free(wwte), free(wwpe), free(rdwte), free(rdwpe);
    return ZT_PASS;
}

// The widened values through the fp32 sumsq: the same squares added in the same lanes, so
// the same double bit for bit; with an Inf and a NaN, the second pass's count too.
ZT_TEST(bf16_sumsq) {
    const zt_backend *be = zt_test_cpu();
    size_t n = 100003; // past the parallel threshold, a tail past the lanes
    uint64_t s = 4;
    zt_bf16 *x = malloc(n * 2);
    fill_bf16(x, n, 3.0f, &s);
    for (int pass = 0; pass < 2; pass++) {
        if (pass) x[77] = 0x7f80, x[n - 1] = 0x7fc0; // Inf, NaN
        float *w = widen(x, n);
        double got[2] = {0.5, 1}, want[2] = {0.5, 1};
        be->ops->sumsq_bf16(be, got, x, n);
        be->ops->sumsq(be, want, w, n);
        CHECK(memcmp(got, want, sizeof got) == 0);
        CHECK_EQ_INT(got[1], 1 + 2 * pass);
        free(w);
    }
    free(x);
    return ZT_PASS;
}

// adamw_bf16's master is adamw's p on the widened gradient, bit for bit (the same element
// update), over several steps; p is the master rounded; m, v the same.
ZT_TEST(bf16_adamw) {
    const zt_backend *be = zt_test_cpu();
    size_t n = 5003; // parallel, odd
    uint64_t s = 5;
    float *master = malloc(n * 4), *p32 = malloc(n * 4), *m = calloc(n, 4), *v = calloc(n, 4);
    float *rm = calloc(n, 4), *rv = calloc(n, 4);
    zt_bf16 *p = malloc(n * 2), *g = malloc(n * 2);
    fill_f32(master, n, 1.0f, &s);
    memcpy(p32, master, n * 4);
    for (int t = 1; t <= 4; t++) {
        fill_bf16(g, n, 0.1f, &s);
        float *wg = widen(g, n);
        zt_adamw_hparams h = {1e-2f, 0.9f, 0.95f, 1e-8f, 1.0f - powf(0.9f, (float)t),
                              1.0f - powf(0.95f, (float)t), 0.7f};
        be->ops->adamw_bf16(be, master, p, m, v, g, n, 0.1f, &h);
        be->ops->adamw(be, p32, rm, rv, wg, n, 0.1f, &h);
        free(wg);
    }
    CHECK(same_f32("master", master, p32, n) && same_f32("m", m, rm, n));
    CHECK(same_f32("v", v, rv, n) && is_rounded("p", p, master, n));
    free(master), free(p32), free(m), free(v), free(rm), free(rv), free(p), free(g);
    return ZT_PASS;
}

// The same for the 8-bit optimizer: master, codes and absmaxes equal adamw8bit's on the
// widened gradient; a last block shorter than the others.
ZT_TEST(bf16_adamw8bit) {
    const zt_backend *be = zt_test_cpu();
    size_t n = 256 * 9 + 77, nb = 10;
    uint64_t s = 6;
    float map_m[ZT_Q8_CODES], map_v[ZT_Q8_CODES];
    zt_q8_make_map(map_m, 1), zt_q8_make_map(map_v, 0);
    float *master = malloc(n * 4), *p32 = malloc(n * 4);
    float *am = calloc(nb, 4), *av = calloc(nb, 4), *ram = calloc(nb, 4), *rav = calloc(nb, 4);
    uint8_t *qm = malloc(n), *qv = malloc(n), *rqm = malloc(n), *rqv = malloc(n);
    zt_bf16 *p = malloc(n * 2), *g = malloc(n * 2);
    fill_f32(master, n, 1.0f, &s);
    memcpy(p32, master, n * 4);
    memset(qm, 127, n), memset(qv, 0, n), memset(rqm, 127, n), memset(rqv, 0, n);
    for (int t = 1; t <= 3; t++) {
        fill_bf16(g, n, 0.1f, &s);
        float *wg = widen(g, n);
        zt_adamw_hparams h = {1e-2f, 0.9f, 0.95f, 1e-8f, 1.0f - powf(0.9f, (float)t),
                              1.0f - powf(0.95f, (float)t), 1.0f};
        be->ops->adamw8bit_bf16(be, master, p, g, qm, qv, am, av, n, 256, map_m, map_v, 0.1f, &h);
        be->ops->adamw8bit(be, p32, wg, rqm, rqv, ram, rav, n, 256, map_m, map_v, 0.1f, &h);
        free(wg);
    }
    CHECK(same_f32("master", master, p32, n) && is_rounded("p", p, master, n));
    CHECK(memcmp(qm, rqm, n) == 0 && memcmp(qv, rqv, n) == 0);
    CHECK(same_f32("absmax m", am, ram, nb) && same_f32("absmax v", av, rav, nb));
    free(master), free(p32), free(am), free(av), free(ram), free(rav), free(qm), free(qv);
    free(rqm), free(rqv), free(p), free(g);
    return ZT_PASS;
}

// ---- attention ----

// One shape of attention_forward_bf16 and attention_backward_bf16 against the fp32 ops on the
// widened qkv (and dout): the same arithmetic in the same order on the same values, so out,
// lse and dqkv must be theirs bit for bit, rounded once where bf16. Every dtype of out, dout
// and dqkv.
static int attention_case(int B, int T, int C, int NH, uint64_t seed) {
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
    size_t nw = zt_attention_workspace(0, T);
    zt_bf16 *qkv = malloc(nq * 2), *dout16 = malloc(no * 2), *o16 = malloc(no * 2);
    zt_bf16 *d16 = malloc(nq * 2);
    fill_bf16(qkv, nq, 2.0f, &seed);
    fill_bf16(dout16, no, 1.0f, &seed);
    float *wq = widen(qkv, nq), *wd = widen(dout16, no), *work = malloc(nw * sizeof(float));
    float *wide = malloc(7 * no * sizeof(float)), *out = malloc(no * 4), *lse = malloc(nl * 4);
    float *ref_o = malloc(no * 4), *ref_l = malloc(nl * 4), *ref_d = malloc(nq * 4);
    float *dq = malloc(nq * 4);
    zt_attention_forward(ref_o, ref_l, wq, work, B, T, C, NH);
    zt_attention_backward(ref_d, wd, wq, ref_l, work, B, T, C, NH);
    int ok = 1;
    zt_attention_forward_bf16(out, ZT_F32, lse, qkv, work, wide, B, T, C, NH);
    ok &= same_f32("attn out", out, ref_o, no) && same_f32("attn lse", lse, ref_l, nl);
    zt_attention_forward_bf16(o16, ZT_BF16, lse, qkv, work, wide, B, T, C, NH);
    ok &= is_rounded("attn out bf16", o16, ref_o, no) && same_f32("attn lse", lse, ref_l, nl);
    for (int bo = 0; bo < 2; bo++)
        for (int bd = 0; bd < 2; bd++) {
            const void *dout = bo ? (const void *)dout16 : (const void *)wd;
            void *dqkv = bd ? (void *)d16 : (void *)dq;
            zt_attention_backward_bf16(dqkv, bd ? ZT_BF16 : ZT_F32, dout, bo ? ZT_BF16 : ZT_F32,
                                       qkv, ref_l, work, wide, B, T, C, NH);
            ok &= bd ? is_rounded("attn dqkv bf16", d16, ref_d, nq)
                     : same_f32("attn dqkv", dq, ref_d, nq);
        }
    free(qkv), free(dout16), free(o16), free(d16), free(wq), free(wd), free(work), free(wide);
    free(out), free(lse), free(ref_o), free(ref_l), free(ref_d), free(dq);
    return ok;
}

// T crosses the 64-row causal blocks (70, 130); hs 2, 8 and GPT-2's 64.
ZT_TEST(bf16_attention) {
    static const int shape[][4] = {{2, 1, 8, 4}, {2, 5, 8, 1}, {2, 70, 8, 4}, {1, 130, 128, 2},
                                   {2, 64, 256, 4}};
    for (size_t i = 0; i < sizeof shape / sizeof *shape; i++) {
        const int *s = shape[i];
        printf("  B=%d T=%d C=%d NH=%d\n", s[0], s[1], s[2], s[3]);
        CHECK(attention_case(s[0], s[1], s[2], s[3], 70 + i));
    }
    return ZT_PASS;
}

ZT_TEST(bf16_conversion_ops) {
    const zt_backend *be = zt_test_cpu();
    size_t n = 70001;
    uint64_t s = 7;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    zt_bf16 *b = malloc(n * 2);
    fill_f32(x, n, 100.0f, &s);
    be->ops->bf16_from_fp32(be, b, x, n);
    CHECK(is_rounded("from fp32", b, x, n));
    be->ops->bf16_to_fp32(be, y, b, n);
    for (size_t i = 0; i < n; i++) CHECK(y[i] == zt_bf16_to_fp32(b[i]));
    free(x), free(y), free(b);
    return ZT_PASS;
}

// The profiling decorator times the bf16 ops in their phases (gemm_mixed as a product with
// 2MNK flops) and gives the inner results; it leaves them NULL over a backend without bf16.
ZT_TEST(bf16_ops_profiled) {
    zt_profile acc;
    memset(&acc, 0, sizeof acc);
    zt_backend_profile_state st;
    zt_backend pb;
    zt_backend_profile_init(&pb, &st, zt_test_cpu(), &acc);
    float a[6] = {1, 2, 3, 4, 5, 6}, c[4] = {0}, o[3] = {0};
    zt_bf16 b16[6], g[3] = {0x3f80, 0x3f80, 0x3f80};
    zt_bf16_from_fp32_array(b16, a, 6);
    void *work = malloc(ZT_GEMM_MIXED_WORKSPACE);
    pb.ops->gemm_mixed(&pb, 0, 1, 2, 2, 3, 1.0f, a, ZT_F32, 3, b16, ZT_BF16, 3, 0.0f, c, ZT_F32,
                       2, work);
    CHECK(c[0] == 14 && c[1] == 32 && c[2] == 32 && c[3] == 77); // [1 2 3; 4 5 6] its own T
    CHECK_EQ_INT(acc.calls[ZT_PHASE_GEMM], 1);
    CHECK(acc.flops[ZT_PHASE_GEMM] == 2.0 * 2 * 2 * 3);
    pb.ops->bias_forward_bf16(&pb, o, g, 1, 3);
    CHECK(o[0] == 1 && o[2] == 1);
    double sq[2] = {0, 0};
    pb.ops->sumsq_bf16(&pb, sq, g, 3);
    CHECK(sq[0] == 3 && acc.calls[ZT_PHASE_GRAD_NORM] == 1);
    CHECK_EQ_INT(acc.calls[ZT_PHASE_ELEMENTWISE], 1);
    zt_bf16 row[3];
    pb.ops->bias_broadcast_bf16(&pb, row, g, 1, 3);
    CHECK(row[0] == g[0] && acc.calls[ZT_PHASE_ELEMENTWISE] == 2);
    free(work);

    zt_backend plain = *zt_test_cpu();
    zt_backend_caps caps = *plain.caps;
    caps.bf16 = 0;
    plain.caps = &caps;
    zt_backend_profile_init(&pb, &st, &plain, &acc);
    CHECK(pb.ops->gemm_mixed == NULL && pb.ops->describe_gemm_mixed == NULL &&
          pb.ops->adamw_bf16 == NULL && pb.ops->bf16_to_fp32 == NULL);
    CHECK(pb.ops->gemm != NULL);
    return ZT_PASS;
}
