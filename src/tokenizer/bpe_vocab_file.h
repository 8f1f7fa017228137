// The vocabulary file in tiktoken's format (gpt2.tiktoken), read into the vocabulary's tables;
// drawn in bpe_vocab_file.c. Internal to the tokenizer (zt_bpe_load, bpe.h, is the public
// face; zt_bpe_default_vocab, where the file is by default, is defined beside this reader).
#ifndef ZT_BPE_VOCAB_FILE_H
#define ZT_BPE_VOCAB_FILE_H

#include "bpe_vocab.h"

// Reads the file at path into a zeroed v and builds the tables (zt_bpe_vocab_build). Fails
// (status, message naming the file, the line where there is one, and the fix) on a missing,
// unreadable, oversized or malformed file, fewer than 256 tokens, ranks that are not 0 .. n-1
// each once, and the table checks. The caller frees v with zt_bpe_vocab_free either way.
zt_status zt_bpe_vocab_load(zt_bpe_vocab *v, const char *path);

#endif
