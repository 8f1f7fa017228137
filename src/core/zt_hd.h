// ZT_HD marks kernel math compiled for both host (gcc, CPU loops) and device (nvcc).
#ifndef ZT_HD_H
#define ZT_HD_H
#ifdef __CUDACC__
#define ZT_HD __host__ __device__
#else
#define ZT_HD
#endif
// ZT_SIMD before a loop of unknown length in such math: gcc's -O2 leaves those scalar
// unless told (`omp simd`); nvcc and builds without OpenMP see nothing.
#if defined(_OPENMP) && !defined(__CUDACC__)
#define ZT_SIMD _Pragma("omp simd")
#else
#define ZT_SIMD
#endif
#include <math.h>
#endif
