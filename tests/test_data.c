// Tests of the token dataset: round trip, sample addressing, shuffling, and every error a
// user can cause with a bad file.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data.h"
#include "test.h"

// A fresh empty file under /tmp; its name goes into path (at least 64 chars).
static int make_temp(char *path) {
    strcpy(path, "/tmp/zt_test_data_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

// Writes a raw file: the first n_header ints of header (little endian on our hosts), then
// n_bytes of extra payload.
static int write_raw(const char *path, const int32_t *header, size_t n_header, const void *extra,
                     size_t n_bytes) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(header, sizeof(int32_t), n_header, f) == n_header;
    if (ok && n_bytes) ok = fwrite(extra, 1, n_bytes, f) == n_bytes;
    return fclose(f) == 0 && ok;
}

// A valid header for n tokens, with magic and version replaceable.
static void fill_header(int32_t *h, int32_t magic, int32_t version, int32_t n) {
    memset(h, 0, ZT_DATA_HEADER_INTS * sizeof(int32_t));
    h[0] = magic;
    h[1] = version;
    h[2] = n;
}

static int msg_has(const char *word) {
    if (strstr(zt_error_message(), word)) return 1;
    fprintf(stderr, "  message lacks \"%s\": %s\n", word, zt_error_message());
    return 0;
}

static int is_zeroed(const zt_dataset *ds) {
    return ds->shards == NULL && ds->tokens == NULL && ds->perm == NULL && ds->n_samples == 0;
}

// Opens path expecting failure; checks the message holds both words and ds is left closed.
static int open_fails(const char *path, int T, int vocab, const char *w1, const char *w2) {
    zt_dataset ds;
    memset(&ds, 0xab, sizeof ds);  // garbage in: open must not trust it
    if (zt_dataset_open(&ds, path, T, vocab, 1, 7) != ZT_ERR) {
        fprintf(stderr, "  open of %s unexpectedly succeeded\n", path);
        zt_dataset_close(&ds);
        return 0;
    }
    int ok = msg_has(path) && msg_has(w1) && (!w2 || msg_has(w2)) && is_zeroed(&ds);
    zt_dataset_close(&ds);  // safe on a failed open, twice
    zt_dataset_close(&ds);
    return ok;
}

// ---------------------------------------------------------------------------------------------

ZT_TEST(data_roundtrip_sample) {
    enum { N = 15, T = 4, V = 100 };
    uint16_t tok[N];
    for (int k = 0; k < N; k++) tok[k] = (uint16_t)((k * 37 + 3) % V);
    char path[64];
    CHECK(make_temp(path));
    CHECK(zt_dataset_write(path, tok, N) == ZT_OK);

    zt_dataset ds;
    CHECK(zt_dataset_open(&ds, path, T, V, 0, 0) == ZT_OK);
    CHECK_EQ_INT(ds.n_tokens, N);
    CHECK_EQ_INT(ds.n_samples, (N - 1) / T);
    CHECK_EQ_INT(ds.shards[0].map_bytes, 1024 + 2 * N);
    CHECK(ds.perm == NULL);
    for (int k = 0; k < N; k++) CHECK_EQ_INT(ds.tokens[k], tok[k]);
    for (uint64_t i = 0; i < ds.n_samples; i++) {
        int32_t in[T], tg[T];
        zt_dataset_sample(&ds, i, in, tg);
        for (int t = 0; t < T; t++) {
            CHECK_EQ_INT(in[t], tok[i * T + t]);
            CHECK_EQ_INT(tg[t], tok[i * T + t + 1]);
            if (t + 1 < T) CHECK_EQ_INT(tg[t], in[t + 1]);  // targets are inputs shifted by one
        }
    }
    zt_dataset_close(&ds);
    CHECK(is_zeroed(&ds));
    zt_dataset_close(&ds);  // twice is fine
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_n_samples) {
    // (N, T) -> (N-1)/T: exactly one sample, the edge before a second, and a leftover tail.
    static const int cases[][3] = {{5, 4, 1}, {8, 4, 1}, {9, 4, 2}, {10, 4, 2}, {2, 1, 1},
                                   {101, 1, 100}, {1025, 64, 16}};
    char path[64];
    CHECK(make_temp(path));
    uint16_t tok[1100] = {0};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        CHECK(zt_dataset_write(path, tok, (size_t)cases[c][0]) == ZT_OK);
        zt_dataset ds;
        CHECK(zt_dataset_open(&ds, path, cases[c][1], 256, 0, 0) == ZT_OK);
        CHECK_EQ_INT(ds.n_samples, cases[c][2]);
        zt_dataset_close(&ds);
    }
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_wraps_by_epoch) {
    enum { N = 23, T = 3 };  // 7 samples, one token of tail never read
    uint16_t tok[N];
    for (int k = 0; k < N; k++) tok[k] = (uint16_t)k;
    char path[64];
    CHECK(make_temp(path));
    CHECK(zt_dataset_write(path, tok, N) == ZT_OK);
    zt_dataset ds;
    CHECK(zt_dataset_open(&ds, path, T, 50257, 0, 0) == ZT_OK);
    CHECK_EQ_INT(ds.n_samples, 7);
    uint64_t gs[] = {0, 6, 7, 13, 14, 700, 701, 1000000007ULL, UINT64_MAX};
    for (size_t k = 0; k < sizeof gs / sizeof gs[0]; k++) {
        int32_t in[T], tg[T];
        zt_dataset_sample(&ds, gs[k], in, tg);
        uint64_t i = gs[k] % 7;
        CHECK_EQ_INT(in[0], i * T);
        CHECK_EQ_INT(tg[T - 1], i * T + T);
    }
    zt_dataset_close(&ds);
    unlink(path);
    return ZT_PASS;
}

// With T = 1 and token k == k, a sample's first input is its index in the file.
static int open_identity(zt_dataset *ds, char *path, int n_samples, uint64_t seed) {
    uint16_t *tok = malloc((size_t)(n_samples + 1) * sizeof *tok);
    if (!tok) return 0;
    for (int k = 0; k <= n_samples; k++) tok[k] = (uint16_t)k;
    int ok = make_temp(path) && zt_dataset_write(path, tok, (size_t)n_samples + 1) == ZT_OK &&
             zt_dataset_open(ds, path, 1, 65536, 1, seed) == ZT_OK;
    free(tok);
    return ok;
}

static int32_t sample_index(zt_dataset *ds, uint64_t g) {
    int32_t in, tg;
    zt_dataset_sample(ds, g, &in, &tg);
    return in;
}

ZT_TEST(data_shuffle_is_permutation) {
    enum { S = 1000 };
    char path[64];
    zt_dataset ds;
    CHECK(open_identity(&ds, path, S, 42));
    CHECK(ds.perm != NULL);
    static int seen[S];
    for (uint64_t e = 0; e < 4; e++) {
        memset(seen, 0, sizeof seen);
        int in_place = 0;
        for (uint64_t i = 0; i < S; i++) {
            int32_t in, tg;
            zt_dataset_sample(&ds, e * S + i, &in, &tg);
            CHECK(in >= 0 && in < S);
            CHECK_EQ_INT(tg, in + 1);  // still a contiguous sample
            seen[in]++;
            in_place += (uint64_t)in == i;
        }
        for (int k = 0; k < S; k++) CHECK_EQ_INT(seen[k], 1);
        CHECK(in_place < S / 10);  // about 1 fixed point expected; identity would be S
    }
    zt_dataset_close(&ds);
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_shuffle_deterministic) {
    enum { S = 257 };
    char pa[64], pb[64];
    zt_dataset a, b;
    CHECK(open_identity(&a, pa, S, 1234));
    CHECK(open_identity(&b, pb, S, 1234));
    // a reads epochs in order; b jumps around (as a resumed run or another rank would): the
    // order must be a pure function of (seed, epoch), not of the access history.
    static const uint64_t epochs_b[] = {5, 0, 3, 1, 4, 2};
    static int32_t order_a[6][S];
    for (uint64_t e = 0; e < 6; e++)
        for (uint64_t i = 0; i < S; i++) order_a[e][i] = sample_index(&a, e * S + i);
    for (size_t k = 0; k < 6; k++) {
        uint64_t e = epochs_b[k];
        for (uint64_t i = 0; i < S; i += 3) CHECK_EQ_INT(sample_index(&b, e * S + i), order_a[e][i]);
    }
    // The same again after close and reopen.
    zt_dataset_close(&b);
    CHECK(zt_dataset_open(&b, pb, 1, 65536, 1, 1234) == ZT_OK);
    for (uint64_t i = 0; i < S; i++) CHECK_EQ_INT(sample_index(&b, 2 * S + i), order_a[2][i]);
    zt_dataset_close(&a);
    zt_dataset_close(&b);
    unlink(pa);
    unlink(pb);
    return ZT_PASS;
}

static int count_same(const int32_t *x, const int32_t *y, int n) {
    int same = 0;
    for (int i = 0; i < n; i++) same += x[i] == y[i];
    return same;
}

ZT_TEST(data_shuffle_differs) {
    enum { S = 500 };
    char pa[64], pb[64], pc[64];
    zt_dataset a, b, c;
    CHECK(open_identity(&a, pa, S, 1));
    CHECK(open_identity(&b, pb, S, 2));
    CHECK(open_identity(&c, pc, S, 0));
    static int32_t a0[S], a1[S], b0[S], c0[S];
    for (int i = 0; i < S; i++) {
        a0[i] = sample_index(&a, (uint64_t)i);
        a1[i] = sample_index(&a, (uint64_t)S + (uint64_t)i);
        b0[i] = sample_index(&b, (uint64_t)i);
        c0[i] = sample_index(&c, (uint64_t)i);
    }
    // Two random permutations agree in about one place; allow a generous margin.
    CHECK(count_same(a0, a1, S) < S / 10);  // across epochs
    CHECK(count_same(a0, b0, S) < S / 10);  // across neighbouring seeds
    CHECK(count_same(a0, c0, S) < S / 10);  // seed 0 is as good as any
    zt_dataset_close(&a);
    zt_dataset_close(&b);
    zt_dataset_close(&c);
    unlink(pa);
    unlink(pb);
    unlink(pc);
    return ZT_PASS;
}

ZT_TEST(data_shuffle_one_sample) {
    // A file with a single sample: the permutation is [0] every epoch.
    char path[64];
    zt_dataset ds;
    CHECK(open_identity(&ds, path, 1, 9));
    for (uint64_t g = 0; g < 5; g++) CHECK_EQ_INT(sample_index(&ds, g), 0);
    zt_dataset_close(&ds);
    unlink(path);
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------------
// Errors.

ZT_TEST(data_err_missing) {
    CHECK(open_fails("/tmp/zt_test_data_does_not_exist.bin", 4, 256, "cannot open",
                     "No such file"));
    return ZT_PASS;
}

ZT_TEST(data_err_bad_args) {
    char path[64];
    CHECK(make_temp(path));
    uint16_t tok[8] = {0};
    CHECK(zt_dataset_write(path, tok, 8) == ZT_OK);
    CHECK(open_fails(path, 0, 256, "sequence length", "--seq"));
    CHECK(open_fails(path, 4, 0, "vocab", "--vocab"));
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_err_not_regular) {
    CHECK(open_fails("/tmp", 4, 256, "regular", NULL));
    return ZT_PASS;
}

ZT_TEST(data_err_short_header) {
    char path[64];
    CHECK(make_temp(path));
    CHECK(open_fails(path, 4, 256, "truncated", "header"));  // empty file
    int32_t h[ZT_DATA_HEADER_INTS];
    fill_header(h, ZT_DATA_MAGIC, ZT_DATA_VERSION, 0);
    CHECK(write_raw(path, h, 100, NULL, 0));  // 400 bytes
    CHECK(open_fails(path, 4, 256, "truncated", "400 bytes"));
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_err_magic) {
    char path[64];
    CHECK(make_temp(path));
    int32_t h[ZT_DATA_HEADER_INTS];
    uint16_t tok[16] = {0};
    fill_header(h, 12345, ZT_DATA_VERSION, 16);
    CHECK(write_raw(path, h, ZT_DATA_HEADER_INTS, tok, sizeof tok));
    CHECK(open_fails(path, 4, 256, "magic", "12345"));
    fill_header(h, 20240326, 3, 16);  // llm.c's model checkpoint
    CHECK(write_raw(path, h, ZT_DATA_HEADER_INTS, tok, sizeof tok));
    CHECK(open_fails(path, 4, 256, "model checkpoint", "20240326"));
    fill_header(h, 20240801, 7, 16);  // llm.c's LLaMA-3 tokens
    CHECK(write_raw(path, h, ZT_DATA_HEADER_INTS, tok, sizeof tok));
    CHECK(open_fails(path, 4, 256, "LLaMA-3", NULL));
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_err_version) {
    char path[64];
    CHECK(make_temp(path));
    int32_t h[ZT_DATA_HEADER_INTS];
    uint16_t tok[16] = {0};
    fill_header(h, ZT_DATA_MAGIC, 2, 16);
    CHECK(write_raw(path, h, ZT_DATA_HEADER_INTS, tok, sizeof tok));
    CHECK(open_fails(path, 4, 256, "version 2", NULL));
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_err_count_mismatch) {
    char path[64];
    CHECK(make_temp(path));
    int32_t h[ZT_DATA_HEADER_INTS];
    uint16_t tok[20] = {0};
    // Header says 20 tokens, file holds 16: truncated, 8 bytes missing.
    fill_header(h, ZT_DATA_MAGIC, ZT_DATA_VERSION, 20);
    CHECK(write_raw(path, h, ZT_DATA_HEADER_INTS, tok, 16 * sizeof(uint16_t)));
    CHECK(open_fails(path, 4, 256, "truncated", "1064 bytes"));
    CHECK(msg_has("1056 bytes"));
    // Header says 16, file holds 16 tokens and one stray byte.
    fill_header(h, ZT_DATA_MAGIC, ZT_DATA_VERSION, 16);
    CHECK(write_raw(path, h, ZT_DATA_HEADER_INTS, tok, 16 * sizeof(uint16_t) + 1));
    CHECK(open_fails(path, 4, 256, "trailing", "1057 bytes"));
    // A negative count.
    fill_header(h, ZT_DATA_MAGIC, ZT_DATA_VERSION, -3);
    CHECK(write_raw(path, h, ZT_DATA_HEADER_INTS, tok, 16 * sizeof(uint16_t)));
    CHECK(open_fails(path, 4, 256, "negative", NULL));
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_err_too_few_tokens) {
    char path[64];
    CHECK(make_temp(path));
    uint16_t tok[64] = {0};
    CHECK(zt_dataset_write(path, tok, 64) == ZT_OK);
    CHECK(open_fails(path, 64, 256, "lower --seq", "64 tokens"));  // needs 65
    zt_dataset ds;
    CHECK(zt_dataset_open(&ds, path, 63, 256, 1, 0) == ZT_OK);  // exactly one sample
    CHECK_EQ_INT(ds.n_samples, 1);
    zt_dataset_close(&ds);
    CHECK(zt_dataset_write(path, tok, 0) == ZT_OK);  // an empty token file
    CHECK(open_fails(path, 1, 256, "lower --seq", NULL));
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_err_token_out_of_vocab) {
    // Big enough that the scan is split across threads; the first bad id sits late and a
    // larger one later still, so position and maximum are told apart.
    enum { N = 1 << 20 };
    uint16_t *tok = malloc(N * sizeof *tok);
    CHECK(tok != NULL);
    for (int k = 0; k < N; k++) tok[k] = (uint16_t)(k % 50257);
    tok[777777] = 50300;
    tok[900001] = 65535;
    char path[64];
    CHECK(make_temp(path));
    CHECK(zt_dataset_write(path, tok, N) == ZT_OK);
    free(tok);
    CHECK(open_fails(path, 1024, 50257, "position 777777", "50300"));
    CHECK(msg_has("65535"));
    CHECK(msg_has("--vocab 65536"));
    zt_dataset ds;
    CHECK(zt_dataset_open(&ds, path, 1024, 65536, 0, 0) == ZT_OK);  // every uint16 fits
    zt_dataset_close(&ds);
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_err_vocab_edge) {
    // id == vocab - 1 is fine, id == vocab is not.
    char path[64];
    CHECK(make_temp(path));
    uint16_t tok[5] = {0, 1, 255, 2, 3};
    CHECK(zt_dataset_write(path, tok, 5) == ZT_OK);
    zt_dataset ds;
    CHECK(zt_dataset_open(&ds, path, 4, 256, 0, 0) == ZT_OK);
    zt_dataset_close(&ds);
    CHECK(open_fails(path, 4, 255, "position 2", "--vocab 256"));
    unlink(path);
    return ZT_PASS;
}

ZT_TEST(data_close_zeroed) {
    zt_dataset ds;
    memset(&ds, 0, sizeof ds);
    zt_dataset_close(&ds);
    zt_dataset_close(&ds);
    zt_dataset_close(NULL);
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------------
// Writing.

ZT_TEST(data_write_atomic) {
    char path[64], tmp[128];
    CHECK(make_temp(path));
    uint16_t tok[3] = {1, 2, 3};
    CHECK(zt_dataset_write(path, tok, 3) == ZT_OK);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    struct stat st;
    CHECK(stat(tmp, &st) != 0);  // no temporary left behind
    CHECK(stat(path, &st) == 0);
    CHECK_EQ_INT(st.st_size, 1024 + 6);
    // The header bytes, little endian.
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    unsigned char b[12];
    CHECK(fread(b, 1, 12, f) == 12);
    fclose(f);
    CHECK_EQ_INT(b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24, 20240520);
    CHECK_EQ_INT(b[4] | b[5] << 8 | b[6] << 16 | b[7] << 24, 1);
    CHECK_EQ_INT(b[8] | b[9] << 8 | b[10] << 16 | b[11] << 24, 3);
    // A directory that does not exist: a clear error, and nothing created.
    CHECK(zt_dataset_write("/tmp/zt_test_data_no_such_dir/x.bin", tok, 3) == ZT_ERR);
    CHECK(msg_has("cannot create"));
    CHECK(msg_has("/tmp/zt_test_data_no_such_dir/x.bin"));
    unlink(path);
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------------
// Preparing text.

static int write_text(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(text, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

// Opens a prepared file with T = 1 and checks its tokens are exactly the bytes expect (n).
static int tokens_are(const char *path, const char *expect, size_t n) {
    zt_dataset ds;
    if (zt_dataset_open(&ds, path, 1, 256, 0, 0) != ZT_OK) {
        fprintf(stderr, "  %s\n", zt_error_message());
        return 0;
    }
    int ok = ds.n_tokens == n;
    for (size_t i = 0; ok && i < n; i++) ok = ds.tokens[i] == (unsigned char)expect[i];
    if (!ok) fprintf(stderr, "  %s: %zu tokens, expected %zu matching bytes\n", path, ds.n_tokens, n);
    zt_dataset_close(&ds);
    return ok;
}

ZT_TEST(data_prepare_text_split) {
    // 22 bytes including high bytes (0xff must become token 255, not -1).
    const char text[] = "hello, world! \xff caf\xc3\xa9.";
    size_t n = sizeof text - 1;
    CHECK_EQ_INT(n, 22);
    char tp[64], trp[64], vp[64];
    CHECK(make_temp(tp) && make_temp(trp) && make_temp(vp));
    CHECK(write_text(tp, text, n));
    // round(22 * 0.25) = round(5.5) = 6 bytes of validation, the last 6.
    CHECK(zt_prepare_text(tp, trp, vp, 0.25) == ZT_OK);
    CHECK(tokens_are(trp, text, 16));
    CHECK(tokens_are(vp, text + 16, 6));
    // Without a validation path everything trains, whatever val_frac says.
    CHECK(zt_prepare_text(tp, trp, NULL, 0.0) == ZT_OK);
    CHECK(tokens_are(trp, text, n));
    CHECK(zt_prepare_text(tp, trp, "", 5.0) == ZT_OK);
    CHECK(tokens_are(trp, text, n));
    unlink(tp);
    unlink(trp);
    unlink(vp);
    return ZT_PASS;
}

ZT_TEST(data_prepare_text_errors) {
    char tp[64], trp[64], vp[64];
    CHECK(make_temp(tp) && make_temp(trp) && make_temp(vp));
    CHECK(zt_prepare_text("/tmp/zt_test_data_no_text.txt", trp, vp, 0.1) == ZT_ERR);
    CHECK(msg_has("cannot open"));
    CHECK(msg_has("/tmp/zt_test_data_no_text.txt"));
    CHECK(zt_prepare_text(tp, trp, vp, 0.1) == ZT_ERR);  // empty
    CHECK(msg_has("empty"));
    CHECK(write_text(tp, "abcdefghij", 10));
    CHECK(zt_prepare_text(tp, trp, vp, 0.0) == ZT_ERR);
    CHECK(msg_has("between 0 and 1"));
    CHECK(zt_prepare_text(tp, trp, vp, 1.0) == ZT_ERR);
    CHECK(msg_has("between 0 and 1"));
    CHECK(zt_prepare_text(tp, trp, vp, 0.05) == ZT_ERR);  // 1 byte of validation
    CHECK(msg_has("validation"));
    CHECK(msg_has("fewer than the 2 tokens"));
    CHECK(zt_prepare_text(tp, trp, vp, 0.95) == ZT_ERR);  // 1 byte of training (9.5 -> 10 val)
    CHECK(msg_has("training"));
    CHECK(write_text(tp, "a", 1));
    CHECK(zt_prepare_text(tp, trp, NULL, 0.0) == ZT_ERR);  // 1 byte in all
    CHECK(msg_has("fewer than the 2 tokens"));
    CHECK(write_text(tp, "ab", 2));
    CHECK(zt_prepare_text(tp, trp, NULL, 0.0) == ZT_OK);  // the smallest file: one sample, T = 1
    CHECK(tokens_are(trp, "ab", 2));
    unlink(tp);
    unlink(trp);
    unlink(vp);
    return ZT_PASS;
}

// ---------------------------------------------------------------------------------------------
// Shards: a list or glob of token files read as one epoch.

// Writes shard k of a directory: n tokens valued base, base+1, ... (so a sample names its place).
static int write_shard(const char *dir, const char *name, int base, int n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    uint16_t tok[64];
    for (int i = 0; i < n; i++) tok[i] = (uint16_t)(base + i);
    return n <= 64 && zt_dataset_write(path, tok, (size_t)n) == ZT_OK;
}

// Three shards written out of name order, found by a glob in name order: the epoch is their
// samples back to back (no sample crosses a shard's end), then wraps; a list keeps its order.
ZT_TEST(data_shards_glob_epoch) {
    char dir[] = "/tmp/zt_test_shards_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    // T 2: 7 tokens -> 3 samples, 5 -> 2, 9 -> 4
    CHECK(write_shard(dir, "x_train_000002.bin", 200, 5));
    CHECK(write_shard(dir, "x_train_000001.bin", 100, 7));
    CHECK(write_shard(dir, "x_train_000003.bin", 300, 9));
    CHECK(write_shard(dir, "x_val_000001.bin", 900, 9));
    char spec[512];
    snprintf(spec, sizeof spec, "%s/x_train_*.bin", dir);
    zt_dataset ds;
    CHECK(zt_dataset_open(&ds, spec, 2, 1024, 0, 0) == ZT_OK);
    CHECK_EQ_INT(ds.n_shards, 3);
    CHECK_EQ_INT(ds.n_samples, 9);
    CHECK_EQ_INT(ds.n_tokens, 21);
    const int expect[9] = {100, 102, 104, 200, 202, 300, 302, 304, 306};
    for (uint64_t g = 0; g < 20; g++) {
        int32_t in[2], tg[2];
        zt_dataset_sample(&ds, g, in, tg);
        CHECK_EQ_INT(in[0], expect[g % 9]);
        CHECK_EQ_INT(tg[1], expect[g % 9] + 2);
        zt_data_position at = zt_dataset_locate(&ds, g);
        CHECK_EQ_INT(at.epoch, g / 9);
        CHECK_EQ_INT(at.shard, expect[g % 9] / 100 - 1);
        CHECK_EQ_INT(at.sample, (uint64_t)(expect[g % 9] % 100) / 2);
    }
    zt_dataset_close(&ds);
    // a comma-separated list is read in the order given, and may hold patterns
    snprintf(spec, sizeof spec, "%s/x_train_000003.bin,%s/x_train_00000[12].bin", dir, dir);
    CHECK(zt_dataset_open(&ds, spec, 2, 1024, 0, 0) == ZT_OK);
    CHECK_EQ_INT(ds.n_shards, 3);
    CHECK_EQ_INT(ds.shards[0].tokens[0], 300);
    CHECK_EQ_INT(ds.shards[1].tokens[0], 100);
    zt_dataset_close(&ds);
    // shuffled, every sample of every shard once per epoch
    snprintf(spec, sizeof spec, "%s/x_train_*.bin", dir);
    CHECK(zt_dataset_open(&ds, spec, 2, 1024, 1, 5) == ZT_OK);
    int seen[400] = {0};
    for (uint64_t g = 9; g < 18; g++) {
        int32_t in[2], tg[2];
        zt_dataset_sample(&ds, g, in, tg);
        CHECK(in[0] >= 100 && in[0] < 400);
        seen[in[0]]++;
    }
    for (int i = 0; i < 9; i++) CHECK_EQ_INT(seen[expect[i]], 1);
    zt_dataset_close(&ds);
    const char *names[] = {"x_train_000001.bin", "x_train_000002.bin", "x_train_000003.bin",
                           "x_val_000001.bin"};
    for (int i = 0; i < 4; i++) {
        snprintf(spec, sizeof spec, "%s/%s", dir, names[i]);
        unlink(spec);
    }
    rmdir(dir);
    return ZT_PASS;
}

// A pattern that matches nothing, an empty item, a shard named twice and a bad shard in a list
// each stop the open with a message naming it.
ZT_TEST(data_shards_errors) {
    char dir[] = "/tmp/zt_test_shards_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_shard(dir, "a.bin", 1, 7));
    char spec[1024], a[300], bad[300];
    snprintf(a, sizeof a, "%s/a.bin", dir);
    snprintf(bad, sizeof bad, "%s/b.bin", dir);
    snprintf(spec, sizeof spec, "%s/none_*.bin", dir);
    CHECK(open_fails(spec, 2, 256, "matches no file", "quote it"));
    snprintf(spec, sizeof spec, "%s,,%s", a, a);
    CHECK(open_fails(spec, 2, 256, "empty item", NULL));
    snprintf(spec, sizeof spec, "%s,%s/a.*", a, dir);
    CHECK(open_fails(spec, 2, 256, "twice", NULL));
    int32_t h[ZT_DATA_HEADER_INTS];
    uint16_t tok[16] = {0};
    fill_header(h, ZT_DATA_MAGIC, ZT_DATA_VERSION, 15);  // one token missing
    CHECK(write_raw(bad, h, ZT_DATA_HEADER_INTS, tok, sizeof tok - 4));
    snprintf(spec, sizeof spec, "%s,%s", a, bad);
    zt_dataset ds;
    CHECK(zt_dataset_open(&ds, spec, 2, 256, 0, 0) == ZT_ERR);
    CHECK(msg_has(bad) && msg_has("truncated") && is_zeroed(&ds));
    unlink(a);
    unlink(bad);
    rmdir(dir);
    return ZT_PASS;
}

// nanoGPT's headerless train.bin: the open names the format and the conversion, and
// zt_prepare_nanogpt's file reads back the same tokens.
ZT_TEST(data_nanogpt_convert) {
    char path[64], out[80];
    CHECK(make_temp(path));
    snprintf(out, sizeof out, "%s.zt.bin", path);
    uint16_t tok[600];
    for (int i = 0; i < 600; i++) tok[i] = (uint16_t)(i * 83 % 50257);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(tok, sizeof tok, 1, f) == 1 && fclose(f) == 0);
    CHECK(open_fails(path, 4, 50257, "nanoGPT", "zerotrain prepare --from-nanogpt"));
    CHECK(zt_prepare_nanogpt(path, out) == ZT_OK);
    zt_dataset ds;
    CHECK(zt_dataset_open(&ds, out, 4, 50257, 0, 0) == ZT_OK);
    CHECK_EQ_INT(ds.n_tokens, 600);
    for (int i = 0; i < 600; i++) CHECK_EQ_INT(ds.tokens[i], tok[i]);
    zt_dataset_close(&ds);
    f = fopen(path, "ab");  // an odd byte: not uint16 tokens
    CHECK(f && fputc(1, f) == 1 && fclose(f) == 0);
    CHECK(zt_prepare_nanogpt(path, out) == ZT_ERR && msg_has("uint16"));
    unlink(path);
    unlink(out);
    return ZT_PASS;
}
