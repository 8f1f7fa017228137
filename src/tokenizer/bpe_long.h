// Long pieces in linear time: byte-pair merging by a backtracking search over token prefixes
// (docs/tokenizer.md, "Long pieces"). Internal to the tokenizer (bpe.c and its tests); built
// on the vocabulary's tables and the merges (bpe_merge.h), never on the tokenizer.
#ifndef ZT_BPE_LONG_H
#define ZT_BPE_LONG_H

#include <stddef.h>
#include <stdint.h>

#include "bpe_vocab.h"

// The vocabulary's index for the search: a trie over the tokens' bytes (the longest token at a
// position) and each token's longest proper prefix that is a token. Built from the
// vocabulary's finished tables (bpe_vocab.h); read-only after, so threads may share it. Its size
// grows with the vocabulary's bytes (about 5 MB for GPT-2's), never with the text. The caller
// frees it with zt_bpe_long_free (NULL is fine); out of memory is fatal.
typedef struct zt_bpe_long zt_bpe_long;
zt_bpe_long *zt_bpe_long_init(const zt_bpe_vocab *v);
void zt_bpe_long_free(zt_bpe_long *ix);

// Byte-pair merges piece p[0 .. n) exactly as tiktoken's byte_pair_merge does (the lowest rank
// first, the leftmost of equals), writing the ids to ids (room for n; they are at most n) and
// returning how many. Besides ids it takes zt_bpe_long_bytes(n) bytes of its own, freed before
// it returns. n must be below 4 GiB. Out of memory is fatal. With `give_up`, returns
// ZT_BPE_LONG_GAVE_UP (ids undefined) once the search has backed up more than
// ZT_BPE_LONG_BACKUPS(pos) times by position pos: a piece the greedy longest token keeps
// misleading (random digits: ~0.3 backups a byte) runs slower than the heap merge, which the
// caller then runs instead.
#define ZT_BPE_LONG_GAVE_UP SIZE_MAX
#define ZT_BPE_LONG_BACKUPS(pos) ((pos) / 32 + 65536)
size_t zt_bpe_long_merge(const zt_bpe_vocab *v, const zt_bpe_long *ix, const unsigned char *p,
                         size_t n, uint32_t *ids, int give_up);

// The working memory zt_bpe_long_merge takes for an n-byte piece, at most: a bit per position
// and a pair memo of at most n / 8 + 64 entries of 8 bytes, capped at 512 KiB (about 1.1 bytes
// per byte), plus the scratch of a re-merge of two tokens (the vocabulary's longest token
// bounds it; a few KiB for GPT-2's).
size_t zt_bpe_long_bytes(size_t n);

#endif
