#!/usr/bin/env python3
"""PyTorch numerical reference for zerotrain (compared against by tests/test_reference.c).

A small, plain GPT-2 (as llm.c's train_gpt2.py and Hugging Face define it: pre-LayerNorm blocks,
learned position embeddings, GELU tanh approximation, causal self-attention, final LayerNorm,
lm-head tied to the token embedding, no dropout, LayerNorm eps 1e-5), computed in float32 on the
CPU with one thread. Parameter names are the Hugging Face GPT-2 names without "transformer.";
matrices are nn.Linear weights, i.e. (out, in).

    /usr/bin/python3 tests/reference/gpt2_ref.py --out DIR

writes into DIR (all little-endian):

  model.bin    initial weights as an llm.c fp32 checkpoint: 256 int32 header
               [20240326, 3, maxT, V, L, NH, C, Vp, 0...], then float32 tensors stacked over
               layers in llm.c order: wte (Vp,C) with rows [V,Vp) zero, wpe (maxT,C), ln1w, ln1b,
               qkvw (L,3C,C), qkvb, attprojw (L,C,C), attprojb, ln2w, ln2b, fcw (L,4C,C), fcb,
               fcprojw (L,C,4C), fcprojb, lnfw (C), lnfb (C).
  train.bin    llm.c token file: 256 int32 header [20240520, 1, N, 0...], then N uint16 tokens
               drawn uniformly from [0, V).
  config.json  the model and run settings used.
  expect.bin   records, each: int32 name length, name bytes (ASCII, no terminator), int32 ndim,
               int64 dims[ndim], float32 data (row-major). In this order:
                 logits (B,T,V), loss (1)         micro-batch 0 of step 0, initial weights
                 grad.<name>                      step 0's gradient, before clipping, of the mean
                                                  loss over all grad_accum*B*T tokens of the step
                 grad{k}.<name>                   the same for step k >= 1
                 grad_norm.step{k} (1)            pre-clip global L2 norm (tied wte counted once)
                 loss.step{k} (1)                 mean loss over the step's tokens (params before
                                                  step k's update)
                 lr.step{k} (1)                   learning rate of step k (constant)
                 param.<name>                     parameters after all `steps` updates
                 param1.<name>                    parameters after exactly one update
               wte tensors have V rows (unpadded).

Data path (llm.c style): sample i is tokens[i*T : i*T+T+1] (inputs the first T, targets shifted
by one); micro-batch k of step s holds samples (s*grad_accum + k)*B ... +B-1.

Optimizer: torch.optim.AdamW (decoupled weight decay, bias correction, eps added to sqrt(v_hat)),
weight decay on 2-D parameters only (wte, wpe, all matrices), 0 on biases and LayerNorms.
Before each update torch.nn.utils.clip_grad_norm_(params, grad_clip): when the norm exceeds the
clip, grads are scaled by grad_clip / (norm + 1e-6).

Biases and LayerNorm parameters start random (not 0/1) so that the test exercises them.
The script finally re-reads model.bin/train.bin/expect.bin with an independent numpy forward pass
and checks that the logits and loss reproduce.
"""
import argparse
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ----------------------------------------------------------------------------- model

class CausalSelfAttention(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.n_head = NH
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, hs).transpose(1, 2) for t in (q, k, v))  # B,NH,T,hs
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=1e-5)
        self.attn = CausalSelfAttention(C, NH)
        self.ln_2 = nn.LayerNorm(C, eps=1e-5)
        self.mlp = MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """GPT-2; parameter names wte.weight, wpe.weight, h.{i}.*, ln_f.* (Hugging Face, no prefix)."""

    def __init__(self, vocab, n_ctx, n_layer, n_head, n_embd):
        super().__init__()
        assert n_embd % n_head == 0
        self.n_layer = n_layer
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(n_ctx, n_embd)
        self.h = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, eps=1e-5)

    @torch.no_grad()
    def init_weights(self, seed, random_affine=True):
        """GPT-2 init: matrices and embeddings N(0, 0.02), c_proj weights N(0, 0.02/sqrt(2L)).
        random_affine: LayerNorm weights 1+0.1*randn, biases 0.02*randn (else 1 and 0)."""
        g = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * self.n_layer) if name.endswith("c_proj.weight") else 0.02
                p.copy_(std * r)
            elif ".ln_" in "." + name and name.endswith(".weight"):  # ln_1, ln_2, ln_f weights
                p.copy_(1.0 + 0.1 * r if random_affine else torch.ones_like(p))
            else:  # biases (Linear and LayerNorm)
                p.copy_(0.02 * r if random_affine else torch.zeros_like(p))
        return self

    def forward(self, idx, targets=None):
        B, T = idx.shape
        pos = torch.arange(T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied lm-head
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss


def make_optimizer(model, lr, weight_decay, betas, eps):
    """Plain (non-foreach, non-fused) AdamW; weight decay on 2-D params only."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, foreach=False)


# ----------------------------------------------------------------------------- files

MODEL_MAGIC, MODEL_VERSION_FP32, DATA_MAGIC, DATA_VERSION = 20240326, 3, 20240520, 1
LLMC_ORDER = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
              "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
              "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]


def write_model_bin(path, sd, cfg):
    V, Vp, C, L = cfg["vocab"], cfg["padded_vocab"], cfg["n_embd"], cfg["n_layer"]
    header = np.zeros(256, dtype="<i4")
    header[:8] = [MODEL_MAGIC, MODEL_VERSION_FP32, cfg["n_ctx"], V, L, cfg["n_head"], C, Vp]
    wte = np.zeros((Vp, C), dtype="<f4")
    wte[:V] = sd["wte.weight"]
    tensors = [wte, sd["wpe.weight"]]
    tensors += [np.stack([sd[f"h.{i}.{n}"] for i in range(L)]) for n in LLMC_ORDER]
    tensors += [sd["ln_f.weight"], sd["ln_f.bias"]]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for t in tensors:
            f.write(np.ascontiguousarray(t, dtype="<f4").tobytes())


def write_tokens_bin(path, tokens):
    header = np.zeros(256, dtype="<i4")
    header[:3] = [DATA_MAGIC, DATA_VERSION, len(tokens)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, dtype="<u2").tobytes())


def write_expect_bin(path, records):
    with open(path, "wb") as f:
        for name, arr in records:
            arr = np.ascontiguousarray(arr, dtype="<f4")
            nb = name.encode("ascii")
            f.write(struct.pack("<i", len(nb)) + nb + struct.pack("<i", arr.ndim))
            f.write(struct.pack(f"<{arr.ndim}q", *arr.shape))
            f.write(arr.tobytes())


def read_expect_bin(path):
    out, buf, o = {}, open(path, "rb").read(), 0
    while o < len(buf):
        (n,) = struct.unpack_from("<i", buf, o); o += 4
        name = buf[o:o + n].decode("ascii"); o += n
        (nd,) = struct.unpack_from("<i", buf, o); o += 4
        dims = struct.unpack_from(f"<{nd}q", buf, o); o += 8 * nd
        cnt = int(np.prod(dims, dtype=np.int64))
        out[name] = np.frombuffer(buf, dtype="<f4", count=cnt, offset=o).reshape(dims); o += 4 * cnt
    assert o == len(buf), "trailing bytes in expect.bin"
    return out


# ----------------------------------------------------------------------------- independent check

def numpy_check(out_dir, cfg):
    """Re-read model.bin/train.bin with plain numpy, run the forward pass (float64) and compare
    logits/loss with expect.bin."""
    V, Vp, T, B = cfg["vocab"], cfg["padded_vocab"], cfg["seq"], cfg["micro_batch"]
    maxT, L, NH, C = cfg["n_ctx"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    raw = open(os.path.join(out_dir, "model.bin"), "rb").read()
    hdr = np.frombuffer(raw, dtype="<i4", count=256)
    assert list(hdr[:8]) == [MODEL_MAGIC, 3, maxT, V, L, NH, C, Vp] and not hdr[8:].any()
    shapes = [(Vp, C), (maxT, C), (L, C), (L, C), (L, 3 * C, C), (L, 3 * C), (L, C, C), (L, C),
              (L, C), (L, C), (L, 4 * C, C), (L, 4 * C), (L, C, 4 * C), (L, C), (C,), (C,)]
    n = sum(int(np.prod(s)) for s in shapes)
    assert len(raw) == 1024 + 4 * n, (len(raw), 1024 + 4 * n)
    flat = np.frombuffer(raw, dtype="<f4", offset=1024).astype(np.float64)
    P, o = [], 0
    for s in shapes:
        k = int(np.prod(s)); P.append(flat[o:o + k].reshape(s)); o += k
    wte, wpe, l1w, l1b, qw, qb, aw, ab, l2w, l2b, fw, fb, pw, pb, lfw, lfb = P
    assert not wte[V:].any(), "padded wte rows must be zero"

    traw = open(os.path.join(out_dir, "train.bin"), "rb").read()
    th = np.frombuffer(traw, dtype="<i4", count=256)
    assert th[0] == DATA_MAGIC and th[1] == DATA_VERSION and len(traw) == 1024 + 2 * th[2]
    tok = np.frombuffer(traw, dtype="<u2", offset=1024).astype(np.int64)
    x = tok[:B * T].reshape(B, T)
    y = tok[1:B * T + 1].reshape(B, T)

    def ln(h, w, b):
        m = h.mean(-1, keepdims=True); v = ((h - m) ** 2).mean(-1, keepdims=True)
        return (h - m) / np.sqrt(v + 1e-5) * w + b

    def gelu(u):
        return 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))

    hs = C // NH
    h = wte[x] + wpe[:T]
    mask = np.tril(np.ones((T, T), dtype=bool))
    for l in range(L):
        qkv = ln(h, l1w[l], l1b[l]) @ qw[l].T + qb[l]
        q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, T, NH, hs).transpose(0, 2, 1, 3)
                   for i in range(3))
        a = np.where(mask, q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs), -np.inf)
        a = np.exp(a - a.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
        h = h + ((a @ v).transpose(0, 2, 1, 3).reshape(B, T, C) @ aw[l].T + ab[l])
        h = h + gelu(ln(h, l2w[l], l2b[l]) @ fw[l].T + fb[l]) @ pw[l].T + pb[l]
    logits = ln(h, lfw, lfb) @ wte.T  # (B,T,Vp): padded columns are exactly 0
    assert not logits[..., V:].any()
    logits = logits[..., :V]
    z = logits - logits.max(-1, keepdims=True)
    lp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    loss = -np.take_along_axis(lp, y[..., None], -1).mean()

    ex = read_expect_bin(os.path.join(out_dir, "expect.bin"))
    dl = np.abs(ex["logits"] - logits).max()
    dloss = abs(float(ex["loss"][0]) - loss)
    print(f"numpy check: max |logits diff| {dl:.3e}, |loss diff| {dloss:.3e}, "
          f"{len(ex)} records, model.bin {len(raw)} bytes ({n} floats)")
    assert dl < 1e-4 and dloss < 1e-5, "numpy re-read does not reproduce the torch logits"
    return ex


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab", type=int, default=300)
    ap.add_argument("--n-ctx", type=int, default=32)
    ap.add_argument("--n-layer", type=int, default=3)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=64)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--grad-accum", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    torch.set_default_dtype(torch.float32)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(a.seed)

    V, B, T, GA = a.vocab, a.micro_batch, a.seq, a.grad_accum
    assert T <= a.n_ctx
    cfg = {"vocab": V, "padded_vocab": (V + 127) // 128 * 128, "n_ctx": a.n_ctx,
           "n_layer": a.n_layer, "n_head": a.n_head, "n_embd": a.n_embd, "micro_batch": B,
           "seq": T, "grad_accum": GA, "steps": a.steps, "lr": a.lr,
           "weight_decay": a.weight_decay, "beta1": a.beta1, "beta2": a.beta2, "eps": a.eps,
           "grad_clip": a.grad_clip, "seed": a.seed}
    os.makedirs(a.out, exist_ok=True)

    model = GPT(V, a.n_ctx, a.n_layer, a.n_head, a.n_embd).init_weights(a.seed)
    names = [n for n, _ in model.named_parameters()]
    sd = lambda: {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    write_model_bin(os.path.join(a.out, "model.bin"), sd(), cfg)

    need = a.steps * GA * B * T + 1
    tokens = np.random.RandomState(a.seed + 1).randint(0, V, size=2 * need).astype(np.uint16)
    write_tokens_bin(os.path.join(a.out, "train.bin"), tokens)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)

    def micro_batch(step, k):
        start = (step * GA + k) * B * T  # samples are consecutive, T tokens apart
        buf = torch.from_numpy(tokens[start:start + B * T + 1].astype(np.int64))
        return buf[:-1].view(B, T), buf[1:].view(B, T)

    opt = make_optimizer(model, a.lr, a.weight_decay, (a.beta1, a.beta2), a.eps)
    head, grads, norms, losses, lrs, param1 = [], [], [], [], [], []
    for step in range(a.steps):
        opt.zero_grad(set_to_none=True)
        step_loss = 0.0
        for k in range(GA):
            x, y = micro_batch(step, k)
            logits, loss = model(x, y)
            if step == 0 and k == 0:
                head = [("logits", logits.detach().numpy().copy()),
                        ("loss", loss.detach().numpy().reshape(1).copy())]
            (loss / GA).backward()
            step_loss += loss.item() / GA
        # step 0's gradients, and every later step's (at PyTorch's own parameters of that
        # step, which drift from ours by rounding: the C test measures that drift)
        prefix = "grad." if step == 0 else f"grad{step}."
        grads += [(prefix + n, p.grad.numpy().copy()) for n, p in model.named_parameters()]
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip).item()
        lr = opt.param_groups[0]["lr"]
        print(f"step {step}: loss {step_loss:.6f}  pre-clip grad norm {norm:.6f}  "
              f"{'CLIPPED' if norm > a.grad_clip else 'not clipped'} (clip {a.grad_clip})  lr {lr:g}")
        norms.append((f"grad_norm.step{step}", np.array([norm])))
        losses.append((f"loss.step{step}", np.array([step_loss])))
        lrs.append((f"lr.step{step}", np.array([lr])))
        opt.step()
        if step == 0:
            param1 = [(f"param1.{n}", v) for n, v in sd().items()]
    if not any(r[1][0] > a.grad_clip for r in norms):
        print(f"WARNING: grad clip {a.grad_clip} never triggers; lower --grad-clip")

    params = [(f"param.{n}", v) for n, v in sd().items()]
    write_expect_bin(os.path.join(a.out, "expect.bin"),
                     head + grads + norms + losses + lrs + params + param1)
    ex = numpy_check(a.out, cfg)
    assert all(f"{p}.{n}" in ex for p in ("grad", "param", "param1") for n in names)
    print(f"wrote model.bin train.bin config.json expect.bin to {a.out}")


if __name__ == "__main__":
    main()
