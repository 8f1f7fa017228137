// Exporting the model as a Hugging Face GPT-2 directory.
#ifndef ZT_HF_EXPORT_H
#define ZT_HF_EXPORT_H

#include "layout.h"

// Writes dir/model.safetensors (Hugging Face GPT-2 names and layouts: Conv1D weights
// transposed to (in, out), wte without the vocabulary padding) and dir/config.json from
// the flat parameters of every (pipeline stage, tp rank) part: params[i] laid out by
// lays[i]. A tp-split tensor is assembled from its slices; a tensor held by two stages
// (the tied wte) is written once, from the first part that holds it. Creates dir if
// needed.
zt_status zt_hf_export(const zt_model_shape *shape, const zt_layout *lays,
                       const float *const *params, int n_parts, const char *dir);

#endif
