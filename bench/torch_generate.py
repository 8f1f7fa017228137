"""Greedy generation with Hugging Face transformers' GPT2LMHeadModel (fp32, CPU), timed the
way `zerotrain generate` reports itself, for bench/generate.sh:

    python3 bench/torch_generate.py MODEL_DIR IDS NEW THREADS ROUNDS

IDS: the comma-separated prompt. Each round: one forward over the whole prompt with the
KV cache (the prefill; its logits give the first new token), then NEW - 1 one-token
forwards through the cache. Prints one line per round:
    prompt <seconds> decode <seconds> steps <NEW - 1> ids <the new ids, space-separated>
"""
import sys
import time

import torch
from transformers import GPT2LMHeadModel


def main():
    model_dir, ids = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
    new, threads, rounds = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    torch.set_num_threads(threads)
    model = GPT2LMHeadModel.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    vocab = model.config.vocab_size
    prompt = torch.tensor([ids], dtype=torch.long)
    with torch.inference_mode():
        for _ in range(rounds):
            t0 = time.perf_counter()
            out = model(prompt, use_cache=True)
            tok = int(out.logits[0, -1, :vocab].argmax())
            t1 = time.perf_counter()
            past, got = out.past_key_values, [tok]
            for _ in range(new - 1):
                out = model(torch.tensor([[tok]]), past_key_values=past, use_cache=True)
                past = out.past_key_values
                tok = int(out.logits[0, -1, :vocab].argmax())
                got.append(tok)
            t2 = time.perf_counter()
            print(f"prompt {t1 - t0:.4f} decode {t2 - t1:.4f} steps {new - 1} ids "
                  + " ".join(map(str, got)), flush=True)


if __name__ == "__main__":
    main()
