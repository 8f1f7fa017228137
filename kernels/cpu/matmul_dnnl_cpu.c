// oneDNN's matmul primitive for the bf16 GEMM (bf16 A, B; fp32 or bf16 C), its primitives made
// once per product and cached, as the CUDA backend caches its cuBLASLt plans
// (docs/design.md, "bf16").
//
// A primitive is fixed at creation to its shapes, strides (the form and leading
// dimensions), C's type, whether it adds a bias and the scalars (alpha as the output scale,
// beta as a sum post-op: oneDNN computes alpha acc + bias + beta C in fp32 and rounds a bf16
// C once). oneDNN then picks its kernel for this CPU (brgemm on AVX512-BF16 and AMX) and
// sizes its scratchpad, so making one costs far more than a product at GPT-2's small sizes:
// a step's ~10 products are made in the first step and looked up after. The memory objects
// are kept with the primitive and only their data handles set per call.
//
// oneDNN 2.6.3 has no bf16 matmul below AVX512-BF16 (dnnl_unimplemented on this AVX2
// machine; it emulates bf16 on plain AVX-512 CPUs, which zt_gemm_bf16_dnnl_check refuses).
#include <dnnl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

// A step's products have ~10 shapes (per layer kind and direction, the lm-head, a last
// tile); 32 hold them with room, past that the oldest is replaced.
#define SLOTS 32

typedef struct {
    int trans_a, trans_b, M, N, K, lda, ldb, ldc;
    int c_bf16, bias;
    uint32_t alpha, beta; // the scalars' bits
} key;

typedef struct {
    key k;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, bias;
} slot;

static struct {
    pthread_mutex_t lock;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    slot s[SLOTS];
    int used, next;
    size_t hits, misses;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

// Only invalid arguments (a bug of ours) or a broken library fail these.
#define DNNL_OK(call)                                                                        \
    do {                                                                                     \
        dnnl_status_t s_ = (call);                                                           \
        ZT_ASSERTF(s_ == dnnl_success, "%s failed: oneDNN status %d", #call, (int)s_);       \
    } while (0)

// A row-major (rows, cols) matrix with leading dimension ld, transposed in memory when
// trans (stored (cols, rows)): oneDNN takes the transpose as strides.
static dnnl_memory_desc_t md_of(int rows, int cols, int ld, int trans, dnnl_data_type_t t) {
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {rows, cols}, strides = {trans ? 1 : ld, trans ? ld : 1};
    DNNL_OK(dnnl_memory_desc_init_by_strides(&md, 2, dims, t, strides));
    return md;
}

static void slot_free(slot *s) {
    dnnl_memory_destroy(s->a);
    dnnl_memory_destroy(s->b);
    dnnl_memory_destroy(s->c);
    dnnl_memory_destroy(s->bias);
    dnnl_primitive_destroy(s->prim);
    memset(s, 0, sizeof *s);
}

// The primitive descriptor of k: ZT_OK, or ZT_ERR where oneDNN has no implementation.
static zt_status make_pd(dnnl_primitive_desc_t *pd, const key *k) {
    if (!g.engine) {
        DNNL_OK(dnnl_engine_create(&g.engine, dnnl_cpu, 0));
        DNNL_OK(dnnl_stream_create(&g.stream, g.engine, dnnl_stream_default_flags));
    }
    dnnl_memory_desc_t a = md_of(k->M, k->K, k->lda, k->trans_a, dnnl_bf16);
    dnnl_memory_desc_t b = md_of(k->K, k->N, k->ldb, k->trans_b, dnnl_bf16);
    dnnl_memory_desc_t c = md_of(k->M, k->N, k->ldc, 0, k->c_bf16 ? dnnl_bf16 : dnnl_f32);
    dnnl_memory_desc_t bias = md_of(1, k->N, k->N, 0, dnnl_bf16);
    dnnl_matmul_desc_t d;
    DNNL_OK(dnnl_matmul_desc_init(&d, &a, &b, k->bias ? &bias : NULL, &c));
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    DNNL_OK(dnnl_primitive_attr_create(&attr));
    DNNL_OK(dnnl_post_ops_create(&po));
    float alpha, beta;
    memcpy(&alpha, &k->alpha, sizeof alpha);
    memcpy(&beta, &k->beta, sizeof beta);
    if (alpha != 1.0f) DNNL_OK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha));
    if (beta != 0.0f) DNNL_OK(dnnl_post_ops_append_sum(po, beta)); // beta 0 never reads C
    DNNL_OK(dnnl_primitive_attr_set_post_ops(attr, po));
    dnnl_status_t s = dnnl_primitive_desc_create(pd, &d, attr, g.engine, NULL);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_unimplemented)
        return zt_errorf("oneDNN %d.%d.%d has no bf16 matmul for this CPU", dnnl_version()->major,
                         dnnl_version()->minor, dnnl_version()->patch);
    DNNL_OK(s);
    return ZT_OK;
}

// The slot of k: found, or made (ZT_ERR: oneDNN has none; nothing cached).
static zt_status find_or_make(slot **out, const key *k) {
    for (int i = 0; i < g.used; i++)
        if (!memcmp(&g.s[i].k, k, sizeof *k)) {
            g.hits++;
            *out = &g.s[i];
            return ZT_OK;
        }
    g.misses++;
    dnnl_primitive_desc_t pd;
    ZT_TRY(make_pd(&pd, k));
    int i;
    if (g.used < SLOTS) {
        i = g.used++;
    } else { // full: the oldest goes
        i = g.next;
        g.next = (g.next + 1) % SLOTS;
        slot_free(&g.s[i]);
    }
    slot *s = &g.s[i];
    s->k = *k;
    DNNL_OK(dnnl_primitive_create(&s->prim, pd));
    const dnnl_memory_desc_t *a = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *b = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *c = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    DNNL_OK(dnnl_memory_create(&s->a, a, g.engine, DNNL_MEMORY_NONE));
    DNNL_OK(dnnl_memory_create(&s->b, b, g.engine, DNNL_MEMORY_NONE));
    DNNL_OK(dnnl_memory_create(&s->c, c, g.engine, DNNL_MEMORY_NONE));
    if (k->bias) {
        const dnnl_memory_desc_t *v = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
        DNNL_OK(dnnl_memory_create(&s->bias, v, g.engine, DNNL_MEMORY_NONE));
    }
    dnnl_primitive_desc_destroy(pd);
    *out = s;
    return ZT_OK;
}

static key key_of(int trans_a, int trans_b, int M, int N, int K, float alpha, int lda, int ldb,
                  float beta, zt_dtype ct, int ldc, int bias) {
    key k;
    memset(&k, 0, sizeof k); // no padding bytes of chance in the memcmp
    k.trans_a = trans_a, k.trans_b = trans_b, k.M = M, k.N = N, k.K = K;
    k.lda = lda, k.ldb = ldb, k.ldc = ldc, k.c_bf16 = ct == ZT_BF16, k.bias = bias;
    k.alpha = bits_of(alpha), k.beta = bits_of(beta == 0.0f ? 0.0f : beta); // -0 is 0
    return k;
}

zt_status zt_matmul_dnnl_check(void) {
    pthread_mutex_lock(&g.lock);
    slot *s;
    key k = key_of(0, 1, 8, 8, 8, 1.0f, 8, 8, 0.0f, ZT_F32, 8, 0);
    zt_status st = find_or_make(&s, &k);
    pthread_mutex_unlock(&g.lock);
    return st;
}

void zt_matmul_dnnl(int trans_a, int trans_b, int M, int N, int K, float alpha, const zt_bf16 *A,
                    int lda, const zt_bf16 *B, int ldb, float beta, void *C, zt_dtype ct,
                    int ldc, const zt_bf16 *bias) {
    ZT_ASSERT(M > 0 && N > 0 && K > 0 && (ct == ZT_F32 || ct == ZT_BF16));
    key k = key_of(trans_a, trans_b, M, N, K, alpha, lda, ldb, beta, ct, ldc, bias != NULL);
    pthread_mutex_lock(&g.lock);
    slot *s;
    zt_status st = find_or_make(&s, &k);
    ZT_ASSERTF(st == ZT_OK, "oneDNN's bf16 matmul (%d x %d x %d): %s (the path was checked "
               "when chosen)", M, N, K, zt_error_message());
    DNNL_OK(dnnl_memory_set_data_handle(s->a, (void *)A));
    DNNL_OK(dnnl_memory_set_data_handle(s->b, (void *)B));
    DNNL_OK(dnnl_memory_set_data_handle(s->c, C));
    if (bias) DNNL_OK(dnnl_memory_set_data_handle(s->bias, (void *)bias));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, s->a}, {DNNL_ARG_WEIGHTS, s->b},
                               {DNNL_ARG_DST, s->c}, {DNNL_ARG_BIAS, s->bias}};
    DNNL_OK(dnnl_primitive_execute(s->prim, g.stream, bias ? 4 : 3, args));
    DNNL_OK(dnnl_stream_wait(g.stream));
    pthread_mutex_unlock(&g.lock);
}

void zt_matmul_dnnl_stats(size_t *hits, size_t *misses, int *cached) {
    pthread_mutex_lock(&g.lock);
    *hits = g.hits, *misses = g.misses, *cached = g.used;
    pthread_mutex_unlock(&g.lock);
}
