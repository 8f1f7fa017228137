// Samples during training (train_sample.h).
#include "train_sample.h"

#include <stdlib.h>
#include <string.h>

zt_status zt_train_sampler_init(zt_train_sampler *s, const zt_gpt2 *m, const zt_comm *tp_data,
                                const zt_comm *pp_data, int32_t start, int print) {
    memset(s, 0, sizeof *s);
    ZT_TRY(zt_decoder_init_over(&s->d, m, tp_data, pp_data));
    int V = m->shape.vocab;
    s->start = start;
    s->logits = malloc((size_t)m->shape.padded_vocab * sizeof *s->logits);
    s->idx = malloc((size_t)V * sizeof *s->idx);
    s->prob = malloc((size_t)V * sizeof *s->prob);
    ZT_ASSERT(s->logits && s->idx && s->prob);
    if (V == ZT_GPT2_VOCAB) {
        char path[4096];
        zt_bpe_default_vocab(path, sizeof path);
        if (zt_bpe_load(&s->bpe, path) != ZT_OK && print)
            fprintf(stderr, "zerotrain: note: --sample-every prints token ids: %s (the GPT-2 "
                            "vocabulary: bash scripts/fetch_gpt2_vocab.sh)\n",
                    zt_error_message());
    }
    return ZT_OK;
}

void zt_train_sampler_free(zt_train_sampler *s) {
    zt_decoder_free(&s->d);
    zt_bpe_free(s->bpe);
    free(s->logits);
    free(s->idx);
    free(s->prob);
    memset(s, 0, sizeof *s);
}

void zt_train_sample(zt_train_sampler *s, int len, uint64_t seed, int step, int print) {
    const zt_model_shape *sh = &s->d.w->shape;
    int V = sh->vocab, eot = V == ZT_GPT2_VOCAB ? ZT_BPE_GPT2_EOT : -1;
    zt_sampler smp = {1.0f, 0, 1.0f, seed};
    zt_decoder_reset(&s->d);
    zt_decoder_step(&s->d, s->start, s->logits);
    if (print) printf("sample (step %d): ", step);
    for (int i = 0; i < len; i++) {
        // generate's draw: the position the token takes, so the two agree token for token
        int32_t tok = zt_sample(&smp, s->logits, V, (uint64_t)s->d.pos, s->idx, s->prob);
        if (print) zt_token_print(stdout, s->bpe, V, tok, i == 0);
        if (tok == eot || i + 1 == len || s->d.pos + 1 >= sh->n_ctx) break;
        zt_decoder_step(&s->d, tok, s->logits);
    }
    if (print) {
        putchar('\n');
        fflush(stdout);
    }
}
