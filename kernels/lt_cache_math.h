// The keys and lookup of gemm_lt_cuda.c's cuBLASLt plan cache, as plain C so that a host test
// checks hits, misses, the alignment class and the replacement where there is no GPU
// (tests/test_cuda.c, cuda_bf16_lt_cache_host). The descriptors and algorithms themselves sit
// beside the index, slot for slot, in bf16_cuda.h's zt_cuda_bf16.
#ifndef ZT_LT_CACHE_MATH_H
#define ZT_LT_CACHE_MATH_H
#include <stddef.h>
#include <stdint.h>

#include "launch_math.h"

// Slots: a training step's bf16 products have ~10 distinct shapes (per layer kind and
// direction, the lm-head, a last K chunk or tile, a C piece at another alignment), so 32
// hold them all with room; past that the oldest filled slot is replaced.
#define ZT_LT_CACHE_SLOTS 32
// cuBLASLt's default (and largest useful) operand alignment, in bytes.
#define ZT_LT_ALIGN_MAX 256u

// The alignment class of an address: the largest power of two up to ZT_LT_ALIGN_MAX that
// divides it. An algorithm the heuristic chose for pointers of one class may need that
// alignment, so a plan serves only pointers of the classes it was chosen for.
static inline unsigned zt_lt_align_class(uintptr_t p) {
    unsigned a = ZT_LT_ALIGN_MAX;
    while (a > 1 && p % a) a /= 2;
    return a;
}

// What a cached plan depends on: the column-major call (launch_math.h's zt_col_major_gemm),
// C's leading dimension, the three types (cudaDataType_t values) and the pointers' classes;
// for a product with an epilogue (gemm_epilogue_bf16) cuBLASLt's epilogue value and the class
// of the vector or matrix it reads (0 and 0 for gemm_mixed's products).
typedef struct {
    int trans_first, trans_second, m, n, k, ld_first, ld_second, ldc;
    int type_first, type_second, type_c;
    unsigned align_first, align_second, align_c;
    int epilogue;
    unsigned align_epilogue;
} zt_lt_key;

// The key of column-major call g writing C (leading dimension ldc) with these types.
static inline zt_lt_key zt_lt_key_of(const zt_col_major_gemm *g, int ldc, int type_first,
                                     int type_second, int type_c, const void *c) {
    zt_lt_key k = {g->trans_first, g->trans_second, g->m, g->n, g->k, g->ld_first,
                   g->ld_second, ldc, type_first, type_second, type_c,
                   zt_lt_align_class((uintptr_t)g->first),
                   zt_lt_align_class((uintptr_t)g->second), zt_lt_align_class((uintptr_t)c),
                   0, 0};
    return k;
}

static inline int zt_lt_key_eq(const zt_lt_key *a, const zt_lt_key *b) {
    return a->trans_first == b->trans_first && a->trans_second == b->trans_second &&
           a->m == b->m && a->n == b->n && a->k == b->k && a->ld_first == b->ld_first &&
           a->ld_second == b->ld_second && a->ldc == b->ldc && a->type_first == b->type_first &&
           a->type_second == b->type_second && a->type_c == b->type_c &&
           a->align_first == b->align_first && a->align_second == b->align_second &&
           a->align_c == b->align_c && a->epilogue == b->epilogue &&
           a->align_epilogue == b->align_epilogue;
}

// The index of the slots: zeroed is empty. Fixed size, no allocation.
typedef struct {
    zt_lt_key keys[ZT_LT_CACHE_SLOTS];
    int used;               // slots filled, 0..ZT_LT_CACHE_SLOTS
    int next;               // the slot the next miss replaces once all are filled
    size_t hits, misses;    // for tests and a profile
} zt_lt_index;

// The slot holding k (counted as a hit), or -1 (a miss: the caller builds the plan and
// zt_lt_insert gives it a slot).
static inline int zt_lt_find(zt_lt_index *x, const zt_lt_key *k) {
    for (int i = 0; i < x->used; i++)
        if (zt_lt_key_eq(&x->keys[i], k)) {
            x->hits++;
            return i;
        }
    x->misses++;
    return -1;
}

// The slot for a new key k: the next empty one, else the oldest filled (round robin);
// *replaced says whether it held a plan, which the caller frees before filling the slot.
static inline int zt_lt_insert(zt_lt_index *x, const zt_lt_key *k, int *replaced) {
    int i;
    if (x->used < ZT_LT_CACHE_SLOTS) {
        i = x->used++;
        *replaced = 0;
    } else {
        i = x->next;
        x->next = (x->next + 1) % ZT_LT_CACHE_SLOTS;
        *replaced = 1;
    }
    x->keys[i] = *k;
    return i;
}
#endif
