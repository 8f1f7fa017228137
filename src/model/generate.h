// Generation: a KV-cache decoder that feeds tokens through the whole GPT-2 on this tp rank
// (a prompt in chunks of positions, each new token alone), and the sampler that picks the
// next token identically on every rank.
#ifndef ZT_GENERATE_H
#define ZT_GENERATE_H

#include <stdint.h>
#include <stdio.h>

#include "gpt2.h"

// Positions the decoder feeds through the model at once: a prompt's matrix products run
// on up to this many rows (bench/RESULTS.md, "Generation at batch 1"), for buffers of
// about rows * (15 * n_embd + n_head * n_ctx) floats (gpt2 124M: 11 MB).
#define ZT_DECODER_ROWS 128

// The decoder's state. It reads the weights of `w`: its own `model` (zt_decoder_init: every
// unit, this tp rank's slice, built for B = 1, T = 1 so its training activations are a
// few rows), or a training model's (zt_decoder_init_over). The caches and the activations
// of one chunk of R = rows positions below are the decoder's own, all on the weights'
// backend. Cl = C/tp (this rank's heads), Vp = padded vocabulary.
typedef struct {
    zt_gpt2 model;            // own weights: fill with zt_gpt2_init_random or zt_init_load
    const zt_gpt2 *w;         // the weights it decodes with (&model or a training model)
    const zt_backend *be;
    const zt_comm *tp_data;   // the tp group's tensor path (NULL at tp = 1)
    const zt_comm *pp_data;   // the pipeline's tensor path, rank = stage (NULL at pp = 1)
    int tp, tp_rank, pos;     // pos: the position the next token takes (= tokens fed)
    int unit_first, unit_last; // this stage's units (embed 0, blocks 1..L, head L + 1)
    int block_first, n_blocks; // its blocks [block_first, block_first + n_blocks)
    int rows;                 // R: min(ZT_DECODER_ROWS, n_ctx)
    float *kcache, *vcache;   // (n_blocks, n_ctx, Cl) each
    float *x;                 // (R, C) residual stream, of the model's dtype (bf16 in the
                              // first half under bf16, as the training forward's)
    float *ln;                // (R, C) LayerNorm output
    float *stats;             // (2, R) LayerNorm mean, rstd
    float *qkv;               // (R, 3*Cl) [q | k | v] of this rank's heads
    float *att;               // (R, Cl) attention output
    float *proj;              // (R, C) a row-parallel projection's output before the sum
    float *fch, *fch_gelu;    // (R, 4*Cl), (R, 4*Cl)
    float *work;              // (NH/tp, R, n_ctx) attention scores
    float *logits;            // (Vp) the whole row: this rank's slice, then the gather
    int32_t *token;           // (R) the tokens being fed
} zt_decoder;

// Builds the decoder for shape `s` on backend `be` (every backend has attention_decode) for the
// pipeline stage holding units [unit_first, unit_last) (all of them: 0, zt_unit_count(s))
// as tp rank tp_rank of tp. tp_data: the tp group's tensor communicator (size tp; NULL
// when tp = 1); pp_data: the pipeline's, rank = stage (NULL or size 1 for one stage): a
// chunk's residual stream goes from stage to stage through it, and the last stage's
// logits back to all. Allocates everything at once (the stage's weights, its blocks'
// caches of n_ctx positions); weights are zero until the caller fills d->model. ZT_ERR
// (message) on a shape the layout refuses. Free with zt_decoder_free (also after a failed
// init). dtype: the weights' (ZT_F32, or ZT_BF16 on a backend with the bf16 ops: bf16
// weights, bf16 products with fp32 sums, fp32 activations).
zt_status zt_decoder_init(zt_decoder *d, const zt_backend *be, const zt_model_shape *s,
                          int unit_first, int unit_last, int tp, int tp_rank,
                          const zt_comm *tp_data, const zt_comm *pp_data, zt_dtype dtype);
void zt_decoder_free(zt_decoder *d);

// A decoder over `m`'s weights, which it borrows and never changes (a training model's
// stage: `zerotrain train --sample-every`); m must outlive it. tp_data, pp_data: m's tp
// group's and pipeline's tensor paths (NULL when tp = 1, pp = 1). Allocates only the
// stage's caches and the chunk buffers (zt_decoder_bytes).
zt_status zt_decoder_init_over(zt_decoder *d, const zt_gpt2 *m, const zt_comm *tp_data,
                               const zt_comm *pp_data);

// The bytes per allocator category of the decoder's own buffers (its blocks' caches, one
// chunk's activations, attention scores, the logits row) for the stage of units
// [unit_first, unit_last) of shape s on tp ranks: what zt_decoder_init_over allocates, for
// the memory planner.
void zt_decoder_bytes(size_t bytes[ZT_MEM_NCAT], const zt_model_shape *s, int unit_first,
                      int unit_last, int tp);

// Forgets the sequence: the next token goes to position 0.
void zt_decoder_reset(zt_decoder *d);

// Feeds tokens[0..n) (host memory; 0 <= token < vocab, checked by the caller; fatal
// otherwise) at positions d->pos .. d->pos + n - 1 (n >= 1, pos + n <= n_ctx, fatal
// otherwise) in chunks of d->rows, advances pos by n, and writes the logits that follow
// the last one (the whole padded vocabulary, Vp) to host memory `logits` on every rank.
// Collective over the tp group and the pipeline: every rank calls it with the same
// tokens. The logits equal feeding the tokens one at a time up to summation order
// (tests/test_generate.c).
void zt_decoder_feed(zt_decoder *d, const int32_t *tokens, int n, float *logits);
// zt_decoder_feed of one token.
void zt_decoder_step(zt_decoder *d, int32_t token, float *logits);

// How the next token is chosen. temperature <= 0: greedy (argmax, ties to the lowest id).
// Otherwise softmax(logits / temperature) restricted to the top_k most likely ids (0: all)
// and then to the smallest most-likely set whose probability reaches top_p (1: all), one
// draw from a counter-based generator keyed by seed: a pure function of (logits, seed,
// draw), so ranks with the same logits draw the same token.
typedef struct {
    float temperature;
    int top_k;
    float top_p;
    uint64_t seed;
} zt_sampler;

// The next token from logits (>= vocab entries; only [0, vocab) are candidates) for draw
// number `draw` (e.g. the position). idx, prob: (vocab) host scratch.
int32_t zt_sample(const zt_sampler *smp, const float *logits, int vocab, uint64_t draw,
                  int32_t *idx, double *prob);

// Prints one token to f as text where the vocabulary is known: its bytes through bpe
// (GPT-2's, vocab 50257), the byte itself for vocab 256; otherwise its id, space-separated
// after the first.
struct zt_bpe;
void zt_token_print(FILE *f, const struct zt_bpe *bpe, int vocab, int32_t tok, int first);

#endif
