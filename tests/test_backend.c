// The backends by name (kernels/backend.c): what each says it supports, opening with options,
// and one clear error for a name or option it cannot take.
#include <omp.h>
#include <string.h>

#include "backend.h"
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
