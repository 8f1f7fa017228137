#!/usr/bin/env python3
"""Time one PyTorch CPU training step of GPT-2 (the model of tests/reference/gpt2_ref.py):
forward + backward on one micro-batch of random tokens, grad-norm clip 1.0, plain AdamW
(non-foreach, non-fused; lr 6e-4, wd 0.1 on 2-D params, betas 0.9/0.95). Threads are torch's
default; the caller sets OMP_NUM_THREADS and OMP_WAIT_POLICY.

--autocast bf16 runs forward + loss under torch.autocast("cpu", dtype=torch.bfloat16), the
usual PyTorch CPU mixed precision: the parameters, their gradients and AdamW stay fp32 (the
fp32 masters), and autocast's bf16 ops (linear, matmul) cast their inputs to bf16 per call;
backward, the clip and the update are as without it.

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/torch_step.py --steps 6 --warmup-steps 2

The last line is machine readable: RESULT ms_per_step=<median> tokens_per_s=<...>
"""
import argparse
import contextlib
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from gpt2_ref import GPT, make_optimizer  # noqa: E402


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
    a = ap.parse_args()

    torch.manual_seed(a.seed)
    B, T = a.micro_batch, a.seq
    model = GPT(a.vocab, a.n_ctx, a.n_layer, a.n_head, a.n_embd).init_weights(a.seed, random_affine=False)
    opt = make_optimizer(model, lr=6e-4, weight_decay=0.1, betas=(0.9, 0.95), eps=1e-8)
    nparams = sum(p.numel() for p in model.parameters())
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.autocast == "bf16" \
        else contextlib.nullcontext
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')} "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '-')}")
    print(f"model L={a.n_layer} NH={a.n_head} C={a.n_embd} V={a.vocab} maxT={a.n_ctx}: "
          f"{nparams / 1e6:.2f}M params; micro-batch {B} x seq {T}; autocast {a.autocast}")

    times = []
    for step in range(a.warmup_steps + a.steps):
        tokens = torch.randint(0, a.vocab, (B, T + 1))
        x, y = tokens[:, :-1], tokens[:, 1:]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with autocast():
            _, loss = model(x, y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        warm = step < a.warmup_steps
        if not warm:
            times.append(dt)
        print(f"step {step}{' (warmup)' if warm else ''}: loss {loss.item():.4f} "
              f"norm {norm.item():.4f} {dt * 1e3:.1f} ms")

    med, mean = statistics.median(times), statistics.fmean(times)
    print(f"ms/step median {med * 1e3:.1f} mean {mean * 1e3:.1f} over {len(times)} steps; "
          f"tokens/s {B * T / med:.1f}")
    print(f"RESULT ms_per_step={med * 1e3:.3f} tokens_per_s={B * T / med:.3f}")


if __name__ == "__main__":
    main()
