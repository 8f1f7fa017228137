"""Oracle for tests/sh/bpe_tiktoken.sh and bench/tokenizer.sh: tiktoken's gpt2 encoding, loaded
offline from the same gpt2.tiktoken file zerotrain reads.

  corpus DIR            writes the test corpus (one file per case) into DIR
  check VOCAB TOKENS MODE FILE...
                        TOKENS is zerotrain's token file for the FILEs as documents (each after
                        <|endoftext|>); MODE keep|replace is its --invalid-utf8 (piece: each
                        FILE is one piece, merged whole by tiktoken). Exit 1 on the first
                        difference, with context.
  bench VOCAB FILE THREADS   prints tiktoken's MB/s on FILE (encode_ordinary_batch on lines' chunks)
  long DIR MIB [NAME...]
                        writes long single pieces of MIB MiB each into DIR (one letter, two and
                        three letters repeated, digits, spaces, a two-byte letter, random ACGT,
                        random lowercase, random digits, invalid bytes; or only the NAMEs): each
                        file is one piece, except random base64 (pieces of letters, digits and
                        "+/" with no newline)
  measure AS_KB CMD...  runs CMD (address space limited to AS_KB KiB unless 0) and prints
                        "rc peak_rss_kib peak_vm_kib" (VmPeak polled from /proc while it runs)
  uniform VOCAB TOKENS SMALL
                        TOKENS holds the ids of a long run of one byte after <|endoftext|>; SMALL
                        is 1 MiB of that byte: tiktoken's ids for SMALL must be one id repeated,
                        and TOKENS that id repeated for the whole run (what tiktoken gives on a
                        100 MB run too, bench/RESULTS.md)
"""
import os, random, sys, time

PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = 50256


def encoding(vocab):
    import tiktoken, tiktoken.load
    return tiktoken.Encoding("gpt2_offline", pat_str=PAT,
                             mergeable_ranks=tiktoken.load.load_tiktoken_bpe(vocab),
                             special_tokens={"<|endoftext|>": EOT})


def reference(enc, data, mode):
    """tiktoken ids for bytes: valid UTF-8 exactly as encode_ordinary; invalid bytes per mode;
    mode "piece": data is one piece of the pattern (a run of spaces: tiktoken's regex overflows
    its stack on 1 MiB of them), byte-pair merged whole."""
    if mode == "piece":
        return enc._encode_single_piece(data)
    s = data.decode("utf-8", "surrogateescape")  # each invalid byte -> one lone surrogate
    if mode == "replace":
        return enc.encode_ordinary(s)  # tiktoken turns each lone surrogate into U+FFFD
    ids, i = [], 0
    while i < len(s):  # keep: valid stretches whole, each run of invalid bytes one piece
        j = i
        bad = 0xDC80 <= ord(s[i]) <= 0xDCFF
        while j < len(s) and (0xDC80 <= ord(s[j]) <= 0xDCFF) == bad:
            j += 1
        part = s[i:j]
        if bad:
            ids += enc._encode_single_piece(part.encode("utf-8", "surrogateescape"))
        else:
            ids += enc.encode_ordinary(part)
        i = j
    return ids


def corpus(d):
    os.makedirs(d, exist_ok=True)
    rnd = random.Random(14)
    cases = {}
    cases["gpl3"] = open("/usr/share/common-licenses/GPL-3", "rb").read()
    scripts = ("English: The quick brown fox jumps over the lazy dog.\n"
               "Deutsch: Größenwahn, Straße, Äpfel über Öfen.\n"
               "Русский: Съешь же ещё этих мягких французских булок.\n"
               "Ελληνικά: Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.\n"
               "中文: 我能吞下玻璃而不伤身体。日本語: いろはにほへと ちりぬるを。한국어: 다람쥐 헌 쳇바퀴에 타고파\n"
               "العربية: نص حكيم له سر قاطع وذو شأن عظيم. עברית: דג סקרן שט בים מאוכזב\n"
               "हिन्दी: ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश। ไทย: เป็นมนุษย์สุดประเสริฐเลิศคุณค่า\n"
               "Tiếng Việt: Tôi có thể ăn thủy tinh mà không hại gì. ქართული ენა. Հայերեն. ᚠᛇᚻ᛫ᛒᛦᚦ\n"
               "Math: ∀x∈ℝ, x²≥0; ∑ᵢ aᵢ = ½ ⅔ ① Ⅻ ٣٤٥ ۱۲ १२३ 𝟘𝟙 𝔸𝔹\n")
    cases["scripts"] = (scripts * 3).encode()
    cases["whitespace"] = ("a  b   c\t\td\n\n\ne \n \n  \r\n\r\n\u00a0\u2003x\u3000y\u2028z\u0085w"
                           "   \n\n   \t" + " " * 300 + "end\n" + "\n" * 200 + "\t" * 50 + "  ").encode()
    cases["digits"] = ("1 12 123 1234 12345 3.14159 -42 1e10 0x1F 2024-11-23 "
                       "١٢٣ ١٢٣٤ 000000000000 " + "9" * 500 + " ①②③ ½").encode()
    cases["contractions"] = ("I'm you're he's she'd we'll they've don't can't won't I'M YOU'RE "
                             "HE'S it''s 'tis o'clock rock'n'roll 's 't 're 've 'm 'll 'd ''s "
                             "’s ’re 'S 'T 'Ll").encode()
    cases["emoji"] = ("👍 👍🏽 👨‍👩‍👧‍👦 🇩🇪🇫🇷 ❤️ ☺︎ 🙂🙃 🤖🚀✨ e\u0301 n\u0303 "
                      "\U0001F600\U0001F64F text🙂text 🙂123").encode()
    cases["code"] = (b"def f(x):\n    return x**2  # square\n\nint main(void) {\n\tprintf(\"%d\\n\", 42);\n}\n"
                     b"<|endoftext|> <|endoftext|>x {\"a\": [1, 2.5, null]} http://example.com/a?b=c&d=e\n")
    cases["long_runs"] = ("a" * 5000 + " " + "ab" * 3000 + " " + "\u00e9" * 2000 + " " + "!" * 3000
                          + " " + "\n" * 1000 + "x" + " " * 4000 + "y").encode()
    cases["control"] = bytes(range(0, 128)) * 3
    cases["invalid_utf8"] = (b"ok \xff\xfe bad \xc3 trunc \xe2\x82 trunc2 \xe2\x82\xac euro "
                             b"\xed\xa0\x80 surrogate \xf4\x90\x80\x80 above \xc0\xaf overlong "
                             b"\x80\x80 cont \xf0\x9f\x98 emoji-trunc \xf0\x9f\x98\x80 ok "
                             b" \xff\n\xff \xffword word\xff 12\xff34 's\xff 'm \xff\xff\xff\xff")
    cases["random_bytes"] = bytes(rnd.randrange(256) for _ in range(20000))
    alphabet = (list("abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789 .,;:!?'\"()-\n\t") +
                list("éüßøçñ中文日本語한국어абвгдαβγ👍🙂€£¥ \u00a0\u2003\u3000\u0301"))
    cases["random_text"] = "".join(rnd.choice(alphabet) for _ in range(50000)).encode()
    mix = bytearray()
    for _ in range(3000):
        k = rnd.randrange(4)
        if k == 0: mix += rnd.choice(alphabet).encode()
        elif k == 1: mix += bytes([rnd.randrange(0x80, 0x100)])
        elif k == 2: mix += b" "
        else: mix += rnd.choice([b"\n", b"'s", b"12", b"ab"])
    cases["random_mixed"] = bytes(mix)
    sweep = []
    for c in range(0x110000):  # every code point: letter, number and space classes
        if not 0xD800 <= c <= 0xDFFF:
            ch = chr(c)
            sweep.append(f"a{ch}b {ch}{ch}1 {ch}\n")
    cases["unicode_sweep"] = "".join(sweep).encode()
    for name, data in cases.items():
        with open(os.path.join(d, name + ".txt"), "wb") as f:
            f.write(data)
    print(" ".join(sorted(cases)))


def check(vocab, tokens, mode, files):
    import numpy as np
    enc = encoding(vocab)
    got = np.fromfile(tokens, dtype=np.uint16, offset=1024).tolist()
    want = []
    for f in files:
        want += [EOT] + reference(enc, open(f, "rb").read(), mode)
    if got == want:
        print(f"same {len(got)} ids as tiktoken ({mode}): {' '.join(os.path.basename(f) for f in files)}")
        return 0
    n = min(len(got), len(want))
    i = next((k for k in range(n) if got[k] != want[k]), n)
    print(f"DIFFERENT from tiktoken ({mode}): {len(got)} ids vs {len(want)}; first difference at id {i}")
    print("  zerotrain:", got[max(0, i - 5):i + 8])
    print("  tiktoken: ", want[max(0, i - 5):i + 8])
    print("  tiktoken text around it:", repr(enc.decode_bytes(want[max(0, i - 5):i + 8])))
    return 1


def bench(vocab, path, threads):
    enc = encoding(vocab)
    text = open(path, "rb").read().decode("utf-8")
    enc.encode_ordinary(text[:10000])  # warm
    t = time.perf_counter()
    if threads == 1:
        n = len(enc.encode_ordinary(text))
    else:  # tiktoken's own parallel API: a batch of documents on a thread pool
        k = max(1, len(text) // (64 * threads))
        parts = [text[i:i + k] for i in range(0, len(text), k)]
        n = sum(len(x) for x in enc.encode_ordinary_batch(parts, num_threads=threads))
    dt = time.perf_counter() - t
    mb = len(text.encode()) / 1e6
    print(f"tiktoken threads={threads}: {mb:.1f} MB, {n} tokens, {dt:.2f} s, {mb / dt:.1f} MB/s")


def long_pieces(d, mib, only=None):
    os.makedirs(d, exist_ok=True)
    import numpy as np
    n = mib << 20
    rnd = np.random.default_rng(27)
    pick = lambda alphabet: rnd.choice(np.frombuffer(alphabet, np.uint8), n).tobytes()
    cases = {  # made on demand: a 100 MiB run is 100 MiB of memory
        "run_a": lambda: b"a" * n,
        "run_ab": lambda: b"ab" * (n // 2),
        "run_abc": lambda: b"abc" * (n // 3),
        "run_digits": lambda: b"1234567890" * (n // 10),
        "run_spaces": lambda: b" " * n,
        "run_e_acute": lambda: "\u00e9".encode() * (n // 2),
        "run_acgt": lambda: pick(b"ACGT"),
        "run_lower": lambda: pick(b"abcdefghijklmnopqrstuvwxyz"),
        "run_rand_digits": lambda: pick(b"0123456789"),
        "run_base64": lambda: pick(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
        "run_invalid": lambda: b"\xff" * (n // 4),
    }
    names = sorted(only or cases)
    for name in names:
        with open(os.path.join(d, name + ".txt"), "wb") as f:
            f.write(cases[name]())
    print(" ".join(names))


def measure(as_kb, cmd):
    import resource, subprocess
    def limit():
        if as_kb > 0:
            resource.setrlimit(resource.RLIMIT_AS, (as_kb << 10, as_kb << 10))
    p = subprocess.Popen(cmd, preexec_fn=limit)
    vm = 0
    while p.poll() is None:
        try:
            for line in open(f"/proc/{p.pid}/status"):
                if line.startswith("VmPeak:"):
                    vm = max(vm, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.002)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    print(p.returncode, rss, vm)


def uniform(vocab, tokens, small):
    import numpy as np
    enc = encoding(vocab)
    want = enc.encode_ordinary(open(small, "rb").read().decode())
    got = np.fromfile(tokens, dtype=np.uint16, offset=1024)
    if len(set(want)) != 1:
        print(f"tiktoken's ids for {small} are not one id repeated: {want[:8]}")
        return 1
    if got[0] != EOT or not (got[1:] == want[0]).all():
        print(f"DIFFERENT: {tokens} is not <|endoftext|> then {want[0]} repeated: {got[:8]}")
        return 1
    print(f"same ids as tiktoken's pattern: {len(got) - 1} times {want[0]}")
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "corpus": corpus(sys.argv[2])
    elif cmd == "check": sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]))
    elif cmd == "bench": bench(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "long": long_pieces(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    elif cmd == "measure": measure(int(sys.argv[2]), sys.argv[3:])
    elif cmd == "uniform": sys.exit(uniform(sys.argv[2], sys.argv[3], sys.argv[4]))
