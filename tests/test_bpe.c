// Tests of the GPT-2 BPE pieces: the hash tables, merges on a tiny hand-made vocabulary (array
// and heap loops agree), decode, UTF-8 validity, safe cuts, vocabulary file errors, the merge
// that made each token (tiny and GPT-2's), and a decode(encode(x)) == x round trip with the
// real vocabulary when it is installed; the pre-tokenizer's Unicode classes on tricky code points
// (and tiktoken's ids around them).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpe.h"
#include "bpe_impl.h"
#include "bpe_long.h"
#include "bpe_merge.h"
#include "test.h"

// 256 single bytes (id = byte), then "ab" 256, "cd" 257, "abcd" 258, "aa" 259, "xyz" 260.
static zt_bpe *tiny(void) {
    static unsigned char bytes[256];
    const unsigned char *tok[261];
    size_t len[261];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (unsigned char)i;
        tok[i] = bytes + i;
        len[i] = 1;
    }
    const char *extra[] = {"ab", "cd", "abcd", "aa", "xyz"};
    for (int i = 0; i < 5; i++) {
        tok[256 + i] = (const unsigned char *)extra[i];
        len[256 + i] = strlen(extra[i]);
    }
    zt_bpe *b = NULL;
    if (zt_bpe_from_tokens(&b, tok, len, 261) != ZT_OK) {
        fprintf(stderr, "tiny vocabulary: %s\n", zt_error_message());
        return NULL;
    }
    return b;
}

static int ids_are(const zt_bpe_ids *got, const int32_t *want, size_t n) {
    int ok = got->n == n;
    for (size_t i = 0; ok && i < n; i++) ok = got->ids[i] == want[i];
    if (!ok) {
        size_t at = 0;  // the first difference, shown with what follows
        while (at < got->n && at < n && got->ids[at] == want[at]) at++;
        fprintf(stderr, "  got %zu ids, want %zu; from id %zu on:\n  got: ", got->n, n, at);
        for (size_t i = at; i < got->n && i < at + 24; i++) fprintf(stderr, " %d", got->ids[i]);
        fprintf(stderr, "\n  want:");
        for (size_t i = at; i < n && i < at + 24; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n");
    }
    return ok;
}

ZT_TEST(bpe_hash_tables) {
    zt_bpe *b = tiny();
    CHECK(b);
    CHECK_EQ_INT(zt_bpe_vocab_lookup(&b->vocab, "abcd", 4), 258);
    CHECK_EQ_INT(zt_bpe_vocab_lookup(&b->vocab, "xyz", 3), 260);
    CHECK_EQ_INT(zt_bpe_vocab_lookup(&b->vocab, "\xff", 1), 255);
    CHECK_EQ_INT(zt_bpe_vocab_lookup(&b->vocab, "abc", 3), -1);
    CHECK_EQ_INT(zt_bpe_vocab_lookup(&b->vocab, "", 0), -1);
    CHECK_EQ_INT(zt_bpe_vocab_pair(&b->vocab, 'a', 'b'), 256);
    CHECK_EQ_INT(zt_bpe_vocab_pair(&b->vocab, 256, 257), 258);  // "ab" + "cd"
    CHECK_EQ_INT(zt_bpe_vocab_pair(&b->vocab, 'x', 'y'), -1);   // "xy" is not a token
    CHECK_EQ_INT(zt_bpe_vocab_pair(&b->vocab, 'b', 'a'), -1);
    CHECK_EQ_INT(zt_bpe_vocab_size(b), 262);
    CHECK_EQ_INT(zt_bpe_eot(b), 261);
    zt_bpe_free(b);
    return ZT_PASS;
}

ZT_TEST(bpe_merges_tiny) {
    zt_bpe *b = tiny();
    CHECK(b);
    struct { const char *text; int32_t ids[8]; size_t n; } cases[] = {
        {"abcdab", {258, 256}, 2},         // ab, ab, cd by rank, then ab+cd
        {"aaaa", {259, 259}, 2},           // equal ranks: the leftmost first
        {"aaa", {259, 'a'}, 2},
        {"xyz", {260}, 1},                 // whole piece is a token: taken directly
        {" xyz", {' ', 'x', 'y', 'z'}, 4}, // no pair of it is a token: bytes
        {"ab cd", {256, ' ', 257}, 3},     // pieces "ab", " cd"; " c" is no token, "cd" is
        {"abab's", {256, 256, '\'', 's'}, 4},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        zt_bpe_ids ids = {0};
        zt_bpe_encode(b, cases[c].text, strlen(cases[c].text), ZT_BPE_INVALID_KEEP, &ids);
        if (!ids_are(&ids, cases[c].ids, cases[c].n)) {
            fprintf(stderr, "  text \"%s\"\n", cases[c].text);
            return ZT_FAIL;
        }
        zt_bpe_ids_free(&ids);
    }
    // " cd" merges to ' ' + 257 inside the piece.
    zt_bpe_ids ids = {0};
    zt_bpe_merge_piece(b, (const unsigned char *)" cd", 3, 0, &ids);
    int32_t want[] = {' ', 257};
    CHECK(ids_are(&ids, want, 2));
    zt_bpe_ids_free(&ids);
    zt_bpe_free(b);
    return ZT_PASS;
}

// tiktoken's byte_pair_merge spelled out (quadratic): merge the pair of lowest rank, the
// leftmost of equals, until none is a token. The reference for both loops of bpe.c.
static void merge_reference(const zt_bpe *b, const unsigned char *p, size_t n, zt_bpe_ids *out) {
    int32_t *part = malloc(n * sizeof *part);
    for (size_t i = 0; i < n; i++) part[i] = zt_bpe_vocab_lookup(&b->vocab, p + i, 1);
    for (;;) {
        int32_t best = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            int32_t r = zt_bpe_vocab_pair(&b->vocab, part[i], part[i + 1]);
            if (r >= 0 && (best < 0 || r < best)) {
                best = r;
                at = i;
            }
        }
        if (best < 0) break;
        part[at] = best;
        memmove(part + at + 1, part + at + 2, (n - at - 2) * sizeof *part);
        n--;
    }
    out->ids = part;
    out->n = out->cap = n;
}

// The array loop (short pieces) and the long-piece loop, with its default hold of candidate
// pairs and with tiny ones (a hold of 2 to 5 rescans the parts after nearly every merge and
// trims on nearly every push), must all merge as the reference does.
static int loops_agree(const zt_bpe *b, const unsigned char *p, size_t n) {
    zt_bpe_ids want = {0};
    merge_reference(b, p, n, &want);
    static const size_t caps[] = {0, 2, 3, 5, 17, 1000};
    int ok = 1;
    for (size_t c = 0; ok && c < sizeof caps / sizeof caps[0]; c++) {
        zt_bpe_ids got = {0};
        zt_bpe_merge_piece(b, p, n, caps[c], &got);
        ok = ids_are(&got, want.ids, want.n);
        if (!ok) fprintf(stderr, "  hold %zu (0: default), piece of %zu bytes\n", caps[c], n);
        zt_bpe_ids_free(&got);
    }
    zt_bpe_ids_free(&want);
    return ok;
}

// 256 single bytes, then `extra` random strings over "abcd" of 2 to 6 bytes in random order:
// unlike GPT-2's, a token may rank below the tokens it is made of, so a merge often makes a
// pair that ranks below everything pending (the long-piece loop must then push it under its
// limit, trim when full, and still take the smallest first).
static zt_bpe *scrambled(unsigned seed, int extra) {
    static unsigned char store[256 + 400][6];
    const unsigned char *tok[256 + 400];
    size_t len[256 + 400];
    int n = 0;
    for (; n < 256; n++) {
        store[n][0] = (unsigned char)n;
        tok[n] = store[n];
        len[n] = 1;
    }
    while (n < 256 + extra) {
        len[n] = 2 + (size_t)(rand_r(&seed) % 5);
        for (size_t i = 0; i < len[n]; i++) store[n][i] = (unsigned char)"abcd"[rand_r(&seed) % 4];
        tok[n] = store[n];
        int dup = 0;
        for (int j = 256; j < n; j++) dup |= len[j] == len[n] && memcmp(store[j], store[n], len[n]) == 0;
        if (!dup) n++;
    }
    zt_bpe *b = NULL;
    if (zt_bpe_from_tokens(&b, tok, len, n) != ZT_OK) return NULL;
    return b;
}

ZT_TEST(bpe_heap_matches_array) {
    unsigned seed = 14;
    unsigned char buf[400];
    for (int v = 0; v < 2; v++) {
        zt_bpe *b = v == 0 ? tiny() : scrambled(3, 400);
        CHECK(b);
        for (int trial = 0; trial < 1500; trial++) {
            size_t n = 1 + (size_t)(rand_r(&seed) % (trial % 2 ? 128 : 400));
            for (size_t i = 0; i < n; i++) buf[i] = (v ? "abcd" : "abcdxyz")[rand_r(&seed) % (v ? 4 : 7)];
            CHECK(loops_agree(b, buf, n));
        }
        zt_bpe_free(b);
    }
    return ZT_PASS;
}

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

// The long-piece loop's sort and selection against qsort, on the patterns that break naive
// quicksorts (sorted, reversed, all equal, organ pipe, few distinct, random), with the
// heapsort fallback forced too.
ZT_TEST(bpe_sort_select) {
    unsigned seed = 8;
    static uint64_t k[3000], want[3000];
    for (int trial = 0; trial < 600; trial++) {
        size_t n = trial < 40 ? (size_t)trial : (size_t)(rand_r(&seed) % 3000);
        int pattern = trial % 6;
        for (size_t i = 0; i < n; i++) {
            uint64_t v = (uint64_t)rand_r(&seed) << 20 ^ (uint64_t)rand_r(&seed);
            if (pattern == 1) v = i;
            if (pattern == 2) v = n - i;
            if (pattern == 3) v = 7;
            if (pattern == 4) v = i < n / 2 ? i : n - i;
            if (pattern == 5) v %= 5;
            k[i] = want[i] = v;
        }
        qsort(want, n, sizeof *want, cmp_u64);
        zt_bpe_sort_keys(k, n, trial % 3 == 0 ? 0 : 64);
        CHECK(memcmp(k, want, n * sizeof *k) == 0);
        if (n == 0) continue;
        for (size_t i = 0; i < n; i++) k[n - 1 - i] = want[(i * 7919) % n];  // shuffled
        size_t nth = (size_t)rand_r(&seed) % n;
        zt_bpe_select_keys(k, n, nth);
        CHECK(k[nth] == want[nth]);
        for (size_t i = 0; i < n; i++) CHECK(i < nth ? k[i] <= k[nth] : k[i] >= k[nth]);
    }
    return ZT_PASS;
}

ZT_TEST(bpe_decode) {
    zt_bpe *b = tiny();
    CHECK(b);
    int32_t ids[] = {258, ' ', 260, 261, 0xff};
    char *text;
    size_t len;
    CHECK(zt_bpe_decode(b, ids, 5, &text, &len) == ZT_OK);
    CHECK_EQ_INT(len, 4 + 1 + 3 + 13 + 1);
    CHECK(memcmp(text, "abcd xyz<|endoftext|>\xff", len) == 0);
    free(text);
    size_t tl;
    const unsigned char *t = zt_bpe_token_bytes(b, 259, &tl);
    CHECK(t && tl == 2 && memcmp(t, "aa", 2) == 0);
    CHECK(zt_bpe_token_bytes(b, 262, &tl) == NULL);
    CHECK(zt_bpe_token_bytes(b, -1, &tl) == NULL);
    int32_t bad[] = {1, 2, 262};
    CHECK(zt_bpe_decode(b, bad, 3, &text, &len) == ZT_ERR);
    CHECK(text == NULL);
    CHECK(strstr(zt_error_message(), "262") && strstr(zt_error_message(), "position 2"));
    zt_bpe_free(b);
    return ZT_PASS;
}

ZT_TEST(bpe_utf8_validity) {
    struct { const char *s; size_t n, want; } c[] = {
        {"a", 1, 1},          {"\xc3\xa9", 2, 2},         {"\xc3", 1, 0},
        {"\xc0\xaf", 2, 0},   {"\xc1\xbf", 2, 0},         {"\xe2\x82\xac", 3, 3},
        {"\xe2\x82", 2, 0},   {"\xe0\x9f\xbf", 3, 0},     {"\xed\xa0\x80", 3, 0},  // surrogate
        {"\xed\x9f\xbf", 3, 3}, {"\xf0\x9f\x98\x80", 4, 4}, {"\xf0\x8f\xbf\xbf", 4, 0},
        {"\xf4\x8f\xbf\xbf", 4, 4}, {"\xf4\x90\x80\x80", 4, 0}, {"\xf5\x80\x80\x80", 4, 0},
        {"\x80", 1, 0},       {"\xff", 1, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        CHECK_EQ_INT(zt_bpe_utf8_len((const unsigned char *)c[i].s, c[i].n), c[i].want);
    return ZT_PASS;
}

// Encoding the two sides of every safe cut gives the ids of the whole text.
ZT_TEST(bpe_safe_cuts) {
    zt_bpe *b = tiny();
    CHECK(b);
    const char *alphabet[] = {"a", "b", "c", "d", "1", "2", " ", "  ", "\n", "\n\n", "'", "'s",
                              ".", "\t", "\xc3\xa9", "\xe2\x80\x83", "\xc2\xa0", "\xff", "\xe2\x82",
                              "\xf0\x9f\x99\x82", "x", "z"};
    size_t na = sizeof alphabet / sizeof alphabet[0];
    unsigned seed = 7;
    char text[512];
    int cuts = 0;
    for (int trial = 0; trial < 3000; trial++) {
        size_t n = 0;
        while (n < 400) {
            const char *a = alphabet[rand_r(&seed) % na];
            memcpy(text + n, a, strlen(a));
            n += strlen(a);
        }
        for (int mode = 0; mode < 2; mode++) {
            zt_bpe_ids whole = {0}, parts = {0};
            zt_bpe_encode(b, text, n, mode, &whole);
            size_t k = zt_bpe_safe_cut(text, 1 + (size_t)(rand_r(&seed) % (n - 1)), n);
            if (k == 0) continue;
            CHECK(k > 0 && k < n);
            cuts++;
            zt_bpe_encode(b, text, k, mode, &parts);
            zt_bpe_encode(b, text + k, n - k, mode, &parts);
            if (!ids_are(&parts, whole.ids, whole.n)) {
                fprintf(stderr, "  cut at %zu of %zu, mode %d\n", k, n, mode);
                return ZT_FAIL;
            }
            zt_bpe_ids_free(&whole);
            zt_bpe_ids_free(&parts);
        }
    }
    CHECK(cuts > 1000);
    zt_bpe_free(b);
    return ZT_PASS;
}

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

// A valid tiny vocabulary file: the 256 bytes in base64, ranks 0..255, then `extra` lines.
static int write_vocab(const char *path, const char *extra) {
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    for (int c = 0; c < 256; c++)
        fprintf(f, "%c%c== %d\n", b64[c >> 2], b64[(c & 3) << 4], c);
    fputs(extra, f);
    return fclose(f) == 0;
}

static int load_fails(const char *path, const char *w1, const char *w2) {
    zt_bpe *b = (zt_bpe *)1;
    if (zt_bpe_load(&b, path) != ZT_ERR || b != NULL) {
        fprintf(stderr, "  loading %s did not fail cleanly\n", path);
        return 0;
    }
    const char *m = zt_error_message();
    if (!strstr(m, path) || !strstr(m, w1) || (w2 && !strstr(m, w2))) {
        fprintf(stderr, "  message lacks the path, \"%s\" or \"%s\": %s\n", w1, w2 ? w2 : "", m);
        return 0;
    }
    return 1;
}

ZT_TEST(bpe_vocab_errors) {
    char path[] = "/tmp/zt_test_bpe_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(write_vocab(path, "YWI= 256\n"));  // "ab"
    zt_bpe *b = NULL;
    CHECK(zt_bpe_load(&b, path) == ZT_OK);
    CHECK_EQ_INT(zt_bpe_vocab_size(b), 258);
    zt_bpe_ids ids = {0};
    zt_bpe_encode(b, "abab", 4, 0, &ids);
    int32_t want[] = {256, 256};
    CHECK(ids_are(&ids, want, 2));
    zt_bpe_ids_free(&ids);
    zt_bpe_free(b);

    CHECK(load_fails("/nonexistent/gpt2.tiktoken", "fetch_gpt2_vocab.sh", "--vocab"));
    CHECK(write_vocab(path, "YWI= 256\nnot base64! 257\n"));
    CHECK(load_fails(path, "line 258", "<base64 token> <rank>"));
    CHECK(write_vocab(path, "YWI= x\n"));
    CHECK(load_fails(path, "line 257", NULL));
    CHECK(write_vocab(path, "YWI= 256\nYWI= 257\n"));
    CHECK(load_fails(path, "same bytes", NULL));
    CHECK(write_vocab(path, "YWI= 255\n"));
    CHECK(load_fails(path, "rank 255 appears twice", NULL));
    CHECK(write_vocab(path, "YWI= 300\n"));
    CHECK(load_fails(path, "rank 300", NULL));
    CHECK(write_file(path, "YWI= 0\nYQ== 1\n"));
    CHECK(load_fails(path, "fewer than the 256", NULL));
    CHECK(write_file(path, "{\"!\": 0, \"\\\"\": 1}\n"));  // encoder.json is not this format
    CHECK(load_fails(path, "line 1", NULL));
    unlink(path);
    return ZT_PASS;
}

// One "<base64 of p> <rank>" line of a tiktoken file.
static void put_token(FILE *f, const unsigned char *p, size_t n, int rank) {
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {b64[w >> 18], b64[(w >> 12) & 63], i + 1 < n ? b64[(w >> 6) & 63] : '=',
                     i + 2 < n ? b64[w & 63] : '='};
        fwrite(q, 1, 4, f);
    }
    fprintf(f, " %d\n", rank);
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// A vocabulary file with long tokens loads in linear time (finding every split of a token into
// two tokens by hashing both halves was quadratic: these four took 13 s of CPU, a 1 MB token
// minutes), and its pair table is right: for every two short tokens, the pair is the token of
// their concatenation, and the long tokens' splits are there.
ZT_TEST(bpe_long_token_vocab) {
    enum { H = 50000, N_SHORT = 120 };
    char path[] = "/tmp/zt_test_bpe_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    CHECK(f);
    unsigned char *big = malloc(2 * H);
    CHECK(big);
    int rank = 0;
    for (int c = 0; c < 256; c++, rank++) put_token(f, (unsigned char[]){(unsigned char)c}, 1, rank);
    // Short tokens over "abc" (the duplicates of earlier ones are left out).
    unsigned seed = 5;
    unsigned char s[N_SHORT][8];
    size_t sl[N_SHORT];
    for (int i = 0; i < N_SHORT; i++) {
        sl[i] = 2 + (size_t)(rand_r(&seed) % 6);
        for (size_t k = 0; k < sl[i]; k++) s[i][k] = (unsigned char)"abc"[rand_r(&seed) % 3];
        int dup = 0;
        for (int j = 0; j < i; j++) dup |= sl[j] == sl[i] && memcmp(s[j], s[i], sl[i]) == 0;
        if (dup) sl[i] = 0;
        else put_token(f, s[i], sl[i], rank++);
    }
    // A = a^H, B = b^H, then A + B and A + A.
    int id_a = rank, id_b = rank + 1, id_ab = rank + 2, id_aa = rank + 3;
    memset(big, 'a', H);
    memset(big + H, 'b', H);
    put_token(f, big, H, rank++);
    put_token(f, big + H, H, rank++);
    put_token(f, big, 2 * H, rank++);
    memset(big + H, 'a', H);
    put_token(f, big, 2 * H, rank++);
    CHECK(fclose(f) == 0);
    zt_bpe *b = NULL;
    double t0 = seconds_now();
    zt_status st = zt_bpe_load(&b, path);
    double dt = seconds_now() - t0;
    unlink(path);
    CHECK(st == ZT_OK);
    if (dt >= 1.0) fprintf(stderr, "  %d tokens, two of %d bytes, took %.1f s to load\n", rank, 2 * H, dt);
    CHECK(dt < 1.0);
    CHECK_EQ_INT(zt_bpe_vocab_pair(&b->vocab, id_a, id_b), id_ab);
    CHECK_EQ_INT(zt_bpe_vocab_pair(&b->vocab, id_a, id_a), id_aa);
    CHECK_EQ_INT(zt_bpe_vocab_pair(&b->vocab, id_b, id_a), -1);
    CHECK_EQ_INT(zt_bpe_vocab_lookup(&b->vocab, big, 2 * H), id_aa);
    // Every two short tokens (and single bytes of "abc"): pair == lookup of the concatenation.
    for (int i = -3; i < N_SHORT; i++)
        for (int j = -3; j < N_SHORT; j++) {
            const unsigned char *pi = i < 0 ? (const unsigned char *)"abc" + i + 3 : s[i];
            const unsigned char *pj = j < 0 ? (const unsigned char *)"abc" + j + 3 : s[j];
            size_t li = i < 0 ? 1 : sl[i], lj = j < 0 ? 1 : sl[j];
            if (!li || !lj) continue;
            unsigned char cat[16];
            memcpy(cat, pi, li);
            memcpy(cat + li, pj, lj);
            int32_t want = zt_bpe_vocab_lookup(&b->vocab, cat, li + lj);
            CHECK_EQ_INT(zt_bpe_vocab_pair(&b->vocab, zt_bpe_vocab_lookup(&b->vocab, pi, li), zt_bpe_vocab_lookup(&b->vocab, pj, lj)), want);
        }
    free(big);
    zt_bpe_free(b);
    return ZT_PASS;
}

// The installed GPT-2 vocabulary into *b: ZT_PASS, ZT_SKIP when it is absent, ZT_FAIL when
// it does not load.
static int load_gpt2(zt_bpe **b) {
    char vocab[1024];
    zt_bpe_default_vocab(vocab, sizeof vocab);
    if (access(vocab, R_OK) != 0) {
        fprintf(stderr, "SKIP: %s absent (scripts/fetch_gpt2_vocab.sh)\n", vocab);
        return ZT_SKIP;
    }
    if (zt_bpe_load(b, vocab) != ZT_OK) {
        fprintf(stderr, "%s\n", zt_error_message());
        return ZT_FAIL;
    }
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------------
// The pre-tokenizer's character classes: GPT-2's pattern is defined by tiktoken's regex engine
// (Rust's regex crate: \s is Unicode White_Space, \p{L} and \p{N} the general categories, of
// Unicode 16.0.0; docs/tokenizer.md). These code points are where other engines or other
// Unicode versions differ: PCRE2 takes U+180E for space, Python's \s takes U+001C..U+001F,
// marks (Mn, Mc, Me) are not letters, Nl and No are numbers, and letters new in Unicode 15.0,
// 15.1 and 16.0 are letters while those of 17.0 are not yet. tests/sh/bpe_unicode_sweep.sh
// checks every code point against tiktoken itself where it is installed.

// Appends code point c to s as UTF-8; returns the new length.
static size_t put_utf8(unsigned char *s, size_t n, uint32_t c) {
    if (c < 0x80) {
        s[n++] = (unsigned char)c;
    } else if (c < 0x800) {
        s[n++] = (unsigned char)(0xc0 | c >> 6);
        s[n++] = (unsigned char)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        s[n++] = (unsigned char)(0xe0 | c >> 12);
        s[n++] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
        s[n++] = (unsigned char)(0x80 | (c & 0x3f));
    } else {
        s[n++] = (unsigned char)(0xf0 | c >> 18);
        s[n++] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
        s[n++] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
        s[n++] = (unsigned char)(0x80 | (c & 0x3f));
    }
    return n;
}

// The class the pattern gives c, read from its pieces: c between two letters is one piece
// only if c is a letter ('L'), between digits only if a number ('N'), between '!' only if
// neither nor white space ('O'), between tabs only if white space ('S'). '?' when not exactly
// one of the four is a single piece.
static char piece_class(uint32_t c) {
    const char around[] = "a1!\t", name[] = "LNOS";
    char got = '?';
    for (int k = 0; k < 4; k++) {
        unsigned char s[8];
        size_t n = 0;
        s[n++] = (unsigned char)around[k];
        n = put_utf8(s, n, c);
        s[n++] = (unsigned char)around[k];
        if (zt_bpe_piece_end(s, n, 0) != n) continue;
        if (got != '?') return '?';
        got = name[k];
    }
    return got;
}

ZT_TEST(bpe_unicode_classes) {
    static const struct { uint32_t c; char want; } cp[] = {
        {0x180E, 'O'},
        {0x200B, 'O'},
        {0x85, 'S'},
        {0xA0, 'S'},
        {0x2028, 'S'},
        {0x2029, 'S'},
        {0xFEFF, 'O'},
        {0x301, 'O'},
        {0x345, 'O'},
        {0x903, 'O'},
        {0x20DD, 'O'},
        {0x2160, 'N'},
        {0x3007, 'N'},
        {0xB2, 'N'},
        {0x660, 'N'},
        {0x1F10B, 'N'},
        {0x10D40, 'N'},
        {0xAA, 'L'},
        {0x2B0, 'L'},
        {0x1C5, 'L'},
        {0x2E2F, 'L'},
        {0xE33, 'L'},
        {0x1680, 'S'},
        {0x3000, 'S'},
        {0x202F, 'S'},
        {0x205F, 'S'},
        {0xB, 'S'},
        {0xC, 'S'},
        {0x1C, 'O'},
        {0x1F, 'O'},
        {0x10D50, 'L'},
        {0x1C89, 'L'},
        {0x2EBF0, 'L'},
        {0x31350, 'L'},
        {0x11F04, 'L'},
        {0x10940, 'O'},
        {0x16EA0, 'O'},
        {0xFFFD, 'O'},
        {0xE000, 'O'},
        {0x10FFFF, 'O'},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cp / sizeof cp[0]; i++) {
        char got = piece_class(cp[i].c);
        if (got != cp[i].want) {
            fprintf(stderr, "  U+%04X: class %c, want %c\n", (unsigned)cp[i].c, got, cp[i].want);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    return ZT_PASS;
}

// Short strings around those code points with the real vocabulary (skipped when it is not
// installed): the ids tiktoken 0.14.0's gpt2 encoding gives (encode_ordinary).
ZT_TEST(bpe_gpt2_unicode_ids) {
    zt_bpe *b;
    int got = load_gpt2(&b);
    if (got != ZT_PASS) return got;
    static const struct { const char *s; int32_t ids[16]; } c[] = {
        {"x\x20\x20\xe1\xa0\x8ey", {87, 220, 28053, 254, 236, 88}},  // 'x  \u180ey'
        {"a\xe1\xa0\x8e" "b\x20\xe1\xa0\x8e\xe1\xa0\x8e" "1", {64, 157, 254, 236, 65, 28053, 254, 236, 157, 254, 236, 16}},  // 'a\u180eb \u180e\u180e1'
        {"x\x20\xc2\x85y\xc2\x85", {87, 220, 126, 227, 88, 126, 227}},  // 'x \x85y\x85'
        {"x\x20\x20\xe2\x80\x8by", {87, 220, 20126, 88}},  // 'x  \u200by'
        {"\xe2\x80\xa8\xe2\x80\xa8x", {447, 101, 447, 101, 87}},  // '\u2028\u2028x'
        {"a\xcc\x81" "b\x20\xcc\x81", {64, 136, 223, 65, 220, 136, 223}},  // 'a\u0301b \u0301'
        {"\xe0\xa4\x95\xe0\xa4\x83x", {11976, 243, 11976, 225, 87}},  // '\u0915\u0903x'
        {"\xe2\x85\xa0\xe2\x85\xa1\x20" "1\xc2\xb2", {158, 227, 254, 158, 227, 94, 352, 31185}},  // '\u2160\u2161 1\xb2'
        {"x\xc2\xb2\xc2\xb3", {87, 31185, 126, 111}},  // 'x\xb2\xb3'
        {"\x20\xf0\x90\xb5\x90x", {220, 172, 238, 113, 238, 87}},  // ' \U00010d50x'
        {"\xef\xbb\xbf's\x20\xef\xbb\xbf", {171, 119, 123, 6, 82, 27332, 119, 123}},  // "\ufeff's \ufeff"
        {"\xe3\x80\x80\xe3\x80\x80" "1", {5099, 222, 5099, 222, 16}},  // '\u3000\u30001'
        {"x\x20\x20\xe2\x80\xa8y", {87, 220, 220, 447, 101, 88}},  // 'x  \u2028y'
        {"\xf0\xae\xaf\xb0's", {172, 106, 107, 108, 338}},  // "\U0002ebf0's"
        {"\xf0\x90\xa5\x80\x20's", {172, 238, 98, 222, 705, 82}},  // "\U00010940 's"
        {"\x1c\x1cx", {216, 216, 87}},  // '\x1c\x1cx'
        {"\xe1\xb2\x89\x20\xe1\xb2\x89", {157, 110, 231, 28053, 110, 231}},  // '\u1c89 \u1c89'
        {"\xc2\xa0\xc2\xa0" "a\x20\xc2\xa0" "b", {1849, 1849, 64, 220, 1849, 65}},  // '\xa0\xa0a \xa0b'
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t n = 0;
        while (n < 16 && c[i].ids[n]) n++;
        zt_bpe_ids ids = {0};
        zt_bpe_encode(b, c[i].s, strlen(c[i].s), ZT_BPE_INVALID_KEEP, &ids);
        if (!ids_are(&ids, c[i].ids, n)) {
            fprintf(stderr, "  in case %zu\n", i);
            bad++;
        }
        zt_bpe_ids_free(&ids);
    }
    zt_bpe_free(b);
    CHECK_EQ_INT(bad, 0);
    return ZT_PASS;
}

// With the real vocabulary (skipped when it is not installed): every byte string survives.
ZT_TEST(bpe_gpt2_roundtrip) {
    zt_bpe *b;
    int got = load_gpt2(&b);
    if (got != ZT_PASS) return got;
    CHECK_EQ_INT(zt_bpe_vocab_size(b), 50257);
    CHECK_EQ_INT(zt_bpe_eot(b), ZT_BPE_GPT2_EOT);
    // "Hello world" = 15496, 995 in GPT-2.
    zt_bpe_ids ids = {0};
    zt_bpe_encode(b, "Hello world", 11, 0, &ids);
    int32_t hw[] = {15496, 995};
    CHECK(ids_are(&ids, hw, 2));
    unsigned seed = 3;
    static unsigned char buf[1 << 16];
    for (int trial = 0; trial < 40; trial++) {
        size_t n = (size_t)(rand_r(&seed) % sizeof buf);
        int range = trial % 2 ? 256 : 128;  // random bytes, and mostly-ASCII text
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(rand_r(&seed) % range);
        for (int i = 0; trial % 4 == 0 && i < 1000 && n; i++) buf[rand_r(&seed) % n] = ' ';
        ids.n = 0;
        zt_bpe_encode(b, buf, n, ZT_BPE_INVALID_KEEP, &ids);
        char *text;
        size_t len;
        CHECK(zt_bpe_decode(b, ids.ids, ids.n, &text, &len) == ZT_OK);
        CHECK_EQ_INT(len, n);
        CHECK(memcmp(text, buf, n) == 0);
        free(text);
        // The merge loops must agree with the reference on real merges.
        CHECK(loops_agree(b, buf, n < 700 ? n : 700));
    }
    zt_bpe_ids_free(&ids);
    zt_bpe_free(b);
    return ZT_PASS;
}

// Long pieces of few distinct characters (the runs that make one piece of a whole file) with
// GPT-2's merges: many rank levels, and with tiny holds of candidate pairs many rescans and
// trims; the long-piece loop must merge as tiktoken's rule does.
ZT_TEST(bpe_gpt2_long_pieces) {
    zt_bpe *b;
    int got = load_gpt2(&b);
    if (got != ZT_PASS) return got;
    static const struct {
        const char *chars;
        int random;  // drawn at random, else repeated in order
    } runs[] = {{"a", 0},   {"ab", 0},         {"1234567890", 0},
                {"ACGT", 1}, {"abcdefghijklmnopqrstuvwxyz", 1}, {"\xc3\xa9", 0},
                {"aab", 0}, {"!-=", 1},        {"0", 0}};
    unsigned seed = 11;
    static unsigned char buf[3000];
    for (size_t c = 0; c < sizeof runs / sizeof runs[0]; c++) {
        const char *al = runs[c].chars;
        size_t m = strlen(al), n = 0;
        while (n + m <= sizeof buf) {
            if (runs[c].random) buf[n++] = (unsigned char)al[rand_r(&seed) % m];
            else for (size_t i = 0; i < m; i++) buf[n++] = (unsigned char)al[i];
        }
        if (!loops_agree(b, buf, n)) {
            fprintf(stderr, "  alphabet \"%s\"\n", al);
            return ZT_FAIL;
        }
    }
    zt_bpe_free(b);
    return ZT_PASS;
}

// The long-piece search (bpe_long.c) called directly, so short pieces and pieces that are
// tokens take it too, against the quadratic reference: on the tiny vocabulary (where "xyz" is
// a token its own bytes do not merge to) and on scrambled ones (tokens ranking below their
// parts: a merge order a search by prefixes could get wrong, and one that makes it back up).
ZT_TEST(bpe_long_search_matches_reference) {
    unsigned seed = 27;
    static unsigned char buf[600];
    static uint32_t ids[600];
    for (int v = 0; v < 4; v++) {
        zt_bpe *b = v == 0 ? tiny() : scrambled((unsigned)v, v == 1 ? 40 : 400);
        CHECK(b);
        zt_bpe_long *ix = zt_bpe_long_init(&b->vocab);
        for (int trial = 0; trial < 2000; trial++) {
            size_t n = 1 + (size_t)(rand_r(&seed) % (trial % 3 ? 24 : sizeof buf));
            for (size_t i = 0; i < n; i++) buf[i] = (v ? "abcd" : "abcdxyz")[rand_r(&seed) % (v ? 4 : 7)];
            zt_bpe_ids want = {0};
            merge_reference(b, buf, n, &want);
            zt_bpe_ids got = {(int32_t *)ids, zt_bpe_long_merge(&b->vocab, ix, buf, n, ids, 0), sizeof ids / sizeof ids[0]};
            if (!ids_are(&got, want.ids, want.n)) {
                fprintf(stderr, "  vocabulary %d, piece of %zu bytes: %.*s\n", v, n, (int)n, (const char *)buf);
                return ZT_FAIL;
            }
            zt_bpe_ids_free(&want);
        }
        zt_bpe_long_free(ix);
        zt_bpe_free(b);
    }
    return ZT_PASS;
}

// GPT-2's vocabulary: the search against the heap merge (exact, checked against tiktoken) on
// long pieces of every kind a newline-free input makes (one letter, two and three letters
// repeated, digits in order and at random, base64, DNA, lowercase, symbols, a two-byte letter,
// spaces, arbitrary bytes), each at random lengths up to 4 KiB and at 1 MiB; and the working
// memory it states stays near a byte per byte of the piece (docs/tokenizer.md).
ZT_TEST(bpe_gpt2_long_search) {
    zt_bpe *b;
    int got = load_gpt2(&b);
    if (got != ZT_PASS) return got;
    static const struct {
        const char *chars;
        int random;  // drawn at random, else repeated in order
    } runs[] = {{"a", 0},           {"ab", 0},   {"abc", 0},  {"aab", 0},         {"1234567890", 0},
                {"0123456789", 1},  {"ACGT", 1}, {"!-=", 1},  {"\xc3\xa9", 0},    {" ", 0},
                {"abcdefghijklmnopqrstuvwxyz", 1},
                {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 1}};
    enum { BIG = 1 << 20 };
    unsigned char *buf = malloc(BIG);
    uint32_t *ids = malloc(BIG * sizeof *ids);
    CHECK(buf && ids);
    zt_bpe_long *ix = zt_bpe_long_init(&b->vocab);
    unsigned seed = 12;
    for (size_t c = 0; c <= sizeof runs / sizeof runs[0]; c++) {
        const char *al = c < sizeof runs / sizeof runs[0] ? runs[c].chars : NULL;  // NULL: any byte
        size_t m = al ? strlen(al) : 0;
        for (int trial = 0; trial < 41; trial++) {
            size_t n = trial == 40 ? BIG : 1 + (size_t)(rand_r(&seed) % 4096);
            for (size_t i = 0; i < n; i++)
                buf[i] = !al ? (unsigned char)rand_r(&seed)
                             : (unsigned char)al[runs[c].random ? (size_t)rand_r(&seed) % m : i % m];
            zt_bpe_ids want = {0};
            zt_bpe_merge_piece(b, buf, n, n / 8 + 64, &want);  // the heap loop
            zt_bpe_ids got = {(int32_t *)ids, zt_bpe_long_merge(&b->vocab, ix, buf, n, ids, 0), BIG};
            if (!ids_are(&got, want.ids, want.n)) {
                fprintf(stderr, "  alphabet \"%s\", piece of %zu bytes\n", al ? al : "(any byte)", n);
                return ZT_FAIL;
            }
            zt_bpe_ids_free(&want);
        }
    }
    for (size_t n = 1; n < ((size_t)1 << 34); n *= 7) CHECK(zt_bpe_long_bytes(n) <= n + n / 8 + 600 * 1024);
    zt_bpe_long_free(ix);
    free(buf);
    free(ids);
    zt_bpe_free(b);
    return ZT_PASS;
}

// The merge that made a token (merges.txt for the Hugging Face export): its bytes merged with
// only lower ranks allowed end in two parts.
ZT_TEST(bpe_merge_of) {
    zt_bpe *b = tiny();
    CHECK(b);
    int32_t l = -1, r = -1;
    CHECK(zt_bpe_merge_of(b, 258, &l, &r));  // "abcd" = "ab" + "cd"
    CHECK_EQ_INT(l, 256);
    CHECK_EQ_INT(r, 257);
    CHECK(zt_bpe_merge_of(b, 259, &l, &r));  // "aa"
    CHECK_EQ_INT(l, 'a');
    CHECK_EQ_INT(r, 'a');
    CHECK(!zt_bpe_merge_of(b, 260, &l, &r));  // "xyz": neither "xy" nor "yz" is a token
    CHECK(!zt_bpe_merge_of(b, 'a', &l, &r));  // a single byte
    CHECK(!zt_bpe_merge_of(b, 261, &l, &r));  // the end-of-text id
    CHECK(!zt_bpe_merge_of(b, -1, &l, &r));
    zt_bpe_free(b);
    return ZT_PASS;
}

// Every one of GPT-2's 50000 multi-byte tokens derives from a merge of two lower ranks whose
// bytes make it; the first is " t" = " " (220) + "t" (83), merges.txt's first line "Ġ t".
ZT_TEST(bpe_gpt2_merges) {
    zt_bpe *b;
    int got = load_gpt2(&b);
    if (got != ZT_PASS) return got;
    int merges = 0;
    for (int32_t id = 0; id < zt_bpe_eot(b); id++) {
        size_t n, nl, nr;
        const unsigned char *p = zt_bpe_token_bytes(b, id, &n);
        if (n < 2) continue;
        int32_t l, r;
        CHECK(zt_bpe_merge_of(b, id, &l, &r));
        CHECK(l < id && r < id);
        const unsigned char *pl = zt_bpe_token_bytes(b, l, &nl), *pr = zt_bpe_token_bytes(b, r, &nr);
        CHECK(nl + nr == n && memcmp(pl, p, nl) == 0 && memcmp(pr, p + nl, nr) == 0);
        if (merges == 0) {
            CHECK_EQ_INT(id, 256);
            CHECK_EQ_INT(l, 220);
            CHECK_EQ_INT(r, 83);
        }
        merges++;
    }
    CHECK_EQ_INT(merges, 50000);
    zt_bpe_free(b);
    return ZT_PASS;
}
