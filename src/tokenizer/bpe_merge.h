// Byte-pair merging of one piece by the rule itself (the adjacent pair of lowest rank first,
// the leftmost of equals, until no pair is a token): the array loop for short pieces and the
// heap loop for long ones in bounded memory. Internal to the tokenizer: the encoder and the
// long-piece search (bpe_long.c, which re-merges two tokens with them) call these.
#ifndef ZT_BPE_MERGE_H
#define ZT_BPE_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "bpe.h"
#include "bpe_vocab.h"

// Pieces up to this many bytes merge in a flat array (quadratic, cache friendly, like
// tiktoken); longer ones (long whitespace runs, repeated characters) by the long-piece search
// (bpe_long.c) or the heap loop.
#define ZT_BPE_ARRAY_MAX 128

// Keys the heap loop holds at most for an n-byte piece (8 bytes each: 1 byte per byte).
#define ZT_BPE_HEAP_CAP(n) ((n) / 8 + 64)

// The array loop: merges p[0 .. n) (n <= ZT_BPE_ARRAY_MAX) and appends the ids to *out. Out of
// memory is fatal.
void zt_bpe_merge_array(const zt_bpe_vocab *v, const unsigned char *p, size_t n, zt_bpe_ids *out);

// The heap loop: merges p[0 .. n) (n below 4 GiB) holding at most heap_cap >= 2 candidate
// pairs (ZT_BPE_HEAP_CAP(n) when encoding; a small one makes it rescan and trim often), its
// parts in *out's own room (reserved exactly: 4 bytes per byte), and appends the ids to *out.
// Out of memory is fatal.
void zt_bpe_merge_heap(const zt_bpe_vocab *v, const unsigned char *p, size_t n, size_t heap_cap,
                       zt_bpe_ids *out);

// The heap loop's in-place sort (quicksort; heapsort once `depth` partitions deep, so 0
// forces it) and selection (k[nth] ends where a sort would put it, smaller keys before it,
// larger after) of its candidate keys.
void zt_bpe_sort_keys(uint64_t *k, size_t n, int depth);
void zt_bpe_select_keys(uint64_t *k, size_t n, size_t nth);

#endif
