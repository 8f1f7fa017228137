// GPT-2 byte-level BPE, the tokenizer (bpe.h): the object that owns the vocabulary's tables
// (bpe_vocab.c, read from the file by bpe_vocab_file.c) and the long-piece index (bpe_long.c);
// which merge a piece takes; encoding (pre-tokenized by pretokenize.h); decoding; safe cuts.
#include "bpe.h"
#include "bpe_ids.h"
#include "bpe_impl.h"
#include "bpe_merge.h"
#include "bpe_vocab_file.h"
#include "pretokenize.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// The tokenizer object.

// A loaded or built vocabulary (status s) becomes a tokenizer with its long-piece index, or is
// freed with the message left for the caller.
static zt_status finish(zt_bpe **out, zt_bpe *b, zt_status s) {
    if (s != ZT_OK) {
        zt_bpe_free(b);
        return s;
    }
    b->lng = zt_bpe_long_init(&b->vocab);
    *out = b;
    return ZT_OK;
}

zt_status zt_bpe_load(zt_bpe **out, const char *path) {
    ZT_ASSERT(out && path);
    *out = NULL;
    zt_bpe *b = calloc(1, sizeof *b);
    ZT_ASSERT(b);
    return finish(out, b, zt_bpe_vocab_load(&b->vocab, path));
}

zt_status zt_bpe_from_tokens(zt_bpe **out, const unsigned char *const *tokens, const size_t *lens,
                             int n) {
    *out = NULL;
    zt_bpe *b = calloc(1, sizeof *b);
    ZT_ASSERT(b);
    return finish(out, b, zt_bpe_vocab_from_tokens(&b->vocab, tokens, lens, n));
}

void zt_bpe_free(zt_bpe *b) {
    if (!b) return;
    zt_bpe_vocab_free(&b->vocab);
    zt_bpe_long_free(b->lng);
    free(b);
}

int zt_bpe_vocab_size(const zt_bpe *b) { return b->vocab.n_tokens + 1; }
int zt_bpe_eot(const zt_bpe *b) { return b->vocab.n_tokens; }

const unsigned char *zt_bpe_token_bytes(const zt_bpe *b, int32_t id, size_t *len) {
    return zt_bpe_vocab_bytes(&b->vocab, id, len);
}

int zt_bpe_merge_of(const zt_bpe *b, int32_t id, int32_t *left, int32_t *right) {
    return zt_bpe_vocab_merge_of(&b->vocab, id, left, right);
}

// ---------------------------------------------------------------------------------------------
// Merges: which loop a piece takes.

void zt_bpe_merge_piece(const zt_bpe *b, const unsigned char *p, size_t n, size_t heap_cap,
                        zt_bpe_ids *out) {
    const zt_bpe_vocab *v = &b->vocab;
    if (n == 0) return;
    if (heap_cap) {
        zt_bpe_merge_heap(v, p, n, heap_cap, out);
    } else if (n > ZT_BPE_ARRAY_MAX) {  // linear time, the ids on a stack in out (bpe_long.c)
        zt_bpe_ids_reserve_exact(out, n);
        size_t k = zt_bpe_long_merge(v, b->lng, p, n, (uint32_t *)(out->ids + out->n), 1);
        if (k != ZT_BPE_LONG_GAVE_UP) out->n += k;
        else zt_bpe_merge_heap(v, p, n, ZT_BPE_HEAP_CAP(n), out);  // a piece misleading the search
    } else {
        zt_bpe_merge_array(v, p, n, out);
    }
}

// One piece: whole if it is a token (tiktoken's shortcut: it can differ from what the merges
// would reach), else merged.
static inline void encode_piece(const zt_bpe *b, const unsigned char *p, size_t n,
                                zt_bpe_ids *out) {
    if (n == 1) {
        zt_bpe_ids_push(out, b->vocab.byte_id[p[0]]);
        return;
    }
    int32_t id = zt_bpe_vocab_lookup(&b->vocab, p, n);
    if (id >= 0) zt_bpe_ids_push(out, (uint32_t)id);
    else zt_bpe_merge_piece(b, p, n, 0, out);
}

// ---------------------------------------------------------------------------------------------
// UTF-8 and the pre-tokenizer.

// Well-formed sequences (Unicode Table 3-7, what Python's strict decoder accepts).
size_t zt_bpe_utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    if (c < 0xc2 || c > 0xf4) return 0;
    if (c < 0xe0) return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (n < 3) return 0;
    unsigned lo = 0x80, hi = 0xbf;
    if (c < 0xf0) {
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;  // no surrogates
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (n < 4) return 0;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
    return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 && (p[3] & 0xc0) == 0x80 ? 4 : 0;
}

// The end of the valid UTF-8 stretch that starts at p[i] (i itself when p[i] starts none).
static size_t valid_end(const unsigned char *p, size_t n, size_t i) {
    while (i < n) {
        // ASCII eight bytes at a time: most text is mostly ASCII.
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ULL) break;
            i += 8;
        }
        if (i >= n) break;
        size_t k = zt_bpe_utf8_len(p + i, n - i);
        if (!k) break;
        i += k;
    }
    return i;
}

// Pieces of one valid UTF-8 stretch (s, n bytes), encoded and appended. The stretch is the
// whole text to the pattern, so the lookahead (?!\S) sees its end as the end of the text.
static void encode_valid(const zt_bpe *b, const unsigned char *s, size_t n, zt_bpe_ids *out) {
    for (size_t at = 0; at < n;) {
        size_t end = zt_gpt2_piece_end(s, n, at);
        encode_piece(b, s + at, end - at, out);
        at = end;
    }
}

size_t zt_bpe_piece_end(const unsigned char *s, size_t n, size_t at) {
    ZT_ASSERT(at < n);
    return zt_gpt2_piece_end(s, n, at);
}

static void encode_keep(const zt_bpe *b, const unsigned char *p, size_t n, zt_bpe_ids *out) {
    size_t i = 0;
    while (i < n) {
        size_t e = valid_end(p, n, i);
        if (e > i) encode_valid(b, p + i, e - i, out);
        i = e;
        // A run of invalid bytes: one piece.
        while (e < n && zt_bpe_utf8_len(p + e, n - e) == 0) e++;
        if (e > i) encode_piece(b, p + i, e - i, out);
        i = e;
    }
}

void zt_bpe_encode(const zt_bpe *b, const void *text, size_t n, int invalid, zt_bpe_ids *out) {
    ZT_ASSERT(b && out && (text || n == 0));
    ZT_ASSERT(invalid == ZT_BPE_INVALID_KEEP || invalid == ZT_BPE_INVALID_REPLACE);
    const unsigned char *p = text;
    // At most one id per byte: reserved once, so the list never doubles (address space counts
    // under ulimit -v) and a long piece's parts fit in it (zt_bpe_encode_bytes).
    zt_bpe_ids_reserve_exact(out, n);
    if (invalid == ZT_BPE_INVALID_REPLACE && valid_end(p, n, 0) < n) {
        // Each invalid byte becomes U+FFFD (EF BF BD), as tiktoken does with the lone
        // surrogates of a surrogateescape'd str.
        unsigned char *q = malloc(3 * n);
        ZT_ASSERTF(q, "out of memory for %zu bytes of text", 3 * n);
        size_t o = 0;
        for (size_t i = 0; i < n;) {
            size_t e = valid_end(p, n, i);
            memcpy(q + o, p + i, e - i);
            o += e - i;
            i = e;
            if (i < n) {
                memcpy(q + o, "\xef\xbf\xbd", 3);
                o += 3;
                i++;
            }
        }
        zt_bpe_ids_reserve_exact(out, o);
        encode_valid(b, q, o, out);
        free(q);
    } else {
        encode_keep(b, p, n, out);
    }
    zt_bpe_ids_shrink(out);
}

size_t zt_bpe_encode_bytes(size_t n, int invalid) {
    size_t ids = 4 * n, hold = 8 * ZT_BPE_HEAP_CAP(n);
    if (invalid == ZT_BPE_INVALID_REPLACE)  // the text with U+FFFD for each invalid byte
        return 3 * n + 3 * ids + 8 * ZT_BPE_HEAP_CAP(3 * n);
    return ids + hold;
}

// ---------------------------------------------------------------------------------------------
// Decoding.

zt_status zt_bpe_decode(const zt_bpe *b, const int32_t *ids, size_t n, char **text, size_t *len) {
    ZT_ASSERT(b && text && len && (ids || n == 0));
    const zt_bpe_vocab *v = &b->vocab;
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] > v->n_tokens)
            return zt_errorf("token id %d at position %zu is out of range: the vocabulary has ids "
                             "0 .. %d",
                             (int)ids[i], i, v->n_tokens);
        total += zt_bpe_vocab_len(v, (uint32_t)ids[i]);
    }
    char *t = malloc(total + 1);
    ZT_ASSERTF(t, "out of memory decoding %zu tokens", n);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t l = zt_bpe_vocab_len(v, (uint32_t)ids[i]);
        memcpy(t + o, v->pool + v->off[ids[i]], l);
        o += l;
    }
    t[o] = 0;
    *text = t;
    *len = o;
    return ZT_OK;
}

// ---------------------------------------------------------------------------------------------
// Safe cuts for streaming.

static inline int ascii_graph(unsigned char c) { return c >= 0x21 && c <= 0x7e; }
static inline int ascii_kind(unsigned char c) {
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return 1;
    if (c >= '0' && c <= '9') return 2;
    return 3;
}

// Whether the character that ends at p[k-1] (p[0..k) holds it) cannot be white space: an ASCII
// printable, a non-ASCII character outside the pattern's \s, or invalid bytes (a piece of their
// own, or U+FFFD when replaced).
static int ends_non_space(const unsigned char *p, size_t k) {
    unsigned char c = p[k - 1];
    if (c < 0x80) return ascii_graph(c);
    size_t s = k - 1;
    while (s > 0 && k - s < 4 && (p[s] & 0xc0) == 0x80) s--;
    if (zt_bpe_utf8_len(p + s, k - s) != k - s) return 1;  // invalid bytes
    size_t len;
    return zt_uclass_at(p, s, &len) != ZT_UCLASS_SPACE;
}

// Why these cuts are safe: no pattern alternative has a lookbehind, and the only lookahead
// (?!\S) follows white space. Before a '\n' that follows a character X that is not white
// space, X's piece (letters, digits or other symbols: never white space) cannot take the
// '\n', and the '\n' starts a fresh match either way; UTF-8 validity is decided the same on
// both sides since '\n' is a whole character. Between printable ASCII X and Y of different
// kinds, X's run (\p{L}+, \p{N}+ or [^\s\p{L}\p{N}]+) ends at X either way and Y starts a
// fresh match; X = '\'' is excluded because "'s" and friends join it to letters.
size_t zt_bpe_safe_cut(const void *text, size_t n, size_t window) {
    const unsigned char *p = text;
    size_t lo = n > window ? n - window : 0;
    if (lo < 1) lo = 1;
    for (size_t k = n; k-- > lo;)
        if (p[k] == '\n' && ends_non_space(p, k)) return k;
    for (size_t k = n; k-- > lo;)
        if (ascii_graph(p[k - 1]) && ascii_graph(p[k]) && p[k - 1] != '\'' &&
            ascii_kind(p[k - 1]) != ascii_kind(p[k]))
            return k;
    return 0;
}
