// The overlapped parameter all-gather's pieces (src/parallel/param_gather.h), without MPI:
// for layouts of every kind of stage, dp sizes and bucket sizes, the pieces tile the buffer
// in order, none crosses a shard boundary, each is broadcast by the owner of its shard, and
// each bucket starts at a tensor and holds at least the bucket size (except the last).
#include <string.h>

#include "layout.h"
#include "param_gather.h"
#include "test.h"

// 1 when `at` is the offset of a tensor of lay, or the end.
static int tensor_start(const zt_layout *lay, size_t at) {
    for (int i = 0; i < lay->n; i++)
        if (lay->t[i].offset == at) return 1;
    return 0;
}

static int check_pieces(const zt_layout *lay, int dp, size_t bucket) {
    zt_comm c = {0}; // only the size is read: nothing is started here
    c.size = dp;
    zt_param_gather o;
    zt_param_gather_init(&o, &c, NULL, ZT_F32, lay, bucket);
    size_t shard = lay->numel / (size_t)dp, bucket_lo = 0;
    CHECK(o.n >= dp && o.lo[0] == 0 && o.lo[o.n] == lay->numel);
    for (int i = 0; i < o.n; i++) {
        size_t lo = o.lo[i], hi = o.lo[i + 1];
        CHECK(lo < hi);
        CHECK_EQ_INT(o.owner[i], (int)(lo / shard));
        CHECK((hi - 1) / shard == lo / shard); // within one shard
        if (lo % shard == 0 && !tensor_start(lay, lo)) continue; // a shard cut only
        // a bucket cut: at a tensor, after at least `bucket` elements
        CHECK(tensor_start(lay, lo));
        CHECK(lo == 0 || lo - bucket_lo >= bucket || lo % shard == 0);
        if (lo - bucket_lo >= bucket) bucket_lo = lo;
    }
    zt_param_gather_free(&o);
    return ZT_PASS;
}

ZT_TEST(param_gather_pieces) {
    zt_model_shape s = {.vocab = 256, .n_ctx = 64, .n_layer = 3, .n_head = 4, .n_embd = 48};
    int units = zt_unit_count(&s);
    // stages: whole model, embed + block, blocks only, block + head, head only
    int ranges[][2] = {{0, units}, {0, 2}, {1, 4}, {3, units}, {4, units}};
    size_t buckets[] = {1, 1000, 20000, (size_t)1 << 30};
    for (int tp = 1; tp <= 2; tp++) {
        s.padded_vocab = zt_padded_vocab(s.vocab, tp);
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
            for (int dp = 1; dp <= 5; dp++) {
                zt_layout lay;
                CHECK(zt_layout_init(&lay, &s, ranges[r][0], ranges[r][1], tp, 0, 256) == ZT_OK);
                size_t pad = (size_t)dp * 256; // the trainer's padding: equal shards
                lay.numel = (lay.numel + pad - 1) / pad * pad;
                for (size_t b = 0; b < sizeof buckets / sizeof buckets[0]; b++)
                    if (check_pieces(&lay, dp, buckets[b]) != ZT_PASS) {
                        fprintf(stderr, "  stage [%d, %d), tp %d, dp %d, bucket %zu\n",
                                ranges[r][0], ranges[r][1], tp, dp, buckets[b]);
                        zt_layout_free(&lay);
                        return ZT_FAIL;
                    }
                zt_layout_free(&lay);
            }
    }
    return ZT_PASS;
}
