// The bf16 residual stream's ops on the GPU: the bf16 values widened into the bf16 group's
// scratch (exact), the fp32 kernels of kernels_cuda.h run on them, the result rounded once:
// the fp32 kernels' arithmetic, as the CPU's residual_bf16_cpu.c computes it (the add bit for
// bit; the LayerNorm in the GPU's lane order, as layernorm_forward). Compiled by gcc, as C, in
// `make cuda` only.
#include "residual_bf16_cuda.h"

// Scratch: x and y widened, half each.
void zt_cuda_bf16_add(const zt_cuda_bf16 *b, zt_bf16 *out, const zt_bf16 *x, const zt_bf16 *y,
                      size_t n) {
    size_t half = ZT_CUDA_BF16_SCRATCH / 2;
    float *xf = b->scratch, *yf = xf + half;
    for (size_t s = 0; s < n; s += half) {
        size_t len = n - s < half ? n - s : half;
        zt_cuda_bf16_to_fp32(b->stream, xf, x + s, len);
        zt_cuda_bf16_to_fp32(b->stream, yf, y + s, len);
        zt_cuda_add(b->stream, xf, xf, yf, len);
        zt_cuda_bf16_from_fp32(b->stream, out + s, xf, len);
    }
}

// Scratch: w, bias widened (C each), then a chunk of rows widened and, when out is bf16, the
// chunk's fp32 output.
void zt_cuda_bf16_layernorm_forward_bf16in(const zt_cuda_bf16 *b, void *out, zt_dtype out_dt,
                                           float *mean, float *rstd, const zt_bf16 *inp,
                                           const zt_bf16 *w, const zt_bf16 *bias, int N, int C) {
    ZT_ASSERTF(C > 0 && C <= ZT_CUDA_BF16_MAX_ROW, "layernorm_forward_bf16in: C = %d", C);
    ZT_ASSERT(out_dt == ZT_F32 || out_dt == ZT_BF16);
    float *wf = b->scratch, *bf = wf + C, *x = bf + C;
    zt_cuda_bf16_to_fp32(b->stream, wf, w, (size_t)C);
    zt_cuda_bf16_to_fp32(b->stream, bf, bias, (size_t)C);
    int chunk = (int)((ZT_CUDA_BF16_SCRATCH - 2 * (size_t)C) / (2 * (size_t)C));
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int r = N - n0 < chunk ? N - n0 : chunk;
        size_t off = (size_t)n0 * C, len = (size_t)r * C;
        float *rows = out_dt == ZT_F32 ? (float *)out + off : x + len;
        zt_cuda_bf16_to_fp32(b->stream, x, inp + off, len);
        zt_cuda_layernorm_forward(b->stream, rows, mean + n0, rstd + n0, x, wf, bf, r, C);
        if (out_dt == ZT_BF16) zt_cuda_bf16_from_fp32(b->stream, (zt_bf16 *)out + off, rows, len);
    }
}

// Scratch: w, dw, db widened (C each), then a chunk of rows widened. dw and db take each
// chunk's column sums in fp32 and are rounded once at the end.
void zt_cuda_bf16_layernorm_backward_bf16in(const zt_cuda_bf16 *b, float *dinp, zt_bf16 *dw,
                                            zt_bf16 *db, const float *dout, const zt_bf16 *inp,
                                            const zt_bf16 *w, const float *mean,
                                            const float *rstd, int N, int C) {
    ZT_ASSERTF(C > 0 && C <= ZT_CUDA_BF16_MAX_ROW, "layernorm_backward_bf16in: C = %d", C);
    float *wf = b->scratch, *dwf = wf + C, *dbf = dwf + C, *x = dbf + C;
    zt_cuda_bf16_to_fp32(b->stream, wf, w, (size_t)C);
    zt_cuda_bf16_to_fp32(b->stream, dwf, dw, (size_t)C);
    zt_cuda_bf16_to_fp32(b->stream, dbf, db, (size_t)C);
    int chunk = (int)((ZT_CUDA_BF16_SCRATCH - 3 * (size_t)C) / (size_t)C);
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int r = N - n0 < chunk ? N - n0 : chunk;
        size_t off = (size_t)n0 * C;
        zt_cuda_bf16_to_fp32(b->stream, x, inp + off, (size_t)r * C);
        zt_cuda_layernorm_backward(b->stream, dinp + off, dwf, dbf, dout + off, x, wf, mean + n0,
                                   rstd + n0, b->colsum, r, C);
    }
    zt_cuda_bf16_from_fp32(b->stream, dw, dwf, (size_t)C);
    zt_cuda_bf16_from_fp32(b->stream, db, dbf, (size_t)C);
}
