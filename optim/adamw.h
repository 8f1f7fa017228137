// AdamW with fp32 state over one contiguous range of the flat parameter buffer: the
// whole buffer (--zero 0) or this rank's ZeRO shard (--zero 1).
#ifndef ZT_ADAMW_H
#define ZT_ADAMW_H

#include <stddef.h>

#include "adamw_math.h"
#include "backend.h"
#include "layout.h"

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
} zt_adamw_config;

typedef struct {
    const zt_backend *be; // where the state lives and the update runs
    size_t lo, hi;   // element range [lo, hi) of the flat buffer this optimizer updates
    zt_dtype dtype;  // the parameters' and gradients' type: ZT_F32 or ZT_BF16
    float *master;   // (hi - lo) fp32 master weights under bf16, else NULL (device memory)
    float *m, *v;    // (hi - lo) first and second moments (device memory)
    int t;           // steps taken (for bias correction)
} zt_adamw;

// The per-step constants of AdamW's element update (kernels/adamw_math.h) for step t
// (1-based). Every optimizer that runs the fp32 update builds them here, so their fp32
// paths agree bit for bit.
zt_adamw_hparams zt_adamw_hparams_at(const zt_adamw_config *c, int t, float lr, float grad_scale);

// Allocates zeroed moments for [lo, hi) on `be` (category optimizer) and, for bf16
// parameters (dtype ZT_BF16), the fp32 master weights (zeros until zt_master_from_params or a
// checkpoint fills them). Free with zt_adamw_free, which accepts a zeroed object.
void zt_adamw_init(zt_adamw *o, const zt_backend *be, size_t lo, size_t hi, zt_dtype dtype);
void zt_adamw_free(zt_adamw *o);

// One step on params[lo, hi) from grads[lo, hi) (device memory of the backend given to
// init, both indexed like the flat buffer),
// the gradient first multiplied by grad_scale (clipping). Weight decay applies to the
// tensors the layout marks `decay`; alignment padding between tensors is left alone.
// Under bf16 the update runs on the fp32 masters and writes them, rounded, to params.
void zt_adamw_step(zt_adamw *o, void *params, const void *grads, const zt_layout *lay,
                   const zt_adamw_config *c, float lr, float grad_scale);

// master[0, hi - lo) = params[lo, hi) widened to fp32 (bf16 params; device memory): the
// master weights of parameters that were set in bf16 (a random start, loaded weights).
void zt_master_from_params(const zt_backend *be, float *master, const void *params, size_t lo,
                           size_t hi);

// Allocates n fp32 master weights for a dtype that needs them (ZT_BF16), else NULL.
float *zt_master_alloc(const zt_backend *be, zt_dtype dtype, size_t n);

#endif
