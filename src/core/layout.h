// The descriptor table: every local parameter tensor as a named view into one flat
// buffer. Everything that treats parameters uniformly (optimizer, ZeRO shards, grad
// norm, checkpoints, planner) walks this table. See docs/design.md §3.
#ifndef ZT_LAYOUT_H
#define ZT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

// Every tensor and shard boundary sits on a multiple of this many elements: the 8-bit
// optimizer's block (docs/design.md §3, §7), so no quantization block straddles two tensors.
#define ZT_ALIGN_ELEMS 256

// The shape of a GPT-2 model.
typedef struct {
    int vocab;        // V: real vocabulary size (tokens >= V never occur)
    int padded_vocab; // Vp: V rounded up to a multiple of 128*tp (docs/design.md §5)
    int n_ctx;        // maxT: learned positions
    int n_layer;      // L
    int n_head;       // NH
    int n_embd;       // C
} zt_model_shape;

// Vp for a vocabulary under a tp degree.
int zt_padded_vocab(int vocab, int tp);

typedef enum {
    ZT_SPLIT_NONE = 0, // whole tensor on every tp rank (replicated)
    ZT_SPLIT_COLUMN,   // output rows split: rank r owns rows [r*O/tp, (r+1)*O/tp)
    ZT_SPLIT_QKV,      // column-parallel c_attn: rank r owns its heads of q, k and v each
    ZT_SPLIT_ROW,      // row-parallel layer, input features split; its weight is stored
                       // (in, out), so rank r owns rows [r*I/tp, (r+1)*I/tp): a contiguous
                       // range of the whole tensor, like every other split
    ZT_SPLIT_VOCAB,    // embedding rows split over the padded vocabulary
} zt_tp_split;

// Pipeline units: 0 = embed, 1..L = block (unit-1), L+1 = head. A stage owns [first, last).
#define ZT_UNIT_EMBED 0
static inline int zt_unit_head(const zt_model_shape *s) { return s->n_layer + 1; }
static inline int zt_unit_count(const zt_model_shape *s) { return s->n_layer + 2; }

typedef struct {
    char name[64];        // Hugging Face GPT-2 name, e.g. "h.3.attn.c_attn.weight"
    int ndim;             // 1 or 2
    int64_t shape[2];     // global shape, our layout: matrices are (out, in) as in llm.c,
                          // except row-parallel weights, stored (in, out) (in_out = 1)
    int64_t local[2];     // this tp rank's shape
    zt_tp_split split;    // how tp splits it
    int replicated;       // identical on every tp rank (counted once in the grad norm)
    int tied;             // the word embedding shared by first and last stage
    int decay;            // AdamW weight decay applies (2-D tensors only)
    int hf_transposed;    // Hugging Face stores it (in, out) (Conv1D): transpose on export
    int in_out;           // stored (in, out): the transpose of llm.c's (out, in)
    int unit;             // pipeline unit it belongs to
    size_t offset;        // in elements into the flat buffer; a multiple of `align`
    size_t numel;         // local elements
} zt_tensor_desc;

// A stage's parameters on one tp rank. Tensors appear in a fixed order: the tied
// embedding first (so first and last stage lay it out identically), then by unit.
typedef struct {
    zt_tensor_desc *t;  // (n)
    int n;
    size_t align;       // every offset and the total are multiples of this (elements)
    size_t numel;       // padded total length of the flat buffer
    size_t tied_numel;  // padded length of the tied-embedding region at offset 0 (0 if none)
    int unit_first, unit_last; // units [first, last)
    int tp, tp_rank;
} zt_layout;

// Builds the table for units [unit_first, unit_last) on tp rank `tp_rank` of `tp`.
// `align` is the alignment in elements (the 8-bit block size). Tensors of the head
// unit include the tied wte (as in HF, "wte.weight"), once, even when the stage also
// holds the embed unit. Caller frees with zt_layout_free. Fails (status) only on a
// shape that tp cannot split.
zt_status zt_layout_init(zt_layout *lay, const zt_model_shape *s, int unit_first,
                         int unit_last, int tp, int tp_rank, size_t align);
// The same over n_ranges unit ranges [firsts[i], lasts[i]) (increasing, disjoint: an
// interleaved pipeline rank's chunks, docs/design.md "Pipeline"), laid out as one stage
// holding them all: the tied wte first (when a range holds the embed or the head unit), wpe,
// the blocks of every range in range order, ln_f last. unit_first, unit_last are then the
// first range's first and the last range's last unit. With one range: zt_layout_init.
zt_status zt_layout_init_ranges(zt_layout *lay, const zt_model_shape *s, int n_ranges,
                                const int *firsts, const int *lasts, int tp, int tp_rank,
                                size_t align);
void zt_layout_free(zt_layout *lay);

// Index of the tensor named `name`, or -1.
int zt_layout_find(const zt_layout *lay, const char *name);

// Number of parameters of the whole model (real vocabulary, no padding): the figure
// users know (124M for gpt2).
size_t zt_model_param_count(const zt_model_shape *s);



// Global element index (row-major in the global shape) of local element `i` of tensor
// `t` on its tp rank: how a tp-split tensor maps back to the whole one (init from a
// seed, checkpoints, merging).
size_t zt_layout_global_index(const zt_layout *lay, const zt_tensor_desc *t, size_t i);
#endif
