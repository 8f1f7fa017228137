#!/usr/bin/env python3
"""Loads a bf16 export with Hugging Face transformers as a user would keep its dtype,
GPT2LMHeadModel.from_pretrained(DIR, torch_dtype="auto") (without it transformers 4.x loads in
float32 whatever config.json says: modeling_utils.py takes config.torch_dtype only under
"auto"), and checks: every parameter is torch.bfloat16, and equals PyTorch's own rounding
(Tensor.to(torch.bfloat16): nearest, ties to even) of the fp32 export's tensor of that name;
the model runs (finite logits).

    hf_bf16_load.py BF16_DIR F32_DIR"""
import json
import struct
import sys

import numpy as np
import torch
from transformers import GPT2LMHeadModel


def read_f32(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    hdr.pop("__metadata__", None)
    out = {}
    for k, v in hdr.items():
        assert v["dtype"] == "F32", (k, v["dtype"])
        b, e = v["data_offsets"]
        a = np.frombuffer(raw[8 + n + b:8 + n + e], dtype="<f4").reshape(v["shape"])
        out[k] = torch.from_numpy(a.copy())
    return out


bf16_dir, f32_dir = sys.argv[1], sys.argv[2]
model = GPT2LMHeadModel.from_pretrained(bf16_dir, torch_dtype="auto").eval()
ref = read_f32(f32_dir + "/model.safetensors")
fail = 0
for name, p in model.named_parameters():
    if p.dtype != torch.bfloat16:
        print(f"FAIL {name}: {p.dtype}")
        fail = 1
        continue
    key = name.removeprefix("transformer.")
    if key == "lm_head.weight":
        key = "wte.weight"  # tied
    want = ref[key].to(torch.bfloat16)
    if not torch.equal(p.detach().view(torch.int16), want.view(torch.int16)):
        bad = (p.detach().view(torch.int16) != want.view(torch.int16)).sum().item()
        print(f"FAIL {name}: {bad} values differ from torch's bf16 rounding of the fp32 export")
        fail = 1
with torch.no_grad():
    logits = model(torch.arange(16).unsqueeze(0)).logits
if logits.dtype != torch.bfloat16 or not torch.isfinite(logits.float()).all():
    print(f"FAIL: logits {logits.dtype}, finite {torch.isfinite(logits.float()).all().item()}")
    fail = 1
if not fail:
    n = sum(p.numel() for p in model.parameters())
    print(f"{len(list(model.parameters()))} parameters ({n} values) bfloat16, equal to torch's "
          f"rounding of the fp32 export")
sys.exit(fail)
