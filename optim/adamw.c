// AdamW over a range of the flat buffer, tensor by tensor (weight decay differs).
#include "adamw.h"

#include <math.h>

#include "adamw_math.h"

float *zt_master_alloc(const zt_backend *be, zt_dtype dtype, size_t n) {
    ZT_ASSERT(dtype == ZT_F32 || dtype == ZT_BF16);
    return dtype == ZT_BF16 ? zt_be_alloc(be, ZT_MEM_OPTIMIZER, n * sizeof(float)) : NULL;
}

void zt_master_from_params(const zt_backend *be, float *master, const void *params, size_t lo,
                           size_t hi) {
    if (hi > lo) be->ops->bf16_to_fp32(be, master, (const zt_bf16 *)params + lo, hi - lo);
}

void zt_adamw_init(zt_adamw *o, const zt_backend *be, size_t lo, size_t hi, zt_dtype dtype) {
    ZT_ASSERT(lo <= hi);
    o->be = be;
    o->lo = lo;
    o->hi = hi;
    o->dtype = dtype;
    o->master = zt_master_alloc(be, dtype, hi - lo);
    o->m = zt_be_alloc(be, ZT_MEM_OPTIMIZER, (hi - lo) * sizeof(float));
    o->v = zt_be_alloc(be, ZT_MEM_OPTIMIZER, (hi - lo) * sizeof(float));
    o->t = 0;
}

void zt_adamw_free(zt_adamw *o) {
    if (o->be) {
        zt_be_free(o->be, o->master);
        zt_be_free(o->be, o->m);
        zt_be_free(o->be, o->v);
    }
    o->master = o->m = o->v = NULL;
}

zt_adamw_hparams zt_adamw_hparams_at(const zt_adamw_config *c, int t, float lr, float grad_scale) {
    zt_adamw_hparams h = {lr,
                          c->beta1,
                          c->beta2,
                          c->eps,
                          1.0f - powf(c->beta1, (float)t),
                          1.0f - powf(c->beta2, (float)t),
                          grad_scale};
    return h;
}

void zt_adamw_step(zt_adamw *o, void *params, const void *grads, const zt_layout *lay,
                   const zt_adamw_config *c, float lr, float grad_scale) {
    o->t++;
    zt_adamw_hparams h = zt_adamw_hparams_at(c, o->t, lr, grad_scale);
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        size_t a = t->offset > o->lo ? t->offset : o->lo;
        size_t b = zt_min_sz(t->offset + t->numel, o->hi);
        if (a >= b) continue;
        float wd = t->decay ? c->weight_decay : 0.0f;
        float *m = o->m + (a - o->lo), *v = o->v + (a - o->lo);
        if (o->dtype == ZT_BF16)
            o->be->ops->adamw_bf16(o->be, o->master + (a - o->lo), (zt_bf16 *)params + a, m, v,
                                   (const zt_bf16 *)grads + a, b - a, wd, &h);
        else
            o->be->ops->adamw(o->be, (float *)params + a, m, v, (const float *)grads + a, b - a,
                              wd, &h);
    }
}
