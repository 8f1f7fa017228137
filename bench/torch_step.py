#!/usr/bin/env python3
"""Time one PyTorch training step of GPT-2 (the model of tests/reference/gpt2_ref.py), on the
CPU (the default) or on one GPU (--device cuda): forward + backward on one micro-batch of
random tokens, grad-norm clip 1.0, AdamW (lr 6e-4, wd 0.1 on 2-D params, betas 0.9/0.95).

CPU (bench/step.sh): plain AdamW (non-foreach, non-fused), gpt2_ref's explicit attention,
threads are torch's default (the caller sets OMP_NUM_THREADS and OMP_WAIT_POLICY), each step
timed by the wall clock. --torch2: what a PyTorch 2 user runs instead (torch >= 2.4):
attention through F.scaled_dot_product_attention and fused AdamW, as on the GPU.

--autocast bf16 runs forward + loss under torch.autocast(device, dtype=torch.bfloat16), the
usual PyTorch mixed precision: the parameters, their gradients and AdamW stay fp32 (the
fp32 masters), and autocast's bf16 ops (linear, matmul) cast their inputs to bf16 per call;
backward, the clip and the update are as without it.

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/torch_step.py --steps 6 --warmup-steps 2

GPU (--device cuda, bench/gpu_step.sh): what the GPU anchor (the PyTorch script the GPU
machine's notes measured, modes fp32, tf32, bf16, bf16c) runs, so that its figures are
reproduced inside the project: attention through F.scaled_dot_product_attention (causal;
flash or memory-efficient kernels, no T x T matrix kept), fused AdamW (same groups and
hyper-parameters as the CPU's), the batches drawn on the device before the timed steps.
Each step is timed by CUDA events around it (zero_grad to opt.step) after the warm-up steps,
and the peak is torch.cuda.max_memory_allocated over the timed steps (reset after the
warm-up, as the anchor does; the CUDA context and the caching allocator's slack are not in
it, max_memory_reserved is printed beside it). The anchor's modes:
    fp32   exact fp32 matmuls (TF32 off)             --device cuda
    tf32   TF32 tensor cores for fp32 matmuls        --device cuda --tf32
    bf16   bf16 autocast (and TF32 for the rest)     --device cuda --autocast bf16 --tf32
    bf16c  the same under torch.compile              --device cuda --autocast bf16 --tf32 --compile
For the anchor's shape: --micro-batch 16 --seq 1024 --vocab 50304 (the anchor's and llm.c's
vocabulary padded to a multiple of 128: the same lm-head product as zerotrain's padded one).

The last line is machine readable: RESULT ms_per_step=<median> tokens_per_s=<...>, and on a
GPU also peak_mem_bytes=<max allocated> peak_reserved_bytes=<max reserved>.
"""
import argparse
import contextlib
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from gpt2_ref import GPT, CausalSelfAttention, make_optimizer  # noqa: E402


class SdpaAttention(CausalSelfAttention):
    """gpt2_ref's attention (same parameters) through F.scaled_dot_product_attention
    (causal; torch >= 2.0), as the GPU anchor computes it."""

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, hs).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


def torch2_setup(model, device):
    """PyTorch 2's fast path: SDPA attention, fused AdamW (same groups and hyper-parameters as
    gpt2_ref's make_optimizer), the model on `device`."""
    for m in model.modules():
        if isinstance(m, CausalSelfAttention):
            m.__class__ = SdpaAttention
    model = model.to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    return model, opt


def gpu_setup(a, model):
    """The GPU's model, optimizer and forward callable (--device cuda)."""
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    model, opt = torch2_setup(model, "cuda")
    fwd = torch.compile(model) if a.compile else model
    return model, opt, fwd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-layer", type=int, default=12)
    ap.add_argument("--n-head", type=int, default=12)
    ap.add_argument("--n-embd", type=int, default=768)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--n-ctx", type=int, default=1024)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup-steps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--tf32", action="store_true", help="GPU: TF32 tensor cores in fp32 matmuls")
    ap.add_argument("--compile", action="store_true", help="GPU: torch.compile the model")
    ap.add_argument("--torch2", action="store_true",
                    help="CPU: SDPA attention and fused AdamW (the GPU always uses them)")
    a = ap.parse_args()
    if a.device == "cpu" and (a.tf32 or a.compile):
        ap.error("--tf32 and --compile are for --device cuda")
    if a.steps < 1:
        ap.error("--steps must be at least 1")

    gpu = a.device == "cuda"
    if gpu and not torch.cuda.is_available():
        print("SKIP: torch sees no CUDA device")
        sys.exit(77)
    torch.manual_seed(a.seed)
    B, T = a.micro_batch, a.seq
    model = GPT(a.vocab, a.n_ctx, a.n_layer, a.n_head, a.n_embd).init_weights(a.seed, random_affine=False)
    if gpu:
        model, opt, fwd = gpu_setup(a, model)
    elif a.torch2:
        model, opt = torch2_setup(model, "cpu")
        fwd = model
    else:
        opt = make_optimizer(model, lr=6e-4, weight_decay=0.1, betas=(0.9, 0.95), eps=1e-8)
        fwd = model
    nparams = sum(p.numel() for p in model.parameters())
    autocast = (lambda: torch.autocast(a.device, dtype=torch.bfloat16)) if a.autocast == "bf16" \
        else contextlib.nullcontext
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')} "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '-')}")
    if a.torch2 and not gpu:
        print("attention scaled_dot_product_attention; AdamW fused")
    if gpu:
        print(f"device {torch.cuda.get_device_name()} (CUDA {torch.version.cuda}); TF32 "
              f"{'on' if a.tf32 else 'off'}; torch.compile {'on' if a.compile else 'off'}; "
              f"attention scaled_dot_product_attention; AdamW fused")
    print(f"model L={a.n_layer} NH={a.n_head} C={a.n_embd} V={a.vocab} maxT={a.n_ctx}: "
          f"{nparams / 1e6:.2f}M params; micro-batch {B} x seq {T}; autocast {a.autocast}")

    n_all = a.warmup_steps + a.steps
    if gpu:  # every batch on the device before the first step: no copy inside a timed step
        batches = torch.randint(0, a.vocab, (n_all, B, T + 1), device="cuda")
    times = []
    for step in range(n_all):
        warm = step < a.warmup_steps
        if gpu:
            if step == a.warmup_steps:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            tokens = batches[step]
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
        else:
            tokens = torch.randint(0, a.vocab, (B, T + 1))
        x, y = tokens[:, :-1], tokens[:, 1:]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with autocast():
            if gpu:  # the logits go as soon as the loss has them (the anchor keeps none)
                loss = fwd(x, y)[1]
            else:
                _, loss = fwd(x, y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if gpu:
            e1.record()
            torch.cuda.synchronize()
            dt = e0.elapsed_time(e1) / 1e3
        else:
            dt = time.perf_counter() - t0
        if not warm:
            times.append(dt)
        print(f"step {step}{' (warmup)' if warm else ''}: loss {loss.item():.4f} "
              f"norm {norm.item():.4f} {dt * 1e3:.1f} ms", flush=gpu)

    med, mean = statistics.median(times), statistics.fmean(times)
    print(f"ms/step median {med * 1e3:.1f} mean {mean * 1e3:.1f} over {len(times)} steps; "
          f"tokens/s {B * T / med:.1f}")
    if not gpu:
        print(f"RESULT ms_per_step={med * 1e3:.3f} tokens_per_s={B * T / med:.3f}")
        return
    peak, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    print(f"peak device memory {peak / 2**30:.2f} GiB allocated, {reserved / 2**30:.2f} GiB "
          f"reserved (timed steps)")
    print(f"RESULT ms_per_step={med * 1e3:.3f} tokens_per_s={B * T / med:.3f} "
          f"peak_mem_bytes={peak} peak_reserved_bytes={reserved}")


if __name__ == "__main__":
    main()
