// GELU, tanh approximation (as GPT-2), and its derivative.
#ifndef ZT_GELU_MATH_H
#define ZT_GELU_MATH_H
#include "zt_hd.h"

#define ZT_GELU_K 0.7978845608028654f // sqrt(2/pi)

static inline ZT_HD float zt_gelu(float x) {
    float u = ZT_GELU_K * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

static inline ZT_HD float zt_gelu_grad(float x) {
    float u = ZT_GELU_K * (x + 0.044715f * x * x * x);
    float t = tanhf(u);
    float du = ZT_GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}
#endif
