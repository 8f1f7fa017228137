// Tests of the CPU kernels and the optimizer: every backward against central finite
// differences of a double-precision reference forward, every forward against that
// reference, AdamW against PyTorch's formulas, the grad-norm counting rules, bit-exact
// results across thread counts, and guard regions around every output.
//
// How the gradient oracles work: for each kernel the file has a tiny double-precision
// reference forward (ref_*). The objective is L = sum(out * R) with a fixed random R,
// so dout = R, and dL/dx is taken by central differences of the double reference with
// h = 1e-5: truncation error O(h^2 * |f'''|) ~ 1e-10 and rounding O(1e-16 * |L| / h) ~
// 1e-10, far below the float kernels' own error. Tolerances therefore only budget the
// float32 arithmetic of the kernel under test (eps32 = 6e-8 per operation, growing with
// the number of terms a value sums); each states its reason where it is used. The float
// forward is checked against the same reference, so the kernel pair is consistent.
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adamw.h"
#include "adamw_math.h"
#include "common.h"
#include "grad_norm.h"
#include "kernels.h"
#include "vocab_loss.h"
#include "layout.h"
#include "rng.h"
#include "test.h"

// ---------------------------------------------------------------------------------------
// Scratch memory: every block a test takes is released by the next tmem_release(), so a
// failing CHECK that returns early leaks nothing into the following test.

#define MAX_BLOCKS 512
static void *g_blocks[MAX_BLOCKS];
static int g_nblocks;

static void *tmem(size_t bytes) {
    ZT_ASSERT(g_nblocks < MAX_BLOCKS);
    void *p = calloc(1, bytes ? bytes : 1);
    ZT_ASSERT(p);
    g_blocks[g_nblocks++] = p;
    return p;
}

static void tmem_release(void) {
    while (g_nblocks > 0) free(g_blocks[--g_nblocks]);
}

// Guard regions (as ggml's tests): GUARD sentinel floats before and after every output,
// checked after the kernel ran. The interior starts as NaN, so an output the kernel must
// write (not add to) fails the comparison if any element is skipped.
#define GUARD 16
static const float SENTINEL = -1.2345678e31f;

static float *fvec(size_t n) {
    float *p = tmem((n + 2 * GUARD) * sizeof(float));
    for (size_t i = 0; i < GUARD; i++) p[i] = p[GUARD + n + i] = SENTINEL;
    for (size_t i = 0; i < n; i++) p[GUARD + i] = NAN;
    return p + GUARD;
}

static int guards_ok(const char *what, const float *p, size_t n) {
    for (int i = 0; i < GUARD; i++) {
        const float *lo = p - GUARD + i, *hi = p + n + i;
        if (memcmp(lo, &SENTINEL, sizeof(float)) || memcmp(hi, &SENTINEL, sizeof(float))) {
            fprintf(stderr, "  %s: write outside the output (guard %d %s)\n", what, i,
                    memcmp(lo, &SENTINEL, sizeof(float)) ? "before" : "after");
            return 0;
        }
    }
    return 1;
}

static double *dvec(size_t n) { return tmem(n * sizeof(double)); }

// x[i] = scale * N(0, 1), reproducible from `seed`.
static void fill_randn(float *x, size_t n, uint64_t seed, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * zt_normal(seed, i);
}

static float *randn_vec(size_t n, uint64_t seed, float scale) {
    float *x = fvec(n);
    fill_randn(x, n, seed, scale);
    return x;
}

static double *to_double(const float *x, size_t n) {
    double *d = dvec(n);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

// float(base + g) computed in double (base NULL: float(g)): the expected value of an
// output the kernel adds gradient g into.
static float *expect_plus(const float *base, const double *g, size_t n) {
    float *e = fvec(n);
    for (size_t i = 0; i < n; i++) e[i] = (float)((base ? base[i] : 0.0) + g[i]);
    return e;
}

static float *copy_f(const float *x, size_t n) {
    float *c = fvec(n);
    memcpy(c, x, n * sizeof(float));
    return c;
}

static double dot_d(const double *a, const double *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

// Central finite differences: grad[i] = (f(x + h e_i) - f(x - h e_i)) / 2h. `x` is
// perturbed in place and must be an input that `f` reads through `ctx`.
typedef double (*objective_fn)(const void *ctx);
#define FD_H 1e-5

static void fd_grad(double *grad, double *x, size_t n, objective_fn f, const void *ctx) {
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i];
        x[i] = x0 + FD_H;
        double fp = f(ctx);
        x[i] = x0 - FD_H;
        double fm = f(ctx);
        x[i] = x0;
        grad[i] = (fp - fm) / (2.0 * FD_H);
    }
}

// ---------------------------------------------------------------------------------------
// LayerNorm

// out (N, C) = (x - mean) / sqrt(var + 1e-5) * w + b, biased variance (GPT-2).
static void ref_layernorm(double *out, double *mean, double *rstd, const double *x,
                          const double *w, const double *b, int N, int C) {
    for (int n = 0; n < N; n++) {
        const double *xr = x + (size_t)n * C;
        double m = 0.0, v = 0.0;
        for (int c = 0; c < C; c++) m += xr[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (xr[c] - m) * (xr[c] - m);
        v /= C;
        double s = 1.0 / sqrt(v + 1e-5);
        for (int c = 0; c < C; c++) out[(size_t)n * C + c] = (xr[c] - m) * s * w[c] + b[c];
        if (mean) mean[n] = m;
        if (rstd) rstd[n] = s;
    }
}

typedef struct {
    const double *x, *w, *b, *R;
    double *out;
    int N, C;
} ln_ctx;

static double ln_objective(const void *p) {
    const ln_ctx *c = p;
    ref_layernorm(c->out, NULL, NULL, c->x, c->w, c->b, c->N, c->C);
    return dot_d(c->out, c->R, (size_t)c->N * c->C);
}

ZT_TEST(kernel_layernorm) {
    tmem_release();
    const int N = 5, C = 24;
    const size_t NC = (size_t)N * C;
    float *x = randn_vec(NC, 101, 2.0f), *w = randn_vec(C, 102, 1.0f);
    float *b = randn_vec(C, 103, 0.5f), *R = randn_vec(NC, 104, 1.0f);
    for (size_t i = 0; i < NC; i++) x[i] += 0.7f; // a nonzero mean to subtract
    float *out = fvec(NC), *mean = fvec(N), *rstd = fvec(N);
    zt_layernorm_forward(out, mean, rstd, x, w, b, N, C);
    CHECK(guards_ok("ln out", out, NC) && guards_ok("ln mean", mean, N) &&
          guards_ok("ln rstd", rstd, N));

    ln_ctx ctx = {to_double(x, NC), to_double(w, C), to_double(b, C), to_double(R, NC),
                  dvec(NC), N, C};
    double *rmean = dvec(N), *rstd_d = dvec(N);
    ref_layernorm(ctx.out, rmean, rstd_d, ctx.x, ctx.w, ctx.b, N, C);
    // Forward: each output is a C=24-term mean and variance in float, then a few
    // products; |out| <= ~5, so error ~ C * eps32 * 5 ~ 1e-5 at worst, typically 1e-6.
    CHECK_CLOSE("ln forward", out, expect_plus(NULL, ctx.out, NC), NC, 2e-5, 1e-5);
    CHECK_CLOSE("ln mean", mean, expect_plus(NULL, rmean, N), N, 1e-6, 1e-6);
    CHECK_CLOSE("ln rstd", rstd, expect_plus(NULL, rstd_d, N), N, 0, 1e-5);

    // Backward adds into all three outputs: prefill them with random values.
    float *dinp0 = randn_vec(NC, 105, 1.0f), *dw0 = randn_vec(C, 106, 1.0f);
    float *db0 = randn_vec(C, 107, 1.0f);
    float *dinp = copy_f(dinp0, NC), *dw = copy_f(dw0, C), *db = copy_f(db0, C);
    zt_layernorm_backward(dinp, dw, db, R, x, w, mean, rstd, N, C);
    CHECK(guards_ok("ln dinp", dinp, NC) && guards_ok("ln dw", dw, C) &&
          guards_ok("ln db", db, C));

    double *gx = dvec(NC), *gw = dvec(C), *gb = dvec(C);
    fd_grad(gx, (double *)ctx.x, NC, ln_objective, &ctx);
    fd_grad(gw, (double *)ctx.w, C, ln_objective, &ctx);
    fd_grad(gb, (double *)ctx.b, C, ln_objective, &ctx);
    // dinp sums two C=24-term means of |dout*w| ~ 1 and is scaled by rstd ~ 0.5: float
    // error ~ 2 * C * eps32 ~ 3e-6; dw, db sum N=5 terms of O(1): error ~ 1e-6. The
    // prefilled O(1) base adds one rounding (eps32 * |ref|), covered by rtol.
    CHECK_CLOSE("ln dinp (+=)", dinp, expect_plus(dinp0, gx, NC), NC, 2e-5, 1e-5);
    CHECK_CLOSE("ln dw (+=)", dw, expect_plus(dw0, gw, C), C, 1e-5, 1e-5);
    CHECK_CLOSE("ln db (+=)", db, expect_plus(db0, gb, C), C, 1e-5, 1e-5);
    tmem_release();
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------
// Matmul

// out (N, OC) = x (N, C) @ w^T (OC, C) + bias (OC, NULL for none).
static void ref_matmul(double *out, const double *x, const double *w, const double *bias, int N,
                       int C, int OC) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = bias ? bias[o] : 0.0;
            for (int c = 0; c < C; c++) s += x[(size_t)n * C + c] * w[(size_t)o * C + c];
            out[(size_t)n * OC + o] = s;
        }
}

typedef struct {
    const double *x, *w, *bias, *R;
    double *out;
    int N, C, OC;
} mm_ctx;

static double mm_objective(const void *p) {
    const mm_ctx *c = p;
    ref_matmul(c->out, c->x, c->w, c->bias, c->N, c->C, c->OC);
    return dot_d(c->out, c->R, (size_t)c->N * c->OC);
}

ZT_TEST(kernel_matmul) {
    tmem_release();
    const int N = 5, C = 7, OC = 6; // odd sizes: no kernel path can assume a multiple
    const size_t NC = (size_t)N * C, WN = (size_t)OC * C, NO = (size_t)N * OC;
    float *x = randn_vec(NC, 201, 1.0f), *w = randn_vec(WN, 202, 1.0f);
    float *bias = randn_vec(OC, 203, 1.0f), *R = randn_vec(NO, 204, 1.0f);
    mm_ctx ctx = {to_double(x, NC), to_double(w, WN), to_double(bias, OC), to_double(R, NO),
                  dvec(NO), N, C, OC};

    // Forward with and without bias: C=7 products of O(1) summed in float, |out| ~ 3:
    // error ~ C * eps32 * 3 ~ 1e-6.
    float *out = fvec(NO);
    zt_matmul_forward(out, x, w, bias, N, C, OC);
    CHECK(guards_ok("mm out", out, NO));
    ref_matmul(ctx.out, ctx.x, ctx.w, ctx.bias, N, C, OC);
    CHECK_CLOSE("mm forward", out, expect_plus(NULL, ctx.out, NO), NO, 5e-6, 1e-6);
    float *out_nb = fvec(NO);
    zt_matmul_forward(out_nb, x, w, NULL, N, C, OC);
    CHECK(guards_ok("mm out (no bias)", out_nb, NO));
    ref_matmul(ctx.out, ctx.x, ctx.w, NULL, N, C, OC);
    CHECK_CLOSE("mm forward (no bias)", out_nb, expect_plus(NULL, ctx.out, NO), NO, 5e-6, 1e-6);

    double *gx = dvec(NC), *gw = dvec(WN), *gb = dvec(OC);
    fd_grad(gx, (double *)ctx.x, NC, mm_objective, &ctx);
    fd_grad(gw, (double *)ctx.w, WN, mm_objective, &ctx);
    fd_grad(gb, (double *)ctx.bias, OC, mm_objective, &ctx);

    // dinp sums OC=6 products, dw N=5, dbias N=5, all O(1): float error ~ 6 * eps32 * 3
    // ~ 1e-6; the O(1) prefilled base adds eps32 * |ref| (rtol).
    float *dw0 = randn_vec(WN, 205, 1.0f), *db0 = randn_vec(OC, 206, 1.0f);
    float *dinp0 = randn_vec(NC, 207, 1.0f);
    for (int acc = 0; acc <= 1; acc++) {
        // accumulate_dinp = 0 must overwrite: the NaN prefill of fvec must be gone.
        float *dinp = acc ? copy_f(dinp0, NC) : fvec(NC);
        float *dw = copy_f(dw0, WN), *db = copy_f(db0, OC);
        zt_matmul_backward(dinp, dw, db, R, x, w, N, C, OC, acc);
        CHECK(guards_ok("mm dinp", dinp, NC) && guards_ok("mm dw", dw, WN) &&
              guards_ok("mm dbias", db, OC));
        CHECK_CLOSE(acc ? "mm dinp (accumulate=1, +=)" : "mm dinp (accumulate=0, =)", dinp,
                    expect_plus(acc ? dinp0 : NULL, gx, NC), NC, 5e-6, 1e-6);
        CHECK_CLOSE("mm dw (+=)", dw, expect_plus(dw0, gw, WN), WN, 5e-6, 1e-6);
        CHECK_CLOSE("mm dbias (+=)", db, expect_plus(db0, gb, OC), OC, 5e-6, 1e-6);
    }
    // dbias NULL skips the bias gradient and leaves dinp, dw as before.
    float *dinp = fvec(NC), *dw = copy_f(dw0, WN);
    zt_matmul_backward(dinp, dw, NULL, R, x, w, N, C, OC, 0);
    CHECK(guards_ok("mm dinp (no dbias)", dinp, NC) && guards_ok("mm dw (no dbias)", dw, WN));
    CHECK_CLOSE("mm dw (dbias NULL)", dw, expect_plus(dw0, gw, WN), WN, 5e-6, 1e-6);

    // The (in, out) variants of the row-parallel layers: the same layer with the weight
    // stored transposed, against the same finite-difference gradients (transposed).
    float *wt = fvec(WN), *dwt0 = fvec(WN);
    double *gwt = dvec(WN);
    for (int o = 0; o < OC; o++)
        for (int c = 0; c < C; c++) {
            wt[(size_t)c * OC + o] = w[(size_t)o * C + c];
            dwt0[(size_t)c * OC + o] = dw0[(size_t)o * C + c];
            gwt[(size_t)c * OC + o] = gw[(size_t)o * C + c];
        }
    float *out_t = fvec(NO);
    zt_matmul_in_out_forward(out_t, x, wt, bias, N, C, OC);
    CHECK(guards_ok("mm in_out out", out_t, NO));
    ref_matmul(ctx.out, ctx.x, ctx.w, ctx.bias, N, C, OC);
    CHECK_CLOSE("mm in_out forward", out_t, expect_plus(NULL, ctx.out, NO), NO, 5e-6, 1e-6);
    for (int acc = 0; acc <= 1; acc++) {
        float *dinp_t = acc ? copy_f(dinp0, NC) : fvec(NC);
        float *dw_t = copy_f(dwt0, WN), *db_t = copy_f(db0, OC);
        zt_matmul_in_out_backward(dinp_t, dw_t, db_t, R, x, wt, N, C, OC, acc);
        CHECK(guards_ok("mm in_out dinp", dinp_t, NC) && guards_ok("mm in_out dw", dw_t, WN));
        CHECK_CLOSE("mm in_out dinp", dinp_t, expect_plus(acc ? dinp0 : NULL, gx, NC), NC, 5e-6,
                    1e-6);
        CHECK_CLOSE("mm in_out dw (+=)", dw_t, expect_plus(dwt0, gwt, WN), WN, 5e-6, 1e-6);
        CHECK_CLOSE("mm in_out dbias (+=)", db_t, expect_plus(db0, gb, OC), OC, 5e-6, 1e-6);
    }
    tmem_release();
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------
// GELU (tanh approximation, as GPT-2)

static double ref_gelu(double x) {
    double k = sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

typedef struct {
    const double *x, *R;
    size_t n;
} gelu_ctx;

static double gelu_objective(const void *p) {
    const gelu_ctx *c = p;
    double s = 0.0;
    for (size_t i = 0; i < c->n; i++) s += ref_gelu(c->x[i]) * c->R[i];
    return s;
}

ZT_TEST(kernel_gelu) {
    tmem_release();
    const size_t n = 67;
    float *x = randn_vec(n, 301, 2.5f), *R = randn_vec(n, 302, 1.0f);
    // the tails and the middle, where tanh saturates or is linear
    x[0] = 0.0f, x[1] = 8.0f, x[2] = -8.0f, x[3] = 1e-4f, x[4] = -3.0f;
    float *out = fvec(n), *dinp = fvec(n); // dinp NaN: it is written, not added
    zt_gelu_forward(out, x, n);
    zt_gelu_backward(dinp, x, R, n);
    CHECK(guards_ok("gelu out", out, n) && guards_ok("gelu dinp", dinp, n));
    gelu_ctx ctx = {to_double(x, n), to_double(R, n), n};
    double *ref = dvec(n), *g = dvec(n);
    for (size_t i = 0; i < n; i++) ref[i] = ref_gelu(ctx.x[i]);
    fd_grad(g, (double *)ctx.x, n, gelu_objective, &ctx);
    // A handful of float operations and one tanhf (a few ulp) per element, |out| <= 8:
    // error ~ 10 * eps32 * |x| ~ 5e-6 absolute at the tails, ~1e-6 relative elsewhere.
    CHECK_CLOSE("gelu forward", out, expect_plus(NULL, ref, n), n, 2e-6, 2e-6);
    CHECK_CLOSE("gelu dinp (=)", dinp, expect_plus(NULL, g, n), n, 2e-6, 2e-6);
    tmem_release();
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------
// Fused ops (issue 25): each must give the separate ops' bits exactly (tolerance 0), since
// the model now calls the fused op and every CPU training result stays what it was.

static int same_bits(const char *what, const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            fprintf(stderr, "  %s[%zu]: %.9g, separate ops %.9g\n", what, i, got[i], want[i]);
            return 0;
        }
    return 1;
}

// res = a + b then LayerNorm, against zt_add then zt_layernorm_forward: C with and without
// a tail past the 16 interleaved lanes (40, 768), one row and several.
ZT_TEST(kernel_fused_residual_layernorm) {
    tmem_release();
    const int shapes[][2] = {{1, 40}, {7, 40}, {5, 768}, {3, 17}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int N = shapes[k][0], C = shapes[k][1];
        size_t NC = (size_t)N * C;
        float *a = randn_vec(NC, 401 + k, 2.0f), *b = randn_vec(NC, 411 + k, 0.5f);
        float *w = randn_vec(C, 421 + k, 1.0f), *bias = randn_vec(C, 431 + k, 0.5f);
        float *res = fvec(NC), *out = fvec(NC), *mean = fvec(N), *rstd = fvec(N);
        float *res0 = fvec(NC), *out0 = fvec(NC), *mean0 = fvec(N), *rstd0 = fvec(N);
        zt_residual_layernorm_forward(res, out, mean, rstd, a, b, w, bias, N, C);
        zt_add(res0, a, b, NC);
        zt_layernorm_forward(out0, mean0, rstd0, res0, w, bias, N, C);
        CHECK(guards_ok("fused res", res, NC) && guards_ok("fused out", out, NC) &&
              guards_ok("fused mean", mean, N) && guards_ok("fused rstd", rstd, N));
        CHECK(same_bits("fused res", res, res0, NC) && same_bits("fused ln out", out, out0, NC) &&
              same_bits("fused mean", mean, mean0, N) && same_bits("fused rstd", rstd, rstd0, N));
        // in place (res = a), as the header allows
        float *a2 = copy_f(a, NC);
        zt_residual_layernorm_forward(a2, out, mean, rstd, a2, b, w, bias, N, C);
        CHECK(same_bits("fused res (in place)", a2, res0, NC) &&
              same_bits("fused ln out (in place)", out, out0, NC));
    }
    tmem_release();
    return ZT_PASS;
}

// pre = inp @ w^T + bias and out = gelu(pre), against zt_matmul_forward then zt_gelu_forward,
// with a bias and without, N * OC with a GELU block tail.
ZT_TEST(kernel_fused_matmul_gelu) {
    tmem_release();
    const int N = 7, C = 24, OC = 37;
    size_t n = (size_t)N * OC;
    float *inp = randn_vec((size_t)N * C, 501, 1.0f), *w = randn_vec((size_t)OC * C, 502, 0.3f);
    float *bias = randn_vec(OC, 503, 0.5f);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        const float *bb = with_bias ? bias : NULL;
        float *pre = fvec(n), *out = fvec(n), *pre0 = fvec(n), *out0 = fvec(n);
        zt_matmul_gelu_forward(pre, out, inp, w, bb, N, C, OC);
        zt_matmul_forward(pre0, inp, w, bb, N, C, OC);
        zt_gelu_forward(out0, pre0, n);
        CHECK(guards_ok("fused pre", pre, n) && guards_ok("fused gelu", out, n));
        CHECK(same_bits("fused pre", pre, pre0, n) && same_bits("fused gelu", out, out0, n));
    }
    tmem_release();
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------
// Encoder (token + position embedding, vocab slice)

typedef struct {
    const double *wte, *wpe, *R;
    const int32_t *tokens;
    double *out;
    int vocab_lo, vocab_rows, N, T, C;
} enc_ctx;

static void ref_encoder(double *out, const int32_t *tokens, const double *wte, const double *wpe,
                        int vocab_lo, int vocab_rows, int N, int T, int C) {
    for (int n = 0; n < N; n++) {
        int row = tokens[n] - vocab_lo;
        int own = row >= 0 && row < vocab_rows;
        for (int c = 0; c < C; c++)
            out[(size_t)n * C + c] =
                (own ? wte[(size_t)row * C + c] : 0.0) + wpe[(size_t)(n % T) * C + c];
    }
}

static double enc_objective(const void *p) {
    const enc_ctx *c = p;
    ref_encoder(c->out, c->tokens, c->wte, c->wpe, c->vocab_lo, c->vocab_rows, c->N, c->T, c->C);
    return dot_d(c->out, c->R, (size_t)c->N * c->C);
}

ZT_TEST(kernel_encoder) {
    tmem_release();
    // This rank owns vocabulary rows [4, 10); tokens 0, 3, 10 (just past the slice) and
    // 13 belong to other ranks; 5 and 9 repeat; 4 and 9 are the slice's ends.
    const int B = 2, T = 5, C = 20, lo = 4, rows = 6, maxT = T + 2;
    const int N = B * T;
    const int32_t tokens[] = {5, 5, 9, 0, 13, 4, 9, 5, 3, 10};
    const size_t NC = (size_t)N * C, EN = (size_t)rows * C, PN = (size_t)maxT * C;
    float *wte = randn_vec(EN, 401, 1.0f), *wpe = randn_vec(PN, 402, 1.0f);
    float *R = randn_vec(NC, 403, 1.0f);
    float *out = fvec(NC);
    zt_encoder_forward(out, tokens, wte, wpe, lo, rows, N, T, C);
    CHECK(guards_ok("enc out", out, NC));
    enc_ctx ctx = {to_double(wte, EN), to_double(wpe, PN), to_double(R, NC), tokens, dvec(NC),
                   lo, rows, N, T, C};
    ref_encoder(ctx.out, tokens, ctx.wte, ctx.wpe, lo, rows, N, T, C);
    // One float addition per element: error <= eps32 * |out| (rtol 1e-7 would do; the
    // double sum rounded to float can differ from the float sum by 1 ulp).
    CHECK_CLOSE("enc forward", out, expect_plus(NULL, ctx.out, NC), NC, 0, 2.5e-7);

    double *gte = dvec(EN), *gpe = dvec(PN);
    fd_grad(gte, (double *)ctx.wte, EN, enc_objective, &ctx);
    fd_grad(gpe, (double *)ctx.wpe, PN, enc_objective, &ctx);
    float *dwte0 = randn_vec(EN, 404, 1.0f), *dwpe0 = randn_vec(PN, 405, 1.0f);
    float *dwte = copy_f(dwte0, EN), *dwpe = copy_f(dwpe0, PN);
    zt_encoder_backward(dwte, dwpe, R, tokens, lo, rows, N, T, C);
    CHECK(guards_ok("enc dwte", dwte, EN) && guards_ok("enc dwpe", dwpe, PN));
    // Each gradient sums at most 3 O(1) terms into an O(1) base: error ~ 4 * eps32 * 3.
    CHECK_CLOSE("enc dwte (+=)", dwte, expect_plus(dwte0, gte, EN), EN, 1e-6, 1e-6);
    CHECK_CLOSE("enc dwpe (+=)", dwpe, expect_plus(dwpe0, gpe, PN), PN, 1e-6, 1e-6);
    // Rows of positions >= T got nothing: bit-identical to the prefill.
    CHECK(memcmp(dwpe + (size_t)T * C, dwpe0 + (size_t)T * C, (PN - (size_t)T * C) * 4) == 0);
    // dwpe NULL: dwte gets the same increments, nothing else is touched.
    float *dwte2 = copy_f(dwte0, EN);
    zt_encoder_backward(dwte2, NULL, R, tokens, lo, rows, N, T, C);
    CHECK(guards_ok("enc dwte (no dwpe)", dwte2, EN));
    CHECK(memcmp(dwte2, dwte, EN * sizeof(float)) == 0);
    tmem_release();
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------
// Attention

// Naive causal attention in double: per (b, h, i) s_j = q_i . k_j / sqrt(hs) for j <= i,
// p = softmax(s), out_i = sum_j p_j v_j. lse (B, NH, T) = log(sum_j exp(s_j)), taken
// literally (no max shift: the test scores are O(1)).
static void ref_attention(double *out, double *lse, const double *qkv, int B, int T, int C,
                          int NH) {
    int hs = C / NH;
    double scale = 1.0 / sqrt((double)hs);
    double *s = malloc((size_t)T * sizeof(double));
    ZT_ASSERT(s);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const double *q = qkv + ((size_t)b * T + i) * 3 * C + h * hs;
                double sum = 0.0;
                for (int j = 0; j <= i; j++) {
                    const double *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
                    s[j] = 0.0;
                    for (int d = 0; d < hs; d++) s[j] += q[d] * k[d];
                    s[j] *= scale;
                    sum += exp(s[j]);
                }
                if (lse) lse[((size_t)b * NH + h) * T + i] = log(sum);
                for (int d = 0; d < hs; d++) {
                    double o = 0.0;
                    for (int j = 0; j <= i; j++)
                        o += exp(s[j]) / sum * qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * hs + d];
                    out[((size_t)b * T + i) * C + h * hs + d] = o;
                }
            }
    free(s);
}

typedef struct {
    const double *qkv, *R;
    double *out;
    int B, T, C, NH;
} attn_ctx;

static double attn_objective(const void *p) {
    const attn_ctx *c = p;
    ref_attention(c->out, NULL, c->qkv, c->B, c->T, c->C, c->NH);
    return dot_d(c->out, c->R, (size_t)c->B * c->T * c->C);
}

// 1, powers of two and not; 70 and 130 cross the CPU kernel's 64-row causal blocks (two and
// three row blocks, the last one partial), where the strictly upper blocks are skipped.
static const int ATTN_T[] = {1, 2, 5, 8, 13, 70, 130};
static const int ATTN_NH[] = {1, 4};

ZT_TEST(kernel_attention_forward) {
    tmem_release();
    const int B = 2, C = 8;
    for (size_t ti = 0; ti < sizeof ATTN_T / sizeof *ATTN_T; ti++)
        for (size_t hi = 0; hi < 2; hi++) {
            int T = ATTN_T[ti], NH = ATTN_NH[hi];
            size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
            size_t nw = zt_attention_workspace(0, T);
            float *qkv = randn_vec(nq, 500 + 10 * T + NH, 1.0f);
            float *out = fvec(no), *lse = fvec(nl), *work = fvec(nw);
            zt_attention_forward(out, lse, qkv, work, B, T, C, NH);
            CHECK(guards_ok("attn out", out, no) && guards_ok("attn lse", lse, nl) &&
                  guards_ok("attn work", work, nw));
            double *ro = dvec(no), *rl = dvec(nl);
            ref_attention(ro, rl, to_double(qkv, nq), B, T, C, NH);
            printf("  T=%d NH=%d\n", T, NH);
            // Scores sum hs <= 8 float products (|s| ~ 3), the row softmax <= 13 exps,
            // the output <= 13 weighted O(1) values: error ~ 20 * eps32 * 3 ~ 4e-6.
            CHECK_CLOSE("attn out", out, expect_plus(NULL, ro, no), no, 1e-5, 1e-5);
            // lse = max + logf(sum): logf and expf are within a few ulp; |lse| <= ~5.
            CHECK_CLOSE("attn lse", lse, expect_plus(NULL, rl, nl), nl, 5e-6, 2e-6);
            tmem_release();
        }
    return ZT_PASS;
}

ZT_TEST(kernel_attention_backward) {
    tmem_release();
    const int B = 2, C = 8;
    for (size_t ti = 0; ti < sizeof ATTN_T / sizeof *ATTN_T; ti++)
        for (size_t hi = 0; hi < 2; hi++) {
            int T = ATTN_T[ti], NH = ATTN_NH[hi];
            size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
            size_t nw = zt_attention_workspace(0, T);
            float *qkv = randn_vec(nq, 600 + 10 * T + NH, 1.0f), *R = randn_vec(no, 601, 1.0f);
            float *out = fvec(no), *lse = fvec(nl), *work = fvec(nw);
            float *dqkv = fvec(nq); // NaN: dqkv is written, not added
            zt_attention_forward(out, lse, qkv, work, B, T, C, NH);
            zt_attention_backward(dqkv, R, qkv, lse, work, B, T, C, NH);
            CHECK(guards_ok("attn dqkv", dqkv, nq) && guards_ok("attn work", work, nw));
            attn_ctx ctx = {to_double(qkv, nq), to_double(R, no), dvec(no), B, T, C, NH};
            double *g = dvec(nq);
            fd_grad(g, (double *)ctx.qkv, nq, attn_objective, &ctx);
            float *e = expect_plus(NULL, g, nq);
            printf("  T=%d NH=%d\n", T, NH);
            // dq, dk, dv are the q, k, v columns of each token's 3C row. Each is a sum
            // over <= T products of probabilities (which sum to 1), O(1) values and dP (an
            // hs-term dot), so the error does not grow with T: ~ 30 * eps32 * 3 ~ 5e-6
            // (measured <= 1.5e-6 up to T = 130).
            const char *part[3] = {"attn dq", "attn dk", "attn dv"};
            for (int p = 0; p < 3; p++) {
                float *got = fvec(no), *ref = fvec(no);
                for (size_t t = 0; t < (size_t)B * T; t++)
                    for (int c = 0; c < C; c++) {
                        got[t * C + c] = dqkv[t * 3 * C + p * C + c];
                        ref[t * C + c] = e[t * 3 * C + p * C + c];
                    }
                CHECK_CLOSE(part[p], got, ref, no, 1e-5, 1e-5);
            }
            tmem_release();
        }
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------
// Cross entropy

// losses (n) = lse(x[:V]) - x[target], lse with the max subtracted, in double.
static void ref_crossentropy(double *losses, const double *x, const int32_t *targets, int n,
                             int V, int ld) {
    for (int r = 0; r < n; r++) {
        const double *row = x + (size_t)r * ld;
        double m = -INFINITY, s = 0.0;
        for (int i = 0; i < V; i++) m = row[i] > m ? row[i] : m;
        for (int i = 0; i < V; i++) s += exp(row[i] - m);
        losses[r] = m + log(s) - row[targets[r]];
    }
}

typedef struct {
    const double *x;
    const int32_t *targets;
    double *losses, scale;
    int n, V, ld;
} ce_ctx;

// L = scale * sum(losses): R is the constant `scale`, as the kernel applies one scale
// to every row.
static double ce_objective(const void *p) {
    const ce_ctx *c = p;
    ref_crossentropy(c->losses, c->x, c->targets, c->n, c->V, c->ld);
    double s = 0.0;
    for (int r = 0; r < c->n; r++) s += c->losses[r];
    return c->scale * s;
}

// One case: logits = offset + spread * N(0, 1) in the first V columns, 1e30 garbage in
// the padding; atol_loss and atol_grad are the case's tolerances (see the callers).
static int check_crossentropy(const char *name, float offset, float spread, int spike,
                              double atol_loss, double atol_grad) {
    const int n = 4, V = 7, ld = 9;
    const int32_t targets[] = {0, 6, 3, 1}; // both ends of the vocabulary
    const float scale = 0.25f;              // 1 / tokens, as the trainer passes it
    const size_t NL = (size_t)n * ld;
    float *x = fvec(NL);
    fill_randn(x, NL, 701, spread);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < ld; i++) x[(size_t)r * ld + i] = i < V ? x[(size_t)r * ld + i] + offset : 1e30f;
    // One logit per row far above the rest (never the target), so the
    // softmax is one-hot to float precision and the loss is ~spike.
    if (spike)
        for (int r = 0; r < n; r++) x[(size_t)r * ld + (r + 2) % V] += (float)spike;
    float *losses = fvec(n), *dx = fvec(NL);
    float work[3 * 4];
    zt_vocab_parallel_ce(zt_test_cpu(), NULL, dx, losses, x, ZT_F32, targets, scale, n, V, ld,
                         work);
    CHECK(guards_ok("ce losses", losses, n) && guards_ok("ce dlogits", dx, NL));
    ce_ctx ctx = {to_double(x, NL), targets, dvec(n), scale, n, V, ld};
    double *g = dvec(NL);
    fd_grad(g, (double *)ctx.x, NL, ce_objective, &ctx);
    ce_objective(&ctx); // ctx.losses at the unperturbed point
    printf("  %s\n", name);
    for (int r = 0; r < n; r++) CHECK(isfinite(losses[r]));
    CHECK_CLOSE("ce loss", losses, expect_plus(NULL, ctx.losses, n), n, atol_loss, 1e-6);
    CHECK_CLOSE("ce dlogits", dx, expect_plus(NULL, g, NL), NL, atol_grad, 1e-5);
    // Padding columns exactly zero (the FD gradient there is 0 too, but "close" is
    // not "exactly").
    for (int r = 0; r < n; r++)
        for (int i = V; i < ld; i++) CHECK(dx[(size_t)r * ld + i] == 0.0f);
    // dlogits may alias logits: the in-place call gives the same bits.
    float *inplace = copy_f(x, NL), *losses2 = fvec(n);
    zt_vocab_parallel_ce(zt_test_cpu(), NULL, inplace, losses2, inplace, ZT_F32, targets, scale, n,
                         V, ld, work);
    CHECK(guards_ok("ce in place", inplace, NL));
    CHECK(memcmp(inplace, dx, NL * sizeof(float)) == 0);
    CHECK(memcmp(losses2, losses, (size_t)n * sizeof(float)) == 0);
    return ZT_PASS;
}

ZT_TEST(kernel_crossentropy) {
    tmem_release();
    // O(1) logits: loss is lse (a V=7-term float sum of expf, a few ulp) minus a logit,
    // |loss| ~ 3: error ~ 1e-6; dlogits = scale * (expf(x - lse) - onehot), a few ulp of
    // scale: 1e-7 absolute.
    CHECK(check_crossentropy("logits ~ N(0, 3)", 0.0f, 3.0f, 0, 2e-6, 2e-7) == ZT_PASS);
    // Logits 1e4 + N(0, 1): a naive expf(1e4) is inf. The float lse ~ 1e4 is only known
    // to half an ulp of 1e4 (4.9e-4), so the O(1) loss is off by up to ~1e-3 and
    // softmax = expf(x - lse) by a relative 1e-3: dlogits error <= scale * 1e-3.
    CHECK(check_crossentropy("logits ~ 1e4 + N(0, 1)", 1e4f, 1.0f, 0, 2e-3, 3e-4) == ZT_PASS);
    // A 1e4 spike over O(1) logits: loss ~ 1e4 (relative eps32 -> ~1e-3 absolute), the
    // softmax is exactly one-hot in float and the others underflow to 0.
    CHECK(check_crossentropy("one logit +1e4", 0.0f, 1.0f, 10000, 2e-3, 1e-7) == ZT_PASS);
    // -1e4 offset: the max is very negative; lse must not collapse to -inf.
    CHECK(check_crossentropy("logits ~ -1e4 + N(0, 1)", -1e4f, 1.0f, 0, 2e-3, 3e-4) == ZT_PASS);
    tmem_release();
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------
// AdamW

typedef struct {
    double lr, beta1, beta2, eps;
} ref_adamw_cfg;

// One element step of torch.optim.AdamW (_single_tensor_adamw) in double, step t >= 1:
// param *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// param -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
static void ref_adamw(double *p, double *m, double *v, double g, double wd, int t,
                      const ref_adamw_cfg *c) {
    *p *= 1.0 - c->lr * wd;
    *m = c->beta1 * *m + (1.0 - c->beta1) * g;
    *v = c->beta2 * *v + (1.0 - c->beta2) * g * g;
    double bc1 = 1.0 - pow(c->beta1, t), bc2 = 1.0 - pow(c->beta2, t);
    double denom = sqrt(*v) / sqrt(bc2) + c->eps;
    *p -= c->lr / bc1 * *m / denom;
}

ZT_TEST(kernel_adamw_update) {
    tmem_release();
    const int n = 64, steps = 5;
    const float lr = 1e-2f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, gscale = 0.7f;
    const ref_adamw_cfg rc = {lr, b1, b2, eps}; // the same float values, widened
    float *p = randn_vec(n, 801, 1.0f), *m = fvec(n), *v = fvec(n);
    double *P = to_double(p, n), *M = dvec(n), *Vd = dvec(n);
    for (int i = 0; i < n; i++) m[i] = v[i] = 0.0f;
    for (int t = 1; t <= steps; t++) {
        float *g = randn_vec(n, 802 + t, 1.0f);
        // The first 16 gradients ~1e-8, so sqrt(v_hat) ~ eps: only eps added to
        // sqrt(v_hat) (not inside the sqrt, not to v) matches there.
        for (int i = 0; i < 16; i++) g[i] *= 1e-8f;
        g[16] = 0.0f;
        zt_adamw_hparams h = {lr, b1, b2, eps, 1.0f - powf(b1, (float)t),
                              1.0f - powf(b2, (float)t), gscale};
        for (int i = 0; i < n; i++) {
            float wd = i % 2 ? 0.1f : 0.0f;
            zt_adamw_update(&p[i], &m[i], &v[i], g[i], wd, &h);
            ref_adamw(&P[i], &M[i], &Vd[i], (double)gscale * g[i], wd, t, &rc);
        }
    }
    CHECK(guards_ok("adamw p", p, n) && guards_ok("adamw m", m, n) && guards_ok("adamw v", v, n));
    // |p| <= 3 and each step rounds p a few times (eps32 * 3 ~ 2e-7) plus the update
    // lr * m/denom (|m/denom| <= ~3) to a few ulp: 5 steps stay under 2e-6. m and v
    // are short float recurrences: relative 1e-6 (1e-5 for v, which squares g).
    CHECK_CLOSE("adamw param (5 steps)", p, expect_plus(NULL, P, n), n, 2e-6, 0);
    CHECK_CLOSE("adamw m", m, expect_plus(NULL, M, n), n, 1e-30, 1e-6);
    CHECK_CLOSE("adamw v", v, expect_plus(NULL, Vd, n), n, 1e-38, 1e-5);
    tmem_release();
    return ZT_PASS;
}

static int in_some_tensor(const zt_layout *lay, size_t k) {
    for (int i = 0; i < lay->n; i++)
        if (k >= lay->t[i].offset && k < lay->t[i].offset + lay->t[i].numel) return 1;
    return 0;
}

// Runs `steps` zt_adamw_step over [lo, hi) and checks every element of the buffer against
// the reference: updated in [lo, hi) inside tensors (decay only where the table says),
// bit-identical elsewhere (alignment padding, and other ranks' shards).
static int check_adamw_step(const zt_layout *lay, size_t lo, size_t hi) {
    const int steps = 3;
    const zt_adamw_config c = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
    const float lr = 2e-2f, gscale = 0.5f; // the step's lr overrides c.lr (schedule)
    const ref_adamw_cfg rc = {lr, c.beta1, c.beta2, c.eps};
    size_t n = lay->numel;
    float *params = randn_vec(n, 901, 1.0f), *grads = fvec(n);
    for (size_t k = 0; k < n; k++)
        if (!in_some_tensor(lay, k)) params[k] = 777.0f; // padding, must stay
    float *params0 = copy_f(params, n);
    double *P = to_double(params, n), *M = dvec(n), *V = dvec(n);
    zt_adamw o;
    zt_adamw_init(&o, zt_test_cpu(), lo, hi, ZT_F32);
    for (int t = 1; t <= steps; t++) {
        fill_randn(grads, n, 902 + t, 1.0f); // nonzero in the padding too
        zt_adamw_step(&o, params, grads, lay, &c, lr, gscale);
        for (int i = 0; i < lay->n; i++) {
            const zt_tensor_desc *d = &lay->t[i];
            double wd = d->decay ? c.weight_decay : 0.0;
            for (size_t k = d->offset; k < d->offset + d->numel; k++)
                if (k >= lo && k < hi)
                    ref_adamw(&P[k], &M[k], &V[k], (double)gscale * grads[k], wd, t, &rc);
        }
    }
    zt_adamw_free(&o);
    CHECK(guards_ok("adamw_step params", params, n));
    for (size_t k = 0; k < n; k++)
        if (!(k >= lo && k < hi && in_some_tensor(lay, k)))
            if (memcmp(&params[k], &params0[k], sizeof(float))) {
                fprintf(stderr, "  element %zu outside [%zu, %zu) or in padding changed\n", k,
                        lo, hi);
                return ZT_FAIL;
            }
    // As kernel_adamw_update: 3 steps of |p| <= 4 in float, plus lr*|m/denom| updates.
    // A wrong weight decay moves p by lr * wd * |p| ~ 2e-3, far outside.
    CHECK_CLOSE("adamw_step params", params, expect_plus(NULL, P, n), n, 2e-6, 0);
    return ZT_PASS;
}

ZT_TEST(kernel_adamw_step) {
    tmem_release();
    zt_model_shape s = {.vocab = 10, .padded_vocab = zt_padded_vocab(10, 1), .n_ctx = 4,
                        .n_layer = 2, .n_head = 2, .n_embd = 4};
    zt_layout lay;
    CHECK(zt_layout_init(&lay, &s, 0, zt_unit_count(&s), 1, 0, 32) == ZT_OK);
    // Weight decay on matrices only (GPT-2/llm.c convention): spot-check the table the
    // optimizer trusts.
    int decayed = 0;
    for (int i = 0; i < lay.n; i++) {
        CHECK_EQ_INT(lay.t[i].decay, lay.t[i].ndim == 2);
        decayed += lay.t[i].decay;
    }
    CHECK(decayed > 0 && decayed < lay.n);
    CHECK(lay.t[zt_layout_find(&lay, "h.0.ln_1.weight")].decay == 0);
    CHECK(lay.t[zt_layout_find(&lay, "h.1.attn.c_attn.bias")].decay == 0);
    CHECK(lay.t[zt_layout_find(&lay, "wte.weight")].decay == 1);
    CHECK(lay.numel > lay.t[lay.n - 1].offset + lay.t[lay.n - 1].numel ||
          lay.t[2].offset > lay.t[1].offset + lay.t[1].numel); // some padding exists
    printf("  whole buffer [0, %zu)\n", lay.numel);
    int r = check_adamw_step(&lay, 0, lay.numel);
    // A ZeRO-like shard that starts and ends inside tensors.
    size_t lo = lay.t[2].offset + 3, hi = lay.t[6].offset + 2;
    printf("  shard [%zu, %zu)\n", lo, hi);
    if (r == ZT_PASS) r = check_adamw_step(&lay, lo, hi);
    zt_layout_free(&lay);
    tmem_release();
    return r;
}

// ---------------------------------------------------------------------------------------
// Grad norm pieces

// The expected (sum of squares, non-finite count) under the rules, derived from the
// tensor names and tp split rather than the flags: with tp = 2 a tensor is replicated iff
// unsplit; the tied one is "wte.weight".
static void expected_sumsq(double out[2], const float *grads, const zt_layout *lay, size_t lo,
                           size_t hi, int count_replicated, int count_tied) {
    out[0] = out[1] = 0.0;
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        if (t->split == ZT_SPLIT_NONE && !count_replicated) continue;
        if (strcmp(t->name, "wte.weight") == 0 && !count_tied) continue;
        for (size_t k = t->offset; k < t->offset + t->numel; k++) {
            if (k < lo || k >= hi) continue;
            if (isfinite(grads[k])) out[0] += (double)grads[k] * grads[k];
            else out[1] += 1.0;
        }
    }
}

ZT_TEST(kernel_grad_sumsq) {
    tmem_release();
    zt_model_shape s = {.vocab = 10, .padded_vocab = zt_padded_vocab(10, 2), .n_ctx = 4,
                        .n_layer = 1, .n_head = 2, .n_embd = 4};
    zt_layout lay;
    CHECK(zt_layout_init(&lay, &s, 0, zt_unit_count(&s), 2, 0, 16) == ZT_OK);
    size_t n = lay.numel;
    float *grads = fvec(n);
    // Values j/8 with |j| <= 3: squares are multiples of 1/64 and every partial sum is
    // exact in double, so the comparison is exact (tolerance 0) in any summation order.
    for (size_t k = 0; k < n; k++)
        grads[k] = in_some_tensor(&lay, k) ? (float)((int)(k * 5 % 7) - 3) / 8.0f : 1000.0f;
    // Non-finite values: one in padding (never counted), a NaN in the replicated wpe,
    // an Inf in the tied wte, a -Inf in the split c_attn weight (always counted).
    for (size_t k = 0; k < n; k++)
        if (!in_some_tensor(&lay, k)) {
            grads[k] = NAN;
            break;
        }
    int wpe = zt_layout_find(&lay, "wpe.weight"), wte = zt_layout_find(&lay, "wte.weight");
    int attn = zt_layout_find(&lay, "h.0.attn.c_attn.weight");
    CHECK(wpe >= 0 && wte >= 0 && attn >= 0);
    CHECK(lay.t[wpe].replicated && !lay.t[wte].replicated && lay.t[wte].tied);
    grads[lay.t[wpe].offset + 1] = NAN;
    grads[lay.t[wte].offset + 2] = INFINITY;
    grads[lay.t[attn].offset] = -INFINITY;
    size_t ranges[2][2] = {{0, n}, {lay.t[wte].offset + 5, lay.t[attn].offset + 7}};
    for (int ri = 0; ri < 2; ri++)
        for (int cr = 0; cr <= 1; cr++)
            for (int ct = 0; ct <= 1; ct++) {
                double got[2], want[2];
                size_t lo = ranges[ri][0], hi = ranges[ri][1];
                zt_grad_sumsq(zt_test_cpu(), got, grads, ZT_F32, &lay, lo, hi, cr, ct);
                expected_sumsq(want, grads, &lay, lo, hi, cr, ct);
                printf("  [%zu, %zu) replicated=%d tied=%d: sumsq %.6f (want %.6f), "
                       "non-finite %.0f (want %.0f)\n",
                       lo, hi, cr, ct, got[0], want[0], got[1], want[1]);
                CHECK(got[0] == want[0]);
                CHECK(got[1] == want[1]);
                if (ri == 0) CHECK_EQ_INT((long long)got[1], 1 + cr + ct); // by construction
            }
    CHECK(guards_ok("grads", grads, n));
    zt_layout_free(&lay);
    tmem_release();
    return ZT_PASS;
}

// torch.nn.utils.clip_grad_norm_: clip_coef = max_norm / (total_norm + 1e-6), clamped
// to at most 1. Torch divides in the gradients' float32, we in double then round: they
// agree to 1 ulp (rtol 1.2e-7).
ZT_TEST(kernel_clip_scale) {
    const double norms[] = {0.0, 0.5, 0.999, 1.0, 1.5, 4.0, 1e6, 1e30};
    for (size_t i = 0; i < sizeof norms / sizeof *norms; i++) {
        double torch = 1.0 / (norms[i] + 1e-6);
        if (torch > 1.0) torch = 1.0;
        CHECK_NEAR(zt_clip_scale(norms[i], 1.0f), torch, 0, 1.2e-7);
        double torch3 = 3.0 / (norms[i] + 1e-6);
        CHECK_NEAR(zt_clip_scale(norms[i], 3.0f), torch3 > 1.0 ? 1.0 : torch3, 0, 1.2e-7);
    }
    CHECK(zt_clip_scale(1.0, 1.0f) < 1.0f); // at norm == max_norm torch still scales by
                                            // 1/(1 + 1e-6)
    CHECK(zt_clip_scale(123.0, 0.0f) == 1.0f); // max_norm 0: clipping off (header)
    CHECK(zt_clip_scale(INFINITY, 1.0f) == 0.0f);
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------
// Determinism across thread counts

ZT_TEST(kernel_backward_thread_determinism) {
    tmem_release();
    const int N = 64, T = 16, C = 80, lo = 3, rows = 20; // C = 5 chunks of 16 channels
    const size_t NC = (size_t)N * C, EN = (size_t)rows * C, PN = (size_t)T * C;
    int32_t tokens[64];
    for (int i = 0; i < N; i++) tokens[i] = (i * 7) % 29; // repeats, some outside the slice
    float *dout = randn_vec(NC, 1001, 1.0f), *x = randn_vec(NC, 1002, 1.0f);
    float *w = randn_vec(C, 1003, 1.0f), *b = randn_vec(C, 1004, 1.0f);
    float *mean = fvec(N), *rstd = fvec(N), *lnout = fvec(NC);
    zt_layernorm_forward(lnout, mean, rstd, x, w, b, N, C);
    float *dwte0 = randn_vec(EN, 1005, 1.0f), *dwpe0 = randn_vec(PN, 1006, 1.0f);
    float *dinp0 = randn_vec(NC, 1007, 1.0f), *dw0 = randn_vec(C, 1008, 1.0f);
    float *db0 = randn_vec(C, 1009, 1.0f);
    int saved = omp_get_max_threads();
    const int threads[] = {1, 2, 3};
    float *ref[5] = {0};
    for (int ti = 0; ti < 3; ti++) {
        omp_set_num_threads(threads[ti]);
        float *r[5] = {copy_f(dwte0, EN), copy_f(dwpe0, PN), copy_f(dinp0, NC), copy_f(dw0, C),
                       copy_f(db0, C)};
        zt_encoder_backward(r[0], r[1], dout, tokens, lo, rows, N, T, C);
        zt_layernorm_backward(r[2], r[3], r[4], dout, x, w, mean, rstd, N, C);
        const size_t sz[5] = {EN, PN, NC, C, C};
        const char *names[5] = {"dwte", "dwpe", "ln dinp", "ln dw", "ln db"};
        for (int k = 0; k < 5; k++) {
            if (!guards_ok(names[k], r[k], sz[k])) {
                omp_set_num_threads(saved);
                return ZT_FAIL;
            }
            if (ti == 0) ref[k] = r[k];
            else if (memcmp(r[k], ref[k], sz[k] * sizeof(float))) {
                fprintf(stderr, "  %s differs between 1 and %d threads\n", names[k],
                        threads[ti]);
                omp_set_num_threads(saved);
                return ZT_FAIL;
            }
        }
        printf("  %d thread(s): bit-identical to 1 thread\n", threads[ti]);
    }
    omp_set_num_threads(saved);
    tmem_release();
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------
// The shared math itself (kernels/*_math.h), function by function against double
// precision: what the CUDA kernels run (the CPU loops use vectorized versions of the
// softmax pieces, softmax_cpu.c, so the kernel tests above do not reach these).

#include "gelu_math.h"
#include "softmax_math.h"

#define U32 (1.0 / 16777216.0) // fp32 unit roundoff 2^-24

ZT_TEST(math_softmax) {
    const int n = 301; // odd, not a block multiple
    float x[301];
    for (int i = 0; i < n; i++) x[i] = 12.0f * (float)zt_uniform(77, i) - 6.0f;
    // zt_row_max: exact; empty row -inf
    double mref = -INFINITY;
    for (int i = 0; i < n; i++) mref = x[i] > mref ? x[i] : mref;
    CHECK(zt_row_max(x, n) == (float)mref);
    CHECK(zt_row_max(x, 0) == -INFINITY);
    // zt_row_sumexp(x, n, scale, m) = sum exp(scale*x - m): each term's argument rounds
    // twice (u of |scale x| and of |arg|, so the term moves by that times u relative),
    // expf adds ~1 u, and n positive terms summed in float add up to n*u relative
    const float scales[2] = {1.0f, 0.27735f};
    for (int k = 0; k < 2; k++) {
        float sc = scales[k], m = sc * zt_row_max(x, n);
        double ref = 0.0, amax = 0.0;
        for (int i = 0; i < n; i++) {
            double a = (double)sc * x[i] - m;
            ref += exp(a);
            amax = fmax(amax, fabs(a) + fabs((double)sc * x[i]));
        }
        CHECK_NEAR(zt_row_sumexp(x, n, sc, m), ref, 0.0, (n + 2 + amax) * U32);
        CHECK(zt_row_sumexp(x, 0, sc, m) == 0.0f);
    }
    // zt_softmax_merge: two halves' (max, sumexp) give the whole row's
    for (int cut = 0; cut <= n; cut += 60) {
        float m1 = zt_row_max(x, cut), m2 = zt_row_max(x + cut, n - cut);
        float s1 = zt_row_sumexp(x, cut, 1.0f, m1), s2 = zt_row_sumexp(x + cut, n - cut, 1.0f, m2);
        zt_softmax_merge(&m1, &s1, m2, s2);
        double ref = 0.0;
        for (int i = 0; i < n; i++) ref += exp((double)x[i] - mref);
        CHECK(m1 == (float)mref);
        // each half within (n + 2 + 12) u as above, rescaled by one expf (a few u)
        CHECK_NEAR(s1, ref, 0.0, (n + 2 + 12 + 8) * U32);
    }
    float m = -INFINITY, s = 0.0f; // empty with empty stays empty (no NaN from -inf - -inf)
    zt_softmax_merge(&m, &s, -INFINITY, 0.0f);
    CHECK(m == -INFINITY && s == 0.0f);
    zt_softmax_merge(&m, &s, 2.0f, 3.0f); // empty with a row: the row
    CHECK(m == 2.0f && s == 3.0f);
    zt_softmax_merge(&m, &s, -INFINITY, 0.0f);
    CHECK(m == 2.0f && s == 3.0f);
    // zt_ce_loss: one subtraction
    CHECK(zt_ce_loss(5.5f, 1.25f) == 4.25f);
    // zt_ce_row_backward: scale * (softmax - onehot), target inside and outside the slice
    float lse = (float)(mref + log(zt_row_sumexp(x, n, 1.0f, (float)mref)));
    const int targets[3] = {17, -3, n};
    for (int k = 0; k < 3; k++) {
        float dx[301];
        const float scale = 1.0f / 3.0f;
        zt_ce_row_backward(dx, x, n, lse, targets[k], scale);
        double tot = 0.0;
        for (int i = 0; i < n; i++) {
            double a = (double)x[i] - lse, ref = scale * (exp(a) - (i == targets[k]));
            // x - lse rounds (u |a|), expf ~1 u, the scaling 1 u; the target's e - 1 is
            // formed before scaling, exact to u
            CHECK_NEAR(dx[i], ref, 4 * U32 * scale, (fabs(a) + 4) * U32);
            tot += dx[i];
        }
        // the gradient of a whole row sums to 0 (target inside) or scale (outside), up to
        // lse's own rounding (u |lse|) times the row's probability mass
        double want = targets[k] == 17 ? 0.0 : scale;
        CHECK_NEAR(tot, want, (n + fabs(lse) + 8) * U32 * scale, 0.0);
    }
    return ZT_PASS;
}

ZT_TEST(math_gelu) {
    // zt_gelu, zt_gelu_grad against the same tanh formula in double on 2001 points of
    // [-8, 8] (odd count, includes 0). gelu = 0.5 x (1 + t): tanhf within ~2 ulp of |t|
    // <= 1 moves it by |x| u; the cubic's few roundings by ~4 u of |x| relative. The
    // gradient's 0.5 x (1 - t^2) du carries t's error times |x du| <= ~31.
    for (int i = 0; i <= 2000; i++) {
        float x = -8.0f + 16.0f * (float)i / 2000.0f;
        double xd = x, u = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd), t = tanh(u);
        double g = 0.5 * xd * (1.0 + t);
        double du = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * xd * xd);
        double gg = 0.5 * (1.0 + t) + 0.5 * xd * (1.0 - t * t) * du;
        CHECK_NEAR(zt_gelu(x), g, 8 * U32 * (1.0 + fabs(xd)), 8 * U32);
        CHECK_NEAR(zt_gelu_grad(x), gg, 128 * U32, 8 * U32);
    }
    CHECK(zt_gelu(0.0f) == 0.0f && zt_gelu_grad(0.0f) == 0.5f);
    return ZT_PASS;
}

// Runs check(threads, ctx) at each OpenMP thread count of `counts` (0-terminated) and
// restores the caller's count whatever the outcome (a failed CHECK returns early): ZT_PASS
// when every run passed.
static int at_thread_counts(const int *counts, int (*check)(int threads, void *ctx), void *ctx) {
    int saved = omp_get_max_threads(), r = ZT_PASS;
    for (int i = 0; counts[i] && r == ZT_PASS; i++) {
        omp_set_num_threads(counts[i]);
        r = check(counts[i], ctx);
    }
    omp_set_num_threads(saved);
    return r;
}

static int memset_at(int threads, void *ctx) {
    const zt_backend *be = zt_test_cpu();
    const size_t *sizes = ctx;
    for (int i = 0; sizes[i]; i++) {
        size_t n = sizes[i] / sizeof(float);
        float *x = fvec(n);
        be->ops->memset(be, x, 0, n * sizeof(float));
        size_t nonzero = 0;
        for (size_t k = 0; k < n; k++) nonzero += x[k] != 0.0f || signbit(x[k]);
        printf("  %d threads, %zu bytes: %zu values not zeroed\n", threads, n * sizeof(float),
               nonzero);
        CHECK(nonzero == 0);
        CHECK(guards_ok("memset", x, n));
    }
    return ZT_PASS;
}

// The CPU backend's memset splits fills of 4 MiB and more into one piece per thread (a
// multiple of 4 KiB long), the last one taking the remainder: every byte set, none
// outside, for sizes around the split (below it, exactly at it, with a ragged tail) and
// thread counts that do not divide them.
ZT_TEST(kernel_memset_chunks) {
    tmem_release();
    size_t sizes[] = {(4u << 20) - 4, 4u << 20, (5u << 20) + 12, (9u << 20) + 4, 0};
    int r = at_thread_counts((const int[]){1, 2, 3, 7, 0}, memset_at, sizes);
    tmem_release();
    return r;
}

typedef struct {
    int N, OC;
    const float *dout, *db0, *want;
} bias_case;

static int bias_backward_at(int threads, void *ctx) {
    const bias_case *c = ctx;
    float *db = copy_f(c->db0, c->OC);
    zt_bias_backward(db, c->dout, c->N, c->OC);
    int differ = 0;
    for (int o = 0; o < c->OC; o++) differ += memcmp(&db[o], &c->want[o], sizeof(float)) != 0;
    printf("  %d threads: %d of %d columns differ from the sequential sum\n", threads, differ,
           c->OC);
    CHECK(differ == 0);
    CHECK(guards_ok("dbias", db, c->OC));
    return ZT_PASS;
}

// Bias gradients in column blocks: every column is still summed from row 0 down onto its
// old value, so the result is the same bits at any thread count and equals the plain loop
// exactly. OC = 1100 spans more than one 512-wide block and ends in a partial one.
ZT_TEST(kernel_bias_backward_blocks) {
    tmem_release();
    const int N = 37, OC = 1100;
    float *dout = randn_vec((size_t)N * OC, 301, 1.0f), *db0 = randn_vec(OC, 302, 1.0f);
    float *want = copy_f(db0, OC);
    for (int o = 0; o < OC; o++)
        for (int n = 0; n < N; n++) want[o] += dout[(size_t)n * OC + o];
    bias_case c = {N, OC, dout, db0, want};
    int r = at_thread_counts((const int[]){1, 2, 3, 5, 0}, bias_backward_at, &c);
    tmem_release();
    return r;
}

typedef struct {
    const float *x;
    size_t n;
    double want; // the exact sum of the finite squares
    int bad;     // non-finite values in x
} sumsq_case;

static int sumsq_at(int threads, void *ctx) {
    const sumsq_case *c = ctx;
    const zt_backend *be = zt_test_cpu();
    double got[2] = {0.0, 0.0};
    be->ops->sumsq(be, got, c->x, c->n);
    printf("  %d threads: sumsq %.4f (want %.4f), non-finite %.0f (want %d)\n", threads, got[0],
           c->want, got[1], c->bad);
    CHECK(got[0] == c->want);
    CHECK(got[1] == c->bad);
    return ZT_PASS;
}

// The CPU sum of squares on a length that takes the parallel, many-lane path and a tail:
// values j/8 (|j| <= 3) make every partial sum exact in double, so any summation order
// must give the exact total; one NaN or Inf in the blocks or in the tail is counted and
// left out of the sum.
ZT_TEST(kernel_sumsq_lanes) {
    tmem_release();
    const size_t n = 32 * 1024 * 3 + 17;
    float *x = fvec(n);
    double want = 0.0;
    for (size_t k = 0; k < n; k++) {
        x[k] = (float)((int)(k * 5 % 7) - 3) / 8.0f;
        want += (double)x[k] * x[k];
    }
    size_t bad_at[] = {n, 12345, n - 3}; // n: none
    int r = ZT_PASS;
    for (int b = 0; b < 3 && r == ZT_PASS; b++) {
        size_t at = bad_at[b];
        float keep = at < n ? x[at] : 0.0f;
        if (at < n) x[at] = b == 1 ? NAN : -INFINITY;
        printf("  bad value at %zu of %zu:\n", at, n);
        sumsq_case c = {x, n, want - (double)keep * keep, at < n};
        r = at_thread_counts((const int[]){1, 2, 3, 0}, sumsq_at, &c);
        if (at < n) x[at] = keep;
    }
    CHECK(guards_ok("sumsq input", x, n));
    tmem_release();
    return r;
}
