// GPT-2 byte-level BPE: the vocabulary file, the merges, encoding (pre-tokenized by pretokenize.h), decoding.
//
// Vocabulary file (tiktoken's format, e.g. gpt2.tiktoken; text, one token per line):
//
//   <base64 of the token's bytes> ' ' <rank in decimal> '\n'
//   IQ== 0                          "!"       rank 0
//   ...
//   IGdhemVk 50255                  " gazed"  rank 50255
//
// Ranks are 0 .. n-1, each once (any order of lines); a token's rank is its id, and the lower
// the rank the earlier the merge. The 256 single bytes must all be tokens (byte-level BPE can
// then encode anything). The end-of-text token is not in the file: it is id n.
//
// Tables, built at load and read-only after:
//   pool (total bytes)  every token's bytes back to back; token t is pool[off[t] .. off[t+1])
//   bytes table         open addressing over the token byte strings: bytes -> id
//   pair table          open addressing over (a, b) -> the id of bytes(a) ++ bytes(b), for
//                       every split of every token into two tokens. A merge step then costs
//                       one integer-keyed probe instead of hashing concatenated bytes.
#include "bpe.h"
#include "bpe_impl.h"
#include "bpe_long.h"
#include "pretokenize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char ZT_BPE_EOT_TEXT[] = "<|endoftext|>";

// Pieces up to this many bytes merge in a flat array (quadratic, cache friendly, like
// tiktoken); longer ones (long whitespace runs, repeated characters) through a heap in
// bounded memory (merge_long).
#define ZT_BPE_ARRAY_MAX 128

#define NO_ID UINT32_MAX

// Keys a long piece's merge holds at most (8 bytes each: 1 byte per byte of the piece).
#define ZT_BPE_HEAP_CAP(n) ((n) / 8 + 64)

struct zt_bpe {
    int n_tokens;              // byte-pair tokens; the end-of-text id is n_tokens
    unsigned char *pool;       // (sum of token lengths + strlen(EOT text))
    uint32_t *off;             // (n_tokens + 2): token t is pool[off[t], off[t+1]), EOT last
    uint32_t *bytes_slots;     // (bytes_mask + 1): id + 1, 0 = empty
    uint64_t bytes_mask;
    uint64_t *pair_keys;       // (pair_mask + 1): a << 32 | b, UINT64_MAX = empty
    uint32_t *pair_vals;       // (pair_mask + 1): merged id
    uint64_t pair_mask;
    uint32_t byte_id[256];     // the id of each single byte
    zt_bpe_long *lng;          // the index for pieces over ZT_BPE_ARRAY_MAX bytes (bpe_long.c)
};

// ---------------------------------------------------------------------------------------------
// Hashing.

static inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

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
    return mix64(h ^ w);
}

static inline uint32_t tok_len(const zt_bpe *b, uint32_t t) { return b->off[t + 1] - b->off[t]; }

int32_t zt_bpe_lookup(const zt_bpe *b, const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    for (uint64_t i = hash_bytes(p, n) & b->bytes_mask;; i = (i + 1) & b->bytes_mask) {
        uint32_t s = b->bytes_slots[i];
        if (s == 0) return -1;
        uint32_t t = s - 1;
        if (tok_len(b, t) == n && memcmp(b->pool + b->off[t], p, n) == 0) return (int32_t)t;
    }
}

static inline uint32_t pair_get(const zt_bpe *b, uint32_t a, uint32_t c) {
    uint64_t key = (uint64_t)a << 32 | c;
    for (uint64_t i = mix64(key) & b->pair_mask;; i = (i + 1) & b->pair_mask) {
        uint64_t k = b->pair_keys[i];
        if (k == key) return b->pair_vals[i];
        if (k == UINT64_MAX) return NO_ID;
    }
}

int32_t zt_bpe_pair(const zt_bpe *b, int32_t a, int32_t c) {
    if (a < 0 || c < 0 || a >= b->n_tokens || c >= b->n_tokens) return -1;
    uint32_t r = pair_get(b, (uint32_t)a, (uint32_t)c);
    return r == NO_ID ? -1 : (int32_t)r;
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
    const zt_bpe *b;
    int rev;
} token_order;

static int cmp_tokens(const void *x, const void *y, void *ctx) {
    const token_order *o = ctx;
    uint32_t s = *(const uint32_t *)x, t = *(const uint32_t *)y;
    size_t ls = tok_len(o->b, s), lt = tok_len(o->b, t), m = ls < lt ? ls : lt;
    const unsigned char *ps = o->b->pool + o->b->off[s], *pt = o->b->pool + o->b->off[t];
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
static int token_affix(const zt_bpe *b, uint32_t u, uint32_t t, int rev) {
    size_t lu = tok_len(b, u), lt = tok_len(b, t);
    return lu < lt && memcmp(b->pool + b->off[u], b->pool + b->off[t] + (rev ? lt - lu : 0), lu) == 0;
}

static void token_parents(const zt_bpe *b, int rev, int32_t *parent) {
    size_t n = (size_t)b->n_tokens, top = 0;
    uint32_t *order = malloc(n * sizeof *order), *stack = malloc(n * sizeof *stack);
    ZT_ASSERT(order && stack);
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    token_order o = {b, rev};
    qsort_r(order, n, sizeof *order, cmp_tokens, &o);
    for (size_t k = 0; k < n; k++) {
        uint32_t t = order[k];
        while (top && !token_affix(b, stack[top - 1], t, rev)) top--;
        parent[t] = top ? (int32_t)stack[top - 1] : -1;
        stack[top++] = t;
    }
    free(order);
    free(stack);
}

// The splits of token id into two tokens (O(its prefix and suffix tokens)): its suffix tokens
// are stamped by where they start, then each prefix token looks up its end. Counts them, and
// enters them into the pair table when fill is set. at and stamp hold the longest token.
static size_t token_splits(zt_bpe *b, const int32_t *pre, const int32_t *suf, int32_t *at,
                           uint32_t *stamp, uint32_t id, int fill) {
    size_t len = tok_len(b, id), found = 0;
    for (int32_t u = suf[id]; u >= 0; u = suf[u]) {
        size_t k = len - tok_len(b, (uint32_t)u);
        at[k] = u;
        stamp[k] = id + 1;
    }
    for (int32_t u = pre[id]; u >= 0; u = pre[u]) {
        size_t k = tok_len(b, (uint32_t)u);
        if (stamp[k] != id + 1) continue;
        found++;
        if (!fill) continue;
        uint64_t key = (uint64_t)(uint32_t)u << 32 | (uint32_t)at[k];
        uint64_t i = mix64(key) & b->pair_mask;
        while (b->pair_keys[i] != UINT64_MAX) i = (i + 1) & b->pair_mask;
        b->pair_keys[i] = key;
        b->pair_vals[i] = id;
    }
    return found;
}

// The pair table: every split of every token into two tokens. Count first, then fill.
static void build_pairs(zt_bpe *b) {
    size_t n = (size_t)b->n_tokens, longest = 1, n_pairs = 0;
    for (size_t id = 0; id < n; id++)
        if (tok_len(b, (uint32_t)id) > longest) longest = tok_len(b, (uint32_t)id);
    int32_t *pre = malloc(n * sizeof *pre), *suf = malloc(n * sizeof *suf);
    int32_t *at = malloc(longest * sizeof *at);
    uint32_t *stamp = calloc(longest, sizeof *stamp);
    ZT_ASSERT(pre && suf && at && stamp);
    token_parents(b, 0, pre);
    token_parents(b, 1, suf);
    for (size_t id = 0; id < n; id++) n_pairs += token_splits(b, pre, suf, at, stamp, (uint32_t)id, 0);
    b->pair_mask = pow2_at_least((uint64_t)n_pairs * 2 + 1) - 1;
    b->pair_keys = malloc((b->pair_mask + 1) * sizeof *b->pair_keys);
    b->pair_vals = malloc((b->pair_mask + 1) * sizeof *b->pair_vals);
    ZT_ASSERT(b->pair_keys && b->pair_vals);
    memset(b->pair_keys, 0xff, (b->pair_mask + 1) * sizeof *b->pair_keys);
    for (size_t id = 0; id < n; id++) token_splits(b, pre, suf, at, stamp, (uint32_t)id, 1);
    free(pre);
    free(suf);
    free(at);
    free(stamp);
}

// From the pool and offsets (n tokens in rank order), builds both hash tables. Errors name
// `what` (the file) for duplicates or missing single bytes.
static zt_status build_tables(zt_bpe *b, const char *what) {
    int n = b->n_tokens;
    b->bytes_mask = pow2_at_least((uint64_t)n * 2) - 1;
    b->bytes_slots = calloc(b->bytes_mask + 1, sizeof *b->bytes_slots);
    ZT_ASSERT(b->bytes_slots);
    for (int t = 0; t < n; t++) {
        const unsigned char *p = b->pool + b->off[t];
        size_t len = tok_len(b, (uint32_t)t);
        if (len == 0) return zt_errorf("vocabulary %s: token %d is empty; the file is corrupt", what, t);
        int32_t dup = zt_bpe_lookup(b, p, len);
        if (dup >= 0)
            return zt_errorf("vocabulary %s: ranks %d and %d have the same bytes; the file is "
                             "corrupt (fetch it again: scripts/fetch_gpt2_vocab.sh)",
                             what, (int)dup, t);
        uint64_t i = hash_bytes(p, len) & b->bytes_mask;
        while (b->bytes_slots[i]) i = (i + 1) & b->bytes_mask;
        b->bytes_slots[i] = (uint32_t)t + 1;
    }
    for (int c = 0; c < 256; c++) {
        unsigned char byte = (unsigned char)c;
        int32_t id = zt_bpe_lookup(b, &byte, 1);
        if (id < 0)
            return zt_errorf("vocabulary %s lacks the single byte 0x%02x as a token, so it cannot "
                             "encode every text: not a byte-level BPE vocabulary such as "
                             "gpt2.tiktoken",
                             what, c);
        b->byte_id[c] = (uint32_t)id;
    }
    build_pairs(b);
    return ZT_OK;
}

// Finishes a tokenizer whose pool holds n tokens and room for the EOT text after them.
static zt_status finish(zt_bpe *b, const char *what) {
    uint32_t end = b->off[b->n_tokens];
    memcpy(b->pool + end, ZT_BPE_EOT_TEXT, sizeof ZT_BPE_EOT_TEXT - 1);
    b->off[b->n_tokens + 1] = end + (uint32_t)(sizeof ZT_BPE_EOT_TEXT - 1);
    ZT_TRY(build_tables(b, what));
    b->lng = zt_bpe_long_init(b);
    return ZT_OK;
}

void zt_bpe_free(zt_bpe *b) {
    if (!b) return;
    free(b->pool);
    free(b->off);
    free(b->bytes_slots);
    free(b->pair_keys);
    free(b->pair_vals);
    zt_bpe_long_free(b->lng);
    free(b);
}

zt_status zt_bpe_from_tokens(zt_bpe **out, const unsigned char *const *tokens, const size_t *lens,
                             int n) {
    *out = NULL;
    zt_bpe *b = calloc(1, sizeof *b);
    ZT_ASSERT(b);
    size_t total = 0;
    for (int t = 0; t < n; t++) total += lens[t];
    b->n_tokens = n;
    b->pool = malloc(total + sizeof ZT_BPE_EOT_TEXT);
    b->off = malloc(((size_t)n + 2) * sizeof *b->off);
    ZT_ASSERT(b->pool && b->off);
    uint32_t o = 0;
    for (int t = 0; t < n; t++) {
        b->off[t] = o;
        memcpy(b->pool + o, tokens[t], lens[t]);
        o += (uint32_t)lens[t];
    }
    b->off[n] = o;
    zt_status s = finish(b, "(in memory)");
    if (s != ZT_OK) {
        zt_bpe_free(b);
        return s;
    }
    *out = b;
    return ZT_OK;
}

// ---------------------------------------------------------------------------------------------
// Loading the file.

static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

// Standard base64 with padding: in (n chars, n % 4 == 0) into out; returns the byte count or
// -1 when malformed.
static long b64_decode(const unsigned char *in, size_t n, unsigned char *out) {
    if (n == 0 || n % 4) return -1;
    long o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            if (in[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad) return -1;  // data after padding
            v[k] = b64_value(in[i + k]);
            if (v[k] < 0) return -1;
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2) out[o++] = (unsigned char)(w >> 8);
        if (pad < 1) out[o++] = (unsigned char)w;
    }
    return o;
}

#define ZT_BPE_FETCH_HINT                                                                    \
    "run scripts/fetch_gpt2_vocab.sh (it extracts gpt2.tiktoken from the openai-whisper "   \
    "package on PyPI and checks its SHA-256) or pass the file with --vocab"

// The whole vocabulary file, with a '\n' past its end (*size bytes before it); the caller
// frees *text.
static zt_status read_vocab_file(const char *path, unsigned char **text, size_t *size) {
    FILE *f = zt_fopen_regular(path);
    if (!f && (errno == EISDIR || errno == EINVAL))
        return zt_errorf("vocabulary file %s is not a regular file; " ZT_BPE_FETCH_HINT, path);
    if (!f)
        return zt_errorf("cannot open vocabulary file %s: %s; " ZT_BPE_FETCH_HINT, path,
                         strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return zt_errorf("cannot read vocabulary file %s: %s", path, strerror(errno));
    }
    *size = (size_t)st.st_size;
    if (*size > ((size_t)1 << 30)) {
        fclose(f);
        return zt_errorf("vocabulary file %s is %zu bytes, too large for a BPE vocabulary (GPT-2's "
                         "is 835 KB); pass gpt2.tiktoken",
                         path, *size);
    }
    *text = malloc(*size + 1);
    ZT_ASSERT(*text);
    size_t got = fread(*text, 1, *size, f);
    fclose(f);
    if (got != *size) {
        free(*text);
        *text = NULL;
        return zt_errorf("cannot read vocabulary file %s: read %zu of %zu bytes", path, got, *size);
    }
    (*text)[*size] = '\n';
    return ZT_OK;
}

// The file's lines in file order: token k's rank, and its bytes at
// bytes[line_off[k] .. line_off[k + 1]), for n tokens. The caller sizes the arrays for the
// most lines the text can hold.
typedef struct {
    int32_t *rank_of_line; // (max lines)
    uint32_t *line_off;    // (max lines + 1)
    unsigned char *bytes;  // (file size + 1) the decoded tokens, back to back
    size_t n;
} vocab_lines;

// A line that is not "<base64 token> <rank>", quoted as printable ASCII (a binary file's bytes
// would reach the terminal).
static zt_status bad_line(const char *path, size_t line, const unsigned char *t, size_t len) {
    char shown[64];
    size_t k = 0;
    for (; k < len && k < 60; k++) shown[k] = t[k] >= 32 && t[k] < 127 ? (char)t[k] : '?';
    shown[k] = 0;
    return zt_errorf("vocabulary file %s line %zu is not \"<base64 token> <rank>\": \"%s\"; "
                     "pass a tiktoken-format file such as gpt2.tiktoken (%s)",
                     path, line, shown, "scripts/fetch_gpt2_vocab.sh fetches it");
}

static zt_status parse_lines(vocab_lines *v, const unsigned char *text, size_t size,
                             const char *path) {
    size_t nb = 0, line = 0;
    v->n = 0;
    for (size_t i = 0; i < size;) {
        line++;
        size_t e = i;
        while (text[e] != '\n') e++;
        size_t end = e;
        if (end > i && text[end - 1] == '\r') end--;
        if (end == i) { // blank line: tiktoken skips them too
            i = e + 1;
            continue;
        }
        size_t sp = i;
        while (sp < end && text[sp] != ' ') sp++;
        long nbytes = sp < end ? b64_decode(text + i, sp - i, v->bytes + nb) : -1;
        char *stop = NULL;
        long rank = -1;
        if (nbytes > 0 && sp + 1 < end && text[sp + 1] >= '0' && text[sp + 1] <= '9') {
            errno = 0;
            rank = strtol((const char *)text + sp + 1, &stop, 10);
            if (errno || (const unsigned char *)stop != text + end) rank = -1;
        }
        if (nbytes <= 0 || rank < 0) return bad_line(path, line, text + i, end - i);
        if (rank >= (long)INT32_MAX / 2)
            return zt_errorf("vocabulary file %s line %zu: rank %ld is out of range", path, line,
                             rank);
        v->rank_of_line[v->n] = (int32_t)rank;
        v->line_off[v->n] = (uint32_t)nb;
        nb += (size_t)nbytes;
        v->n++;
        i = e + 1;
    }
    v->line_off[v->n] = (uint32_t)nb;
    return ZT_OK;
}

// Ranks must be exactly 0 .. n-1: then the id space is dense and the EOT id is n. Fills
// line_of_rank (n entries).
static zt_status order_by_rank(int32_t *line_of_rank, const vocab_lines *v, const char *path) {
    size_t n = v->n;
    for (size_t r = 0; r < n; r++) line_of_rank[r] = -1;
    for (size_t k = 0; k < n; k++) {
        int32_t r = v->rank_of_line[k];
        if ((size_t)r >= n)
            return zt_errorf("vocabulary file %s: rank %d is not below the number of tokens %zu "
                             "(ranks must be 0 .. %zu, each once); the file is corrupt",
                             path, (int)r, n, n - 1);
        if (line_of_rank[r] >= 0)
            return zt_errorf("vocabulary file %s: rank %d appears twice; the file is corrupt",
                             path, (int)r);
        line_of_rank[r] = (int32_t)k;
    }
    return ZT_OK;
}

static zt_status load_checked(zt_bpe *b, const char *path) {
    unsigned char *text = NULL;
    size_t size = 0;
    ZT_TRY(read_vocab_file(path, &text, &size));
    // Lines: at most size/2 tokens (each needs >= 4 base64 chars); the pool is at most 3/4 of
    // the file.
    size_t max_tok = size / 2 + 1;
    vocab_lines v = {malloc(max_tok * sizeof *v.rank_of_line),
                     malloc((max_tok + 1) * sizeof *v.line_off), malloc(size + 1), 0};
    ZT_ASSERT(v.rank_of_line && v.line_off && v.bytes);
    zt_status s = parse_lines(&v, text, size, path);
    free(text);
    size_t n = v.n;
    if (s == ZT_OK && n < 256)
        s = zt_errorf("vocabulary file %s has %zu tokens, fewer than the 256 single bytes of a "
                      "byte-level BPE such as gpt2.tiktoken; " ZT_BPE_FETCH_HINT,
                      path, n);
    int32_t *line_of_rank = s == ZT_OK ? malloc(n * sizeof *line_of_rank) : NULL;
    ZT_ASSERT(s != ZT_OK || line_of_rank);
    if (s == ZT_OK) s = order_by_rank(line_of_rank, &v, path);
    if (s == ZT_OK) {
        b->n_tokens = (int)n;
        b->pool = malloc(v.line_off[n] + sizeof ZT_BPE_EOT_TEXT);
        b->off = malloc((n + 2) * sizeof *b->off);
        ZT_ASSERT(b->pool && b->off);
        uint32_t o = 0;
        for (size_t r = 0; r < n; r++) {
            size_t k = (size_t)line_of_rank[r];
            uint32_t len = v.line_off[k + 1] - v.line_off[k];
            b->off[r] = o;
            memcpy(b->pool + o, v.bytes + v.line_off[k], len);
            o += len;
        }
        b->off[n] = o;
        s = finish(b, path);
    }
    free(line_of_rank);
    free(v.rank_of_line);
    free(v.line_off);
    free(v.bytes);
    return s;
}

zt_status zt_bpe_load(zt_bpe **out, const char *path) {
    ZT_ASSERT(out && path);
    *out = NULL;
    zt_bpe *b = calloc(1, sizeof *b);
    ZT_ASSERT(b);
    zt_status s = load_checked(b, path);
    if (s != ZT_OK) {
        zt_bpe_free(b);
        return s;
    }
    *out = b;
    return ZT_OK;
}

void zt_bpe_default_vocab(char *buf, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0]) snprintf(buf, cap, "%s/zerotrain/gpt2.tiktoken", xdg);
    else snprintf(buf, cap, "%s/.cache/zerotrain/gpt2.tiktoken", home && home[0] ? home : ".");
}

int zt_bpe_vocab_size(const zt_bpe *b) { return b->n_tokens + 1; }
int zt_bpe_eot(const zt_bpe *b) { return b->n_tokens; }

// ---------------------------------------------------------------------------------------------
// Ids.

void zt_bpe_ids_free(zt_bpe_ids *ids) {
    if (!ids) return;
    free(ids->ids);
    memset(ids, 0, sizeof *ids);
}

static void ids_reserve(zt_bpe_ids *o, size_t more) {
    if (o->n + more <= o->cap) return;
    size_t cap = o->cap ? o->cap : 256;
    while (cap < o->n + more) cap *= 2;
    o->ids = realloc(o->ids, cap * sizeof *o->ids);
    ZT_ASSERTF(o->ids, "out of memory for %zu token ids", cap);
    o->cap = cap;
}

// Room for exactly `more` ids: a long piece's parts take n of them, and doubling would
// reserve up to 4n bytes more (address space counts under ulimit -v).
static void ids_reserve_exact(zt_bpe_ids *o, size_t more) {
    if (o->n + more <= o->cap) return;
    o->ids = realloc(o->ids, (o->n + more) * sizeof *o->ids);
    ZT_ASSERTF(o->ids, "out of memory for %zu token ids", o->n + more);
    o->cap = o->n + more;
}

// Gives back what encoding reserved beyond the ids (a long piece's parts too): the list may
// live on (prepare keeps one per chunk).
static void ids_shrink(zt_bpe_ids *o) {
    size_t cap = o->n > 256 ? o->n : 256;
    if (o->cap < cap + ((size_t)1 << 22)) return;  // a chunk's worth: keep it for the next
    int32_t *p = realloc(o->ids, cap * sizeof *o->ids);
    if (!p) return;  // keeping the larger block is fine
    o->ids = p;
    o->cap = cap;
}

static inline void ids_push(zt_bpe_ids *o, uint32_t id) {
    if (o->n == o->cap) ids_reserve(o, 1);
    o->ids[o->n++] = (int32_t)id;
}

// ---------------------------------------------------------------------------------------------
// Merges.

// Pieces up to ZT_BPE_ARRAY_MAX bytes: parts and the rank of each adjacent pair in two arrays;
// each step takes the leftmost lowest rank, merges, and re-ranks the two neighbours.
static void merge_array(const zt_bpe *b, const unsigned char *p, size_t n, zt_bpe_ids *out) {
    uint32_t part[ZT_BPE_ARRAY_MAX], rank[ZT_BPE_ARRAY_MAX];  // rank[i]: parts i and i+1
    for (size_t i = 0; i < n; i++) part[i] = b->byte_id[p[i]];
    for (size_t i = 0; i + 1 < n; i++) rank[i] = pair_get(b, part[i], part[i + 1]);
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
        if (at > 0) rank[at - 1] = pair_get(b, part[at - 1], part[at]);
        if (at + 1 < n) rank[at] = pair_get(b, part[at], part[at + 1]);
    }
    ids_reserve(out, n);
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
    const zt_bpe *b;
    uint32_t *a;     // (n) the parts
    size_t n;
    uint64_t *k;     // (cap): the heap at k[0 .. hn), the sorted run at k[qi .. cap)
    size_t hn, qi, cap;
    uint64_t limit;  // every valid pair with a key below it is held
} long_merge;

// The rank of the pair whose left part starts at s (a part start), or NO_ID.
static inline uint32_t pair_at(const long_merge *m, size_t s) {
    uint32_t left = PART_ID(m->a[s]);
    size_t nx = s + tok_len(m->b, left);
    return nx < m->n ? pair_get(m->b, left, PART_ID(m->a[nx])) : NO_ID;
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
    for (size_t s = 0; s < m->n; s += tok_len(m->b, PART_ID(m->a[s]))) {
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
    const zt_bpe *b = m->b;
    uint32_t r = (uint32_t)(top >> 32);
    size_t s = (uint32_t)top, nx = s + tok_len(b, PART_ID(m->a[s])), end = s + tok_len(b, r);
    m->a[nx] &= ~PART_START;  // the right part's start is inside the merged part now
    m->a[end - 1] = r;
    m->a[s] = PART_START | r;
    if (s > 0) {
        uint32_t left = PART_ID(m->a[s - 1]);
        lm_push(m, pair_get(b, left, r), s - tok_len(b, left));
    }
    if (end < m->n) lm_push(m, pair_get(b, r, PART_ID(m->a[end])), s);
}

// heap_cap: how many keys may be held (ZT_BPE_HEAP_CAP(n) when encoding; tests pass tiny
// ones to exercise the rescans and trims).
static void merge_long(const zt_bpe *b, const unsigned char *p, size_t n, size_t heap_cap,
                       zt_bpe_ids *out) {
    // Positions are the low 32 bits of a key.
    ZT_ASSERTF(n <= UINT32_MAX, "a %zu-byte piece is over the 4 GiB a piece may have", n);
    ZT_ASSERT(heap_cap >= 2);  // a load keeps cap - 1 - cap / 4 >= 1 keys
    ids_reserve_exact(out, n);
    long_merge m = {b, (uint32_t *)(out->ids + out->n), n, NULL, 0, heap_cap, heap_cap, 0};
    m.k = malloc(m.cap * sizeof *m.k);
    ZT_ASSERTF(m.k, "out of memory merging a %zu-byte piece", n);
    for (size_t i = 0; i < n; i++) m.a[i] = PART_START | b->byte_id[p[i]];
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
    for (size_t i = 0; i < n; i += tok_len(b, PART_ID(m.a[i]))) m.a[k++] = PART_ID(m.a[i]);
    out->n += k;
}

void zt_bpe_merge_piece(const zt_bpe *b, const unsigned char *p, size_t n, size_t heap_cap,
                        zt_bpe_ids *out) {
    if (n == 0) return;
    if (heap_cap) {
        merge_long(b, p, n, heap_cap, out);
    } else if (n > ZT_BPE_ARRAY_MAX) {  // linear time, the ids on a stack in out (bpe_long.c)
        ids_reserve_exact(out, n);
        size_t k = zt_bpe_long_merge(b, b->lng, p, n, (uint32_t *)(out->ids + out->n), 1);
        if (k != ZT_BPE_LONG_GAVE_UP) out->n += k;
        else merge_long(b, p, n, ZT_BPE_HEAP_CAP(n), out); // a piece misleading the search
    } else {
        merge_array(b, p, n, out);
    }
}

// One piece: whole if it is a token (tiktoken's shortcut: it can differ from what the merges
// would reach), else merged.
static inline void encode_piece(const zt_bpe *b, const unsigned char *p, size_t n,
                                zt_bpe_ids *out) {
    if (n == 1) {
        ids_push(out, b->byte_id[p[0]]);
        return;
    }
    int32_t id = zt_bpe_lookup(b, p, n);
    if (id >= 0) ids_push(out, (uint32_t)id);
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
    ids_reserve_exact(out, n);
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
        ids_reserve_exact(out, o);
        encode_valid(b, q, o, out);
        free(q);
    } else {
        encode_keep(b, p, n, out);
    }
    ids_shrink(out);
}

size_t zt_bpe_encode_bytes(size_t n, int invalid) {
    size_t ids = 4 * n, hold = 8 * ZT_BPE_HEAP_CAP(n);
    if (invalid == ZT_BPE_INVALID_REPLACE)  // the text with U+FFFD for each invalid byte
        return 3 * n + 3 * ids + 8 * ZT_BPE_HEAP_CAP(3 * n);
    return ids + hold;
}

// ---------------------------------------------------------------------------------------------
// Decoding.

const unsigned char *zt_bpe_token_bytes(const zt_bpe *b, int32_t id, size_t *len) {
    if (id < 0 || id > b->n_tokens) return NULL;
    *len = tok_len(b, (uint32_t)id);
    return b->pool + b->off[id];
}

zt_status zt_bpe_decode(const zt_bpe *b, const int32_t *ids, size_t n, char **text, size_t *len) {
    ZT_ASSERT(b && text && len && (ids || n == 0));
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] > b->n_tokens)
            return zt_errorf("token id %d at position %zu is out of range: the vocabulary has ids "
                             "0 .. %d",
                             (int)ids[i], i, b->n_tokens);
        total += tok_len(b, (uint32_t)ids[i]);
    }
    char *t = malloc(total + 1);
    ZT_ASSERTF(t, "out of memory decoding %zu tokens", n);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t l = tok_len(b, (uint32_t)ids[i]);
        memcpy(t + o, b->pool + b->off[ids[i]], l);
        o += l;
    }
    t[o] = 0;
    *text = t;
    *len = o;
    return ZT_OK;
}

int zt_bpe_merge_of(const zt_bpe *b, int32_t id, int32_t *left, int32_t *right) {
    if (id < 0 || id >= b->n_tokens) return 0;
    size_t n = tok_len(b, (uint32_t)id);
    if (n < 2) return 0;
    const unsigned char *p = b->pool + b->off[id];
    uint32_t *part = malloc(n * sizeof *part);
    ZT_ASSERT(part);
    for (size_t i = 0; i < n; i++) part[i] = b->byte_id[p[i]];
    // merge_array's rule (the leftmost lowest rank), stopping before rank id: a merge of
    // rank >= id did not exist yet when token id was made
    while (n > 2) {
        uint32_t best = NO_ID;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            uint32_t r = pair_get(b, part[i], part[i + 1]);
            if (r < best) {
                best = r;
                at = i;
            }
        }
        if (best >= (uint32_t)id) break;  // NO_ID too
        part[at] = best;
        memmove(part + at + 1, part + at + 2, (n - at - 2) * sizeof *part);
        n--;
    }
    int ok = n == 2 && pair_get(b, part[0], part[1]) == (uint32_t)id;
    if (ok) {
        *left = (int32_t)part[0];
        *right = (int32_t)part[1];
    }
    free(part);
    return ok;
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
