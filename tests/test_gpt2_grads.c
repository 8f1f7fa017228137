// Tests of zt_gpt2_zero_grads (src/model/gpt2_zeroed.c): a product writing a still-zeroed
// gradient instead of adding onto its zeros must give the values of adding, in every backward
// the model has (whole, and split into input and weight passes) and over micro-batches and
// loss chunks, where only the first contribution may write.
#include <stdlib.h>
#include <string.h>

#include "bf16_math.h"
#include "gpt2.h"
#include "rng.h"
#include "test.h"

enum { B = 2, T = 8, CHUNK = 6, MICRO = 2 };

// Micro-batches [first, MICRO) of forward and backward into the gradients, zeroed before by
// zt_gpt2_zero_grads (`zeroed`) or by a plain memset (every product adds); the gradients
// widened into out (layout.numel).
static void micro_batches(zt_gpt2 *m, const int32_t *tokens, int first, int zeroed, int split,
                          float *out) {
    const zt_backend *be = m->be;
    if (zeroed) zt_gpt2_zero_grads(m);
    else be->ops->memset(be, m->grads, 0, m->layout.numel * zt_gpt2_elem_size(m));
    for (int k = first; k < MICRO; k++) {
        const int32_t *in = tokens + (size_t)k * (B * T + 1);
        zt_gpt2_forward(m, in, NULL, in + 1, 1, 1.0f / (MICRO * B * T));
        if (split) {
            zt_gpt2_backward_input(m, in, NULL, NULL);
            zt_gpt2_backward_weight(m, in);
        } else {
            zt_gpt2_backward(m, in, NULL, NULL);
        }
    }
    zt_gpt2_take_loss(m);
    for (size_t i = 0; i < m->layout.numel; i++)
        out[i] = m->dtype == ZT_BF16 ? zt_bf16_to_fp32(((const zt_bf16 *)m->grads)[i])
                                     : ((const float *)m->grads)[i];
}

static int zeroed_case(zt_dtype dtype, int split) {
    zt_model_shape s = {.vocab = 200, .n_ctx = T, .n_layer = 2, .n_head = 2, .n_embd = 32};
    s.padded_vocab = zt_padded_vocab(s.vocab, 1);
    zt_act_options opts = {.w_slots = split};
    zt_gpt2 m;
    CHECK(zt_gpt2_init(&m, zt_test_cpu(), &s, 0, zt_unit_count(&s), 1, 0, 256, 256, B, T, CHUNK,
                       1, NULL, dtype, &opts) == ZT_OK);
    zt_gpt2_init_random(&m, 3);
    int32_t tokens[MICRO * (B * T + 1)];
    for (size_t i = 0; i < sizeof tokens / sizeof *tokens; i++)
        tokens[i] = (int32_t)(zt_splitmix64(i + 17) % (uint64_t)s.vocab);
    float *added = malloc(m.layout.numel * sizeof(float));
    float *written = malloc(m.layout.numel * sizeof(float));
    float *last = malloc(m.layout.numel * sizeof(float));
    CHECK(added && written && last);
    micro_batches(&m, tokens, 0, 0, split, added);
    micro_batches(&m, tokens, MICRO - 1, 1, split, last);
    micro_batches(&m, tokens, 0, 1, split, written);
    // Every gradient marked zeroed was written by a product (fp32 marks wte alone), so the
    // comparison below covers writing, not only adding.
    CHECK(m.zeroed->n == 0);
    size_t bad = 0, nonzero = 0, from_last = 0;
    for (size_t i = 0; i < m.layout.numel; i++) {
        bad += written[i] != added[i]; // == : the sign of a zero may differ (0 + -0 is +0)
        nonzero += added[i] != 0.0f;
        from_last += written[i] != last[i];
    }
    // The micro-batches before the last one count: they were not written over.
    CHECK(nonzero > m.layout.numel / 2 && from_last > m.layout.numel / 2);
    if (bad) fprintf(stderr, "%s%s: %zu of %zu gradient values differ\n", zt_dtype_name(dtype),
                     split ? " (split backward)" : "", bad, m.layout.numel);
    CHECK(bad == 0);
    free(added);
    free(written);
    free(last);
    zt_gpt2_free(&m);
    return ZT_PASS;
}

ZT_TEST(gpt2_zeroed_grads) {
    for (int split = 0; split <= 1; split++) {
        CHECK(zeroed_case(ZT_F32, split) == ZT_PASS);
        CHECK(zeroed_case(ZT_BF16, split) == ZT_PASS);
    }
    return ZT_PASS;
}
