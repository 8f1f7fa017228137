"""Oracle for tests/sh/bpe_unicode_sweep.sh: every code point U+0000..U+10FFFF but the surrogates,
each in the CONTEXTS below, tokenized by tiktoken's gpt2 (the same gpt2.tiktoken, offline) and
compared with zerotrain's ids context by context.

  write DIR             one file per context, DIR/<name>.txt: for each code point "\\xff" then the
                        context. The invalid byte makes each context a whole text of its own for
                        zerotrain's pattern (--invalid-utf8 keep runs it on each valid stretch
                        alone), so the contexts' starts and ends are the text's; its id (the byte
                        0xff's token) appears nowhere else and marks where each sample starts.
  check VOCAB DIR       DIR/<name>.bin is zerotrain's token file for DIR/<name>.txt; prints the
                        count of code points and contexts compared, and each mismatch (code point,
                        context, both ids), up to 20 per context. Exit 1 on any.
"""
import os, sys

PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = 50256
CONTEXTS = {  # name: template, {c} the code point
    "between_letters": "a{c}b",
    "after_spaces_before_digit": "  {c}1",
    "two_spaces_before": "x  {c}y",
    "before_contraction": "{c}'s",
    "after_apostrophe": "'{c}",
    "own_line": "\n{c}\n",
    "repeated": "{c} {c}{c}",
    "whole_text": "{c}",
    "text_end_after_space": " {c}",
    "after_digit_before_tab": "1{c}\t",
}


def code_points():
    return [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def write(d):
    os.makedirs(d, exist_ok=True)
    cps = code_points()
    for name, t in CONTEXTS.items():
        with open(os.path.join(d, name + ".txt"), "wb") as f:
            f.write(b"".join(b"\xff" + t.replace("{c}", chr(c)).encode() for c in cps))
    print(" ".join(CONTEXTS))


def check(vocab, d):
    import numpy as np, tiktoken, tiktoken.load
    enc = tiktoken.Encoding("gpt2_offline", pat_str=PAT,
                            mergeable_ranks=tiktoken.load.load_tiktoken_bpe(vocab),
                            special_tokens={"<|endoftext|>": EOT})
    sep = enc.encode_single_token(b"\xff")
    cps = code_points()
    bad = 0
    for name, t in CONTEXTS.items():
        texts = [t.replace("{c}", chr(c)) for c in cps]
        want = [enc.encode_ordinary(x) for x in texts]  # the batch API's thread pool costs more
        got = np.fromfile(os.path.join(d, name + ".bin"), dtype=np.uint16, offset=1024)
        flat = np.fromiter((x for ids in want for x in [sep] + ids), dtype=np.uint16)
        if got[0] == EOT and len(got) - 1 == len(flat) and (got[1:] == flat).all():
            continue
        starts = np.flatnonzero(got[1:] == sep)  # sep is only ever the invalid byte
        parts = np.split(got[1:], starts)[1:]
        if len(parts) != len(cps):
            print(f"{name}: {len(parts)} samples in zerotrain's ids, {len(cps)} code points")
            bad += 1
            continue
        shown = 0
        for c, g, w in zip(cps, parts, want):
            if g[1:].tolist() != w:
                bad += 1
                if shown < 20:
                    print(f"DIFFERENT U+{c:04X} in {name} ({t!r}): zerotrain {g[1:].tolist()}, "
                          f"tiktoken {w}")
                shown += 1
        print(f"{name}: {shown} code points differ")
    n = len(cps) * len(CONTEXTS)
    print(f"{'DIFFERENT' if bad else 'same ids as tiktoken'}: {len(cps)} code points x "
          f"{len(CONTEXTS)} contexts = {n} texts compared, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "write": write(sys.argv[2])
    elif sys.argv[1] == "check": sys.exit(check(sys.argv[2], sys.argv[3]))
