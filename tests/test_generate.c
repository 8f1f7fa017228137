// Tests of generation (src/model/generate.c): the KV-cache decoder against the training forward
// over the whole sequence, and the sampler's rules.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "rng.h"
#include "test.h"

// A decoder and the training forward on the same random weights, and the forward's
// logits at every position of a random sequence of n_ctx tokens (one rank).
typedef struct {
    zt_model_shape s;
    zt_gpt2 ref;
    zt_decoder d;
    int32_t *tokens; // (T)
    float *want;     // (T, Vp) the forward's logits
    float *got;      // (Vp)
} decode_case;

static int decode_case_init(decode_case *c, int n_ctx, zt_dtype dtype) {
    memset(c, 0, sizeof *c);
    c->s = (zt_model_shape){.vocab = 300, .n_ctx = n_ctx, .n_layer = 2, .n_head = 4,
                            .n_embd = 32};
    c->s.padded_vocab = zt_padded_vocab(c->s.vocab, 1);
    int T = n_ctx, Vp = c->s.padded_vocab;
    const zt_backend *be = zt_test_cpu();
    CHECK(zt_gpt2_init(&c->ref, be, &c->s, 0, zt_unit_count(&c->s), 1, 0, 256, 256, 1, T, 0, 1,
                       NULL, dtype, NULL) == ZT_OK);
    zt_gpt2_init_random(&c->ref, 5);
    CHECK(zt_decoder_init(&c->d, be, &c->s, 0, zt_unit_count(&c->s), 1, 0, NULL, NULL, dtype) == ZT_OK);
    zt_gpt2_init_random(&c->d.model, 5);
    c->tokens = calloc((size_t)T, sizeof *c->tokens);
    int32_t *targets = calloc((size_t)T, sizeof *targets);
    c->want = calloc((size_t)T * Vp, sizeof *c->want);
    c->got = calloc((size_t)Vp, sizeof *c->got);
    CHECK(c->tokens && targets && c->want && c->got);
    for (int t = 0; t < T; t++)
        c->tokens[t] = (int32_t)(zt_splitmix64((uint64_t)t + 99) % c->s.vocab);
    zt_gpt2_forward(&c->ref, c->tokens, NULL, targets, 0, 1.0f);
    zt_gpt2_logits(&c->ref, c->want);
    free(targets);
    return ZT_PASS;
}

static void decode_case_free(decode_case *c) {
    free(c->tokens);
    free(c->want);
    free(c->got);
    zt_decoder_free(&c->d);
    zt_gpt2_free(&c->ref);
}

// The decoder's last logits against the forward's at position t. Both sides run the same
// kernels in fp32 on the same weights; they differ only in summation order (GEMMs of other
// row counts, the decode attention's dot products against the forward's GEMM), so each
// logit differs by the reassociation error of sums of up to max(4C, T) = 160 terms through
// L = 2 blocks and their LayerNorms: about L * sqrt(160) * eps32 ~ 2 * 13 * 6e-8 ~ 1.6e-6
// of the row's scale. The bound, 1e-5 of the row's largest |logit| plus 1e-5 relative,
// leaves 6x margin.
static int close_to_forward(const decode_case *c, int t, double tol) {
    const float *w = c->want + (size_t)t * c->s.padded_vocab;
    double scale = 0;
    for (int v = 0; v < c->s.vocab; v++) scale = fmax(scale, fabs(w[v]));
    char what[64];
    snprintf(what, sizeof what, "logits at position %d", t);
    return zt_check_close(what, c->got, w, (size_t)c->s.vocab, tol * scale, tol) == 0;
}
static int matches_forward(const decode_case *c, int t) { return close_to_forward(c, t, 1e-5); }

// One token at a time, the logits at every position equal the forward's.
ZT_TEST(generate_kv_cache_matches_forward) {
    decode_case c;
    if (decode_case_init(&c, 24, ZT_F32) != ZT_PASS) return ZT_FAIL;
    int rc = ZT_PASS;
    for (int t = 0; t < c.s.n_ctx && rc == ZT_PASS; t++) {
        zt_decoder_step(&c.d, c.tokens[t], c.got);
        if (!matches_forward(&c, t)) rc = ZT_FAIL;
    }
    if (c.d.pos != c.s.n_ctx) rc = ZT_FAIL;
    // reset starts again at position 0 with the same answer
    zt_decoder_reset(&c.d);
    zt_decoder_step(&c.d, c.tokens[0], c.got);
    if (!matches_forward(&c, 0)) rc = ZT_FAIL;
    decode_case_free(&c);
    return rc;
}

// Tokens fed in chunks (a prompt) give the same logits: every prefix length of a model
// with more positions than one chunk holds (so prefixes past ZT_DECODER_ROWS take two
// chunks), and a mix of feeds and single steps continuing one cache.
ZT_TEST(generate_feed_chunks_match_forward) {
    decode_case c;
    if (decode_case_init(&c, ZT_DECODER_ROWS + 32, ZT_F32) != ZT_PASS) return ZT_FAIL;
    int T = c.s.n_ctx, rc = ZT_PASS;
    CHECK_EQ_INT(c.d.rows, ZT_DECODER_ROWS);
    for (int n = 1; n <= T && rc == ZT_PASS; n++) {
        zt_decoder_reset(&c.d);
        zt_decoder_feed(&c.d, c.tokens, n, c.got);
        if (c.d.pos != n || !matches_forward(&c, n - 1)) rc = ZT_FAIL;
    }
    // 5 tokens, one step, then the rest (crossing a chunk boundary) on the same cache
    zt_decoder_reset(&c.d);
    zt_decoder_feed(&c.d, c.tokens, 5, c.got);
    if (!matches_forward(&c, 4)) rc = ZT_FAIL;
    zt_decoder_step(&c.d, c.tokens[5], c.got);
    if (!matches_forward(&c, 5)) rc = ZT_FAIL;
    zt_decoder_feed(&c.d, c.tokens + 6, T - 6, c.got);
    if (c.d.pos != T || !matches_forward(&c, T - 1)) rc = ZT_FAIL;
    decode_case_free(&c);
    return rc;
}

// bf16 weights (generate --param-dtype bf16): the decoder runs the bf16 products the training
// forward runs, on the same bf16 weights, and rounds what the forward stores in bf16 (the
// residual stream, q, k, v, c_fc's output) as it does. Their fp32 sums differ by reassociation
// (above), and where such a difference crosses a rounding boundary an operand of a product
// rounds to the neighbouring bf16 value: a term of a sum moves by up to one bf16 ulp
// (2^-7 of it, relative). Such flips are rare (an fp32-level difference against a bf16 ulp:
// ~1e-6 / 4e-3 per operand), so a logit moves by about one flipped term at most: 2^-8 of the
// row's largest |logit| (the terms are below the logits' scale) bounds it. Measured: see the
// test's output; an fp32 decoder over bf16-rounded weights would miss by far more (the
// activations' own rounding, every term).
ZT_TEST(generate_bf16_matches_forward) {
    decode_case c;
    if (decode_case_init(&c, 24, ZT_BF16) != ZT_PASS) return ZT_FAIL;
    int rc = ZT_PASS;
    for (int t = 0; t < c.s.n_ctx && rc == ZT_PASS; t++) {
        zt_decoder_step(&c.d, c.tokens[t], c.got);
        if (!close_to_forward(&c, t, 1.0 / 256)) rc = ZT_FAIL;
    }
    zt_decoder_reset(&c.d); // and a prompt in one chunk
    zt_decoder_feed(&c.d, c.tokens, c.s.n_ctx, c.got);
    if (!close_to_forward(&c, c.s.n_ctx - 1, 1.0 / 256)) rc = ZT_FAIL;
    decode_case_free(&c);
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
