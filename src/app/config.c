// The run configuration: one option table, and the code that walks it for defaults,
// `--flags`, the JSON config file and `--help`; model presets; range checks.
#include "config.h"

#include "backend.h" // the backends by name, and what each supports

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

typedef enum { OPT_INT, OPT_FLOAT, OPT_U64, OPT_STR, OPT_BOOL } opt_type;

typedef struct {
    const char *name;           // the flag without "--", and the JSON key
    opt_type type;
    size_t offset;              // of the field in zt_config
    size_t size;                // of the field; bounds strings (NUL included)
    const char *def;            // default as text, parsed like a flag value
    const char *meta;           // value placeholder in --help ("" for bools)
    const char *const *choices; // NULL-terminated allowed values (strings), or NULL
    int from_preset;            // a shape key: --model's preset fills it unless given
    const char *group;          // --help heading; a group's options are contiguous
    const char *help;
} opt_desc;

#define FIELD(f) offsetof(zt_config, f), sizeof(((zt_config *)0)->f)

static const char *const k_optims[] = {"adamw", "adamw8bit", NULL};
static const char *const k_lr_schedules[] = {"constant", "cosine", NULL};
static const char *const k_schedules[] = {"1f1b", "gpipe", NULL};
static const char *const k_param_dtypes[] = {"fp32", "bf16", NULL};

// Every option, once. The shape keys default to 0, which the preset always replaces.
static const opt_desc k_opts[] = {
    {"model", OPT_STR, FIELD(model), "tiny", "NAME", NULL, 0, "model",
     "preset for the shape keys not given explicitly"},
    {"n-layer", OPT_INT, FIELD(n_layer), "0", "N", NULL, 1, "model", "transformer blocks (L)"},
    {"n-head", OPT_INT, FIELD(n_head), "0", "N", NULL, 1, "model", "attention heads (NH)"},
    {"n-embd", OPT_INT, FIELD(n_embd), "0", "N", NULL, 1, "model", "channels (C)"},
    {"vocab", OPT_INT, FIELD(vocab), "0", "N", NULL, 1, "model",
     "vocabulary size (V)"},
    {"n-ctx", OPT_INT, FIELD(n_ctx), "0", "N", NULL, 1, "model",
     "learned positions (longest --seq)"},

    {"micro-batch", OPT_INT, FIELD(micro_batch), "8", "N", NULL, 0, "batch",
     "sequences per micro-batch (B)"},
    {"seq", OPT_INT, FIELD(seq), "128", "N", NULL, 0, "batch", "tokens per sequence (T)"},
    {"grad-accum", OPT_INT, FIELD(grad_accum), "1", "N", NULL, 0, "batch",
     "micro-batches per step per dp rank"},
    {"steps", OPT_INT, FIELD(steps), "200", "N", NULL, 0, "batch", "optimizer steps"},

    {"optim", OPT_STR, FIELD(optim), "adamw", "NAME", k_optims, 0, "optimizer", "optimizer"},
    {"optim-block", OPT_INT, FIELD(optim_block), "256", "N", NULL, 0, "optimizer",
     "adamw8bit: values per quantization block (bitsandbytes: 256; a power of two, 64-256)"},
    {"optim-min-8bit", OPT_INT, FIELD(optim_min_8bit), "4096", "N", NULL, 0, "optimizer",
     "adamw8bit: tensors with fewer values keep fp32 state (bitsandbytes: 4096)"},
    {"optim-fp32-embedding", OPT_BOOL, FIELD(optim_fp32_embedding), "false", "", NULL, 0,
     "optimizer", "adamw8bit: keep the token embedding's state in fp32"},
    {"lr", OPT_FLOAT, FIELD(lr), "6e-4", "X", NULL, 0, "optimizer", "peak learning rate"},
    {"lr-final-frac", OPT_FLOAT, FIELD(lr_final_frac), "0.1", "X", NULL, 0, "optimizer",
     "final learning rate as a fraction of --lr"},
    {"lr-schedule", OPT_STR, FIELD(lr_schedule), "cosine", "NAME", k_lr_schedules, 0,
     "optimizer", "decay after warmup"},
    {"warmup", OPT_INT, FIELD(warmup), "20", "N", NULL, 0, "optimizer",
     "linear warmup steps"},
    {"weight-decay", OPT_FLOAT, FIELD(weight_decay), "0.1", "X", NULL, 0, "optimizer",
     "AdamW decoupled weight decay (matrices only)"},
    {"beta1", OPT_FLOAT, FIELD(beta1), "0.9", "X", NULL, 0, "optimizer",
     "AdamW first-moment decay"},
    {"beta2", OPT_FLOAT, FIELD(beta2), "0.95", "X", NULL, 0, "optimizer",
     "AdamW second-moment decay"},
    {"eps", OPT_FLOAT, FIELD(eps), "1e-8", "X", NULL, 0, "optimizer", "AdamW epsilon"},
    {"grad-clip", OPT_FLOAT, FIELD(grad_clip), "1.0", "X", NULL, 0, "optimizer",
     "clip the global gradient norm to this (0 = off)"},
    {"seed", OPT_U64, FIELD(seed), "1337", "N", NULL, 0, "optimizer",
     "random seed (initialization, shuffling)"},

    {"data", OPT_STR, FIELD(data), "", "PATH", NULL, 0, "data",
     "training tokens (llm.c .bin format; if not set, the embedded default text, with its "
     "validation split)"},
    {"val-data", OPT_STR, FIELD(val_data), "", "PATH", NULL, 0, "data",
     "validation tokens (if not set, no validation)"},
    {"val-every", OPT_INT, FIELD(val_every), "50", "N", NULL, 0, "data",
     "validate every N steps (0 = never)"},
    {"val-batches", OPT_INT, FIELD(val_batches), "8", "N", NULL, 0, "data",
     "global batches per validation (the same samples whatever the layout)"},
    {"sample-every", OPT_INT, FIELD(sample_every), "0", "N", NULL, 0, "data",
     "every N steps and at the end, print a sampled continuation of the training data's "
     "first token (temperature 1, --seed; 0 = never)"},
    {"sample-len", OPT_INT, FIELD(sample_len), "64", "N", NULL, 0, "data",
     "tokens per --sample-every sample"},
    {"shuffle", OPT_BOOL, FIELD(shuffle), "false", "", NULL, 0, "data",
     "shuffle the training sequences (--shuffle=false: off)"},
    {"init-from", OPT_STR, FIELD(init_from), "", "PATH", NULL, 0, "data",
     "start from a Hugging Face GPT-2 directory or model.safetensors, or an llm.c fp32 file; "
     "the model shape comes from the file"},
    {"log", OPT_STR, FIELD(log), "", "PATH", NULL, 0, "data", "write metrics as JSON lines"},
    {"save", OPT_STR, FIELD(save), "", "DIR", NULL, 0, "data",
     "at the end, write the weights as a Hugging Face GPT-2 directory (model.safetensors + "
     "config.json, and GPT-2's tokenizer files when the vocabulary is 50257)"},
    {"ckpt-dir", OPT_STR, FIELD(ckpt_dir), "", "DIR", NULL, 0, "checkpoints",
     "write sharded checkpoints DIR/step-N (docs/checkpoints.md)"},
    {"ckpt-every", OPT_INT, FIELD(ckpt_every), "0", "N", NULL, 0, "checkpoints",
     "checkpoint every N steps (and after the last; 0 = only after the last)"},
    {"ckpt-keep", OPT_INT, FIELD(ckpt_keep), "0", "K", NULL, 0, "checkpoints",
     "keep the K newest checkpoints (0 = all)"},
    {"resume", OPT_STR, FIELD(resume), "", "DIR", NULL, 0, "checkpoints",
     "continue from the latest complete checkpoint in DIR (or a step-N directory), in any "
     "layout"},

    {"zero", OPT_INT, FIELD(zero), "0", "N", NULL, 0, "parallel",
     "1 = shard optimizer state over dp (ZeRO-1)"},
    {"dp", OPT_INT, FIELD(dp), "0", "N", NULL, 0, "parallel",
     "data-parallel degree (0 = world size / (pp*tp))"},
    {"pp", OPT_INT, FIELD(pp), "1", "N", NULL, 0, "parallel", "pipeline stages"},
    {"tp", OPT_INT, FIELD(tp), "1", "N", NULL, 0, "parallel", "tensor-parallel degree"},
    {"schedule", OPT_STR, FIELD(schedule), "1f1b", "NAME", k_schedules, 0, "parallel",
     "pipeline schedule"},
    {"partition", OPT_STR, FIELD(partition), "uniform", "SPEC", NULL, 0, "parallel",
     "uniform | parameters | memory | type:... | 0:11,11:24,..."},
    {"loss-chunk", OPT_INT, FIELD(loss_chunk), "0", "N", NULL, 0, "parallel",
     "tokens per chunk of the loss (0 = automatic)"},
    {"threads", OPT_INT, FIELD(threads), "0", "N", NULL, 0, "parallel",
     "OpenMP threads per rank (0 = runtime default)"},
    {"peak-tflops", OPT_FLOAT, FIELD(peak_tflops), "0", "X", NULL, 0, "parallel",
     "one rank's peak TFLOP/s: the progress line then shows the model FLOPs utilization "
     "(0 = only the achieved TFLOP/s)"},
    {"backend", OPT_STR, FIELD(backend), "cpu", "NAME", zt_backend_names, 0, "parallel",
     "where tensors live and kernels run: cpu, or cuda (one GPU; a binary built with "
     "`make cuda`: build/zerotrain-cuda)"},
    {"tf32", OPT_BOOL, FIELD(tf32), "false", "", NULL, 0, "parallel",
     "--backend cuda: allow TF32 tensor cores in fp32 matrix products (faster, ~1e-3 "
     "relative error; off: exact fp32 as on the CPU)"},
    {"profile", OPT_BOOL, FIELD(profile), "false", "", NULL, 0, "parallel",
     "time every kernel and transfer by phase (gemm, attention, loss, element-wise, "
     "optimizer, grad norm, memory, comm): a table at the end, \"phases\" in the --log"},

    {"param-dtype", OPT_STR, FIELD(param_dtype), "fp32", "NAME", k_param_dtypes, 0, "memory",
     "parameters, gradients and activations; bf16 keeps fp32 master weights in the optimizer "
     "(bf16: `zerotrain memory` only until the GPU backend)"},
    {"mem-limit", OPT_STR, FIELD(mem_limit), "", "BYTES", NULL, 0, "memory",
     "memory one rank may use, e.g. 16G or 512M (binary units); a run predicted to need more "
     "stops before allocating (if not set, train checks the machine's available memory)"},
    {"ranks-per-node", OPT_INT, FIELD(ranks_per_node), "0", "N", NULL, 0, "memory",
     "`zerotrain memory`: consecutive ranks sharing one machine (0 = all; sizes the MPI "
     "staging windows)"},
};
#define N_OPTS ((int)(sizeof k_opts / sizeof k_opts[0]))

// A preset is a config holding only the shape fields; the table's from_preset flag
// says which fields to copy, so the shape keys are named in one place.
typedef struct {
    const char *name;
    zt_config shape;
} preset;

static const preset k_presets[] = {
    // byte-level demo: trains in seconds on a CPU
    {"tiny", {.n_layer = 4, .n_head = 4, .n_embd = 128, .vocab = 256, .n_ctx = 256}},
    {"gpt2", {.n_layer = 12, .n_head = 12, .n_embd = 768, .vocab = 50257, .n_ctx = 1024}},
    {"gpt2-medium",
     {.n_layer = 24, .n_head = 16, .n_embd = 1024, .vocab = 50257, .n_ctx = 1024}},
    {"gpt2-large",
     {.n_layer = 36, .n_head = 20, .n_embd = 1280, .vocab = 50257, .n_ctx = 1024}},
    {"gpt2-xl", {.n_layer = 48, .n_head = 25, .n_embd = 1600, .vocab = 50257, .n_ctx = 1024}},
};
#define N_PRESETS ((int)(sizeof k_presets / sizeof k_presets[0]))

// ---------------------------------------------------------------- lookup

static const opt_desc *find_opt(const char *name, size_t len) {
    for (int i = 0; i < N_OPTS; i++)
        if (strlen(k_opts[i].name) == len && strncmp(k_opts[i].name, name, len) == 0)
            return &k_opts[i];
    return NULL;
}

// Levenshtein distance, for "did you mean". Inputs longer than 63 are not worth a
// suggestion and return a large distance.
static int edit_distance(const char *a, size_t na, const char *b) {
    size_t nb = strlen(b);
    if (na > 63 || nb > 63) return INT_MAX;
    int row[64];
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

// The closest option name within distance 3, or NULL. The distance must also be
// below the typed length, so "--q" is not "corrected" to "--dp".
static const char *suggest(const char *name, size_t len, int with_config) {
    const char *best = NULL;
    int best_d = 4;
    for (int i = 0; i <= N_OPTS; i++) {
        const char *cand = i < N_OPTS ? k_opts[i].name : with_config ? "config" : NULL;
        if (!cand) break;
        int d = edit_distance(name, len, cand);
        if (d < best_d && d < (int)len) {
            best_d = d;
            best = cand;
        }
    }
    return best;
}

// ---------------------------------------------------------------- setting values

static zt_status set_string(zt_config *cfg, const opt_desc *o, const char *s,
                            const char *where) {
    size_t n = strlen(s);
    if (n == 0) // the usual cause: an unset shell variable; "" must not mean "not given"
        return zt_errorf("%s is empty: give it a value, or leave it out for its default", where);
    if (n >= o->size)
        return zt_errorf("%s: the value is %zu characters long, but %s holds at most %zu: "
                         "use a shorter value",
                         where, n, o->name, o->size - 1);
    memcpy((char *)cfg + o->offset, s, n + 1);
    return ZT_OK;
}

// Parses a flag value (or a default) for option `o`; `where` names it in messages
// ("--lr"). Rejects empty text, leading spaces, trailing characters and overflow.
static zt_status set_from_text(zt_config *cfg, const opt_desc *o, const char *s,
                               const char *where) {
    void *field = (char *)cfg + o->offset;
    char *end = NULL;
    switch (o->type) {
    case OPT_STR: return set_string(cfg, o, s, where);
    case OPT_BOOL:
        if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0) {
            *(int *)field = 1;
        } else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0) {
            *(int *)field = 0;
        } else {
            return zt_errorf("%s: '%s' is not a bool: write --%s, --%s=true or --%s=false",
                             where, s, o->name, o->name, o->name);
        }
        return ZT_OK;
    case OPT_INT:
    case OPT_U64: {
        const char *kind = o->type == OPT_INT ? "an integer" : "a non-negative integer";
        // strtoull silently wraps "-1" to 2^64-1, so a sign is checked by hand.
        if (!*s || isspace((unsigned char)*s) || (o->type == OPT_U64 && *s == '-'))
            return zt_errorf("%s: '%s' is not %s: write a whole number, e.g. --%s %s", where, s,
                             kind, o->name, o->def);
        errno = 0;
        long long v = 0;
        unsigned long long u = 0;
        if (o->type == OPT_INT)
            v = strtoll(s, &end, 10);
        else
            u = strtoull(s, &end, 10);
        if (end == s)
            return zt_errorf("%s: '%s' is not %s: write a whole number, e.g. --%s %s", where, s,
                             kind, o->name, o->def);
        if (*end)
            return zt_errorf("%s: '%s' has '%s' after the number: write %s only, e.g. --%s %s",
                             where, s, end, kind, o->name, o->def);
        if (errno == ERANGE || (o->type == OPT_INT && (v < INT_MIN || v > INT_MAX)))
            return zt_errorf("%s: %s is out of range for %s", where, s,
                             o->type == OPT_INT ? "an int" : "a 64-bit unsigned integer");
        if (o->type == OPT_INT)
            *(int *)field = (int)v;
        else
            *(uint64_t *)field = (uint64_t)u;
        return ZT_OK;
    }
    case OPT_FLOAT: {
        if (!*s || isspace((unsigned char)*s))
            return zt_errorf("%s: '%s' is not a number: write e.g. --%s %s", where, s, o->name,
                             o->def);
        // errno is not consulted: ERANGE on underflow is harmless (the value rounds to 0
        // or a denormal and validation judges it); overflow shows as a non-finite value.
        double v = strtod(s, &end);
        if (end == s)
            return zt_errorf("%s: '%s' is not a number: write e.g. --%s %s", where, s, o->name,
                             o->def);
        if (*end)
            return zt_errorf("%s: '%s' has '%s' after the number: write a number only, "
                             "e.g. --%s %s",
                             where, s, end, o->name, o->def);
        if (!isfinite(v) || fabs(v) > FLT_MAX)
            return zt_errorf("%s: %s is not a finite 32-bit float: write a number of at most "
                             "3.4e38 in size, e.g. --%s %s", where, s, o->name, o->def);
        if (v != 0.0 && (float)v == 0.0f) // "(got 0)" from validation would be a puzzle
            return zt_errorf("%s: %s is too small for a 32-bit float (it would be 0): write "
                             "0, or a number of at least 1.2e-38 in size", where, s);
        *(float *)field = (float)v;
        return ZT_OK;
    }
    }
    ZT_ASSERTF(0, "option %s has an unknown type %d", o->name, (int)o->type);
}

static const char *json_type_name(const cJSON *it) {
    if (cJSON_IsBool(it)) return "a bool";
    if (cJSON_IsNull(it)) return "null";
    if (cJSON_IsNumber(it)) return "a number";
    if (cJSON_IsString(it)) return "a string";
    if (cJSON_IsArray(it)) return "an array";
    if (cJSON_IsObject(it)) return "an object";
    return "an invalid value";
}

// Sets option `o` from a JSON value. Numbers must be JSON numbers (a quoted "8" is a
// mistake worth reporting, not guessing at), integers integral and in range.
static zt_status set_from_json(zt_config *cfg, const opt_desc *o, const cJSON *it,
                               const char *where) {
    void *field = (char *)cfg + o->offset;
    switch (o->type) {
    case OPT_STR:
        if (!cJSON_IsString(it) || !it->valuestring)
            return zt_errorf("%s must be a string, got %s: write \"%s\": \"%s\"", where,
                             json_type_name(it), o->name, o->def[0] ? o->def : "...");
        return set_string(cfg, o, it->valuestring, where);
    case OPT_BOOL:
        if (!cJSON_IsBool(it))
            return zt_errorf("%s must be true or false, got %s", where, json_type_name(it));
        *(int *)field = cJSON_IsTrue(it) ? 1 : 0;
        return ZT_OK;
    case OPT_INT:
    case OPT_U64: {
        const char *kind = o->type == OPT_INT ? "an integer" : "a non-negative integer";
        if (!cJSON_IsNumber(it))
            return zt_errorf("%s must be %s (a JSON number, unquoted), got %s: write \"%s\": %s",
                             where, kind, json_type_name(it), o->name, o->def);
        double v = it->valuedouble;
        if (!isfinite(v) || v != floor(v))
            return zt_errorf("%s must be %s, got %g", where, kind, v);
        if (o->type == OPT_INT) {
            if (v < INT_MIN || v > INT_MAX)
                return zt_errorf("%s: %.17g is out of range for an int", where, v);
            *(int *)field = (int)v;
        } else {
            // JSON numbers arrive as doubles; above 2^53 the file's digits are already lost.
            if (v < 0 || v > 9007199254740992.0)
                return zt_errorf("%s: %.17g is outside [0, 2^53], where a JSON number is exact: "
                                 "pass larger values with --%s",
                                 where, v, o->name);
            *(uint64_t *)field = (uint64_t)v;
        }
        return ZT_OK;
    }
    case OPT_FLOAT:
        if (!cJSON_IsNumber(it))
            return zt_errorf("%s must be a number (unquoted), got %s: write \"%s\": %s", where,
                             json_type_name(it), o->name, o->def);
        if (!isfinite(it->valuedouble) || fabs(it->valuedouble) > FLT_MAX)
            return zt_errorf("%s: %g is not a finite 32-bit float", where, it->valuedouble);
        *(float *)field = (float)it->valuedouble;
        return ZT_OK;
    }
    ZT_ASSERTF(0, "option %s has an unknown type %d", o->name, (int)o->type);
}

// ---------------------------------------------------------------- the config file

// Reads the whole file into a NUL-terminated buffer the caller frees. Reads in a loop
// rather than trusting ftell, so pipes and /dev/fd paths work too.
static zt_status read_whole_file(const char *path, char **out, size_t *out_len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return zt_errorf("cannot open config file %s: %s: check the path given to --config",
                         path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ZT_ASSERTF(buf, "out of memory reading %s", path);
    for (;;) {
        if (len + 1 == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            ZT_ASSERTF(nb, "out of memory reading %s", path);
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0) break;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        free(buf);
        return zt_errorf("cannot read config file %s: %s: --config needs a readable JSON file",
                         path, strerror(err));
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return ZT_OK;
}

static zt_status apply_json_object(zt_config *cfg, const cJSON *root, const char *path,
                                   unsigned char *set) {
    for (const cJSON *it = root->child; it; it = it->next) {
        const char *key = it->string ? it->string : "";
        // a key twice in one file is an editing slip (flags may repeat: the last wins)
        for (const cJSON *before = root->child; before != it; before = before->next)
            if (before->string && strcmp(before->string, key) == 0)
                return zt_errorf("config file %s: key \"%s\" appears twice: keep one", path,
                                 key);
        if (strcmp(key, "config") == 0)
            return zt_errorf("config file %s: key \"config\" is not allowed in a config file "
                             "(files do not include other files): remove it",
                             path);
        const opt_desc *o = find_opt(key, strlen(key));
        if (!o) {
            const char *s = suggest(key, strlen(key), 0);
            if (s)
                return zt_errorf("config file %s: unknown key \"%s\"; did you mean \"%s\"? "
                                 "(keys are the flag names without \"--\"; zerotrain --help "
                                 "lists them)",
                                 path, key, s);
            return zt_errorf("config file %s: unknown key \"%s\" (keys are the flag names "
                             "without \"--\"; zerotrain --help lists them)",
                             path, key);
        }
        char where[ZT_PATH_MAX + 64];
        snprintf(where, sizeof where, "config file %s: key \"%s\"", path, o->name);
        ZT_TRY(set_from_json(cfg, o, it, where));
        set[o - k_opts] = 1;
    }
    return ZT_OK;
}

static zt_status apply_config_file(zt_config *cfg, const char *path, unsigned char *set) {
    if (!path[0]) return zt_errorf("--config is empty: write --config FILE.json");
    char *buf = NULL;
    size_t len = 0;
    ZT_TRY(read_whole_file(path, &buf, &len));
    if (memchr(buf, '\0', len)) {
        free(buf);
        return zt_errorf("config file %s contains a NUL byte: it must be a JSON text file", path);
    }
    if (buf[strspn(buf, " \t\r\n")] == '\0') {
        free(buf);
        return zt_errorf("config file %s is empty: write a JSON object such as {\"steps\": 100}",
                         path);
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(buf, &end, 1);
    if (!root) {
        // cJSON reports where it stopped; turn that into a line and column.
        if (!end || end < buf || end > buf + len) end = buf + len;
        int line = 1, col = 1;
        for (const char *p = buf; p < end; p++) {
            if (*p == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        // Quote the rest of the offending line (at most 20 characters) for context.
        int near = (int)strcspn(end, "\r\n");
        if (near > 20) near = 20;
        zt_status st = zt_errorf("config file %s is not valid JSON: error at line %d, column %d "
                                 "(%s%.*s%s): fix the syntax there",
                                 path, line, col, near ? "near \"" : "at the end of the line",
                                 near, end, near ? "\"" : "");
        free(buf);
        return st;
    }
    zt_status st = ZT_OK;
    if (!cJSON_IsObject(root))
        st = zt_errorf("config file %s: the top level must be a JSON object such as "
                       "{\"steps\": 100}, got %s",
                       path, json_type_name(root));
    else
        st = apply_json_object(cfg, root, path, set);
    cJSON_Delete(root);
    free(buf);
    return st;
}

// ---------------------------------------------------------------- flags

typedef struct {
    const opt_desc *opt; // NULL for --config
    const char *value;
} flag_arg;

// Reads the flag at argv[*i] (and its value) and advances *i past them. Values given
// as the next argument may not start with "--": that is almost always a forgotten
// value, as in `--data --steps 10`.
static zt_status next_flag(int argc, char **argv, int *i, flag_arg *f) {
    const char *a = argv[*i];
    // The command answers --help before parsing; reaching here means it stood among
    // other options, and "did you mean --seq?" would only confuse.
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
        return zt_errorf("%s is not a run option: run `zerotrain --help` on its own to list "
                         "the options",
                         a);
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0' || a[2] == '=') {
        // A bool flag takes no separate value; say so when that is the mistake.
        if (*i > 0 && strncmp(argv[*i - 1], "--", 2) == 0 && !strchr(argv[*i - 1], '=')) {
            const char *prev = argv[*i - 1] + 2;
            const opt_desc *po = find_opt(prev, strlen(prev));
            if (po && po->type == OPT_BOOL)
                return zt_errorf("unexpected argument '%s' after --%s: a bool flag takes no "
                                 "separate value; write --%s=%s",
                                 a, po->name, po->name, a);
        }
        return zt_errorf("unexpected argument '%s': options are written --name value or "
                         "--name=value (zerotrain --help lists them)",
                         a);
    }
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    int is_config = len == 6 && strncmp(name, "config", 6) == 0;
    const opt_desc *o = is_config ? NULL : find_opt(name, len);
    if (!is_config && !o) {
        const char *s = suggest(name, len, 1);
        if (s)
            return zt_errorf("unknown option --%.*s; did you mean --%s? (zerotrain --help "
                             "lists all)",
                             (int)len, name, s);
        return zt_errorf("unknown option --%.*s (zerotrain --help lists all)", (int)len, name);
    }
    f->opt = o;
    if (eq) {
        f->value = eq + 1;
        *i += 1;
    } else if (o && o->type == OPT_BOOL) {
        f->value = "true";
        *i += 1;
    } else {
        const char *nm = o ? o->name : "config";
        if (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0)
            return zt_errorf("option --%s is missing its value: write --%s %s", nm, nm,
                             o ? o->meta : "FILE");
        f->value = argv[*i + 1];
        *i += 2;
    }
    return ZT_OK;
}

static void set_defaults(zt_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < N_OPTS; i++) {
        if (k_opts[i].type == OPT_STR && !k_opts[i].def[0]) continue; // unset: "" (memset)
        zt_status st = set_from_text(cfg, &k_opts[i], k_opts[i].def, k_opts[i].name);
        ZT_ASSERTF(st == ZT_OK, "bad default for --%s: %s", k_opts[i].name, zt_error_message());
    }
}

// Bit of a shape key (or "model") in zt_config.shape_given.
static int shape_bit(const char *name) {
    static const char *const keys[] = {"model", "n-layer", "n-head", "n-embd", "vocab", "n-ctx"};
    for (int i = 0; i < 6; i++)
        if (strcmp(name, keys[i]) == 0) return i;
    ZT_ASSERTF(0, "%s is not a shape key", name);
}

// Copies the preset's shape into every shape key not given explicitly.
static zt_status apply_preset(zt_config *cfg, const unsigned char *set) {
    const preset *p = NULL;
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(cfg->model, k_presets[i].name) == 0) p = &k_presets[i];
    if (!p) {
        char names[256] = "";
        for (int i = 0; i < N_PRESETS; i++) {
            size_t n = strlen(names);
            snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", k_presets[i].name);
        }
        return zt_errorf("--model '%s' is not a preset: use one of %s (--n-layer, --n-head, "
                         "--n-embd, --vocab and --n-ctx then override its shape)",
                         cfg->model, names);
    }
    for (int i = 0; i < N_OPTS; i++) {
        const opt_desc *o = &k_opts[i];
        if (o->from_preset && !set[i])
            memcpy((char *)cfg + o->offset, (const char *)&p->shape + o->offset, o->size);
    }
    return ZT_OK;
}

zt_status zt_config_parse(zt_config *cfg, int argc, char **argv) {
    unsigned char set[N_OPTS] = {0}; // given explicitly (file or flag): the preset keeps off
    set_defaults(cfg);

    // Pass 1 finds --config and checks every flag's spelling: the file is read before
    // any flag applies, so flags override it wherever --config stands.
    const char *config_path = NULL;
    for (int i = 0; i < argc;) {
        flag_arg f;
        ZT_TRY(next_flag(argc, argv, &i, &f));
        if (!f.opt) config_path = f.value;
    }
    if (config_path) {
        ZT_TRY(apply_config_file(cfg, config_path, set));
        snprintf(cfg->config, sizeof cfg->config, "%s", config_path);
    }

    // Pass 2 applies the flags in order, so a repeated flag takes its last value.
    for (int i = 0; i < argc;) {
        flag_arg f;
        ZT_TRY(next_flag(argc, argv, &i, &f));
        if (!f.opt) continue;
        char where[64];
        snprintf(where, sizeof where, "--%s", f.opt->name);
        ZT_TRY(set_from_text(cfg, f.opt, f.value, where));
        set[f.opt - k_opts] = 1;
    }
    cfg->shape_given = 0;
    for (int i = 0; i < N_OPTS; i++)
        if (set[i] && (k_opts[i].from_preset || strcmp(k_opts[i].name, "model") == 0))
            cfg->shape_given |= 1u << shape_bit(k_opts[i].name);
    return apply_preset(cfg, set);
}

// ---------------------------------------------------------------- validation

#define NEED(cond, ...)                                  \
    do {                                                 \
        if (!(cond)) return zt_errorf(__VA_ARGS__);      \
    } while (0)

zt_status zt_config_validate(const zt_config *c) {
    // Written as !(x >= lo) where a float is involved, so NaN fails too.
    NEED(c->n_layer >= 1, "--n-layer must be at least 1 (got %d)", c->n_layer);
    NEED(c->n_head >= 1, "--n-head must be at least 1 (got %d)", c->n_head);
    NEED(c->n_embd >= 1, "--n-embd must be at least 1 (got %d)", c->n_embd);
    NEED(c->vocab >= 1, "--vocab must be at least 1 (got %d)", c->vocab);
    NEED(c->n_ctx >= 1, "--n-ctx must be at least 1 (got %d)", c->n_ctx);
    // Upper bounds far above any trained GPT (GPT-3 175B: 96 layers, 12288 channels,
    // 2048 positions) keep every size in exact 64-bit and double arithmetic and bound the
    // planner's and the schedule's work (a partition is O(pp * layers^2)).
    NEED(c->n_layer <= ZT_MAX_LAYERS, "--n-layer %d exceeds %d: zerotrain supports at most "
         "%d transformer blocks", c->n_layer, ZT_MAX_LAYERS, ZT_MAX_LAYERS);
    NEED(c->n_embd <= ZT_MAX_EMBD, "--n-embd %d exceeds %d: zerotrain supports at most %d "
         "channels", c->n_embd, ZT_MAX_EMBD, ZT_MAX_EMBD);
    NEED(c->n_ctx <= ZT_MAX_CTX, "--n-ctx %d exceeds %d: zerotrain supports at most %d "
         "positions", c->n_ctx, ZT_MAX_CTX, ZT_MAX_CTX);
    NEED(c->n_embd % c->n_head == 0,
         "n_embd %d is not divisible by n_head %d: choose --n-embd a multiple of --n-head",
         c->n_embd, c->n_head);
    // llm.c token files hold uint16 tokens, which any larger vocabulary also accepts (a
    // 250k multilingual head trains on them); the bound only keeps Vp * C in range
    NEED(c->vocab <= (1 << 24), "--vocab %d exceeds 16777216 (2^24); use a smaller vocabulary",
         c->vocab);

    NEED(c->micro_batch >= 1, "--micro-batch must be at least 1 (got %d)", c->micro_batch);
    NEED(c->seq >= 1, "--seq must be at least 1 (got %d)", c->seq);
    // the kernels index a micro-batch's tokens with int
    NEED((long long)c->micro_batch * c->seq <= 0x7fffffff,
         "--micro-batch %d x --seq %d = %lld tokens per micro-batch exceeds 2^31 - 1: lower "
         "--micro-batch and raise --grad-accum", c->micro_batch, c->seq,
         (long long)c->micro_batch * c->seq);
    NEED(c->seq <= c->n_ctx, "--seq %d exceeds the model's n_ctx %d: lower --seq or raise --n-ctx",
         c->seq, c->n_ctx);
    NEED(c->grad_accum >= 1, "--grad-accum must be at least 1 (got %d)", c->grad_accum);
    NEED(c->grad_accum <= ZT_MAX_GRAD_ACCUM, "--grad-accum %d exceeds %d: raise --micro-batch "
         "instead", c->grad_accum, ZT_MAX_GRAD_ACCUM);
    NEED(c->steps >= 1, "--steps must be at least 1 (got %d)", c->steps);
    NEED(c->ckpt_every >= 0 && c->ckpt_keep >= 0,
         "--ckpt-every (%d) and --ckpt-keep (%d) must be 0 or more", c->ckpt_every, c->ckpt_keep);
    NEED(c->ckpt_dir[0] || (c->ckpt_every == 0 && c->ckpt_keep == 0),
         "--ckpt-every and --ckpt-keep need --ckpt-dir DIR (where the checkpoints go)");

    // the block must divide the tensor alignment (a block never straddles two tensors or
    // two ZeRO shards): the same words as --help
    NEED(c->optim_block >= 64 && c->optim_block <= 256 &&
             (c->optim_block & (c->optim_block - 1)) == 0,
         "--optim-block %d: use a power of two, 64-256 (64, 128 or 256)", c->optim_block);
    NEED(c->lr > 0 && isfinite(c->lr), "--lr must be positive and finite (got %g)", c->lr);
    NEED(c->lr_final_frac >= 0 && c->lr_final_frac <= 1,
         "--lr-final-frac must be in [0, 1] (got %g): it is the final learning rate as a "
         "fraction of --lr",
         c->lr_final_frac);
    NEED(c->warmup >= 0, "--warmup must be at least 0 (got %d)", c->warmup);
    NEED(c->optim_min_8bit >= 0,
         "--optim-min-8bit must be at least 0 (got %d): tensors of fewer elements keep fp32 "
         "state; 0 keeps every tensor's state in 8 bits", c->optim_min_8bit);
    NEED(c->weight_decay >= 0 && isfinite(c->weight_decay),
         "--weight-decay must be at least 0 and finite (got %g)", c->weight_decay);
    NEED(c->beta1 >= 0 && c->beta1 < 1, "--beta1 must be in [0, 1) (got %g)", c->beta1);
    NEED(c->beta2 >= 0 && c->beta2 < 1, "--beta2 must be in [0, 1) (got %g)", c->beta2);
    NEED(c->eps > 0 && isfinite(c->eps), "--eps must be positive and finite (got %g)", c->eps);
    NEED(c->grad_clip >= 0 && isfinite(c->grad_clip),
         "--grad-clip must be at least 0 and finite (got %g; 0 turns clipping off)",
         c->grad_clip);

    NEED(c->val_every >= 0, "--val-every must be at least 0 (got %d; 0 = never)", c->val_every);
    NEED(c->val_batches >= 1, "--val-batches must be at least 1 (got %d)", c->val_batches);
    NEED(c->sample_every >= 0, "--sample-every must be at least 0 (got %d; 0 = never)",
         c->sample_every);
    NEED(c->sample_len >= 1, "--sample-len must be at least 1 (got %d)", c->sample_len);

    NEED(c->zero == 0 || c->zero == 1, "--zero must be 0 or 1 (got %d)", c->zero);
    NEED(c->dp >= 0, "--dp must be at least 0 (got %d; 0 = derived from the world size)",
         c->dp);
    NEED(c->pp >= 1, "--pp must be at least 1 (got %d)", c->pp);
    NEED(c->tp >= 1, "--tp must be at least 1 (got %d)", c->tp);
    NEED(c->loss_chunk >= 0, "--loss-chunk must be at least 0 (got %d; 0 = automatic)",
         c->loss_chunk);
    NEED(c->threads >= 0, "--threads must be at least 0 (got %d; 0 = runtime default)",
         c->threads);
    NEED(c->threads <= ZT_MAX_THREADS, "--threads %d exceeds %d OpenMP threads per rank: use "
         "at most one thread per core", c->threads, ZT_MAX_THREADS);
    NEED(c->peak_tflops >= 0 && isfinite(c->peak_tflops),
         "--peak-tflops must be at least 0 and finite (got %g; 0 = no MFU)", c->peak_tflops);
    NEED(c->ranks_per_node >= 0, "--ranks-per-node must be at least 0 (got %d; 0 = all ranks "
         "on one machine)", c->ranks_per_node);
    if (c->mem_limit[0]) {
        double bytes;
        ZT_TRY(zt_config_parse_bytes(c->mem_limit, "--mem-limit", &bytes));
    }

    // String options with a fixed set of values, from the table.
    for (int i = 0; i < N_OPTS; i++) {
        const opt_desc *o = &k_opts[i];
        if (!o->choices) continue;
        const char *v = (const char *)c + o->offset;
        int ok = 0;
        for (const char *const *ch = o->choices; *ch; ch++) ok |= strcmp(v, *ch) == 0;
        if (!ok) {
            char list[128] = "";
            for (const char *const *ch = o->choices; *ch; ch++) {
                size_t n = strlen(list);
                snprintf(list + n, sizeof list - n, "%s%s", ch == o->choices ? "" : ", ", *ch);
            }
            return zt_errorf("--%s '%s' is not known: use one of %s", o->name, v, list);
        }
    }
    // --partition: a method name, per-type weights, or unit ranges. Only the syntax is
    // checked here; the ranges are checked against the model when stages are built.
    const char *p = c->partition;
    int named = !strcmp(p, "uniform") || !strcmp(p, "parameters") || !strcmp(p, "memory") ||
                !strncmp(p, "type:", 5);
    int ranges = p[0] != 0 && strspn(p, "0123456789:,") == strlen(p) && strchr(p, ':');
    NEED(named || ranges,
         "--partition '%s' is not known: use uniform, parameters, memory, "
         "type:embed:2|transformer:1 style weights, or unit ranges like 0:7,7:14", p);
    return ZT_OK;
}

#undef NEED

zt_status zt_config_check_trainable(const zt_config *c) {
    ZT_TRY(zt_backend_check(c->backend, &(zt_backend_options){.threads = c->threads,
                                                               .tf32 = c->tf32}));
    if (strcmp(c->param_dtype, "fp32") != 0)
        return zt_errorf("--param-dtype %s: training runs fp32 parameters (CPU and CUDA); 16-bit "
                         "parameters with fp32 master weights are not built yet (plan "
                         "them with `zerotrain memory --param-dtype %s`); use --param-dtype fp32",
                         c->param_dtype, c->param_dtype);
    return ZT_OK;
}

zt_status zt_config_parse_bytes(const char *text, const char *what, double *bytes) {
    const char *s = text;
    char *end = NULL;
    // strtod would accept "inf", "nan" and hex: only plain decimals here
    int ok = (isdigit((unsigned char)*s) || *s == '.') && !strpbrk(s, "xX");
    double v = ok ? strtod(s, &end) : 0.0;
    if (!ok || end == s)
        return zt_errorf("%s '%s' is not a byte count: write e.g. %s 16G (K, M, G, T: binary "
                         "units) or a number of bytes",
                         what, text, what);
    double unit = 1.0;
    const char *u = end;
    switch (toupper((unsigned char)*u)) {
    case 'K': unit = 1024.0; u++; break;
    case 'M': unit = 1048576.0; u++; break;
    case 'G': unit = 1073741824.0; u++; break;
    case 'T': unit = 1099511627776.0; u++; break;
    default: break;
    }
    if (unit > 1.0 && (u[0] == 'i' || u[0] == 'I') && (u[1] == 'B' || u[1] == 'b')) u += 2;
    else if (u[0] == 'B' || u[0] == 'b') u++;
    if (*u)
        return zt_errorf("%s '%s' has '%s' after the number: write e.g. %s 16G or %s 512M",
                         what, text, u, what, what);
    if (!(v > 0) || !isfinite(v * unit))
        return zt_errorf("%s '%s' must be a positive byte count, e.g. %s 16G", what, text, what);
    *bytes = v * unit;
    return ZT_OK;
}

double zt_config_mem_limit(const zt_config *c) {
    double bytes = 0.0;
    if (c->mem_limit[0] && zt_config_parse_bytes(c->mem_limit, "--mem-limit", &bytes) != ZT_OK)
        return 0.0; // zt_config_validate refused it already
    return bytes;
}

zt_status zt_config_adopt_shape(zt_config *cfg, const zt_model_shape *file, int head_known,
                                const char *what) {
    const preset *p = NULL;
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(cfg->model, k_presets[i].name) == 0) p = &k_presets[i];
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
    if (!head_known && !((cfg->shape_given >> 2) & 1u)) {
        // tensor shapes do not hold the head count: GPT-2's heads are 64 wide
        if (cfg->n_embd % 64)
            return zt_errorf("%s has no config.json and n_embd %d is not a multiple of GPT-2's "
                             "head size 64: give --n-head", what, cfg->n_embd);
        cfg->n_head = cfg->n_embd / 64;
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

// ---------------------------------------------------------------- comparing

const char *zt_config_first_difference(const zt_config *a, const zt_config *b) {
    for (int i = 0; i < N_OPTS; i++) {
        const opt_desc *o = &k_opts[i];
        // a path may differ between machines (a node-local copy); what it holds is checked
        // where it is read (a data file's length, a checkpoint's manifest)
        if (!strcmp(o->meta, "PATH") || !strcmp(o->meta, "DIR")) continue;
        const char *x = (const char *)a + o->offset, *y = (const char *)b + o->offset;
        // strings up to their end (parse leaves the bytes after it unspecified)
        if (o->type == OPT_STR ? strncmp(x, y, o->size) != 0 : memcmp(x, y, o->size) != 0)
            return o->name;
    }
    return NULL;
}

// ---------------------------------------------------------------- help

static void help_line(FILE *f, const char *name, const char *meta, const char *help) {
    char left[64];
    snprintf(left, sizeof left, "--%s%s%s", name, meta[0] ? " " : "", meta);
    fprintf(f, "  %-22s %s", left, help);
}

void zt_config_print_help(FILE *f) {
    fprintf(f, "options (a JSON file given by --config takes the same keys without \"--\";\n"
               "flags override it wherever they stand):\n");
    help_line(f, "config", "FILE", "read options from this JSON file first\n");
    const char *group = NULL;
    for (int i = 0; i < N_OPTS; i++) {
        const opt_desc *o = &k_opts[i];
        if (!group || strcmp(group, o->group) != 0) {
            group = o->group;
            fprintf(f, "\n%s:\n", group);
        }
        help_line(f, o->name, o->meta, o->help);
        if (o->choices) {
            fputs(": ", f);
            for (const char *const *ch = o->choices; *ch; ch++)
                fprintf(f, "%s%s", ch == o->choices ? "" : " | ", *ch);
        }
        if (o->from_preset)
            fputs(" (default from --model)\n", f);
        else
            fprintf(f, o->def[0] ? " (default %s)\n" : " (not set by default)\n", o->def);
        if (o->offset == offsetof(zt_config, model)) {
            for (int p = 0; p < N_PRESETS; p++) {
                const zt_config *s = &k_presets[p].shape;
                fprintf(f, "  %-22s   %-12s L=%d NH=%d C=%d V=%d n_ctx=%d\n", "", k_presets[p].name,
                        s->n_layer, s->n_head, s->n_embd, s->vocab, s->n_ctx);
            }
        }
    }
}
