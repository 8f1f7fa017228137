// Generation: a KV-cache decoder that feeds one token at a time through the whole GPT-2 on
// this tp rank, and the sampler that picks the next token identically on every rank.
#ifndef ZT_GENERATE_H
#define ZT_GENERATE_H

#include <stdint.h>
#include <stdio.h>

#include "gpt2.h"

// The decoder's state. It reads the weights of `w`: its own `model` (zt_decoder_init: every
// unit, this tp rank's slice, built for B = 1, T = 1 so its training activations are a
// few rows), or a training model's (zt_decoder_init_over). The caches and the one-token
// activations below are the decoder's own, all on the weights' backend.
// Cl = C/tp (this rank's heads), Vp = padded vocabulary.
typedef struct {
    zt_gpt2 model;            // own weights: fill with zt_gpt2_init_random or zt_init_load
    const zt_gpt2 *w;         // the weights it decodes with (&model or a training model)
    const zt_backend *be;
    const zt_comm *tp_data;   // the tp group's tensor path (NULL at tp = 1)
    int tp, tp_rank, pos;     // pos: the position the next token takes (= tokens fed)
    float *kcache, *vcache;   // (L, n_ctx, Cl) each
    float *x;                 // (C) residual stream
    float *ln;                // (C) LayerNorm output
    float *stats;             // (2) LayerNorm mean, rstd
    float *qkv;               // (3*Cl) [q | k | v] of this rank's heads
    float *att;               // (Cl) attention output
    float *proj;              // (C) a row-parallel projection's output before the sum
    float *fch, *fch_gelu;    // (4*Cl), (4*Cl)
    float *work;              // (NH/tp * n_ctx) attention scores
    float *logits;            // (Vp) the whole row: this rank's slice, then the gather
    int32_t *token;           // (1) the token being fed
} zt_decoder;

// Builds the decoder for shape `s` on backend `be` (its attention_decode must exist) as
// tp rank tp_rank of tp, with tp_data the tp group's tensor communicator (size tp; NULL
// when tp = 1). Allocates everything at once (weights, caches of n_ctx positions);
// weights are zero until the caller fills d->model. ZT_ERR (message) on a shape the
// layout refuses or a backend without attention_decode. Free with zt_decoder_free (also
// after a failed init).
zt_status zt_decoder_init(zt_decoder *d, const zt_backend *be, const zt_model_shape *s, int tp,
                          int tp_rank, const zt_comm *tp_data);
void zt_decoder_free(zt_decoder *d);

// A decoder over `m`'s weights, which it borrows and never changes (a training model
// that holds every unit: pp = 1; `zerotrain train --sample-every`); m must outlive it.
// tp_data: m's tp group's tensor path (NULL when tp = 1). Allocates only the caches and
// one-token buffers (zt_decoder_bytes).
zt_status zt_decoder_init_over(zt_decoder *d, const zt_gpt2 *m, const zt_comm *tp_data);

// The bytes per allocator category of the decoder's own buffers (caches, one-token
// activations, attention scores, the logits row) for shape s on tp ranks: what
// zt_decoder_init_over allocates, for the memory planner.
void zt_decoder_bytes(size_t bytes[ZT_MEM_NCAT], const zt_model_shape *s, int tp);

// Forgets the sequence: the next token goes to position 0.
void zt_decoder_reset(zt_decoder *d);

// Feeds `token` (0 <= token < vocab, checked by the caller; fatal otherwise) at position
// d->pos (< n_ctx, fatal otherwise), advances pos, and writes the next-token logits of the
// whole padded vocabulary to host memory logits (Vp) on every tp rank (collective over the
// tp group: every rank calls it with the same token).
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
