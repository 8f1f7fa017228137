// --init-from: a Hugging Face GPT-2 directory or model.safetensors, or an llm.c file.
#ifndef ZT_HF_IMPORT_H
#define ZT_HF_IMPORT_H

#include "gpt2.h"

// The model shape stored in `path` (--init-from): an llm.c fp32 file (its header), a
// Hugging Face directory (config.json, else its model.safetensors) or a .safetensors
// file (config.json beside it, else inferred from the tensor shapes: wte gives vocab and
// n_embd, wpe n_ctx, the h.N prefixes n_layer). *head_known is 0 when n_head could not be
// read (tensor shapes do not hold it). Vp is left 0 (the tp degree pads it). Errors name
// the file.
zt_status zt_init_read_shape(const char *path, zt_model_shape *shape, int *head_known);

// Fills this rank's parameters of `m` from `path` (any of the three kinds above),
// through the global index map, so every layout loads the same values. Safetensors keys
// may carry the `transformer.` prefix or not; lm_head.weight, when present, must equal
// wte (the head is tied). F32, BF16 and F16 are read (widened to fp32). Errors name the
// file and the tensor; so does a weight that is NaN or infinite.
zt_status zt_init_load(zt_gpt2 *m, const char *path);

#endif
