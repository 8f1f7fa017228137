// `zerotrain prepare`: text files into llm.c token files, bytes or GPT-2 BPE
// (src/formats/tokenizer_prepare.c does the work), with its options and their errors.
#include "prepare_cli.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "common.h"
#include "data.h"
#include "host_memory.h"
#include "outputs.h"
#include "tokenizer_prepare.h"

void zt_prepare_usage(FILE *f) {
    char vocab[1024];
    zt_bpe_default_vocab(vocab, sizeof vocab);
    fprintf(f,
            "usage: zerotrain prepare --text FILE [--text FILE ...] --out TRAIN.bin\n"
            "                         [--val-out VAL.bin] [--val-frac F] [--tokenizer bytes|gpt2]\n"
            "                         [--vocab FILE] [--invalid-utf8 keep|replace] [--chunk-kb N]\n"
            "       zerotrain prepare --tokenizer gpt2 --jsonl FILE [--field text] --out TRAIN.bin ...\n"
            "       zerotrain prepare --from-nanogpt train.bin --out TRAIN.bin\n"
            "\n"
            "Writes llm.c token files (uint16 tokens) from text.\n"
            "  --text FILE          input text; give it once per document (gpt2: several files are\n"
            "                       several documents; bytes: exactly one file)\n"
            "  --jsonl FILE         gpt2: a JSONL corpus, each line a JSON object whose --field\n"
            "                       string is a document (as if each were a --text file); streamed;\n"
            "                       --text and --jsonl may be mixed, read in the order given\n"
            "  --field NAME         the JSONL field holding the text (default text)\n"
            "  --from-nanogpt FILE  converts nanoGPT's headerless train.bin/val.bin (uint16 tokens)\n"
            "                       into --out, adding the header (the tokens are kept as they are)\n"
            "  --out FILE           training token file\n"
            "  --val-out FILE       validation token file: the last --val-frac of the tokens\n"
            "  --val-frac F         fraction for --val-out, between 0 and 1 (default 0.1)\n"
            "  --tokenizer T        bytes (default): every byte is a token, vocabulary 256;\n"
            "                       gpt2: GPT-2's BPE (tiktoken's gpt2 ids), vocabulary 50257, each\n"
            "                       document preceded by <|endoftext|> (50256) as in llm.c's scripts\n"
            "  --vocab FILE         gpt2.tiktoken (default %s;\n"
            "                       scripts/fetch_gpt2_vocab.sh puts it there)\n"
            "  --invalid-utf8 M     gpt2, bytes that are not UTF-8: keep (default; lossless, a run\n"
            "                       of them is a piece of its own) or replace (each becomes U+FFFD,\n"
            "                       as tiktoken encodes a surrogateescape'd str)\n"
            "  --chunk-kb N         gpt2: text per parallel chunk in KiB (default 1024)\n"
            "Threads: OMP_NUM_THREADS (default: every core). Progress goes to stderr for inputs of\n"
            "32 MB or more.\n",
            vocab);
}

static int prepare_fail(const char *fmt, const char *arg) {
    fprintf(stderr, "zerotrain: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (zerotrain prepare --help lists the options)\n");
    return 1;
}

// Whether an output would overwrite an input or the other output (said once): a
// --val-out equal to --out kept only the validation tokens.
static int prepare_outputs_clash(const char *out, const char *val_out, const char **texts,
                                 int n_texts, const char *vocab) {
    const char *outs[2] = {out, val_out}, *out_flags[2] = {"--out", "--val-out"};
    char msg[ZT_PATH_MAX * 2 + 1200]; // (the default vocabulary path is up to 1024)
    for (int o = 0; o < 2; o++) {
        if (!outs[o]) continue;
        if (!outs[o][0]) return prepare_fail("%s is empty: give it a file path", out_flags[o]);
        for (int i = 0; i <= n_texts; i++) {
            const char *in = i < n_texts ? texts[i] : vocab;
            if (!in || !zt_same_path(outs[o], in)) continue;
            snprintf(msg, sizeof msg, "%s %s is the same file as %s %s: writing it would destroy "
                     "the input; give %s another path", out_flags[o], outs[o],
                     i < n_texts ? "--text" : "--vocab", in, out_flags[o]);
            return prepare_fail("%s", msg);
        }
    }
    if (val_out && zt_same_path(out, val_out))
        return prepare_fail("--out and --val-out name the same file %s: give each its own", out);
    return 0;
}

// The command's options, as given.
typedef struct {
    const char *out, *val_out, *tokenizer, *vocab, *field, *nanogpt;
    const char **texts; // (argc) the --text and --jsonl files, n_texts of them
    int *is_jsonl;      // (argc) 1 where texts[i] came from --jsonl
    int n_texts, n_jsonl, invalid;
    double val_frac;
    int val_frac_given;
    long chunk_kb;
} prepare_args;

// One option and its value `v` into *p; 0, or 1 after printing the error.
static int parse_value(prepare_args *p, const char *a, const char *v) {
    char *end;
    if (strcmp(a, "--text") == 0) p->texts[p->n_texts++] = v;
    else if (strcmp(a, "--jsonl") == 0) {
        p->is_jsonl[p->n_texts] = 1;
        p->texts[p->n_texts++] = v;
        p->n_jsonl++;
    } else if (strcmp(a, "--field") == 0) p->field = v;
    else if (strcmp(a, "--from-nanogpt") == 0) p->nanogpt = v;
    else if (strcmp(a, "--out") == 0) p->out = v;
    else if (strcmp(a, "--val-out") == 0) p->val_out = v;
    else if (strcmp(a, "--vocab") == 0) p->vocab = v;
    else if (strcmp(a, "--tokenizer") == 0) {
        if (strcmp(v, "bytes") != 0 && strcmp(v, "gpt2") != 0)
            return prepare_fail("--tokenizer %s: choose bytes or gpt2", v);
        p->tokenizer = v;
    } else if (strcmp(a, "--invalid-utf8") == 0) {
        if (strcmp(v, "keep") == 0) p->invalid = ZT_BPE_INVALID_KEEP;
        else if (strcmp(v, "replace") == 0) p->invalid = ZT_BPE_INVALID_REPLACE;
        else return prepare_fail("--invalid-utf8 %s: choose keep or replace", v);
    } else if (strcmp(a, "--chunk-kb") == 0) {
        p->chunk_kb = strtol(v, &end, 10);
        if (*end || end == v || p->chunk_kb < 1 || p->chunk_kb > (1L << 22))
            return prepare_fail("--chunk-kb %s must be a whole number of KiB from 1 to 4194304", v);
    } else if (strcmp(a, "--val-frac") == 0) {
        p->val_frac = strtod(v, &end);
        p->val_frac_given = 1;
        if (*end || end == v || !(p->val_frac > 0.0 && p->val_frac < 1.0))
            return prepare_fail("--val-frac %s must be a number between 0 and 1 (exclusive)", v);
    }
    return 0;
}

// The command line into *p, and the checks between options; 0, or 1 after printing the error.
static int parse_args(prepare_args *p, int argc, char **argv) {
    static const char *const known[] = {"--text",      "--out",   "--val-out",      "--val-frac",
                                        "--tokenizer", "--vocab", "--invalid-utf8", "--chunk-kb",
                                        "--jsonl",     "--field", "--from-nanogpt"};
    for (int i = 0; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) ok |= strcmp(a, known[k]) == 0;
        if (!ok) return prepare_fail("unknown option %s", a);
        if (!v) return prepare_fail("%s needs a value", a);
        if (parse_value(p, a, v)) return 1;
    }
    if (p->nanogpt && (p->n_texts || p->val_out))
        return prepare_fail("%s", "--from-nanogpt converts one file to --out alone: drop --text, "
                                  "--jsonl and --val-out (nanoGPT's val.bin converts the same way)");
    if (p->nanogpt && p->out) return 0;
    if (p->n_texts == 0 || !p->out)
        return prepare_fail("%s", "--text FILE (or --jsonl FILE) and --out FILE are required");
    if (p->field && !p->n_jsonl) return prepare_fail("%s", "--field names a JSONL field: give --jsonl FILE");
    if (p->n_jsonl && strcmp(p->tokenizer, "bytes") == 0)
        return prepare_fail("%s", "--jsonl holds many documents, which --tokenizer bytes cannot "
                                  "separate (it has no end-of-text token): add --tokenizer gpt2");
    char def_vocab[1024]; // (gpt2 without --vocab reads the default vocabulary: an input too)
    zt_bpe_default_vocab(def_vocab, sizeof def_vocab);
    const char *vocab = p->vocab || strcmp(p->tokenizer, "gpt2") ? p->vocab : def_vocab;
    if (prepare_outputs_clash(p->out, p->val_out, p->texts, p->n_texts, vocab)) return 1;
    if (p->val_frac_given && !p->val_out)
        return prepare_fail("%s", "--val-frac needs --val-out FILE (where the validation tokens "
                                  "go)");
    if (strcmp(p->tokenizer, "bytes") == 0 && p->n_texts != 1)
        return prepare_fail("%s", "--tokenizer bytes takes exactly one --text (use --tokenizer "
                                  "gpt2 for several documents)");
    return 0;
}

// --tokenizer bytes: one text file, a token per byte.
static int prepare_bytes(const prepare_args *p) {
    if (zt_prepare_text(p->texts[0], p->out, p->val_out, p->val_frac) != ZT_OK) {
        zt_error_report(1);
        return 1;
    }
    printf("wrote %s%s%s\n", p->out, p->val_out ? " and " : "", p->val_out ? p->val_out : "");
    return 0;
}

// --tokenizer gpt2: every text a document, on every thread.
static int prepare_gpt2(const prepare_args *p) {
    char default_vocab[1024];
    zt_bpe_default_vocab(default_vocab, sizeof default_vocab);
    zt_prepare_gpt2_opts o = {
        .texts = p->texts, .n_texts = p->n_texts, .is_jsonl = p->is_jsonl,
        .json_field = p->field ? p->field : "text", .vocab = p->vocab ? p->vocab : default_vocab,
        .out = p->out, .val_out = p->val_out, .val_frac = p->val_frac, .invalid = p->invalid,
        .chunk_bytes = (size_t)p->chunk_kb << 10, .progress = -1,
        .as_limit = zt_host_rank_limit_bytes(), .mem_room = zt_host_available_bytes(),
    };
    zt_prepare_stats st;
    if (zt_prepare_gpt2(&o, &st) != ZT_OK) {
        zt_error_report(1);
        return 1;
    }
    printf("wrote %s (%zu tokens)", p->out, st.tokens - st.val_tokens);
    if (p->val_out && p->val_out[0]) printf(" and %s (%zu tokens)", p->val_out, st.val_tokens);
    printf(": %zu documents, %.1f MB of text in %.2f s (%.1f MB/s, %d threads)\n", st.documents,
           (double)st.bytes / 1e6, st.seconds,
           st.seconds > 0 ? (double)st.bytes / 1e6 / st.seconds : 0.0, st.threads);
    return 0;
}

// --from-nanogpt: a headerless uint16 token file into the llm.c format.
static int prepare_nanogpt(const prepare_args *p) {
    if (zt_same_path(p->nanogpt, p->out))
        return prepare_fail("--out %s is the --from-nanogpt file: give --out another path", p->out);
    if (zt_prepare_nanogpt(p->nanogpt, p->out) != ZT_OK) {
        zt_error_report(1);
        return 1;
    }
    printf("wrote %s (the tokens of %s with llm.c's header)\n", p->out, p->nanogpt);
    return 0;
}

int zt_prepare_main(int argc, char **argv) {
    prepare_args p = {.tokenizer = "bytes", .texts = calloc((size_t)argc + 1, sizeof(char *)),
                      .is_jsonl = calloc((size_t)argc + 1, sizeof(int)),
                      .invalid = ZT_BPE_INVALID_KEEP, .val_frac = 0.1};
    ZT_ASSERT(p.texts && p.is_jsonl);
    int rc = parse_args(&p, argc, argv);
    if (rc == 0 && p.nanogpt) rc = prepare_nanogpt(&p);
    else if (rc == 0) rc = strcmp(p.tokenizer, "bytes") == 0 ? prepare_bytes(&p) : prepare_gpt2(&p);
    free(p.texts);
    free(p.is_jsonl);
    return rc;
}
