// Loading model weights from an llm.c fp32 checkpoint (train_gpt2.c's model file).
#ifndef ZT_LLMC_CHECKPOINT_H
#define ZT_LLMC_CHECKPOINT_H

#include "gpt2.h"

#define ZT_LLMC_MAGIC 20240326
#define ZT_LLMC_VERSION_FP32 3
#define ZT_LLMC_VERSION_BF16 5

// Reads the header of `path` into a model shape (for checking against the config).
zt_status zt_llmc_read_shape(const char *path, zt_model_shape *out);

// Fills this rank's parameters of `m` from the checkpoint. The file's vocabulary
// padding may differ from ours (it is remade: padded rows are zero). Fails with a
// message naming the problem when the file is missing, truncated, not an fp32 llm.c
// model, or of another shape than m.
zt_status zt_llmc_load(zt_gpt2 *m, const char *path);

#endif
