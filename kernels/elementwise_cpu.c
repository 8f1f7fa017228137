// Elementwise kernels: GELU, residual add, accumulate.
#include "gelu_math.h"
#include "kernels.h"

void zt_gelu_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) out[i] = zt_gelu(inp[i]);
}

void zt_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) dinp[i] = zt_gelu_grad(inp[i]) * dout[i];
}

void zt_add(float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void zt_accumulate(float *y, const float *x, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}
