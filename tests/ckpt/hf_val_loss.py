#!/usr/bin/env python3
"""Loads a saved or exported directory with Hugging Face transformers
(GPT2LMHeadModel.from_pretrained) and prints its mean loss over the first N sequences of T
tokens of an llm.c token file: the samples zerotrain's validation reads on one rank.

    hf_val_loss.py DIR VAL.bin T N"""
import struct
import sys

import torch
from transformers import GPT2LMHeadModel

d, path, T, N = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
raw = open(path, "rb").read()
n = struct.unpack("<256i", raw[:1024])[2]
tok = torch.tensor(struct.unpack(f"<{n}H", raw[1024:1024 + 2 * n]), dtype=torch.long)
model = GPT2LMHeadModel.from_pretrained(d, torch_dtype=torch.float32).eval()
x = torch.stack([tok[i * T:i * T + T] for i in range(N)])
y = torch.stack([tok[i * T + 1:i * T + T + 1] for i in range(N)])
with torch.no_grad():
    logits = model(x).logits
loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
print(f"{loss.item():.6f}")
