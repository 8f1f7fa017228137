// The bf16 ops that add into a bf16 gradient or read bf16 weights through an fp32 kernel: the
// bf16 values are widened into the backend's scratch (exact), the fp32 kernel of
// kernels_cuda.h runs on them, and what it wrote is rounded back once. So each op computes
// the fp32 kernel's arithmetic on the widened values, as the CPU's bf16 group does, and gets
// any speed-up of the fp32 kernel for free. Long ones run in chunks of the scratch.
// Compiled by gcc, as C, in `make cuda` only.
#include <cuda_runtime_api.h>
#include <string.h>

#include "bf16_cuda.h"
#include "cuda_check.h"

void zt_cuda_bf16_bias_backward(const zt_cuda_bf16 *b, zt_bf16 *dbias, const float *dout, int N,
                                int OC) {
    ZT_ASSERTF((size_t)OC <= ZT_CUDA_BF16_SCRATCH, "bias_backward_bf16: OC = %d > %zu", OC,
               ZT_CUDA_BF16_SCRATCH);
    zt_cuda_bf16_to_fp32(b->stream, b->scratch, dbias, (size_t)OC);
    zt_cuda_bias_backward(b->stream, b->scratch, dout, b->colsum, N, OC);
    zt_cuda_bf16_from_fp32(b->stream, dbias, b->scratch, (size_t)OC);
}

// Scratch: w, b widened (C each), then an fp32 chunk of rows when out is bf16.
void zt_cuda_bf16_layernorm_forward(const zt_cuda_bf16 *b, void *out, zt_dtype out_dt,
                                    float *mean, float *rstd, const float *inp, const zt_bf16 *w,
                                    const zt_bf16 *bias, int N, int C) {
    ZT_ASSERTF(C > 0 && C <= ZT_CUDA_BF16_MAX_ROW, "layernorm_forward_bf16: C = %d", C);
    ZT_ASSERT(out_dt == ZT_F32 || out_dt == ZT_BF16);
    float *wf = b->scratch, *bf = wf + C, *rows = bf + C;
    zt_cuda_bf16_to_fp32(b->stream, wf, w, (size_t)C);
    zt_cuda_bf16_to_fp32(b->stream, bf, bias, (size_t)C);
    if (out_dt == ZT_F32) {
        zt_cuda_layernorm_forward(b->stream, out, mean, rstd, inp, wf, bf, N, C);
        return;
    }
    int chunk = (int)((ZT_CUDA_BF16_SCRATCH - 2 * (size_t)C) / (size_t)C);
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int r = N - n0 < chunk ? N - n0 : chunk;
        size_t off = (size_t)n0 * C;
        zt_cuda_layernorm_forward(b->stream, rows, mean + n0, rstd + n0, inp + off, wf, bf, r, C);
        zt_cuda_bf16_from_fp32(b->stream, (zt_bf16 *)out + off, rows, (size_t)r * C);
    }
}

// Scratch: w, dw, db widened (C each).
void zt_cuda_bf16_layernorm_backward(const zt_cuda_bf16 *b, float *dinp, zt_bf16 *dw,
                                     zt_bf16 *db, const float *dout, const float *inp,
                                     const zt_bf16 *w, const float *mean, const float *rstd,
                                     int N, int C) {
    ZT_ASSERTF(C > 0 && C <= ZT_CUDA_BF16_MAX_ROW, "layernorm_backward_bf16: C = %d", C);
    float *wf = b->scratch, *dwf = wf + C, *dbf = dwf + C;
    zt_cuda_bf16_to_fp32(b->stream, wf, w, (size_t)C);
    zt_cuda_bf16_to_fp32(b->stream, dwf, dw, (size_t)C);
    zt_cuda_bf16_to_fp32(b->stream, dbf, db, (size_t)C);
    zt_cuda_layernorm_backward(b->stream, dinp, dwf, dbf, dout, inp, wf, mean, rstd, b->colsum, N,
                               C);
    zt_cuda_bf16_from_fp32(b->stream, dw, dwf, (size_t)C);
    zt_cuda_bf16_from_fp32(b->stream, db, dbf, (size_t)C);
}

// The squares of the widened values (exact) summed in double per chunk by the fp32 sums'
// kernels, the chunks' sums added on the GPU in order (b->sums), one copy back at the end.
void zt_cuda_bf16_sumsq(const zt_cuda_bf16 *b, double out[2], const zt_bf16 *x, size_t n) {
    if (!n) return;
    for (size_t s = 0; s < n; s += ZT_CUDA_BF16_SCRATCH) {
        size_t len = n - s < ZT_CUDA_BF16_SCRATCH ? n - s : ZT_CUDA_BF16_SCRATCH;
        zt_cuda_bf16_to_fp32(b->stream, b->scratch, x + s, len);
        zt_cuda_reduce(b->stream, b->reduce, b->scratch, len, 1);
        zt_cuda_sums_add(b->stream, b->sums, b->reduce, s == 0);
    }
    double r[2];
    ZT_CHECK_CUDA(cudaMemcpyAsync(r, b->sums, sizeof r, cudaMemcpyDeviceToHost, b->stream));
    ZT_CHECK_CUDA(cudaStreamSynchronize(b->stream));
    out[0] += r[0];
    out[1] += r[1];
}

// The fp32 update on the master with the widened gradient, then p = master rounded.
void zt_cuda_bf16_adamw(const zt_cuda_bf16 *b, float *master, zt_bf16 *p, float *m, float *v,
                        const zt_bf16 *g, size_t n, float wd, zt_adamw_hparams h) {
    for (size_t s = 0; s < n; s += ZT_CUDA_BF16_SCRATCH) {
        size_t len = n - s < ZT_CUDA_BF16_SCRATCH ? n - s : ZT_CUDA_BF16_SCRATCH;
        zt_cuda_bf16_to_fp32(b->stream, b->scratch, g + s, len);
        zt_cuda_adamw(b->stream, master + s, m + s, v + s, b->scratch, len, wd, h);
        zt_cuda_bf16_from_fp32(b->stream, p + s, master + s, len);
    }
}

// Chunks of whole quantization blocks, so each block sees the fp32 kernel's own update.
void zt_cuda_bf16_adamw8bit(const zt_cuda_bf16 *b, float *master, zt_bf16 *p, const zt_bf16 *g,
                            uint8_t *qm, uint8_t *qv, float *absmax_m, float *absmax_v, size_t n,
                            int block, const zt_q8_maps *maps, float wd, zt_adamw_hparams h) {
    ZT_ASSERT(block > 0 && (size_t)block <= ZT_CUDA_BF16_SCRATCH);
    size_t chunk = ZT_CUDA_BF16_SCRATCH / (size_t)block * (size_t)block;
    for (size_t s = 0; s < n; s += chunk) {
        size_t len = n - s < chunk ? n - s : chunk, j = s / (size_t)block;
        zt_cuda_bf16_to_fp32(b->stream, b->scratch, g + s, len);
        zt_cuda_adamw8bit(b->stream, master + s, b->scratch, qm + s, qv + s, absmax_m + j,
                          absmax_v + j, len, block, maps, wd, h);
        zt_cuda_bf16_from_fp32(b->stream, p + s, master + s, len);
    }
}
