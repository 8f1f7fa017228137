// The bf16 GEMM (bf16 A, B; fp32 C) and the choice of its path: oneDNN (its matmul primitive,
// matmul_dnnl_cpu.c, or its gemm API) where the CPU has bf16 instructions, else both operands
// widened to fp32 and zt_gemm (docs/design.md, "bf16").
//
// Debian's OpenBLAS 0.3.21 has no sbgemm, so the bf16 kernels come from oneDNN (the library
// PyTorch's CPU bf16 matmuls use). Debian builds libdnnl with the OpenMP runtime
// (DNNL_CPU_RUNTIME = OMP; `ldd libdnnl.so.2` lists libgomp.so.1, the one our -fopenmp
// links): its threads are the program's one pool; it sizes its work by omp_get_max_threads()
// and, inside a parallel region, runs on the calling thread (its dnnl_thread.hpp), as
// OpenBLAS does. tests/test_bf16.c checks that one OpenMP runtime is loaded.
// Without AVX512-BF16 or AMX-BF16 the fallback runs: oneDNN 2.6.3 emulates bf16 on other
// AVX-512 CPUs and has no bf16 GEMM below them (dnnl_unimplemented on this AVX2 machine).
#include <dnnl.h>
#include <pthread.h>
#include <stdio.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "kernels.h"

// Exported by libdnnl 2.x (src/common/gemm.cpp) but declared only in oneDNN's own tests, not
// in 2.6.3's <dnnl.h>. The convention is dnnl_sgemm's (declared there): row-major, transa /
// transb 'N' or 'T', a dnnl_status_t back. Its bfloat16_t is a struct of one uint16_t, so
// zt_bf16 pointers pass as they are.
dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N,
                                    dnnl_dim_t K, float alpha, const zt_bf16 *A, dnnl_dim_t lda,
                                    const zt_bf16 *B, dnnl_dim_t ldb, float beta, float *C,
                                    dnnl_dim_t ldc);

// AMX-BF16 (CPUID.(7,0):EDX[22]) and the OS's tile state in XCR0 (bits 17, 18). Linux also
// wants a per-process request for the tile data (arch_prctl), which oneDNN makes itself; its
// effective ISA (checked separately) says whether that worked.
static int cpu_amx_bf16(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22))) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & (3u << 17)) == (3u << 17);
#else
    return 0;
#endif
}

static zt_bf16_cpu g_cpu;
static int g_auto_dnnl; // what AUTO chooses: the check's verdict on this CPU
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;

static void cpu_detect(void) {
#if defined(__x86_64__) || defined(__i386__)
    // gcc's check includes the OS's AVX-512 state (XCR0), as for blas_core.c's levels.
    g_cpu.avx512_bf16 = __builtin_cpu_supports("avx512bf16") != 0;
#endif
    g_cpu.amx_bf16 = cpu_amx_bf16();
    g_cpu.dnnl_isa = (int)dnnl_get_effective_cpu_isa();
    // AUTO asks without leaving the check's message behind as a pending error.
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", zt_error_message());
    g_auto_dnnl = zt_gemm_bf16_dnnl_check(&g_cpu) == ZT_OK && zt_matmul_dnnl_check() == ZT_OK;
    zt_errorf("%s", saved);
}

const zt_bf16_cpu *zt_bf16_cpu_get(void) {
    pthread_once(&g_cpu_once, cpu_detect);
    return &g_cpu;
}

static const char *dnnl_isa_name(int isa) {
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "SSE4.1";
    case dnnl_cpu_isa_avx: return "AVX";
    case dnnl_cpu_isa_avx2: return "AVX2";
    case dnnl_cpu_isa_avx2_vnni: return "AVX2-VNNI";
    case dnnl_cpu_isa_avx512_core: return "AVX512-core";
    case dnnl_cpu_isa_avx512_core_vnni: return "AVX512-core-VNNI";
    case dnnl_cpu_isa_avx512_core_bf16: return "AVX512-core-BF16";
    case dnnl_cpu_isa_avx512_core_amx: return "AVX512-core-AMX";
    default: return "another ISA";
    }
}

zt_status zt_gemm_bf16_dnnl_check(const zt_bf16_cpu *cpu) {
    if (!cpu->avx512_bf16 && !cpu->amx_bf16)
        return zt_errorf("the oneDNN bf16 GEMM needs a CPU with AVX512-BF16 or AMX-BF16 "
                         "instructions and this one has neither");
    // The ISA values are bit sets: bf16's bits are in every ISA that has it (AMX included).
    int bf16 = (int)dnnl_cpu_isa_avx512_core_bf16;
    if ((cpu->dnnl_isa & bf16) != bf16)
        return zt_errorf("the CPU has %s but oneDNN dispatches only up to %s (is "
                         "ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA set?), so its bf16 GEMM "
                         "would not use them",
                         cpu->amx_bf16 ? "AMX-BF16" : "AVX512-BF16", dnnl_isa_name(cpu->dnnl_isa));
    return ZT_OK;
}

// The path asked for (AUTO: g_auto_dnnl decides).
static zt_bf16_gemm_path g_path = ZT_BF16_GEMM_AUTO;

static int is_dnnl(zt_bf16_gemm_path p) {
    return p == ZT_BF16_GEMM_DNNL || p == ZT_BF16_GEMM_DNNL_MATMUL;
}

zt_status zt_gemm_bf16_set_path(zt_bf16_gemm_path path) {
    ZT_ASSERT(path == ZT_BF16_GEMM_AUTO || is_dnnl(path) || path == ZT_BF16_GEMM_FALLBACK);
    if (is_dnnl(path)) ZT_TRY(zt_gemm_bf16_dnnl_check(zt_bf16_cpu_get()));
    if (path == ZT_BF16_GEMM_DNNL_MATMUL) ZT_TRY(zt_matmul_dnnl_check());
    g_path = path;
    return ZT_OK;
}

// AUTO's rule, fixed per CPU so that every run and resume multiplies the same way: oneDNN's
// matmul primitive wherever oneDNN has bf16 kernels (docs/design.md, "bf16": it writes a bf16
// C itself, and its kernels are the gemm API's), else the fallback.
zt_bf16_gemm_path zt_gemm_bf16_path(void) {
    if (g_path != ZT_BF16_GEMM_AUTO) return g_path;
    zt_bf16_cpu_get();
    return g_auto_dnnl ? ZT_BF16_GEMM_DNNL_MATMUL : ZT_BF16_GEMM_FALLBACK;
}

void zt_gemm_bf16_describe(char *buf, size_t size) {
    const zt_bf16_cpu *cpu = zt_bf16_cpu_get();
    const dnnl_version_t *v = dnnl_version();
    const char *isa = cpu->amx_bf16 && cpu->avx512_bf16 ? "AVX512-BF16, AMX-BF16"
                      : cpu->amx_bf16                   ? "AMX-BF16"
                      : cpu->avx512_bf16                ? "AVX512-BF16"
                                                        : "no AVX512-BF16 or AMX-BF16";
    zt_bf16_gemm_path p = zt_gemm_bf16_path();
    if (is_dnnl(p))
        snprintf(buf, size, "bf16 GEMM: oneDNN %d.%d.%d %s (%s; CPU: %s; oneDNN up to %s)",
                 v->major, v->minor, v->patch,
                 p == ZT_BF16_GEMM_DNNL_MATMUL ? "matmul primitive" : "gemm API",
                 g_path == ZT_BF16_GEMM_AUTO ? "chosen" : "forced", isa,
                 dnnl_isa_name(cpu->dnnl_isa));
    else
        snprintf(buf, size, "bf16 GEMM: fp32 fallback (widen + OpenBLAS sgemm; %s; CPU: %s)",
                 g_path == ZT_BF16_GEMM_FALLBACK ? "forced" : "chosen", isa);
}

size_t zt_gemm_bf16_workspace(int M, int N, int K) {
    if (is_dnnl(zt_gemm_bf16_path())) return 0;
    return (size_t)M * K + (size_t)K * N;
}

static void gemm_dnnl(int trans_a, int trans_b, int M, int N, int K, float alpha,
                      const zt_bf16 *A, int lda, const zt_bf16 *B, int ldb, float beta, float *C,
                      int ldc) {
    dnnl_status_t s = dnnl_gemm_bf16bf16f32(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K,
                                            alpha, A, lda, B, ldb, beta, C, ldc);
    // Only invalid arguments (a bug of ours) or a broken library fail here.
    ZT_ASSERTF(s == dnnl_success, "dnnl_gemm_bf16bf16f32 (%d x %d x %d) failed: status %d", M,
               N, K, (int)s);
}

static void gemm_fallback(int trans_a, int trans_b, int M, int N, int K, float alpha,
                          const zt_bf16 *A, int lda, const zt_bf16 *B, int ldb, float beta,
                          float *C, int ldc, float *work) {
    // A and B as stored (op's input), widened into packed copies: leading dimension = width
    // (at least 1, as BLAS asks even of empty matrices).
    int a_rows = trans_a ? K : M, a_cols = trans_a ? M : K;
    int b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
    int a_ld = a_cols > 1 ? a_cols : 1, b_ld = b_cols > 1 ? b_cols : 1;
    ZT_ASSERT(work || (size_t)M * K + (size_t)K * N == 0);
    float *a32 = work, *b32 = work + (size_t)M * K;
    zt_bf16_to_fp32_matrix(a32, a_ld, A, lda, a_rows, a_cols);
    zt_bf16_to_fp32_matrix(b32, b_ld, B, ldb, b_rows, b_cols);
    zt_gemm(trans_a, trans_b, M, N, K, alpha, a32, a_ld, b32, b_ld, beta, C, ldc);
}

// C = beta C, BLAS's meaning of an empty sum (K = 0); beta 0 never reads C, as BLAS.
static void scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float *c = &C[(size_t)i * ldc + j];
            *c = beta == 0.0f ? 0.0f : beta * *c;
        }
}

void zt_gemm_bf16(int trans_a, int trans_b, int M, int N, int K, float alpha, const zt_bf16 *A,
                  int lda, const zt_bf16 *B, int ldb, float beta, float *C, int ldc, float *work) {
    // Empty products are ours on both paths: oneDNN 2.6.3's bf16 GEMM leaves C untouched
    // when K = 0 (beta not applied; seen on an AMX Xeon).
    if (M == 0 || N == 0) return;
    if (K == 0) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    zt_bf16_gemm_path p = zt_gemm_bf16_path();
    if (p == ZT_BF16_GEMM_DNNL_MATMUL)
        zt_matmul_dnnl(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ZT_F32, ldc,
                       NULL);
    else if (p == ZT_BF16_GEMM_DNNL)
        gemm_dnnl(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else
        gemm_fallback(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, work);
}
