// GPT-2's tokenizer as Hugging Face files, for an exported model with GPT-2's vocabulary.
#ifndef ZT_HF_TOKENIZER_EXPORT_H
#define ZT_HF_TOKENIZER_EXPORT_H

#include "common.h"

// The files zt_hf_tokenizer_export writes, tokenizer_config.json (the mark) last.
#define ZT_HF_TOKENIZER_NFILES 4
extern const char *const zt_hf_tokenizer_files[ZT_HF_TOKENIZER_NFILES];

// Writes vocab.json, merges.txt, special_tokens_map.json and tokenizer_config.json into dir
// from the tiktoken-format vocabulary at vocab_path (gpt2.tiktoken), so that transformers'
// GPT2Tokenizer, GPT2TokenizerFast and AutoTokenizer load dir offline and encode as tiktoken's
// gpt2. n_ctx is the tokenizer's model_max_length. Each file goes through a temporary name,
// fsync and rename. All or nothing: on failure (status, message naming the file) none of the
// four is left in dir.
zt_status zt_hf_tokenizer_export(const char *vocab_path, int n_ctx, const char *dir);

// Whether dir/tokenizer_config.json carries the mark zt_hf_tokenizer_export writes, i.e. the
// four files are an export's own, not a user's.
int zt_hf_tokenizer_marked(const char *dir);

// Whether name is one of zt_hf_tokenizer_files.
int zt_hf_tokenizer_file(const char *name);

#endif
