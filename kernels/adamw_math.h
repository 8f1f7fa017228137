// One AdamW element update (decoupled weight decay, bias correction), as PyTorch's AdamW.
#ifndef ZT_ADAMW_MATH_H
#define ZT_ADAMW_MATH_H
#include "zt_hd.h"

typedef struct {
    float lr, beta1, beta2, eps;
    float bc1, bc2;   // bias corrections 1 - beta^t
    float grad_scale; // applied to the gradient first (clipping)
} zt_adamw_hparams;

// Updates *p, *m, *v from gradient g; `wd` is the weight decay for this tensor (0 for
// biases and LayerNorms).
static inline ZT_HD void zt_adamw_update(float *p, float *m, float *v, float g, float wd,
                                         const zt_adamw_hparams *h) {
    g *= h->grad_scale;
    float mm = h->beta1 * *m + (1.0f - h->beta1) * g;
    float vv = h->beta2 * *v + (1.0f - h->beta2) * g * g;
    *m = mm;
    *v = vv;
    float denom = sqrtf(vv) / sqrtf(h->bc2) + h->eps;
    float x = *p * (1.0f - h->lr * wd);
    *p = x - (h->lr / h->bc1) * mm / denom;
}
#endif
