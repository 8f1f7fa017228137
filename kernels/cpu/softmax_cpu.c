// Row softmax pieces for the CPU kernels (attention, cross entropy): the math of
// softmax_math.h with expf vectorized through glibc's libmvec. Scalar glibc expf costs
// ~5 ns; the vector one ~1 ns per element (2-core AMD EPYC, AVX2), and the loss alone
// takes 2 * B*T*V of them per step.
//
// Rows go in blocks of ZT_VBLOCK floats and a short tail through a padded block, so
// every element takes the same vector expf whatever the row length, its offset or the
// thread count: results stay bit-identical across thread counts.
#include <math.h>
#include <string.h>

#include "kernels.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
// glibc's <math.h> declares the libmvec variants (_ZGV*_expf) only under -ffast-math,
// which we never use (it would change more than expf); this declaration lets
// `omp simd` loops call them. libmvec's expf is within 4 ulp (glibc's libm-test-ulps;
// measured: 3 ulp from scalar expf, 2.2e-7 relative from exp in double).
__attribute__((__simd__("notinbranch"))) float expf(float);
#endif

#define ZT_VBLOCK 16

float zt_cpu_row_max(const float *x, int n) {
    float mb[ZT_VBLOCK];
    for (int k = 0; k < ZT_VBLOCK; k++) mb[k] = -INFINITY;
    int i = 0;
    for (; i + ZT_VBLOCK <= n; i += ZT_VBLOCK)
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) mb[k] = x[i + k] > mb[k] ? x[i + k] : mb[k];
    float m = -INFINITY;
    for (int k = 0; k < ZT_VBLOCK; k++) m = mb[k] > m ? mb[k] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m; // max is exact in any order
    return m;
}

float zt_cpu_row_sumexp(const float *x, int n, float m) {
    float acc[ZT_VBLOCK] = {0};
    int i = 0;
    for (; i + ZT_VBLOCK <= n; i += ZT_VBLOCK)
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) acc[k] += expf(x[i + k] - m);
    if (i < n) {
        float t[ZT_VBLOCK];
        for (int k = 0; k < ZT_VBLOCK; k++) t[k] = i + k < n ? x[i + k] : -INFINITY; // exp -> 0
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) acc[k] += expf(t[k] - m);
    }
    float s = 0.0f;
    for (int k = 0; k < ZT_VBLOCK; k++) s += acc[k]; // fixed order: deterministic
    return s;
}

void zt_cpu_row_exp(float *out, const float *x, float sub, int n) {
    int i = 0;
    for (; i + ZT_VBLOCK <= n; i += ZT_VBLOCK)
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) out[i + k] = expf(x[i + k] - sub);
    if (i < n) {
        float t[ZT_VBLOCK] = {0}, o[ZT_VBLOCK];
        memcpy(t, x + i, (size_t)(n - i) * sizeof(float));
#pragma omp simd
        for (int k = 0; k < ZT_VBLOCK; k++) o[k] = expf(t[k] - sub);
        memcpy(out + i, o, (size_t)(n - i) * sizeof(float));
    }
}
