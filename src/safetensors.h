// Writing safetensors files (the Hugging Face tensor container).
#ifndef ZT_SAFETENSORS_H
#define ZT_SAFETENSORS_H

#include <stdint.h>

#include "common.h"

typedef struct {
    const char *name;
    int ndim;
    int64_t shape[2];
    const float *data; // row-major float32
} zt_st_tensor;

// Writes n float32 tensors to `path` (through a temporary name, renamed when complete,
// so a crash never leaves a half-written file under the real name).
zt_status zt_safetensors_write(const char *path, const zt_st_tensor *t, int n);

#endif
