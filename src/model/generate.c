// Generation with a KV cache: tokens go through every block on this tp rank in chunks of
// up to ZT_DECODER_ROWS positions (a prompt in a few matrix products, each new token as a
// chunk of one), each layer's keys and values kept for the positions seen so far, and the
// next token sampled from the gathered logits identically on every rank.
//
// Tensor parallel as in training (src/model/gpt2.c): each rank holds its heads of c_attn (so its
// slice of the cache) and its share of the MLP; the row-parallel projections end in an
// all-reduce; the lm-head gives this rank's slice of the padded vocabulary, and one
// all-gather makes the whole row on every rank. Pipeline stages hold their units' weights
// and their blocks' caches, pass each chunk's residual stream on, and the last stage's row
// is broadcast to every stage.
#include "generate.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "gpt2_ops.h"
#include "rng.h"

// A kernel call on the decoder's backend: K(layernorm_forward, out, ...).
#define K(fn, ...) d->be->ops->fn(d->be, __VA_ARGS__)

static void tp_sum(const zt_decoder *d, void *x, size_t n, zt_dtype dt) {
    if (d->tp_data) zt_comm_all_reduce(d->tp_data, x, x, n, dt, ZT_REDUCE_SUM, NULL);
}

// The residual stream x's dtype: the training forward's (gpt2.c), bf16 under bf16, so the
// decoder computes what the forward does (docs/design.md, "bf16").
static zt_dtype res_dt(const zt_decoder *d) { return d->w->dtype; }

// x (n) as the training forward stores it (docs/design.md, "bf16": q, k, v and c_fc's output
// are bf16 there): under bf16 rounded through `room` (n bf16 values' scratch) and widened back
// (exact), so the decoder's fp32 attention and GELU read the values the forward's bf16 ops
// widen; unchanged under fp32.
static void as_stored(zt_decoder *d, float *x, void *room, size_t n) {
    if (res_dt(d) != ZT_BF16) return;
    K(bf16_from_fp32, room, x, n);
    K(bf16_to_fp32, x, room, n);
}

// x (n) += proj summed over tp, as the training forward adds it: the fp32 sum added to x in
// fp32 (under bf16: rounded once).
static void residual_add(zt_decoder *d, size_t n) {
    tp_sum(d, d->proj, n, ZT_F32);
    zt_gpt2_residual_add(d->w, d->x, d->x, d->proj, n);
}

// The decoder's buffers, in order, with their category and length in floats (the token
// id takes one float's room): what zt_decoder_bytes counts is what alloc_buffers allocates.
typedef struct {
    size_t off; // offsetof(zt_decoder, the pointer)
    zt_mem_category cat;
    size_t n;
} dec_buffer;

// Positions one chunk holds: ZT_DECODER_ROWS, fewer for a model with fewer positions.
static int dec_rows(const zt_model_shape *s) {
    return s->n_ctx < ZT_DECODER_ROWS ? s->n_ctx : ZT_DECODER_ROWS;
}

// The buffers of a decoder holding `blocks` blocks' caches.
static int dec_buffers(dec_buffer *b, const zt_model_shape *s, int tp, int blocks) {
    size_t C = (size_t)s->n_embd, Cl = C / tp, L = (size_t)blocks, T = (size_t)s->n_ctx;
    size_t NHl = (size_t)s->n_head / tp, Vp = (size_t)s->padded_vocab, R = (size_t)dec_rows(s);
    const dec_buffer all[] = {
        {offsetof(zt_decoder, kcache), ZT_MEM_ACTIVATIONS, L * T * Cl},
        {offsetof(zt_decoder, vcache), ZT_MEM_ACTIVATIONS, L * T * Cl},
        {offsetof(zt_decoder, x), ZT_MEM_ACTIVATIONS, R * C},
        {offsetof(zt_decoder, ln), ZT_MEM_ACTIVATIONS, R * C},
        {offsetof(zt_decoder, stats), ZT_MEM_ACTIVATIONS, 2 * R},
        {offsetof(zt_decoder, qkv), ZT_MEM_ACTIVATIONS, R * 3 * Cl},
        {offsetof(zt_decoder, att), ZT_MEM_ACTIVATIONS, R * Cl},
        {offsetof(zt_decoder, proj), ZT_MEM_ACTIVATIONS, R * C},
        {offsetof(zt_decoder, fch), ZT_MEM_ACTIVATIONS, R * 4 * Cl},
        {offsetof(zt_decoder, fch_gelu), ZT_MEM_ACTIVATIONS, R * 4 * Cl},
        {offsetof(zt_decoder, work), ZT_MEM_WORKSPACE, NHl * R * T},
        {offsetof(zt_decoder, logits), ZT_MEM_LOGITS, Vp},
        {offsetof(zt_decoder, token), ZT_MEM_ACTIVATIONS, R},
    };
    int n = (int)(sizeof all / sizeof *all);
    if (b) memcpy(b, all, sizeof all);
    return n;
}
#define DEC_MAX_BUFFERS 16

// The blocks of units [first, last): unit u is block u - 1 (unit 0 the embedding, L + 1
// the head); *block_first the first.
static int stage_blocks(const zt_model_shape *s, int first, int last, int *block_first) {
    int L = s->n_layer, lo = first > 1 ? first : 1, hi = last < L + 1 ? last : L + 1;
    *block_first = lo - 1;
    return hi > lo ? hi - lo : 0;
}

void zt_decoder_bytes(size_t bytes[ZT_MEM_NCAT], const zt_model_shape *s, int unit_first,
                      int unit_last, int tp) {
    int first_block;
    dec_buffer b[DEC_MAX_BUFFERS];
    int n = dec_buffers(b, s, tp, stage_blocks(s, unit_first, unit_last, &first_block));
    memset(bytes, 0, ZT_MEM_NCAT * sizeof *bytes);
    for (int i = 0; i < n; i++) bytes[b[i].cat] += b[i].n * sizeof(float);
}

static void *const *dec_slot(const zt_decoder *d, size_t off) {
    return (void *const *)((const char *)d + off);
}

// The stage's units [first, last) and their blocks.
static void place(zt_decoder *d, const zt_model_shape *s, int first, int last) {
    d->unit_first = first;
    d->unit_last = last;
    d->n_blocks = stage_blocks(s, first, last, &d->block_first);
}

static void alloc_buffers(zt_decoder *d, const zt_model_shape *s, int tp) {
    d->rows = dec_rows(s);
    dec_buffer b[DEC_MAX_BUFFERS];
    int n = dec_buffers(b, s, tp, d->n_blocks);
    for (int i = 0; i < n; i++)
        *(void **)dec_slot(d, b[i].off) = zt_be_alloc(d->be, b[i].cat, b[i].n * sizeof(float));
}

zt_status zt_decoder_init(zt_decoder *d, const zt_backend *be, const zt_model_shape *s,
                          int unit_first, int unit_last, int tp, int tp_rank,
                          const zt_comm *tp_data, const zt_comm *pp_data, zt_dtype dtype) {
    memset(d, 0, sizeof *d);
    d->be = be;
    d->tp = tp;
    d->tp_rank = tp_rank;
    d->tp_data = tp > 1 ? tp_data : NULL;
    d->pp_data = pp_data && pp_data->size > 1 ? pp_data : NULL;
    d->w = &d->model;
    place(d, s, unit_first, unit_last);
    // B = T = 1: the training activations zt_gpt2_init allocates are a few rows
    ZT_TRY(zt_gpt2_init(&d->model, be, s, unit_first, unit_last, tp, tp_rank, ZT_ALIGN_ELEMS, 1,
                        1, 1, 1, 1, d->tp_data, dtype, NULL));
    // generation has no backward: give the gradient buffer (as large as the weights) back
    zt_be_free(be, d->model.grads);
    d->model.grads = NULL;
    memset(d->model.g.h, 0, (size_t)s->n_layer * sizeof(zt_block_tensors));
    alloc_buffers(d, s, tp);
    return ZT_OK;
}

zt_status zt_decoder_init_over(zt_decoder *d, const zt_gpt2 *m, const zt_comm *tp_data,
                               const zt_comm *pp_data) {
    memset(d, 0, sizeof *d);
    d->be = m->be;
    d->tp = m->layout.tp;
    d->tp_rank = m->layout.tp_rank;
    d->tp_data = d->tp > 1 ? tp_data : NULL;
    d->pp_data = pp_data && pp_data->size > 1 ? pp_data : NULL;
    d->w = m;
    place(d, &m->shape, m->layout.unit_first, m->layout.unit_last);
    alloc_buffers(d, &m->shape, d->tp);
    return ZT_OK;
}

void zt_decoder_free(zt_decoder *d) {
    if (d->be && d->w) { // buffers not yet allocated are NULL
        dec_buffer b[DEC_MAX_BUFFERS];
        int n = dec_buffers(b, &d->w->shape, d->tp, d->n_blocks);
        for (int i = 0; i < n; i++) zt_be_free(d->be, *dec_slot(d, b[i].off));
    }
    zt_gpt2_free(&d->model); // a zero-filled model when the weights were borrowed
    memset(d, 0, sizeof *d);
}

void zt_decoder_reset(zt_decoder *d) { d->pos = 0; }

// Positions [pos, pos + r) of one chunk through this stage's blocks: the embedding on the
// first stage, else the residual stream received from the stage before; sent on to the
// next stage at the end, and left in x on the last. r <= d->rows, pos + r <= n_ctx, tokens
// already in d->token.
static void decode_chunk(zt_decoder *d, int r) {
    const zt_gpt2 *m = d->w;
    const zt_model_shape *s = &m->shape;
    int C = s->n_embd, Cl = C / d->tp, NHl = s->n_head / d->tp, pos = d->pos;
    int Vl = s->padded_vocab / d->tp, lo = d->tp_rank * Vl;
    size_t T = (size_t)s->n_ctx, rC = (size_t)r * C;
    float *mean = d->stats, *rstd = d->stats + d->rows;
    if (d->unit_first == 0) {
        // each token's row lives on one tp rank (the others add zeros), positions on rank 0
        const char *wpe = d->tp_rank == 0 ? m->p.wpe : NULL;
        if (wpe) wpe += (size_t)pos * C * zt_gpt2_elem_size(m);
        // under bf16 the two nonzero terms added in fp32, rounded once (gpt2.c's embed_forward)
        zt_gpt2_encoder_forward(m, d->x, res_dt(d), d->token, m->p.wte, wpe, lo, Vl, r, r, C);
        tp_sum(d, d->x, rC, res_dt(d));
    } else { // the residual stream of the chunk from the stage before
        zt_comm_recv(d->pp_data, d->x, rC, res_dt(d), d->pp_data->rank - 1, 0, NULL);
    }
    for (int l = d->block_first; l < d->block_first + d->n_blocks; l++) {
        const zt_block_tensors *w = &m->p.h[l];
        // a row-parallel bias is whole on every rank: rank 0 adds it before the sum
        const void *attprojb = d->tp_rank == 0 ? w->attprojb : NULL;
        const void *fcprojb = d->tp_rank == 0 ? w->fcprojb : NULL;
        size_t cache = (size_t)(l - d->block_first) * T * Cl;
        float *kc = d->kcache + cache, *vc = d->vcache + cache;
        zt_gpt2_layernorm_forward(m, d->ln, ZT_F32, mean, rstd, d->x, res_dt(d), w->ln1w,
                                  w->ln1b, r, C);
        zt_gpt2_linear_forward(m, d->qkv, ZT_F32, d->ln, ZT_F32, w->qkvw, w->qkvb, r, C, 3 * Cl,
                               0);
        as_stored(d, d->qkv, d->fch, (size_t)r * 3 * Cl); // fch: free until c_fc
        for (int i = 0; i < r; i++) {
            const float *row = d->qkv + (size_t)i * 3 * Cl;
            size_t at = (size_t)(pos + i) * Cl;
            d->be->ops->copy(d->be, kc + at, row + Cl, Cl * sizeof(float), ZT_COPY_D2D);
            d->be->ops->copy(d->be, vc + at, row + 2 * Cl, Cl * sizeof(float), ZT_COPY_D2D);
        }
        // each position attends to the cache up to itself (causal)
        K(attention_decode, d->att, d->qkv, kc, vc, d->work, r, pos + r, Cl, NHl);
        zt_gpt2_linear_forward(m, d->proj, ZT_F32, d->att, ZT_F32, w->attprojw, attprojb, r, Cl,
                               C, 1);
        residual_add(d, rC);
        zt_gpt2_layernorm_forward(m, d->ln, ZT_F32, mean, rstd, d->x, res_dt(d), w->ln2w,
                                  w->ln2b, r, C);
        zt_gpt2_linear_forward(m, d->fch, ZT_F32, d->ln, ZT_F32, w->fcw, w->fcb, r, C, 4 * Cl,
                               0);
        as_stored(d, d->fch, d->fch_gelu, (size_t)r * 4 * Cl); // fch_gelu: written next
        K(gelu_forward, d->fch_gelu, d->fch, (size_t)r * 4 * Cl);
        zt_gpt2_linear_forward(m, d->proj, ZT_F32, d->fch_gelu, ZT_F32, w->fcprojw, fcprojb, r,
                               4 * Cl, C, 1);
        residual_add(d, rC);
    }
    if (d->unit_last < zt_unit_count(s))
        zt_comm_send(d->pp_data, d->x, rC, res_dt(d), d->pp_data->rank + 1, 0, NULL);
    d->pos += r;
}

void zt_decoder_feed(zt_decoder *d, const int32_t *tokens, int n, float *logits) {
    const zt_gpt2 *m = d->w;
    const zt_model_shape *s = &m->shape;
    int C = s->n_embd, Vp = s->padded_vocab, Vl = Vp / d->tp, lo = d->tp_rank * Vl;
    ZT_ASSERTF(n >= 1 && d->pos + n <= s->n_ctx,
               "decoder: %d tokens from position %d of a %d-position model", n, d->pos,
               s->n_ctx);
    for (int i = 0; i < n; i++)
        ZT_ASSERTF(tokens[i] >= 0 && tokens[i] < s->vocab,
                   "token %d outside the vocabulary of %d", tokens[i], s->vocab);
    int r = 0;
    for (int done = 0; done < n; done += r) {
        r = n - done < d->rows ? n - done : d->rows;
        d->be->ops->copy(d->be, d->token, tokens + done, (size_t)r * sizeof *tokens,
                         ZT_COPY_H2D);
        decode_chunk(d, r);
    }
    if (d->unit_last == zt_unit_count(s)) { // the head: the logits of the last position only
        const char *last = (const char *)d->x + (size_t)(r - 1) * C * zt_dtype_size(res_dt(d));
        zt_gpt2_layernorm_forward(m, d->ln, ZT_F32, d->stats, d->stats + d->rows, last, res_dt(d),
                                  m->p.lnfw, m->p.lnfb, 1, C);
        // this rank's slice straight into its place in the row, then the in-place gather
        zt_gpt2_weight_gemm(m, 0, 1, 1, Vl, C, d->ln, ZT_F32, C, m->p.wte, m->dtype, C, 0.0f,
                            d->logits + lo, ZT_F32, Vl);
        if (d->tp_data)
            zt_comm_all_gather(d->tp_data, d->logits + lo, d->logits, (size_t)Vp, ZT_F32, NULL);
    }
    // every stage samples the same token from the last stage's row
    if (d->pp_data)
        zt_comm_broadcast(d->pp_data, d->logits, (size_t)Vp, ZT_F32, d->pp_data->size - 1, NULL);
    d->be->ops->copy(d->be, logits, d->logits, (size_t)Vp * sizeof(float), ZT_COPY_D2H);
}

void zt_decoder_step(zt_decoder *d, int32_t token, float *logits) {
    zt_decoder_feed(d, &token, 1, logits);
}

void zt_token_print(FILE *f, const zt_bpe *bpe, int vocab, int32_t tok, int first) {
    size_t len;
    const unsigned char *b;
    if (vocab == ZT_BYTES_VOCAB) fputc(tok, f);
    else if (vocab == ZT_GPT2_VOCAB && bpe && (b = zt_bpe_token_bytes(bpe, tok, &len)))
        fwrite(b, 1, len, f);
    else fprintf(f, first ? "%d" : " %d", tok);
}

// ---- sampling ----

// Most likely first; equal logits by id, so the order (and the draw) is the same everywhere.
static int by_logit_desc(const void *a, const void *b, void *ctx) {
    const float *x = ctx;
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (x[i] != x[j]) return x[i] > x[j] ? -1 : 1;
    return (i > j) - (i < j);
}

int32_t zt_sample(const zt_sampler *smp, const float *logits, int vocab, uint64_t draw,
                  int32_t *idx, double *prob) {
    if (!(smp->temperature > 0.0f)) { // greedy: the first maximum
        int32_t best = 0;
        for (int32_t i = 1; i < vocab; i++)
            if (logits[i] > logits[best]) best = i;
        return best;
    }
    int n = vocab;
    for (int32_t i = 0; i < vocab; i++) idx[i] = i;
    int filtered = (smp->top_k > 0 && smp->top_k < vocab) || smp->top_p < 1.0f;
    if (filtered) {
        qsort_r(idx, (size_t)vocab, sizeof *idx, by_logit_desc, (void *)logits);
        if (smp->top_k > 0 && smp->top_k < n) n = smp->top_k;
    }
    // softmax over the candidates in double, from the largest logit
    double mx = logits[idx[0]], sum = 0.0, inv_t = 1.0 / smp->temperature;
    for (int i = 1; i < n; i++)
        if (logits[idx[i]] > mx) mx = logits[idx[i]];
    for (int i = 0; i < n; i++) sum += prob[i] = exp(((double)logits[idx[i]] - mx) * inv_t);
    if (smp->top_p < 1.0f) { // the smallest prefix (most likely first) reaching top_p
        double cum = 0.0, want = (double)smp->top_p * sum;
        int keep = 0;
        while (keep < n) {
            cum += prob[keep++];
            if (cum >= want) break;
        }
        n = keep;
        sum = cum;
    }
    double u = zt_uniform(zt_splitmix64(smp->seed) ^ zt_hash_str("generate"), draw) * sum;
    double cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += prob[i];
        if (u < cum) return idx[i];
    }
    return idx[n - 1]; // u within rounding of the total
}
