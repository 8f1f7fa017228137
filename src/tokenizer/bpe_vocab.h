// The vocabulary's tables: every token's bytes, bytes -> id and (a, b) -> the id of their
// concatenation, built once and read-only after (threads may share them). Internal to the
// tokenizer, and its lowest file: the file reader (bpe_vocab_file.c), the merges
// (bpe_merge.c), the long-piece search (bpe_long.c) and the tokenizer (bpe.c) build on it.
//
//   pool (total bytes)  every token's bytes back to back; token t is pool[off[t] .. off[t+1])
//   bytes table         open addressing over the token byte strings: bytes -> id
//   pair table          open addressing over (a, b) -> the id of bytes(a) ++ bytes(b), for
//                       every split of every token into two tokens. A merge step then costs
//                       one integer-keyed probe instead of hashing concatenated bytes.
// A token's rank is its id: the lower, the earlier the merge. The end-of-text token comes
// after the n_tokens byte-pair tokens (id n_tokens, bytes "<|endoftext|>") and is in neither
// table.
#ifndef ZT_BPE_VOCAB_H
#define ZT_BPE_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

// No token: a pair that is not one, an empty slot.
#define ZT_BPE_NO_ID UINT32_MAX

typedef struct {
    int n_tokens;              // byte-pair tokens; the end-of-text id is n_tokens
    unsigned char *pool;       // (sum of token lengths + strlen(EOT text))
    uint32_t *off;             // (n_tokens + 2): token t is pool[off[t], off[t+1]), EOT last
    uint32_t *bytes_slots;     // (bytes_mask + 1): id + 1, 0 = empty
    uint64_t bytes_mask;
    uint64_t *pair_keys;       // (pair_mask + 1): a << 32 | b, UINT64_MAX = empty
    uint32_t *pair_vals;       // (pair_mask + 1): merged id
    uint64_t pair_mask;
    uint32_t byte_id[256];     // the id of each single byte
} zt_bpe_vocab;

// Makes room for n tokens of `total` bytes in a zeroed v: the caller writes token t's bytes at
// v->pool + v->off[t] in rank order, sets v->off[0 .. n], then calls zt_bpe_vocab_build. Out
// of memory is fatal.
void zt_bpe_vocab_alloc(zt_bpe_vocab *v, int n, size_t total);

// Appends the end-of-text token and builds both tables. Fails (status, message naming `what`,
// the file) on an empty token, two ranks with the same bytes, or a single byte that is not a
// token. The caller frees v with zt_bpe_vocab_free either way.
zt_status zt_bpe_vocab_build(zt_bpe_vocab *v, const char *what);

// From tokens given as byte strings in rank order (tokens[i], lens[i]): alloc, copy, build
// (the checks of zt_bpe_vocab_build, naming "(in memory)"). The caller frees v either way.
zt_status zt_bpe_vocab_from_tokens(zt_bpe_vocab *v, const unsigned char *const *tokens,
                                   const size_t *lens, int n);

// Frees the tables (a half-built v too) and zeroes v.
void zt_bpe_vocab_free(zt_bpe_vocab *v);

// The id of the token with exactly these bytes, or -1.
int32_t zt_bpe_vocab_lookup(const zt_bpe_vocab *v, const void *bytes, size_t n);

// The id of the token whose bytes are those of a then b, or -1 (also for ids out of range).
int32_t zt_bpe_vocab_pair(const zt_bpe_vocab *v, int32_t a, int32_t b);

// The bytes of token id (*len of them, owned by v), the end-of-text token's included, or NULL
// when id is out of range.
const unsigned char *zt_bpe_vocab_bytes(const zt_bpe_vocab *v, int32_t id, size_t *len);

// The merge that made token id (zt_bpe_merge_of, bpe.h): 1 and *left, *right, or 0.
int zt_bpe_vocab_merge_of(const zt_bpe_vocab *v, int32_t id, int32_t *left, int32_t *right);

// The length of token t in bytes (t <= n_tokens, unchecked: the merges' inner loops).
static inline uint32_t zt_bpe_vocab_len(const zt_bpe_vocab *v, uint32_t t) {
    return v->off[t + 1] - v->off[t];
}

// The pair table's hash of a key (a << 32 | b).
static inline uint64_t zt_bpe_mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

// The id of bytes(a) ++ bytes(b), or ZT_BPE_NO_ID (a, b byte-pair ids, unchecked: the merges'
// inner loops). Also the pair's rank, ZT_BPE_NO_ID ranking after every pair.
static inline uint32_t zt_bpe_vocab_pair_id(const zt_bpe_vocab *v, uint32_t a, uint32_t b) {
    uint64_t key = (uint64_t)a << 32 | b;
    for (uint64_t i = zt_bpe_mix64(key) & v->pair_mask;; i = (i + 1) & v->pair_mask) {
        uint64_t k = v->pair_keys[i];
        if (k == key) return v->pair_vals[i];
        if (k == UINT64_MAX) return ZT_BPE_NO_ID;
    }
}

#endif
