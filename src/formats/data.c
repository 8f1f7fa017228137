// Token datasets: opening and checking llm.c token files (one or shards), sampling by global
// index, writing them.
//
// File format (llm.c's GPT-2 token file; every integer little endian):
//
//   byte offset   size           field
//   ------------  -------------  ------------------------------------------------------------
//   0             int32          magic    20240520 (ZT_DATA_MAGIC)
//   4             int32          version  1 (ZT_DATA_VERSION): tokens are uint16
//   8             int32          N        number of tokens that follow the header
//   12            int32 x 253    reserved, written as zero, not checked on read
//   1024          uint16 x N     token ids, each < vocab
//   1024 + 2N     (end of file: nothing may follow the tokens)
//
//   +----------+---+---+---------+--------+--------+-----+----------+
//   | 20240520 | 1 | N | 0 ... 0 | tok[0] | tok[1] | ... | tok[N-1] |
//   +----------+---+---+---------+--------+--------+-----+----------+
//   |< 256 x int32 = 1024 bytes >|<---------- N x uint16 ---------->|
//
// Sample i of sequence length T is the T+1 tokens tok[i*T .. i*T+T]: inputs are the first T,
// targets the last T (the same tokens shifted by one), so consecutive samples share one token
// and a file of N tokens holds (N-1)/T samples; a tail of fewer than T+1 tokens is never read.
//
// Other llm.c files that users pass here by mistake, recognised by their magic so the error
// can say what the file is: 20240326 model checkpoint, 20240328 tokenizer, 20240522 eval
// (HellaSwag) file, 20240801 LLaMA-3 token file (uint32 tokens, version 7).
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "common.h"
#include "data_pairing.h"
#include "tmp_names.h"
#include "data_shards.h"

// The tokens are used in place from the mapping and written straight from memory, so the host
// must share the file's byte order. Every machine we target is little endian; say so loudly if
// that ever stops being true rather than reading garbage.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "zerotrain's data files are little endian; data.c needs byte swapping on this host"
#endif

#define ZT_DATA_HEADER_BYTES ((size_t)ZT_DATA_HEADER_INTS * sizeof(int32_t))

// llm.c magics of files that are not GPT-2 token files (see the top of this file).
#define ZT_LLMC_MODEL_MAGIC 20240326
#define ZT_LLMC_TOKENIZER_MAGIC 20240328
#define ZT_LLMC_EVAL_MAGIC 20240522
#define ZT_LLMC_LLAMA3_DATA_MAGIC 20240801

static int32_t read_le_i32(const unsigned char *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

// ---------------------------------------------------------------------------------------------
// Shuffling: a per-epoch permutation that is a pure function of (seed, epoch), so every rank of
// a parallel run (and a resumed run) draws the same global order without talking to the others.

// splitmix64's output function: a bijective mixer of 64-bit values.
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#define ZT_GOLDEN_GAMMA 0x9e3779b97f4a7c15ULL

// splitmix64: state advances by a fixed odd constant, output is the mixed state.
static uint64_t splitmix64_next(uint64_t *state) {
    *state += ZT_GOLDEN_GAMMA;
    return mix64(*state);
}

// Uniform in [0, range), range >= 1, without modulo bias: reject the few draws below
// 2^64 mod range so that the remaining 2^64 - (2^64 mod range) values split evenly.
static uint64_t uniform_below(uint64_t *state, uint64_t range) {
    uint64_t threshold = (0 - range) % range;  // == 2^64 mod range
    for (;;) {
        uint64_t x = splitmix64_next(state);
        if (x >= threshold) return x % range;
    }
}

// perm (n) = the permutation of [0, n) for (seed, epoch): Fisher–Yates from the identity.
static void make_permutation(uint32_t *perm, uint64_t n, uint64_t seed, uint64_t epoch) {
    // Mix seed and epoch through the bijection twice so that nearby seeds and nearby epochs
    // start from unrelated states.
    uint64_t state = mix64(seed ^ mix64(epoch + ZT_GOLDEN_GAMMA));
    for (uint64_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    for (uint64_t i = n - 1; i > 0 && n > 1; i--) {
        uint64_t j = uniform_below(&state, i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

// ---------------------------------------------------------------------------------------------
// Opening and checking.

static const char *known_magic_name(int32_t magic) {
    switch (magic) {
    case ZT_LLMC_MODEL_MAGIC: return "an llm.c model checkpoint";
    case ZT_LLMC_TOKENIZER_MAGIC: return "an llm.c tokenizer file";
    case ZT_LLMC_EVAL_MAGIC: return "an llm.c evaluation (HellaSwag) file";
    case ZT_LLMC_LLAMA3_DATA_MAGIC: return "an llm.c LLaMA-3 token file (uint32 tokens)";
    default: return NULL;
    }
}

// The largest token id in tokens (n): one pass, split across threads.
static uint16_t max_token(const uint16_t *tokens, size_t n) {
    unsigned mx = 0;
    long long nn = (long long)n;
#pragma omp parallel for reduction(max : mx) schedule(static)
    for (long long i = 0; i < nn; i++) {
        unsigned t = tokens[i];
        if (t > mx) mx = t;
    }
    return (uint16_t)mx;
}

// The bad-magic error. nanoGPT's train.bin / val.bin have no header at all, so their first
// tokens read as the magic: say what such a file is and how to convert it.
static zt_status bad_magic(const char *path, int32_t magic) {
    const char *what = known_magic_name(magic);
    if (what)
        return zt_errorf("data file %s is %s (magic %d), not a GPT-2 token file (magic %d); "
                         "pass a token file made by llm.c's dev/data scripts or zerotrain's "
                         "text preparation",
                         path, what, (int)magic, ZT_DATA_MAGIC);
    return zt_errorf("data file %s has bad magic %d (expected %d): not an llm.c token file; "
                     "if it is nanoGPT's headerless train.bin/val.bin (raw uint16 tokens), convert "
                     "it with: zerotrain prepare --from-nanogpt %s --out %s.zt.bin; otherwise "
                     "pass a token file made by llm.c's dev/data scripts or zerotrain's text "
                     "preparation",
                     path, (int)magic, ZT_DATA_MAGIC, path, path);
}

// One token file's checks, in the order a user would want them reported. On error sh is
// half-opened (its mapping, if any, is for the caller to unmap).
static zt_status shard_open_checked(zt_data_shard *sh, const char *path, int T, int vocab) {
    snprintf(sh->path, sizeof sh->path, "%s", path);

    // O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting forever
    // for a writer; it changes nothing for a regular file
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return zt_errorf("cannot open data file %s: %s; check the path given to --data or --val-data, or "
                         "prepare a token file from text",
                         path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return zt_errorf("cannot stat data file %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return zt_errorf("data file %s is not a regular file; pass a token file made by "
                         "llm.c's dev/data scripts or zerotrain's text preparation",
                         path);
    }
    size_t bytes = (size_t)st.st_size;
    if (bytes < ZT_DATA_HEADER_BYTES) {
        close(fd);
        return zt_errorf("data file %s is truncated: %zu bytes, shorter than the %zu-byte header "
                         "of a token file; regenerate it",
                         path, bytes, ZT_DATA_HEADER_BYTES);
    }
    void *map = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);  // the mapping keeps the file alive
    if (map == MAP_FAILED)
        return zt_errorf("cannot map data file %s (%zu bytes): %s", path, bytes, strerror(map_errno));
    sh->map = map;
    sh->map_bytes = bytes;

    const unsigned char *h = map;
    int32_t magic = read_le_i32(h + 0);
    int32_t version = read_le_i32(h + 4);
    int32_t count = read_le_i32(h + 8);
    if (magic != ZT_DATA_MAGIC) return bad_magic(path, magic);
    if (version != ZT_DATA_VERSION)
        return zt_errorf("data file %s has unsupported version %d (expected %d, uint16 GPT-2 "
                         "tokens); regenerate it with llm.c's dev/data scripts for gpt-2 or "
                         "zerotrain's text preparation",
                         path, (int)version, ZT_DATA_VERSION);
    if (count < 0)
        return zt_errorf("data file %s is corrupt: negative token count %d in its header; "
                         "regenerate it",
                         path, (int)count);
    size_t n = (size_t)count;
    size_t expect = ZT_DATA_HEADER_BYTES + n * sizeof(uint16_t);
    if (bytes != expect)
        return zt_errorf("data file %s is %s: its header says %zu tokens, i.e. %zu bytes, but the "
                         "file has %zu bytes (%zu %s); regenerate it",
                         path, bytes < expect ? "truncated" : "corrupt (trailing bytes)", n, expect,
                         bytes, bytes < expect ? expect - bytes : bytes - expect,
                         bytes < expect ? "missing" : "too many");
    if (n < (size_t)T + 1)
        return zt_errorf("data file %s has %zu tokens, fewer than the %d needed for a single "
                         "sample of sequence length %d; lower --seq or use a larger file",
                         path, n, T + 1, T);

    sh->tokens = (const uint16_t *)(h + ZT_DATA_HEADER_BYTES);
    sh->n_tokens = n;
    sh->n_samples = (uint64_t)(n - 1) / (uint64_t)T;

    uint16_t mx = max_token(sh->tokens, n);
    if ((int)mx >= vocab) {
        size_t first = 0;
        while (sh->tokens[first] < vocab) first++;  // mx >= vocab guarantees a hit
        return zt_errorf("data file %s has token id %u at position %zu, not below the vocab size "
                         "%d (largest id in the file: %u); pass --vocab %u or more, or use a file "
                         "tokenized for this model",
                         path, (unsigned)sh->tokens[first], first, vocab, (unsigned)mx,
                         (unsigned)mx + 1);
    }
    return ZT_OK;
}

// Every shard of spec, checked, with their places in the epoch. On error ds is half-opened.
static zt_status dataset_open_checked(zt_dataset *ds, const char *spec, int T, int vocab,
                                      int shuffle, uint64_t seed) {
    if (T <= 0) return zt_errorf("data file %s: sequence length %d must be positive (--seq)", spec, T);
    if (vocab <= 0) return zt_errorf("data file %s: vocab size %d must be positive (--vocab)", spec, vocab);
    snprintf(ds->path, sizeof ds->path, "%s", spec);
    ds->T = T;
    ds->shuffle = shuffle != 0;
    ds->seed = seed;
    ds->perm_epoch = UINT64_MAX;
    zt_data_paths paths;
    ZT_TRY(zt_data_paths_expand(&paths, spec));
    ds->shards = calloc((size_t)paths.n, sizeof *ds->shards);
    ZT_ASSERT(ds->shards != NULL);
    zt_status s = ZT_OK;
    for (int k = 0; s == ZT_OK && k < paths.n; k++) {
        zt_data_shard *sh = &ds->shards[ds->n_shards++];
        s = shard_open_checked(sh, paths.paths[k], T, vocab);
        sh->first = ds->n_samples;
        ds->n_samples += sh->n_samples;
        ds->n_tokens += sh->n_tokens;
    }
    zt_data_paths_free(&paths);
    ZT_TRY(s);
    ds->tokens = ds->shards[0].tokens;
    if (ds->shuffle) {
        // the permutation holds uint32 indices: 2^32 samples of one epoch (2^42 tokens at T 1024)
        if (ds->n_samples > UINT32_MAX)
            return zt_errorf("data %s holds %llu samples, more than the 2^32 that --shuffle "
                             "orders; use fewer shards per run or no --shuffle",
                             spec, (unsigned long long)ds->n_samples);
        ds->perm = malloc((size_t)ds->n_samples * sizeof(uint32_t));
        if (!ds->perm)
            return zt_errorf("out of memory for the shuffle order of data %s (%llu samples)",
                             spec, (unsigned long long)ds->n_samples);
    }
    return ZT_OK;
}

zt_status zt_dataset_open(zt_dataset *ds, const char *path, int T, int vocab, int shuffle,
                          uint64_t seed) {
    ZT_ASSERT(ds != NULL && path != NULL);
    memset(ds, 0, sizeof *ds);
    zt_status s = dataset_open_checked(ds, path, T, vocab, shuffle, seed);
    if (s != ZT_OK) zt_dataset_close(ds);  // leaves ds zeroed: a later close is a no-op
    return s;
}

void zt_dataset_close(zt_dataset *ds) {
    if (!ds) return;
    for (int k = 0; k < ds->n_shards; k++)
        if (ds->shards[k].map) munmap(ds->shards[k].map, ds->shards[k].map_bytes);
    free(ds->shards);
    free(ds->perm);
    memset(ds, 0, sizeof *ds);
}

// ---------------------------------------------------------------------------------------------
// Sampling.

// The shard holding epoch sample i: the last whose first sample is at or before i.
static int shard_of(const zt_dataset *ds, uint64_t i) {
    int lo = 0, hi = ds->n_shards - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (ds->shards[mid].first <= i) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

zt_data_position zt_dataset_locate(zt_dataset *ds, uint64_t g) {
    ZT_ASSERT(ds != NULL && ds->n_shards > 0 && ds->n_samples > 0);
    zt_data_position at = {g / ds->n_samples, 0, 0};
    uint64_t i = g % ds->n_samples;
    if (ds->shuffle) {
        ZT_ASSERT(ds->perm != NULL);
        if (ds->perm_epoch != at.epoch) {
            make_permutation(ds->perm, ds->n_samples, ds->seed, at.epoch);
            ds->perm_epoch = at.epoch;
        }
        i = ds->perm[i];
    }
    at.shard = shard_of(ds, i);
    at.sample = i - ds->shards[at.shard].first;
    return at;
}

void zt_dataset_sample(zt_dataset *ds, uint64_t g, int32_t *inputs, int32_t *targets) {
    ZT_ASSERT(inputs != NULL && targets != NULL);
    zt_data_position at = zt_dataset_locate(ds, g);
    const uint16_t *p = ds->shards[at.shard].tokens + (size_t)at.sample * (size_t)ds->T;
    for (int t = 0; t < ds->T; t++) {
        inputs[t] = p[t];
        targets[t] = p[t + 1];
    }
}

// ---------------------------------------------------------------------------------------------
// Writing.

// Writes a whole token file to its temporary name (into tmp, `cap` bytes), synced: the
// caller renames it into place.
static zt_status write_token_tmp(const char *path, const uint16_t *tokens, size_t n, char *tmp,
                                 size_t cap) {
    ZT_ASSERT(path != NULL && (tokens != NULL || n == 0));
    if (n > (size_t)INT32_MAX)
        return zt_errorf("cannot write data file %s: %zu tokens is more than the format's "
                         "limit of %d; split the text into several files",
                         path, n, INT32_MAX);
    ZT_TRY(zt_tmp_name(tmp, cap, path));
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return zt_errorf("cannot create %s (for data file %s): %s; check that the directory "
                         "exists and is writable",
                         tmp, path, strerror(errno));
    int32_t header[ZT_DATA_HEADER_INTS] = {0};
    header[0] = ZT_DATA_MAGIC;
    header[1] = ZT_DATA_VERSION;
    header[2] = (int32_t)n;
    int ok = fwrite(header, sizeof header, 1, f) == 1;
    if (ok && n > 0) ok = fwrite(tokens, sizeof(uint16_t), n, f) == n;
    if (ok) ok = fflush(f) == 0;
    if (ok) ok = fsync(fileno(f)) == 0;  // durable before the rename makes it visible
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        return zt_errorf("cannot write data file %s: %s (disk full?)", path, strerror(e));
    }
    return ZT_OK;
}

// Renames a finished temporary onto `path`; the temporary goes on failure.
static zt_status put_in_place(const char *tmp, const char *path) {
    if (rename(tmp, path) == 0) return ZT_OK;
    int e = errno;
    unlink(tmp);
    return zt_errorf("cannot rename %s onto data file %s: %s", tmp, path, strerror(e));
}

// The train and validation temporaries into place, marked as a pair in between
// (data_pairing.h); both temporaries go on failure.
static zt_status put_pair_in_place(const char *train_tmp, const char *train, const char *val_tmp,
                                   const char *val) {
    zt_status s = zt_pair_begin(train, val);
    if (s == ZT_OK) s = put_in_place(train_tmp, train);
    else unlink(train_tmp);
    if (s == ZT_OK) s = put_in_place(val_tmp, val);
    else unlink(val_tmp);
    if (s == ZT_OK) zt_pair_end(train);
    return s;
}

zt_status zt_dataset_write(const char *path, const uint16_t *tokens, size_t n) {
    char tmp[4500];
    ZT_TRY(write_token_tmp(path, tokens, n, tmp, sizeof tmp));
    return put_in_place(tmp, path);
}

// ---------------------------------------------------------------------------------------------
// nanoGPT's headerless token files (data/*/prepare.py: np.uint16 tokens written with tofile).

zt_status zt_prepare_nanogpt(const char *bin_path, const char *out_path) {
    ZT_ASSERT(bin_path != NULL && out_path != NULL);
    FILE *f = zt_fopen_regular(bin_path);
    if (!f) return zt_errorf("cannot open nanoGPT token file %s: %s; check the path", bin_path,
                             zt_file_error(errno));
    struct stat st;
    zt_status s = ZT_OK;
    if (fstat(fileno(f), &st) != 0 || st.st_size == 0 || st.st_size % 2 != 0)
        s = zt_errorf("nanoGPT token file %s has %lld bytes: not a whole number (at least one) "
                      "of uint16 tokens; pass nanoGPT's train.bin or val.bin",
                      bin_path, (long long)st.st_size);
    zt_token_writer w;
    if (s == ZT_OK) s = zt_token_writer_open(&w, out_path);
    if (s != ZT_OK) {
        fclose(f);
        return s;
    }
    static uint16_t buf[1 << 16];
    size_t got;
    while (s == ZT_OK && (got = fread(buf, sizeof buf[0], sizeof buf / sizeof buf[0], f)) > 0)
        s = zt_token_writer_append(&w, buf, got);
    if (s == ZT_OK && ferror(f))
        s = zt_errorf("cannot read nanoGPT token file %s: %s", bin_path, strerror(errno));
    fclose(f);
    if (s != ZT_OK) {
        zt_token_writer_abort(&w);
        return s;
    }
    return zt_token_writer_close(&w, NULL, 0);
}

// ---------------------------------------------------------------------------------------------
// Byte-level preparation of a text file.

// Reads the whole file into *out (*n bytes, caller frees). On error *out is NULL.
static zt_status read_whole_file(const char *path, unsigned char **out, size_t *n) {
    *out = NULL;
    *n = 0;
    // O_NONBLOCK: a FIFO is refused below instead of blocking the open
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) close(fd);
        return zt_errorf("cannot open text file %s: %s; check the path", path, strerror(e));
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return zt_errorf("text file %s is not a regular file; pass a plain text file", path);
    }
    size_t size = (size_t)st.st_size;
    if (size == 0) {
        fclose(f);
        return zt_errorf("text file %s is empty; pass a file with some text in it", path);
    }
    unsigned char *buf = malloc(size);
    if (!buf) {
        fclose(f);
        return zt_errorf("out of memory reading text file %s (%zu bytes)", path, size);
    }
    size_t got = fread(buf, 1, size, f);
    int err = ferror(f);
    fclose(f);
    if (got != size || err) {
        free(buf);
        return zt_errorf("cannot read text file %s: read %zu of %zu bytes", path, got, size);
    }
    *out = buf;
    *n = size;
    return ZT_OK;
}

// The bytes as a token file at its temporary name (tmp), not yet in place.
static zt_status write_bytes_as_tokens(const char *path, const unsigned char *bytes, size_t n,
                                       char *tmp, size_t cap) {
    uint16_t *tok = malloc(n * sizeof(uint16_t));
    if (!tok) return zt_errorf("out of memory preparing data file %s (%zu tokens)", path, n);
    for (size_t i = 0; i < n; i++) tok[i] = bytes[i];
    zt_status s = write_token_tmp(path, tok, n, tmp, cap);
    free(tok);
    return s;
}

zt_status zt_prepare_text(const char *text_path, const char *train_path, const char *val_path,
                          double val_frac) {
    ZT_ASSERT(text_path != NULL && train_path != NULL);
    int want_val = val_path != NULL && val_path[0] != '\0';
    if (want_val && !(val_frac > 0.0 && val_frac < 1.0))
        return zt_errorf("validation fraction %g must be strictly between 0 and 1 when writing "
                         "a validation file (%s)",
                         val_frac, val_path);

    zt_token_tmps_remove_dead(train_path);
    if (want_val) zt_token_tmps_remove_dead(val_path);
    unsigned char *text;
    size_t n;
    ZT_TRY(read_whole_file(text_path, &text, &n));

    // The validation split is the last round(n * val_frac) bytes.
    size_t n_val = want_val ? (size_t)((double)n * val_frac + 0.5) : 0;
    if (n_val > n) n_val = n;
    size_t n_train = n - n_val;
    zt_status s = ZT_OK;
    if (n_train < 2)
        s = zt_errorf("text file %s (%zu bytes) leaves %zu bytes for training file %s, fewer "
                      "than the 2 tokens of one sample; use more text or a smaller validation "
                      "fraction",
                      text_path, n, n_train, train_path);
    else if (want_val && n_val < 2)
        s = zt_errorf("text file %s (%zu bytes) leaves %zu bytes for validation file %s, fewer "
                      "than the 2 tokens of one sample; use more text or a larger validation "
                      "fraction",
                      text_path, n, n_val, val_path);
    // both files written before either is put in place (data_pairing.h)
    char train_tmp[4500], val_tmp[4500] = "";
    if (s == ZT_OK) s = write_bytes_as_tokens(train_path, text, n_train, train_tmp, sizeof train_tmp);
    if (s == ZT_OK && want_val) {
        s = write_bytes_as_tokens(val_path, text + n_train, n_val, val_tmp, sizeof val_tmp);
        if (s != ZT_OK) unlink(train_tmp);
    }
    free(text);
    if (s != ZT_OK) return s;
    return want_val ? put_pair_in_place(train_tmp, train_path, val_tmp, val_path)
                    : put_in_place(train_tmp, train_path);
}

// ---------------------------------------------------------------------------------------------
// Streaming writer (same format; the header's count is written last).

static zt_status writer_tmp_name(char *tmp, size_t cap, const char *path) {
    return zt_tmp_name(tmp, cap, path);
}

// Writes the header for n tokens at the start of f, flushes and syncs it.
static int finish_token_file(FILE *f, size_t n) {
    int32_t header[ZT_DATA_HEADER_INTS] = {0};
    header[0] = ZT_DATA_MAGIC;
    header[1] = ZT_DATA_VERSION;
    header[2] = (int32_t)n;
    return fseek(f, 0, SEEK_SET) == 0 && fwrite(header, sizeof header, 1, f) == 1 &&
           fflush(f) == 0 && fsync(fileno(f)) == 0;
}

zt_status zt_token_writer_open(zt_token_writer *w, const char *path) {
    ZT_ASSERT(w && path);
    memset(w, 0, sizeof *w);
    if (strlen(path) >= sizeof w->path) return zt_errorf("cannot write data file %s: path too long", path);
    snprintf(w->path, sizeof w->path, "%s", path);
    ZT_TRY(writer_tmp_name(w->tmp, sizeof w->tmp, path));
    w->f = fopen(w->tmp, "w+b");
    if (!w->f)
        return zt_errorf("cannot create %s (for data file %s): %s; check that the directory "
                         "exists and is writable",
                         w->tmp, path, strerror(errno));
    static const int32_t zeros[ZT_DATA_HEADER_INTS];  // the header, filled in at close
    if (fwrite(zeros, sizeof zeros, 1, w->f) != 1) {
        int e = errno;
        zt_token_writer_abort(w);
        return zt_errorf("cannot write data file %s: %s (disk full?)", path, strerror(e));
    }
    return ZT_OK;
}

zt_status zt_token_writer_append(zt_token_writer *w, const uint16_t *tokens, size_t n) {
    ZT_ASSERT(w && w->f && (tokens || n == 0));
    if (w->n + n > (size_t)INT32_MAX)
        return zt_errorf("cannot write data file %s: more than the format's limit of %d tokens; "
                         "split the text into several runs of prepare",
                         w->path, INT32_MAX);
    if (n && fwrite(tokens, sizeof *tokens, n, w->f) != n)
        return zt_errorf("cannot write data file %s: %s (disk full?)", w->path, strerror(errno));
    w->n += n;
    return ZT_OK;
}

void zt_token_writer_abort(zt_token_writer *w) {
    if (!w) return;
    if (w->f) {
        fclose(w->f);
        unlink(w->tmp);
    }
    w->f = NULL;
}

// Copies the last n_val tokens of w's file into a new token file at val_path (as a temporary
// file whose name goes to val_tmp), finished and synced but not yet renamed.
static zt_status split_tail(zt_token_writer *w, const char *val_path, size_t n_val, char *val_tmp,
                            size_t cap) {
    ZT_TRY(writer_tmp_name(val_tmp, cap, val_path));
    FILE *v = fopen(val_tmp, "wb");
    if (!v)
        return zt_errorf("cannot create %s (for data file %s): %s; check that the directory "
                         "exists and is writable",
                         val_tmp, val_path, strerror(errno));
    int32_t zeros[ZT_DATA_HEADER_INTS] = {0};
    int ok = fwrite(zeros, sizeof zeros, 1, v) == 1;
    long start = (long)(ZT_DATA_HEADER_BYTES + (w->n - n_val) * sizeof(uint16_t));
    ok = ok && fflush(w->f) == 0 && fseek(w->f, start, SEEK_SET) == 0;
    static uint16_t buf[1 << 16];
    for (size_t done = 0; ok && done < n_val;) {
        size_t k = zt_min_sz(n_val - done, sizeof buf / sizeof buf[0]);
        ok = fread(buf, sizeof buf[0], k, w->f) == k && fwrite(buf, sizeof buf[0], k, v) == k;
        done += k;
    }
    ok = ok && finish_token_file(v, n_val);
    int e = errno;
    if (fclose(v) != 0) ok = 0;
    if (ok && ftruncate(fileno(w->f), start) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        unlink(val_tmp);
        return zt_errorf("cannot write data file %s: %s (disk full?)", val_path, strerror(e));
    }
    return ZT_OK;
}

zt_status zt_token_writer_close(zt_token_writer *w, const char *val_path, size_t n_val) {
    ZT_ASSERT(w && w->f);
    int want_val = val_path && val_path[0];
    ZT_ASSERT(!want_val || n_val <= w->n);
    char val_tmp[4096 + 300] = "";
    zt_status s = ZT_OK;
    if (want_val) {
        s = split_tail(w, val_path, n_val, val_tmp, sizeof val_tmp);
        if (s == ZT_OK) w->n -= n_val;
    }
    if (s == ZT_OK && !finish_token_file(w->f, w->n))
        s = zt_errorf("cannot write data file %s: %s (disk full?)", w->path, strerror(errno));
    int closed = fclose(w->f) == 0;
    w->f = NULL;
    if (s == ZT_OK && !closed) s = zt_errorf("cannot write data file %s: %s", w->path, strerror(errno));
    if (s != ZT_OK) {
        unlink(w->tmp);
        if (val_tmp[0]) unlink(val_tmp);
        return s;
    }
    return want_val ? put_pair_in_place(w->tmp, w->path, val_tmp, val_path)
                    : put_in_place(w->tmp, w->path);
}
