// --sample-every: a short continuation printed during training, as llm.c does, so a user
// sees what the model has learned. The decoder (src/model/generate.h) borrows the training
// model's weights (any dp, tp and pp: each stage decodes its own layers and passes the
// chunk on), so a sample costs its KV cache and a few rows, which the memory planner counts.
#ifndef ZT_TRAIN_SAMPLE_H
#define ZT_TRAIN_SAMPLE_H

#include "bpe.h"
#include "generate.h"

typedef struct {
    zt_decoder d;
    zt_bpe *bpe;          // GPT-2's vocabulary when the model has it and the file is there
    float *logits;        // (Vp) host
    int32_t *idx;         // (V) the sampler's scratch
    double *prob;         // (V)
    int32_t start;        // the prompt: the training data's first token
} zt_train_sampler;

// The sampler over model m (this rank's stage; tp_data, pp_data: its tp group's and
// pipeline's tensor paths, NULL at tp 1 and pp 1), prompted with token `start`. Without the
// GPT-2 vocabulary file a GPT-2 model's samples print as ids (rank 0 says so once when
// `print`). Free with zt_train_sampler_free, also after a failure.
zt_status zt_train_sampler_init(zt_train_sampler *s, const zt_gpt2 *m, const zt_comm *tp_data,
                                const zt_comm *pp_data, int32_t start, int print);
void zt_train_sampler_free(zt_train_sampler *s);

// Decodes up to `len` tokens after the prompt (fewer at the end-of-text token or n_ctx)
// with temperature 1 and `seed`: exactly what `zerotrain generate --prompt-ids <start>
// --max-new len --seed seed` gives from the same weights. Collective over the tp group
// and the pipeline (every rank calls it); prints "sample (step N): ..." on `print`.
void zt_train_sample(zt_train_sampler *s, int len, uint64_t seed, int step, int print);

#endif
