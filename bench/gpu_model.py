#!/usr/bin/env python3
"""A performance model of one training step of GPT-2 124M (micro-batch 16, sequence 1024) on
one H100 SXM, priced from the ops the code issues (issue 34). Not a measurement.

What comes from the code: `zerotrain plan --ops-json` records one whole step on the recording
backend with the CUDA backend's capabilities and the loss chunk a run on an 80 GB GPU picks
(src/planner/plan_step_ops.c): every op's calls, each call's arguments (sizes, dtypes, beta,
which pointers are NULL) and the op list's flops. This script expands each call into the
kernels and library calls the CUDA backend launches for it (EXPAND below: one small function
per op, each citing the CUDA function it follows; the constants those functions use, such as
gemm_mixed's K chunk or the column sums' tile, are read from the headers), and prices every
kernel by a roofline on the H100 with stated efficiencies, a gap between kernels and the
host's cost to issue them.

    /usr/bin/python3 bench/gpu_model.py            # prints the bench/RESULTS.md section
    /usr/bin/python3 bench/gpu_model.py | /usr/bin/python3 bench/results_section.py \\
        bench/RESULTS.md "## One GPU: a performance model, before measuring"
    /usr/bin/python3 bench/gpu_model.py --check     # one line per configuration (tests)
    /usr/bin/python3 bench/gpu_model.py --launches FILE [--no-epilogues]
        # the launches of one recorded step (tests/sh/cuda_gpu_model.sh; --no-epilogues: a
        # cuBLASLt without epilogues, the CUDA emulation's)

Needs build/zerotrain (`make`); standard library only.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

TITLE = "## One GPU: a performance model, before measuring"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP_FLAGS = ["--model", "gpt2", "--micro-batch", "16", "--seq", "1024", "--device", "h100"]

# ---- the machine: H100 SXM5 80 GB (vendor figures) ----
BW = 3.35e12  # HBM3 bytes/s
PEAK = {"fp32": 67e12, "tf32": 495e12, "bf16": 990e12}  # dense FLOP/s (fp32: CUDA cores)

# ---- ASSUMED: what good kernels reach, and what a launch costs (the GPU session measures) ----
GEMM_EFF = {"fp32": 0.75, "tf32": 0.55, "bf16": 0.60}  # cuBLAS / cuBLASLt at these shapes
BATCHED_EFF = {"fp32": 0.40, "tf32": 0.25,  # attention's cublasSgemmBatched: K or M 64-128
               "bf16": 0.25}  # what-if: the same products in bf16 (cublasGemmStridedBatchedEx)
FLASH_EFF = {"forward": 0.35, "backward": 0.25}  # what-if: a fused attention kernel written
# here (mma.sync tiles, no wgmma): published FlashAttention-2 runs reach 35-50% of an H100's
# bf16 peak forward and less backward, a first hand-written kernel less
BW_EFF = 0.80  # streaming kernels, row kernels, memset and device copies
GPU_GAP = 1.0e-6  # seconds between two kernels of one stream (no CUDA graph)
HOST_KERNEL = 2.5e-6  # host seconds to issue a kernel, memset or copy
HOST_LIBRARY = 4.0e-6  # host seconds to issue a cuBLAS or cuBLASLt call (plans cached)
PCIE = 25e9  # host <-> device bytes/s of a synchronous copy


# ---- constants read from the code ----

def _defines():
    """Every one-line #define NAME VALUE under kernels/ (value text, comments dropped)."""
    out = {}
    for folder in ("kernels", "kernels/cuda"):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if not name.endswith((".h", ".c", ".cu", ".cuh")):
                continue
            for line in open(os.path.join(ROOT, folder, name), encoding="utf-8"):
                m = re.match(r"#define (\w+) ([^\\]+?)\s*(//.*)?$", line)
                if m and "(" not in m.group(1):
                    out.setdefault(m.group(1), m.group(2))
    return out


DEFINES = _defines()
SIZES = {"float": 4, "double": 8, "uint64_t": 8, "zt_bf16": 2}


def const(name):
    """The value of a #define of integers, shifts, sums and sizeof of the types above."""
    text = DEFINES[name]
    text = re.sub(r"sizeof\((\w+)\)", lambda m: str(SIZES[m.group(1)]), text)
    text = re.sub(r"\((size_t|unsigned|int)\)", "", text)
    text = re.sub(r"\b(\d+)u\b", r"\1", text)
    text = re.sub(r"\b([A-Z_][A-Z0-9_]+)\b", lambda m: str(const(m.group(1))), text)
    return int(eval(text, {"__builtins__": {}}))


def dtype_codes():
    """zt_dtype's values (src/core/dtype.h): name -> value."""
    text = open(os.path.join(ROOT, "src/core/dtype.h"), encoding="utf-8").read()
    names = re.search(r"typedef enum \{([^}]*)\} zt_dtype;", text).group(1)
    codes, v = {}, 0
    for item in names.split(","):
        item = item.strip()
        if "=" in item:
            item, val = (s.strip() for s in item.split("="))
            v = int(val)
        codes[item] = v
        v += 1
    return codes


DT = dtype_codes()
F32, BF16 = DT["ZT_F32"], DT["ZT_BF16"]


def dsize(code):
    return 2 if code == BF16 else 4


# ---- one kernel, and the expansions of the CUDA backend's ops into kernels ----

class K:
    """One launch: kind "gemm" (a cuBLAS product; prec "fp32" takes the run's fp32 or TF32
    path, "bf16" is cuBLASLt on bf16 operands), "batched" (cublasSgemmBatched), "mem" (a
    kernel or memset/copy bound by HBM), "sync" (a copy the host waits for, over PCIe)."""

    def __init__(self, name, kind, flops=0.0, bytes_=0.0, prec="fp32"):
        self.name, self.kind, self.flops, self.bytes, self.prec = name, kind, flops, bytes_, prec


def mem(name, bytes_):
    return K(name, "mem", 0.0, bytes_)


def sgemm(M, N, Kd, beta, name="cublasSgemm"):
    """cuda_gemm (backend_cuda.c): one cublasSgemm; C read too when beta != 0."""
    return K(name, "gemm", 2.0 * M * N * Kd, 4.0 * (M * Kd + Kd * N + M * N * (2 if beta else 1)))


def col_chunks(N, nc):
    """zt_col_chunks (launch_math.h): the row chunks of a tile of nc columns."""
    k = min(const("ZT_COL_PARTIALS") // nc, N // const("ZT_COL_MIN_ROWS"),
            const("ZT_COL_MAX_CHUNKS"))
    return max(k, 1)


def colsum(name, N, C, outs=1, elem=4):
    """zt_colsum (colsum_cuda.cuh): per tile of ZT_COL_TILE columns a partial kernel (reads
    the N rows, elem bytes a value; writes a partial per chunk) and a finish kernel."""
    ks = []
    for c0 in range(0, C, const("ZT_COL_TILE")):
        nc = min(const("ZT_COL_TILE"), C - c0)
        partials = 4.0 * nc * outs * col_chunks(N, nc)
        ks.append(mem(name + " partial", elem * N * nc * outs + partials))
        ks.append(mem(name + " finish", partials + 8.0 * nc * outs))
    return ks


def bias_backward(N, OC):
    """zt_cuda_bias_backward (elementwise_cuda.cu): the column sums of dout."""
    return colsum("bias_backward", N, OC)


def embed_sort(N):
    """zt_cuda_embed_sort (encoder_cuda.cu): a key kernel, then zt_merge_passes(N) passes."""
    passes = max(0, math.ceil(math.log2(N))) if N > 1 else 0
    return [mem("embed_keys", 12.0 * N)] + [mem("embed_merge", 16.0 * N * (p + 2))
                                           for p in range(passes)]


def reduce_(n, elem=4):
    """zt_cuda_reduce (optim_cuda.cu): partial and final kernels."""
    return [mem("reduce_partial", elem * n), mem("reduce_final", 8.0 * 2 * 512)]


def ln_forward(N, C):
    """zt_cuda_layernorm_forward (layernorm_cuda.cu): one warp per row."""
    return [mem("layernorm_forward", 4.0 * (2 * N * C + 2 * N))]


def ln_backward(N, C):
    """zt_cuda_layernorm_backward: the dx kernel (dinp added), then dw, db as column sums."""
    return [mem("layernorm_backward_dx", 4.0 * (4 * N * C + 2 * N))] + colsum(
        "layernorm_backward_dwdb", N, C, outs=2)


def to32(n):
    return mem("bf16_to_fp32", 6.0 * n)


def from32(n):
    return mem("bf16_from_fp32", 6.0 * n)


def attention(B, T, C, NH, backward):
    """zt_cuda_attention_gemm_forward / _backward (attention_gemm_cuda.cu): per chunk of
    ZT_ATT_PAIRS (batch, head) pairs a pointer fill, then per block of ZT_ATT_QBLOCK query
    rows (keys up to the block's end) 2 batched products and a softmax kernel forward, 5
    products and a softmax-backward kernel backward; fp32 scores through HBM."""
    hs, pairs, ks = C // NH, B * NH, []
    qb_rows, chunk = const("ZT_ATT_QBLOCK"), const("ZT_ATT_PAIRS")
    for p0 in range(0, pairs, chunk):
        G = min(chunk, pairs - p0)
        nq = -(-T // qb_rows)
        ks.append(mem("attention pointers", 8.0 * G * nq * (9 if backward else 5)))
        for qb in range(nq):
            i0 = qb * qb_rows
            m = min(qb_rows, T - i0)
            n = i0 + m
            S, QKV = 4.0 * G * m * n, 4.0 * G * hs
            prod = 2.0 * G * m * n * hs
            if not backward:
                ks.append(K("S = QK^T", "batched", prod, QKV * (m + n) + S))
                ks.append(mem("attention_softmax", 2 * S))
                ks.append(K("O = PV", "batched", prod, S + QKV * (n + m)))
            else:
                ks.append(K("S = QK^T", "batched", prod, QKV * (m + n) + S))
                ks.append(K("dP = dO V^T", "batched", prod, QKV * (m + n) + S))
                ks.append(mem("attention_softmax_backward", 4 * S))
                ks.append(K("dV += P^T dO", "batched", prod, S + QKV * (m + 2 * n)))
                ks.append(K("dK += dS^T Q", "batched", prod, S + QKV * (m + 2 * n)))
                ks.append(K("dQ = dS K", "batched", prod, S + QKV * (n + m)))
    return ks


def plan_tiles(M, N, Kd, k_chunk, c32, copy_a, copy_b, budget):
    """zt_gemm_plan_tiles (launch_math.h) with the GPU's scratch (gemm_lt_cuda.c's job_of:
    parts 256-byte aligned, rows padded to 8 values)."""
    align, pad = const("PART_ALIGN"), const("ROW_PAD")

    def up(x, a):
        return (x + a - 1) // a * a

    def part(rows, cols, elem, keep):
        return up(up(rows, pad) * up(cols, pad) * elem, align) if keep else 0

    chunks = -(-Kd // k_chunk) if k_chunk > 0 else 0
    mt, nt, kt = M, N, (-(-Kd // chunks) if chunks else 0)
    while part(mt, nt, 4, c32) + part(mt, kt, 2, copy_a) + part(kt, nt, 2, copy_b) > budget:
        if max(mt, nt) > 1:
            if mt >= nt:
                mt = (mt + 1) // 2
            else:
                nt = (nt + 1) // 2
        elif kt > 1:
            kt = (kt + 1) // 2
        else:
            raise SystemExit("gpu_model.py: gemm_mixed's scratch holds no tile")
    return mt, nt, kt


def gemm_mixed(a):
    """zt_cuda_gemm_mixed (gemm_lt_cuda.c): the direct form (A and B bf16: one cuBLASLt call,
    no K chunks) or the convert form (an fp32 operand rounded into the scratch per tile and K
    chunk of ZT_GEMM_MIXED_K_CHUNK, a bf16 C through an fp32 tile widened before and rounded
    after). Assumes every tile runs as is (16-byte rows: GPT-2 124M's leading dimensions are
    multiples of 8), never the padded form."""
    M, N, Kd, beta = int(a["M"]), int(a["N"]), int(a["K"]), a["beta"]
    at, bt, ct = a["at"], a["bt"], a["ct"]
    direct = at == BF16 and bt == BF16
    c32 = ct == BF16 and (not direct or Kd == 0)
    copy_a, copy_b = at == F32, bt == F32
    k_chunk = const("ZT_GEMM_MIXED_K_CHUNK") if copy_a or copy_b else Kd
    budget = const("ZT_CUDA_GEMM_MIXED_WORKSPACE") - const("ZT_CUDA_LT_WORKSPACE") - \
        const("PART_ALIGN")
    mt, nt, kt = plan_tiles(M, N, Kd, k_chunk, c32, copy_a, copy_b, budget)
    ks, csz = [], 4 if c32 else dsize(ct)
    for i0 in range(0, M, mt):
        m = min(mt, M - i0)
        for j0 in range(0, N, nt):
            n = min(nt, N - j0)
            if c32:  # c_tile_in: a memset (beta 0) or C widened
                ks.append(mem("C tile in", 4.0 * m * n + (0 if beta == 0 else 2.0 * m * n)))
            for k0 in range(0, Kd, kt):
                kk = min(kt, Kd - k0)
                if copy_a:
                    ks.append(mem("round A piece", 6.0 * m * kk))
                if copy_b:
                    ks.append(mem("round B piece", 6.0 * kk * n))
                reads_c = beta != 0 or k0 > 0 or c32
                ks.append(K("cublasLtMatmul", "gemm", 2.0 * m * n * kk,
                            2.0 * (m * kk + kk * n) + csz * m * n * (2 if reads_c else 1),
                            prec="bf16"))
            if c32:  # c_tile_out: rounded into C
                ks.append(mem("C tile out", 6.0 * m * n))
    return ks


# Whether cuBLASLt runs gemm_epilogue_bf16's epilogues (a GPU's does; the CUDA emulation's
# has none, so there the backend runs the unfused ops: --launches FILE --no-epilogues).
EPILOGUES = True


def gemm_epilogue(a):
    """cuda_gemm_epilogue_bf16 (backend_cuda.c): with a bf16 A and C one cuBLASLt call, the
    bias (a bf16 vector read) or GELU's backward (its bf16 input read) in the epilogue
    (zt_cuda_gemm_epilogue, gemm_lt_cuda.c; GPT-2's rows are 16 bytes and GELU's a multiple of
    8 values); else the ops that define it (zt_gemm_epilogue_unfused): gemm_mixed onto a
    broadcast bias (bf16 C) or then the bias added (fp32 C), or gemm_mixed into fp32 then
    gelu_backward_bf16."""
    M, N, Kd, ct = int(a["M"]), int(a["N"]), int(a["K"]), a["ct"]
    dgelu = a["ep"] == 1
    if EPILOGUES and a["at"] == BF16 and ct == BF16:
        extra = 2.0 * M * N if dgelu else 2.0 * N
        return [K("cublasLtMatmul + epilogue", "gemm", 2.0 * M * N * Kd,
                  2.0 * (M * Kd + Kd * N) + dsize(ct) * M * N + extra, prec="bf16")]
    prod = dict(a, bt=BF16, beta=0.0)
    if dgelu:
        return gemm_mixed(dict(prod, ct=F32)) + EXPAND["gelu_backward_bf16"][1](
            {"n": M * N, "dinp_dt": BF16})
    if ct == BF16:
        return EXPAND["bias_broadcast_bf16"][1]({"N": M, "OC": N}) + gemm_mixed(
            dict(prod, beta=1.0))
    return gemm_mixed(prod) + EXPAND["bias_forward_bf16"][1]({"N": M, "OC": N})


def _matmul_bwd_input(N, C, OC, acc):
    return [sgemm(N, C, OC, acc)]


def _matmul_bwd_weight(N, C, OC, dbias):
    return [sgemm(OC, C, N, 1)] + (bias_backward(N, OC) if dbias else [])


def _bias_fill(N, OC):
    return [mem("fill_bias", 4.0 * (N * OC + OC))]


def ln_forward_bf16(name, row_bytes):
    """One warp per row, bf16 weights read: row_bytes per value of the rows read (and, fused,
    the residual written) besides the output, which is out_dt's."""
    def kernels(a):
        N, C = a["N"], a["C"]
        out = 2 if a["out_dt"] == BF16 else 4
        return [mem(name, (row_bytes + out) * N * C + 4.0 * C + 8.0 * N)]
    return kernels


# op name -> (CUDA function it follows, expansion of one call's args into kernels)
EXPAND = {
    "memset": ("cuda_memset: cudaMemsetAsync",
               lambda a: [mem("cudaMemsetAsync", a["bytes"])] if a["bytes"] else []),
    "copy": ("cuda_copy: cudaMemcpyAsync (host copies synchronize)",
             lambda a: [] if not a["bytes"] else
             [mem("cudaMemcpyAsync D2D", 2.0 * a["bytes"])] if a["kind"] == 2 else
             [K("cudaMemcpyAsync + sync", "sync", 0, a["bytes"])]),
    "gemm": ("cuda_gemm: cublasSgemm",
             lambda a: [sgemm(a["M"], a["N"], a["K"], a["beta"])]),
    "matmul_forward": ("cuda_matmul_forward: fill_bias, then cublasSgemm with beta 1",
                       lambda a: (_bias_fill(a["N"], a["OC"]) if a["bias"] else []) +
                       [sgemm(a["N"], a["OC"], a["C"], a["bias"])]),
    "matmul_in_out_forward": ("cuda_matmul_in_out_forward: fill_bias, cublasSgemm beta 1",
                              lambda a: (_bias_fill(a["N"], a["OC"]) if a["bias"] else []) +
                              [sgemm(a["N"], a["OC"], a["C"], a["bias"])]),
    "matmul_gelu_forward": ("cuda_matmul_gelu_forward: cublasSgemm, bias_gelu_forward",
                            lambda a: [sgemm(a["N"], a["OC"], a["C"], 0),
                                       mem("bias_gelu_forward", 12.0 * a["N"] * a["OC"])]),
    "matmul_backward": ("cuda_matmul_backward: dinp and dw products, bias column sums",
                        lambda a: _matmul_bwd_input(a["N"], a["C"], a["OC"], a["accumulate_dinp"])
                        + _matmul_bwd_weight(a["N"], a["C"], a["OC"], a["dbias"])),
    "matmul_in_out_backward": ("cuda_matmul_in_out_backward: the same",
                               lambda a: _matmul_bwd_input(a["N"], a["C"], a["OC"],
                                                           a["accumulate_dinp"]) +
                               _matmul_bwd_weight(a["N"], a["C"], a["OC"], a["dbias"])),
    "matmul_backward_input": ("cuda_matmul_backward_input: cublasSgemm",
                              lambda a: _matmul_bwd_input(a["N"], a["C"], a["OC"],
                                                          a["accumulate_dinp"])),
    "matmul_in_out_backward_input": ("cuda_matmul_in_out_backward_input: cublasSgemm",
                                     lambda a: _matmul_bwd_input(a["N"], a["C"], a["OC"],
                                                                 a["accumulate_dinp"])),
    "matmul_backward_weight": ("cuda_matmul_backward_weight: cublasSgemm, column sums",
                               lambda a: _matmul_bwd_weight(a["N"], a["C"], a["OC"], a["dbias"])),
    "matmul_in_out_backward_weight": ("cuda_matmul_in_out_backward_weight: the same",
                                      lambda a: _matmul_bwd_weight(a["N"], a["C"], a["OC"],
                                                                   a["dbias"])),
    "encoder_forward": ("zt_cuda_encoder_forward: one vectorized kernel",
                        lambda a: [mem("encoder_forward", 12.0 * a["N"] * a["C"])]),
    "encoder_backward": ("zt_cuda_encoder_backward: the token sort (keys, merge passes), wte, wpe",
                         lambda a: embed_sort(a["N"]) +
                         [mem("encoder_backward wte", 12.0 * a["N"] * a["C"])] +
                         ([mem("encoder_backward wpe", 4.0 * a["N"] * a["C"])] if a["dwpe"] else [])),
    "layernorm_forward": ("zt_cuda_layernorm_forward: one kernel",
                          lambda a: ln_forward(a["N"], a["C"])),
    "residual_layernorm_forward": ("zt_cuda_residual_layernorm_forward: one kernel",
                                   lambda a: [mem("residual_layernorm_forward",
                                                  16.0 * a["N"] * a["C"])]),
    "layernorm_backward": ("zt_cuda_layernorm_backward: dx, then dw, db column sums",
                           lambda a: ln_backward(a["N"], a["C"])),
    "gelu_forward": ("zt_cuda_gelu_forward: one kernel", lambda a: [mem("gelu", 8.0 * a["n"])]),
    "gelu_backward": ("zt_cuda_gelu_backward: one kernel",
                      lambda a: [mem("gelu_backward", 12.0 * a["n"])]),
    "add": ("zt_cuda_add: one kernel", lambda a: [mem("add", 12.0 * a["n"])]),
    "attention_forward": ("zt_cuda_attention_gemm_forward (query blocks, cuBLAS batched)",
                          lambda a: attention(a["B"], a["T"], a["C"], a["NH"], False)),
    "attention_backward": ("zt_cuda_attention_gemm_backward",
                           lambda a: attention(a["B"], a["T"], a["C"], a["NH"], True)),
    "ce_slice_stats": ("zt_cuda_ce_slice_stats: one block per row",
                       lambda a: [mem("ce_stats", 4.0 * a["n"] * a["n_valid"])]),
    "ce_slice_sumexp": ("zt_cuda_ce_slice_sumexp: one block per row",
                        lambda a: [mem("ce_sumexp", 4.0 * a["n"] * a["n_valid"])]),
    "ce_slice_finish": ("zt_cuda_ce_slice_finish: one block per row, dlogits written",
                        lambda a: [mem("ce_finish", 4.0 * a["n"] * (a["n_valid"] + a["ld"]))]),
    "sum": ("cuda_sum: zt_cuda_reduce, a copy the host waits for",
            lambda a: reduce_(a["n"]) + [K("reduce result + sync", "sync", 0, 8)]),
    "sum_into": ("cuda_sum_into: zt_cuda_reduce, accumulate",
                 lambda a: reduce_(a["n"]) + [mem("accumulate", 16)]),
    "sumsq": ("cuda_sumsq: zt_cuda_reduce, a copy the host waits for",
              lambda a: reduce_(a["n"]) + [K("reduce result + sync", "sync", 0, 16)]),
    "adamw": ("zt_cuda_adamw: one kernel per call (one call per tensor, optim/adamw.c)",
              lambda a: [mem("adamw", 28.0 * a["n"])]),
    "adamw8bit": ("zt_cuda_adamw8bit: one kernel per call",
                  lambda a: [mem("adamw8bit", 14.0 * a["n"])]),
    # ---- the bf16 group (bf16_cuda.h: own kernels, fp32 ones templated, backend_cuda.c) ----
    "gemm_mixed": ("zt_cuda_gemm_mixed (gemm_lt_cuda.c): tiles, K chunks, rounding passes",
                   gemm_mixed),
    "gemm_epilogue_bf16": ("cuda_gemm_epilogue_bf16 (backend_cuda.c): cuBLASLt's BIAS or "
                           "DGELU epilogue", gemm_epilogue),
    "bias_forward_bf16": ("zt_cuda_bias_forward_bf16: one kernel",
                          lambda a: [mem("bias_forward_bf16", 8.0 * a["N"] * a["OC"])]),
    "bias_backward_bf16": ("zt_cuda_bias_backward_bf16 (elementwise_cuda.cu): bias_backward's "
                           "column sums of an fp32 or bf16 dout, the bf16 dbias widened and "
                           "rounded in the finish",
                           lambda a: colsum("bias_backward_bf16", a["N"], a["OC"],
                                            elem=2 if a["dout_dt"] == BF16 else 4)),
    "encoder_forward_bf16": ("zt_cuda_encoder_forward_bf16: one kernel",
                             lambda a: [mem("encoder_forward_bf16", 8.0 * a["N"] * a["C"])]),
    "encoder_forward_bf16out": ("zt_cuda_encoder_forward_bf16out: one kernel",
                                lambda a: [mem("encoder_forward_bf16out", 6.0 * a["N"] * a["C"])]),
    "encoder_backward_bf16": ("zt_cuda_encoder_backward_bf16: the token sort, wte, wpe",
                              lambda a: embed_sort(a["N"]) +
                              [mem("encoder_backward_bf16 wte", 8.0 * a["N"] * a["C"])] +
                              ([mem("encoder_backward_bf16 wpe", 4.0 * a["N"] * a["C"])]
                               if a["dwpe"] else [])),
    "layernorm_forward_bf16": ("zt_cuda_layernorm_forward_bf16 (layernorm_cuda.cu): one kernel, "
                               "layernorm_forward's with bf16 w, b",
                               ln_forward_bf16("layernorm_forward_bf16", 4.0)),
    "layernorm_forward_bf16in": ("zt_cuda_layernorm_forward_bf16in (layernorm_cuda.cu): one "
                                 "kernel, layernorm_forward's on bf16 rows",
                                 ln_forward_bf16("layernorm_forward_bf16in", 2.0)),
    # the stream (bf16) plus a projection's fp32 sum, the bf16 stream written
    "add_bf16": ("zt_cuda_add_bf16 (elementwise_cuda.cu): one kernel, add's on a bf16 stream "
                 "and an fp32 projection", lambda a: [mem("add_bf16", 8.0 * a["n"])]),
    "residual_layernorm_forward_bf16": ("zt_cuda_residual_layernorm_forward_bf16 "
                                        "(layernorm_cuda.cu): one kernel, the add fused",
                                        ln_forward_bf16("residual_layernorm_forward_bf16", 8.0)),
    "layernorm_backward_bf16": ("zt_cuda_layernorm_backward_bf16 (layernorm_cuda.cu): "
                                "layernorm_backward's dx and column sums with bf16 w, dw, db",
                                lambda a: ln_backward(a["N"], a["C"])),
    "layernorm_backward_bf16in": ("zt_cuda_layernorm_backward_bf16in (layernorm_cuda.cu): "
                                  "layernorm_backward's dx and column sums on bf16 rows",
                                  lambda a: ln_backward_bf16in(a)),
    "bias_broadcast_bf16": ("zt_cuda_bias_broadcast_bf16: one kernel",
                            lambda a: [mem("bias_broadcast_bf16", 2.0 * a["N"] * a["OC"])]),
    "gelu_forward_bf16": ("zt_cuda_gelu_forward_bf16: one kernel",
                          lambda a: [mem("gelu_bf16", 4.0 * a["n"])]),
    "gelu_backward_bf16": ("zt_cuda_gelu_backward_bf16: one kernel (bf16 inp, fp32 dout, dinp "
                           "fp32 or bf16)",
                           lambda a: [mem("gelu_backward_bf16",
                                          (8.0 if a["dinp_dt"] == BF16 else 10.0) * a["n"])]),
    "ce_slice_stats_bf16": ("zt_cuda_ce_slice_stats_bf16: one block per row",
                            lambda a: [mem("ce_stats_bf16", 2.0 * a["n"] * a["n_valid"])]),
    "ce_slice_sumexp_bf16": ("zt_cuda_ce_slice_sumexp_bf16: one block per row",
                             lambda a: [mem("ce_sumexp_bf16", 2.0 * a["n"] * a["n_valid"])]),
    "ce_slice_finish_bf16": ("zt_cuda_ce_slice_finish_bf16: one block per row",
                             lambda a: [mem("ce_finish_bf16",
                                            2.0 * a["n"] * (a["n_valid"] + a["ld"]))]),
    "sumsq_bf16": ("cuda_sumsq_bf16: zt_cuda_reduce_bf16 (optim_cuda.cu, the fp32 sums' 2 "
                   "kernels on bf16), a copy the host waits for",
                   lambda a: reduce_(a["n"], elem=2) + [K("reduce result + sync", "sync", 0, 16)]),
    # the bf16 AdamWs read a 2-byte gradient and write the 2-byte weights besides the fp32 kernel's
    "adamw_bf16": ("zt_cuda_adamw_bf16 (optim_cuda.cu): one kernel, adamw's with p rounded",
                   lambda a: [mem("adamw_bf16", 28.0 * a["n"])]),
    "adamw8bit_bf16": ("zt_cuda_adamw8bit_bf16 (optim_cuda.cu): one kernel, adamw8bit's with p "
                       "rounded", lambda a: [mem("adamw8bit_bf16", 14.0 * a["n"])]),
    "attention_forward_bf16": ("cuda_attention_forward_bf16: qkv widened, the fp32 attention, "
                               "the output rounded",
                               lambda a: [to32(3 * a["B"] * a["T"] * a["C"])] +
                               attention(a["B"], a["T"], a["C"], a["NH"], False) +
                               ([from32(a["B"] * a["T"] * a["C"])] if a["out_dt"] == BF16 else [])),
    "attention_backward_bf16": ("cuda_attention_backward_bf16: qkv (and a bf16 dout) widened, "
                                "the fp32 backward, dqkv rounded",
                                lambda a: [to32(3 * a["B"] * a["T"] * a["C"])] +
                                ([to32(a["B"] * a["T"] * a["C"])] if a["dout_dt"] == BF16 else []) +
                                attention(a["B"], a["T"], a["C"], a["NH"], True) +
                                ([from32(3 * a["B"] * a["T"] * a["C"])]
                                 if a["dqkv_dt"] == BF16 else [])),
    "bf16_from_fp32": ("zt_cuda_bf16_from_fp32: one kernel", lambda a: [from32(a["n"])]),
    "bf16_to_fp32": ("zt_cuda_bf16_to_fp32: one kernel", lambda a: [to32(a["n"])]),
}


def ln_backward_bf16in(a):
    """layernorm_backward's kernels, reading bf16 rows (dx: dout, dinp read and written, fp32
    or bf16, x)."""
    N, C = a["N"], a["C"]
    dinp = 2.0 if a["dinp_dt"] == BF16 else 4.0
    return [mem("layernorm_backward_bf16in_dx", (4.0 + 2 * dinp + 2) * N * C + 8.0 * N)] + colsum(
        "layernorm_backward_bf16in_dwdb", N, C, outs=2)


# ---- pricing ----

def kernel_time(k, products, roofline):
    """Seconds of one kernel on the GPU: max(FLOPs at the peak, bytes at HBM), with the
    efficiencies unless `roofline`; products: "fp32" or "tf32" (the fp32 GEMMs' path)."""
    if k.kind == "sync":
        return k.bytes / PCIE
    if k.kind == "gemm":
        prec = k.prec if k.prec == "bf16" else products
        eff = 1.0 if roofline else GEMM_EFF[prec]
        return max(k.flops / (PEAK[prec] * eff), k.bytes / (BW * (1.0 if roofline else BW_EFF)))
    if k.kind == "batched":
        prec = "bf16" if k.prec == "bf16" else products
        eff = 1.0 if roofline else BATCHED_EFF[prec]
        return max(k.flops / (PEAK[prec] * eff),
                   k.bytes / (BW * (1.0 if roofline else BW_EFF)))
    if k.kind == "fused":  # a what-if's hand-written tensor-core kernel (below)
        eff = 1.0 if roofline else k.prec
        return max(k.flops / (PEAK["bf16"] * eff), k.bytes / (BW * (1.0 if roofline else BW_EFF)))
    return k.bytes / (BW * (1.0 if roofline else BW_EFF))


def host_time(k):
    return HOST_LIBRARY if k.kind in ("gemm", "batched") else HOST_KERNEL


def price(ops, products, expand=None):
    """Per op: calls, launches, FLOPs (the op list's and the kernels'), bytes, roofline and
    predicted GPU seconds, host issue seconds, syncs. expand: EXPAND, or a what-if's."""
    expand = expand or EXPAND
    rows = []
    for o in ops:
        if o["op"] not in expand:
            raise SystemExit(f"gpu_model.py: op {o['op']} has no expansion into the CUDA backend's "
                             f"kernels: add it to EXPAND, reading its cuda_{o['op']} in "
                             f"kernels/cuda/backend_cuda.c")
        r = {"op": o["op"], "calls": o["calls"], "flops": o["flops"], "launches": 0,
             "kflops": 0.0, "bytes": 0.0, "roof": 0.0, "gpu": 0.0, "host": 0.0, "syncs": 0,
             "library": 0, "per_call": set()}
        for s in o["shapes"]:
            ks = expand[o["op"]][1](s["args"])
            c = s["calls"]
            r["per_call"].add(len(ks))
            r["launches"] += c * len(ks)
            for k in ks:
                r["kflops"] += c * k.flops
                r["bytes"] += c * k.bytes
                r["roof"] += c * kernel_time(k, products, True)
                r["gpu"] += c * (kernel_time(k, products, False) + GPU_GAP)
                r["host"] += c * host_time(k)
                r["syncs"] += c * (k.kind == "sync")
                r["library"] += c * (k.kind in ("gemm", "batched"))
        rows.append(r)
    return rows


def step_of(rows):
    """The step: the GPU's kernels back to back, or the host's issuing where it is slower; a
    sync drains the queue, so the host's next launch is exposed once per sync."""
    gpu = sum(r["gpu"] for r in rows)
    host = sum(r["host"] for r in rows)
    syncs = sum(r["syncs"] for r in rows)
    return max(gpu, host) + syncs * HOST_KERNEL, gpu, host, syncs


# ---- the report ----

def record(zerotrain, dtype, folder):
    path = os.path.join(folder, f"ops_{dtype}.json")
    cmd = [zerotrain, "plan", "--ops-json", path] + STEP_FLAGS + ["--param-dtype", dtype]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.load(open(path)), " ".join(["zerotrain"] + cmd[1:3] + ["FILE"] + cmd[4:])


def fmt_launch(per_call):
    vals = sorted(per_call)
    return str(vals[0]) if len(vals) == 1 else f"{vals[0]}-{vals[-1]}"


def limits(rows, step):
    top = sorted(rows, key=lambda r: -r["gpu"])[:3]
    return "; ".join(f"{r['op']} {100 * r['gpu'] / step:.0f}%" for r in top)


def configurations(fp32, bf16):
    out = []
    for name, step, products in (("fp32", fp32, "fp32"), ("TF32", fp32, "tf32"),
                                 ("bf16", bf16, "fp32"), ("bf16+TF32", bf16, "tf32")):
        rows = price(step["ops"], products)
        total, gpu, host, syncs = step_of(rows)
        tokens = step["micro_batch"] * step["seq"] * step["grad_accum"]
        out.append({"name": name, "rows": rows, "step": total, "gpu": gpu, "host": host,
                    "syncs": syncs, "tokens_s": tokens / total,
                    "launches": sum(r["launches"] for r in rows),
                    "bytes": sum(r["bytes"] for r in rows),
                    "flops": sum(r["flops"] for r in rows),
                    "kflops": sum(r["kflops"] for r in rows),
                    "roof": sum(r["roof"] for r in rows)})
    return out


def op_table(rows_a, rows_b, names):
    """One row per op of a step: launches per call (the CUDA function), and per step."""
    lines = [f"| op | calls | launches per call: the CUDA backend's | launches | GFLOP (op list) "
             f"| GB moved | roofline ms {names[0]} | predicted ms {' / '.join(names)} |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    by_b = {r["op"]: r for r in rows_b} if rows_b else {}
    for r in sorted(rows_a, key=lambda r: -r["gpu"]):
        pred = f"{1e3 * r['gpu']:.2f}"
        if rows_b:
            pred += f" / {1e3 * by_b[r['op']]['gpu']:.2f}"
        lines.append(f"| `{r['op']}` | {r['calls']} | {fmt_launch(r['per_call'])}: "
                     f"{EXPAND[r['op']][0]} | {r['launches']} | {r['flops'] / 1e9:.0f} | "
                     f"{r['bytes'] / 1e9:.2f} | {1e3 * r['roof']:.2f} | {pred} |")
    return lines


def report(fp32, bf16, cmd):
    cfgs = configurations(fp32, bf16)
    f, t, b = cfgs[:3]
    L = [TITLE, ""]
    L.append(
        "A model, not a measurement (the step measured on an H200 is the next section, \"One GPU: "
        "first contact\"): `bench/gpu_model.py` computes "
        f"every number here (`/usr/bin/python3 bench/gpu_model.py | /usr/bin/python3 "
        f"bench/results_section.py bench/RESULTS.md \"{TITLE}\"`). Written for issue 34, replacing "
        "the hand-written model of issue 25, which described llm.c's structure rather than this "
        "code's.")
    L.append("")
    L.append(
        f"**What comes from the code.** The step's ops: `{cmd}` (and with `--param-dtype bf16`) "
        "records one whole training step of GPT-2 124M, micro-batch 16 x sequence 1024 = 16384 "
        "tokens, on one rank, with the CUDA backend's capabilities and the loss chunk a run on an "
        f"80 GB GPU picks ({fp32['loss_chunk']} tokens fp32, {bf16['loss_chunk']} bf16: "
        f"{fp32['loss_chunk_from']}): the gradient zeroed, forward, backward, the loss read, the "
        "gradient's sums of squares, AdamW one call per tensor (`src/planner/plan_step_ops.c`; "
        "`tests/test_plan.c` checks the recorded calls per op against the CPU backend running the "
        "same step). Each call's arguments are recorded (sizes, dtypes, beta, NULL pointers), so "
        "each op call is expanded into the kernels and library calls the CUDA backend's function "
        "for it launches (`EXPAND` in the script, one entry per op citing the function; the "
        "constants those functions use, such as gemm_mixed's K chunk and its scratch or the "
        "column sums' tile, are read from `kernels/launch_math.h`). The expansion is "
        "checked against the CUDA code: `tests/sh/cuda_gpu_model.sh` runs the same step at a "
        "smaller shape (2 layers, 128 channels, 16384 tokens of vocabulary, 4 x 512 tokens, "
        "sized so the attention's query blocks run more than once; the step's products all "
        "take gemm_mixed's direct form, whose other forms `cuda_bf16_gemm_mixed_calls` counts) "
        "on the CUDA backend in the "
        "CUDA emulation and counts every kernel, memset, copy and cuBLAS call it enqueues: "
        "equal to the expansion's count, fp32 and bf16. Not in it: the token upload (2 x 64 KiB "
        "through pinned buffers) and anything outside the step.")
    L.append("")
    L.append(
        "**How each kernel is priced (assumed, to be measured).** H100 SXM5: HBM3 3.35 TB/s; "
        "dense peaks 67 TFLOP/s fp32 on CUDA cores, 495 TF32, 990 bf16 on tensor cores. Roofline "
        "= max(FLOPs / peak, bytes / bandwidth) per kernel. Predicted = the same at what good "
        f"kernels reach: cuBLAS / cuBLASLt products at {GEMM_EFF['fp32']:.0%} (fp32), "
        f"{GEMM_EFF['tf32']:.0%} (TF32), {GEMM_EFF['bf16']:.0%} (bf16) of peak; attention's "
        f"batched products (`cublasSgemmBatched`, head size 64) at {BATCHED_EFF['fp32']:.0%} "
        f"of the fp32 peak ({BATCHED_EFF['tf32']:.0%} of TF32's with `--tf32`); every other "
        f"kernel, memset and device copy at {BW_EFF:.0%} of HBM for the bytes it must move (each "
        f"input read once, each output written once, an accumulated output read too); "
        f"{GPU_GAP * 1e6:.0f} us between kernels. The host issues a kernel in "
        f"{HOST_KERNEL * 1e6:.1f} us and a cuBLAS call in {HOST_LIBRARY * 1e6:.0f} us (cuBLASLt "
        "plans cached); the step is the slower of the GPU's kernels back to back and the host's "
        "issuing, plus one exposed launch per synchronization (a copy the host waits for). "
        "fp32 and TF32 are the fp32 step (`--tf32` sets cuBLAS's math mode, so attention's "
        "batched products take TF32 too); bf16 is `--param-dtype bf16` without `--tf32` (its "
        "attention runs fp32 on CUDA cores), bf16+TF32 the same step with `--tf32`.")
    L.append("")
    L.append("| configuration | launches | of which library calls | GB moved | TFLOP (op list / "
             "kernels) | roofline ms | GPU ms | host issue ms | syncs | predicted step ms | "
             "tokens/s | what limits it (share of the GPU time) |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for c in cfgs:
        L.append(f"| {c['name']} | {c['launches']} | {library_calls(c)} | {c['bytes'] / 1e9:.1f} | "
                 f"{c['flops'] / 1e12:.2f} / {c['kflops'] / 1e12:.2f} | {1e3 * c['roof']:.1f} | "
                 f"{1e3 * c['gpu']:.1f} | {1e3 * c['host']:.1f} | {c['syncs']} | "
                 f"{1e3 * c['step']:.1f} | {c['tokens_s'] / 1e3:.0f}k | {limits(c['rows'], c['gpu'])} |")
    L.append("")
    L.append("Anchors measured elsewhere on an H100 at this size (issue 34): llm.c 319k tokens/s, "
             "torch.compile 446k, PyTorch bf16 eager 298k, TF32 eager 149k, fp32 eager 53.7k.")
    L.append("")
    L.append("**The fp32 step, op by op** (sorted by predicted fp32 time; GFLOP as the op list "
             "counts them, the causal half for attention; GB as the expansion's kernels move them):")
    L.append("")
    L += op_table(f["rows"], t["rows"], ["fp32", "TF32"])
    L.append("")
    L.append("**The bf16 step, op by op:**")
    L.append("")
    L += op_table(b["rows"], None, ["bf16"])
    L.append("")
    L += reading(cfgs, bf16)
    L.append("")
    L += what_ifs(bf16)
    return "\n".join(L) + "\n"


def library_calls(c):
    return sum(r["library"] for r in c["rows"])


def reading(cfgs, bf16):
    f, t, b, bt = cfgs
    rows = {r["op"]: r for r in b["rows"]}
    att = sum(rows[o]["gpu"] for o in rows if o.startswith("attention"))
    gm = rows.get("gemm_mixed")
    small = sorted(b["rows"], key=lambda r: -r["launches"])[:4]
    L = ["**Reading it.**"]
    L.append(
        f"- bf16 with `--cuda-attention blocked` (these tables' attention; the default is the "
        f"fused one, the what-if table's last row): {1e3 * b['step']:.1f} ms, "
        f"{b['tokens_s'] / 1e3:.0f}k tokens/s, "
        f"{b['launches']} launches a step (fp32: {f['launches']}). Attention, fp32 on CUDA cores "
        f"there, is {1e3 * att:.1f} ms of the {1e3 * b['gpu']:.1f} ms of GPU time"
        + (f"; gemm_mixed {1e3 * gm['gpu']:.1f} ms over {gm['launches']} launches "
           + (f"({gm['calls']} calls: one cuBLASLt product each, every operand bf16)"
              if gm["launches"] == gm["calls"] else
              f"({gm['calls']} calls: the convert form's rounding passes and K chunks where an "
              "operand is fp32)") if gm else "") + f". With `--tf32` attention's products take the "
        f"TF32 tensor cores: {1e3 * bt['step']:.1f} ms, {bt['tokens_s'] / 1e3:.0f}k tokens/s.")
    L.append(
        "- The most launches (bf16): " + "; ".join(
            f"`{r['op']}` {r['launches']} ({fmt_launch(r['per_call'])} per call)" for r in small)
        + ". The bf16 ops on bf16 weights and gradients (LayerNorm with bf16 weights, the bias "
        "gradient, the sum of squares, both AdamWs) and the residual stream's add and "
        "LayerNorms are one pass each, with their fp32 ops' launches per call.")
    L.append(
        f"- fp32: {1e3 * f['step']:.0f} ms ({f['tokens_s'] / 1e3:.1f}k tokens/s), its products "
        f"on CUDA cores; TF32: {1e3 * t['step']:.1f} ms ({t['tokens_s'] / 1e3:.0f}k). The host "
        f"issues the fp32 step's {f['launches']} launches in {1e3 * f['host']:.1f} ms, "
        f"the bf16 step's {b['launches']} in {1e3 * b['host']:.1f} ms"
        + (" — the host, not the GPU, sets the bf16 step's time under these assumptions"
           if b["host"] > b["gpu"] else "") + ".")
    L.append(
        "- The biases of the products with a bf16 output (c_attn, c_fc) and GELU's backward run "
        "in cuBLASLt's epilogues (`gemm_epilogue_bf16`: one call each, no broadcast or "
        "GELU-backward pass; not yet timed on a GPU). What changes the picture now is the "
        "fused attention's own speed (its designs priced below). The model recomputes from the code: rerun it after a "
        "change (`make && bench/gpu_model.py`), no number here is typed in.")
    L.append(
        "- Its weak points, which the GPU session checks first (`nsys profile --stats=true` "
        "against the op tables): the efficiencies and launch costs above are assumptions; "
        "cuBLASLt's heuristic may split or pad a product this model counts as one call; L2 "
        "(50 MB) holds many of the small tensors between kernels, so some bytes never reach HBM; "
        "the attention's scores per 128-row block (up to 32 MiB) may stay in L2 between the "
        "product and the softmax that reads them.")
    return L


# ---- what-ifs: the CUDA bullet's remaining changes, priced by the same machinery ----
# Not the code as built: each replaces some ops' expansions with kernels that do not exist
# yet, at the efficiencies assumed above, so that what to build next is chosen by the model.

def attention_batched_bf16(B, T, C, NH, backward):
    """attention() with bf16 operands and bf16 scores (P, dS) through HBM: the products
    through cublasGemmStridedBatchedEx on bf16 tensor cores, as llm.c does without cuDNN; qkv,
    dout, the output and dqkv read and written as bf16 (no widening or rounding passes)."""
    hs, pairs, ks = C // NH, B * NH, []
    qb_rows, chunk = const("ZT_ATT_QBLOCK"), const("ZT_ATT_PAIRS")
    for p0 in range(0, pairs, chunk):
        G = min(chunk, pairs - p0)
        for qb in range(-(-T // qb_rows)):
            i0 = qb * qb_rows
            m = min(qb_rows, T - i0)
            n = i0 + m
            S, X = 2.0 * G * m * n, 2.0 * G * hs
            prod = 2.0 * G * m * n * hs
            names = (["S = QK^T", "O = PV"] if not backward else
                     ["S = QK^T", "dP = dO V^T", "dV += P^T dO", "dK += dS^T Q", "dQ = dS K"])
            for name in names:
                ks.append(K(name, "batched", prod, X * (m + 2 * n) + S, prec="bf16"))
            ks.append(mem("softmax backward", 4 * S) if backward else mem("softmax", 2 * S))
    return ks


def attention_flash(B, T, C, NH, backward):
    """A fused kernel per layer (FlashAttention-2's structure): scores stay on chip; forward
    one launch (the causal half of QK^T and PV), backward a launch for D = rowsum(dO o O) and
    one for dQ, dK, dV (S recomputed: 5 products). HBM: q, k, v, o, dout once, k and v (q and
    dout backward) read again per 128-row block above them, dq accumulated in fp32."""
    hs, Br = C // NH, 128
    pairs, blocks = B * NH, -(-T // Br)
    prod = 2.0 * pairs * hs * T * (T + Br) / 2  # one causal product, by 128-row blocks
    once = 2.0 * pairs * T * hs
    reread = 2.0 * 2 * pairs * hs * Br * blocks * (blocks - 1) / 2
    if not backward:
        return [K("flash forward", "fused", 2 * prod, 4 * once + reread + 4.0 * pairs * T,
                  prec=FLASH_EFF["forward"])]
    return [mem("flash D = rowsum(dO o O)", 2 * once + 4.0 * pairs * T),
            K("flash backward", "fused", 5 * prod,
              7 * once + reread + 4.0 * 2 * pairs * T * hs + 8.0 * pairs * T,
              prec=FLASH_EFF["backward"])]


def attention_flash_built(B, T, C, NH, backward):
    """--cuda-attention flash as built (attention_flash_cuda.cu): 64-row blocks on both sides;
    forward one launch (2 products); backward three: D = rowsum(dO o O) from the forward's
    bf16 output (no product), then, recomputing S from q, k and lse, dK and dV per key block (4
    products) and dQ per query block (3), 7 products where FlashAttention-2 has 5. HBM: the bf16
    operands once, the other side's re-read per block of 64 above it, fp32 dout and dqkv (the
    model's)."""
    hs, Br = C // NH, 64
    pairs, blocks = B * NH, -(-T // Br)
    prod = 2.0 * pairs * hs * T * (T + Br) / 2
    once = 2.0 * pairs * T * hs  # one bf16 (pairs, T, hs) operand
    tri = Br * blocks * (blocks + 1) / 2.0  # rows of the other side read, summed over blocks
    kv = 2.0 * 2 * pairs * hs * tri  # k and v, bf16
    q_do = (2.0 + 4.0) * pairs * hs * tri  # q bf16 and dout fp32
    rows = 4.0 * pairs * T  # lse or D
    if not backward:
        return [K("flash forward", "fused", 2 * prod, once + kv + once + rows,
                  prec=FLASH_EFF["forward"])]
    eff = FLASH_EFF["backward"]
    return [mem("flash D = rowsum(dO o O)", 2 * once + once + rows),
            K("flash dK, dV", "fused", 4 * prod, 2 * once + q_do + 4 * once + 2 * rows,
              prec=eff),
            K("flash dQ", "fused", 3 * prod, 3 * once + kv + 2 * once + 2 * rows, prec=eff)]


def with_attention(expand, attend):
    out = dict(expand)
    out["attention_forward_bf16"] = ("what-if", lambda a: attend(a["B"], a["T"], a["C"], a["NH"],
                                                                 False))
    out["attention_backward_bf16"] = ("what-if", lambda a: attend(a["B"], a["T"], a["C"],
                                                                  a["NH"], True))
    return out


def what_ifs(bf16):
    cases = [("as built, --cuda-attention blocked", EXPAND),
             ("attention bf16, batched products", with_attention(EXPAND, attention_batched_bf16)),
             ("attention fused (flash-style)", with_attention(EXPAND, attention_flash)),
             ("attention fused as built (--cuda-attention flash, the default)",
              with_attention(EXPAND, attention_flash_built))]
    tokens = bf16["micro_batch"] * bf16["seq"] * bf16["grad_accum"]
    L = ["**What to build next, by the same model (what-ifs, not the code).** Each row replaces "
         "the attention's kernels with ones not yet written, at the efficiencies above (bf16 "
         f"batched products {BATCHED_EFF['bf16']:.0%} of the bf16 peak; a fused kernel "
         f"{FLASH_EFF['forward']:.0%} forward, {FLASH_EFF['backward']:.0%} backward), the rest "
         "of the bf16 step as built:", "",
         "| bf16 step | launches | attention ms | predicted step ms | tokens/s |",
         "|---|---:|---:|---:|---:|"]
    speed, rounding = {}, 0.0
    for name, expand in cases:
        rows = price(bf16["ops"], "fp32", expand)
        total = step_of(rows)[0]
        speed[name] = tokens / total
        att = sum(r["gpu"] for r in rows if r["op"].startswith("attention"))
        rounding = sum(r["gpu"] for r in rows if r["op"] == "bf16_from_fp32")
        L.append(f"| {name} | {sum(r['launches'] for r in rows)} | {1e3 * att:.1f} | "
                 f"{1e3 * total:.1f} | {tokens / total / 1e3:.0f}k |")
    fused, batched = (speed["attention fused (flash-style)"],
                      speed["attention bf16, batched products"])
    clear = [n for n, v in speed.items() if v >= 320e3]
    L.append("")
    choice = "fused kernel" if fused > batched else "batched products"
    L.append(f"So the model chooses the {choice} for attention ({fused / 1e3:.0f}k against "
             f"{batched / 1e3:.0f}k tokens/s: the batched form still moves every 128-row block's scores through HBM, twice "
             "backward). " + (f"At least 320k under these assumptions: {'; '.join(clear)}. "
                              if clear else "No case reaches 320k under these assumptions. ")
             + (f"Rounding passes left: {1e3 * rounding:.1f} ms of `bf16_from_fp32`. "
                if rounding else "No tensor of the step is rounded by a pass of its own. ")
             + "Measured on an H200 (bench/RESULTS.md, \"One GPU: the fused attention\"), the fused "
             "kernels took about twice the attention time this model gave them and the step ran at "
             "327k tokens/s (before D came from O, which no GPU has timed yet); the products' "
             "prices held.")
    return L


def launches_of(path):
    """The launches of the step recorded in `path`, in total and by kernel name."""
    counts = {}
    for o in json.load(open(path))["ops"]:
        for s in o["shapes"]:
            for k in EXPAND[o["op"]][1](s["args"]):
                counts[k.name] = counts.get(k.name, 0) + s["calls"]
    print(f"launches {sum(counts.values())}")
    for name, n in sorted(counts.items()):
        print(f"  {n:6d} {name}")


def main():
    global EPILOGUES
    args = sys.argv[1:]
    EPILOGUES = "--no-epilogues" not in args
    if "--launches" in args:
        return launches_of(args[args.index("--launches") + 1])
    # the CPU build or the CUDA one (the GPU machine's): either records for the CUDA caps
    zerotrain = next((p for p in (os.path.join(ROOT, "build", b) for b in
                                  ("zerotrain", "zerotrain-cuda")) if os.access(p, os.X_OK)),
                     os.path.join(ROOT, "build", "zerotrain"))
    if "--zerotrain" in args:
        zerotrain = args[args.index("--zerotrain") + 1]
    if not os.access(zerotrain, os.X_OK):
        sys.exit(f"gpu_model.py: {zerotrain} is not built: run make -j2 (or give --zerotrain PATH)")
    with tempfile.TemporaryDirectory() as folder:
        fp32, cmd = record(zerotrain, "fp32", folder)
        bf16, _ = record(zerotrain, "bf16", folder)
    if "--check" in args:
        for c in configurations(fp32, bf16):
            print(f"{c['name']} launches {c['launches']} step_ms {1e3 * c['step']:.3f} "
                  f"tokens_s {c['tokens_s']:.0f} gflop {c['flops'] / 1e9:.1f}")
        return
    sys.stdout.write(report(fp32, bf16, cmd))


if __name__ == "__main__":
    main()
