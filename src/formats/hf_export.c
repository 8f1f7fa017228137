// Hugging Face GPT-2 directory: model.safetensors + config.json, and GPT-2's tokenizer files
// when the vocabulary is GPT-2's (src/tokenizer/hf_tokenizer_export.c).
#include "hf_export.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bf16_math.h"
#include "bpe.h"
#include "hf_tokenizer_export.h"
#include "safetensors.h"
#include "tmp_names.h"

static zt_status export_files(const zt_model_shape *shape, const zt_layout *lays,
                              const float *const *params, int n_parts, zt_dtype dtype,
                              const char *dir);
static zt_status write_config(const zt_model_shape *sh, zt_dtype dtype, const char *path);

// fsync of a directory, so the renames in it are on disk.
static void sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

// A file the previous export wrote: model.safetensors, config.json, and the tokenizer files
// when its tokenizer_config.json carries the export's mark (tok_ours).
static int export_own(const char *name, int tok_ours) {
    return strcmp(name, "model.safetensors") == 0 || strcmp(name, "config.json") == 0 ||
           (tok_ours && zt_hf_tokenizer_file(name));
}

// After `dir` and the fresh export `old` (the previous directory) traded places: the
// entries that are not an export's own (a user's notes, a user's tokenizer files) move back
// into `dir` unless the new export has the name, the old export's files go (its tokenizer
// files too where the new export has none: a byte-level model after a GPT-2 one), and so
// does `old`.
static void retire_old(const char *old, const char *dir) {
    // never through a link: a --save that was a link to a checkpoint directory moved the
    // checkpoints into the export (O_NOFOLLOW: a link swapped in stays, said below)
    int fd = open(old, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        fprintf(stderr, "zerotrain: warning: what stood at %s before this export is kept as %s "
                        "(not a directory of its own: %s)\n", dir, old, strerror(errno));
        return;
    }
    int tok_ours = zt_hf_tokenizer_marked(old);
    struct dirent *e;
    char from[4700], to[4700];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(from, sizeof from, "%s/%s", old, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
        if (export_own(e->d_name, tok_ours) || access(to, F_OK) == 0)
            unlink(from);
        else
            rename(from, to);
    }
    closedir(d);
    if (rmdir(old) != 0)
        fprintf(stderr, "zerotrain: warning: the previous export was kept in %s (%s)\n", old,
                strerror(errno));
}

// GPT-2's tokenizer files into the export `tmp` (to become `dir`). Never fails the save: a
// model at the end of a long run matters more than its tokenizer files, which the next export
// can add. Without them one warning says why and how to get them.
static void export_tokenizer(const zt_model_shape *shape, const char *tmp, const char *dir) {
    char vocab[4096];
    zt_bpe_default_vocab(vocab, sizeof vocab);
    if (access(vocab, F_OK) != 0)
        fprintf(stderr, "zerotrain: warning: no tokenizer files (vocab.json, merges.txt, ...) "
                        "in %s: the GPT-2 vocabulary %s is missing (%s); "
                        "`bash scripts/fetch_gpt2_vocab.sh` fetches it to there, and the next "
                        "--save or `zerotrain export` writes them\n",
                dir, vocab, strerror(errno));
    else if (zt_hf_tokenizer_export(vocab, shape->n_ctx, tmp) != ZT_OK)
        fprintf(stderr, "zerotrain: warning: no tokenizer files in %s: %s\n", dir,
                zt_error_message());
}

// Whether an entry of an export's temporary directory is an export's own: its files, and
// their writers' temporary names ("model.safetensors.tmp.<pid>").
static int export_own_entry(const char *name, int tok_ours) {
    if (export_own(name, tok_ours)) return 1;
    const char *t = strstr(name, ".tmp.");
    if (!t || !t[5] || strspn(t + 5, "0123456789") != strlen(t + 5)) return 0;
    char own[256];
    snprintf(own, sizeof own, "%.*s", (int)(t - name), name);
    return export_own(own, tok_ours);
}

// Empties an export's temporary directory of the export's own files and removes it. 0 when
// something else is in it (a user's notes of an older export swapped out, not yet moved
// back): that stays, and *kept names it.
static int clear_export_tmp(const char *tmp, char *kept, size_t size) {
    DIR *d = opendir(tmp);
    if (!d) return rmdir(tmp) == 0;
    int tok_ours = zt_hf_tokenizer_marked(tmp);
    struct dirent *e;
    char p[4700];
    kept[0] = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(p, sizeof p, "%s/%s", tmp, e->d_name);
        if (!export_own_entry(e->d_name, tok_ours) || unlink(p) != 0)
            snprintf(kept, size, "%s", e->d_name);
    }
    closedir(d);
    return rmdir(tmp) == 0;
}

// One dead export's temporary directory (zt_tmp_each_dead): removed, and said.
static void remove_dead_export(const char *p, long pid, void *dir) {
    char kept[256];
    if (clear_export_tmp(p, kept, sizeof kept))
        printf("zerotrain: removed %s, the temporary directory of an export of %s that did "
               "not finish (pid %ld on this host, no longer running)\n", p, (const char *)dir,
               pid);
    else
        fprintf(stderr, "zerotrain: warning: %s, the temporary directory of an export of %s "
                        "that did not finish (pid %ld), is kept: it holds %s, which an export "
                        "does not write; move it away or remove it\n", p, (const char *)dir, pid,
                kept[0] ? kept : "entries it could not remove");
}

// What an export killed before its rename leaves (a kill -9, a crash, a full disk): its
// temporary directory, up to a whole model's size, which no later export removed. Each one
// whose process died on this host is removed here, and said.
static void remove_dead_exports(const char *dir) {
    zt_tmp_each_dead(dir, remove_dead_export, (void *)dir);
    fflush(stdout);
}

zt_status zt_hf_export_check_dir(const char *dir) {
    struct stat st;
    if (!dir[0]) return zt_errorf("the export directory is empty: give it a path");
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return zt_errorf("%s exists and is not a directory: an export is a directory "
                         "(model.safetensors, config.json); give a new path or a directory", dir);
    if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
        return zt_errorf("%s is a symbolic link: an export replaces its directory as a whole, "
                         "and through a link it moved the linked directory's content; give the "
                         "directory's own path", dir);
    char tmp[4500];
    return zt_tmp_name(tmp, sizeof tmp, dir);
}

// The export is written into a fresh sibling directory, synced, then put in place: renamed
// to `dir`, or, where `dir` holds an older export, swapped with it in one rename
// (RENAME_EXCHANGE), so a reader sees the old export or the new one, never a mix.
zt_status zt_hf_export(const zt_model_shape *shape, const zt_layout *lays,
                       const float *const *params, int n_parts, zt_dtype dtype,
                       const char *dir) {
    ZT_ASSERTF(dtype == ZT_F32 || dtype == ZT_BF16, "zt_hf_export: dtype %s",
               zt_dtype_name(dtype));
    ZT_TRY(zt_hf_export_check_dir(dir));
    remove_dead_exports(dir);
    char tmp[4500], kept[256];
    ZT_TRY(zt_tmp_name(tmp, sizeof tmp, dir));
    if (mkdir(tmp, 0755) != 0)
        return zt_errorf("cannot create directory %s: %s", tmp, strerror(errno));
    zt_status s = export_files(shape, lays, params, n_parts, dtype, tmp);
    if (s != ZT_OK) {
        clear_export_tmp(tmp, kept, sizeof kept); // a file written before a full disk, say
        return s;
    }
    if (shape->vocab == ZT_GPT2_VOCAB) export_tokenizer(shape, tmp, dir);
    sync_dir(tmp);
    struct stat st;
    // (a second export may create `dir` between the stat and the rename: then the rename
    // fails, and this export swaps that one out as an older export)
    int placed = lstat(dir, &st) != 0 && rename(tmp, dir) == 0;
    if (placed) {
    } else if (lstat(dir, &st) != 0) {
        s = zt_errorf("cannot rename %s to %s: %s", tmp, dir, strerror(errno));
    } else if (S_ISLNK(st.st_mode)) {
        s = zt_errorf("%s became a symbolic link during the export: an export replaces a "
                      "directory of its own; give the directory's own path", dir);
    } else if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        retire_old(tmp, dir);
    } else { // a file system without the exchange: the files one by one, each atomic
        // the old export's tokenizer files go where the new export has none
        int old_tok = zt_hf_tokenizer_marked(dir);
        const char *files[2 + ZT_HF_TOKENIZER_NFILES] = {"model.safetensors", "config.json"};
        for (int i = 0; i < ZT_HF_TOKENIZER_NFILES; i++) files[2 + i] = zt_hf_tokenizer_files[i];
        char from[4700], to[4700];
        for (int i = 0; i < 2 + ZT_HF_TOKENIZER_NFILES && s == ZT_OK; i++) {
            snprintf(from, sizeof from, "%s/%s", tmp, files[i]);
            snprintf(to, sizeof to, "%s/%s", dir, files[i]);
            if (i >= 2 && access(from, F_OK) != 0) {
                if (old_tok) unlink(to);
                continue;
            }
            if (rename(from, to) != 0)
                s = zt_errorf("cannot move %s to %s: %s", from, to, strerror(errno));
        }
        retire_old(tmp, dir);
    }
    if (s != ZT_OK) clear_export_tmp(tmp, kept, sizeof kept); // a racing export's loser
    if (s == ZT_OK) {
        char parent[4200];
        snprintf(parent, sizeof parent, "%s", dir);
        sync_dir(dirname(parent));
    }
    return s;
}

// config.json as model.safetensors is written: a temp file, fsynced, renamed over.
// bos and eos: <|endoftext|> (50256) for GPT-2's vocabulary; null for any other (a byte-level
// model has no end-of-text token), which transformers keeps as None, where a missing key
// would make GPT2Config default to 50256, outside a 256-id vocabulary. torch_dtype names the
// tensors' type: transformers loads in it under from_pretrained(torch_dtype="auto").
static zt_status write_config(const zt_model_shape *sh, zt_dtype dtype, const char *path) {
    char eot[16] = "null";
    if (sh->vocab == ZT_GPT2_VOCAB) snprintf(eot, sizeof eot, "%d", ZT_BPE_GPT2_EOT);
    char tmp[4800];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return zt_errorf("cannot write %s: %s", tmp, strerror(errno));
    int ok = fprintf(f,
            "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
            "  \"vocab_size\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"n_embd\": %d,\n"
            "  \"n_layer\": %d,\n  \"n_head\": %d,\n  \"activation_function\": \"gelu_new\",\n"
            "  \"layer_norm_epsilon\": 1e-05,\n  \"tie_word_embeddings\": true,\n"
            "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
            "  \"bos_token_id\": %s,\n  \"eos_token_id\": %s,\n"
            "  \"torch_dtype\": \"%s\"\n}\n",
            sh->vocab, sh->n_ctx, sh->n_ctx, sh->n_embd, sh->n_layer, sh->n_head, eot, eot,
            dtype == ZT_BF16 ? "bfloat16" : "float32") > 0;
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int err = ok ? 0 : errno;
    ok = (fclose(f) == 0) && ok;
    if (!err && !ok) err = errno;
    if (!ok || rename(tmp, path) != 0) {
        if (!err) err = errno;
        unlink(tmp);
        return zt_errorf("writing %s failed: %s", path, strerror(err));
    }
    return ZT_OK;
}

// Tensor d of part k whole: assembled from the tp slices (the first part of each tp rank
// holding it) into a new R x C buffer, which the caller frees.
static float *assemble_tp(const zt_layout *lays, const float *const *params, int n_parts,
                          int k, const zt_tensor_desc *d, size_t R, size_t C) {
    float *whole = malloc(R * C * sizeof(float));
    int *have = calloc((size_t)lays[k].tp, sizeof *have);
    ZT_ASSERT(whole && have);
    for (int q = k; q < n_parts; q++) {
        int e = zt_layout_find(&lays[q], d->name);
        if (e < 0 || have[lays[q].tp_rank]) continue;
        have[lays[q].tp_rank] = 1;
        const zt_tensor_desc *dq = &lays[q].t[e];
        const float *src = params[q] + dq->offset;
        for (size_t x = 0; x < dq->numel; x++) {
            size_t g = zt_layout_global_index(&lays[q], dq, x);
            if (g < R * C) whole[g] = src[x];
        }
    }
    for (int r = 0; r < lays[k].tp; r++)
        ZT_ASSERTF(have[r], "%s: no part holds tp rank %d's slice", d->name, r);
    free(have);
    return whole;
}

// p (R, C) as a new (C, R) buffer: Hugging Face's Conv1D layout.
static float *transpose(const float *p, size_t R, size_t C) {
    float *tr = malloc(R * C * sizeof(float));
    ZT_ASSERT(tr);
    for (size_t r = 0; r < R; r++)
        for (size_t c = 0; c < C; c++) tr[c * R + r] = p[r * C + c];
    return tr;
}

// n values rounded to bf16, nearest even (the rounding the GPU and PyTorch use), in a new
// buffer: widened again they are exactly what a bf16 run's weights would be.
static zt_bf16 *to_bf16(const float *p, size_t n) {
    zt_bf16 *b = malloc(n * sizeof *b);
    ZT_ASSERT(b);
    for (size_t i = 0; i < n; i++) b[i] = zt_bf16_from_fp32(p[i]);
    return b;
}

// Fills o with tensor d of part k, whole, in Hugging Face's layout and `dtype`. *owned is
// the buffer o->data points into when one had to be made (the caller frees it), else NULL.
static void export_tensor(const zt_model_shape *shape, const zt_layout *lays,
                          const float *const *params, int n_parts, int k,
                          const zt_tensor_desc *d, zt_dtype dtype, zt_st_tensor *o,
                          void **owned) {
    // the whole tensor, without the vocabulary padding
    size_t R = d->split == ZT_SPLIT_VOCAB ? (size_t)shape->vocab : (size_t)d->shape[0];
    size_t C = (size_t)d->shape[1];
    const float *p = params[k] + d->offset;
    float *mine = NULL;
    if (lays[k].tp > 1) p = mine = assemble_tp(lays, params, n_parts, k, d, R, C);
    o->name = d->name;
    o->ndim = d->ndim;
    o->shape[0] = (int64_t)R;
    o->shape[1] = (int64_t)C;
    if (d->hf_transposed) {
        float *tr = transpose(p, R, C);
        free(mine);
        p = mine = tr;
        o->shape[0] = (int64_t)C;
        o->shape[1] = (int64_t)R;
    }
    o->dtype = ZT_ST_F32;
    o->data = p;
    *owned = mine;
    if (dtype == ZT_BF16) {
        *owned = to_bf16(p, R * C);
        free(mine);
        o->dtype = ZT_ST_BF16;
        o->data = *owned;
    }
}

static zt_status export_files(const zt_model_shape *shape, const zt_layout *lays,
                              const float *const *params, int n_parts, zt_dtype dtype,
                              const char *dir) {
    int cap = 0;
    for (int k = 0; k < n_parts; k++) cap += lays[k].n;
    zt_st_tensor *t = calloc((size_t)cap, sizeof *t);
    void **owned = calloc((size_t)cap, sizeof *owned);
    ZT_ASSERT(t && owned);
    int n = 0;
    for (int k = 0; k < n_parts; k++)
        for (int i = 0; i < lays[k].n; i++) {
            const zt_tensor_desc *d = &lays[k].t[i];
            int seen = 0; // the tied wte, held by the first and the last stage
            for (int j = 0; j < n; j++) seen |= strcmp(t[j].name, d->name) == 0;
            if (seen) continue;
            export_tensor(shape, lays, params, n_parts, k, d, dtype, &t[n], &owned[n]);
            n++;
        }
    char path[4700];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    zt_status s = zt_safetensors_write(path, t, n);
    for (int i = 0; i < n; i++) free(owned[i]);
    free(owned);
    free(t);
    ZT_TRY(s);
    snprintf(path, sizeof path, "%s/config.json", dir);
    return write_config(shape, dtype, path);
}
