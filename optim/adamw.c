// AdamW over a range of the flat buffer, tensor by tensor (weight decay differs).
#include "adamw.h"

#include <math.h>

#include "adamw_math.h"

void zt_adamw_init(zt_adamw *o, const zt_backend *be, size_t lo, size_t hi) {
    ZT_ASSERT(lo <= hi);
    o->be = be;
    o->lo = lo;
    o->hi = hi;
    o->m = zt_be_alloc(be, ZT_MEM_OPTIMIZER, (hi - lo) * sizeof(float));
    o->v = zt_be_alloc(be, ZT_MEM_OPTIMIZER, (hi - lo) * sizeof(float));
    o->t = 0;
}

void zt_adamw_free(zt_adamw *o) {
    if (o->be) {
        zt_be_free(o->be, o->m);
        zt_be_free(o->be, o->v);
    }
    o->m = o->v = NULL;
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

void zt_adamw_step(zt_adamw *o, float *params, const float *grads, const zt_layout *lay,
                   const zt_adamw_config *c, float lr, float grad_scale) {
    o->t++;
    zt_adamw_hparams h = zt_adamw_hparams_at(c, o->t, lr, grad_scale);
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        size_t a = t->offset > o->lo ? t->offset : o->lo;
        size_t b = zt_min_sz(t->offset + t->numel, o->hi);
        if (a >= b) continue;
        float wd = t->decay ? c->weight_decay : 0.0f;
        o->be->ops->adamw(o->be, params + a, o->m + (a - o->lo), o->v + (a - o->lo), grads + a,
                          b - a, wd, &h);
    }
}
