// The growable list of token ids that encoding appends to: its memory (bpe_ids.h).
#include "bpe_ids.h"

#include <stdlib.h>
#include <string.h>

void zt_bpe_ids_free(zt_bpe_ids *ids) {
    if (!ids) return;
    free(ids->ids);
    memset(ids, 0, sizeof *ids);
}

void zt_bpe_ids_grow(zt_bpe_ids *o, size_t more) {
    if (o->n + more <= o->cap) return;
    size_t cap = o->cap ? o->cap : 256;
    while (cap < o->n + more) cap *= 2;
    o->ids = realloc(o->ids, cap * sizeof *o->ids);
    ZT_ASSERTF(o->ids, "out of memory for %zu token ids", cap);
    o->cap = cap;
}

void zt_bpe_ids_reserve_exact(zt_bpe_ids *o, size_t more) {
    if (o->n + more <= o->cap) return;
    o->ids = realloc(o->ids, (o->n + more) * sizeof *o->ids);
    ZT_ASSERTF(o->ids, "out of memory for %zu token ids", o->n + more);
    o->cap = o->n + more;
}

void zt_bpe_ids_shrink(zt_bpe_ids *o) {
    size_t cap = o->n > 256 ? o->n : 256;
    if (o->cap < cap + ((size_t)1 << 22)) return;  // a chunk's worth: keep it for the next
    int32_t *p = realloc(o->ids, cap * sizeof *o->ids);
    if (!p) return;  // keeping the larger block is fine
    o->ids = p;
    o->cap = cap;
}
