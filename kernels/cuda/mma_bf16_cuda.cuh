// The warp's bf16 tensor-core tile product D = A B + C (m16n8k16, fp32 accumulation), the
// packed bf16 pairs its fragments hold and the shared-memory loads that fill them (ldmatrix),
// for the fused attention (attention_flash_cuda.cu).
//
// The fragments, per lane (PTX ISA, "Matrix Fragments for mma.m16n8k16", bf16), with
// g = lane / 4 (the group) and t = lane % 4 (the thread in the group); a register holds two
// bf16, the lower column (or row of B) in its low half:
//   A (16 x 16, row-major) a[0]: (g, 2t..2t+1)  a[1]: (g+8, 2t..)
//                          a[2]: (g, 2t+8..2t+9)  a[3]: (g+8, 2t+8..)
//   B (16 x 8, k by n)     b[0]: rows 2t..2t+1 of column g           b[1]: rows 2t+8..2t+9
//   C, D (16 x 8, fp32)    c[0], c[1]: (g, 2t), (g, 2t+1)           c[2], c[3]: (g+8, 2t..)
// On sm_80 and later the product and the loads are the instructions; elsewhere (the CUDA
// emulation the tests run on, compiled by g++, and any device pass below sm_80) the same
// per-lane semantics in plain code: each lane gathers its rows of A and columns of B (and
// ldmatrix's rows) from the lanes holding them with whole-warp shuffles and sums in fp32. So
// every index outside the instructions (the addresses, masks, stores) runs in the emulation.
#pragma once
#include <stdint.h>

#include "bf16_math.h"

#define ZT_MMA_FULL 0xffffffffu

// Two fp32 values rounded to bf16 (nearest even, bf16_math.h) in one register, lo first.
static __device__ inline uint32_t zt_mma_pack(float lo, float hi) {
    return (uint32_t)zt_bf16_from_fp32(lo) | (uint32_t)zt_bf16_from_fp32(hi) << 16;
}
// Two bf16 values (as stored) in one register, lo first.
static __device__ inline uint32_t zt_mma_pair(zt_bf16 lo, zt_bf16 hi) {
    return (uint32_t)lo | (uint32_t)hi << 16;
}
static __device__ inline float zt_mma_lo(uint32_t r) { return zt_bf16_to_fp32((zt_bf16)r); }
static __device__ inline float zt_mma_hi(uint32_t r) { return zt_bf16_to_fp32((zt_bf16)(r >> 16)); }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
static __device__ inline void zt_mma_bf16(float c[4], const uint32_t a[4], const uint32_t b[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#else
// Two registers in one shuffle (64 bits): half the shuffles of one register each.
static __device__ inline void zt_mma_shfl2(uint32_t *x, uint32_t *y, uint32_t u, uint32_t v,
                                           int src) {
    uint64_t w = __shfl_sync(ZT_MMA_FULL, (unsigned long long)u | (unsigned long long)v << 32,
                             src);
    *x = (uint32_t)w;
    *y = (uint32_t)(w >> 32);
}
static __device__ inline float zt_mma_dot2(uint32_t a, uint32_t b) {
    return zt_mma_lo(a) * zt_mma_lo(b) + zt_mma_hi(a) * zt_mma_hi(b);
}
// Lane (g, t) needs A's rows g and g+8 (lanes 4g..4g+3 hold them) and B's columns 2t and
// 2t+1 (lanes 8t..8t+3 and 8t+4..8t+7); the k-th quarter of each comes from thread k of
// those groups. All 32 lanes take part in every shuffle.
static __device__ inline void zt_mma_bf16(float c[4], const uint32_t a[4], const uint32_t b[2]) {
    int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    float s[4] = {c[0], c[1], c[2], c[3]};
    for (int k = 0; k < 4; k++) {
        uint32_t r0, r1, r2, r3, b00, b01, b10, b11;
        zt_mma_shfl2(&r0, &r1, a[0], a[1], 4 * g + k); // rows g, g+8; columns 2k..2k+1
        zt_mma_shfl2(&r2, &r3, a[2], a[3], 4 * g + k); // columns 2k+8..2k+9
        zt_mma_shfl2(&b00, &b01, b[0], b[1], 4 * (2 * t) + k);     // column 2t
        zt_mma_shfl2(&b10, &b11, b[0], b[1], 4 * (2 * t + 1) + k); // column 2t+1
        s[0] += zt_mma_dot2(r0, b00) + zt_mma_dot2(r2, b01);
        s[1] += zt_mma_dot2(r0, b10) + zt_mma_dot2(r2, b11);
        s[2] += zt_mma_dot2(r1, b00) + zt_mma_dot2(r3, b01);
        s[3] += zt_mma_dot2(r1, b10) + zt_mma_dot2(r3, b11);
    }
    for (int i = 0; i < 4; i++) c[i] = s[i];
}
#endif

// Two 8x8 bf16 matrices from shared memory (ldmatrix .x2): lane l < 16 gives the address of
// row l % 8 of matrix l / 8 (8 consecutive bf16, 16-byte aligned; the other lanes' addresses
// are not read); lane (g, t) receives in r[m] matrix m's row g, columns 2t and 2t+1 (the
// layout of an A or B fragment register), or with _trans its rows 2t and 2t+1 of column g (a
// fragment of the transposed matrix). One instruction where the per-element loads took two
// (or four, transposed).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
static __device__ inline void zt_ldsm_x2(uint32_t r[2], const zt_bf16 *row) {
    unsigned a = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(a));
}
static __device__ inline void zt_ldsm_x2_trans(uint32_t r[2], const zt_bf16 *row) {
    unsigned a = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(a));
}
#else
// Lane src's row address.
static __device__ inline const zt_bf16 *zt_ldsm_row(const zt_bf16 *row, int src) {
    return (const zt_bf16 *)(uintptr_t)__shfl_sync(ZT_MMA_FULL,
                                                   (unsigned long long)(uintptr_t)row, src);
}
static __device__ inline void zt_ldsm_x2(uint32_t r[2], const zt_bf16 *row) {
    int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int m = 0; m < 2; m++) {
        const zt_bf16 *q = zt_ldsm_row(row, 8 * m + g);
        r[m] = zt_mma_pair(q[2 * t], q[2 * t + 1]);
    }
}
static __device__ inline void zt_ldsm_x2_trans(uint32_t r[2], const zt_bf16 *row) {
    int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int m = 0; m < 2; m++) {
        const zt_bf16 *q0 = zt_ldsm_row(row, 8 * m + 2 * t);
        const zt_bf16 *q1 = zt_ldsm_row(row, 8 * m + 2 * t + 1);
        r[m] = zt_mma_pair(q0[g], q1[g]);
    }
}
#endif
