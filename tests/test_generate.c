// Tests of generation (src/generate.c): the KV-cache decoder against the training forward
// over the whole sequence, and the sampler's rules.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "rng.h"
#include "test.h"

// The decoder's logits at every position equal zt_gpt2_forward + zt_gpt2_logits over the
// whole sequence (one rank). Both sides run the same kernels in fp32 on the same weights;
// they differ only in summation order (a 1-row GEMM against a T-row one, the decode
// attention's dot products against the forward's GEMM), so each logit differs by the
// reassociation error of sums of up to 4C = 128 terms through L = 2 blocks and their
// LayerNorms: about L * sqrt(4C) * eps32 ~ 2 * 11 * 6e-8 ~ 1.4e-6 of the row's scale.
// The bound, 1e-5 of the row's largest |logit| plus 1e-5 relative, leaves 7x margin.
ZT_TEST(generate_kv_cache_matches_forward) {
    zt_model_shape s = {.vocab = 300, .n_ctx = 24, .n_layer = 2, .n_head = 4, .n_embd = 32};
    s.padded_vocab = zt_padded_vocab(s.vocab, 1);
    int T = s.n_ctx, Vp = s.padded_vocab;
    const zt_backend *be = zt_backend_cpu();
    zt_gpt2 ref;
    CHECK(zt_gpt2_init(&ref, be, &s, 0, zt_unit_count(&s), 1, 0, 256, 256, 1, T, 0, 1, NULL) ==
          ZT_OK);
    zt_gpt2_init_random(&ref, 5);
    zt_decoder d;
    CHECK(zt_decoder_init(&d, be, &s, 1, 0, NULL) == ZT_OK);
    zt_gpt2_init_random(&d.model, 5);
    int32_t *tokens = calloc((size_t)T, sizeof *tokens), *targets = calloc((size_t)T, 4);
    float *want = calloc((size_t)T * Vp, sizeof *want), *got = calloc((size_t)Vp, sizeof *got);
    CHECK(tokens && targets && want && got);
    for (int t = 0; t < T; t++) tokens[t] = (int32_t)(zt_splitmix64((uint64_t)t + 99) % s.vocab);
    zt_gpt2_forward(&ref, tokens, NULL, targets, 0, 1.0f);
    zt_gpt2_logits(&ref, want);
    int rc = ZT_PASS;
    for (int t = 0; t < T && rc == ZT_PASS; t++) {
        zt_decoder_step(&d, tokens[t], got);
        const float *w = want + (size_t)t * Vp;
        double scale = 0;
        for (int v = 0; v < s.vocab; v++) scale = fmax(scale, fabs(w[v]));
        char what[64];
        snprintf(what, sizeof what, "logits at position %d", t);
        if (zt_check_close(what, got, w, (size_t)s.vocab, 1e-5 * scale, 1e-5)) rc = ZT_FAIL;
    }
    CHECK_EQ_INT(d.pos, T);
    // reset starts again at position 0 with the same answer
    zt_decoder_reset(&d);
    zt_decoder_step(&d, tokens[0], got);
    if (zt_check_close("after reset", got, want, (size_t)s.vocab, 1e-5, 1e-5)) rc = ZT_FAIL;
    free(tokens);
    free(targets);
    free(want);
    free(got);
    zt_decoder_free(&d);
    zt_gpt2_free(&ref);
    return rc;
}

ZT_TEST(generate_sampler_rules) {
    enum { V = 8 };
    float x[V] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f, 1.9f, -3.0f, 0.0f};
    int32_t idx[V];
    double prob[V];
    zt_sampler greedy = {0.0f, 0, 1.0f, 1};
    CHECK_EQ_INT(zt_sample(&greedy, x, V, 0, idx, prob), 1); // tie 1 vs 3: the lowest id
    CHECK_EQ_INT(zt_sample(&greedy, x, 3, 0, idx, prob), 1); // only [0, vocab) count
    // top-k 2 with the tie: ids 1 and 3 only; top-p tiny: the most likely one only
    zt_sampler k2 = {1.0f, 2, 1.0f, 7}, p0 = {1.0f, 0, 1e-6f, 7};
    int seen[V] = {0};
    for (uint64_t i = 0; i < 200; i++) {
        seen[zt_sample(&k2, x, V, i, idx, prob)]++;
        CHECK_EQ_INT(zt_sample(&p0, x, V, i, idx, prob), 1);
    }
    CHECK(seen[1] > 50 && seen[3] > 50 && seen[1] + seen[3] == 200);
    // a pure function of (logits, seed, draw); another seed gives another sequence
    zt_sampler all = {1.0f, 0, 1.0f, 7}, other = {1.0f, 0, 1.0f, 8};
    int same = 1, diff = 0;
    for (uint64_t i = 0; i < 64; i++) {
        int32_t a = zt_sample(&all, x, V, i, idx, prob);
        same &= a == zt_sample(&all, x, V, i, idx, prob);
        diff |= a != zt_sample(&other, x, V, i, idx, prob);
    }
    CHECK(same && diff);
    // low temperature approaches greedy
    zt_sampler cold = {1e-3f, 0, 1.0f, 3};
    for (uint64_t i = 0; i < 32; i++) {
        int32_t a = zt_sample(&cold, x, V, i, idx, prob);
        CHECK(a == 1 || a == 3);
    }
    return ZT_PASS;
}
