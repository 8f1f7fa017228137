// Byte-pair merging of one piece by the rule itself: the array loop (short pieces) and the
// heap loop in bounded memory (long pieces), with the heap loop's key sorting (bpe_merge.h).
#include "bpe_merge.h"

#include "bpe_ids.h"

#include <stdlib.h>
#include <string.h>

#define NO_ID ZT_BPE_NO_ID

// Pieces up to ZT_BPE_ARRAY_MAX bytes: parts and the rank of each adjacent pair in two arrays;
// each step takes the leftmost lowest rank, merges, and re-ranks the two neighbours.
void zt_bpe_merge_array(const zt_bpe_vocab *v, const unsigned char *p, size_t n, zt_bpe_ids *out) {
    uint32_t part[ZT_BPE_ARRAY_MAX], rank[ZT_BPE_ARRAY_MAX];  // rank[i]: parts i and i+1
    for (size_t i = 0; i < n; i++) part[i] = v->byte_id[p[i]];
    for (size_t i = 0; i + 1 < n; i++) rank[i] = zt_bpe_vocab_pair_id(v, part[i], part[i + 1]);
    while (n > 1) {
        uint32_t best = NO_ID;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++)
            if (rank[i] < best) {
                best = rank[i];
                at = i;
            }
        if (best == NO_ID) break;
        part[at] = best;  // the merged token's id is the pair's rank
        memmove(part + at + 1, part + at + 2, (n - at - 2) * sizeof *part);
        if (at + 2 < n - 1) memmove(rank + at + 1, rank + at + 2, (n - at - 3) * sizeof *rank);
        n--;
        if (at > 0) rank[at - 1] = zt_bpe_vocab_pair_id(v, part[at - 1], part[at]);
        if (at + 1 < n) rank[at] = zt_bpe_vocab_pair_id(v, part[at], part[at + 1]);
    }
    zt_bpe_ids_reserve(out, n);
    for (size_t i = 0; i < n; i++) out->ids[out->n++] = (int32_t)part[i];
}

// Min-heap of (rank << 32 | position): the top is the lowest rank, leftmost among equals.
static void heap_push(uint64_t *h, size_t *n, uint64_t v) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (h[up] <= v) break;
        h[i] = h[up];
        i = up;
    }
    h[i] = v;
}

// Restores the heap order below h[i]: a min-heap, or a max-heap when max is set.
static void sift_down(uint64_t *h, size_t n, size_t i, int max) {
    uint64_t v = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && (max ? h[c + 1] > h[c] : h[c + 1] < h[c])) c++;
        if (max ? v >= h[c] : v <= h[c]) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0];
    h[0] = h[--*n];
    if (*n) sift_down(h, *n, 0, 0);
    return top;
}

// Sorting and selecting keys in place (glibc's qsort is a merge sort that mallocs a copy: one
// more byte per byte of a long piece): quicksort and quickselect around a median of three,
// insertion sort on short ranges, heapsort when the partitions go too deep.
static inline void swap_keys(uint64_t *x, uint64_t *y) {
    uint64_t t = *x;
    *x = *y;
    *y = t;
}

static void insertion_sort(uint64_t *k, size_t n) {
    for (size_t i = 1; i < n; i++) {
        uint64_t v = k[i];
        size_t j = i;
        for (; j > 0 && k[j - 1] > v; j--) k[j] = k[j - 1];
        k[j] = v;
    }
}

static void heap_sort(uint64_t *k, size_t n) {
    for (size_t i = n / 2; i-- > 0;) sift_down(k, n, i, 1);
    for (size_t e = n; e-- > 1;) {
        swap_keys(k, k + e);
        sift_down(k, e, 0, 1);
    }
}

// Hoare partition of k[0 .. n) (n >= 3) around the median of the first, lower-middle and last
// keys: returns p with k[0 .. p) <= k[p .. n), both non-empty.
static size_t partition_keys(uint64_t *k, size_t n) {
    size_t mid = (n - 1) / 2;
    if (k[mid] < k[0]) swap_keys(k + mid, k);
    if (k[n - 1] < k[0]) swap_keys(k + n - 1, k);
    if (k[n - 1] < k[mid]) swap_keys(k + n - 1, k + mid);
    uint64_t pivot = k[mid];
    size_t i = 0, j = n - 1;
    for (;;) {
        while (k[i] < pivot) i++;
        while (k[j] > pivot) j--;
        if (i >= j) return j + 1;
        swap_keys(k + i++, k + j--);
    }
}

static int depth_limit(size_t n) {
    int d = 0;
    while (n >>= 1) d += 2;
    return d;
}

void zt_bpe_sort_keys(uint64_t *k, size_t n, int depth) {
    while (n > 16) {
        if (depth-- == 0) {
            heap_sort(k, n);
            return;
        }
        size_t p = partition_keys(k, n);
        if (p < n - p) {  // recurse on the smaller side: the stack stays O(log n)
            zt_bpe_sort_keys(k, p, depth);
            k += p;
            n -= p;
        } else {
            zt_bpe_sort_keys(k + p, n - p, depth);
            n = p;
        }
    }
    insertion_sort(k, n);
}

void zt_bpe_select_keys(uint64_t *k, size_t n, size_t nth) {
    int depth = depth_limit(n);
    while (n > 16) {
        if (depth-- == 0) break;
        size_t p = partition_keys(k, n);
        if (nth < p) {
            n = p;
        } else {
            k += p;
            n -= p;
            nth -= p;
        }
    }
    zt_bpe_sort_keys(k, n, depth_limit(n));
}

// Long pieces in 5 bytes per byte (a run of one letter, a line without spaces: the piece may
// be the whole input, so its state must stay a small multiple of it).
//
// Parts: one uint32 per byte of the piece, in the output list itself (the parts become the
// ids). A part's first byte holds PART_START | its id, its last byte its id (so the part to
// the left of position s is the one named at s - 1), the bytes between hold anything without
// PART_START. A part is as long as its token, so no links are stored: 4 bytes per byte.
//
// Candidates: keys (rank << 32 | start of the left part), taken smallest first: the lowest
// rank, then the leftmost, tiktoken's order. At most cap = n / 8 + 64 of them are held (1 byte
// per byte of the piece), so not every pair at once: every valid pair whose key is below
// `limit` is held, plus stale ones (a pair whose parts changed since it was offered no longer
// has that rank: a rank fixes the pair's bytes, and parts only grow; checked when taken).
// Pairs at or above limit are found again by rescanning the parts when none is held. A valid
// key taken is then the smallest of all valid pairs: any smaller one is below limit, so held.
// A rescan loads cap keys (or all, and limit becomes UINT64_MAX); at most three leave per
// merge (its own, and the pairs on either side it ends), and a trim keeps 3/4 of them, so a
// rescan is followed by at least cap / 4 merges: at most 4n / cap + 1 = 33 rescans of the
// parts, each O(n).
//
// The held keys are a sorted run (what the last rescan or trim loaded, taken from its front)
// at the top of the array, and a min-heap of the pairs merges made below limit at its
// bottom; the smaller front of the two is taken. Most merges take from the run in O(1): the
// pairs a merge makes usually rank above what is loaded, so most pushes are dropped.
#define PART_START 0x80000000u
#define PART_ID(v) ((v) & ~PART_START)

typedef struct {
    const zt_bpe_vocab *v;
    uint32_t *a;     // (n) the parts
    size_t n;
    uint64_t *k;     // (cap): the heap at k[0 .. hn), the sorted run at k[qi .. cap)
    size_t hn, qi, cap;
    uint64_t limit;  // every valid pair with a key below it is held
} long_merge;

// The rank of the pair whose left part starts at s (a part start), or NO_ID.
static inline uint32_t pair_at(const long_merge *m, size_t s) {
    uint32_t left = PART_ID(m->a[s]);
    size_t nx = s + zt_bpe_vocab_len(m->v, left);
    return nx < m->n ? zt_bpe_vocab_pair_id(m->v, left, PART_ID(m->a[nx])) : NO_ID;
}

static inline int key_valid(const long_merge *m, uint64_t key) {
    uint32_t s = (uint32_t)key;
    return (m->a[s] & PART_START) && pair_at(m, s) == (uint32_t)(key >> 32);
}

// Of the valid keys k[0 .. j), keeps the smallest `keep` (lowering limit to the smallest key
// dropped), sorted, as the run at the top of the array.
static void lm_set_run(long_merge *m, size_t j, size_t keep, int sorted) {
    if (j > keep) {
        zt_bpe_select_keys(m->k, j, keep);
        m->limit = m->k[keep];
        j = keep;
        sorted = 0;
    }
    if (!sorted) zt_bpe_sort_keys(m->k, j, depth_limit(j));
    memmove(m->k + m->cap - j, m->k, j * sizeof *m->k);
    m->qi = m->cap - j;
    m->hn = 0;
}

// Nothing is held, so no valid pair is below limit: loads the smallest keys of the valid
// pairs, as many as fit, and moves limit to the smallest key left out (UINT64_MAX when none
// was). While scanning, k[0 .. j) holds every valid key seen below `below`; when it is full,
// the largest quarter is dropped (quickselect; keys come in position order within a rank, so
// often sorted, and then a larger key is simply left out).
static void lm_load(long_merge *m) {
    size_t j = 0, keep = m->cap - 1 - m->cap / 4;
    uint64_t below = UINT64_MAX;
    int sorted = 1;
    for (size_t s = 0; s < m->n; s += zt_bpe_vocab_len(m->v, PART_ID(m->a[s]))) {
        uint32_t r = pair_at(m, s);
        uint64_t key = (uint64_t)r << 32 | s;
        if (r == NO_ID || key >= below) continue;
        if (j == m->cap) {
            if (sorted && key > m->k[j - 1]) {  // all held are smaller: leave this one out
                below = key;
                continue;
            }
            if (!sorted) zt_bpe_select_keys(m->k, j, keep);
            below = m->k[keep];
            j = keep;
            if (key >= below) continue;
        }
        sorted = sorted && (j == 0 || m->k[j - 1] < key);
        m->k[j++] = key;
    }
    m->limit = below;
    lm_set_run(m, j, j, sorted);
}

// The heap has grown into the run: drops the stale keys of both and, if that frees less than a
// quarter, the largest keys too.
static void lm_trim(long_merge *m) {
    size_t j = 0;
    for (size_t i = 0; i < m->hn; i++)
        if (key_valid(m, m->k[i])) m->k[j++] = m->k[i];
    for (size_t i = m->qi; i < m->cap; i++)  // j <= i: forward copy
        if (key_valid(m, m->k[i])) m->k[j++] = m->k[i];
    lm_set_run(m, j, m->cap - 1 - m->cap / 4, 0);  // room for a quarter of pushes
}

static void lm_push(long_merge *m, uint32_t r, size_t s) {
    if (r == NO_ID) return;
    uint64_t key = (uint64_t)r << 32 | s;
    if (key >= m->limit) return;  // a rescan finds it
    if (m->hn == m->qi) {
        lm_trim(m);
        if (key >= m->limit) return;
    }
    heap_push(m->k, &m->hn, key);
}

// Takes the smallest key held; if its pair is still there, merges it and offers the pairs the
// merged part makes with its two neighbours.
static void lm_step(long_merge *m) {
    uint64_t top;
    if (m->qi < m->cap && (m->hn == 0 || m->k[m->qi] < m->k[0])) top = m->k[m->qi++];
    else top = heap_pop(m->k, &m->hn);
    if (!key_valid(m, top)) return;
    const zt_bpe_vocab *v = m->v;
    uint32_t r = (uint32_t)(top >> 32);
    size_t s = (uint32_t)top, nx = s + zt_bpe_vocab_len(v, PART_ID(m->a[s])), end = s + zt_bpe_vocab_len(v, r);
    m->a[nx] &= ~PART_START;  // the right part's start is inside the merged part now
    m->a[end - 1] = r;
    m->a[s] = PART_START | r;
    if (s > 0) {
        uint32_t left = PART_ID(m->a[s - 1]);
        lm_push(m, zt_bpe_vocab_pair_id(v, left, r), s - zt_bpe_vocab_len(v, left));
    }
    if (end < m->n) lm_push(m, zt_bpe_vocab_pair_id(v, r, PART_ID(m->a[end])), s);
}

void zt_bpe_merge_heap(const zt_bpe_vocab *v, const unsigned char *p, size_t n, size_t heap_cap,
                       zt_bpe_ids *out) {
    // Positions are the low 32 bits of a key.
    ZT_ASSERTF(n <= UINT32_MAX, "a %zu-byte piece is over the 4 GiB a piece may have", n);
    ZT_ASSERT(heap_cap >= 2);  // a load keeps cap - 1 - cap / 4 >= 1 keys
    zt_bpe_ids_reserve_exact(out, n);
    long_merge m = {v, (uint32_t *)(out->ids + out->n), n, NULL, 0, heap_cap, heap_cap, 0};
    m.k = malloc(m.cap * sizeof *m.k);
    ZT_ASSERTF(m.k, "out of memory merging a %zu-byte piece", n);
    for (size_t i = 0; i < n; i++) m.a[i] = PART_START | v->byte_id[p[i]];
    for (;;) {
        if (m.hn == 0 && m.qi == m.cap) {
            if (m.limit == UINT64_MAX) break;  // every pair was loaded: none is left
            lm_load(&m);
            if (m.qi == m.cap) break;
        }
        lm_step(&m);
    }
    free(m.k);
    // The parts, front to back, become the ids (k <= i: nothing unread is overwritten).
    size_t k = 0;
    for (size_t i = 0; i < n; i += zt_bpe_vocab_len(v, PART_ID(m.a[i]))) m.a[k++] = PART_ID(m.a[i]);
    out->n += k;
}
