// Ops a backend may run as other ops of its own table (backend_impl.h): the definition in
// backend_ops.h written once, for every backend that does not fuse them.
#include "backend_impl.h"

void zt_gemm_epilogue_unfused(const zt_backend *be, zt_epilogue ep, int trans_a, int trans_b,
                              int M, int N, int K, const void *A, zt_dtype at, int lda,
                              const zt_bf16 *B, int ldb, void *C, zt_dtype ct,
                              const zt_bf16 *vec, const zt_bf16 *aux, float *wide, void *work) {
    const zt_backend_i *o = be->ops;
    if (ep == ZT_EPILOGUE_DGELU) {
        ZT_ASSERT(ct == ZT_BF16 && aux && wide);
        o->gemm_mixed(be, trans_a, trans_b, M, N, K, 1.0f, A, at, lda, B, ZT_BF16, ldb, 0.0f,
                      wide, ZT_F32, N, work);
        o->gelu_backward_bf16(be, C, ZT_BF16, aux, wide, (size_t)M * N);
        return;
    }
    ZT_ASSERT(ep == ZT_EPILOGUE_BIAS && vec && (ct == ZT_F32 || ct == ZT_BF16));
    if (ct == ZT_BF16) o->bias_broadcast_bf16(be, C, vec, M, N);
    o->gemm_mixed(be, trans_a, trans_b, M, N, K, 1.0f, A, at, lda, B, ZT_BF16, ldb,
                  ct == ZT_BF16 ? 1.0f : 0.0f, C, ct, N, work);
    if (ct == ZT_F32) o->bias_forward_bf16(be, C, vec, M, N);
}
