// Reading and writing safetensors files (the Hugging Face tensor container).
#ifndef ZT_SAFETENSORS_H
#define ZT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

typedef enum { ZT_ST_F32 = 0, ZT_ST_F16, ZT_ST_BF16, ZT_ST_U8 } zt_st_dtype;

typedef struct {
    const char *name;
    int ndim;
    int64_t shape[2];
    const void *data;   // row-major, `dtype` elements (F32, BF16 or U8 for writing)
    zt_st_dtype dtype;  // 0 = F32
} zt_st_tensor;

// Writes n tensors to `path` through a temporary name (fsync'ed, then renamed when
// complete, so a crash never leaves a half-written file under the real name).
zt_status zt_safetensors_write(const char *path, const zt_st_tensor *t, int n);

// As zt_safetensors_write, with `meta` (a JSON object's members without braces, e.g.
// "\"format\":\"pt\"", or NULL) as __metadata__; when `direct`, writes `path` itself
// (the caller's directory provides atomicity). *hash (XXH3-64, seed 0, of every byte of
// the file, computed while writing) and *bytes are set when not NULL.
zt_status zt_safetensors_write_ex(const char *path, const zt_st_tensor *t, int n,
                                  const char *meta, int direct, uint64_t *hash,
                                  uint64_t *bytes);

// One tensor of an opened file.
typedef struct {
    char *name;
    zt_st_dtype dtype;
    int ndim;             // 0..4
    int64_t shape[4];
    size_t numel;
    size_t begin, end;    // byte range in the data section (checked against the file)
} zt_st_entry;

// An opened file: mapped read-only, header parsed and checked.
typedef struct {
    char path[512];
    void *map;
    size_t map_bytes;
    const uint8_t *data;  // start of the data section
    zt_st_entry *t;       // (n)
    int n;
} zt_st_file;

// Opens and checks `path`: header length and JSON, every dtype known, shapes against
// byte ranges, every range inside the file. One error naming the file on anything
// truncated or corrupt. Close with zt_st_close (also after a failed open).
zt_status zt_st_open(zt_st_file *f, const char *path);
void zt_st_close(zt_st_file *f);

// Index of the tensor named `name`, or -1.
int zt_st_find(const zt_st_file *f, const char *name);

// Elements [first, first + n) of tensor i as fp32 (F32 copied, F16 / BF16 widened
// exactly, U8 as its value).
void zt_st_read_f32(const zt_st_file *f, int i, size_t first, size_t n, float *out);

// The raw bytes of tensor i.
static inline const void *zt_st_bytes(const zt_st_file *f, int i) {
    return f->data + f->t[i].begin;
}

#endif
