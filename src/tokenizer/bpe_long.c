// Long pieces: exact byte-pair merging in time linear in the piece (for a fixed vocabulary) by
// a backtracking search over token prefixes, in 1/8 byte per byte beside the ids (and a pair
// memo of at most a byte per byte, 512 KiB, for vocabularies with tokens that are not trees).
//
// Why the search finds tiktoken's merge (byte_pair_merge: merge the adjacent pair whose
// concatenation has the lowest rank, the leftmost of equals, until no pair is a token). Call
// tokens t, u "compatible" when merging the bytes of t then u gives exactly [t, u].
//   A. In a merge's result every two neighbours are compatible: no merge ever crossed the
//      boundaries of the span of t u, so the merges inside it were, in order, the lowest (and
//      leftmost) pairs of that span, which is what merging its bytes alone does; and at the end
//      t u was not a pair.
//   B. Conversely, if every two neighbours of a sequence of tokens spelling the text are
//      compatible, merging the text gives that sequence: take the first merge that would cross
//      a boundary, between t and u; up to then the span of t u saw exactly the merges that
//      merging its bytes alone makes (the same argument), so that would cross too: t, u were
//      not compatible. So no merge crosses, each token's span merges as its bytes alone do (to
//      the token: a token compatible with a neighbour merges to itself) and no pair is left.
//      A single token must merge to itself ("derive"; in GPT-2's vocabulary all do).
// So the merge is the one sequence of pairwise compatible tokens spelling the piece, and it
// is the same for every prefix it has a boundary at. The search builds it left to right on a
// stack (the output ids): at position pos it tries the tokens that start the rest, longest
// first (a trie walk, then the chain of ever shorter prefix tokens), and pushes the first that
// is compatible with the stack's top and whose end is not dead. When none is, pos is dead
// (the stack there is the only valid one for the prefix, and it cannot be continued), the
// top is popped and the tokens shorter than it tried. Every position dies at most once, so
// there are at most 2 n pushes, each costing a trie walk and some compatibility tests: O(n L)
// for tokens of at most L bytes.
//
// Compatibility of two "tree tokens" (below; all of GPT-2's) is a walk down their merge trees,
// a pair probe a step. Other pairs are decided by merging the two tokens' bytes with the
// encoder's own merge (bpe_merge.c: the array loop, or the heap loop for long tokens): the
// definition itself, right for any vocabulary, memoized per piece in a direct-mapped table.
#include "bpe_long.h"

#include "bpe_merge.h"

#include <stdlib.h>
#include <string.h>

#define NO_ID UINT32_MAX
#define EMPTY_KEY UINT64_MAX

struct zt_bpe_long {
    uint32_t n_tokens;
    uint32_t *len;        // (n_tokens) each token's length in bytes
    uint32_t *prefix;     // (n_tokens) the longest token that is a proper prefix, or NO_ID
    uint32_t *split;      // (2 n_tokens) a tree token's last merge (left, right); NO_ID: none
    uint32_t max_len;     // the longest token
    uint32_t root[256];   // the trie node of each first byte
    uint32_t *node_tok;   // (n_nodes) the token a node spells, or NO_ID
    size_t n_nodes;
    uint64_t *child_key;  // (mask + 1) node << 8 | byte, EMPTY_KEY = empty
    uint32_t *child;      // (mask + 1) the child node
    uint64_t mask;
};

static inline uint64_t slot_of(uint64_t key, uint64_t mask) {
    key *= 0x9e3779b97f4a7c15ULL;
    return (key ^ key >> 29) & mask;
}

static inline int is_tree(const zt_bpe_long *ix, uint32_t t) {
    return ix->len[t] == 1 || ix->split[2 * t] != NO_ID;
}

static inline uint32_t trie_child(const zt_bpe_long *ix, uint32_t node, unsigned char c) {
    uint64_t key = (uint64_t)node << 8 | c;
    for (uint64_t i = slot_of(key, ix->mask);; i = (i + 1) & ix->mask) {
        uint64_t k = ix->child_key[i];
        if (k == key) return ix->child[i];
        if (k == EMPTY_KEY) return NO_ID;
    }
}

static void trie_put(zt_bpe_long *ix, uint64_t key, uint32_t child) {
    uint64_t i = slot_of(key, ix->mask);
    while (ix->child_key[i] != EMPTY_KEY) i = (i + 1) & ix->mask;
    ix->child_key[i] = key;
    ix->child[i] = child;
}

// Doubles the child table (kept at most half full).
static void trie_grow(zt_bpe_long *ix) {
    uint64_t old_mask = ix->mask, *old_key = ix->child_key;
    uint32_t *old_child = ix->child;
    ix->mask = old_mask * 2 + 1;
    ix->child_key = malloc((ix->mask + 1) * sizeof *ix->child_key);
    ix->child = malloc((ix->mask + 1) * sizeof *ix->child);
    ZT_ASSERTF(ix->child_key && ix->child, "out of memory for the long-piece trie");
    memset(ix->child_key, 0xff, (ix->mask + 1) * sizeof *ix->child_key);
    for (uint64_t i = 0; i <= old_mask; i++)
        if (old_key[i] != EMPTY_KEY) trie_put(ix, old_key[i], old_child[i]);
    free(old_key);
    free(old_child);
}

// The node of token bytes p[0 .. n), made (with the nodes above it) when missing.
static uint32_t trie_add(zt_bpe_long *ix, const unsigned char *p, size_t n, size_t *cap) {
    uint32_t node = ix->root[p[0]];
    for (size_t i = 1; i < n; i++) {
        uint32_t c = trie_child(ix, node, p[i]);
        if (c == NO_ID) {
            if (ix->n_nodes == *cap) {
                *cap *= 2;
                ix->node_tok = realloc(ix->node_tok, *cap * sizeof *ix->node_tok);
                ZT_ASSERTF(ix->node_tok, "out of memory for the long-piece trie");
            }
            if (2 * (ix->n_nodes + 1) > ix->mask + 1) trie_grow(ix);
            c = (uint32_t)ix->n_nodes++;
            ix->node_tok[c] = NO_ID;
            trie_put(ix, (uint64_t)node << 8 | p[i], c);
        }
        node = c;
    }
    return node;
}

// Tree tokens. Merging a token's bytes alone, the ranks merged may come in any order (a token
// may rank below its parts). A "tree token" is a single byte, or one whose bytes merge to it
// with the ranks merged never decreasing, its last merge joining tree tokens (left, right),
// both ranked below it; in GPT-2's vocabulary every token is one. For two tree tokens t, u,
// merging the bytes of t u is, until a merge crosses between them, the two merges interleaved
// by rank (t's side first among equals), each side's boundary part (the last part of t's side,
// the first of u's) walking up its spine of the merge tree. A crossing needs the pair (x, y) of
// boundary parts to rank below the merge that would come next, which is at its largest just
// before x or y changes, that merge being x's (rank x, t's side wins ties: a crossing must be
// below x) or y's (a crossing must be at most y). So, walking the spines down from (t, u),
// undoing the later of the two merges each time (the larger rank; y among equals), the pair
// crosses iff it ranks below the limit of the merge undone. limit is the bound at (t, u)
// itself: UINT32_MAX for the whole merge, a token's rank when checking its last merge. Costs a
// pair probe per spine step: the tokens' merge-tree depths, a handful.
static int tree_compatible(const zt_bpe_vocab *v, const zt_bpe_long *ix, uint32_t x, uint32_t y,
                           uint32_t limit) {
    for (;;) {
        int32_t c = zt_bpe_vocab_pair(v, (int32_t)x, (int32_t)y);
        if (c >= 0 && (uint32_t)c < limit) return 0;
        int x_leaf = ix->len[x] == 1, y_leaf = ix->len[y] == 1;
        if (x_leaf && y_leaf) return 1;
        if (!x_leaf && (y_leaf || x > y)) {
            limit = x;
            x = ix->split[2 * x + 1];
        } else {
            limit = y + 1;
            y = ix->split[2 * y];
        }
    }
}

// Finds the tree tokens, in rank order (parts rank below): token t of two or more bytes is one
// iff for some split t = a b (a a prefix token) a and b are tree tokens ranked below t and
// merging a b's bytes with only ranks below t allowed ends at [a, b] (then t is next): the walk
// above with limit t.
static void find_splits(const zt_bpe_vocab *v, zt_bpe_long *ix) {
    for (uint32_t t = 0; t < ix->n_tokens; t++) {
        ix->split[2 * t] = ix->split[2 * t + 1] = NO_ID;
        if (ix->len[t] < 2) continue;
        size_t l;
        const unsigned char *p = zt_bpe_vocab_bytes(v, (int32_t)t, &l);
        for (uint32_t a = ix->prefix[t]; a != NO_ID; a = ix->prefix[a]) {
            int32_t r = zt_bpe_vocab_lookup(v, p + ix->len[a], l - ix->len[a]);
            if (r < 0 || a >= t || (uint32_t)r >= t || !is_tree(ix, a) || !is_tree(ix, (uint32_t)r) ||
                !tree_compatible(v, ix, a, (uint32_t)r, t))
                continue;
            ix->split[2 * t] = a;
            ix->split[2 * t + 1] = (uint32_t)r;
            break;
        }
    }
}

zt_bpe_long *zt_bpe_long_init(const zt_bpe_vocab *v) {
    zt_bpe_long *ix = calloc(1, sizeof *ix);
    ZT_ASSERT(ix);
    uint32_t n = (uint32_t)v->n_tokens;  // the end-of-text id is not merged
    size_t cap = 1024;
    ix->n_tokens = n;
    ix->len = malloc(n * sizeof *ix->len);
    ix->prefix = malloc(n * sizeof *ix->prefix);
    ix->split = malloc(2 * (size_t)n * sizeof *ix->split);
    ix->node_tok = malloc(cap * sizeof *ix->node_tok);
    ix->mask = 4095;
    ix->child_key = malloc((ix->mask + 1) * sizeof *ix->child_key);
    ix->child = malloc((ix->mask + 1) * sizeof *ix->child);
    ZT_ASSERTF(ix->len && ix->prefix && ix->split && ix->node_tok && ix->child_key && ix->child,
               "out of memory for the long-piece trie");
    memset(ix->child_key, 0xff, (ix->mask + 1) * sizeof *ix->child_key);
    for (int c = 0; c < 256; c++) {  // every byte is a token (zt_bpe_vocab_build checks)
        ix->root[c] = (uint32_t)ix->n_nodes++;
        unsigned char byte = (unsigned char)c;
        ix->node_tok[ix->root[c]] = (uint32_t)zt_bpe_vocab_lookup(v, &byte, 1);
    }
    for (uint32_t t = 0; t < n; t++) {
        size_t l;
        const unsigned char *p = zt_bpe_vocab_bytes(v, (int32_t)t, &l);
        ix->len[t] = (uint32_t)l;
        if (l > ix->max_len) ix->max_len = (uint32_t)l;
        if (l < 2) continue;
        uint32_t node = trie_add(ix, p, l, &cap);  // may move node_tok
        ix->node_tok[node] = t;
    }
    // A token's longest proper prefix token: the last token met walking down to it.
    for (uint32_t t = 0; t < n; t++) {
        size_t l;
        const unsigned char *p = zt_bpe_vocab_bytes(v, (int32_t)t, &l);
        uint32_t node = ix->root[p[0]], last = NO_ID;
        for (size_t i = 1; i < l; i++) {
            if (ix->node_tok[node] != NO_ID) last = ix->node_tok[node];
            node = trie_child(ix, node, p[i]);
        }
        ix->prefix[t] = last;
    }
    find_splits(v, ix);
    return ix;
}

void zt_bpe_long_free(zt_bpe_long *ix) {
    if (!ix) return;
    free(ix->len);
    free(ix->prefix);
    free(ix->split);
    free(ix->node_tok);
    free(ix->child_key);
    free(ix->child);
    free(ix);
}

// The longest token that starts p[0 .. n) (n >= 1; a single byte always does).
static inline uint32_t longest_at(const zt_bpe_long *ix, const unsigned char *p, size_t n) {
    uint32_t node = ix->root[p[0]], best = ix->node_tok[node];
    for (size_t i = 1; i < n; i++) {
        node = trie_child(ix, node, p[i]);
        if (node == NO_ID) break;
        if (ix->node_tok[node] != NO_ID) best = ix->node_tok[node];
    }
    return best;
}

// Memo entries: t << 33 | u << 1 | answer (ids are below 2^30: zt_bpe_load's ranks); u =
// NO_ID asks whether t alone merges to t. Direct-mapped: a collision overwrites.
#define MEMO_MAX ((size_t)1 << 16)

static size_t memo_slots(size_t n) {
    size_t want = n / 8 + 64, s = 64;
    while (s * 2 <= want && s < MEMO_MAX) s *= 2;
    return s;
}

size_t zt_bpe_long_bytes(size_t n) {
    return (n / 64 + 1) * sizeof(uint64_t) + memo_slots(n) * sizeof(uint64_t);
}

typedef struct {
    const zt_bpe_vocab *v;
    const zt_bpe_long *ix;
    uint64_t *memo;         // (memo_mask + 1)
    uint64_t memo_mask;
    unsigned char *buf;     // (buf_cap) the bytes of a re-merge
    size_t buf_cap;
    zt_bpe_ids scratch;     // a re-merge's ids
} search;

// Whether merging the bytes of t then u (u == NO_ID: of t alone) gives exactly [t, u] ([t]).
static int merges_to(search *s, uint32_t t, uint32_t u) {
    const zt_bpe_long *ix = s->ix;
    if (!s->memo) {  // made on first use: never, with a vocabulary of tree tokens
        s->memo = malloc((s->memo_mask + 1) * sizeof *s->memo);
        ZT_ASSERTF(s->memo, "out of memory for a %zu-entry pair memo", (size_t)s->memo_mask + 1);
        memset(s->memo, 0xff, (s->memo_mask + 1) * sizeof *s->memo);
    }
    uint64_t key = (uint64_t)t << 33 | (uint64_t)u << 1;
    uint64_t *slot = &s->memo[slot_of(key, s->memo_mask)];
    if ((*slot & ~(uint64_t)1) == key) return (int)(*slot & 1);
    if (u != NO_ID && zt_bpe_vocab_pair(s->v, (int32_t)t, (int32_t)u) >= 0) {
        *slot = key;  // a pair that is a token merges: never compatible
        return 0;
    }
    size_t lt = ix->len[t], lu = u == NO_ID ? 0 : ix->len[u], n = lt + lu, l;
    if (n > s->buf_cap) {
        free(s->buf);
        s->buf_cap = n > 2 * s->buf_cap ? n : 2 * s->buf_cap;
        s->buf = malloc(s->buf_cap);
        ZT_ASSERTF(s->buf, "out of memory re-merging %zu bytes of two tokens", n);
    }
    memcpy(s->buf, zt_bpe_vocab_bytes(s->v, (int32_t)t, &l), lt);
    if (u != NO_ID) memcpy(s->buf + lt, zt_bpe_vocab_bytes(s->v, (int32_t)u, &l), lu);
    s->scratch.n = 0;
    if (n > ZT_BPE_ARRAY_MAX) zt_bpe_merge_heap(s->v, s->buf, n, ZT_BPE_HEAP_CAP(n), &s->scratch);
    else zt_bpe_merge_array(s->v, s->buf, n, &s->scratch);
    const int32_t *got = s->scratch.ids;
    int ok = u == NO_ID ? s->scratch.n == 1 && got[0] == (int32_t)t
                        : s->scratch.n == 2 && got[0] == (int32_t)t && got[1] == (int32_t)u;
    *slot = key | (uint64_t)ok;
    return ok;
}

// Whether token t may follow the stack (top: NO_ID when empty).
static inline int fits(search *s, uint32_t top, uint32_t t) {
    const zt_bpe_long *ix = s->ix;
    if (top == NO_ID) return is_tree(ix, t) || merges_to(s, t, NO_ID);
    if (is_tree(ix, top) && is_tree(ix, t)) return tree_compatible(s->v, ix, top, t, UINT32_MAX);
    return merges_to(s, top, t);
}

size_t zt_bpe_long_merge(const zt_bpe_vocab *v, const zt_bpe_long *ix, const unsigned char *p,
                         size_t n, uint32_t *ids, int give_up) {
    ZT_ASSERTF(n <= UINT32_MAX, "a %zu-byte piece is over the 4 GiB a piece may have", n);
    if (n == 0) return 0;
    search s = {v, ix, NULL, memo_slots(n) - 1, NULL, 0, {0}};
    uint64_t *dead = calloc(n / 64 + 1, sizeof *dead);  // (n + 1 bits) positions no merge ends at
    ZT_ASSERTF(dead, "out of memory merging a %zu-byte piece", n);
    size_t k = 0, pos = 0, backups = 0;  // ids[0 .. k) spell p[0 .. pos)
    uint32_t cand = longest_at(ix, p, n);
    while (pos < n && k != ZT_BPE_LONG_GAVE_UP) {
        uint32_t top = k ? ids[k - 1] : NO_ID;
        for (;;) {
            size_t end = pos + ix->len[cand];
            if (!(dead[end / 64] >> (end % 64) & 1) && fits(&s, top, cand)) {
                ids[k++] = cand;
                pos = end;
                if (pos < n) cand = longest_at(ix, p + pos, n - pos);
                break;
            }
            cand = ix->prefix[cand];
            if (cand == NO_ID) {  // nothing continues the stack at pos: back up one token
                // The merge of the whole piece exists and every position it passes stays live,
                // so the stack cannot run empty here.
                ZT_ASSERTF(k > 0, "long-piece merge: no token fits at byte 0 of %zu", n);
                dead[pos / 64] |= (uint64_t)1 << (pos % 64);
                if (give_up && ++backups > ZT_BPE_LONG_BACKUPS(pos)) {
                    k = ZT_BPE_LONG_GAVE_UP;
                    break;
                }
                cand = ids[--k];
                pos -= ix->len[cand];
                break;
            }
        }
    }
    free(dead);
    free(s.memo);
    free(s.buf);
    zt_bpe_ids_free(&s.scratch);
    return k;
}
