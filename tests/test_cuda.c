// The CUDA backend against the CPU backend: every op of zt_backend_i on fresh random
// inputs of odd sizes (no multiple of any block size), forward and backward. Outputs
// are poisoned (all bytes 0xff: NaN) on both sides before the call, so an element a
// kernel leaves unwritten fails; outputs a kernel adds into start from the same random
// values. Every test SKIPs (77) where the CUDA backend cannot open: a binary built
// without CUDA (plain `make`: build/zt_tests) or a machine without a GPU. The CUDA test
// binary is build/zt_tests_cuda (`make cuda`).
//
// The seed is fresh per run (printed; ZT_SEED=N repeats one). Tolerances, with u = 2^-24
// the fp32 unit roundoff, budget only how the two backends may differ: FMA contraction
// (nvcc contracts a*b+c, gcc here does not: a few u of each product), a different
// summation order (GEMM, reductions: up to K*u of the sum of |terms|), and expf/tanhf
// (CUDA's and glibc's differ by a few ulp, so an absolute part covers values near 0).
// Each check says its reason.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "comm_nccl.h"
#include "generate.h"
#include "kernels.h"
#include "memory.h"
#include "quant8_math.h"
#include "rng.h"
#include "test.h"

#define U32 (1.0 / 16777216.0) // fp32 unit roundoff 2^-24

// ---------------------------------------------------------------------------------------
// Harness: the GPU backend, a seed, host and device scratch released by gpu_close.

static zt_backend g_gpu;
static int g_on_cpu; // ZT_CUDA_TEST_ON_CPU=1: the CPU backend plays the GPU (checks the harness)
static uint64_t g_seed, g_ctr;
#define MAX_SCRATCH 256
static void *g_host[MAX_SCRATCH], *g_dev[MAX_SCRATCH];
static int g_nhost, g_ndev;

static int gpu_open(const char *test) {
    if (!strncmp(test, "zt_test_", 8)) test += 8;
    g_on_cpu = getenv("ZT_CUDA_TEST_ON_CPU") != NULL;
    if (g_on_cpu) g_gpu = *zt_backend_cpu();
    else if (zt_backend_open(&g_gpu, "cuda", &(zt_backend_options){0}) != ZT_OK) {
        printf("SKIP %s: %s\n", test, zt_error_message());
        return 0;
    }
    const char *s = getenv("ZT_SEED");
    g_seed = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    g_ctr = 0;
    printf("%s: seed %llu (ZT_SEED=%llu repeats it)\n", test, (unsigned long long)g_seed,
           (unsigned long long)g_seed);
    return 1;
}
#define NEED_GPU()                                 \
    do {                                           \
        if (!gpu_open(__func__)) return ZT_SKIP;   \
    } while (0)

static void gpu_close(void) {
    for (int i = 0; i < g_ndev; i++) zt_be_free(&g_gpu, g_dev[i]);
    for (int i = 0; i < g_nhost; i++) free(g_host[i]);
    g_ndev = g_nhost = 0;
    if (!g_on_cpu) zt_backend_close(&g_gpu);
}

static void *hmem(size_t bytes) {
    ZT_ASSERT(g_nhost < MAX_SCRATCH);
    void *p = calloc(1, bytes ? bytes : 1);
    ZT_ASSERT(p);
    return g_host[g_nhost++] = p;
}
static float *hpoison(size_t n) {
    float *p = hmem(n * sizeof(float));
    memset(p, 0xff, n * sizeof(float));
    return p;
}
// n values uniform in [lo, hi), fresh per call.
static float *hrand(size_t n, float lo, float hi) {
    float *p = hmem(n * sizeof(float));
    uint64_t key = zt_splitmix64(g_seed + ++g_ctr);
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)zt_uniform(key, i);
    return p;
}
static float *hcopy(const float *x, size_t n) {
    float *p = hmem(n * sizeof(float));
    memcpy(p, x, n * sizeof(float));
    return p;
}
// Device copy of host bytes.
static void *dput(const void *h, size_t bytes) {
    ZT_ASSERT(g_ndev < MAX_SCRATCH);
    void *d = zt_be_alloc(&g_gpu, ZT_MEM_WORKSPACE, bytes);
    g_gpu.ops->copy(&g_gpu, d, h, bytes, ZT_COPY_H2D);
    return g_dev[g_ndev++] = d;
}
static float *dputf(const float *h, size_t n) { return dput(h, n * sizeof(float)); }
static float *dpoison(size_t n) {
    ZT_ASSERT(g_ndev < MAX_SCRATCH);
    float *d = zt_be_alloc(&g_gpu, ZT_MEM_WORKSPACE, n * sizeof(float));
    g_gpu.ops->memset(&g_gpu, d, 0xff, n * sizeof(float));
    return g_dev[g_ndev++] = d;
}
// Host copy of device floats (waits for the GPU; a kernel's error shows here).
static float *dget(const float *d, size_t n) {
    g_gpu.ops->sync(&g_gpu);
    float *h = hmem(n * sizeof(float));
    g_gpu.ops->copy(&g_gpu, h, d, n * sizeof(float), ZT_COPY_D2H);
    return h;
}

#define CPU (zt_backend_cpu())
#define GPU (&g_gpu)
// Compares the device result d (n floats) with the CPU's h.
#define CHECK_DEV(what, d, h, n, atol, rtol)                              \
    do {                                                                  \
        if (zt_check_close(what, dget(d, n), h, n, atol, rtol)) {         \
            gpu_close();                                                  \
            return ZT_FAIL;                                               \
        }                                                                 \
    } while (0)

// ---------------------------------------------------------------------------------------

ZT_TEST(cuda_memory) {
    NEED_GPU();
    // the accounting: device bytes counted under their category, given back on free
    size_t before = zt_mem_current(ZT_MEM_ACTIVATIONS);
    float *d = zt_be_alloc(GPU, ZT_MEM_ACTIVATIONS, 1001 * sizeof(float));
    CHECK_EQ_INT(zt_mem_current(ZT_MEM_ACTIVATIONS) - before, 1001 * sizeof(float));
    // zero-filled, map/unmap round trip, memset, device-to-device copy
    float *h = zt_be_map(GPU, d, 1001 * sizeof(float), 1);
    for (int i = 0; i < 1001; i++) CHECK(h[i] == 0.0f);
    for (int i = 0; i < 1001; i++) h[i] = (float)i;
    zt_be_unmap(GPU, d, h, 1001 * sizeof(float), 1);
    float *d2 = dpoison(1001);
    GPU->ops->copy(GPU, d2, d, 1001 * sizeof(float), ZT_COPY_D2D);
    GPU->ops->memset(GPU, d2, 0, 7 * sizeof(float));
    float *back = dget(d2, 1001);
    for (int i = 0; i < 1001; i++) CHECK(back[i] == (i < 7 ? 0.0f : (float)i));
    zt_be_free(GPU, d);
    CHECK_EQ_INT(zt_mem_current(ZT_MEM_ACTIVATIONS), before);
    // a GPU that does not exist is a user's error with a message, not a crash
    zt_backend other;
    if (!g_on_cpu) {
        CHECK(zt_backend_open(&other, "cuda", &(zt_backend_options){.device = 4096}) == ZT_ERR);
        CHECK(strstr(zt_error_message(), "does not exist") != NULL);
    }
    gpu_close();
    return ZT_PASS;
}

ZT_TEST(cuda_gemm) {
    NEED_GPU();
    const int M = 37, N = 53, K = 71, pad = 3;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
            size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb;
            size_t nc = (size_t)M * ldc;
            float *A = hrand(na, -1, 1), *B = hrand(nb, -1, 1), *C0 = hrand(nc, -1, 1);
            float *Cc = hcopy(C0, nc);
            float *dA = dputf(A, na), *dB = dputf(B, nb), *dC = dputf(C0, nc);
            CPU->ops->gemm(CPU, ta, tb, M, N, K, 0.7f, A, lda, B, ldb, 0.3f, Cc, ldc);
            GPU->ops->gemm(GPU, ta, tb, M, N, K, 0.7f, dA, lda, dB, ldb, 0.3f, dC, ldc);
            // both sums of K products within gamma_K = K*u of sum |a b| <= K (|a|, |b| <
            // 1) of the exact one; the padding columns must stay as they were
            char what[32];
            snprintf(what, sizeof what, "gemm ta=%d tb=%d", ta, tb);
            CHECK_DEV(what, dC, Cc, nc, 2.0 * K * U32 * K, 0.0);
        }
    gpu_close();
    return ZT_PASS;
}

ZT_TEST(cuda_matmul) {
    NEED_GPU();
    const int N = 29, C = 45, OC = 67;
    // sums of K products of values in [-1, 1], K = C (forward), OC (dinp), N (dw): each
    // side within gamma_K = K*u of sum |a b| <= K of the exact sum, so 2*K*u*K apart;
    // plus a few u for the starting value added to (bias, accumulated dinp, dw)
    const double tol_f = 2.0 * C * U32 * C + 4 * U32, tol_dinp = 2.0 * OC * U32 * OC + 4 * U32;
    const double tol_dw = 2.0 * N * U32 * N + 4 * U32;
    for (int in_out = 0; in_out < 2; in_out++)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            size_t nw = (size_t)OC * C;
            float *inp = hrand((size_t)N * C, -1, 1), *w = hrand(nw, -1, 1);
            float *bias = with_bias ? hrand(OC, -1, 1) : NULL;
            float *out = hpoison((size_t)N * OC), *dout_ = dpoison((size_t)N * OC);
            float *dinp_ = dputf(inp, (size_t)N * C), *dw_ = dputf(w, nw);
            float *dbias_ = bias ? dputf(bias, OC) : NULL;
            const zt_backend_i *c = CPU->ops, *g = GPU->ops;
            (in_out ? c->matmul_in_out_forward : c->matmul_forward)(CPU, out, inp, w, bias, N, C,
                                                                   OC);
            (in_out ? g->matmul_in_out_forward : g->matmul_forward)(GPU, dout_, dinp_, dw_,
                                                                   dbias_, N, C, OC);
            CHECK_DEV(in_out ? "matmul_in_out_forward" : "matmul_forward", dout_, out,
                      (size_t)N * OC, tol_f, 0.0);
            for (int acc = 0; acc < 2; acc++) {
                float *dout = hrand((size_t)N * OC, -1, 1);
                float *dinp0 = hrand((size_t)N * C, -1, 1), *dw0 = hrand(nw, -1, 1);
                float *db0 = hrand(OC, -1, 1);
                float *dinp = acc ? hcopy(dinp0, (size_t)N * C) : hpoison((size_t)N * C);
                float *dw = hcopy(dw0, nw), *db = with_bias ? hcopy(db0, OC) : NULL;
                float *g_dout = dputf(dout, (size_t)N * OC);
                float *g_dinp = acc ? dputf(dinp0, (size_t)N * C) : dpoison((size_t)N * C);
                float *g_dw = dputf(dw0, nw), *g_db = with_bias ? dputf(db0, OC) : NULL;
                (in_out ? c->matmul_in_out_backward : c->matmul_backward)(
                    CPU, dinp, dw, db, dout, inp, w, N, C, OC, acc);
                (in_out ? g->matmul_in_out_backward : g->matmul_backward)(
                    GPU, g_dinp, g_dw, g_db, g_dout, dinp_, dw_, N, C, OC, acc);
                CHECK_DEV("matmul_backward dinp", g_dinp, dinp, (size_t)N * C, tol_dinp, 0.0);
                CHECK_DEV("matmul_backward dw", g_dw, dw, nw, tol_dw, 0.0);
                // the bias sums run in the CPU's order: exact
                if (with_bias) CHECK_DEV("matmul_backward dbias", g_db, db, OC, 0.0, 0.0);
            }
        }
    gpu_close();
    return ZT_PASS;
}

ZT_TEST(cuda_encoder) {
    NEED_GPU();
    const int B = 3, T = 17, C = 37, lo = 5, rows = 41, N = B * T;
    int32_t tokens[3 * 17];
    uint64_t key = zt_splitmix64(g_seed + 99);
    for (int n = 0; n < N; n++) tokens[n] = (int32_t)(zt_uniform(key, n) * 60); // some outside
    tokens[1] = tokens[0];                                                    // repeats
    int32_t *dtok = dput(tokens, sizeof tokens);
    float *wte = hrand((size_t)rows * C, -1, 1), *wpe = hrand((size_t)T * C, -1, 1);
    float *g_wte = dputf(wte, (size_t)rows * C), *g_wpe = dputf(wpe, (size_t)T * C);
    for (int with_pos = 0; with_pos < 2; with_pos++) {
        float *out = hpoison((size_t)N * C), *g_out = dpoison((size_t)N * C);
        CPU->ops->encoder_forward(CPU, out, tokens, wte, with_pos ? wpe : NULL, lo, rows, N, T, C);
        GPU->ops->encoder_forward(GPU, g_out, dtok, g_wte, with_pos ? g_wpe : NULL, lo, rows, N,
                                  T, C);
        CHECK_DEV("encoder_forward", g_out, out, (size_t)N * C, 0.0, 0.0); // one add: exact
        float *dout = hrand((size_t)N * C, -1, 1);
        float *dwte0 = hrand((size_t)rows * C, -1, 1), *dwpe0 = hrand((size_t)T * C, -1, 1);
        float *dwte = hcopy(dwte0, (size_t)rows * C), *dwpe = hcopy(dwpe0, (size_t)T * C);
        float *g_dwte = dputf(dwte0, (size_t)rows * C), *g_dwpe = dputf(dwpe0, (size_t)T * C);
        CPU->ops->encoder_backward(CPU, dwte, with_pos ? dwpe : NULL, dout, tokens, lo, rows, N,
                                   T, C);
        GPU->ops->encoder_backward(GPU, g_dwte, with_pos ? g_dwpe : NULL,
                                   dputf(dout, (size_t)N * C), dtok, lo, rows, N, T, C);
        // the same additions in the same order (tokens in sequence per channel): exact
        CHECK_DEV("encoder_backward dwte", g_dwte, dwte, (size_t)rows * C, 0.0, 0.0);
        CHECK_DEV("encoder_backward dwpe", g_dwpe, dwpe, (size_t)T * C, 0.0, 0.0);
    }
    gpu_close();
    return ZT_PASS;
}

ZT_TEST(cuda_layernorm) {
    NEED_GPU();
    const int N = 53, C = 77;
    size_t nc = (size_t)N * C;
    float *x = hrand(nc, -2, 3), *w = hrand(C, 0.5f, 1.5f), *b = hrand(C, -1, 1);
    float *out = hpoison(nc), *mean = hpoison(N), *rstd = hpoison(N);
    float *g_x = dputf(x, nc), *g_w = dputf(w, C), *g_b = dputf(b, C);
    float *g_out = dpoison(nc), *g_mean = dpoison(N), *g_rstd = dpoison(N);
    CPU->ops->layernorm_forward(CPU, out, mean, rstd, x, w, b, N, C);
    GPU->ops->layernorm_forward(GPU, g_out, g_mean, g_rstd, g_x, g_w, g_b, N, C);
    // the same row code; FMA contraction in the variance's C products moves rstd by up
    // to ~C*u relative, and out = xhat*w + b by that times |xhat*w| <= ~4
    CHECK_DEV("layernorm_forward mean", g_mean, mean, N, 0.0, 0.0); // plain sums: exact
    CHECK_DEV("layernorm_forward rstd", g_rstd, rstd, N, 0.0, 2.0 * C * U32);
    CHECK_DEV("layernorm_forward out", g_out, out, nc, 8.0 * C * U32, 0.0);
    float *dout = hrand(nc, -1, 1), *dinp0 = hrand(nc, -1, 1);
    float *dw0 = hrand(C, -1, 1), *db0 = hrand(C, -1, 1);
    float *dinp = hcopy(dinp0, nc), *dw = hcopy(dw0, C), *db = hcopy(db0, C);
    float *g_dinp = dputf(dinp0, nc), *g_dw = dputf(dw0, C), *g_db = dputf(db0, C);
    CPU->ops->layernorm_backward(CPU, dinp, dw, db, dout, x, w, mean, rstd, N, C);
    GPU->ops->layernorm_backward(GPU, g_dinp, g_dw, g_db, dputf(dout, nc), g_x, g_w, dputf(mean, N),
                                 dputf(rstd, N), N, C);
    // dx: means of C products (contracted on the GPU), times rstd (~1): ~C*u of their
    // magnitudes (<= ~4); dw: N contracted products of magnitude <= ~4; db: exact
    CHECK_DEV("layernorm_backward dinp", g_dinp, dinp, nc, 8.0 * C * U32, 0.0);
    CHECK_DEV("layernorm_backward dw", g_dw, dw, C, 8.0 * N * U32, 0.0);
    CHECK_DEV("layernorm_backward db", g_db, db, C, 0.0, 0.0);
    gpu_close();
    return ZT_PASS;
}

ZT_TEST(cuda_elementwise) {
    NEED_GPU();
    const size_t n = 100003;
    float *x = hrand(n, -6, 6), *y = hrand(n, -1, 1);
    float *g_x = dputf(x, n), *g_y = dputf(y, n);
    float *out = hpoison(n), *g_out = dpoison(n);
    CPU->ops->gelu_forward(CPU, out, x, n);
    GPU->ops->gelu_forward(GPU, g_out, g_x, n);
    // tanhf: CUDA's and glibc's differ by a few ulp of tanh (<= 1): 0.5*x*(1+t) moves by
    // |x|/2 * 4u <= 12u absolute here, plus a few u relative for the products
    CHECK_DEV("gelu_forward", g_out, out, n, 16 * U32, 8 * U32);
    float *din = hpoison(n), *g_din = dpoison(n);
    CPU->ops->gelu_backward(CPU, din, x, y, n);
    GPU->ops->gelu_backward(GPU, g_din, g_x, g_y, n);
    // the gradient's x*(1 - t^2)*du term carries tanh's ulps times |x * du| <= ~30
    CHECK_DEV("gelu_backward", g_din, din, n, 128 * U32, 8 * U32);
    float *sum = hpoison(n), *g_sum = dpoison(n);
    CPU->ops->add(CPU, sum, x, y, n);
    GPU->ops->add(GPU, g_sum, g_x, g_y, n);
    CHECK_DEV("add", g_sum, sum, n, 0.0, 0.0);
    gpu_close();
    return ZT_PASS;
}

ZT_TEST(cuda_attention) {
    NEED_GPU();
    const int B = 2, T = 37, NH = 3, hs = 13, C = NH * hs;
    size_t nqkv = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
    float *qkv = hrand(nqkv, -1, 1), *g_qkv = dputf(qkv, nqkv);
    float *work = hmem(zt_attention_workspace(0, T) * sizeof(float));
    float *g_work = dpoison(zt_attention_workspace(0, T)); // the contract's size (CUDA needs none)
    float *out = hpoison(no), *lse = hpoison(nl), *g_out = dpoison(no), *g_lse = dpoison(nl);
    CPU->ops->attention_forward(CPU, out, lse, qkv, work, B, T, C, NH);
    GPU->ops->attention_forward(GPU, g_out, g_lse, g_qkv, g_work, B, T, C, NH);
    // scores: hs products of [-1, 1] values in another order (hs*u*hs/sqrt(hs)); expf a
    // few ulp; out: an average of v rows (|v| < 1) with weights off by that relative
    CHECK_DEV("attention_forward lse", g_lse, lse, nl, 4.0 * hs * U32 * 4, 4 * U32);
    CHECK_DEV("attention_forward out", g_out, out, no, 4.0 * (hs + T) * U32 * 4, 0.0);
    float *dout = hrand(no, -1, 1);
    float *dqkv = hpoison(nqkv), *g_dqkv = dpoison(nqkv);
    CPU->ops->attention_backward(CPU, dqkv, dout, qkv, lse, work, B, T, C, NH);
    GPU->ops->attention_backward(GPU, g_dqkv, dputf(dout, no), g_qkv, dputf(lse, nl), g_work, B, T,
                                 C, NH);
    // sums over up to T rows of products of the forward's quantities (each within the
    // forward's budget): T times that
    CHECK_DEV("attention_backward dqkv", g_dqkv, dqkv, nqkv, 4.0 * (hs + T) * U32 * 4 * 4, 0.0);
    gpu_close();
    return ZT_PASS;
}

// The decode attention of generation (queries against a KV cache) against the CPU's: one
// query at a cache of one row and of more rows than the block has threads, and chunks of
// queries (a prompt) that each see the cache up to their own position.
ZT_TEST(cuda_attention_decode) {
    NEED_GPU();
    const int NH = 3, hs = 13, C = NH * hs;
    const int cases[][2] = {{1, 1}, {1, 37}, {4, 37}, {1, 300}, {3, 300}}; // n_q, n_pos
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        int n_q = cases[t][0], n_pos = cases[t][1];
        size_t nkv = (size_t)n_pos * C, nq = (size_t)n_q * 3 * C, no = (size_t)n_q * C;
        float *q = hrand(nq, -1, 1), *k = hrand(nkv, -1, 1), *v = hrand(nkv, -1, 1);
        float *work = hmem((size_t)NH * n_q * n_pos * sizeof(float));
        float *out = hpoison(no), *g_out = dpoison(no);
        CPU->ops->attention_decode(CPU, out, q, k, v, work, n_q, n_pos, C, NH);
        GPU->ops->attention_decode(GPU, g_out, dputf(q, nq), dputf(k, nkv), dputf(v, nkv),
                                   dpoison((size_t)NH * n_q * n_pos), n_q, n_pos, C, NH);
        // as attention_forward's out: scores of hs products in another order, expf a few
        // ulp, an average of n_pos v rows (|v| < 1)
        CHECK_DEV("attention_decode out", g_out, out, no, 4.0 * (hs + n_pos) * U32 * 4, 0.0);
    }
    gpu_close();
    return ZT_PASS;
}

// The whole KV-cache decoder on the GPU against the CPU: the same random weights, the same
// tokens, the logits at every position. Both are fp32 with another summation order (cuBLAS
// against OpenBLAS, the kernels' reductions) and FMA contraction on the GPU: as in
// generate_kv_cache_matches_forward, about L * sqrt(4C) * eps32 of the row's scale; 2e-5
// of it leaves a 10x margin.
ZT_TEST(cuda_generate_decoder) {
    NEED_GPU();
    zt_model_shape s = {.vocab = 300, .n_ctx = 20, .n_layer = 2, .n_head = 4, .n_embd = 32};
    s.padded_vocab = zt_padded_vocab(s.vocab, 1);
    zt_decoder dc, dg;
    CHECK(zt_decoder_init(&dc, CPU, &s, 0, zt_unit_count(&s), 1, 0, NULL, NULL) == ZT_OK);
    CHECK(zt_decoder_init(&dg, GPU, &s, 0, zt_unit_count(&s), 1, 0, NULL, NULL) == ZT_OK);
    zt_gpt2_init_random(&dc.model, 9);
    zt_gpt2_init_random(&dg.model, 9);
    float *lc = hpoison((size_t)s.padded_vocab), *lg = hpoison((size_t)s.padded_vocab);
    int rc = ZT_PASS;
    for (int t = 0; t < s.n_ctx && rc == ZT_PASS; t++) {
        int32_t tok = (int32_t)((t * 131 + 7) % s.vocab);
        zt_decoder_step(&dc, tok, lc);
        zt_decoder_step(&dg, tok, lg);
        double scale = 0;
        for (int v = 0; v < s.vocab; v++) scale = fmax(scale, fabs(lc[v]));
        if (zt_check_close("decoder logits", lg, lc, (size_t)s.vocab, 2e-5 * scale, 2e-5))
            rc = ZT_FAIL;
    }
    zt_decoder_free(&dg);
    zt_decoder_free(&dc);
    gpu_close();
    return rc;
}

ZT_TEST(cuda_crossentropy) {
    NEED_GPU();
    const int n = 7, ld = 131, n_valid = 120, lo = 100;
    size_t nx = (size_t)n * ld;
    int32_t targets[7] = {100, 219, 220, 57, 150, 231, 101}; // in, in, padding, out, ...
    int32_t *g_t = dput(targets, sizeof targets);
    float *x = hrand(nx, -8, 8), *g_x = dputf(x, nx);
    float *mx = hpoison(n), *tl = hpoison(n), *se = hpoison(n), *loss = hpoison(n);
    float *g_mx = dpoison(n), *g_tl = dpoison(n), *g_se = dpoison(n), *g_loss = dpoison(n);
    CPU->ops->ce_slice_stats(CPU, mx, tl, x, targets, n, n_valid, lo, ld);
    GPU->ops->ce_slice_stats(GPU, g_mx, g_tl, g_x, g_t, n, n_valid, lo, ld);
    CHECK_DEV("ce_slice_stats row_max", g_mx, mx, n, 0.0, 0.0); // max: exact
    CHECK_DEV("ce_slice_stats target_logit", g_tl, tl, n, 0.0, 0.0);
    CPU->ops->ce_slice_sumexp(CPU, se, x, mx, n, n_valid, ld);
    GPU->ops->ce_slice_sumexp(GPU, g_se, g_x, g_mx, n, n_valid, ld);
    // n_valid positive terms, expf within a few ulp each, summed in another order
    CHECK_DEV("ce_slice_sumexp", g_se, se, n, 0.0, (8.0 + n_valid) * U32);
    for (int alias = 0; alias < 2; alias++) {
        float *dx = alias ? hcopy(x, nx) : hpoison(nx), *g_dx = alias ? dputf(x, nx) : dpoison(nx);
        const float *src = alias ? dx : x, *g_src = alias ? g_dx : g_x;
        CPU->ops->ce_slice_finish(CPU, dx, loss, src, targets, mx, se, tl, 1.0f / n, n, n_valid,
                                  lo, ld);
        GPU->ops->ce_slice_finish(GPU, g_dx, g_loss, g_src, g_t, dputf(mx, n), dputf(se, n),
                                  dputf(tl, n), 1.0f / n, n, n_valid, lo, ld);
        // logf of the same sum, then one subtraction: a few ulp of |lse| <= ~13
        CHECK_DEV("ce_slice_finish losses", g_loss, loss, n, 16 * 4 * U32, 0.0);
        // probabilities within a few ulp (expf), scaled by 1/n; padding exactly 0
        CHECK_DEV("ce_slice_finish dlogits", g_dx, dx, nx, 4 * U32, 8 * U32);
    }
    gpu_close();
    return ZT_PASS;
}

ZT_TEST(cuda_reductions) {
    NEED_GPU();
    const size_t n = 1000037;
    float *x = hrand(n, -1, 1);
    x[5] = NAN, x[77777] = INFINITY, x[n - 1] = -INFINITY;
    float *g_x = dputf(x, n);
    double s_cpu = CPU->ops->sum(CPU, x + 6, 70000), s_gpu = GPU->ops->sum(GPU, g_x + 6, 70000);
    // both double sums of floats: n * 2^-53 of sum |x| <= 70000
    CHECK_NEAR(s_gpu, s_cpu, 70000.0 * 70000.0 * 0x1p-53, 0.0);
    double q_cpu[2] = {1, 2}, q_gpu[2] = {1, 2};
    CPU->ops->sumsq(CPU, q_cpu, x, n);
    GPU->ops->sumsq(GPU, q_gpu, g_x, n);
    CHECK_NEAR(q_gpu[0], q_cpu[0], (double)n * n * 0x1p-53, 0.0);
    CHECK_EQ_INT(q_gpu[1], q_cpu[1]); // 2 + the 3 non-finite values
    CHECK_EQ_INT(q_gpu[1], 5);
    gpu_close();
    return ZT_PASS;
}

ZT_TEST(cuda_adamw) {
    NEED_GPU();
    const size_t n = 100003;
    float *p = hrand(n, -1, 1), *m = hrand(n, -0.01f, 0.01f), *v = hrand(n, 0, 1e-4f);
    float *g_p = dputf(p, n), *g_m = dputf(m, n), *g_v = dputf(v, n);
    for (int t = 1; t <= 3; t++) {
        float *g = hrand(n, -0.1f, 0.1f), *g_g = dputf(g, n);
        zt_adamw_hparams h = {1e-3f, 0.9f, 0.95f, 1e-8f, 1.0f - powf(0.9f, t),
                              1.0f - powf(0.95f, t), 0.5f};
        CPU->ops->adamw(CPU, p, m, v, g, n, 0.1f, &h);
        GPU->ops->adamw(GPU, g_p, g_m, g_v, g_g, n, 0.1f, &h);
    }
    // the same formula; FMA contraction moves each of its few products by <= u of their
    // magnitude: p by a few u of |p| + lr, m and v by a few u of their own size
    CHECK_DEV("adamw p", g_p, p, n, 16 * U32 * 1e-3, 16 * U32);
    CHECK_DEV("adamw m", g_m, m, n, 16 * U32 * 0.05, 16 * U32);
    CHECK_DEV("adamw v", g_v, v, n, 16 * U32 * 1e-4, 16 * U32);
    gpu_close();
    return ZT_PASS;
}

ZT_TEST(cuda_adamw8bit) {
    NEED_GPU();
    float map_m[ZT_Q8_CODES], map_v[ZT_Q8_CODES];
    zt_q8_make_map(map_m, 1);
    zt_q8_make_map(map_v, 0);
    const int blocks[2] = {256, 2048};
    for (int bi = 0; bi < 2; bi++) {
        int block = blocks[bi];
        size_t n = 3 * (size_t)block + 77, nb = (n + block - 1) / block;
        float *p = hrand(n, -1, 1), *g_p = dputf(p, n);
        uint8_t *qm = hmem(n), *qv = hmem(n);
        memset(qm, zt_q8_quantize(map_m, 0, 0), n);
        memset(qv, zt_q8_quantize(map_v, 0, 0), n);
        uint8_t *g_qm = dput(qm, n), *g_qv = dput(qv, n);
        float *am = hmem(nb * 4), *av = hmem(nb * 4);
        float *g_am = dputf(am, nb), *g_av = dputf(av, nb);
        for (int t = 1; t <= 3; t++) {
            float *g = hrand(n, -0.1f, 0.1f), *g_g = dputf(g, n);
            zt_adamw_hparams h = {1e-3f, 0.9f, 0.95f, 1e-8f, 1.0f - powf(0.9f, t),
                                  1.0f - powf(0.95f, t), 1.0f};
            CPU->ops->adamw8bit(CPU, p, g, qm, qv, am, av, n, block, map_m, map_v, 0.1f, &h);
            GPU->ops->adamw8bit(GPU, g_p, g_g, g_qm, g_qv, g_am, g_av, n, block, map_m, map_v,
                                0.1f, &h);
        }
        // fp32 arithmetic as adamw (FMA contraction only); a state value that lands
        // within that noise of a midpoint between two codes may take the neighbour code:
        // allow one code apart on at most 1% of the values
        CHECK_DEV("adamw8bit p", g_p, p, n, 16 * U32 * 1e-3, 16 * U32);
        CHECK_DEV("adamw8bit absmax_m", g_am, am, nb, 0.0, 16 * U32);
        CHECK_DEV("adamw8bit absmax_v", g_av, av, nb, 0.0, 16 * U32);
        uint8_t *hm = hmem(n), *hv = hmem(n);
        GPU->ops->copy(GPU, hm, g_qm, n, ZT_COPY_D2H);
        GPU->ops->copy(GPU, hv, g_qv, n, ZT_COPY_D2H);
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            CHECK(abs((int)hm[i] - (int)qm[i]) <= 1 && abs((int)hv[i] - (int)qv[i]) <= 1);
            off += (hm[i] != qm[i]) + (hv[i] != qv[i]);
        }
        printf("  adamw8bit block %d: %zu of %zu codes one apart\n", block, off, 2 * n);
        CHECK(off <= 2 * n / 100);
    }
    gpu_close();
    return ZT_PASS;
}

// The NCCL comm backend on the one GPU a test has: a single-rank communicator over the
// self control communicator (several ranks on one GPU are refused by NCCL; tests with
// several ranks need a GPU each). Collectives at size 1 are copies, checked exactly;
// split with a color and with ZT_COMM_UNDEFINED (a size-1 communicator) both work.
ZT_TEST(cuda_nccl_single_rank) {
    NEED_GPU();
    if (g_on_cpu) {
        gpu_close();
        printf("SKIP: NCCL needs the GPU\n");
        return ZT_SKIP;
    }
    zt_comm self, nc, part;
    zt_comm_self_init(&self);
    if (zt_comm_nccl_init(&nc, &self, GPU->ops->stream(GPU)) != ZT_OK) {
        fprintf(stderr, "%s\n", zt_error_message());
        return ZT_FAIL;
    }
    zt_comm_free(&self); // the NCCL communicator keeps its own control path
    CHECK(nc.size == 1 && nc.rank == 0 && !strcmp(nc.ops->name, "nccl"));
    const size_t n = 1001;
    float *x = hrand(n, -1, 1), *g_x = dputf(x, n), *g_y = dpoison(n);
    zt_comm_all_reduce(&nc, g_x, g_y, n, ZT_F32, ZT_REDUCE_SUM, NULL);
    CHECK_DEV("nccl all_reduce (copy)", g_y, x, n, 0.0, 0.0);
    zt_comm_all_reduce(&nc, g_x, g_x, n, ZT_F32, ZT_REDUCE_MAX, NULL);
    zt_comm_reduce_scatter(&nc, g_x, g_x, n, ZT_F32, ZT_REDUCE_SUM, NULL);
    zt_comm_all_gather(&nc, g_x, g_x, n, ZT_F32, NULL);
    zt_comm_broadcast(&nc, g_x, n, ZT_F32, 0, NULL);
    CHECK_DEV("nccl in place (unchanged)", g_x, x, n, 0.0, 0.0);
    for (int color = ZT_COMM_UNDEFINED; color <= 0; color++) {
        zt_comm_split(&nc, color, 0, &part);
        CHECK(part.size == 1 && !strcmp(part.ops->name, "nccl"));
        float *g_z = dpoison(n);
        zt_comm_all_gather(&part, g_x, g_z, n, ZT_F32, NULL);
        zt_comm_barrier(&part, NULL);
        CHECK_DEV("nccl split all_gather", g_z, x, n, 0.0, 0.0);
        zt_comm_free(&part);
    }
    zt_comm_free(&nc);
    gpu_close();
    return ZT_PASS;
}
