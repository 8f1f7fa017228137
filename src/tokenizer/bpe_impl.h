// Internals of the tokenizer (bpe.c) that the unit tests reach: the object's fields, building
// it from tokens in memory, a piece's merge, UTF-8 validity and the pattern's pieces.
#ifndef ZT_BPE_IMPL_H
#define ZT_BPE_IMPL_H

#include "bpe.h"
#include "bpe_long.h"
#include "bpe_vocab.h"

struct zt_bpe {
    zt_bpe_vocab vocab;  // the tokens and their tables (bpe_vocab.h)
    zt_bpe_long *lng;    // the index for pieces over ZT_BPE_ARRAY_MAX bytes (bpe_long.h)
};

// Builds a tokenizer from tokens given as byte strings in rank order (tokens[i], lens[i]) with
// GPT-2's pre-tokenization; the same checks as zt_bpe_load. For tests of tiny vocabularies.
zt_status zt_bpe_from_tokens(zt_bpe **out, const unsigned char *const *tokens, const size_t *lens,
                             int n);

// Byte-pair merges of one piece (no whole-piece lookup, no regex), appended to *out: with the
// array loop that pieces up to ZT_BPE_ARRAY_MAX bytes take (heap_cap 0), the long-piece search
// beyond (heap_cap 0; the heap loop where the search gives up), or the heap loop holding at
// most heap_cap candidate pairs (a small one makes it rescan and trim often). All must agree.
void zt_bpe_merge_piece(const zt_bpe *bpe, const unsigned char *p, size_t n, size_t heap_cap,
                        zt_bpe_ids *out);

// The length of the well-formed UTF-8 sequence at p (n bytes left), or 0 if p[0] starts none.
size_t zt_bpe_utf8_len(const unsigned char *p, size_t n);

// GPT-2's pattern on s (n bytes of valid UTF-8, taken as the whole text): the end of the piece
// that starts at byte `at` (< n, on a character boundary).
size_t zt_bpe_piece_end(const unsigned char *s, size_t n, size_t at);

#endif
