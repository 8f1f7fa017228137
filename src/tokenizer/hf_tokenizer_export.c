// GPT-2's tokenizer as Hugging Face files, derived from the tiktoken vocabulary (gpt2.tiktoken)
// that zt_bpe_load loads, so an exported GPT-2-vocabulary model loads with AutoTokenizer offline:
//
//   vocab.json               token string -> id, every rank plus "<|endoftext|>": 50256
//   merges.txt               "#version: 0.2", then one merge "left right" per line, rank order
//   special_tokens_map.json  bos, eos and unk: <|endoftext|>
//   tokenizer_config.json    GPT2Tokenizer, model_max_length n_ctx, no cleanup of spaces on
//                            decode (so decode(encode(x)) == x), and the export's mark
//
// Token strings are the token's bytes in GPT-2's byte-to-unicode alphabet (each byte one
// printable code point). tiktoken keeps ranks, not merges: the merge that made rank r is found
// by byte-pair merging its bytes with only ranks below r allowed (zt_bpe_merge_of), which ends
// in the two parts that rank r joins. Every one of GPT-2's 50000 merges derives this way.
#include "hf_tokenizer_export.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bpe.h"

const char *const zt_hf_tokenizer_files[ZT_HF_TOKENIZER_NFILES] = {
    "vocab.json", "merges.txt", "special_tokens_map.json", "tokenizer_config.json"};

// The mark: transformers ignores an unknown key in tokenizer_config.json, and it tells the
// next export that these files are the export's own to replace (a user's stay).
#define MARK "zerotrain_export"
#define EOT_TEXT "<|endoftext|>"

int zt_hf_tokenizer_file(const char *name) {
    for (int i = 0; i < ZT_HF_TOKENIZER_NFILES; i++)
        if (strcmp(name, zt_hf_tokenizer_files[i]) == 0) return 1;
    return 0;
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes
// (controls, space, DEL, NBSP, soft hyphen) become U+0100.. in byte order.
static void byte_alphabet(unsigned cp[256]) {
    unsigned n = 0;
    for (unsigned b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        cp[b] = printable ? b : 256 + n++;
    }
}

// A token's bytes as its string in the alphabet, UTF-8; JSON-escaped where json is set (only
// '"' and '\\' need it: every other code point of the alphabet is printable).
static void put_token(FILE *f, const unsigned cp[256], const unsigned char *p, size_t n,
                      int json) {
    for (size_t i = 0; i < n; i++) {
        unsigned c = cp[p[i]];
        if (json && (c == '"' || c == '\\')) fputc('\\', f);
        if (c < 0x80) {
            fputc((int)c, f);
        } else {  // below U+0800: two bytes
            fputc((int)(0xc0 | c >> 6), f);
            fputc((int)(0x80 | (c & 0x3f)), f);
        }
    }
}

// One file through a temporary name: written, flushed, fsynced, renamed over.
typedef struct {
    FILE *f;
    char tmp[4500], path[4400];
} out_file;

static zt_status out_open(out_file *o, const char *dir, const char *name) {
    snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%d", o->path, (int)getpid());
    o->f = fopen(o->tmp, "w");
    if (!o->f) return zt_errorf("cannot write %s: %s", o->tmp, strerror(errno));
    return ZT_OK;
}

static zt_status out_commit(out_file *o) {
    int ok = !ferror(o->f) && fflush(o->f) == 0 && fsync(fileno(o->f)) == 0;
    int err = ok ? 0 : errno;
    ok = fclose(o->f) == 0 && ok;
    if (!err && !ok) err = errno;
    if (ok && rename(o->tmp, o->path) != 0) {
        ok = 0;
        err = errno;
    }
    if (ok) return ZT_OK;
    unlink(o->tmp);
    return zt_errorf("writing %s failed: %s", o->path, strerror(err ? err : EIO));
}

static zt_status write_vocab(const zt_bpe *bpe, const unsigned cp[256], const char *dir) {
    out_file o;
    ZT_TRY(out_open(&o, dir, "vocab.json"));
    int eot = zt_bpe_eot(bpe);
    fputc('{', o.f);
    for (int id = 0; id < eot; id++) {
        size_t n;
        const unsigned char *p = zt_bpe_token_bytes(bpe, id, &n);
        fputs(id ? ",\n\"" : "\n\"", o.f);
        put_token(o.f, cp, p, n, 1);
        fprintf(o.f, "\": %d", id);
    }
    // the special token is its text itself, not bytes in the alphabet
    fprintf(o.f, ",\n\"" EOT_TEXT "\": %d\n}\n", eot);
    return out_commit(&o);
}

static zt_status write_merges(const zt_bpe *bpe, const unsigned cp[256], const char *vocab_path,
                              const char *dir) {
    out_file o;
    ZT_TRY(out_open(&o, dir, "merges.txt"));
    fputs("#version: 0.2\n", o.f);
    for (int id = 0; id < zt_bpe_eot(bpe); id++) {
        size_t n;
        zt_bpe_token_bytes(bpe, id, &n);
        if (n < 2) continue;  // a single byte is in the alphabet, not made by a merge
        int32_t a, b;
        if (!zt_bpe_merge_of(bpe, id, &a, &b)) {
            fclose(o.f);
            unlink(o.tmp);
            return zt_errorf("vocabulary %s: token %d is not the merge of two lower ranks, so it "
                             "has no merges.txt line; is it GPT-2's gpt2.tiktoken?",
                             vocab_path, id);
        }
        const unsigned char *p = zt_bpe_token_bytes(bpe, a, &n);
        put_token(o.f, cp, p, n, 0);
        fputc(' ', o.f);
        p = zt_bpe_token_bytes(bpe, b, &n);
        put_token(o.f, cp, p, n, 0);
        fputc('\n', o.f);
    }
    return out_commit(&o);
}

static zt_status write_special(const char *dir) {
    out_file o;
    ZT_TRY(out_open(&o, dir, "special_tokens_map.json"));
    fputs("{\n  \"bos_token\": \"" EOT_TEXT "\",\n  \"eos_token\": \"" EOT_TEXT "\",\n"
          "  \"unk_token\": \"" EOT_TEXT "\"\n}\n", o.f);
    return out_commit(&o);
}

// clean_up_tokenization_spaces false: transformers' cleanup would turn " ." into "." on decode
// (GPT-2's own files leave it on), breaking decode(encode(x)) == x.
static zt_status write_config(int n_ctx, const char *dir) {
    out_file o;
    ZT_TRY(out_open(&o, dir, "tokenizer_config.json"));
    fprintf(o.f,
            "{\n  \"tokenizer_class\": \"GPT2Tokenizer\",\n  \"model_max_length\": %d,\n"
            "  \"bos_token\": \"" EOT_TEXT "\",\n  \"eos_token\": \"" EOT_TEXT "\",\n"
            "  \"unk_token\": \"" EOT_TEXT "\",\n  \"add_prefix_space\": false,\n"
            "  \"add_bos_token\": false,\n  \"errors\": \"replace\",\n"
            "  \"clean_up_tokenization_spaces\": false,\n  \"" MARK "\": true\n}\n",
            n_ctx);
    return out_commit(&o);
}

zt_status zt_hf_tokenizer_export(const char *vocab_path, int n_ctx, const char *dir) {
    zt_bpe *bpe = NULL;
    ZT_TRY(zt_bpe_load(&bpe, vocab_path));
    zt_status s = ZT_OK;
    if (zt_bpe_vocab_size(bpe) != ZT_GPT2_VOCAB)
        s = zt_errorf("vocabulary %s has %d ids, GPT-2's has %d: not gpt2.tiktoken "
                      "(scripts/fetch_gpt2_vocab.sh fetches it)",
                      vocab_path, zt_bpe_vocab_size(bpe), ZT_GPT2_VOCAB);
    unsigned cp[256];
    byte_alphabet(cp);
    if (s == ZT_OK) s = write_vocab(bpe, cp, dir);
    if (s == ZT_OK) s = write_merges(bpe, cp, vocab_path, dir);
    if (s == ZT_OK) s = write_special(dir);
    if (s == ZT_OK) s = write_config(n_ctx, dir);
    zt_bpe_free(bpe);
    if (s != ZT_OK) {  // none or all: a partial set would load as a broken tokenizer
        char path[4400];
        for (int i = 0; i < ZT_HF_TOKENIZER_NFILES; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, zt_hf_tokenizer_files[i]);
            unlink(path);
        }
    }
    return s;
}

int zt_hf_tokenizer_marked(const char *dir) {
    char path[4400];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    FILE *f = zt_fopen_regular(path); // not a regular file: not the export's
    if (!f) return 0;
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *root = cJSON_Parse(buf);
    int marked = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, MARK));
    cJSON_Delete(root);
    return marked;
}
