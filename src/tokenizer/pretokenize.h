// GPT-2's pre-tokenization pattern, matched by hand:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with the classes of tiktoken's regex engine (unicode_class.h). Header-only: the encoder's
// inner loop calls it once per piece.
#ifndef ZT_PRETOKENIZE_H
#define ZT_PRETOKENIZE_H

#include <stddef.h>
#include <stdint.h>

#include "unicode_class.h"

// The code point at s[i] of valid UTF-8 and, in *len, its length in bytes.
static inline uint32_t zt_utf8_at(const unsigned char *s, size_t i, size_t *len) {
    uint32_t c = s[i];
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    if (c < 0xe0) {
        *len = 2;
        return (c & 0x1f) << 6 | (s[i + 1] & 0x3fu);
    }
    if (c < 0xf0) {
        *len = 3;
        return (c & 0x0f) << 12 | (s[i + 1] & 0x3fu) << 6 | (s[i + 2] & 0x3fu);
    }
    *len = 4;
    return (c & 0x07) << 18 | (s[i + 1] & 0x3fu) << 12 | (s[i + 2] & 0x3fu) << 6 | (s[i + 3] & 0x3fu);
}

static inline zt_uclass zt_uclass_at(const unsigned char *s, size_t i, size_t *len) {
    if (s[i] < 0x80) {
        *len = 1;
        return (zt_uclass)zt_uclass_ascii[s[i]];
    }
    return zt_uclass_of(zt_utf8_at(s, i, len));
}

// The end of the run of characters of class k that starts at s[i] (i itself if none).
static inline size_t zt_uclass_run_end(const unsigned char *s, size_t n, size_t i, zt_uclass k) {
    while (i < n) {
        size_t len;
        if (s[i] < 0x80) {
            if (zt_uclass_ascii[s[i]] != k) break;
            i++;
            continue;
        }
        if (zt_uclass_of(zt_utf8_at(s, i, &len)) != k) break;
        i += len;
    }
    return i;
}

// The end of the piece that starts at s[at] (at < n, on a character boundary) in s, n bytes of
// valid UTF-8 taken as the whole text. The alternatives in the pattern's order, each as the
// backtracking engine takes it (the first that matches at `at` wins, greedily):
//   - a contraction: an apostrophe and s, t, m, d, re, ve or ll (case-sensitive);
//   - an optional ' ' then a run of letters, of numbers or of other characters: the space
//     joins a run of any of the three, never white space;
//   - white space: the run up to the next non-space character if the text ends there; else the
//     run less its last character, which the lookahead (?!\S) needs to see; a single white
//     space character before a non-space one is a piece by \s+.
static inline size_t zt_gpt2_piece_end(const unsigned char *s, size_t n, size_t at) {
    unsigned char c0 = s[at];
    if (c0 == '\'' && at + 1 < n) {
        unsigned char c1 = s[at + 1];
        if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return at + 2;
        if (at + 2 < n) {
            unsigned char c2 = s[at + 2];
            if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l'))
                return at + 3;
        }
    }
    size_t len;
    zt_uclass k = zt_uclass_at(s, at, &len);
    size_t from = at;
    if (c0 == ' ' && at + 1 < n) {
        size_t len1;
        zt_uclass k1 = zt_uclass_at(s, at + 1, &len1);
        if (k1 != ZT_UCLASS_SPACE) {
            k = k1;
            from = at + 1;
            len = len1;
        }
    }
    if (k != ZT_UCLASS_SPACE) return zt_uclass_run_end(s, n, from + len, k);
    size_t last = at, i = at + len;  // last: where the run's last character starts
    while (i < n && zt_uclass_at(s, i, &len) == ZT_UCLASS_SPACE) {
        last = i;
        i += len;
    }
    if (i == n) return n;
    return last > at ? last : i;
}

#endif
