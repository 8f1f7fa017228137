// The model's shape: the --model presets, the shape keys given explicitly, a file's shape;
// and the dtypes it trains and saves in.
#include "config_options.h"

#include <string.h>

const zt_preset zt_presets[] = {
    // byte-level demo: trains in seconds on a CPU
    {"tiny", {.n_layer = 4, .n_head = 4, .n_embd = 128, .vocab = 256, .n_ctx = 256}},
    {"gpt2", {.n_layer = 12, .n_head = 12, .n_embd = 768, .vocab = 50257, .n_ctx = 1024}},
    {"gpt2-medium",
     {.n_layer = 24, .n_head = 16, .n_embd = 1024, .vocab = 50257, .n_ctx = 1024}},
    {"gpt2-large",
     {.n_layer = 36, .n_head = 20, .n_embd = 1280, .vocab = 50257, .n_ctx = 1024}},
    {"gpt2-xl", {.n_layer = 48, .n_head = 25, .n_embd = 1600, .vocab = 50257, .n_ctx = 1024}},
};
const int zt_n_presets = (int)(sizeof zt_presets / sizeof zt_presets[0]);

// The preset --model names, or NULL.
static const zt_preset *find_preset(const char *name) {
    const zt_preset *p = NULL;
    for (int i = 0; i < zt_n_presets; i++)
        if (strcmp(name, zt_presets[i].name) == 0) p = &zt_presets[i];
    return p;
}

// Bit of a shape key (or "model") in zt_config.shape_given.
static int shape_bit(const char *name) {
    static const char *const keys[] = {"model", "n-layer", "n-head", "n-embd", "vocab", "n-ctx"};
    for (int i = 0; i < 6; i++)
        if (strcmp(name, keys[i]) == 0) return i;
    ZT_ASSERTF(0, "%s is not a shape key", name);
}

unsigned zt_shape_given(const unsigned char *set) {
    unsigned given = 0;
    for (int i = 0; i < ZT_N_OPTS; i++)
        if (set[i] && (zt_opts[i].from_preset || strcmp(zt_opts[i].name, "model") == 0))
            given |= 1u << shape_bit(zt_opts[i].name);
    return given;
}

zt_status zt_preset_apply(zt_config *cfg, const unsigned char *set) {
    const zt_preset *p = find_preset(cfg->model);
    if (!p) {
        char names[256] = "";
        for (int i = 0; i < zt_n_presets; i++) {
            size_t n = strlen(names);
            snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", zt_presets[i].name);
        }
        return zt_errorf("--model '%s' is not a preset: use one of %s (--n-layer, --n-head, "
                         "--n-embd, --vocab and --n-ctx then override its shape)",
                         cfg->model, names);
    }
    for (int i = 0; i < ZT_N_OPTS; i++) {
        const opt_desc *o = &zt_opts[i];
        if (o->from_preset && !set[i])
            memcpy((char *)cfg + o->offset, (const char *)&p->shape + o->offset, o->size);
    }
    return ZT_OK;
}

zt_status zt_config_adopt_shape(zt_config *cfg, const zt_model_shape *file, int head_known,
                                const char *what) {
    const zt_preset *p = find_preset(cfg->model);
    int *mine[5] = {&cfg->n_layer, &cfg->n_head, &cfg->n_embd, &cfg->vocab, &cfg->n_ctx};
    int theirs[5] = {file->n_layer, file->n_head, file->n_embd, file->vocab, file->n_ctx};
    const char *flag[5] = {"n-layer", "n-head", "n-embd", "vocab", "n-ctx"};
    const char *key[5] = {"n_layer", "n_head", "n_embd", "vocab", "n_ctx"};
    int model_given = cfg->shape_given & 1u;
    for (int k = 0; k < 5; k++) {
        if (k == 1 && !head_known) continue;
        int given = (cfg->shape_given >> (k + 1)) & 1u;
        if (given && *mine[k] != theirs[k])
            return zt_errorf("--%s %d contradicts %s %d of %s: drop --%s (the shape comes from "
                             "the file)", flag[k], *mine[k], key[k], theirs[k], what, flag[k]);
        if (!given && model_given && p) {
            int pv = *(const int *)((const char *)&p->shape + ((char *)mine[k] - (char *)cfg));
            if (pv != theirs[k])
                return zt_errorf("--model %s (%s %d) contradicts %s %d of %s: drop --model (the "
                                 "shape comes from the file)", cfg->model, key[k], pv, key[k],
                                 theirs[k], what);
        }
        *mine[k] = theirs[k];
    }
    // Tensor shapes do not hold the head count, and a guess (GPT-2's heads are 64 wide) loads
    // an 8-head model of 256 channels as 4 heads without a word: it must be said, by
    // --n-head or by a --model preset.
    if (!head_known && !((cfg->shape_given >> 2) & 1u) && !(model_given && p)) {
        char hint[96] = "";
        if (cfg->n_embd % 64 == 0)
            snprintf(hint, sizeof hint, " (GPT-2's own models have heads 64 wide: --n-head %d)",
                     cfg->n_embd / 64);
        return zt_errorf("%s has no config.json, and its tensors do not say how many attention "
                         "heads the model has: give --n-head%s, or load the directory with its "
                         "config.json", what, hint);
    }
    return ZT_OK;
}

zt_model_shape zt_config_shape(const zt_config *cfg) {
    zt_model_shape s = {
        .vocab = cfg->vocab,
        .padded_vocab = zt_padded_vocab(cfg->vocab, cfg->tp),
        .n_ctx = cfg->n_ctx,
        .n_layer = cfg->n_layer,
        .n_head = cfg->n_head,
        .n_embd = cfg->n_embd,
    };
    return s;
}

zt_dtype zt_config_save_dtype(const zt_config *cfg) {
    // a run saves what it trains unless --save-dtype says otherwise
    return cfg->save_dtype == ZT_NOT_GIVEN ? cfg->param_dtype : (zt_dtype)cfg->save_dtype;
}
