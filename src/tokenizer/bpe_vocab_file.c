// The vocabulary file (tiktoken's format) read into the vocabulary's tables: the file, base64,
// ranks, their checks and their messages; and where the file is by default.
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
// then encode anything). The end-of-text token is not in the file: it is id n. Blank lines
// are skipped, and a '\r' before a '\n' is dropped.
#include "bpe_vocab_file.h"

#include "bpe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    "package on PyPI and checks its SHA-256) or name the file (prepare --vocab FILE, generate "   \
    "--vocab-file FILE)"

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

zt_status zt_bpe_vocab_load(zt_bpe_vocab *v, const char *path) {
    unsigned char *text = NULL;
    size_t size = 0;
    ZT_TRY(read_vocab_file(path, &text, &size));
    // Lines: at most size/2 tokens (each needs >= 4 base64 chars); the pool is at most 3/4 of
    // the file.
    size_t max_tok = size / 2 + 1;
    vocab_lines lines = {malloc(max_tok * sizeof *lines.rank_of_line),
                         malloc((max_tok + 1) * sizeof *lines.line_off), malloc(size + 1), 0};
    ZT_ASSERT(lines.rank_of_line && lines.line_off && lines.bytes);
    zt_status s = parse_lines(&lines, text, size, path);
    free(text);
    size_t n = lines.n;
    if (s == ZT_OK && n < 256)
        s = zt_errorf("vocabulary file %s has %zu tokens, fewer than the 256 single bytes of a "
                      "byte-level BPE such as gpt2.tiktoken; " ZT_BPE_FETCH_HINT,
                      path, n);
    int32_t *line_of_rank = s == ZT_OK ? malloc(n * sizeof *line_of_rank) : NULL;
    ZT_ASSERT(s != ZT_OK || line_of_rank);
    if (s == ZT_OK) s = order_by_rank(line_of_rank, &lines, path);
    if (s == ZT_OK) {
        zt_bpe_vocab_alloc(v, (int)n, lines.line_off[n]);
        uint32_t o = 0;
        for (size_t r = 0; r < n; r++) {
            size_t k = (size_t)line_of_rank[r];
            uint32_t len = lines.line_off[k + 1] - lines.line_off[k];
            v->off[r] = o;
            memcpy(v->pool + o, lines.bytes + lines.line_off[k], len);
            o += len;
        }
        v->off[n] = o;
        s = zt_bpe_vocab_build(v, path);
    }
    free(line_of_rank);
    free(lines.rank_of_line);
    free(lines.line_off);
    free(lines.bytes);
    return s;
}

void zt_bpe_default_vocab(char *buf, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0]) snprintf(buf, cap, "%s/zerotrain/gpt2.tiktoken", xdg);
    else snprintf(buf, cap, "%s/.cache/zerotrain/gpt2.tiktoken", home && home[0] ? home : ".");
}
