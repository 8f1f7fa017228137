// Exporting the model as a Hugging Face GPT-2 directory.
#ifndef ZT_HF_EXPORT_H
#define ZT_HF_EXPORT_H

#include "dtype.h"
#include "layout.h"

// Writes dir/model.safetensors (Hugging Face GPT-2 names and layouts: Conv1D weights
// transposed to (in, out), wte without the vocabulary padding) and dir/config.json from
// the flat parameters of every (pipeline stage, tp rank) part: params[i] laid out by
// lays[i]. A tp-split tensor is assembled from its slices; a tensor held by two stages
// (the tied wte) is written once, from the first part that holds it. config.json's bos/eos
// are 50256 for GPT-2's vocabulary, null for any other. With GPT-2's vocabulary (50257) GPT-2's
// tokenizer files go too, from the default gpt2.tiktoken; without it, a warning and no
// tokenizer files (never an error). Every tensor is written in `dtype`: ZT_F32 as given, or
// ZT_BF16 rounded to nearest even (config.json's torch_dtype says "float32" or "bfloat16");
// any other dtype is a caller's bug (fatal). Creates dir if needed; an earlier export there
// is replaced as a whole, a user's files stay (docs/checkpoints.md).
zt_status zt_hf_export(const zt_model_shape *shape, const zt_layout *lays,
                       const float *const *params, int n_parts, zt_dtype dtype,
                       const char *dir);

// Refuses (ZT_ERR) an export path that is empty or names something other than a directory
// (a data file would be swapped out of its place); zt_hf_export checks it first, and a
// command checks it before long work.
zt_status zt_hf_export_check_dir(const char *dir);

#endif
