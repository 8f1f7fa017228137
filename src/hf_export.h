// Exporting the model as a Hugging Face GPT-2 directory.
#ifndef ZT_HF_EXPORT_H
#define ZT_HF_EXPORT_H

#include "gpt2.h"

// Writes dir/model.safetensors (Hugging Face GPT-2 names and layouts: Conv1D weights
// transposed to (in, out), wte without the vocabulary padding) and dir/config.json.
// The model must hold every tensor whole (one stage, tp = 1). Creates dir if needed.
zt_status zt_hf_export(const zt_gpt2 *m, const char *dir);

#endif
