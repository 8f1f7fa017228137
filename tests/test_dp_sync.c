// The data-parallel synchronizer (src/parallel/dp_sync.h) without MPI: the shard arithmetic
// tiles the buffer and is the planner's; on a one-rank group every mode's reduction and
// gather leave the values as they are, and the model's hooks act only in the moments the
// schedule names.
#include <string.h>

#include "dp_sync.h"
#include "planner.h"
#include "test.h"

ZT_TEST(dp_sync_shard_ranges) {
    for (int dp = 1; dp <= 8; dp++)
        for (size_t blocks = 1; blocks <= 3; blocks++) {
            size_t numel = blocks * (size_t)dp * ZT_ALIGN_ELEMS, end = 0;
            for (int r = 0; r < dp; r++) {
                size_t lo, hi;
                zt_dp_shard(numel, dp, r, 1, &lo, &hi);
                CHECK_EQ_INT(lo, end); // in order, no gap, no overlap
                CHECK_EQ_INT(hi - lo, numel / (size_t)dp); // equal
                CHECK_EQ_INT(lo % ZT_ALIGN_ELEMS, 0);      // block-aligned
                end = hi;
                zt_dp_shard(numel, dp, r, 0, &lo, &hi);
                CHECK(lo == 0 && hi == numel);
            }
            CHECK_EQ_INT(end, numel);
        }
    return ZT_PASS;
}

// A two-tensor layout of n elements (padded as the model pads for dp 1).
static void small_layout(zt_layout *lay, size_t n) {
    memset(lay, 0, sizeof *lay);
    static zt_tensor_desc t[2];
    memset(t, 0, sizeof t);
    t[0].offset = 0;
    t[0].numel = n / 2;
    t[1].offset = n / 2;
    t[1].numel = n / 2;
    lay->t = t;
    lay->n = 2;
    lay->numel = n;
}

// One step's calls in every mode on a one-rank group: the sums of one rank are its values.
static int one_step(int zero, int overlap) {
    enum { N = 2 * ZT_ALIGN_ELEMS };
    float grads[N], params[N], want_g[N], want_p[N];
    for (int i = 0; i < N; i++) want_g[i] = grads[i] = 0.5f * (float)i - 3.0f;
    for (int i = 0; i < N; i++) want_p[i] = params[i] = 1.0f / (float)(i + 1);
    zt_comm self;
    zt_comm_self_init(&self);
    zt_layout lay;
    small_layout(&lay, N);
    zt_dp_sync_options o = {.zero = zero, .overlap = overlap, .bucket_bytes = 0, .max_ready = 2};
    zt_dp_sync s;
    zt_dp_sync_init(&s, &o, &self, &self, &self, ZT_ALIGN_ELEMS, grads, params, ZT_F32, &lay);
    CHECK(s.shard_lo == 0 && s.shard_hi == N);
    zt_dp_sync_next_forward(&s, 1);
    zt_dp_sync_params_needed(&s, 0, N);
    zt_dp_sync_next_backward(&s, 0);
    zt_dp_sync_grads_final(&s, N / 2); // not the last backward: nothing starts
    CHECK_EQ_INT(s.gr.n, 0);
    zt_dp_sync_next_backward(&s, 1);
    zt_dp_sync_grads_final(&s, N / 2); // the last: a bucket starts when overlapped
    CHECK_EQ_INT(s.gr.n, overlap ? 1 : 0);
    zt_dp_sync_reduce(&s);
    size_t lo, hi;
    CHECK(zt_dp_sync_norm_range(&s, &lo, &hi) && lo == 0 && hi == N);
    zt_dp_sync_gather(&s);
    zt_dp_sync_settle(&s);
    CHECK(memcmp(grads, want_g, sizeof grads) == 0 && memcmp(params, want_p, sizeof params) == 0);
    CHECK(strcmp(zt_dp_sync_describe(&s), zero ? "zero 1" : "zero 0") == 0);
    zt_dp_sync_free(&s);
    return ZT_PASS;
}

ZT_TEST(dp_sync_self_modes) {
    for (int zero = 0; zero <= 1; zero++)
        for (int overlap = 0; overlap <= 1; overlap++)
            if (one_step(zero, overlap) != ZT_PASS) {
                fprintf(stderr, "  zero %d, overlap %d\n", zero, overlap);
                return ZT_FAIL;
            }
    return ZT_PASS;
}
