// Finding, verifying and loading a sharded checkpoint: `latest` or the newest complete
// step, the manifest, every file's checksum, and each rank's state fetched through the
// global index map into whatever layout it runs now; and the export to one Hugging Face
// directory. The format: ckpt_internal.h and docs/checkpoints.md.
#include "ckpt_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "hf_export.h"
#include "planner.h"
#include "quant8_math.h"
#include "rng.h"
#include "safetensors.h"

// ---------------------------------------------------------------- finding and reading

// The newest complete step-N in `dir` (holding manifest.json), -1 if none; what it passes
// over is said once (say): interrupted saves, step directories without a manifest.
static int newest_complete(DIR *d, const char *dir, int say) {
    char p[2 * PATHN];
    int best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        int st;
        char tail;
        if (strncmp(e->d_name, "tmp-step-", 9) == 0) {
            if (say)
                printf("checkpoint: ignoring %s/%s: an incomplete save (interrupted before its "
                       "commit)\n", dir, e->d_name);
            continue;
        }
        if (sscanf(e->d_name, "step-%d%c", &st, &tail) != 1) continue;
        snprintf(p, sizeof p, "%s/%s/manifest.json", dir, e->d_name);
        if (!ckpt_file_exists(p)) {
            if (say) printf("checkpoint: ignoring %s/%s: no manifest.json\n", dir, e->d_name);
            continue;
        }
        if (st > best) best = st;
    }
    return best;
}

// What `dir`/latest names when that is a complete checkpoint (name and its step); 0 when it
// names none (said once); -1 when it names anything but a step-N of `dir`.
static int latest_names(const char *dir, char *name, size_t size, int *step, int say) {
    char p[PATHN + 16], q[2 * PATHN];
    snprintf(p, sizeof p, "%s/latest", dir);
    char *lt = zt_read_file(p, NULL);
    if (!lt && errno != ENOENT && say)
        printf("checkpoint: ignoring %s: %s\n", p, zt_file_error(errno));
    int ok = 0;
    char tail;
    if (lt && sscanf(lt, "%255s", name) == 1 && size > 255) {
        // only a step-N of this directory: "../other/step-5" or "/elsewhere" resumed a
        // checkpoint outside the one given
        if (sscanf(name, "step-%d%c", step, &tail) != 1 || *step < 0) {
            free(lt);
            return -1;
        }
        snprintf(q, sizeof q, "%s/%s/manifest.json", dir, name);
        ok = ckpt_file_exists(q);
        if (!ok && say) printf("checkpoint: %s names %s, which is not complete\n", p, name);
    }
    free(lt);
    return ok;
}

// Resolves `dir` to a complete step directory (one holding manifest.json): dir itself, or
// its newest complete step-N. `latest` is written after the commit (the rename to step-N),
// so a save stopped between the two leaves a complete step-N newer than `latest`: that one
// is the run's newest checkpoint, committed but not yet pointed to. `latest` is taken as
// it is only when nothing newer is complete (or it names a directory that is not step-N).
static zt_status resolve(const char *dir, char *out, size_t size, int say) {
    char p[2 * PATHN];
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    if (ckpt_file_exists(p)) {
        snprintf(out, size, "%s", dir);
        return ZT_OK;
    }
    DIR *d = opendir(dir);
    if (!d) return zt_errorf("cannot open the checkpoint directory %s: %s", dir, strerror(errno));
    int best = newest_complete(d, dir, say);
    closedir(d);
    char name[256];
    int lstep = -1, named = latest_names(dir, name, sizeof name, &lstep, say);
    if (named < 0)
        return zt_errorf("%s/latest names %s, not a step-N directory of %s: a checkpoint "
                         "directory's latest names one of its own steps; write the step there "
                         "(echo step-N > %s/latest) or remove the file", dir, name, dir, dir);
    if (named && lstep >= best) {
        snprintf(out, size, "%s/%s", dir, name);
        return ZT_OK;
    }
    if (best < 0)
        return zt_errorf("%s holds no complete checkpoint (no step-N/manifest.json)", dir);
    if (named && say)
        printf("checkpoint: %s/latest names %s, but step-%d is complete and newer (its save "
               "stopped after the commit, before updating latest): taking step-%d\n", dir,
               name, best, best);
    snprintf(out, size, "%s/step-%d", dir, best);
    return ZT_OK;
}

// The files' checksum: XXH3-64 since version 2, FNV-1a 64 in version 1 (verify only).
typedef enum { CK_XXH3_64, CK_FNV1A_64 } checksum_kind;

typedef struct {
    char dir[PATHN];
    cJSON *root;
    int version;
    checksum_kind checksum;
    int step, t, dp, pp, tp, zero;
    uint64_t samples;
    zt_model_shape shape;
    int n_files;
    char (*fname)[128];    // (n_files)
    uint64_t *fbytes, *fhash;
} manifest;

// A whole number in [0, INT_MAX] (every count and index a manifest holds).
static int jint(const cJSON *o, const char *k, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= INT_MAX) ||
        v->valuedouble != (double)(int)v->valuedouble)
        return 0;
    *out = (int)v->valuedouble;
    return 1;
}

// A whole byte or sample count in [0, 2^53] (exact in a JSON double).
static int juint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0) ||
        v->valuedouble != floor(v->valuedouble))
        return 0;
    *out = (uint64_t)v->valuedouble;
    return 1;
}

// 16 hexadecimal digits, as write_manifest writes a 64-bit digest.
static int jhex64(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsString(v) || strlen(v->valuestring) != 16 ||
        strspn(v->valuestring, "0123456789abcdefABCDEF") != 16)
        return 0;
    *out = strtoull(v->valuestring, NULL, 16);
    return 1;
}

static void manifest_free(manifest *m) {
    cJSON_Delete(m->root);
    free(m->fname);
    free(m->fbytes);
    free(m->fhash);
    memset(m, 0, sizeof *m);
}

// The manifest's text (*len bytes), checked against manifest.json.xxh3 when it has one
// (*sealed): a value edited after the save (samples: another data position; step, t, the
// layout) would be taken silently. Whether a manifest must have one depends on its version,
// checked once it is parsed (manifest_header).
static zt_status manifest_text(const char *dir, char **text, int *sealed) {
    char p[PATHN + 32], side[PATHN + 32];
    snprintf(p, sizeof p, "%s/" CKPT_MANIFEST, dir);
    snprintf(side, sizeof side, "%s/" CKPT_MANIFEST_SUM, dir);
    size_t len;
    *text = zt_read_file(p, &len);
    if (!*text) return zt_errorf("cannot read %s: %s", p, zt_file_error(errno));
    *sealed = 0;
    struct stat st;
    if (lstat(side, &st) != 0 && errno == ENOENT) return ZT_OK;
    char *sum = zt_read_file(side, NULL), hex[17] = "";
    int ok = sum && sscanf(sum, "%16[0-9a-f]", hex) == 1 && strlen(hex) == 16;
    free(sum);
    if (!ok)
        return zt_errorf("%s is damaged (not 16 hex digits and the name manifest.json): the "
                         "checkpoint's manifest cannot be verified; resume from another "
                         "checkpoint", side);
    unsigned long long h = XXH3_64bits(*text, len);
    if (h != strtoull(hex, NULL, 16))
        return zt_errorf("%s does not match its checksum in %s (XXH3-64 %016llx, recorded %s): "
                         "it was edited or damaged after the save, and its step or data "
                         "position cannot be trusted; resume from another checkpoint",
                         p, side, h, hex);
    *sealed = 1;
    return ZT_OK;
}

// Format, version and checksum keys; a version 3 manifest must have been sealed, an older
// one is read unverified with a note (say).
static zt_status manifest_header(manifest *m, const char *p, int sealed, int say,
                                 const char **hkey) {
    const cJSON *r = m->root, *fmt = cJSON_GetObjectItemCaseSensitive(r, "format");
    if (!cJSON_IsObject(r) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, CKPT_FORMAT) != 0)
        return zt_errorf("%s is corrupt or not a zerotrain checkpoint manifest", p);
    m->version = 0;
    jint(r, "version", &m->version);
    if (m->version < 1 || m->version > CKPT_VERSION)
        return zt_errorf("%s has format version %d; this zerotrain reads versions 1 to %d: "
                         "load it with the zerotrain that wrote it", p, m->version, CKPT_VERSION);
    if (m->version >= 3 && !sealed)
        return zt_errorf("%s has format version %d but no %s beside it: the checkpoint is "
                         "damaged or was edited; resume from another checkpoint", p, m->version,
                         CKPT_MANIFEST_SUM);
    if (m->version < 3 && say)
        printf("checkpoint: %s is format version %d, from before manifests were checksummed: "
               "its values are read unverified (its shard files are verified)\n", p, m->version);
    *hkey = "fnv1a64"; // a file's checksum key
    m->checksum = CK_FNV1A_64;
    if (m->version >= 2) {
        const cJSON *ck = cJSON_GetObjectItemCaseSensitive(r, "checksum");
        if (!cJSON_IsString(ck) || strcmp(ck->valuestring, CKPT_CHECKSUM) != 0)
            return zt_errorf("%s is corrupt: its \"checksum\" must be \"%s\" in format version %d",
                             p, CKPT_CHECKSUM, m->version);
        *hkey = "digest";
        m->checksum = CK_XXH3_64;
    }
    return ZT_OK;
}

// Every shard file's name, byte count and digest (under hkey).
static zt_status manifest_files(manifest *m, const char *p, const cJSON *fl, const char *hkey) {
    m->n_files = cJSON_GetArraySize(fl);
    m->fname = calloc((size_t)m->n_files + 1, sizeof *m->fname);
    m->fbytes = calloc((size_t)m->n_files + 1, sizeof *m->fbytes);
    m->fhash = calloc((size_t)m->n_files + 1, sizeof *m->fhash);
    ZT_ASSERT(m->fname && m->fbytes && m->fhash);
    for (int i = 0; i < m->n_files; i++) {
        const cJSON *f = cJSON_GetArrayItem(fl, i);
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(f, "name");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(f, "bytes");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(f, hkey);
        if (!cJSON_IsString(n) || !juint(b, &m->fbytes[i]) || !jhex64(h, &m->fhash[i]))
            return zt_errorf("%s is corrupt: files[%d] lacks a name, a whole byte count or a "
                             "%s of 16 hex digits", p, i, hkey);
        if (strchr(n->valuestring, '/') || strlen(n->valuestring) >= sizeof m->fname[i])
            return zt_errorf("%s is corrupt: files[%d] is named '%s', not a shard file name "
                             "in its directory", p, i, n->valuestring);
        snprintf(m->fname[i], sizeof m->fname[i], "%s", n->valuestring);
    }
    return ZT_OK;
}

// Values that must agree with each other: the world is the layout's product, the global
// batch is micro-batch x grad-accum x dp, and (version 3) the data position is where the
// run began plus a global batch per step since, and every writing rank left one file. A
// manifest passing its checksum fails these only by a writer's bug or a resealed edit.
static zt_status manifest_check(const manifest *m, const char *p) {
    const cJSON *r = m->root, *la = cJSON_GetObjectItemCaseSensitive(r, "layout");
    const cJSON *cf = cJSON_GetObjectItemCaseSensitive(r, "config");
    int world = 0, mb = 0, ga = 0, gb = 0;
    if (!jint(la, "world", &world) || (long long)m->dp * m->pp * m->tp != world)
        return zt_errorf("%s is corrupt: layout world is not dp %d x pp %d x tp %d", p, m->dp,
                         m->pp, m->tp);
    int has_batch = jint(cf, "micro_batch", &mb) && jint(cf, "grad_accum", &ga) &&
                    jint(cf, "global_batch", &gb);
    if (has_batch && (long long)mb * ga * m->dp != gb)
        return zt_errorf("%s is corrupt: config global_batch %d is not micro_batch %d x "
                         "grad_accum %d x dp %d", p, gb, mb, ga, m->dp);
    if (m->version < 3) return ZT_OK;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(r, "run_start");
    int step0 = 0;
    uint64_t samples0 = 0;
    if (!has_batch || !jint(rs, "step", &step0) ||
        !juint(cJSON_GetObjectItemCaseSensitive(rs, "samples"), &samples0) || step0 > m->step)
        return zt_errorf("%s is corrupt: it lacks the config's batch or run_start (step <= "
                         "%d, samples), which format version %d records", p, m->step,
                         m->version);
    uint64_t want = samples0 + (uint64_t)(m->step - step0) * (uint64_t)gb;
    if (m->samples != want)
        return zt_errorf("%s is corrupt: samples %llu, but its run began at step %d with %llu "
                         "samples and reads %d a step (global_batch), so step %d stands at %llu: "
                         "resume from another checkpoint", p, (unsigned long long)m->samples,
                         step0, (unsigned long long)samples0, gb, m->step,
                         (unsigned long long)want);
    int writers = m->zero ? world : m->pp * m->tp;
    if (m->n_files != writers)
        return zt_errorf("%s is corrupt: %d files listed, but %d ranks write one each (world %d, "
                         "zero %d)", p, m->n_files, writers, world, m->zero);
    return ZT_OK;
}

static zt_status manifest_read(manifest *m, const char *dir, int say) {
    memset(m, 0, sizeof *m);
    ZT_TRY(resolve(dir, m->dir, sizeof m->dir, say));
    char p[PATHN + 32], *text;
    snprintf(p, sizeof p, "%s/" CKPT_MANIFEST, m->dir);
    int sealed;
    zt_status s = manifest_text(m->dir, &text, &sealed);
    if (s == ZT_OK) m->root = cJSON_Parse(text);
    free(text);
    const char *hkey;
    ZT_TRY(s);
    ZT_TRY(manifest_header(m, p, sealed, say, &hkey));
    const cJSON *r = m->root;
    const cJSON *mo = cJSON_GetObjectItemCaseSensitive(r, "model");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(r, "optimizer");
    const cJSON *la = cJSON_GetObjectItemCaseSensitive(r, "layout");
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(r, "samples");
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(r, "files");
    int ok = jint(r, "step", &m->step) && juint(sa, &m->samples) && jint(op, "t", &m->t) &&
             jint(mo, "n_layer", &m->shape.n_layer) && jint(mo, "n_head", &m->shape.n_head) &&
             jint(mo, "n_embd", &m->shape.n_embd) && jint(mo, "vocab", &m->shape.vocab) &&
             jint(mo, "n_ctx", &m->shape.n_ctx) && jint(la, "dp", &m->dp) &&
             jint(la, "pp", &m->pp) && jint(la, "tp", &m->tp) && jint(la, "zero", &m->zero) &&
             cJSON_IsArray(fl);
    if (!ok) return zt_errorf("%s is corrupt: it lacks step, samples, model, optimizer, layout "
                              "or files, or one of them is not a whole number >= 0", p);
    if (m->t > m->step || m->dp < 1 || m->pp < 1 || m->tp < 1 || m->zero > 1)
        return zt_errorf("%s is corrupt: optimizer t %d with step %d, layout dp %d pp %d tp %d "
                         "zero %d (t <= step, degrees >= 1, zero 0 or 1)",
                         p, m->t, m->step, m->dp, m->pp, m->tp, m->zero);
    ZT_TRY(manifest_files(m, p, fl, hkey));
    return manifest_check(m, p);
}

zt_status zt_ckpt_peek(const char *dir, zt_model_shape *shape, int *step) {
    manifest m;
    zt_status s = manifest_read(&m, dir, 0);
    if (s == ZT_OK && shape) *shape = m.shape;
    if (s == ZT_OK && step) *step = m.step;
    manifest_free(&m);
    return s;
}

// Checks file i's size and checksum against the manifest, hashing as it reads (one pass).
static zt_status verify_file(const manifest *m, int i) {
    char p[PATHN + 160];
    snprintf(p, sizeof p, "%s/%s", m->dir, m->fname[i]);
    FILE *f = zt_fopen_regular(p);
    if (!f && errno == ENOENT)
        return zt_errorf("checkpoint file %s is missing: %s", p, strerror(errno));
    if (!f)
        return zt_errorf("checkpoint file %s is %s: the checkpoint is damaged; resume from "
                         "another", p, errno == EISDIR || errno == EINVAL ?
                         "not a regular file (a directory, a FIFO?)" : strerror(errno));
    int xxh = m->checksum == CK_XXH3_64;
    XXH3_state_t *st = xxh ? XXH3_createState() : NULL;
    ZT_ASSERT(!xxh || (st && XXH3_64bits_reset(st) == XXH_OK));
    uint64_t h = ZT_FNV1A_BASIS, n = 0;
    static unsigned char buf[1 << 20];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        if (xxh) ZT_ASSERT(XXH3_64bits_update(st, buf, got) == XXH_OK);
        else h = zt_hash_bytes(h, buf, got); // version 1 only: ~0.7 GB/s, byte by byte
        n += got;
    }
    fclose(f);
    if (xxh) {
        h = XXH3_64bits_digest(st);
        XXH3_freeState(st);
    }
    if (n != m->fbytes[i])
        return zt_errorf("checkpoint file %s is %s: %llu bytes, the manifest says %llu", p,
                         n < m->fbytes[i] ? "truncated" : "too long", (unsigned long long)n,
                         (unsigned long long)m->fbytes[i]);
    if (h != m->fhash[i])
        return zt_errorf("checkpoint file %s is corrupt: its %s checksum %016llx differs from "
                         "the manifest's %016llx", p, xxh ? "XXH3-64" : "FNV-1a 64",
                         (unsigned long long)h, (unsigned long long)m->fhash[i]);
    return ZT_OK;
}

// One segment of the index.
typedef struct {
    int file, entry, aentry; // file, tensor entry, absmax entry (8-bit codes; else -1)
    size_t g, n, phase, blk, rest;
} seg;

typedef struct {
    char name[64];
    char kind[8];
    seg *s;
    int n, cap;
} segset;

typedef struct {
    manifest man;
    zt_st_file *files;  // (man.n_files)
    segset *sets;
    int n_sets, cap_sets;
} ckpt_index;

static segset *find_set(ckpt_index *x, const char *name, const char *kind, int create) {
    for (int i = 0; i < x->n_sets; i++)
        if (strcmp(x->sets[i].name, name) == 0 && strcmp(x->sets[i].kind, kind) == 0)
            return &x->sets[i];
    if (!create) return NULL;
    if (x->n_sets == x->cap_sets) {
        x->cap_sets = x->cap_sets ? 2 * x->cap_sets : 64;
        x->sets = realloc(x->sets, (size_t)x->cap_sets * sizeof *x->sets);
        ZT_ASSERT(x->sets);
    }
    segset *s = &x->sets[x->n_sets++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->kind, sizeof s->kind, "%s", kind);
    return s;
}

static int seg_cmp(const void *a, const void *b) {
    const seg *x = a, *y = b;
    return x->g < y->g ? -1 : x->g > y->g;
}

static void index_free(ckpt_index *x) {
    for (int i = 0; x->files && i < x->man.n_files; i++) zt_st_close(&x->files[i]);
    free(x->files);
    for (int i = 0; i < x->n_sets; i++) free(x->sets[i].s);
    free(x->sets);
    manifest_free(&x->man);
    memset(x, 0, sizeof *x);
}

// Opens every file and indexes its segments by (tensor, kind), sorted by global start.
static zt_status index_open(ckpt_index *x) {
    manifest *m = &x->man;
    x->files = calloc((size_t)m->n_files + 1, sizeof *x->files);
    ZT_ASSERT(x->files);
    for (int i = 0; i < m->n_files; i++) {
        char p[PATHN + 160];
        snprintf(p, sizeof p, "%s/%s", m->dir, m->fname[i]);
        ZT_TRY(zt_st_open(&x->files[i], p));
        zt_st_file *f = &x->files[i];
        for (int e = 0; e < f->n; e++) {
            char name[64], kind[8];
            unsigned long long g, ph, blk, rest;
            if (sscanf(f->t[e].name, "%63[^|]|%7[^|]|%llu|%llu|%llu|%llu", name, kind, &g, &ph,
                       &blk, &rest) != 6 || f->t[e].ndim != 1)
                return zt_errorf("checkpoint file %s is corrupt: tensor key '%s' is not "
                                 "name|kind|g|phase|blk|rest", p, f->t[e].name);
            if (strcmp(kind, "am") == 0 || strcmp(kind, "av") == 0) continue;
            segset *s = find_set(x, name, kind, 1);
            if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 16;
                s->s = realloc(s->s, (size_t)s->cap * sizeof *s->s);
                ZT_ASSERT(s->s);
            }
            seg *sg = &s->s[s->n++];
            *sg = (seg){i, e, -1, g, f->t[e].numel, ph, blk, rest};
            int want = strcmp(kind, "param") == 0 || strcmp(kind, "m") == 0 ||
                       strcmp(kind, "v") == 0 ? ZT_ST_F32 : ZT_ST_U8;
            if (strcmp(kind, "qm") && strcmp(kind, "qv") && want == ZT_ST_U8)
                return zt_errorf("checkpoint file %s: unknown segment kind '%s'", p, kind);
            if ((int)f->t[e].dtype != want)
                return zt_errorf("checkpoint file %s is corrupt: %s has the wrong dtype", p,
                                 f->t[e].name);
            if (want == ZT_ST_U8) {
                char akey[200];
                snprintf(akey, sizeof akey, "%s|a%c|%llu|%llu|%llu|%llu", name, kind[1], g, ph,
                         blk, rest);
                sg->aentry = zt_st_find(f, akey);
                if (sg->aentry < 0 || f->t[sg->aentry].dtype != ZT_ST_F32)
                    return zt_errorf("checkpoint file %s is corrupt: no absmax for %s", p,
                                     f->t[e].name);
            }
        }
    }
    for (int i = 0; i < x->n_sets; i++)
        qsort(x->sets[i].s, (size_t)x->sets[i].n, sizeof(seg), seg_cmp);
    return ZT_OK;
}

// The block size of the checkpoint's 8-bit state.
static int ckpt_block(const ckpt_index *x) {
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(x->man.root, "optimizer");
    int b = 256;
    jint(op, "block_size", &b);
    return b;
}

// Whether the checkpoint's v codes are bitsandbytes' (no "v_map": written before issue 41)
// into *legacy; ZT_ERR for a map this build does not know. A legacy checkpoint loads
// unchanged: codes 1..255 hold the same values in both maps, and its code 0 (v = 0, or v
// under 1.6e-7 of the absmax, rounded down) is read as ZT_Q8_V_FLOOR. That is exactly
// the conversion "dequantize with the old map, requantize with today's": every value under
// today's first midpoint, 1.9e-7, 0 included, is nearest to the floor.
static zt_status ckpt_v_map(const ckpt_index *x, int *legacy) {
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(x->man.root, "optimizer");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(op, "v_map");
    *legacy = v == NULL;
    if (v && !(cJSON_IsString(v) && strcmp(v->valuestring, CKPT_V_MAP) == 0))
        return zt_errorf("%s/manifest.json: optimizer v_map %s is not this build's \"%s\" "
                         "(a checkpoint from a newer zerotrain?)",
                         x->man.dir, cJSON_IsString(v) ? v->valuestring : "(not a string)",
                         CKPT_V_MAP);
    return ZT_OK;
}

// Copies elements [g, g + n) of a set: out (elem bytes each); for 8-bit sets also each
// element's absmax and block id. ZT_ERR naming the tensor when something is missing.
static zt_status fetch(const ckpt_index *x, const segset *s, size_t g, size_t n, size_t es,
                       void *out, float *absmax, uint64_t *uid, size_t *blen, size_t B) {
    size_t done = 0;
    // the last segment with start <= g
    int lo = 0, hi = s->n - 1, at = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (s->s[mid].g <= g) {
            at = mid;
            lo = mid + 1;
        } else hi = mid - 1;
    }
    while (done < n) {
        size_t want = g + done;
        while (at >= 0 && at < s->n && s->s[at].g + s->s[at].n <= want) at++;
        if (at < 0 || at >= s->n || s->s[at].g > want)
            return zt_errorf("checkpoint %s lacks element %zu of %s (%s): a mismatched or "
                             "incomplete checkpoint", x->man.dir, want, s->name, s->kind);
        const seg *sg = &s->s[at];
        const zt_st_file *f = &x->files[sg->file];
        size_t off = want - sg->g, k = zt_min_sz(n - done, sg->n - off);
        memcpy((char *)out + done * es, (const char *)zt_st_bytes(f, sg->entry) + off * es, k * es);
        if (absmax) {
            const float *am = zt_st_bytes(f, sg->aentry);
            size_t nam = f->t[sg->aentry].numel;
            for (size_t j = 0; j < k; j++) {
                size_t rel = sg->phase + off + j, b = rel / B;
                if (b >= nam) return zt_errorf("checkpoint file %s is corrupt: absmax too short",
                                               f->path);
                memcpy(&absmax[done + j], &am[b], 4);
                uid[done + j] = ((uint64_t)sg->file << 40) | (sg->blk + b);
                // the block's length: B, or less at the end of the writer's piece
                size_t bstart = b * B; // relative to the segment's first block start
                size_t end = sg->phase + sg->rest;
                blen[done + j] = zt_min_sz(B, end - bstart);
            }
        }
        done += k;
    }
    return ZT_OK;
}

// ---------------------------------------------------------------- resume

typedef struct {
    const zt_ckpt_ctx *c;
    const ckpt_index *x;
    float map_m[ZT_Q8_CODES], map_v[ZT_Q8_CODES];
    size_t src_B;
    size_t requantized, exact;
} loader;

// fp32 values of [g, g + n) of (tensor, m or v), from fp32 or 8-bit source state.
static zt_status fetch_moment(loader *L, const char *name, int is_v, size_t g, size_t n,
                              float *out) {
    const segset *s = find_set((ckpt_index *)L->x, name, is_v ? "v" : "m", 0);
    if (s) return fetch(L->x, s, g, n, 4, out, NULL, NULL, NULL, 0);
    s = find_set((ckpt_index *)L->x, name, is_v ? "qv" : "qm", 0);
    if (!s) return zt_errorf("checkpoint %s has no optimizer state for %s", L->x->man.dir, name);
    uint8_t codes[ZT_ADAMW8BIT_MAX_BLOCK];
    float am[ZT_ADAMW8BIT_MAX_BLOCK];
    uint64_t uid[ZT_ADAMW8BIT_MAX_BLOCK];
    size_t bl[ZT_ADAMW8BIT_MAX_BLOCK];
    for (size_t d = 0; d < n; d += ZT_ADAMW8BIT_MAX_BLOCK) {
        size_t k = zt_min_sz(n - d, ZT_ADAMW8BIT_MAX_BLOCK);
        ZT_TRY(fetch(L->x, s, g + d, k, 1, codes, am, uid, bl, L->src_B));
        for (size_t j = 0; j < k; j++)
            out[d + j] = zt_q8_dequantize(is_v ? L->map_v : L->map_m, codes[j], am[j]);
    }
    return ZT_OK;
}

// The global runs of local elements [i0, i1) of t: calls fn per run.
typedef zt_status (*run_fn)(loader *L, const zt_tensor_desc *t, size_t local, size_t g,
                            size_t n, void *ctx);
static zt_status each_run(loader *L, const zt_tensor_desc *t, size_t i0, size_t i1, run_fn fn,
                          void *ctx) {
    const zt_layout *lay = &L->c->model->layout;
    size_t real = ckpt_stored_numel(t, &L->c->model->shape);
    for (size_t k = i0; k < i1;) {
        size_t g, n = ckpt_run_len(lay, t, k, i1, &g);
        size_t keep = g >= real ? 0 : zt_min_sz(n, real - g);
        if (keep) ZT_TRY(fn(L, t, k, g, keep, ctx));
        k += n;
    }
    return ZT_OK;
}

static zt_status load_params_run(loader *L, const zt_tensor_desc *t, size_t local, size_t g,
                                 size_t n, void *ctx) {
    float *params = ctx;
    const segset *s = find_set((ckpt_index *)L->x, t->name, "param", 0);
    if (!s) return zt_errorf("checkpoint %s has no tensor %s", L->x->man.dir, t->name);
    return fetch(L->x, s, g, n, 4, params + t->offset + local, NULL, NULL, NULL, 0);
}

// One block of 8-bit target state: local elements [b0, b0 + n) of t, codes at qm/qv,
// absmax at *am/*av. Exact copy when the source holds this very block in 8 bits;
// otherwise dequantized and requantized with the block's own absmax.
static zt_status load_block(loader *L, const zt_tensor_desc *t, size_t b0, size_t n, uint8_t *qm,
                            uint8_t *qv, float *am, float *av) {
    const zt_layout *lay = &L->c->model->layout;
    size_t real = ckpt_stored_numel(t, &L->c->model->shape);
    // the block's elements as global runs (at most a few)
    size_t rg[ZT_ADAMW8BIT_MAX_BLOCK], rl[ZT_ADAMW8BIT_MAX_BLOCK], rn[ZT_ADAMW8BIT_MAX_BLOCK];
    int nr = 0;
    size_t nreal = 0; // elements before the vocabulary padding
    for (size_t k = b0; k < b0 + n;) {
        size_t g, len = ckpt_run_len(lay, t, k, b0 + n, &g);
        size_t keep = g >= real ? 0 : zt_min_sz(len, real - g);
        if (keep) {
            rg[nr] = g;
            rl[nr] = k - b0;
            rn[nr++] = keep;
            nreal += keep;
        }
        k += len;
    }
    for (int which = 0; which < 2; which++) {
        uint8_t *q = which ? qv : qm;
        float *amax = which ? av : am;
        const float *map = which ? L->map_v : L->map_m;
        const segset *s = find_set((ckpt_index *)L->x, t->name, which ? "qv" : "qm", 0);
        uint8_t codes[ZT_ADAMW8BIT_MAX_BLOCK];
        float sam[ZT_ADAMW8BIT_MAX_BLOCK], val[ZT_ADAMW8BIT_MAX_BLOCK];
        uint64_t uid[ZT_ADAMW8BIT_MAX_BLOCK];
        size_t bl[ZT_ADAMW8BIT_MAX_BLOCK];
        memset(codes, zt_q8_quantize(map, 0.0f, 0.0f), n);
        memset(val, 0, n * sizeof(float));
        int exact = 0;
        if (s) {
            for (int r = 0; r < nr; r++)
                ZT_TRY(fetch(L->x, s, rg[r], rn[r], 1, codes + rl[r], sam + rl[r], uid + rl[r],
                             bl + rl[r], L->src_B));
            // one source block, all of it, and nothing else (padding aside)
            exact = nr > 0 && L->src_B == (size_t)L->c->opt8->opt.block_size;
            for (int r = 0; exact && r < nr; r++)
                for (size_t j = 0; j < rn[r]; j++)
                    exact &= uid[rl[r] + j] == uid[rl[0]];
            if (exact) exact = bl[rl[0]] == nreal;
            if (exact) {
                memcpy(q, codes, n);
                *amax = sam[rl[0]];
                if (which == 0) L->exact++;
                continue;
            }
            for (int r = 0; r < nr; r++)
                for (size_t j = 0; j < rn[r]; j++)
                    val[rl[r] + j] = zt_q8_dequantize(map, codes[rl[r] + j], sam[rl[r] + j]);
        } else {
            for (int r = 0; r < nr; r++)
                ZT_TRY(fetch_moment(L, t->name, which, rg[r], rn[r], val + rl[r]));
        }
        if (nr == 0) { // padding only
            memset(q, zt_q8_quantize(map, 0.0f, 0.0f), n);
            *amax = 0.0f;
            continue;
        }
        float mx = 0.0f;
        for (size_t j = 0; j < n; j++) mx = fabsf(val[j]) > mx ? fabsf(val[j]) : mx;
        for (size_t j = 0; j < n; j++) q[j] = zt_q8_quantize(map, val[j], mx);
        *amax = mx;
        if (which == 0) L->requantized++;
    }
    return ZT_OK;
}

typedef struct {
    float *m, *v;     // fp32 moments
    size_t base;      // flat index of m[0]
} fp32_state;

static zt_status load_fp32_run2(loader *L, const zt_tensor_desc *t, size_t local, size_t g,
                                size_t n, void *ctx) {
    fp32_state *d = ctx;
    size_t at = t->offset + local - d->base;
    ZT_TRY(fetch_moment(L, t->name, 0, g, n, d->m + at));
    return fetch_moment(L, t->name, 1, g, n, d->v + at);
}

// Notes (rank 0) the settings that differ from the checkpoint's run: the continuation is
// then not the uninterrupted run's.
static void note_config(const ckpt_index *x, const zt_ckpt_ctx *ctx, int dp) {
    const zt_ckpt_run *c = ctx->run;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(x->man.root, "config");
    if (!o) return;
    struct {
        const char *key;
        double now;
    } k[] = {{"seq", c->seq}, {"global_batch", (double)c->micro_batch * c->grad_accum * dp},
             {"steps", c->steps}, {"lr", c->lr}, {"lr_final_frac", c->lr_final_frac},
             {"warmup", c->warmup}, {"weight_decay", c->weight_decay}, {"beta1", c->beta1},
             {"beta2", c->beta2}, {"eps", c->eps}, {"grad_clip", c->grad_clip},
             {"seed", (double)c->seed}, {"optim_block", c->optim_block}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k[i].key);
        if (cJSON_IsNumber(v) && (float)v->valuedouble != (float)k[i].now)
            printf("resume: note: %s is %g now, %g in the checkpoint's run: the continuation "
                   "differs from an uninterrupted run\n", k[i].key, k[i].now, v->valuedouble);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "lr_schedule");
    if (cJSON_IsString(v) && strcmp(v->valuestring, c->lr_schedule))
        printf("resume: note: lr_schedule is %s now, %s in the checkpoint's run\n", c->lr_schedule,
               v->valuestring);
    const char *optim = ckpt_optim_name(ctx), *dtype = ckpt_param_dtype_name(ctx);
    v = cJSON_GetObjectItemCaseSensitive(o, "optim");
    if (cJSON_IsString(v) && strcmp(v->valuestring, optim))
        printf("resume: note: the checkpoint's optimizer state is %s, this run's %s: its moments "
               "are converted\n", v->valuestring, optim);
    v = cJSON_GetObjectItemCaseSensitive(o, "param_dtype");
    const char *was = cJSON_IsString(v) ? v->valuestring : "fp32"; // before bf16 existed
    if (strcmp(was, dtype))
        printf("resume: note: the checkpoint's run trained %s parameters, this run %s: its fp32 "
               "parameters become this run's%s\n", was, dtype,
               ctx->model->dtype == ZT_BF16 ? " fp32 masters and, rounded, its bf16 weights" : "");
}

// Notes (rank 0) a checkpoint whose 8-bit v codes are bitsandbytes' (ckpt_v_map).
static void note_v_map(const ckpt_index *x) {
    int legacy = 0, has_qv = 0;
    ckpt_v_map(x, &legacy); // an unknown map already stopped open_verified
    for (int i = 0; i < x->n_sets; i++) has_qv |= strcmp(x->sets[i].kind, "qv") == 0;
    if (legacy && has_qv)
        printf("resume: note: the checkpoint's 8-bit v codes use bitsandbytes' map (written "
               "before v_map): its zero code is read as the v map's floor, %.2g of the "
               "block's absmax (docs/checkpoints.md)\n",
               (double)ZT_Q8_V_FLOOR);
}

static zt_status load_into(const zt_ckpt_ctx *c, ckpt_index *x, size_t *counts) {
    zt_gpt2 *m = c->model;
    const zt_layout *lay = &m->layout;
    loader L = {.c = c, .x = x, .src_B = (size_t)ckpt_block(x)};
    zt_q8_make_map(L.map_m, 1);
    zt_q8_make_map(L.map_v, 0);
    if (L.src_B < 1 || L.src_B > ZT_ADAMW8BIT_MAX_BLOCK)
        return zt_errorf("%s/manifest.json: bad block_size %zu", x->man.dir, L.src_B);
    ckpt_host_state h;
    ckpt_map_state(c, &h, 0);
    memset(h.params, 0, lay->numel * sizeof(float)); // padding stays zero
    zt_status s = ZT_OK;
    for (int i = 0; s == ZT_OK && i < lay->n; i++)
        s = each_run(&L, &lay->t[i], 0, lay->t[i].numel, load_params_run, h.params);
    if (s == ZT_OK && !c->is_8bit) {
        zt_adamw *o = c->opt;
        fp32_state d = {h.m, h.v, o->lo};
        for (int i = 0; s == ZT_OK && i < lay->n; i++) {
            const zt_tensor_desc *t = &lay->t[i];
            size_t a = t->offset > o->lo ? t->offset : o->lo;
            size_t b = zt_min_sz(t->offset + t->numel, o->hi);
            if (a < b) s = each_run(&L, t, a - t->offset, b - t->offset, load_fp32_run2, &d);
        }
        o->t = x->man.t;
    }
    zt_adamw8bit *o = c->opt8;
    size_t B = c->is_8bit ? (size_t)o->opt.block_size : 1;
    float *m32 = h.m32, *v32 = h.v32, *am = h.am, *av = h.av;
    uint8_t *qm = h.qm, *qv = h.qv;
    for (int k = 0; c->is_8bit && s == ZT_OK && k < o->n_pieces; k++) {
        const zt_adamw8bit_piece *p = &o->pieces[k];
        const zt_tensor_desc *t = &lay->t[p->tensor];
        if (!p->is_8bit) {
            fp32_state d = {m32 + p->state, v32 + p->state, p->a};
            s = each_run(&L, t, p->a - t->offset, p->b - t->offset, load_fp32_run2, &d);
            continue;
        }
        size_t nbk = (p->b - p->a + B - 1) / B;
        for (size_t j = 0; s == ZT_OK && j < nbk; j++) {
            size_t n = zt_min_sz(B, p->b - p->a - j * B);
            size_t q = p->state + j * B;
            s = load_block(&L, t, p->a - t->offset + j * B, n, qm + q, qv + q,
                           am + p->block + j, av + p->block + j);
        }
    }
    ckpt_unmap_state(c, &h, 1);
    if (c->is_8bit) o->t = x->man.t;
    counts[0] = L.exact;
    counts[1] = L.requantized;
    return s;
}

// Collective: the checkpoint `dir` names, its manifest read (`say`: rank 0 reports the
// incomplete saves it skips), its shape (and `with_state`, the optimizer state's v map)
// checked, every file's checksum verified (the files dealt out over the ranks) and its index
// opened. Agreed on every rank;
// the caller frees *x whatever the outcome.
static zt_status open_verified(const zt_ckpt_ctx *c, const char *dir, ckpt_index *x, int say,
                               int with_state) {
    const zt_grid *g = c->grid;
    memset(x, 0, sizeof *x);
    zt_status s = manifest_read(&x->man, dir, say && g->rank == 0);
    const zt_model_shape *ms = &c->model->shape;
    if (s == ZT_OK && (x->man.shape.n_layer != ms->n_layer || x->man.shape.n_head != ms->n_head ||
                       x->man.shape.n_embd != ms->n_embd || x->man.shape.vocab != ms->vocab ||
                       x->man.shape.n_ctx != ms->n_ctx))
        s = zt_errorf("%s/manifest.json holds another model shape than this run's", x->man.dir);
    int legacy_v; // a known v map, before any file is read (legacy codes load as they are)
    if (s == ZT_OK && with_state) s = ckpt_v_map(x, &legacy_v);
    s = zt_comm_agree(&g->world_comm, s);
    if (s != ZT_OK) return s;
    for (int i = g->rank; s == ZT_OK && i < x->man.n_files; i += g->world)
        s = verify_file(&x->man, i);
    s = zt_comm_agree(&g->world_comm, s);
    if (s == ZT_OK) s = zt_comm_agree(&g->world_comm, index_open(x));
    return s;
}

zt_status zt_ckpt_resume(const zt_ckpt_ctx *c, const char *dir, int *step, uint64_t *samples) {
    const zt_grid *g = c->grid;
    double t0 = ckpt_now_s();
    ckpt_index x;
    zt_status s = open_verified(c, dir, &x, 1, 1);
    size_t counts[2] = {0, 0};
    if (s == ZT_OK) s = zt_comm_agree(&g->world_comm, load_into(c, &x, counts));
    if (s == ZT_OK) {
        double mine[2] = {(double)counts[0], (double)counts[1]}, all[2];
        zt_comm_all_reduce(&g->world_comm, mine, all, 2, ZT_F64, ZT_REDUCE_SUM, NULL);
        if (g->rank == 0) {
            note_config(&x, c, g->dp);
            note_v_map(&x);
            printf("resumed from %s in %.2f s: step %d, %llu samples, optimizer t %d; written by "
                   "dp %d x pp %d x tp %d (zero %d), now dp %d x pp %d x tp %d (zero %d)\n",
                   x.man.dir, ckpt_now_s() - t0, x.man.step, (unsigned long long)x.man.samples,
                   x.man.t, x.man.dp, x.man.pp, x.man.tp, x.man.zero, g->dp, g->pp, g->tp,
                   c->run->zero);
            if (c->is_8bit)
                printf("resume: 8-bit state: %.0f blocks copied exactly, %.0f requantized (their "
                       "values did not form one block of the checkpoint: docs/checkpoints.md)\n",
                       all[0], all[1]);
            fflush(stdout);
        }
        *step = x.man.step;
        *samples = x.man.samples;
    }
    index_free(&x);
    return s;
}

// This rank's parameters only, as load_into reads them (padding zero).
static zt_status load_params(const zt_ckpt_ctx *c, ckpt_index *x) {
    zt_gpt2 *m = c->model;
    float *params = zt_gpt2_params_map(m, 0); // zeros
    loader L = {.c = c, .x = x};
    zt_status s = ZT_OK;
    for (int i = 0; s == ZT_OK && i < m->layout.n; i++)
        s = each_run(&L, &m->layout.t[i], 0, m->layout.t[i].numel, load_params_run, params);
    zt_gpt2_params_unmap(m, params, 1);
    return s;
}

zt_status zt_ckpt_load_weights(const zt_grid *g, zt_gpt2 *m, const char *dir, int *step) {
    zt_ckpt_ctx c = {.grid = g, .model = m};
    ckpt_index x;
    zt_status s = open_verified(&c, dir, &x, 0, 0);
    if (s == ZT_OK) s = zt_comm_agree(&g->world_comm, load_params(&c, &x));
    if (s == ZT_OK) *step = x.man.step;
    index_free(&x);
    return s;
}

// ---------------------------------------------------------------- export

zt_status zt_ckpt_export(const char *ckpt, const char *out, zt_dtype dtype) {
    ckpt_index x;
    memset(&x, 0, sizeof x);
    zt_status s = manifest_read(&x.man, ckpt, 1);
    for (int i = 0; s == ZT_OK && i < x.man.n_files; i++) s = verify_file(&x.man, i);
    if (s == ZT_OK) s = index_open(&x);
    zt_layout full;
    memset(&full, 0, sizeof full);
    float *params = NULL;
    zt_model_shape sh = x.man.shape;
    sh.padded_vocab = zt_padded_vocab(sh.vocab, 1);
    if (s == ZT_OK) s = zt_layout_init(&full, &sh, 0, zt_unit_count(&sh), 1, 0, ZT_ALIGN_ELEMS);
    if (s == ZT_OK) {
        params = calloc(full.numel, sizeof(float));
        ZT_ASSERT(params);
        for (int i = 0; s == ZT_OK && i < full.n; i++) {
            const zt_tensor_desc *t = &full.t[i];
            const segset *set = find_set(&x, t->name, "param", 0);
            if (!set) s = zt_errorf("checkpoint %s has no tensor %s", x.man.dir, t->name);
            else s = fetch(&x, set, 0, ckpt_stored_numel(t, &sh), 4, params + t->offset, NULL, NULL,
                           NULL, 0);
        }
    }
    if (s == ZT_OK) {
        const float *parts[1] = {params};
        s = zt_hf_export(&sh, &full, parts, 1, dtype, out);
        if (s == ZT_OK)
            printf("exported %s (step %d, written by dp %d x pp %d x tp %d) to %s/model.safetensors"
                   " (%s)\n", x.man.dir, x.man.step, x.man.dp, x.man.pp, x.man.tp, out,
                   dtype == ZT_BF16 ? "bf16" : "fp32");
    }
    free(params);
    zt_layout_free(&full);
    index_free(&x);
    return s;
}
