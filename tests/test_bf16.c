// Tests of bf16: the conversions (src/core/bf16_math.h, kernels/cpu/bf16_cpu.c) against
// references built another way (field decoding, double arithmetic), and the bf16 GEMM's two
// paths (kernels/cpu/gemm_bf16_cpu.c) against BLAS on the same bf16 values.
#include <cblas.h>
#include <dnnl.h>
#include <link.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "test.h"

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float float_of(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static int bf16_is_nan(zt_bf16 b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// A bf16's value from its fields, in double: (-1)^s * 2^(e-127) * (1 + m/128), subnormal
// 2^-126 * m/128. unbounded: exponent field 255 with m = 0 is 2^128 (the value RNE compares
// with before it overflows) instead of Inf.
static double bf16_value(zt_bf16 b, int unbounded) {
    int s = b >> 15, e = (b >> 7) & 0xff, m = b & 0x7f;
    double v;
    if (e == 0) v = ldexp(m, -133);
    else if (e == 255 && !unbounded) v = m ? NAN : INFINITY;
    else v = ldexp(128 + m, e - 134);
    return s ? -v : v;
}

// Every bf16: the decode is the field value exactly (NaNs NaN, sign kept), and encoding the
// decoded value gives the same bits back; NaNs come back quiet with their sign (a quiet
// NaN's payload too).
ZT_TEST(bf16_decode_all) {
    for (uint32_t i = 0; i < 65536; i++) {
        zt_bf16 b = (zt_bf16)i;
        float x = zt_bf16_to_fp32(b);
        if (bf16_is_nan(b)) {
            CHECK(isnan(x));
            CHECK_EQ_INT(!!signbit(x), b >> 15);
            zt_bf16 r = zt_bf16_from_fp32(x);
            CHECK(bf16_is_nan(r) && (r & 0x0040) && (r >> 15) == (b >> 15));
            if (b & 0x0040) CHECK_EQ_INT(r, b);
            continue;
        }
        if ((double)x != bf16_value(b, 0) || !!signbit(x) != (b >> 15)) {
            fprintf(stderr, "  bf16 0x%04x decodes to %.9g, fields say %.9g\n", i, x,
                    bf16_value(b, 0));
            return ZT_FAIL;
        }
        CHECK_EQ_INT(zt_bf16_from_fp32(x), b);
    }
    return ZT_PASS;
}

// Hand-made cases: ties to even, just above and below halfway, carries into the exponent,
// signed zeros, subnormals, the largest finite value, overflow, Inf, NaNs.
ZT_TEST(bf16_round_crafted) {
    static const struct {
        uint32_t in;
        zt_bf16 want;
        const char *what;
    } t[] = {
        {0x3f800000, 0x3f80, "1.0 exact"},
        {0x3f808000, 0x3f80, "1 + 2^-8: tie, down to the even 1.0"},
        {0x3f808001, 0x3f81, "just above the tie: up"},
        {0x3f807fff, 0x3f80, "just below the tie: down"},
        {0x3f818000, 0x3f82, "1 + 3*2^-8: tie, up to the even 1 + 2^-6"},
        {0x3f817fff, 0x3f81, "just below that tie: down"},
        {0xbf808000, 0xbf80, "-(1 + 2^-8): tie, to the even -1.0"},
        {0xbf818000, 0xbf82, "-(1 + 3*2^-8): tie, to the even"},
        {0x3fff8000, 0x4000, "tie below 2.0 with an odd mantissa: carries into the exponent"},
        {0x3fff7fff, 0x3fff, "just below that tie"},
        {0x00000000, 0x0000, "+0"},
        {0x80000000, 0x8000, "-0"},
        {0x00000001, 0x0000, "smallest fp32 subnormal: to +0"},
        {0x80000001, 0x8000, "its negative: to -0"},
        {0x00008000, 0x0000, "half the smallest bf16 subnormal: tie, to the even 0"},
        {0x00008001, 0x0001, "just above: the smallest bf16 subnormal"},
        {0x00010000, 0x0001, "the smallest bf16 subnormal, exact"},
        {0x00018000, 0x0002, "tie between subnormals 1 and 2: the even 2"},
        {0x007f8000, 0x0080, "tie between the largest subnormal and the smallest normal"},
        {0x807fffff, 0x8080, "largest negative fp32 subnormal: up to the smallest normal"},
        {0x7f7f0000, 0x7f7f, "largest finite bf16, exact"},
        {0x7f7f7fff, 0x7f7f, "just below halfway to 2^128: stays finite"},
        {0x7f7f8000, 0x7f80, "halfway to 2^128: tie, to the even 2^128, i.e. Inf"},
        {0x7f7fffff, 0x7f80, "FLT_MAX: overflows to Inf"},
        {0xff7fffff, 0xff80, "-FLT_MAX: to -Inf"},
        {0x7f800000, 0x7f80, "Inf"},
        {0xff800000, 0xff80, "-Inf"},
        {0x7fc00000, 0x7fc0, "quiet NaN"},
        {0xffc00000, 0xffc0, "negative quiet NaN"},
        {0x7f800001, 0x7fc0, "signalling NaN, payload only in the dropped bits: quiet NaN"},
        {0xff800001, 0xffc0, "negative signalling NaN: negative quiet NaN"},
        {0x7f80ffff, 0x7fc0, "NaN that plain rounding would carry toward Inf"},
        {0x7fffffff, 0x7fff, "NaN that plain rounding would carry into the sign"},
        {0x7fa00000, 0x7fe0, "signalling NaN with a payload: quieted, payload kept"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        zt_bf16 got = zt_bf16_from_fp32(float_of(t[i].in));
        if (got != t[i].want) {
            fprintf(stderr, "  0x%08x (%s): got 0x%04x, want 0x%04x\n", t[i].in, t[i].what, got,
                    t[i].want);
            return ZT_FAIL;
        }
    }
    return ZT_PASS;
}

// RNE by value comparison in double: the two bf16 neighbours of |x| (truncation, and the
// next magnitude, 2^128 past the largest finite), the nearer wins, a tie goes to the even
// mantissa. Exact: x and both neighbours are multiples of x's ulp within 2^26 of it.
static zt_bf16 reference_round(uint32_t u) {
    zt_bf16 lo = (zt_bf16)(u >> 16), hi = (zt_bf16)(lo + 1);
    double ax = fabs((double)float_of(u));
    if (isinf(ax)) return lo;
    double below = ax - fabs(bf16_value(lo, 1)), above = fabs(bf16_value(hi, 1)) - ax;
    if (below < above) return lo;
    if (above < below) return hi;
    return (lo & 1) ? hi : lo;
}

// ~1e6 fp32 values: random bit patterns (every exponent, subnormals, Inf, NaN), values made
// to sit at or next to a tie, and values near 1; against reference_round (NaNs: quiet NaN,
// sign kept).
ZT_TEST(bf16_round_random) {
    uint64_t s = 12345;
    long n = 1000000, ties = 0;
    for (long i = 0; i < n; i++) {
        uint32_t u = (uint32_t)splitmix(&s);
        if (i % 4 == 1) u = (u & 0xffff0000u) | 0x8000u;                   // a tie
        if (i % 4 == 2) u = (u & 0xffff0000u) | (0x7fffu + (u >> 16) % 3); // beside one
        if (i % 4 == 3) u = 0x3f000000u | (u & 0x80ffffffu);               // [0.5, 2)
        zt_bf16 got = zt_bf16_from_fp32(float_of(u));
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            CHECK(bf16_is_nan(got) && (got & 0x0040) && (got >> 15) == (u >> 31));
            continue;
        }
        ties += (u & 0xffffu) == 0x8000u;
        zt_bf16 want = reference_round(u);
        if (got != want) {
            fprintf(stderr, "  0x%08x (%.9g): got 0x%04x, want 0x%04x\n", u, float_of(u), got,
                    want);
            return ZT_FAIL;
        }
    }
    printf("  %ld values, %ld exact ties\n", n, ties);
    CHECK(ties >= n / 5); // the tie cases above did run
    return ZT_PASS;
}

// The bulk conversions equal the scalar ones bit for bit (odd lengths for the vector
// tails, large enough to run on all threads), and the matrix forms keep out of the padding.
ZT_TEST(bf16_arrays) {
    size_t n = 3 * 65536 + 5;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    zt_bf16 *b = malloc(n * sizeof *b);
    uint64_t s = 7;
    for (size_t i = 0; i < n; i++) x[i] = float_of((uint32_t)splitmix(&s));
    zt_bf16_from_fp32_array(b, x, n);
    zt_bf16_to_fp32_array(y, b, n);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_INT(b[i], zt_bf16_from_fp32(x[i]));
        CHECK_EQ_INT(bits_of(y[i]), bits_of(zt_bf16_to_fp32(b[i])));
    }
    int rows = 300, cols = 257, ld_in = 260, ld_out = 263;
    for (size_t i = 0; i < (size_t)rows * ld_out; i++) y[i] = -7.0f; // padding sentinel
    zt_bf16_to_fp32_matrix(y, ld_out, b, ld_in, rows, cols);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ld_out; c++) {
            float want = c < cols ? zt_bf16_to_fp32(b[(size_t)r * ld_in + c]) : -7.0f;
            CHECK_EQ_INT(bits_of(y[(size_t)r * ld_out + c]), bits_of(want));
        }
    // rounding in place of fp32 (gemm_mixed's fallback): the two conversions in one pass
    for (size_t i = 0; i < (size_t)rows * ld_out; i++) y[i] = -7.0f;
    zt_bf16_round_fp32_matrix(y, ld_out, x, ld_in, rows, cols);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ld_out; c++) {
            float want = c < cols ? zt_bf16_to_fp32(zt_bf16_from_fp32(x[(size_t)r * ld_in + c]))
                                  : -7.0f;
            CHECK_EQ_INT(bits_of(y[(size_t)r * ld_out + c]), bits_of(want));
        }
    free(x), free(y), free(b);
    return ZT_PASS;
}

// ---- the GEMM ----

typedef struct {
    int ta, tb, M, N, K, pad; // pad: extra columns of every leading dimension
    float alpha, beta;
} gemm_case;

// Random bf16 in [-1, 1] (the padding too: a wrong leading dimension reads it).
static void fill_bf16(zt_bf16 *b, size_t n, uint64_t *s) {
    for (size_t i = 0; i < n; i++)
        b[i] = zt_bf16_from_fp32((float)((double)(splitmix(s) >> 11) * 0x1p-52 - 1.0));
}

// gamma_n = n u / (1 - n u): the bound on the relative error of n roundings in a row.
static double gamma_n(double n, double u) { return n * u / (1 - n * u); }

// One case through the path chosen with zt_gemm_bf16_set_path,
// checked element by element against the exact result (dgemm on the same bf16 values) and
// against fp32 sgemm on them. The tolerance: a product of two bf16 (8-bit significands) is
// exact in fp32 (16 bits), so an fp32 result differs from the exact one only by roundings.
// C[i,j] sums K + 1 terms (the products and beta*c), which takes K additions in whatever
// order or blocking, so no term passes more than K of them, plus one multiplication (by alpha
// or beta): |err| <= gamma_{K+1} (|alpha| sum_k |a_ik||b_kj| + |beta||c_ij|), u = 2^-24,
// gamma_n = n u / (1 - n u). We use gamma_{K+2} (one rounding to spare), plus dgemm's own
// error (the same with u = 2^-53); two fp32 results are within twice that of each other.
static int check_gemm(const gemm_case *g, double *worst) {
    int ar = g->ta ? g->K : g->M, ac = g->ta ? g->M : g->K, lda = ac + g->pad;
    int br = g->tb ? g->N : g->K, bc = g->tb ? g->K : g->N, ldb = bc + g->pad;
    int ldc = g->N + g->pad;
    size_t na = (size_t)ar * lda, nb = (size_t)br * ldb, nc = (size_t)g->M * ldc;
    zt_bf16 *A = malloc(na * 2), *B = malloc(nb * 2);
    float *fa = malloc(na * 4), *fb = malloc(nb * 4), *c0 = malloc(nc * 4), *got = malloc(nc * 4),
          *sref = malloc(nc * 4);
    double *da = malloc(na * 8), *db = malloc(nb * 8), *xa = malloc(na * 8), *xb = malloc(nb * 8),
           *exact = malloc(nc * 8), *sum = malloc(nc * 8);
    uint64_t s = (uint64_t)g->M * 1000003u + g->N * 1009u + g->K;
    fill_bf16(A, na, &s), fill_bf16(B, nb, &s);
    for (size_t i = 0; i < nc; i++) c0[i] = (float)((double)(splitmix(&s) >> 11) * 0x1p-52 - 1);
    zt_bf16_to_fp32_array(fa, A, na), zt_bf16_to_fp32_array(fb, B, nb);
    for (size_t i = 0; i < na; i++) da[i] = fa[i], xa[i] = fabs(da[i]);
    for (size_t i = 0; i < nb; i++) db[i] = fb[i], xb[i] = fabs(db[i]);
    for (size_t i = 0; i < nc; i++) exact[i] = c0[i], sum[i] = 0;
    memcpy(got, c0, nc * 4), memcpy(sref, c0, nc * 4);
    CBLAS_TRANSPOSE ta = g->ta ? CblasTrans : CblasNoTrans, tb = g->tb ? CblasTrans : CblasNoTrans;
    cblas_dgemm(CblasRowMajor, ta, tb, g->M, g->N, g->K, g->alpha, da, lda, db, ldb, g->beta,
                exact, ldc);
    cblas_dgemm(CblasRowMajor, ta, tb, g->M, g->N, g->K, 1, xa, lda, xb, ldb, 0, sum, ldc);
    cblas_sgemm(CblasRowMajor, ta, tb, g->M, g->N, g->K, g->alpha, fa, lda, fb, ldb, g->beta, sref,
                ldc);
    float *work = malloc((zt_gemm_bf16_workspace(g->M, g->N, g->K) + 1) * 4);
    zt_gemm_bf16(g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, lda, B, ldb, g->beta, got, ldc, work);
    double g32 = gamma_n(g->K + 2, 0x1p-24), g64 = gamma_n(g->K + 2, 0x1p-53);
    int bad = 0;
    for (int i = 0; i < g->M && !bad; i++)
        for (int j = 0; j < ldc; j++) {
            size_t k = (size_t)i * ldc + j;
            if (j >= g->N && bits_of(got[k]) != bits_of(c0[k])) {
                fprintf(stderr, "  C[%d,%d] is padding, written: %.9g\n", i, j, got[k]);
                bad = 1;
                break;
            }
            if (j >= g->N) continue;
            double scale = fabs(g->alpha) * sum[k] + fabs(g->beta) * fabs(c0[k]);
            double tol = g32 * scale + g64 * scale, e = fabs(got[k] - exact[k]);
            double e32 = fabs((double)got[k] - sref[k]);
            if (e / tol > *worst) *worst = e / tol;
            if (!(e <= tol) || !(e32 <= 2 * tol)) {
                fprintf(stderr, "  C[%d,%d] = %.9g, exact %.9g, sgemm %.9g, bound %.3g\n", i, j,
                        got[k], exact[k], sref[k], tol);
                bad = 1;
                break;
            }
        }
    free(A), free(B), free(fa), free(fb), free(c0), free(got), free(sref), free(da), free(db);
    free(xa), free(xb), free(exact), free(sum), free(work);
    return bad;
}

// Small odd shapes in all four transpose forms with padded leading dimensions and both
// scalars; the edges BLAS defines: K = 0 (C = beta C; beta 0 zeros it), K = 1, M or N = 0
// (nothing written: the padding check sees C's column 0 when N = 0); then GPT-2 124M's
// products at 256 tokens: c_attn forward (NT), mlp c_proj forward into an accumulating C
// (NN), a weight gradient (TN).
static const gemm_case small_cases[] = {
    {0, 0, 7, 5, 3, 0, 1.0f, 0.0f},     {0, 0, 33, 17, 70, 3, 0.5f, 0.25f},
    {0, 1, 33, 17, 70, 1, -1.5f, 1.0f}, {1, 0, 33, 17, 70, 2, 2.0f, -0.5f},
    {1, 1, 33, 17, 70, 5, 1.0f, 1.0f},  {0, 0, 1, 1, 1, 0, 1.0f, 0.0f},
    {0, 0, 5, 4, 0, 1, 1.0f, 0.5f},     {1, 1, 5, 4, 0, 1, 2.0f, 0.0f},
    {0, 1, 5, 4, 0, 1, 1.0f, 1.0f},     {1, 0, 6, 3, 1, 1, -1.5f, 0.5f},
    {0, 0, 0, 4, 3, 1, 1.0f, 0.5f},     {1, 0, 5, 0, 3, 1, 1.0f, 0.5f},
};
static const gemm_case gpt2_cases[] = {
    {0, 1, 256, 2304, 768, 0, 1.0f, 0.0f},
    {0, 0, 256, 768, 3072, 0, 1.0f, 1.0f},
    {1, 0, 768, 2304, 256, 0, 1.0f, 1.0f},
};

static int run_cases(const gemm_case *c, int n) {
    for (int i = 0; i < n; i++) {
        double worst = 0;
        int bad = check_gemm(&c[i], &worst);
        printf("  %c%c M=%d N=%d K=%d alpha=%g beta=%g: worst |err| / bound = %.3g %s\n",
               c[i].ta ? 'T' : 'N', c[i].tb ? 'T' : 'N', c[i].M, c[i].N, c[i].K, c[i].alpha,
               c[i].beta, worst, bad ? "FAIL" : "ok");
        if (bad) return ZT_FAIL;
    }
    return ZT_PASS;
}

static int run_path(zt_bf16_gemm_path path) {
    char line[256];
    zt_gemm_bf16_describe(line, sizeof line);
    printf("  %s\n", line);
    CHECK_EQ_INT(zt_gemm_bf16_path(), path);
    int r = run_cases(small_cases, sizeof small_cases / sizeof small_cases[0]);
    if (r == ZT_PASS)
        r = run_cases(gpt2_cases, sizeof gpt2_cases / sizeof gpt2_cases[0]);
    zt_gemm_bf16_set_path(ZT_BF16_GEMM_AUTO);
    return r;
}

// The fallback (widen to fp32, zt_gemm), forced: it runs on every CPU.
ZT_TEST(gemm_bf16_fallback) {
    CHECK(zt_gemm_bf16_set_path(ZT_BF16_GEMM_FALLBACK) == ZT_OK);
    return run_path(ZT_BF16_GEMM_FALLBACK);
}

// oneDNN's bf16 kernels, where the CPU has AVX512-BF16 or AMX-BF16 (SKIP elsewhere).
ZT_TEST(gemm_bf16_dnnl) {
    if (zt_gemm_bf16_set_path(ZT_BF16_GEMM_DNNL) != ZT_OK) {
        printf("  SKIP: %s\n", zt_error_message());
        return ZT_SKIP;
    }
    return run_path(ZT_BF16_GEMM_DNNL);
}

// oneDNN's matmul primitive through zt_gemm_bf16 (SKIP where oneDNN has no bf16 kernels).
ZT_TEST(gemm_bf16_dnnl_matmul) {
    if (zt_gemm_bf16_set_path(ZT_BF16_GEMM_DNNL_MATMUL) != ZT_OK) {
        printf("  SKIP: %s\n", zt_error_message());
        return ZT_SKIP;
    }
    return run_path(ZT_BF16_GEMM_DNNL_MATMUL);
}

// Forcing oneDNN is refused with a clear message where it has no bf16 instructions to run:
// the pure check on made-up CPUs, then this CPU through zt_gemm_bf16_set_path.
ZT_TEST(gemm_bf16_dnnl_refused) {
    zt_bf16_cpu none = {0, 0, dnnl_cpu_isa_avx2}, avx512 = {1, 0, dnnl_cpu_isa_avx512_core_bf16};
    zt_bf16_cpu amx = {0, 1, dnnl_cpu_isa_avx512_core_amx};
    zt_bf16_cpu capped = {1, 1, dnnl_cpu_isa_avx512_core}; // DNNL_MAX_CPU_ISA below bf16
    CHECK(zt_gemm_bf16_dnnl_check(&none) == ZT_ERR);
    printf("  no bf16: %s\n", zt_error_message());
    CHECK(strstr(zt_error_message(), "AVX512-BF16") && strstr(zt_error_message(), "AMX-BF16"));
    CHECK(zt_gemm_bf16_dnnl_check(&capped) == ZT_ERR);
    printf("  capped: %s\n", zt_error_message());
    CHECK(strstr(zt_error_message(), "DNNL_MAX_CPU_ISA"));
    CHECK(zt_gemm_bf16_dnnl_check(&avx512) == ZT_OK);
    CHECK(zt_gemm_bf16_dnnl_check(&amx) == ZT_OK);

    const zt_bf16_cpu *cpu = zt_bf16_cpu_get();
    printf("  this CPU: avx512_bf16 %d, amx_bf16 %d, oneDNN isa 0x%x\n", cpu->avx512_bf16,
           cpu->amx_bf16, cpu->dnnl_isa);
    int has = zt_gemm_bf16_dnnl_check(cpu) == ZT_OK;
    // AUTO: the matmul primitive wherever oneDNN has bf16 kernels
    CHECK_EQ_INT(zt_gemm_bf16_path(), has ? ZT_BF16_GEMM_DNNL_MATMUL : ZT_BF16_GEMM_FALLBACK);
    // the primitive itself: made on a CPU with bf16 kernels; none below AVX-512 (this AVX2
    // machine: oneDNN 2.6.3 says unimplemented), either way on plain AVX-512 (it emulates)
    zt_status ms = zt_matmul_dnnl_check();
    printf("  oneDNN's bf16 matmul here: %s\n", ms == ZT_OK ? "made" : zt_error_message());
    int bf16_bits = (int)dnnl_cpu_isa_avx512_core_bf16, core_bits = (int)dnnl_cpu_isa_avx512_core;
    if ((cpu->dnnl_isa & bf16_bits) == bf16_bits) CHECK(ms == ZT_OK);
    if ((cpu->dnnl_isa & core_bits) != core_bits)
        CHECK(ms == ZT_ERR && strstr(zt_error_message(), "no bf16 matmul for this CPU"));
    for (int m = 0; m < 2; m++) { // the gemm API, then the matmul primitive
        zt_bf16_gemm_path p = m ? ZT_BF16_GEMM_DNNL_MATMUL : ZT_BF16_GEMM_DNNL;
        CHECK(zt_gemm_bf16_set_path(ZT_BF16_GEMM_FALLBACK) == ZT_OK);
        zt_errorf("%s", "");
        zt_status s = zt_gemm_bf16_set_path(p);
        if (has) {
            CHECK(s == ZT_OK);
            CHECK_EQ_INT(zt_gemm_bf16_path(), p);
        } else {
            CHECK(s == ZT_ERR);
            printf("  refused here: %s\n", zt_error_message());
            CHECK(strstr(zt_error_message(), "AVX512-BF16") != NULL);
            CHECK_EQ_INT(zt_gemm_bf16_path(), ZT_BF16_GEMM_FALLBACK); // unchanged
        }
    }
    zt_gemm_bf16_set_path(ZT_BF16_GEMM_AUTO);
    return ZT_PASS;
}

// One OpenMP runtime in the process: oneDNN is built on OpenMP and shares our libgomp (two
// runtimes would be two thread pools fighting for the cores).
static int count_openmp(struct dl_phdr_info *info, size_t size, void *data) {
    int *n = data;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    n[0] += strstr(name, "libgomp") || strstr(name, "libiomp") || strstr(name, "libomp.");
    n[1] += strstr(name, "libdnnl") != NULL;
    return 0;
}

ZT_TEST(gemm_bf16_dnnl_one_openmp_pool) {
    const dnnl_version_t *v = dnnl_version();
    printf("  oneDNN %d.%d.%d, CPU runtime %u (OpenMP %u)\n", v->major, v->minor, v->patch,
           v->cpu_runtime, (unsigned)DNNL_RUNTIME_OMP);
    CHECK_EQ_INT(v->cpu_runtime, DNNL_RUNTIME_OMP);
    int n[2] = {0, 0};
    dl_iterate_phdr(count_openmp, n);
    CHECK_EQ_INT(n[1], 1); // linked
    CHECK_EQ_INT(n[0], 1);
    return ZT_PASS;
}
