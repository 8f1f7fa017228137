// Internals of bpe.c that the unit tests reach: the hash tables and the two merge loops.
#ifndef ZT_BPE_IMPL_H
#define ZT_BPE_IMPL_H

#include "bpe.h"

// Builds a tokenizer from tokens given as byte strings in rank order (tokens[i], lens[i]) with
// GPT-2's pre-tokenization; the same checks as zt_bpe_load. For tests of tiny vocabularies.
zt_status zt_bpe_from_tokens(zt_bpe **out, const unsigned char *const *tokens, const size_t *lens,
                             int n);

// The id of the token with exactly these bytes, or -1.
int32_t zt_bpe_lookup(const zt_bpe *bpe, const void *bytes, size_t n);
// The id of the token whose bytes are those of a then b, or -1.
int32_t zt_bpe_pair(const zt_bpe *bpe, int32_t a, int32_t b);

// Byte-pair merges of one piece (no whole-piece lookup, no regex), appended to *out: with the
// array loop that pieces up to 128 bytes take (heap_cap 0), else the long-piece loop holding
// at most heap_cap candidate pairs (0: its default, n / 8 + 64; a small one makes it rescan
// and trim often). All must agree.
void zt_bpe_merge_piece(const zt_bpe *bpe, const unsigned char *p, size_t n, size_t heap_cap,
                        zt_bpe_ids *out);

// The long-piece loop's in-place sort (quicksort; heapsort once `depth` partitions deep, so 0
// forces it) and selection (k[nth] ends where a sort would put it, smaller keys before it,
// larger after) of its candidate keys.
void zt_bpe_sort_keys(uint64_t *k, size_t n, int depth);
void zt_bpe_select_keys(uint64_t *k, size_t n, size_t nth);

// The length of the well-formed UTF-8 sequence at p (n bytes left), or 0 if p[0] starts none.
size_t zt_bpe_utf8_len(const unsigned char *p, size_t n);

// GPT-2's pattern on s (n bytes of valid UTF-8, taken as the whole text): the end of the piece
// that starts at byte `at` (< n, on a character boundary).
size_t zt_bpe_piece_end(const unsigned char *s, size_t n, size_t at);

#endif
