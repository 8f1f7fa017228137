// Token datasets in the llm.c format, addressed by global sample index.
#ifndef ZT_DATA_H
#define ZT_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

// File format (llm.c): 256 int32 header, little endian
//   [0] magic 20240520  [1] version 1  [2] number of tokens N  [3..255] zero
// then N uint16 tokens. Sample i of sequence length T is tokens [i*T, i*T+T] (T+1
// tokens: inputs are the first T, targets the last T), so there are (N-1)/T samples.
#define ZT_DATA_MAGIC 20240520
#define ZT_DATA_VERSION 1
#define ZT_DATA_HEADER_INTS 256

// One token file of a dataset: its mapping and where its samples sit in the epoch.
typedef struct {
    char path[512];
    void *map;               // whole file, mmap'ed read-only
    size_t map_bytes;
    const uint16_t *tokens;  // (n_tokens)
    size_t n_tokens;
    uint64_t n_samples;      // (n_tokens - 1) / T
    uint64_t first;          // index in the epoch of its first sample: the samples of the
                             // shards before it
} zt_data_shard;

// A dataset: one token file or an ordered list of them (shards), read as one sequence of
// samples. An epoch spans every shard, in order (or in one permutation of all their samples
// when shuffling); no sample crosses from one shard into the next.
typedef struct {
    char path[512];          // as given (a file, a comma-separated list or a glob)
    zt_data_shard *shards;   // (n_shards) in the order read
    int n_shards;
    const uint16_t *tokens;  // the first shard's tokens (shards[0].tokens)
    size_t n_tokens;         // tokens of every shard together
    int T;
    uint64_t n_samples;      // samples of every shard together: one epoch
    int shuffle;
    uint64_t seed;
    uint32_t *perm;          // (n_samples) permutation of the current epoch when shuffling
    uint64_t perm_epoch;
} zt_dataset;

// Where global sample g is read: its epoch, the shard and the sample's index in that shard.
typedef struct {
    uint64_t epoch;
    int shard;
    uint64_t sample;
} zt_data_position;

// Opens and checks the token files of `spec` for sequences of T tokens: a file, or shards as
// a comma-separated list and/or glob patterns (each pattern's matches in name order, the list
// in the order given: data_shards.h). Each file: magic, version, token count against the file
// size, at least one sample, and every token id < vocab (scanned once here, so a bad file
// fails before training). Errors name the file and the fix. Caller closes with
// zt_dataset_close (also on a half-opened dataset).
zt_status zt_dataset_open(zt_dataset *ds, const char *path, int T, int vocab, int shuffle,
                          uint64_t seed);
void zt_dataset_close(zt_dataset *ds);

// Global sample g (any value; it wraps around the file by epochs, reshuffled each
// epoch when shuffling) into inputs (T) and targets (T).
void zt_dataset_sample(zt_dataset *ds, uint64_t g, int32_t *inputs, int32_t *targets);

// Where zt_dataset_sample reads global sample g (the next one a checkpoint's run reads).
zt_data_position zt_dataset_locate(zt_dataset *ds, uint64_t g);

// Writes tokens in the format above (temporary name, then rename).
zt_status zt_dataset_write(const char *path, const uint16_t *tokens, size_t n);

// A token file written as it grows (tokens arrive in pieces, e.g. from a streaming
// tokenizer): open, append any number of times, then close (or abort). The file appears under
// its name only when closed: it is written to "<path>.tmp.<pid>", its header filled in at the
// end, synced and renamed.
typedef struct {
    FILE *f;
    char path[4096];
    char tmp[4096 + 300]; // "<path>.tmp.<pid>.<host>"
    size_t n;  // tokens appended so far
} zt_token_writer;

// Creates the temporary file. On error nothing is left behind.
zt_status zt_token_writer_open(zt_token_writer *w, const char *path);
// Appends n tokens. Fails when the file would pass the format's INT32_MAX tokens or on a
// write error; the caller then aborts.
zt_status zt_token_writer_append(zt_token_writer *w, const uint16_t *tokens, size_t n);
// Finishes the file. With val_path (non-NULL, non-empty), the last n_val tokens move to a
// second token file at val_path instead (the same way: temporary name, rename). Both files
// exist afterwards or, on error, neither new one (the writer is closed either way).
zt_status zt_token_writer_close(zt_token_writer *w, const char *val_path, size_t n_val);
// Drops the temporary file (a writer that failed or that the caller gives up); idempotent.
void zt_token_writer_abort(zt_token_writer *w);

// nanoGPT's token file (its prepare.py's train.bin / val.bin: uint16 tokens with no header)
// into the format above at out_path. Fails on an empty or odd-sized file.
zt_status zt_prepare_nanogpt(const char *bin_path, const char *out_path);

// Byte-level tokenization of a text file: every byte is a token (vocab 256). The last
// `val_frac` of the bytes go to val_path (skipped when val_path is NULL or empty).
zt_status zt_prepare_text(const char *text_path, const char *train_path, const char *val_path,
                          double val_frac);

#endif
