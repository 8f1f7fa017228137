// The growable list of token ids that encoding appends to (zt_bpe_ids, bpe.h): reserving,
// pushing, giving back. Internal to the tokenizer.
#ifndef ZT_BPE_IDS_H
#define ZT_BPE_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "bpe.h"

// Room for `more` ids beyond o->n, doubling the capacity (from 256) until they fit. Out of
// memory is fatal.
void zt_bpe_ids_grow(zt_bpe_ids *o, size_t more);

// Room for `more` ids: a no-op when they fit, which is the encoder's case (it reserves one id
// per byte up front), so the check stays inline.
static inline void zt_bpe_ids_reserve(zt_bpe_ids *o, size_t more) {
    if (o->n + more > o->cap) zt_bpe_ids_grow(o, more);
}

// Appends one id, growing the list when it is full (out of memory is fatal).
static inline void zt_bpe_ids_push(zt_bpe_ids *o, uint32_t id) {
    if (o->n == o->cap) zt_bpe_ids_grow(o, 1);
    o->ids[o->n++] = (int32_t)id;
}

// Room for exactly `more` ids beyond o->n, never more: a long piece's parts take n of them,
// and doubling would reserve up to 4n bytes more (address space counts under ulimit -v). Out
// of memory is fatal.
void zt_bpe_ids_reserve_exact(zt_bpe_ids *o, size_t more);

// Gives back what encoding reserved beyond the ids (a long piece's parts too) when that is
// over 16 MB: the list may live on (prepare keeps one per chunk). Never fails: keeps the
// larger block when the smaller cannot be had.
void zt_bpe_ids_shrink(zt_bpe_ids *o);

#endif
