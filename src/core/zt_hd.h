// ZT_HD marks kernel math compiled for both host (gcc, CPU loops) and device (nvcc).
#ifndef ZT_HD_H
#define ZT_HD_H
#ifdef __CUDACC__
#define ZT_HD __host__ __device__
#else
#define ZT_HD
#endif
#include <math.h>
#endif
