# Hugging Face transformers' greedy continuation of a prompt, for tests/sh/generate_hf.sh:
#   python3 tests/generate_hf.py MODEL_DIR IDS MAX_NEW
# loads MODEL_DIR with GPT2LMHeadModel (fp32, CPU), runs generate(do_sample=False) on the
# comma-separated prompt ids and prints the new ids, space-separated (it stops at the
# config's eos_token_id: 50256 for vocabulary 50257, as zerotrain does; none for bytes).
import sys

import torch
from transformers import GPT2LMHeadModel

model_dir, ids, max_new = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], int(sys.argv[3])
torch.manual_seed(0)
model = GPT2LMHeadModel.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
inp = torch.tensor([ids], dtype=torch.long)
with torch.no_grad():
    out = model.generate(inp, attention_mask=torch.ones_like(inp), max_new_tokens=max_new,
                         do_sample=False, num_beams=1, pad_token_id=model.config.eos_token_id)
print(" ".join(str(int(t)) for t in out[0, len(ids):]))
