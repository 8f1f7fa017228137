// The backends by name (kernels/backend.c): what each says it supports, opening with options,
// and one clear error for a name or option it cannot take; the op list (backend_ops.h) and
// what is generated from it: the registry's check and the --profile decorator.
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "backend_impl.h"
#include "backend_profile.h"
#include "launch_math.h"
#include "test.h"

// Every known name has capabilities; the CPU is always built and runs several ranks; the
// CUDA entry exists in every binary (built or not) and says it keeps tensors off the host.
ZT_TEST(backend_caps) {
    int n = 0;
    for (const char *const *name = zt_backend_names; *name; name++, n++) {
        const zt_backend_caps *c = zt_backend_caps_of(*name);
        CHECK(c != NULL && strcmp(c->name, *name) == 0);
    }
    CHECK_EQ_INT(n, 2);
    const zt_backend_caps *cpu = zt_backend_caps_of("cpu"), *cuda = zt_backend_caps_of("cuda");
    CHECK(cpu->built && cpu->multi_rank && !cpu->tf32 && !cpu->device_memory);
    CHECK(cuda->tf32 && cuda->device_memory);
    // the bf16 op group: both have it and state their GEMM scratch (CUDA's, built or not)
    CHECK(cpu->bf16 && cpu->gemm_mixed_workspace >= ((size_t)1 << 20));
    CHECK(cuda->bf16 && cuda->gemm_mixed_workspace == ZT_CUDA_GEMM_MIXED_WORKSPACE);
    CHECK(zt_backend_caps_of("tpu") == NULL && zt_backend_caps_of(NULL) == NULL);
    // the CPU attention's scratch: two T x T matrices per thread; CUDA's: two score buffers of
    // query blocks and their pointer arrays, linear in T, the same built or not (the planner)
    CHECK_EQ_INT(cpu->attention_workspace(3, 64), 3 * 2 * 64 * 64);
    size_t att1024 = 2 * zt_att_scores_floats(1024) + 2 * zt_att_pointers(1024);
    CHECK(cuda->attention_workspace && cuda->attention_workspace(3, 1024) == att1024);
    CHECK(cuda->attention_workspace(1, 2048) == 2 * cuda->attention_workspace(1, 1024));
    return ZT_PASS;
}

// Opening the CPU backend with a thread count sets the one OpenMP pool and sizes the scratch
// by it; the options it cannot take are refused by name, before anything opens.
ZT_TEST(backend_open_options) {
    int before = omp_get_max_threads();
    zt_backend be;
    CHECK(zt_backend_open(&be, "cpu", &(zt_backend_options){.threads = 3}) == ZT_OK);
    CHECK(strcmp(be.ops->name, "cpu") == 0 && be.caps == zt_backend_caps_of("cpu"));
    CHECK_EQ_INT(be.threads, 3);
    CHECK_EQ_INT(omp_get_max_threads(), 3);
    CHECK_EQ_INT(zt_backend_attention_workspace(&be, 16), 3 * 2 * 16 * 16);
    CHECK(be.ops->stream(&be) == NULL);
    char line[512] = "";
    be.ops->describe(&be, line, sizeof line);
    CHECK(strstr(line, "core") != NULL); // the BLAS library and its kernels
    zt_backend_close(&be);
    CHECK(be.ops == NULL && be.caps == NULL);
    omp_set_num_threads(before);

    CHECK(zt_backend_open(&be, "tpu", &(zt_backend_options){0}) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "--backend tpu is not known") != NULL);
    CHECK(zt_backend_open(&be, "cpu", &(zt_backend_options){.tf32 = 1}) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "--tf32 applies to --backend cuda only") != NULL);
    CHECK(zt_backend_check("cpu", &(zt_backend_options){.threads = -1}) == ZT_ERR);
    // --bf16-gemm: the CPU takes a path (the fallback runs anywhere; open again for auto);
    // another backend refuses all but auto
    zt_backend_options fallback = {.bf16_gemm = ZT_BF16_GEMM_FALLBACK};
    CHECK(zt_backend_open(&be, "cpu", &fallback) == ZT_OK);
    zt_backend_close(&be);
    CHECK(zt_backend_open(&be, "cpu", &(zt_backend_options){0}) == ZT_OK);
    zt_backend_close(&be);
    if (zt_backend_caps_of("cuda")->built) {
        CHECK(zt_backend_check("cuda", &fallback) == ZT_ERR);
        CHECK(strstr(zt_error_message(), "--bf16-gemm applies to --backend cpu only") != NULL);
    }
    if (!zt_backend_caps_of("cuda")->built) { // plain `make`: says how to get it
        CHECK(zt_backend_open(&be, "cuda", &(zt_backend_options){0}) == ZT_ERR);
        CHECK(strstr(zt_error_message(), "build with `make cuda`") != NULL);
    }
    zt_backend_close(&be); // a failed open leaves nothing to close
    return ZT_PASS;
}

// The registry's check covers every slot of the list: a CPU table with any one op taken out
// is refused by that op's name; a bf16 op only where the backend says it has them. Among
// them sum_into (which the hand-kept check once missed) and attention_decode (every backend
// has it: the decoder calls it unchecked).
ZT_TEST(backend_ops_check) {
    const zt_backend_i *cpu = zt_test_cpu()->ops;
    CHECK(zt_backend_missing_op(cpu, 1) == NULL);
    int ops = 0, bf16_ops = 0;
#define ZT_OP(ret, name, group, ...)                                                   \
    {                                                                                  \
        zt_backend_i gap = *cpu;                                                       \
        gap.name = NULL;                                                               \
        const char *with = zt_backend_missing_op(&gap, 1);                             \
        const char *without = zt_backend_missing_op(&gap, 0);                          \
        if (!with || strcmp(with, #name) != 0 ||                                       \
            (group == ZT_OPS_ALL ? !without || strcmp(without, #name) != 0 : !!without)) { \
            fprintf(stderr, "the check missed an empty %s: %s with bf16, %s without\n", \
                    #name, with ? with : "(none)", without ? without : "(none)");       \
            return ZT_FAIL;                                                            \
        }                                                                              \
        ops++;                                                                         \
        bf16_ops += group == ZT_OPS_BF16;                                              \
    }
#include "backend_ops.h"
#undef ZT_OP
    printf("  %d ops, %d of them the bf16 group: each one's absence refused\n", ops, bf16_ops);
    return ZT_PASS;
}

// A backend whose every op only counts its calls (generated from the list): what the
// profiling decorator must forward each op to.
enum {
#define ZT_OP(ret, name, ...) REC_##name,
#include "backend_ops.h"
#undef ZT_OP
    REC_COUNT
};
static long rec_calls[REC_COUNT];
#define RETURN_ZERO_void
#define RETURN_ZERO_int return 0;
#define RETURN_ZERO_double return 0.0;
#define RETURN_ZERO_ptr return NULL;
#define ZT_OP(ret, name, group, phase, flops, params)                       \
    static ZT_OP_RET(ret) rec_##name(const zt_backend *be ZT_OP_PARAMS(params)) { \
        rec_calls[REC_##name]++;                                            \
        RETURN_ZERO_##ret                                                   \
    }
#include "backend_ops.h"
#undef ZT_OP
static const zt_backend_i rec_ops = {
    .name = "recorder",
    .library = "none",
#define ZT_OP(ret, name, ...) .name = rec_##name,
#include "backend_ops.h"
#undef ZT_OP
};
// An entry's parameters as zeros of their types: ", (type){0}, ...".
#define ZEROS_A(type, name) , (type){0} ZEROS_B
#define ZEROS_B(type, name) , (type){0} ZEROS_A
#define ZEROS_A_END
#define ZEROS_B_END

static long calls_total(const long *calls, int n) {
    long t = 0;
    for (int i = 0; i < n; i++) t += calls[i];
    return t;
}

// One decorated op's effect: the inner op of its name once, and for a timed one a sync after
// it and one timing in its phase; nothing else.
static int forwarded(const char *name, int op, int timed, long timings) {
    long want[REC_COUNT] = {0};
    want[op] = 1;
    want[REC_sync] += timed;
    int ok = timings == timed;
    for (int i = 0; i < REC_COUNT; i++) ok &= rec_calls[i] == want[i];
    if (!ok)
        fprintf(stderr, "--profile's %s: the inner %s ran %ld time(s), sync %ld, all ops %ld, "
                "timings %ld (want %ld, %ld, %d, %d)\n", name, name, rec_calls[op],
                rec_calls[REC_sync], calls_total(rec_calls, REC_COUNT), timings, want[op],
                want[REC_sync], 1 + timed, timed);
    return ok;
}

// --profile forwards every op of the list to the inner backend's op of the same name, timing
// those with a phase (a sync, then their time in the phase) and no other.
ZT_TEST(backend_profile_forwards) {
    zt_backend_caps caps = *zt_test_cpu()->caps; // bf16 1: every slot wrapped
    zt_backend inner = {&rec_ops, &caps, 1, NULL}, pb;
    zt_profile acc;
    memset(&acc, 0, sizeof acc);
    zt_backend_profile_state st;
    zt_backend_profile_init(&pb, &st, &inner, &acc);
    CHECK(zt_backend_missing_op(pb.ops, 1) == NULL);
    CHECK(strcmp(pb.ops->name, "recorder") == 0);
    int ops = 0;
#define ZT_OP(ret, name, group, phase, flops, params)                                  \
    {                                                                                  \
        memset(rec_calls, 0, sizeof rec_calls);                                        \
        long before = calls_total(acc.calls, ZT_PHASE_COUNT);                          \
        pb.ops->name(&pb ZT_OP_LAST_END(ZEROS_A params));                              \
        long timings = calls_total(acc.calls, ZT_PHASE_COUNT) - before;                \
        if (!forwarded(#name, REC_##name, phase != ZT_OP_UNTIMED, timings)) return ZT_FAIL; \
        ops++;                                                                         \
    }
#include "backend_ops.h"
#undef ZT_OP
    CHECK_EQ_INT(ops, REC_COUNT);
    // over a backend without the bf16 ops, their slots stay empty, as the check expects
    caps.bf16 = 0;
    zt_backend_profile_init(&pb, &st, &inner, &acc);
    CHECK(zt_backend_missing_op(pb.ops, 0) == NULL && pb.ops->gemm_mixed == NULL);
    return ZT_PASS;
}

// The backward's halves through the CPU backend's table (backend_ops.h): matmul_backward_input
// then matmul_backward_weight give matmul_backward's dinp, dw and dbias bit for bit (both
// layouts, with and without a bias, dinp written and accumulated, dw and dbias added to
// non-zero values): tolerance 0, the halves are the combined op's own calls.
ZT_TEST(backend_matmul_backward_halves) {
    const zt_backend *be = zt_test_cpu();
    const zt_backend_i *o = be->ops;
    enum { N = 13, C = 21, OC = 35 };
    static float dout[N * OC], inp[N * C], w[OC * C], dinp[2][N * C], dw[2][OC * C], db[2][OC];
    uint64_t x = 88172645463325252ull;
    float *all[3] = {dout, inp, w};
    size_t len[3] = {N * OC, N * C, OC * C};
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < len[a]; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            all[a][i] = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        }
    for (int in_out = 0; in_out < 2; in_out++)
        for (int bias = 0; bias < 2; bias++)
            for (int acc = 0; acc < 2; acc++) {
                for (int k = 0; k < 2; k++) {
                    for (int i = 0; i < N * C; i++) dinp[k][i] = 0.25f * (float)(i % 7);
                    for (int i = 0; i < OC * C; i++) dw[k][i] = 0.5f * (float)(i % 5);
                    for (int i = 0; i < OC; i++) db[k][i] = 0.125f * (float)(i % 3);
                }
                float *b0 = bias ? db[0] : NULL, *b1 = bias ? db[1] : NULL;
                if (in_out) {
                    o->matmul_in_out_backward(be, dinp[0], dw[0], b0, dout, inp, w, N, C, OC,
                                              acc);
                    o->matmul_in_out_backward_input(be, dinp[1], dout, w, N, C, OC, acc);
                    o->matmul_in_out_backward_weight(be, dw[1], b1, dout, inp, N, C, OC);
                } else {
                    o->matmul_backward(be, dinp[0], dw[0], b0, dout, inp, w, N, C, OC, acc);
                    o->matmul_backward_input(be, dinp[1], dout, w, N, C, OC, acc);
                    o->matmul_backward_weight(be, dw[1], b1, dout, inp, N, C, OC);
                }
                CHECK(memcmp(dinp[0], dinp[1], sizeof dinp[0]) == 0);
                CHECK(memcmp(dw[0], dw[1], sizeof dw[0]) == 0);
                CHECK(memcmp(db[0], db[1], sizeof db[0]) == 0);
            }
    return ZT_PASS;
}
