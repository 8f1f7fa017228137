// Builds the descriptor table for one stage and tp rank (docs/design.md §3, §5).
#include "layout.h"

#include <stdio.h>
#include <string.h>

int zt_padded_vocab(int vocab, int tp) {
    int m = 128 * tp;
    return (vocab + m - 1) / m * m;
}

typedef struct {
    zt_layout *lay;
    int cap;
    int C; // n_embd
} builder;

static void add(builder *b, const char *name, int unit, int ndim, int64_t d0, int64_t d1,
                zt_tp_split split, int hf_transposed) {
    zt_layout *lay = b->lay;
    ZT_ASSERT(lay->n < b->cap);
    zt_tensor_desc *t = &lay->t[lay->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = ndim == 2 ? d1 : 1;
    t->local[0] = t->shape[0];
    t->local[1] = t->shape[1];
    int tp = lay->tp;
    switch (split) {
    case ZT_SPLIT_COLUMN:
    case ZT_SPLIT_QKV:
    case ZT_SPLIT_ROW:
    case ZT_SPLIT_VOCAB: t->local[0] /= tp; break;
    case ZT_SPLIT_NONE: break;
    }
    t->split = split;
    t->replicated = split == ZT_SPLIT_NONE && tp > 1;
    t->tied = strcmp(name, "wte.weight") == 0;
    t->decay = ndim == 2;
    t->hf_transposed = hf_transposed;
    t->in_out = split == ZT_SPLIT_ROW;
    t->unit = unit;
    t->numel = (size_t)(t->local[0] * t->local[1]);
    t->offset = lay->numel;
    lay->numel += zt_round_up(t->numel, lay->align);
}

zt_status zt_layout_init(zt_layout *lay, const zt_model_shape *s, int unit_first,
                         int unit_last, int tp, int tp_rank, size_t align) {
    return zt_layout_init_ranges(lay, s, 1, &unit_first, &unit_last, tp, tp_rank, align);
}

// The 12 tensors of block unit u (block u - 1).
static void add_block(builder *b, int u) {
    char name[64];
    int l = u - 1;
#define ADD(suffix, ...)                                   \
    do {                                                   \
        snprintf(name, sizeof name, "h.%d.%s", l, suffix); \
        add(b, name, u, __VA_ARGS__);                      \
    } while (0)
    int64_t C = (int64_t)b->C;
    ADD("ln_1.weight", 1, C, 1, ZT_SPLIT_NONE, 0);
    ADD("ln_1.bias", 1, C, 1, ZT_SPLIT_NONE, 0);
    ADD("attn.c_attn.weight", 2, 3 * C, C, ZT_SPLIT_QKV, 1);
    ADD("attn.c_attn.bias", 1, 3 * C, 1, ZT_SPLIT_QKV, 0);
    ADD("attn.c_proj.weight", 2, C, C, ZT_SPLIT_ROW, 0); // (in, out), as HF
    ADD("attn.c_proj.bias", 1, C, 1, ZT_SPLIT_NONE, 0);
    ADD("ln_2.weight", 1, C, 1, ZT_SPLIT_NONE, 0);
    ADD("ln_2.bias", 1, C, 1, ZT_SPLIT_NONE, 0);
    ADD("mlp.c_fc.weight", 2, 4 * C, C, ZT_SPLIT_COLUMN, 1);
    ADD("mlp.c_fc.bias", 1, 4 * C, 1, ZT_SPLIT_COLUMN, 0);
    ADD("mlp.c_proj.weight", 2, 4 * C, C, ZT_SPLIT_ROW, 0); // (in, out), as HF
    ADD("mlp.c_proj.bias", 1, C, 1, ZT_SPLIT_NONE, 0);
#undef ADD
}

zt_status zt_layout_init_ranges(zt_layout *lay, const zt_model_shape *s, int n_ranges,
                                const int *firsts, const int *lasts, int tp, int tp_rank,
                                size_t align) {
    memset(lay, 0, sizeof *lay);
    int C = s->n_embd;
    if (s->n_head % tp || (4 * C) % tp || s->padded_vocab % tp) {
        // n_head % tp == 0 implies the rest (C = n_head * head size): name the choices
        char ok[256] = "";
        size_t len = 0;
        for (int d = 1; d <= s->n_head && len < sizeof ok - 16; d++)
            if (s->n_head % d == 0) len += (size_t)snprintf(ok + len, sizeof ok - len, "%s%d",
                                                            len ? ", " : "", d);
        return zt_errorf("--tp %d does not divide the %d attention heads (each tp rank takes "
                         "n_head/tp whole heads and 4*n_embd/tp = %d/tp MLP columns): use --tp "
                         "one of %s, or a model whose n_head is a multiple of %d",
                         tp, s->n_head, 4 * C, ok, tp);
    }
    ZT_ASSERT(n_ranges >= 1);
    int units = 0;
    for (int i = 0; i < n_ranges; i++) {
        ZT_ASSERT(firsts[i] >= (i ? lasts[i - 1] : 0) && firsts[i] < lasts[i] &&
                  lasts[i] <= zt_unit_count(s));
        units += lasts[i] - firsts[i];
    }
    int unit_first = firsts[0], unit_last = lasts[n_ranges - 1];
    ZT_ASSERT(align > 0);
    builder b = {lay, 4 + 12 * units + 4, C};
    lay->t = calloc((size_t)b.cap, sizeof *lay->t);
    ZT_ASSERT(lay->t);
    lay->align = align;
    lay->unit_first = unit_first;
    lay->unit_last = unit_last;
    lay->tp = tp;
    lay->tp_rank = tp_rank;
    int head = zt_unit_head(s);
    int has_embed = unit_first == ZT_UNIT_EMBED;
    int has_head = unit_last == head + 1;
    if (has_embed || has_head) {
        add(&b, "wte.weight", has_embed ? ZT_UNIT_EMBED : head, 2, s->padded_vocab, C,
            ZT_SPLIT_VOCAB, 0);
        lay->tied_numel = lay->numel;
    }
    if (has_embed) add(&b, "wpe.weight", ZT_UNIT_EMBED, 2, s->n_ctx, C, ZT_SPLIT_NONE, 0);
    for (int r = 0; r < n_ranges; r++)
        for (int u = firsts[r]; u < lasts[r]; u++)
            if (u != ZT_UNIT_EMBED && u != head) add_block(&b, u);
    if (has_head) {
        add(&b, "ln_f.weight", head, 1, C, 1, ZT_SPLIT_NONE, 0);
        add(&b, "ln_f.bias", head, 1, C, 1, ZT_SPLIT_NONE, 0);
    }
    return ZT_OK;
}

void zt_layout_free(zt_layout *lay) {
    free(lay->t);
    memset(lay, 0, sizeof *lay);
}

int zt_layout_find(const zt_layout *lay, const char *name) {
    for (int i = 0; i < lay->n; i++)
        if (strcmp(lay->t[i].name, name) == 0) return i;
    return -1;
}

size_t zt_model_param_count(const zt_model_shape *s) {
    size_t C = (size_t)s->n_embd;
    size_t per_block = 2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C +
                       4 * C * C + C;
    return (size_t)s->vocab * C + (size_t)s->n_ctx * C + (size_t)s->n_layer * per_block + 2 * C;
}

size_t zt_layout_global_index(const zt_layout *lay, const zt_tensor_desc *t, size_t i) {
    size_t r = i / (size_t)t->local[1], c = i % (size_t)t->local[1];
    size_t gr = r, rank = (size_t)lay->tp_rank;
    switch (t->split) {
    case ZT_SPLIT_NONE: break;
    case ZT_SPLIT_COLUMN:
    case ZT_SPLIT_ROW:
    case ZT_SPLIT_VOCAB: gr = rank * (size_t)t->local[0] + r; break;
    case ZT_SPLIT_QKV: {
        // local rows are [q | k | v] of this rank's heads; globally each part is C rows
        size_t part_rows = (size_t)t->local[0] / 3, C = (size_t)t->shape[0] / 3;
        gr = (r / part_rows) * C + rank * part_rows + r % part_rows;
        break;
    }
    }
    return gr * (size_t)t->shape[1] + c;
}
