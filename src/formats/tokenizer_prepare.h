// `zerotrain prepare --tokenizer gpt2`: text files to llm.c token files with GPT-2 BPE, streamed.
#ifndef ZT_TOKENIZER_PREPARE_H
#define ZT_TOKENIZER_PREPARE_H

#include <stddef.h>

#include "common.h"

typedef struct {
    const char *const *texts;  // (n_texts) input files; each one is a document
    int n_texts;
    const int *is_jsonl;       // (n_texts) 1 where texts[i] is a JSONL file, each line a
                               // document whose text is its string field json_field (NULL: none)
    const char *json_field;
    const char *vocab;         // gpt2.tiktoken
    const char *out;           // training token file
    const char *val_out;       // validation token file, or NULL / "" for none
    double val_frac;           // the last val_frac of the tokens go to val_out
    int invalid;               // ZT_BPE_INVALID_KEEP or ZT_BPE_INVALID_REPLACE
    size_t chunk_bytes;        // bytes per parallel chunk (0: 1 MiB)
    int progress;              // 1 always, 0 never, -1 when the input is 32 MiB or more
    // What this process may use, for a stretch of text with no safe cut (encoded as one chunk,
    // about 6 bytes per byte with the text): the address-space limit (ulimit -v) and the
    // memory it may still take at the start (MemAvailable, the memory cgroup); 0 = unknown.
    double as_limit, mem_room;
} zt_prepare_gpt2_opts;

typedef struct {
    size_t documents;   // documents written (text files and JSONL lines)
    size_t bytes;       // text bytes read
    size_t tokens;      // tokens written (both files, end-of-text tokens included)
    size_t val_tokens;  // of which in the validation file
    double seconds;     // wall time of the encoding (vocabulary load excluded)
    int threads;
} zt_prepare_stats;

// Writes the GPT-2 tokens of every text file (every line of a JSONL file), in order, each document preceded by the
// end-of-text token (50256), as llm.c's data scripts do, so one separates every two documents.
// The text is read in chunks cut where the GPT-2 pattern cannot join across them
// (zt_bpe_safe_cut), so memory stays a few chunks per thread whatever the corpus size; the
// chunks are encoded by all OpenMP threads and written in order: the ids are those of encoding
// each file whole. A stretch with no safe cut is held whole, so memory grows with the longest
// one (about 6 bytes per byte: the text and zt_bpe_encode_bytes). Fails with one message
// (nothing written) for a missing or unreadable text file, a missing or malformed vocabulary,
// a stretch with no safe cut that would not fit as_limit or mem_room (checked before it is
// read further), or a write error. stats may be NULL.
zt_status zt_prepare_gpt2(const zt_prepare_gpt2_opts *o, zt_prepare_stats *stats);

#endif
