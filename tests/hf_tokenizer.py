"""Checker for tests/sh/hf_tokenizer.sh: the tokenizer files of an exported GPT-2-vocabulary
model, loaded by transformers offline, against tiktoken and zerotrain.

  python3 tests/hf_tokenizer.py MODEL_DIR VOCAB TOKENS FILE...

MODEL_DIR is the export; VOCAB the gpt2.tiktoken it was made from (tiktoken loads it offline,
as in tests/bpe_tiktoken.py); TOKENS is `zerotrain prepare --tokenizer gpt2` of the FILEs
(each document after <|endoftext|>). For every FILE (valid UTF-8 text): GPT2Tokenizer,
GPT2TokenizerFast and AutoTokenizer from MODEL_DIR give tiktoken's encode_ordinary ids and
zerotrain's, and decode them back to the text. Then the special token, config.json's bos/eos
and GPT2LMHeadModel's generation_config. Exit 1 on the first failure.
"""
import json, os, sys

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may come from the network
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np
from transformers import AutoTokenizer, GPT2LMHeadModel, GPT2Tokenizer, GPT2TokenizerFast
from transformers.utils import logging

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bpe_tiktoken import EOT, encoding  # noqa: E402

logging.set_verbosity_error()  # "sequence longer than model_max_length": we only tokenize
model_dir, vocab, tokens, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
fail = 0


def expect(ok, what):
    global fail
    print(("ok   " if ok else "FAIL ") + what)
    fail |= not ok


def first_diff(a, b):
    return next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))


enc = encoding(vocab)
toks = {"GPT2Tokenizer": GPT2Tokenizer.from_pretrained(model_dir, local_files_only=True),
        "GPT2TokenizerFast": GPT2TokenizerFast.from_pretrained(model_dir, local_files_only=True),
        "AutoTokenizer": AutoTokenizer.from_pretrained(model_dir, local_files_only=True)}
expect(type(toks["AutoTokenizer"]).__name__ == "GPT2TokenizerFast",
       f"AutoTokenizer loads {type(toks['AutoTokenizer']).__name__}")

ours = np.fromfile(tokens, dtype=np.uint16, offset=1024).tolist()  # llm.c's token file
docs, at = [], 0
for f in files:
    text = open(f, "rb").read().decode("utf-8")
    want = enc.encode_ordinary(text)
    zt = ours[at + 1:at + 1 + len(want)]
    ok = ours[at] == EOT and zt == want
    at += 1 + len(want)
    expect(ok, f"{os.path.basename(f)}: zerotrain's {len(zt)} ids == tiktoken's {len(want)}")
    for name, tok in toks.items():
        got = tok.encode(text)
        k = first_diff(got, want)
        expect(got == want, f"{os.path.basename(f)}: {name} ids == tiktoken's"
               + ("" if got == want else
                  f" (first difference at {k}: {got[k:k + 6]} vs {want[k:k + 6]}, text "
                  f"{enc.decode(want[max(0, k - 3):k + 6])!r})"))
        back = tok.decode(want)
        expect(back == text, f"{os.path.basename(f)}: {name} decode gives the text back")
expect(at == len(ours), f"zerotrain's file holds exactly the {len(files)} documents")

for name, tok in toks.items():
    expect(len(tok) == 50257 and tok.eos_token_id == EOT and tok.bos_token_id == EOT
           and tok.encode("<|endoftext|>") == [EOT] and tok.decode([EOT]) == "<|endoftext|>",
           f"{name}: 50257 ids, bos = eos = <|endoftext|> = {EOT}")

cfg = json.load(open(os.path.join(model_dir, "config.json")))
expect(cfg.get("bos_token_id") == EOT and cfg.get("eos_token_id") == EOT,
       f"config.json bos/eos {cfg.get('bos_token_id')}/{cfg.get('eos_token_id')}")
model = GPT2LMHeadModel.from_pretrained(model_dir, local_files_only=True)
gc = model.generation_config
expect(gc.eos_token_id == EOT and gc.bos_token_id == EOT,
       f"GPT2LMHeadModel generation_config eos/bos {gc.eos_token_id}/{gc.bos_token_id}")
sys.exit(fail)
