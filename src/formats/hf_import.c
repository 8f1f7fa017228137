// Loading a Hugging Face GPT-2 model (directory or model.safetensors) or an llm.c file.
//
// Hugging Face GPT-2 tensors, by name (an optional "transformer." prefix on all but
// lm_head): wte.weight (V, C), wpe.weight (n_ctx, C), h.N.ln_1/ln_2.{weight,bias} (C),
// h.N.attn.c_attn.weight (C, 3C) and mlp.c_fc.weight (C, 4C) as Conv1D (in, out),
// h.N.attn.c_proj.weight (C, C) and mlp.c_proj.weight (4C, C) (in, out) as we store them,
// biases (out), ln_f.{weight,bias} (C), optionally lm_head.weight (V, C) = wte.
// Buffers some exports include (h.N.attn.bias, attn.masked_bias) are ignored.
#include "hf_import.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "json_keys.h"
#include "layernorm_math.h"
#include "llmc_checkpoint.h"
#include "safetensors.h"

typedef struct {
    char st[4096];     // the .safetensors file
    char config[4096]; // config.json, "" if none
} hf_paths;

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}
// Something that is not a regular file stands at p (a FIFO, a device, a directory): refused
// by name, since taking it for absent would load another model than the one named (a
// FIFO config.json ignored, the shape guessed), and opening a FIFO blocks.
static int is_other(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && !S_ISREG(st.st_mode);
}

// 1: an llm.c file (its magic, or the token-data magic), 0: otherwise.
static int is_llmc(const char *path) {
    FILE *f = zt_fopen_regular(path);
    if (!f) return 0;
    int32_t magic = 0;
    size_t got = fread(&magic, 4, 1, f);
    fclose(f);
    // token data files go there too, for its message naming --data
    return got == 1 && (magic == ZT_LLMC_MAGIC || magic == 20240520);
}

static zt_status resolve(const char *path, hf_paths *p) {
    memset(p, 0, sizeof *p);
    if (is_dir(path)) {
        snprintf(p->st, sizeof p->st, "%s/model.safetensors", path);
        snprintf(p->config, sizeof p->config, "%s/config.json", path);
        char ck[4200], lt[4200];
        snprintf(ck, sizeof ck, "%s/manifest.json", path);
        snprintf(lt, sizeof lt, "%s/latest", path);
        if (is_other(p->st))
            return zt_errorf("--init-from %s: %s is not a regular file (a FIFO, a device, a "
                             "directory?); give a directory whose model.safetensors is a file",
                             path, p->st);
        if (!is_file(p->st) && (is_file(ck) || is_file(lt)))
            return zt_errorf("--init-from %s is a zerotrain checkpoint: continue its run with "
                             "--resume %s (train), or make a model directory of it with "
                             "`zerotrain export %s --out DIR` and give --init-from DIR",
                             path, path, path);
        if (!is_file(p->st))
            return zt_errorf("--init-from %s is a directory without model.safetensors (a Hugging "
                             "Face GPT-2 directory holds model.safetensors and config.json; "
                             "pytorch_model.bin is not read: convert it with safetensors)", path);
    } else {
        if (is_other(path))
            return zt_errorf("--init-from %s is not a regular file or a directory (a FIFO, a "
                             "device?): give a model file or a model directory", path);
        if (!is_file(path)) return zt_errorf("cannot open --init-from %s: %s", path, strerror(errno));
        snprintf(p->st, sizeof p->st, "%s", path);
        const char *slash = strrchr(path, '/');
        int dl = slash ? (int)(slash - path) : 1;
        snprintf(p->config, sizeof p->config, "%.*s/config.json", dl, slash ? path : ".");
    }
    if (is_other(p->config))
        return zt_errorf("--init-from %s: %s is not a regular file (a FIFO, a device, a "
                         "directory?): make it the model's config.json, or remove it to take "
                         "the shape from the tensors", path, p->config);
    if (!is_file(p->config)) p->config[0] = 0;
    return ZT_OK;
}

// The tensor for our name: with or without the "transformer." prefix; -1 if absent.
static int find_hf(const zt_st_file *f, const char *name) {
    int i = zt_st_find(f, name);
    if (i >= 0) return i;
    char pre[96];
    snprintf(pre, sizeof pre, "transformer.%s", name);
    return zt_st_find(f, pre);
}

// -1: absent; 0: present but not a whole number in [1, INT_MAX]; 1: read.
static int json_int(const cJSON *root, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return -1;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= INT_MAX) ||
        v->valuedouble != (double)(int)v->valuedouble)
        return 0;
    *out = (int)v->valuedouble;
    return 1;
}

// What zerotrain's GPT-2 computes that a config.json may say otherwise: refused, since
// loading such weights would train or generate with another function than the file's.
static zt_status check_config_math(const char *path, const cJSON *root) {
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "activation_function");
    if (act && (!cJSON_IsString(act) || (strcmp(act->valuestring, "gelu_new") != 0 &&
                                         strcmp(act->valuestring, "gelu_pytorch_tanh") != 0)))
        return zt_errorf("%s: activation_function is %s; zerotrain's GPT-2 computes the tanh "
                         "GELU (\"gelu_new\") only: this model needs another runtime",
                         path, cJSON_IsString(act) ? act->valuestring : "not a string");
    // transformers' GPT2Attention: scale_attn_weights false drops the 1/sqrt(head) scale,
    // scale_attn_by_inverse_layer_idx true divides layer i's scores by i + 1 more, and
    // add_cross_attention adds an attention over an encoder; each changes the logits.
    // (reorder_and_upcast_attn only computes the same scores in float32, as zerotrain does.)
    static const struct { const char *key; int gpt2; const char *does; } flags[] = {
        {"scale_attn_weights", 1, "scales the attention scores by 1/sqrt(head size)"},
        {"scale_attn_by_inverse_layer_idx", 0, "does not scale layer i's scores by 1/(i + 1)"},
        {"add_cross_attention", 0, "has no cross-attention"}};
    for (size_t k = 0; k < sizeof flags / sizeof *flags; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, flags[k].key);
        if (v && (!cJSON_IsBool(v) || cJSON_IsTrue(v) != flags[k].gpt2))
            return zt_errorf("%s: %s is %s; zerotrain's GPT-2 %s (%s %s): this model needs "
                             "another runtime", path, flags[k].key,
                             cJSON_IsBool(v) ? (cJSON_IsTrue(v) ? "true" : "false") : "not a bool",
                             flags[k].does, flags[k].key, flags[k].gpt2 ? "true" : "false");
    }
    const cJSON *model_type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (model_type && (!cJSON_IsString(model_type) || strcmp(model_type->valuestring, "gpt2")))
        return zt_errorf("%s: model_type is %s, not \"gpt2\": zerotrain reads GPT-2 models only",
                         path, cJSON_IsString(model_type) ? model_type->valuestring : "not a string");
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(root, "n_inner");
    const cJSON *embd = cJSON_GetObjectItemCaseSensitive(root, "n_embd");
    if (inner && !cJSON_IsNull(inner) &&
        !(cJSON_IsNumber(inner) && cJSON_IsNumber(embd) &&
          inner->valuedouble == 4 * embd->valuedouble))
        return zt_errorf("%s: n_inner is %g; zerotrain's GPT-2 MLP is 4 x n_embd wide (n_inner "
                         "null): this model needs another runtime", path,
                         cJSON_IsNumber(inner) ? inner->valuedouble : NAN);
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_epsilon");
    if (eps && (!cJSON_IsNumber(eps) || fabs(eps->valuedouble - ZT_LN_EPS) > 1e-3 * ZT_LN_EPS))
        return zt_errorf("%s: layer_norm_epsilon is %g; zerotrain's LayerNorm uses GPT-2's "
                         "1e-05: this model needs another runtime",
                         path, cJSON_IsNumber(eps) ? eps->valuedouble : NAN);
    return ZT_OK;
}

static zt_status read_config_json(const char *path, zt_model_shape *s) {
    size_t len, at;
    char *buf = zt_read_file(path, &len);
    if (!buf) return zt_errorf("cannot read %s: %s", path, zt_file_error(errno));
    const char *lenient = zt_json_lenient_part(buf, len, &at);
    if (lenient) {
        free(buf);
        return zt_errorf("%s is not valid JSON: %s at byte %zu: fix the file", path, lenient, at);
    }
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return zt_errorf("%s is not a JSON object (a Hugging Face config.json)", path);
    }
    const char *twice = zt_json_duplicate_key(root);
    if (twice) { // cJSON finds the first, Python's json (transformers) keeps the last
        zt_status st = zt_errorf("%s gives '%s' twice: zerotrain would read the first value, "
                                 "transformers the last; keep one", path, twice);
        cJSON_Delete(root);
        return st;
    }
    const char *keys[] = {"n_layer", "n_head", "n_embd", "vocab_size", "n_positions"};
    int *fields[] = {&s->n_layer, &s->n_head, &s->n_embd, &s->vocab, &s->n_ctx};
    zt_status st = ZT_OK;
    for (int i = 0; i < 5 && st == ZT_OK; i++) {
        int r = json_int(root, keys[i], fields[i]);
        if (r < 0 && i == 4) r = json_int(root, "n_ctx", fields[i]); // the older key
        if (r < 0)
            st = zt_errorf("%s lacks %s (one of n_layer, n_head, n_embd, vocab_size, "
                           "n_positions): not a GPT-2 config.json", path, keys[i]);
        else if (r == 0)
            st = zt_errorf("%s: %s is not a whole number from 1 to %d: the file is damaged",
                           path, keys[i], INT_MAX);
    }
    if (st == ZT_OK) st = check_config_math(path, root);
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (st == ZT_OK && cJSON_IsFalse(tie))
        st = zt_errorf("%s sets tie_word_embeddings false; zerotrain's GPT-2 ties the lm-head "
                       "to wte", path);
    cJSON_Delete(root);
    return st;
}

// The layer a tensor name "h.N.*" (or "transformer.h.N.*") belongs to; -1 for others.
// Parsed wide: "h.2147483647.*" overflowed an int's count of layers (-2147483648).
static long long layer_of(const char *name) {
    if (strncmp(name, "transformer.", 12) == 0) name += 12;
    if (strncmp(name, "h.", 2) != 0 || name[2] < '0' || name[2] > '9') return -1;
    char *end;
    errno = 0;
    unsigned long long l = strtoull(name + 2, &end, 10);
    if (*end != '.') return -1;
    return errno == ERANGE || l > LLONG_MAX ? LLONG_MAX : (long long)l;
}

// Dimension k of tensor i as one of the shape's counts: past an int it wrapped (a vocabulary
// of 2^31 read as -2^31, then blamed on --vocab, a flag never given).
static zt_status shape_count(const zt_st_file *f, int i, int k, const char *what, int *out) {
    int64_t d = f->t[i].shape[k];
    if (d < 1 || d > INT_MAX)
        return zt_errorf("%s: tensor '%s' gives %s %lld (dimension %d of its shape), not a count "
                         "from 1 to %d: the file is damaged or not a GPT-2 model", f->path,
                         f->t[i].name, what, (long long)d, k, INT_MAX);
    *out = (int)d;
    return ZT_OK;
}

// Shape from the tensors themselves (n_head is not among them). The layer count is the
// highest h.N plus one; an N that the file's h.* tensors cannot all reach is refused by
// name (layers are numbered from 0 without gaps), before it becomes a count of layers.
static zt_status infer_shape(const zt_st_file *f, zt_model_shape *s) {
    int wte = find_hf(f, "wte.weight"), wpe = find_hf(f, "wpe.weight");
    if (wte < 0 || wpe < 0 || f->t[wte].ndim != 2 || f->t[wpe].ndim != 2)
        return zt_errorf("%s has no 2-D wte.weight and wpe.weight (with or without the "
                         "transformer. prefix): not a GPT-2 model", f->path);
    ZT_TRY(shape_count(f, wte, 0, "vocab", &s->vocab));
    ZT_TRY(shape_count(f, wte, 1, "n_embd", &s->n_embd));
    ZT_TRY(shape_count(f, wpe, 0, "n_ctx", &s->n_ctx));
    long long top = -1;
    int n_h = 0, at = -1;
    for (int i = 0; i < f->n; i++) {
        long long l = layer_of(f->t[i].name);
        if (l < 0) continue;
        n_h++;
        if (l > top) top = l, at = i;
    }
    if (top < 0) return zt_errorf("%s has no h.N.* tensors: not a GPT-2 model", f->path);
    if (top >= n_h)
        return zt_errorf("%s: tensor '%s' names layer %lld, but the file holds %d h.N tensors, "
                         "too few for layers 0 to %lld (they are numbered from 0 without "
                         "gaps): the file is damaged", f->path, f->t[at].name, top, n_h, top);
    s->n_layer = (int)top + 1;
    return ZT_OK;
}

// A tensor of a layer the shape does not have (config.json's n_layer 3 over a 4-layer
// file) was never read: the model lost its last layers without a word.
static zt_status check_layers_within(const zt_st_file *f, int n_layer, const char *config) {
    for (int i = 0; i < f->n; i++) {
        long long l = layer_of(f->t[i].name);
        if (l >= n_layer)
            return zt_errorf("%s holds tensor '%s' of layer %lld, but %s says n_layer %d: the "
                             "weights and the config disagree; fix n_layer in %s (or load the "
                             "weights it belongs to)", f->path, f->t[i].name, l,
                             config[0] ? config : "the model shape", n_layer,
                             config[0] ? config : "the shape flags");
    }
    return ZT_OK;
}

zt_status zt_init_read_shape(const char *path, zt_model_shape *shape, int *head_known) {
    memset(shape, 0, sizeof *shape);
    *head_known = 1;
    if (!is_dir(path) && is_llmc(path)) return zt_llmc_read_shape(path, shape);
    hf_paths p;
    ZT_TRY(resolve(path, &p));
    if (p.config[0]) return read_config_json(p.config, shape);
    zt_st_file f;
    zt_status s = zt_st_open(&f, p.st);
    if (s == ZT_OK) s = infer_shape(&f, shape);
    zt_st_close(&f);
    *head_known = 0;
    return s;
}

// Our tensor t (this rank's slice) from the file's whole tensor `src` (fp32, HF layout).
static void gather(const zt_layout *lay, const zt_tensor_desc *t, const zt_model_shape *s,
                   const float *src, float *dst) {
    size_t O = (size_t)t->shape[0], I = (size_t)t->shape[1];
    size_t real = (size_t)s->vocab * I;
#pragma omp parallel for
    for (size_t k = 0; k < t->numel; k++) {
        size_t g = zt_layout_global_index(lay, t, k);
        if (t->split == ZT_SPLIT_VOCAB && g >= real) dst[k] = 0.0f; // padding rows
        else if (t->hf_transposed) dst[k] = src[(g % I) * O + g / I]; // HF (in, out)
        else dst[k] = src[g];
    }
}

// "[a, b]" for a shape of `ndim` dimensions (a 1-D one printed "[640]" for 64: its empty
// second dimension's 0 followed the first).
static void shape_text(char *out, size_t size, int ndim, const int64_t *dims) {
    size_t n = (size_t)snprintf(out, size, "[");
    for (int k = 0; k < ndim && n < size; k++)
        n += (size_t)snprintf(out + n, size - n, "%s%lld", k ? ", " : "", (long long)dims[k]);
    if (n < size) snprintf(out + n, size - n, "]");
}

static zt_status hf_load(zt_gpt2 *m, const char *path) {
    hf_paths p;
    ZT_TRY(resolve(path, &p));
    zt_st_file f;
    zt_status st = zt_st_open(&f, p.st);
    if (st == ZT_OK) st = check_layers_within(&f, m->shape.n_layer, p.config);
    const zt_layout *lay = &m->layout;
    float *buf = NULL, *other = NULL;
    float *params = zt_gpt2_params_map(m, 0);
    for (int i = 0; st == ZT_OK && i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        int e = find_hf(&f, t->name);
        if (e < 0) {
            st = zt_errorf("%s has no tensor %s (nor transformer.%s)", p.st, t->name, t->name);
            break;
        }
        // the file's shape: ours, transposed for Conv1D, unpadded for wte
        int64_t r = t->split == ZT_SPLIT_VOCAB ? m->shape.vocab : t->shape[0], c = t->shape[1];
        if (t->hf_transposed) {
            int64_t x = r;
            r = c;
            c = x;
        }
        const zt_st_entry *en = &f.t[e];
        int ok = t->ndim == 1 ? en->ndim == 1 && en->shape[0] == r
                              : en->ndim == 2 && en->shape[0] == r && en->shape[1] == c;
        if (!ok) {
            char has[96], want[64];
            shape_text(has, sizeof has, en->ndim, en->shape);
            shape_text(want, sizeof want, t->ndim, (const int64_t[]){r, c});
            st = zt_errorf("%s: tensor %s has shape %s, expected %s for this model", p.st,
                           en->name, has, want);
            break;
        }
        buf = realloc(buf, en->numel * sizeof(float));
        ZT_ASSERT(buf);
        zt_st_read_f32(&f, e, 0, en->numel, buf);
        if (t->tied) {
            int h = zt_st_find(&f, "lm_head.weight");
            if (h >= 0) {
                if (f.t[h].numel != en->numel) {
                    st = zt_errorf("%s: lm_head.weight and wte.weight differ in shape; zerotrain "
                                   "ties them", p.st);
                    break;
                }
                other = realloc(other, en->numel * sizeof(float));
                ZT_ASSERT(other);
                zt_st_read_f32(&f, h, 0, en->numel, other);
                if (memcmp(other, buf, en->numel * sizeof(float)) != 0) {
                    st = zt_errorf("%s: lm_head.weight differs from wte.weight; zerotrain's GPT-2 "
                                   "ties the lm-head to the embedding and cannot load an untied "
                                   "head", p.st);
                    break;
                }
            }
        }
        gather(lay, t, &m->shape, buf, params + t->offset);
    }
    zt_gpt2_params_unmap(m, params, st == ZT_OK);
    free(buf);
    free(other);
    zt_st_close(&f);
    return st;
}

// A NaN or infinite weight makes every loss NaN (blamed on the learning rate) and every
// greedy token 0: name the tensor at load instead.
static zt_status check_finite(const zt_gpt2 *m, const char *path) {
    const zt_layout *lay = &m->layout;
    float *params = zt_gpt2_params_map(m, 1);
    zt_status st = ZT_OK;
    for (int i = 0; st == ZT_OK && i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        const float *x = params + t->offset;
        for (size_t j = 0; j < t->numel; j++)
            if (!isfinite(x[j])) {
                st = zt_errorf("%s: tensor %s holds %g (element %zu of this rank's part): the "
                               "file is damaged or comes from a run that diverged; load "
                               "another", path, t->name, x[j], j);
                break;
            }
    }
    zt_gpt2_params_unmap(m, params, 0);
    return st;
}

zt_status zt_init_load(zt_gpt2 *m, const char *path) {
    if (!is_dir(path) && is_llmc(path)) ZT_TRY(zt_llmc_load(m, path));
    else ZT_TRY(hf_load(m, path));
    return check_finite(m, path);
}
