// `zerotrain prepare`: text files into llm.c token files, bytes or GPT-2 BPE
// (src/formats/tokenizer_prepare.c does the work), with its options and their errors.
#include "prepare_cli.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "common.h"
#include "data.h"
#include "outputs.h"
#include "tokenizer_prepare.h"

void zt_prepare_usage(FILE *f) {
    char vocab[1024];
    zt_bpe_default_vocab(vocab, sizeof vocab);
    fprintf(f,
            "usage: zerotrain prepare --text FILE [--text FILE ...] --out TRAIN.bin\n"
            "                         [--val-out VAL.bin] [--val-frac F] [--tokenizer bytes|gpt2]\n"
            "                         [--vocab FILE] [--invalid-utf8 keep|replace] [--chunk-kb N]\n"
            "\n"
            "Writes llm.c token files (uint16 tokens) from text.\n"
            "  --text FILE          input text; give it once per document (gpt2: several files are\n"
            "                       several documents; bytes: exactly one file)\n"
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
    fprintf(stderr, "zerotrain prepare: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (zerotrain prepare --help lists the options)\n");
    return 1;
}

// Whether an output would overwrite an input or the other output (said once): a
// --val-out equal to --out kept only the validation tokens.
static int prepare_outputs_clash(const char *out, const char *val_out, const char **texts,
                                 int n_texts, const char *vocab) {
    const char *outs[2] = {out, val_out}, *out_flags[2] = {"--out", "--val-out"};
    char msg[ZT_PATH_MAX * 2 + 64];
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

int zt_prepare_main(int argc, char **argv) {
    const char *out = NULL, *val_out = NULL, *tokenizer = "bytes", *vocab = NULL;
    const char **texts = calloc((size_t)argc + 1, sizeof *texts);
    ZT_ASSERT(texts);
    int n_texts = 0, invalid = ZT_BPE_INVALID_KEEP, rc = 1;
    double val_frac = 0.1;
    int val_frac_given = 0;
    long chunk_kb = 0;
    static const char *const known[] = {"--text",      "--out",   "--val-out",      "--val-frac",
                                        "--tokenizer", "--vocab", "--invalid-utf8", "--chunk-kb"};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) ok |= strcmp(a, known[k]) == 0;
        if (!ok) {
            prepare_fail("unknown option %s", a);
            goto done;
        }
        if (!v) {
            prepare_fail("%s needs a value", a);
            goto done;
        }
        if (strcmp(a, "--text") == 0) texts[n_texts++] = v;
        else if (strcmp(a, "--out") == 0) out = v;
        else if (strcmp(a, "--val-out") == 0) val_out = v;
        else if (strcmp(a, "--vocab") == 0) vocab = v;
        else if (strcmp(a, "--tokenizer") == 0) {
            if (strcmp(v, "bytes") != 0 && strcmp(v, "gpt2") != 0) {
                prepare_fail("--tokenizer %s: choose bytes or gpt2", v);
                goto done;
            }
            tokenizer = v;
        } else if (strcmp(a, "--invalid-utf8") == 0) {
            if (strcmp(v, "keep") == 0) invalid = ZT_BPE_INVALID_KEEP;
            else if (strcmp(v, "replace") == 0) invalid = ZT_BPE_INVALID_REPLACE;
            else {
                prepare_fail("--invalid-utf8 %s: choose keep or replace", v);
                goto done;
            }
        } else if (strcmp(a, "--chunk-kb") == 0) {
            char *end;
            chunk_kb = strtol(v, &end, 10);
            if (*end || end == v || chunk_kb < 1 || chunk_kb > (1L << 22)) {
                prepare_fail("--chunk-kb %s must be a whole number of KiB from 1 to 4194304", v);
                goto done;
            }
        } else if (strcmp(a, "--val-frac") == 0) {
            char *end;
            val_frac = strtod(v, &end);
            val_frac_given = 1;
            if (*end || end == v || !(val_frac > 0.0 && val_frac < 1.0)) {
                prepare_fail("--val-frac %s must be a number between 0 and 1 (exclusive)", v);
                goto done;
            }
        }
        i++;
    }
    if (n_texts == 0 || !out) {
        prepare_fail("%s", "--text FILE and --out FILE are required");
        goto done;
    }
    if (prepare_outputs_clash(out, val_out, texts, n_texts, vocab)) goto done;
    if (val_frac_given && !val_out) {
        prepare_fail("%s", "--val-frac needs --val-out FILE (where the validation tokens go)");
        goto done;
    }
    if (strcmp(tokenizer, "bytes") == 0) {
        if (n_texts != 1) {
            prepare_fail("%s", "--tokenizer bytes takes exactly one --text (use --tokenizer gpt2 "
                               "for several documents)");
            goto done;
        }
        if (zt_prepare_text(texts[0], out, val_out, val_frac) != ZT_OK) {
            zt_error_report(1);
            goto done;
        }
        printf("wrote %s%s%s\n", out, val_out ? " and " : "", val_out ? val_out : "");
        rc = 0;
        goto done;
    }
    char default_vocab[1024];
    zt_bpe_default_vocab(default_vocab, sizeof default_vocab);
    zt_prepare_gpt2_opts o = {
        .texts = texts, .n_texts = n_texts, .vocab = vocab ? vocab : default_vocab, .out = out,
        .val_out = val_out, .val_frac = val_frac, .invalid = invalid,
        .chunk_bytes = (size_t)chunk_kb << 10, .progress = -1,
    };
    zt_prepare_stats st;
    if (zt_prepare_gpt2(&o, &st) != ZT_OK) {
        zt_error_report(1);
        goto done;
    }
    printf("wrote %s (%zu tokens)", out, st.tokens - st.val_tokens);
    if (val_out && val_out[0]) printf(" and %s (%zu tokens)", val_out, st.val_tokens);
    printf(": %d documents, %.1f MB of text in %.2f s (%.1f MB/s, %d threads)\n", n_texts,
           (double)st.bytes / 1e6, st.seconds,
           st.seconds > 0 ? (double)st.bytes / 1e6 / st.seconds : 0.0, st.threads);
    rc = 0;
done:
    free(texts);
    return rc;
}
