// Element types of tensors and messages: what the comm backends move and reduce, and what
// the model stores its parameters and gradients in (docs/design.md, "bf16").
#ifndef ZT_DTYPE_H
#define ZT_DTYPE_H

#include <stddef.h>

#include "common.h"

typedef enum { ZT_F32 = 0, ZT_F64, ZT_I32, ZT_I64, ZT_U8, ZT_BF16, ZT_DTYPE_COUNT } zt_dtype;

static inline size_t zt_dtype_size(zt_dtype dt) {
    static const size_t sizes[ZT_DTYPE_COUNT] = {4, 8, 4, 8, 1, 2};
    ZT_ASSERTF(dt >= 0 && dt < ZT_DTYPE_COUNT, "bad dtype %d", (int)dt);
    return sizes[dt];
}
static inline const char *zt_dtype_name(zt_dtype dt) {
    static const char *const names[ZT_DTYPE_COUNT] = {"f32", "f64", "i32", "i64", "u8", "bf16"};
    return dt >= 0 && dt < ZT_DTYPE_COUNT ? names[dt] : "?";
}

#endif
