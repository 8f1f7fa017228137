#!/usr/bin/env python3
"""A performance model of one training step of GPT-2 124M (micro-batch 16, sequence 1024) on
one H100 SXM, written before the CUDA backend has run on a GPU (issue 25). For every kernel
of the step: its FLOPs and bytes, its roofline time with fp32 (SIMT), TF32 and bf16 (tensor
core) products, and an estimate from their structure of two sets of the CUDA backend's
kernels: the per-row kernels it ran before 2026-11-25 and the tree's kernels (kernels/cuda/*.cu,
kernels/launch_math.h; not yet run on a GPU); then the predicted step time and tokens/s of
each configuration and the kernels that would limit it. The GPU session measures it (nsys,
ncu) and corrects it.

    /usr/bin/python3 bench/gpu_model.py          # prints the bench/RESULTS.md section
    /usr/bin/python3 bench/gpu_model.py | /usr/bin/python3 bench/results_section.py \\
        bench/RESULTS.md "## One GPU: a performance model, before measuring"

Standard library only; every number it prints comes from the constants below.
"""
import math
import sys

TITLE = "## One GPU: a performance model, before measuring"

# ---- the model and the step (src/model/gpt2.c, src/app/train_step.c) ----
B, T, L, C, NH, V = 16, 1024, 12, 768, 12, 50257
VP = (V + 127) // 128 * 128  # the vocabulary padded to a multiple of 128 * tp (tp = 1)
HS = C // NH
N = B * T  # tokens per micro-batch
NC = N * C
# every parameter tensor starts on a multiple of 256 values; GPT-2 124M's sizes already are
P = VP * C + T * C + L * (12 * C * C + 13 * C) + 2 * C
N_TENSORS = 2 + 12 * L + 2  # wte, wpe; 12 per block; ln_f w, b: one AdamW launch each


# the device's free memory as a run starts (80 GB less the CUDA context and the libraries)
FREE = 79e9


def loss_chunks(padded_vocab, n):
    """The automatic --loss-chunk on a GPU (src/app/train_loss_chunk.c): at most 1/16 of the
    free device memory of fp32 logits (64 MiB at least), equal chunks, >= 128 tokens."""
    cap = max(int(max(64 << 20, FREE / 16)) // (padded_vocab * 4), 128)
    if cap >= n:
        return [n]
    k = -(-n // cap)
    c = max(-(-n // k), 128)
    out, n0 = [], 0
    while n0 < n:
        out.append(min(c, n - n0))
        n0 += c
    return out


CHUNKS = loss_chunks(VP, N)

# ---- the machine: H100 SXM5 80 GB (the GPU machine of shared/device/README.md) ----
BW = 3.35e12  # HBM3 bytes/s
PEAK = {"fp32": 67e12, "tf32": 495e12, "bf16": 990e12}  # dense FLOP/s (fp32: CUDA cores)
SMS = 132
CLK = 1.755e9  # sustained clock under load (1.98 GHz boost is the ceiling)
INT32_PER_SM_CLK = 64

# ---- efficiency assumptions (what a good kernel reaches; the roofline uses 1.0) ----
BW_EFF = 0.80  # streaming kernels with enough loads in flight (llm.c's reach 2.5-2.9 TB/s)
# cuBLAS at these shapes (M = 16384, K = 768 or 3072). fp32: ~50 TFLOP/s, which PyTorch's fp32
# eager anchor (305 ms for 13.2 TFLOP) bounds from below; tensor cores: short K loops keep
# them under the ~700-750 TFLOP/s bf16 GEMMs reach on large squares
GEMM_EFF = {"fp32": 0.75, "tf32": 0.55, "bf16": 0.60}
ATT_EFF = {"fp32": 0.50, "tf32": 0.35, "bf16": 0.35}  # a flash-style kernel at head size 64
SIMT_EFF = 0.5  # element-wise math on CUDA cores (tanhf, expf, IEEE sqrt and division)
LAUNCH_GAP = 1.0e-6  # seconds between two kernels of one stream (no CUDA graph)

# ---- the per-row kernels (before 2026-11-25; read from their source and PTX/SASS) ----
# L1 serves one 128-byte line ("wavefront") per SM per cycle: a warp load whose 32 threads
# touch 32 different lines costs 32 cycles of the SM's L1 for 128 useful bytes (4 B/cycle).
WF_PER_CLK = 1.0
LAT_DRAM = 600  # cycles, a load that misses L2
LAT_L2 = 300  # cycles, a load that hits L2
UNROLL = 4  # nvcc unrolls the column-reduction loops by 4 (their PTX): 4 loads in flight
FILL_BIAS_INT_OPS = 25  # i % OC: nvcc's 32-bit bypass of the 64-bit remainder, ~20 ops


# ---- the tree's kernels (kernels/launch_math.h; not yet run on a GPU) ----
ATT_QBLOCK, ATT_PAIRS = 128, 64  # query rows per block; (batch, head) pairs per batched GEMM
COL_CHUNKS = 64  # row chunks of a column sum (bias, LayerNorm dw/db)
# the most frequent token's share of a batch, the embedding backward's longest run: ~4% for
# ",", "." or " the" in English web text (an assumption, not counted on this data)
EMBED_TOP_SHARE = 0.04


def col_sum_time(n_rows, n_cols, nbytes):
    """A column sum over COL_CHUNKS chunks: each thread walks N/64 rows with UNROLL loads in
    flight (as the old one-thread-per-column kernels, 64x shorter), against streaming."""
    chain = latency_loop(-(-(-(-n_rows // COL_CHUNKS)) // UNROLL), LAT_DRAM)
    return max(chain, mem_time(nbytes)) + 2 * LAUNCH_GAP


def dsize(prec):
    """Bytes per activation, compute-weight, gradient and logit value. bf16 is llm.c's mixed
    precision: bf16 activations, weights and gradients, fp32 master weights and moments."""
    return (2, 2, 2, 2) if prec == "bf16" else (4, 4, 4, 4)


class Op:
    """One row of the table: `calls` launches of a kind of kernel over the step."""

    def __init__(self, name, calls, flops, nbytes, kind, old, why, tree=None):
        self.name, self.calls, self.flops = name, calls, flops
        self.nbytes = nbytes  # prec -> bytes over the step
        self.kind = kind  # "gemm", "attn" or "mem": what its arithmetic runs on
        self.old = old  # gemm_prec -> seconds of the per-row kernels (before 2026-11-25)
        self.why = why  # what limits the per-row kernel
        # gemm_prec -> seconds of the tree's kernels (the fp32 path of issue 25; not yet run):
        # query-blocked attention, LayerNorm a warp per row, column sums over row chunks
        self.tree = tree or old

    def peak(self, prec):
        if self.kind == "mem":
            return PEAK["fp32"]
        return PEAK[prec]

    def roofline(self, prec):
        return max(self.flops / self.peak(prec), self.nbytes(prec) / BW)

    def predicted(self, prec):
        eff = {"gemm": GEMM_EFF[prec], "attn": ATT_EFF[prec], "mem": SIMT_EFF}[self.kind]
        return max(self.flops / (self.peak(prec) * eff), self.nbytes(prec) / (BW * BW_EFF))


def mem_time(nbytes):
    return nbytes / (BW * BW_EFF)


def gemm_time(flops, nbytes, prec):
    return max(flops / (PEAK[prec] * GEMM_EFF[prec]), mem_time(nbytes))


def latency_loop(iters, lat_cycles):
    return iters * lat_cycles / CLK


def wavefronts(n_wf, sms):
    return n_wf / (sms * WF_PER_CLK * CLK)


def blocked_attention(T_=T, qblock=ATT_QBLOCK, pairs_per_call=ATT_PAIRS):
    """attention_gemm_cuda.cu over the step (L layers, forward and backward, fp32 scores):
    per chunk of pairs and query block [i0, i0 + m), GEMMs over the n = i0 + m causal keys.
    Returns flops, bytes, launches and gemm_prec -> seconds."""
    pairs = B * NH
    nq = -(-T_ // qblock)
    chunks = -(-pairs // pairs_per_call)
    blocks = [(min(qblock, T_ - q * qblock), q * qblock + min(qblock, T_ - q * qblock))
              for q in range(nq)]
    # per pair: score entries computed, and each GEMM's operand rows (m-row block, n-row prefix)
    area = sum(m * n for m, n in blocks)

    def gemm(m, n, k_dim, out_rows, rmw):
        """One batched GEMM over all pairs: its flops and bytes (operands of hs columns)."""
        return 2 * pairs * m * n * k_dim, 4 * pairs * HS * (out_rows * (2 if rmw else 1))

    def layer(g):
        t = [0.0, 0.0]  # forward, backward
        fl = by = 0.0
        for m, n in blocks:
            sc = 4 * pairs * m * n  # one pass over the block's fp32 scores
            # forward: S = Q K^T (write S), softmax (read, write), O = P V (read P)
            # backward: S, dP (write both), softmax backward (read S, dP; write P, dS: the
            # second pass re-reads a 4 KiB row from L1/L2), dV, dK (read P, dS; add into
            # their n rows), dQ (read dS)
            steps = [(2 * pairs * m * n * HS, sc + 4 * pairs * HS * (m + n)),  # S
                     (0, 2 * sc),  # softmax
                     (2 * pairs * m * n * HS, sc + 4 * pairs * HS * (n + m)),  # PV
                     (2 * pairs * m * n * HS, sc + 4 * pairs * HS * (m + n)),  # S again
                     (2 * pairs * m * n * HS, sc + 4 * pairs * HS * (m + n)),  # dP
                     (0, 4 * sc),  # softmax backward
                     (2 * pairs * m * n * HS, sc + 4 * pairs * HS * (m + 2 * n)),  # dV
                     (2 * pairs * m * n * HS, sc + 4 * pairs * HS * (m + 2 * n)),  # dK
                     (2 * pairs * m * n * HS, sc + 4 * pairs * HS * (n + m))]  # dQ
            for i, (f, b_) in enumerate(steps):
                fl += f
                by += b_
                # the row kernels: ~25 flops (expf, the max and sums) per score, on CUDA cores
                t[i >= 3] += (gemm_time(f, b_, g) if f else
                              max(mem_time(b_), 25 * sc / 4 / (PEAK["fp32"] * SIMT_EFF)))
        return fl, by, t
    fl, by, _ = layer("fp32")
    launches = L * chunks * (2 + 9 * nq)  # two pointer fills, 3 + 6 launches per block
    lf, lb = L * chunks * (1 + 3 * nq), L * chunks * (1 + 6 * nq)
    times = {g: [L * layer(g)[2][0] + lf * LAUNCH_GAP, L * layer(g)[2][1] + lb * LAUNCH_GAP]
             for g in ["fp32", "tf32"]}
    work = 2 * pairs_per_call * qblock * T_ * 4  # the two score buffers, bytes
    return {"flops": L * fl, "bytes": L * by, "launches": launches, "time": times,
            "area": area, "chunks": chunks, "nq": nq, "work": work}


def flash_attention(prec):
    """A fused flash-style kernel: exact causal flops (forward 2 GEMMs, backward 5 with the
    recomputed scores), inputs and outputs read and written once, at ATT_EFF of `prec`'s peak."""
    fl = L * 2 * B * C * T * (T + 1) * 3.5
    by = L * 4 * (3 * NC + NC + 3 * NC + NC + 3 * NC)  # qkv, out; qkv, dout, dqkv
    return fl, by, max(fl / (PEAK[prec] * ATT_EFF[prec]), mem_time(by))


def build_ops():
    ops = []
    row_sms = min(SMS, -(-N // 256))  # one thread per row, 256 per block: 64 blocks

    # -- encoder forward: tokens, a gathered wte row and a wpe row per token
    def enc_f(p):
        sa, sw, _, _ = dsize(p)
        return 4 * N + sw * NC + sw * T * C + sa * NC
    ops.append(Op("encoder forward", 1, NC, enc_f, "mem",
                  lambda g: mem_time(enc_f("fp32")),
                  "coalesced grid-stride; streams"))

    # -- LayerNorm forward: 2 per block + ln_f
    n_ln = 2 * L + 1

    def ln_f(p):
        sa, sw, _, _ = dsize(p)
        return n_ln * (2 * sa * NC + 2 * sw * C + 8 * N)
    # one thread per row: x read three times and out written, each a load/store whose warp
    # touches 32 rows 3 KiB apart (32 wavefronts); w and b are one line per warp load
    ln_f_wf = n_ln * NC * (4 + 2 / 32)
    ops.append(Op("LayerNorm forward", n_ln, n_ln * 8 * NC, ln_f, "mem",
                  lambda g: wavefronts(ln_f_wf, row_sms),
                  f"1 thread/row: {row_sms} blocks on {SMS} SMs, 32 lines per warp load",
                  lambda g: mem_time(ln_f("fp32")) + n_ln * LAUNCH_GAP))

    layer = [("c_attn", C, 3 * C), ("attn c_proj", C, C), ("c_fc", C, 4 * C),
             ("mlp c_proj", 4 * C, C)]

    def mm_fwd(cin, oc):
        fl = 2 * N * cin * oc

        def nb(p):
            sa, sw, _, _ = dsize(p)
            return sa * N * cin + sw * cin * oc + sa * N * oc + sw * oc

        def old(g):
            # fill_bias writes the bias rows (i % OC per element), then the GEMM reads them
            # back with beta = 1
            fill = max(N * oc * FILL_BIAS_INT_OPS / (SMS * INT32_PER_SM_CLK * CLK),
                       mem_time(4 * N * oc))
            return L * (fill + gemm_time(fl, nb("fp32") + 4 * N * oc, g))
        return fl, nb, old

    def mm_bwd(cin, oc):
        fl = 2 * (2 * N * cin * oc)

        def nb(p):
            sa, sw, sg, _ = dsize(p)
            dinp = sa * N * oc + sw * oc * cin + sa * N * cin
            dw = sa * N * oc + sa * N * cin + 2 * sg * oc * cin
            dbias = sa * N * oc + 2 * sg * oc
            return dinp + dw + dbias

        def old(g):
            f1 = 2 * N * cin * oc
            sa = 4
            t_dinp = gemm_time(f1, sa * N * oc + sa * oc * cin + sa * N * cin, g)
            t_dw = gemm_time(f1, sa * N * oc + sa * N * cin + 8 * oc * cin, g)
            # one thread per column, N rows in order, 4 loads in flight per warp
            t_db = latency_loop(-(-N // UNROLL), LAT_DRAM)
            return L * (t_dinp + t_dw + t_db)

        def tree(g):
            t_db = latency_loop(-(-N // UNROLL), LAT_DRAM)
            return old(g) - L * t_db + L * col_sum_time(N, oc, 4 * N * oc)
        return fl, nb, old, tree

    for nm, cin, oc in layer[:1]:
        fl, nb, td = mm_fwd(cin, oc)
        ops.append(Op(f"{nm} forward ({cin}->{oc})", 2 * L, L * fl,
                      lambda p, nb=nb: L * nb(p), "gemm", td,
                      "cuBLAS; fill_bias + beta=1 read"))

    # -- attention forward
    pairs = B * NH * T * (T + 1) // 2  # (query, key) pairs per layer, causal
    att_f_fl = L * 2 * B * C * T * (T + 1)  # QK^T and PV over the causal half

    def att_f(p):
        sa = dsize(p)[0]
        return L * (sa * 4 * NC + 4 * B * NH * T)
    # per pair: the 64 k loads of a scalar dot over rows 3C floats apart (1 wavefront each),
    # plus ~10% for the coalesced v loads and shared-memory broadcasts
    WF_FWD = 64 * 1.1
    blk = blocked_attention()
    ops.append(Op("attention forward", L, att_f_fl, att_f, "attn",
                  lambda g: L * wavefronts(pairs * WF_FWD, SMS),
                  f"1 block/row ({B * NH * T} blocks): scalar 64-dots on rows 9 KiB apart",
                  lambda g: blk["time"][g][0]))

    for nm, cin, oc in layer[1:2]:
        fl, nb, td = mm_fwd(cin, oc)
        ops.append(Op(f"{nm} forward ({cin}->{oc})", 2 * L, L * fl,
                      lambda p, nb=nb: L * nb(p), "gemm", td,
                      "cuBLAS; fill_bias + beta=1 read"))

    def add_b(p):
        return 2 * L * 3 * dsize(p)[0] * NC
    ops.append(Op("residual add", 2 * L, 2 * L * NC, add_b, "mem",
                  lambda g: mem_time(add_b("fp32")), "coalesced; streams"))

    for nm, cin, oc in layer[2:3]:
        fl, nb, td = mm_fwd(cin, oc)
        ops.append(Op(f"{nm} forward ({cin}->{oc})", 2 * L, L * fl,
                      lambda p, nb=nb: L * nb(p), "gemm", td,
                      "cuBLAS; fill_bias + beta=1 read"))

    def gelu_f(p):
        return L * 2 * dsize(p)[0] * 4 * NC
    ops.append(Op("GELU forward", L, L * 20 * 4 * NC, gelu_f, "mem",
                  lambda g: mem_time(gelu_f("fp32")), "coalesced; streams"))

    for nm, cin, oc in layer[3:4]:
        fl, nb, td = mm_fwd(cin, oc)
        ops.append(Op(f"{nm} forward ({cin}->{oc})", 2 * L, L * fl,
                      lambda p, nb=nb: L * nb(p), "gemm", td,
                      "cuBLAS; fill_bias + beta=1 read"))

    # -- the head, chunk by chunk: logits, three loss passes, two gradient GEMMs
    nchunk = len(CHUNKS)

    def head_f(p):
        sa, sw, _, sl = dsize(p)
        return sum(sa * nc * C + sw * VP * C + sl * nc * VP for nc in CHUNKS)
    head_f_fl = sum(2 * nc * VP * C for nc in CHUNKS)
    ops.append(Op(f"lm-head logits ({nchunk} chunks of {CHUNKS[0]})", nchunk, head_f_fl,
                  head_f, "gemm",
                  lambda g: sum(gemm_time(2 * nc * VP * C,
                                          4 * (nc * C + VP * C + nc * VP), g) for nc in CHUNKS),
                  "cuBLAS; wte re-read per chunk"))

    def ce_b(p):
        sl = dsize(p)[3]
        return sum(4 * sl * nc * VP + 16 * nc for nc in CHUNKS)
    # one block per row, each thread a contiguous piece of 197 logits: a warp load touches
    # 32 lines; ceil(rows / SMs) blocks on the busiest SM; 4 passes (max, sumexp, read+write)
    ce_old = sum(-(-nc // SMS) * 4 * VP / (WF_PER_CLK * CLK) for nc in CHUNKS)
    ce_fl = sum(8 * nc * VP for nc in CHUNKS)
    # the tree's kernels: threads stride over the row (coalesced), so the passes stream
    ops.append(Op("cross-entropy (3 passes)", 3 * nchunk, ce_fl,
                  ce_b, "mem", lambda g: ce_old,
                  f"1 block/row ({CHUNKS[0]} blocks): per-thread pieces, 32 lines per warp load",
                  lambda g: max(ce_fl / (PEAK["fp32"] * SIMT_EFF), mem_time(ce_b("fp32")))))

    def head_b(p):
        sa, sw, sg, sl = dsize(p)
        return sum((sl * nc * VP + sw * VP * C + sa * nc * C)
                   + (sl * nc * VP + sa * nc * C + 2 * sg * VP * C) for nc in CHUNKS)
    ops.append(Op("lm-head backward (d ln_f, d wte)", 2 * nchunk, 2 * head_f_fl, head_b, "gemm",
                  lambda g: sum(gemm_time(2 * nc * VP * C, 4 * (nc * VP + VP * C + nc * C), g)
                                + gemm_time(2 * nc * VP * C,
                                            4 * (nc * VP + nc * C + 2 * VP * C), g)
                                for nc in CHUNKS),
                  "cuBLAS; wte and its gradient re-streamed per chunk"))

    # -- LayerNorm backward (dx kernel, then the dw/db column kernel)
    def ln_b(p):
        sa, sw, sg, _ = dsize(p)
        return n_ln * (4 * sa * NC + sw * C + 4 * sg * C + 8 * N)
    ln_b_wf = n_ln * NC * (6 + 2 / 32)
    ops.append(Op("LayerNorm backward", 2 * n_ln, n_ln * 12 * NC, ln_b, "mem",
                  lambda g: wavefronts(ln_b_wf, row_sms)
                  + n_ln * latency_loop(-(-N // UNROLL), LAT_DRAM),
                  f"dx 1 thread/row ({row_sms} SMs); dw,db 1 thread/column: 3 blocks walk "
                  f"{N} rows",
                  lambda g: n_ln * (mem_time(4 * 4 * NC) + col_sum_time(N, C, 2 * 4 * NC))))

    for nm, cin, oc in layer[::-1]:
        fl, nb, td, br = mm_bwd(cin, oc)
        ops.append(Op(f"{nm} backward", 3 * L, L * fl, lambda p, nb=nb: L * nb(p), "gemm", td,
                      f"bias grad: 1 thread/column ({-(-oc // 256)} blocks), {N} rows", br))
        if nm == "c_fc":
            def gelu_b(p):
                return L * 3 * dsize(p)[0] * 4 * NC
            ops.append(Op("GELU backward", L, L * 30 * 4 * NC, gelu_b, "mem",
                          lambda g: mem_time(gelu_b("fp32")), "coalesced; streams"))
        if nm == "attn c_proj":
            def att_b(p):
                sa = dsize(p)[0]
                return L * (sa * 7 * NC + 4 * B * NH * T)
            # rowsum, kv and q kernels each recompute P and dP with two scalar 64-dots per
            # pair over rows 3C or C floats apart (128 wavefronts), +1 for D in the kv one
            WF_BWD = (128 + 129 + 128) * 1.1
            ops.append(Op("attention backward", 3 * L, 2.5 * att_f_fl, att_b, "attn",
                          lambda g: L * wavefronts(pairs * WF_BWD, SMS),
                          "3 kernels, 1 block/row: six scalar 64-dots per pair",
                          lambda g: blk["time"][g][1]))

    # -- encoder backward
    def enc_b(p):
        sa, _, sg, _ = dsize(p)
        return sa * NC + 4 * N + 2 * sg * NC + 2 * sg * T * C
    # the tree's kernels (launch_math.h, "the embedding backward"): unique keys (row, token
    # index), 8 bytes each, merge-sorted between two buffers; then a block per sorted key sums
    # a row's run in token order where the run starts; the positions apart. Per launch:
    # - keys (1): read the N tokens, write N keys.
    # - merge passes (ceil(log2 N) = 14): pass p (runs of 2^p) reads and writes the N keys
    #   (16 N bytes), and each key's binary search in its sibling run reads p + 1 more (8 (p + 1)
    #   N bytes, counted at HBM speed though the 2 x 128 KiB of keys stay in L2); a thread's key
    #   and its probes are a chain of p + 2 dependent L2 loads.
    # - run sums (1): N blocks of 256, 8 resident per SM, so N / (8 SMS) = 16 waves of mostly
    #   empty blocks (~2 us each); dout read once and the touched dwte rows read and written (at
    #   most one a token); the longest run, the most frequent token's (EMBED_TOP_SHARE of the
    #   batch), is one block's chain of run / UNROLL x (LAT_L2 + LAT_DRAM) cycles, if nvcc
    #   unrolls the sum by UNROLL as it does the column loops (not read from its PTX). A batch
    #   of one repeated token makes that chain N long: ~2 ms.
    # - positions (1): dout read once more, dwpe read and written.
    # In all ~0.14 ms: the sort ~21 us, the run sums ~84 us (the longest run's chain, over the
    # 56 us of their bytes), the positions ~21 us, 17 launches.
    passes = math.ceil(math.log2(N))  # zt_merge_passes
    enc_sort = mem_time(4 * N + 8 * N) + latency_loop(1, LAT_DRAM) + sum(
        max(mem_time(16 * N + 8 * (p + 1) * N), latency_loop(p + 2, LAT_L2))
        for p in range(passes))
    enc_runs = max(mem_time(4 * NC + 2 * 4 * NC + 8 * N), -(-N // (SMS * 8)) * 2e-6,
                   latency_loop(EMBED_TOP_SHARE * N / UNROLL, LAT_L2 + LAT_DRAM))
    enc_pos = mem_time(4 * NC + 2 * 4 * T * C)
    enc_tree = enc_sort + enc_runs + enc_pos + (1 + passes + 2) * LAUNCH_GAP
    ops.append(Op("encoder backward", 1, 2 * NC, enc_b, "mem",
                  lambda g: latency_loop(N, 2 * LAT_DRAM + LAT_L2),
                  f"1 thread/channel ({C} threads): {N} dependent load-add-store chains",
                  lambda g: enc_tree))

    # -- step: zero the gradients, the head's copies, the grad norm, AdamW
    def misc(p):
        sa, _, sg, _ = dsize(p)
        return sg * P + 3 * sa * NC
    ops.append(Op("grad zeroing, copies", 3, 0, misc, "mem", lambda g: mem_time(misc("fp32")),
                  "memset/memcpy"))

    def norm_b(p):
        return dsize(p)[2] * P
    ops.append(Op("grad norm (sum of squares)", 2, 3 * P, norm_b, "mem",
                  lambda g: mem_time(norm_b("fp32")), "256 blocks of 512, coalesced"))

    def adamw_b(p):
        # fp32: read p, m, v, g, write p, m, v. bf16: read the bf16 g, the fp32 master p, m, v,
        # write those and the bf16 copy of p: 28 bytes a parameter either way
        return 28 * P
    ops.append(Op(f"AdamW ({N_TENSORS} tensors)", N_TENSORS, 20 * P, adamw_b, "mem",
                  lambda g: mem_time(adamw_b("fp32")) + N_TENSORS * LAUNCH_GAP,
                  "coalesced; one launch per tensor"))
    return ops


def attention_section(w, ms):
    """The attention designs compared, and the block sizes of the blocked one (the tree's)."""
    att = [o for o in build_ops() if o.name.startswith("attention")]
    t_old = {g: sum(o.old(g) for o in att) for g in ["fp32", "tf32"]}
    b = blocked_attention()
    exact = L * 2 * B * C * T * (T + 1) * 3.5
    w("**Attention: the design the tree runs, chosen by this estimate** (forward and "
      f"backward over the step's {L} layers; scores fp32; time = max(FLOPs at the efficiency "
      "above, bytes at "
      f"{BW_EFF:.0%} of HBM) per kernel, plus {LAUNCH_GAP * 1e6:.0f} us a launch).")
    w("")
    w("| design | GFLOP | GB moved | launches | ms fp32 / TF32 products | memory beyond the "
      "inputs |")
    w("|---|---:|---:|---:|---:|---|")
    w(f"| per-row kernels (before 2026-11-25; `ZT_CUDA_ATTENTION=rows`): a block per query "
      f"row, scalar dots | {exact / 1e9:.0f} | | {4 * L} | "
      f"{ms(t_old['fp32'])} / {ms(t_old['tf32'])} | O(B NH T): the LSE |")
    w(f"| **query blocks through cuBLAS batched GEMMs** ({ATT_QBLOCK} rows, {ATT_PAIRS} pairs a "
      f"call: {b['chunks']} chunks x {b['nq']} blocks) | {b['flops'] / 1e9:.0f} | "
      f"{b['bytes'] / 1e9:.0f} | {b['launches']} | "
      f"{ms(sum(b['time']['fp32']))} / {ms(sum(b['time']['tf32']))} | "
      f"{b['work'] / 2 ** 20:.0f} MiB of scores, all layers |")
    for prec, what in [("fp32", "fused flash-style kernel on CUDA cores"),
                       ("tf32", "fused flash-style kernel on tensor cores (TF32 mma)")]:
        fl, by, t = flash_attention(prec)
        cell = f"{ms(t)} / {ms(t)}" if prec == "fp32" else f"- / {ms(t)}"
        w(f"| {what}, at {ATT_EFF[prec]:.0%} of peak | {fl / 1e9:.0f} | {by / 1e9:.1f} | "
          f"{2 * L} | {cell} | none |")
    w("")
    sweep = [(q, p) for q in (64, 128, 256, 1024) for p in (32, 64, 192)]
    w("Block sizes of the blocked design (ms with fp32 / TF32 products, GB moved, score "
      "workspace): " + "; ".join(
          f"{q} x {p}: {ms(sum(x['time']['fp32']))} / {ms(sum(x['time']['tf32']))} ms, "
          f"{x['bytes'] / 1e9:.0f} GB, {x['work'] / 2 ** 20:.0f} MiB"
          for q, p in sweep for x in [blocked_attention(qblock=q, pairs_per_call=p)]) + ".")
    w("")


def launches(ops):
    return sum(o.calls for o in ops)


def main():
    ops = build_ops()
    flops = sum(o.flops for o in ops if o.kind != "mem")
    # checks of the arithmetic: 124.5 M parameters, and the device README's "about 0.80
    # GFLOP per token" (6 x the non-embedding matrix parameters and the lm-head, plus
    # attention with the backward's recomputed QK^T)
    assert P == 124_475_904, P
    per_tok = flops / N
    expect = 6 * (12 * L * C * C + VP * C) + 3.5 * 2 * C * (T + 1) * L
    assert abs(per_tok - expect) / expect < 1e-9 and 0.79e9 < per_tok < 0.82e9, per_tok
    assert sum(CHUNKS) == N

    precs = ["fp32", "tf32", "bf16"]
    gaps = launches(ops) * LAUNCH_GAP
    roof = {p: sum(o.roofline(p) for o in ops) for p in precs}
    pred = {p: sum(o.predicted(p) for o in ops) + gaps for p in precs}
    old = {g: sum(o.old(g) for o in ops) + gaps for g in ["fp32", "tf32"]}
    tree = {g: sum(o.tree(g) for o in ops) + gaps for g in ["fp32", "tf32"]}

    def ms(s):
        return f"{s * 1e3:.1f}" if s * 1e3 < 100 else f"{s * 1e3:.0f}"

    def tok(s):
        return f"{N / s / 1e3:.1f}k" if N / s < 1e5 else f"{N / s / 1e3:.0f}k"

    def top(times, k=3):
        tot = sum(times.values())
        best = sorted(times.items(), key=lambda kv: -kv[1])[:k]
        return "; ".join(f"{nm} {100 * t / tot:.0f}%" for nm, t in best)

    out = []
    w = out.append
    w(TITLE)
    w("")
    w("Written before the CUDA backend has run on a GPU (issue 25), to be checked by the GPU "
      "session's profile. `bench/gpu_model.py` computes every number here (`/usr/bin/python3 "
      "bench/gpu_model.py | /usr/bin/python3 bench/results_section.py bench/RESULTS.md "
      f"\"{TITLE}\"`).")
    w("")
    w(f"**The step.** GPT-2 124M ({P / 1e6:.2f} M parameters with the vocabulary padded to "
      f"{VP}), micro-batch {B} x sequence {T} = {N} tokens, one GPU, fp32 AdamW with clipping, "
      "the ops `src/model/gpt2.c` issues: per block LayerNorm, c_attn, attention, attn "
      "c_proj, residual add, LayerNorm, c_fc, GELU, mlp c_proj, residual add, and their "
      f"backwards; the head in {len(CHUNKS)} chunk(s) of {CHUNKS[0]} tokens (the automatic "
      "`--loss-chunk` on a GPU: at most 1/16 of its free memory in fp32 logits), each chunk "
      "a logits GEMM, the three "
      "cross-entropy passes and two gradient GEMMs; then the gradients' sum of squares and "
      f"one AdamW launch per tensor ({N_TENSORS}). {launches(ops)} kernel launches a step. "
      f"{flops / 1e12:.2f} TFLOP a step ({per_tok / 1e9:.3f} GFLOP a token: the matrix "
      "products and attention's, which recomputes QK^T in the backward).")
    w("")
    w("**The machine.** H100 SXM5: 3.35 TB/s HBM3, 132 SMs at a sustained ~1.75 GHz, dense "
      "peaks 67 TFLOP/s fp32 on CUDA cores, 495 TF32 and 990 bf16 on tensor cores.")
    w("")
    w("**How.** Per op (one row per kind of kernel, summed over the step): the FLOPs, and the "
      "bytes it must move at least (each input read once, each output written once; gradient "
      "accumulation reads and writes). *Roofline* = max(FLOPs / peak, bytes / 3.35 TB/s): no "
      "kernel of that op can be faster. *Predicted* = the same with what good kernels reach: "
      f"cuBLAS at {GEMM_EFF['fp32']:.0%} (fp32), {GEMM_EFF['tf32']:.0%} (TF32), "
      f"{GEMM_EFF['bf16']:.0%} (bf16) of peak; a flash-style attention at "
      f"{ATT_EFF['fp32']:.0%} / {ATT_EFF['tf32']:.0%} / {ATT_EFF['bf16']:.0%}; streaming "
      f"kernels at {BW_EFF:.0%} of HBM; element-wise math at {SIMT_EFF:.0%} of the CUDA cores; "
      f"{LAUNCH_GAP * 1e6:.0f} us between kernels. fp32 and TF32 keep every tensor in fp32; "
      "bf16 is llm.c's mixed precision (bf16 activations, weights and gradients; fp32 master "
      "weights and moments: still 28 bytes a parameter in AdamW). All three keep this step's "
      "op structure (separate kernels, the chunked head); fusions are discussed below.")
    w("")
    w("**The per-row kernels (before 2026-11-25)** (`kernels/cuda/*.cu` until then; of them "
      "only the attention still runs, under `ZT_CUDA_ATTENTION=rows`; the unroll factors and "
      "load widths read from their PTX and SASS, nvcc 13.0, sm_90), estimated from three rules, "
      "each stated so that a profile can refute it:")
    w(f"1. *L1 wavefronts.* A warp's load is served one 128-byte line per cycle per SM; "
      "where its 32 threads read 32 different lines (a thread per row of a row-major tensor) "
      "that is 32 cycles for 128 useful bytes, 4 B/cycle per SM (~0.9 TB/s on all 132 SMs, "
      "~0.45 TB/s on 64). Attention's dot products read k, v, q and dO rows 3C or C floats "
      "apart, 4 bytes per thread per load (`ld.global.f32`, unrolled by 4): about 70 "
      "wavefronts per (query, key) pair forward and 420 backward (three kernels, each "
      "recomputing the probabilities with two 64-long dots). LayerNorm runs one thread per "
      "row (64 blocks of 256: 64 of the 132 SMs), the cross entropy one block per row with a "
      "contiguous piece of 197 logits per thread: both 32 lines per warp load.")
    w(f"2. *Latency chains.* A kernel with few threads walks N = {N} rows: the column "
      f"reductions (bias gradients, LayerNorm's dw and db: one thread per column, {C}-{4 * C} "
      f"threads) keep {UNROLL} loads in flight per warp (nvcc unrolls by {UNROLL}, PTX), so "
      f"they take N/{UNROLL} x {LAT_DRAM} cycles = "
      f"{latency_loop(N / UNROLL, LAT_DRAM) * 1e3:.2f} ms whatever their width; the encoder "
      f"backward (one thread per channel) loads, adds and stores wte and wpe rows in a "
      f"chain the compiler may not reorder (the pointers may alias): about "
      f"{2 * LAT_DRAM + LAT_L2} cycles a token, "
      f"{latency_loop(N, 2 * LAT_DRAM + LAT_L2) * 1e3:.0f} ms.")
    w("3. *Everything coalesced* (GELU, adds, AdamW, the sums, the encoder forward, "
      f"fill_bias) streams at {BW_EFF:.0%} of HBM; cuBLAS as in *predicted*. fill_bias is also "
      f"held to its {FILL_BIAS_INT_OPS} integer operations an element (`i % OC`).")
    w("")
    w("| op | launches | GFLOP | GB fp32 / bf16 | roofline ms fp32 / TF32 / bf16 | "
      "predicted ms fp32 / TF32 / bf16 | per-row kernels (before 2026-11-25) ms (fp32 / TF32 "
      "products) | what limits the per-row kernel | the tree's kernels (not yet run on a GPU) "
      "ms (fp32 / TF32) |")
    w("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for o in ops:
        w(f"| {o.name} | {o.calls} | {o.flops / 1e9:.0f} | "
          f"{o.nbytes('fp32') / 1e9:.2f} / {o.nbytes('bf16') / 1e9:.2f} | "
          + " / ".join(ms(o.roofline(p)) for p in precs) + " | "
          + " / ".join(ms(o.predicted(p)) for p in precs) + " | "
          + " / ".join(ms(o.old(g)) for g in ["fp32", "tf32"]) + f" | {o.why} | "
          + " / ".join(ms(o.tree(g)) for g in ["fp32", "tf32"]) + " |")
    w(f"| launch gaps ({LAUNCH_GAP * 1e6:.0f} us) | {launches(ops)} | | | | "
      + " / ".join(ms(gaps) for p in precs) + " | " + " / ".join(ms(gaps) for g in "ab")
      + " | | " + " / ".join(ms(gaps) for g in "ab") + " |")
    tot_b = {p: sum(o.nbytes(p) for o in ops) for p in precs}
    w(f"| **step** | {launches(ops)} | {flops / 1e9:.0f} | {tot_b['fp32'] / 1e9:.1f} / "
      f"{tot_b['bf16'] / 1e9:.1f} | " + " / ".join(ms(roof[p]) for p in precs) + " | "
      + " / ".join(ms(pred[p]) for p in precs) + " | "
      + " / ".join(ms(old[g]) for g in ["fp32", "tf32"]) + " | | "
      + " / ".join(ms(tree[g]) for g in ["fp32", "tf32"]) + " |")
    w("")
    anchors = {"fp32": "PyTorch fp32 eager 305 ms, 53.7k",
               "tf32": "PyTorch TF32 eager 110 ms, 149k",
               "bf16": "PyTorch bf16 eager 55 ms, 298k; llm.c 51.3 ms, 319k; "
                       "torch.compile 36.7 ms, 446k"}
    w("| configuration | step ms | tokens/s | what limits it (share of the step) | "
      "measured there (shared/device/README.md) |")
    w("|---|---:|---:|---|---|")
    for g in ["fp32", "tf32"]:
        times = {o.name: o.old(g) for o in ops}
        flag = "" if g == "fp32" else " `--tf32`"
        w(f"| per-row kernels (before 2026-11-25): `--backend cuda`{flag} ({g} products) | "
          f"{ms(old[g])} | {tok(old[g])} | {top(times)} | {anchors[g]} |")
    for g in ["fp32", "tf32"]:
        times = {o.name: o.tree(g) for o in ops}
        flag = "" if g == "fp32" else " `--tf32`"
        w(f"| the tree's kernels (not yet run on a GPU): `--backend cuda`{flag} ({g} products; "
          f"blocked attention, warp LayerNorm, chunked column sums, strided cross entropy, "
          f"merge-sorted embedding backward; predicted, not measured) | {ms(tree[g])} | "
          f"{tok(tree[g])} | {top(times)} | {anchors[g]} |")
    for p in precs:
        times = {o.name: o.predicted(p) for o in ops}
        w(f"| {p}, every kernel good (predicted) | {ms(pred[p])} | {tok(pred[p])} | "
          f"{top(times)} | {anchors[p]} |")
    for p in precs:
        times = {o.name: o.roofline(p) for o in ops}
        w(f"| {p}, every kernel at its roofline (bound) | {ms(roof[p])} | {tok(roof[p])} | "
          f"{top(times)} | |")
    w("")
    att_old = sum(o.old("fp32") for o in ops if o.name.startswith("attention"))
    col_old = (sum(L * latency_loop(-(-N // UNROLL), LAT_DRAM) for _ in range(4))
                 + (2 * L + 1) * latency_loop(-(-N // UNROLL), LAT_DRAM)
                 + latency_loop(N, 2 * LAT_DRAM + LAT_L2))
    head_bf16 = sum(o.predicted("bf16") for o in ops if o.name.startswith("lm-head"))
    one_chunk = 3 * 2 * N * VP * C / (PEAK["bf16"] * GEMM_EFF["bf16"])
    gemm_bf16 = sum(o.predicted("bf16") for o in ops if o.kind == "gemm")
    fusable = sum(o.predicted("bf16") for o in ops
                  if o.kind == "mem" and not o.name.startswith(("AdamW", "grad")))
    attention_section(w, ms)
    w("**Reading it.**")
    w("- With the per-row kernels (before 2026-11-25) the step would take about "
      f"{old['fp32']:.1f} s ({tok(old['fp32'])} tokens/s, "
      f"~{53.7e3 / (N / old['fp32']):.0f}x slower than PyTorch's fp32 eager), "
      f"{100 * att_old / old['fp32']:.0f}% of it in the attention kernels: the scores are "
      "scalar dot products whose warps read 32 rows at once, so L1 serves 4 useful bytes a "
      "cycle, and the backward does that six times per pair. TF32 barely helps "
      f"({old['tf32']:.1f} s) because the products are not the problem. Next come the "
      f"column reductions with few threads ({col_old * 1e3:.0f} ms: bias gradients, "
      "LayerNorm dw/db, the encoder backward) and the one-thread-per-row LayerNorm and "
      "cross entropy.")
    w("- Order of work this gives: (1) attention as tiles through shared memory with tensor "
      "cores (flash-style), or its score tiles through cuBLAS strided-batched GEMMs on a "
      "bounded workspace: 2.5 s -> a few ms; (2) the column reductions split over rows in "
      "fixed chunks (a block per column slice, partial sums added in a fixed order: still "
      "deterministic) and the encoder backward grouped by row; (3) LayerNorm and the "
      "cross entropy a warp per row, coalesced. With those the fp32 step is cuBLAS-bound "
      f"(~{ms(pred['fp32'])} ms, PyTorch's fp32 eager takes 305) and TF32 ~{ms(pred['tf32'])} ms.")
    b = blocked_attention()
    flash32, flash_tc = flash_attention("fp32")[2], flash_attention("tf32")[2]
    slow_flash = flash_attention("fp32")[0] / (PEAK["fp32"] * ATT_EFF["fp32"] / 2)
    w(f"- The tree's kernels (the fp32 path; not yet run on a GPU) take (1) and the "
      "LayerNorm, column-sum, embedding and cross-entropy parts of (2) and (3): predicted "
      f"{ms(tree['fp32'])} ms ({tok(tree['fp32'])} tokens/s) with fp32 products and "
      f"{ms(tree['tf32'])} ms ({tok(tree['tf32'])}) with TF32, from "
      f"{old['fp32']:.1f} s. Attention went to query blocks through cuBLAS: "
      f"{ms(sum(b['time']['fp32']))} ms, bound by the {b['bytes'] / 1e9:.0f} GB its fp32 scores "
      f"move through HBM ({ATT_QBLOCK}-row blocks compute {b['area'] / (T * (T + 1) / 2) - 1:.0%} "
      "more scores than the causal half; 64-row blocks re-read K and V more, whole-sequence "
      "blocks compute twice the scores: the sweep above). Why not a fused kernel: on CUDA "
      f"cores it predicts {ms(flash32)} ms only if it reaches {ATT_EFF['fp32']:.0%} of the fp32 "
      f"peak ({ms(slow_flash)} ms at half that), while the blocked design's arithmetic is "
      "cuBLAS's and its own device code (a warp per score row, a pointer fill) is replayed "
      "on the host against the CPU attention; on tensor cores a fused kernel predicts "
      f"{ms(flash_tc)} ms, the real target for TF32 and bf16 (the blocked attention is "
      f"{100 * sum(b['time']['tf32']) / tree['tf32']:.0f}% of the TF32 step), but it needs mma "
      "fragments that no check here can run. Weak points: L2 (50 MB) may hold a chunk's "
      "score block (up to 32 MiB) between a GEMM and the row kernel that reads it, which "
      "would cut the bytes; cuBLAS's host cost per batched call (several us) against "
      f"{b['launches']} calls a step; the efficiency of batched GEMMs with K = {HS}.")
    w("- What the tree's kernels leave for the GPU session (none has run on a GPU): `make "
      "cuda && make test-cuda` (the op tests `cuda_attention` at hs 64, T 1024 and 75 pairs, "
      "`cuda_layernorm` at 2048 x 768, `cuda_encoder` at 16k tokens, `cuda_matmul`, "
      "`cuda_crossentropy`, and `cuda_train`), 20 fresh seeds, compute-sanitizer memcheck and "
      "racecheck on them; the step at B 16, T 1024 with and without `ZT_CUDA_ATTENTION=rows` "
      "(the old attention) and `--tf32`, `nsys profile --stats=true` against this table's "
      "column of the tree's kernels; then the fused tensor-core attention if the blocked "
      "one's 99 GB show.")
    w(f"- bf16 is where the anchors are. With this step's structure and good kernels it "
      f"predicts {ms(pred['bf16'])} ms ({tok(pred['bf16'])} tokens/s): matrix products "
      f"{100 * gemm_bf16 / pred['bf16']:.0f}%, the rest mostly memory traffic of the "
      "separate element-wise kernels; it assumes every kernel near its bound, so read it as "
      "the target of this structure, not a promise. Two structural "
      f"costs show: the head, {ms(head_bf16)} ms in {len(CHUNKS)} chunk(s) against "
      f"{ms(one_chunk)} ms of its products at one chunk (the automatic chunk on an 80 GB GPU "
      "holds all 16k tokens' logits, 3.3 GB; each further chunk re-reads wte and its "
      "gradient; llm.c fuses the classifier); and the separate element-wise kernels (LayerNorm, GELU, adds, "
      f"three loss passes, the embedding) cost {ms(fusable)} ms of the "
      f"{ms(pred['bf16'])}, most of which fusions remove (residual add + LayerNorm, GELU in "
      "the GEMM epilogue, bias gradients in the dW GEMM, a one-pass softmax and loss).")
    w("- The model's weak points, which the GPU session checks first: the L1 wavefront rule "
      "(if L1 served several lines a cycle for scattered loads, the attention and LayerNorm "
      "estimates fall by that factor; attention would still lead), the DRAM latency "
      f"({LAT_DRAM} cycles) behind every column reduction, and cuBLAS's efficiency on the "
      f"head's {CHUNKS[0]}-row GEMMs. `nsys profile --stats=true` gives each kernel's time "
      "against the table; `ncu --section MemoryWorkloadAnalysis` on one attention and one "
      "LayerNorm launch gives the wavefronts per request.")
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
