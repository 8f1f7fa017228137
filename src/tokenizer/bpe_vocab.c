// The vocabulary's tables (bpe_vocab.h): building them from tokens in rank order, and the
// look-ups on them (bytes -> id, (a, b) -> id, id -> bytes, the merge that made a token).
#include "bpe_vocab.h"

#include <stdlib.h>
#include <string.h>

static const char ZT_BPE_EOT_TEXT[] = "<|endoftext|>";

// ---------------------------------------------------------------------------------------------
// Look-ups.

// Eight bytes at a time; tokens and pieces are short, so the tail load dominates.
static inline uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL * (n + 1);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    return zt_bpe_mix64(h ^ w);
}

int32_t zt_bpe_vocab_lookup(const zt_bpe_vocab *v, const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    for (uint64_t i = hash_bytes(p, n) & v->bytes_mask;; i = (i + 1) & v->bytes_mask) {
        uint32_t s = v->bytes_slots[i];
        if (s == 0) return -1;
        uint32_t t = s - 1;
        if (zt_bpe_vocab_len(v, t) == n && memcmp(v->pool + v->off[t], p, n) == 0) return (int32_t)t;
    }
}

int32_t zt_bpe_vocab_pair(const zt_bpe_vocab *v, int32_t a, int32_t b) {
    if (a < 0 || b < 0 || a >= v->n_tokens || b >= v->n_tokens) return -1;
    uint32_t r = zt_bpe_vocab_pair_id(v, (uint32_t)a, (uint32_t)b);
    return r == ZT_BPE_NO_ID ? -1 : (int32_t)r;
}

const unsigned char *zt_bpe_vocab_bytes(const zt_bpe_vocab *v, int32_t id, size_t *len) {
    if (id < 0 || id > v->n_tokens) return NULL;
    *len = zt_bpe_vocab_len(v, (uint32_t)id);
    return v->pool + v->off[id];
}

int zt_bpe_vocab_merge_of(const zt_bpe_vocab *v, int32_t id, int32_t *left, int32_t *right) {
    if (id < 0 || id >= v->n_tokens) return 0;
    size_t n = zt_bpe_vocab_len(v, (uint32_t)id);
    if (n < 2) return 0;
    const unsigned char *p = v->pool + v->off[id];
    uint32_t *part = malloc(n * sizeof *part);
    ZT_ASSERT(part);
    for (size_t i = 0; i < n; i++) part[i] = v->byte_id[p[i]];
    // The array merge's rule (the leftmost lowest rank, bpe_merge.c), stopping before rank id:
    // a merge of rank >= id did not exist yet when token id was made
    while (n > 2) {
        uint32_t best = ZT_BPE_NO_ID;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            uint32_t r = zt_bpe_vocab_pair_id(v, part[i], part[i + 1]);
            if (r < best) {
                best = r;
                at = i;
            }
        }
        if (best >= (uint32_t)id) break;  // ZT_BPE_NO_ID too
        part[at] = best;
        memmove(part + at + 1, part + at + 2, (n - at - 2) * sizeof *part);
        n--;
    }
    int ok = n == 2 && zt_bpe_vocab_pair_id(v, part[0], part[1]) == (uint32_t)id;
    if (ok) {
        *left = (int32_t)part[0];
        *right = (int32_t)part[1];
    }
    free(part);
    return ok;
}

// ---------------------------------------------------------------------------------------------
// Building the tables.

static uint64_t pow2_at_least(uint64_t x) {
    uint64_t p = 16;
    while (p < x) p <<= 1;
    return p;
}

// The pair table needs every split of every token into two tokens. Looking both halves of
// each split up by hash is quadratic in a token's length (a 1 MB token took minutes); instead
// each token's prefix tokens and suffix tokens come from two forests.
//
// parent[t] is the longest token that is a proper prefix (suffix, for the reversed forest) of
// token t, or -1: the prefix tokens of t are then parent[t], parent[parent[t]], ... In the
// tokens sorted by their bytes (read from the end, reversed), the tokens with u as a prefix
// follow u, so a stack of the current token's prefix tokens finds each parent: each token is
// pushed and popped once, each test costs the popped or the parent token's length: O(total
// bytes) after an O(n log n)-comparison sort.
typedef struct {
    const zt_bpe_vocab *v;
    int rev;
} token_order;

static int cmp_tokens(const void *x, const void *y, void *ctx) {
    const token_order *o = ctx;
    uint32_t s = *(const uint32_t *)x, t = *(const uint32_t *)y;
    size_t ls = zt_bpe_vocab_len(o->v, s), lt = zt_bpe_vocab_len(o->v, t), m = ls < lt ? ls : lt;
    const unsigned char *ps = o->v->pool + o->v->off[s], *pt = o->v->pool + o->v->off[t];
    if (!o->rev) {
        int c = memcmp(ps, pt, m);
        if (c) return c;
    } else {
        for (size_t i = 1; i <= m; i++)
            if (ps[ls - i] != pt[lt - i]) return ps[ls - i] < pt[lt - i] ? -1 : 1;
    }
    return (ls > lt) - (ls < lt);
}

// Whether token u is a proper prefix (rev: suffix) of token t.
static int token_affix(const zt_bpe_vocab *v, uint32_t u, uint32_t t, int rev) {
    size_t lu = zt_bpe_vocab_len(v, u), lt = zt_bpe_vocab_len(v, t);
    return lu < lt && memcmp(v->pool + v->off[u], v->pool + v->off[t] + (rev ? lt - lu : 0), lu) == 0;
}

static void token_parents(const zt_bpe_vocab *v, int rev, int32_t *parent) {
    size_t n = (size_t)v->n_tokens, top = 0;
    uint32_t *order = malloc(n * sizeof *order), *stack = malloc(n * sizeof *stack);
    ZT_ASSERT(order && stack);
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    token_order o = {v, rev};
    qsort_r(order, n, sizeof *order, cmp_tokens, &o);
    for (size_t k = 0; k < n; k++) {
        uint32_t t = order[k];
        while (top && !token_affix(v, stack[top - 1], t, rev)) top--;
        parent[t] = top ? (int32_t)stack[top - 1] : -1;
        stack[top++] = t;
    }
    free(order);
    free(stack);
}

// The splits of token id into two tokens (O(its prefix and suffix tokens)): its suffix tokens
// are stamped by where they start, then each prefix token looks up its end. Counts them, and
// enters them into the pair table when fill is set. at and stamp hold the longest token.
static size_t token_splits(zt_bpe_vocab *v, const int32_t *pre, const int32_t *suf, int32_t *at,
                           uint32_t *stamp, uint32_t id, int fill) {
    size_t len = zt_bpe_vocab_len(v, id), found = 0;
    for (int32_t u = suf[id]; u >= 0; u = suf[u]) {
        size_t k = len - zt_bpe_vocab_len(v, (uint32_t)u);
        at[k] = u;
        stamp[k] = id + 1;
    }
    for (int32_t u = pre[id]; u >= 0; u = pre[u]) {
        size_t k = zt_bpe_vocab_len(v, (uint32_t)u);
        if (stamp[k] != id + 1) continue;
        found++;
        if (!fill) continue;
        uint64_t key = (uint64_t)(uint32_t)u << 32 | (uint32_t)at[k];
        uint64_t i = zt_bpe_mix64(key) & v->pair_mask;
        while (v->pair_keys[i] != UINT64_MAX) i = (i + 1) & v->pair_mask;
        v->pair_keys[i] = key;
        v->pair_vals[i] = id;
    }
    return found;
}

// The pair table: every split of every token into two tokens. Count first, then fill.
static void build_pairs(zt_bpe_vocab *v) {
    size_t n = (size_t)v->n_tokens, longest = 1, n_pairs = 0;
    for (size_t id = 0; id < n; id++)
        if (zt_bpe_vocab_len(v, (uint32_t)id) > longest) longest = zt_bpe_vocab_len(v, (uint32_t)id);
    int32_t *pre = malloc(n * sizeof *pre), *suf = malloc(n * sizeof *suf);
    int32_t *at = malloc(longest * sizeof *at);
    uint32_t *stamp = calloc(longest, sizeof *stamp);
    ZT_ASSERT(pre && suf && at && stamp);
    token_parents(v, 0, pre);
    token_parents(v, 1, suf);
    for (size_t id = 0; id < n; id++) n_pairs += token_splits(v, pre, suf, at, stamp, (uint32_t)id, 0);
    v->pair_mask = pow2_at_least((uint64_t)n_pairs * 2 + 1) - 1;
    v->pair_keys = malloc((v->pair_mask + 1) * sizeof *v->pair_keys);
    v->pair_vals = malloc((v->pair_mask + 1) * sizeof *v->pair_vals);
    ZT_ASSERT(v->pair_keys && v->pair_vals);
    memset(v->pair_keys, 0xff, (v->pair_mask + 1) * sizeof *v->pair_keys);
    for (size_t id = 0; id < n; id++) token_splits(v, pre, suf, at, stamp, (uint32_t)id, 1);
    free(pre);
    free(suf);
    free(at);
    free(stamp);
}

// The bytes table, checking the tokens on the way: errors name `what` (the file) for an empty
// token, duplicates or missing single bytes.
static zt_status build_bytes(zt_bpe_vocab *v, const char *what) {
    int n = v->n_tokens;
    v->bytes_mask = pow2_at_least((uint64_t)n * 2) - 1;
    v->bytes_slots = calloc(v->bytes_mask + 1, sizeof *v->bytes_slots);
    ZT_ASSERT(v->bytes_slots);
    for (int t = 0; t < n; t++) {
        const unsigned char *p = v->pool + v->off[t];
        size_t len = zt_bpe_vocab_len(v, (uint32_t)t);
        if (len == 0) return zt_errorf("vocabulary %s: token %d is empty; the file is corrupt", what, t);
        int32_t dup = zt_bpe_vocab_lookup(v, p, len);
        if (dup >= 0)
            return zt_errorf("vocabulary %s: ranks %d and %d have the same bytes; the file is "
                             "corrupt (fetch it again: scripts/fetch_gpt2_vocab.sh)",
                             what, (int)dup, t);
        uint64_t i = hash_bytes(p, len) & v->bytes_mask;
        while (v->bytes_slots[i]) i = (i + 1) & v->bytes_mask;
        v->bytes_slots[i] = (uint32_t)t + 1;
    }
    for (int c = 0; c < 256; c++) {
        unsigned char byte = (unsigned char)c;
        int32_t id = zt_bpe_vocab_lookup(v, &byte, 1);
        if (id < 0)
            return zt_errorf("vocabulary %s lacks the single byte 0x%02x as a token, so it cannot "
                             "encode every text: not a byte-level BPE vocabulary such as "
                             "gpt2.tiktoken",
                             what, c);
        v->byte_id[c] = (uint32_t)id;
    }
    return ZT_OK;
}

void zt_bpe_vocab_alloc(zt_bpe_vocab *v, int n, size_t total) {
    v->n_tokens = n;
    v->pool = malloc(total + sizeof ZT_BPE_EOT_TEXT);
    v->off = malloc(((size_t)n + 2) * sizeof *v->off);
    ZT_ASSERT(v->pool && v->off);
}

zt_status zt_bpe_vocab_build(zt_bpe_vocab *v, const char *what) {
    uint32_t end = v->off[v->n_tokens];
    memcpy(v->pool + end, ZT_BPE_EOT_TEXT, sizeof ZT_BPE_EOT_TEXT - 1);
    v->off[v->n_tokens + 1] = end + (uint32_t)(sizeof ZT_BPE_EOT_TEXT - 1);
    ZT_TRY(build_bytes(v, what));
    build_pairs(v);
    return ZT_OK;
}

zt_status zt_bpe_vocab_from_tokens(zt_bpe_vocab *v, const unsigned char *const *tokens,
                                   const size_t *lens, int n) {
    size_t total = 0;
    for (int t = 0; t < n; t++) total += lens[t];
    zt_bpe_vocab_alloc(v, n, total);
    uint32_t o = 0;
    for (int t = 0; t < n; t++) {
        v->off[t] = o;
        memcpy(v->pool + o, tokens[t], lens[t]);
        o += (uint32_t)lens[t];
    }
    v->off[n] = o;
    return zt_bpe_vocab_build(v, "(in memory)");
}

void zt_bpe_vocab_free(zt_bpe_vocab *v) {
    if (!v) return;
    free(v->pool);
    free(v->off);
    free(v->bytes_slots);
    free(v->pair_keys);
    free(v->pair_vals);
    memset(v, 0, sizeof *v);
}
