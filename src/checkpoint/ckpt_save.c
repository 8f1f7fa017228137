// Saving a sharded checkpoint: every writing rank's shard of segments, rank 0's manifest,
// the atomic commit, `latest`, and --ckpt-keep's pruning. The format: ckpt_internal.h and
// docs/checkpoints.md.
#include "ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "planner.h"
#include "safetensors.h"

static zt_status fsync_path(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return zt_errorf("cannot open %s to sync it: %s", path, strerror(errno));
    int r = fsync(fd);
    close(fd);
    return r == 0 ? ZT_OK : zt_errorf("fsync %s failed: %s", path, strerror(errno));
}

// Removes a directory and the plain files in it (checkpoint directories are flat); 0 when
// the directory stays (something in it is not a plain file).
static int remove_dir(const char *path) {
    DIR *d = opendir(path);
    if (!d) return rmdir(path) == 0;
    struct dirent *e;
    char p[PATHN];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        unlink(p);
    }
    closedir(d);
    return rmdir(path) == 0;
}

// The 8-bit optimizer's piece for tensor index i, or NULL.
static const zt_adamw8bit_piece *piece_of(const zt_adamw8bit *o, int i) {
    for (int k = 0; k < o->n_pieces; k++)
        if (o->pieces[k].tensor == i) return &o->pieces[k];
    return NULL;
}

typedef struct {
    zt_st_tensor *t;
    char **names;
    int n, cap;
} seglist;

static void seg_add(seglist *l, const char *name, const char *kind, size_t g, size_t phase,
                    size_t blk, size_t rest, const void *data, size_t n, zt_st_dtype dt) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->t = realloc(l->t, (size_t)l->cap * sizeof *l->t);
        l->names = realloc(l->names, (size_t)l->cap * sizeof *l->names);
        ZT_ASSERT(l->t && l->names);
    }
    char key[160];
    snprintf(key, sizeof key, "%s|%s|%zu|%zu|%zu|%zu", name, kind, g, phase, blk, rest);
    l->names[l->n] = strdup(key);
    ZT_ASSERT(l->names[l->n]);
    zt_st_tensor *t = &l->t[l->n++];
    memset(t, 0, sizeof *t);
    t->name = l->names[l->n - 1];
    t->ndim = 1;
    t->shape[0] = (int64_t)n;
    t->data = data;
    t->dtype = dt;
}

static void seg_free(seglist *l) {
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    free(l->t);
}

// Lists this rank's segments: every tensor's part of [lo, hi), split into runs of
// contiguous global indices; tensors replicated across tp only from tp rank 0, the tied
// embedding only from the first stage; vocabulary padding dropped.
static void collect(const zt_ckpt_ctx *c, seglist *l, const ckpt_host_state *h) {
    const float *params = h->params;
    const zt_gpt2 *m = c->model;
    const zt_layout *lay = &m->layout;
    size_t B = c->is_8bit ? (size_t)c->opt8->opt.block_size : 1;
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        if (t->replicated && c->grid->tp_rank != 0) continue;
        if (t->tied && c->grid->pp_rank != 0) continue;
        size_t a = t->offset > c->lo ? t->offset : c->lo;
        size_t b = zt_min_sz(t->offset + t->numel, c->hi);
        if (a >= b) continue;
        size_t i0 = a - t->offset, i1 = b - t->offset, real = ckpt_stored_numel(t, &m->shape);
        const zt_adamw8bit_piece *p = c->is_8bit ? piece_of(c->opt8, i) : NULL;
        for (size_t k = i0; k < i1;) {
            size_t g, n = ckpt_run_len(lay, t, k, i1, &g);
            size_t keep = g >= real ? 0 : zt_min_sz(n, real - g);
            if (keep) {
                size_t flat = t->offset + k;
                seg_add(l, t->name, "param", g, 0, 0, 0, params + flat, keep, ZT_ST_F32);
                if (!c->is_8bit) {
                    seg_add(l, t->name, "m", g, 0, 0, 0, h->m + (flat - c->lo), keep, ZT_ST_F32);
                    seg_add(l, t->name, "v", g, 0, 0, 0, h->v + (flat - c->lo), keep, ZT_ST_F32);
                } else if (!p->is_8bit) {
                    size_t s = p->state + (flat - p->a);
                    seg_add(l, t->name, "m", g, 0, 0, 0, h->m32 + s, keep, ZT_ST_F32);
                    seg_add(l, t->name, "v", g, 0, 0, 0, h->v32 + s, keep, ZT_ST_F32);
                } else {
                    size_t rel = flat - p->a, s = p->state + rel, phase = rel % B;
                    size_t blk = p->block + rel / B, nb = (phase + keep + B - 1) / B;
                    // to the piece's end, vocabulary padding excluded
                    size_t rest = zt_min_sz(p->b - flat, real - g);
                    seg_add(l, t->name, "qm", g, phase, blk, rest, h->qm + s, keep, ZT_ST_U8);
                    seg_add(l, t->name, "qv", g, phase, blk, rest, h->qv + s, keep, ZT_ST_U8);
                    seg_add(l, t->name, "am", g, phase, blk, rest, h->am + blk, nb,
                            ZT_ST_F32);
                    seg_add(l, t->name, "av", g, phase, blk, rest, h->av + blk, nb,
                            ZT_ST_F32);
                }
            }
            k += n;
        }
    }
}

static int writes(const zt_ckpt_ctx *c) { return c->run->zero == 1 || c->grid->dp_rank == 0; }

static void shard_name(char *out, size_t size, int pp, int tp, int dp) {
    snprintf(out, size, "shard-pp%d-tp%d-dp%d.safetensors", pp, tp, dp);
}

static void json_config(FILE *f, const zt_ckpt_ctx *x, int dp) {
    const zt_ckpt_run *c = x->run;
    fprintf(f,
            "  \"config\": {\"micro_batch\": %d, \"seq\": %d, \"grad_accum\": %d, "
            "\"global_batch\": %d, \"steps\": %d, \"lr\": %.9g, \"lr_final_frac\": %.9g, "
            "\"lr_schedule\": \"%s\", \"warmup\": %d, \"weight_decay\": %.9g, \"beta1\": %.9g, "
            "\"beta2\": %.9g, \"eps\": %.9g, \"grad_clip\": %.9g, \"shuffle\": %s, "
            "\"seed\": %llu, \"optim\": \"%s\", \"optim_block\": %d, \"optim_min_8bit\": %d, "
            "\"optim_fp32_embedding\": %s, \"param_dtype\": \"%s\"},\n",
            c->micro_batch, c->seq, c->grad_accum, c->micro_batch * c->grad_accum * dp, c->steps,
            c->lr, c->lr_final_frac, c->lr_schedule, c->warmup, c->weight_decay, c->beta1,
            c->beta2, c->eps, c->grad_clip, c->shuffle ? "true" : "false",
            (unsigned long long)c->seed, ckpt_optim_name(x), c->optim_block,
            c->optim_min_8bit, c->optim_fp32_embedding ? "true" : "false",
            ckpt_param_dtype_name(x));
}

// The manifest's "data": which shard and sample the run reads next (global sample `samples`),
// for a reader; resuming goes by "samples" alone, so checkpoints without it still load.
static void json_data_position(FILE *f, zt_dataset *ds, uint64_t samples) {
    if (!ds || ds->n_shards == 0) return;
    zt_data_position at = zt_dataset_locate(ds, samples);
    fprintf(f, "  \"data\": {\"shards\": %d, \"samples_per_epoch\": %llu, \"epoch\": %llu, "
               "\"shard\": %d, \"shard_path\": ",
            ds->n_shards, (unsigned long long)ds->n_samples, (unsigned long long)at.epoch,
            at.shard);
    zt_json_string(f, ds->shards[at.shard].path);
    fprintf(f, ", \"sample_in_shard\": %llu, \"token_in_shard\": %llu},\n",
            (unsigned long long)at.sample, (unsigned long long)at.sample * (uint64_t)ds->T);
}

// Rank 0: manifest.json in `tmp`, from every rank's (written, bytes, hash).
static zt_status write_manifest(const zt_ckpt_ctx *c, const char *tmp, int step,
                                uint64_t samples, const uint64_t *rec) {
    const zt_grid *g = c->grid;
    const zt_ckpt_run *cfg = c->run;
    const zt_model_shape *s = &c->model->shape;
    char path[PATHN + 32];
    snprintf(path, sizeof path, "%s/manifest.json", tmp);
    FILE *f = fopen(path, "w");
    if (!f) return zt_errorf("cannot write %s: %s", path, strerror(errno));
    int t = c->is_8bit ? c->opt8->t : c->opt->t;
    fprintf(f, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"checksum\": \"%s\",\n"
               "  \"step\": %d,\n  \"samples\": %llu,\n"
               "  \"run_start\": {\"step\": %d, \"samples\": %llu},\n  \"seed\": %llu,\n",
            CKPT_FORMAT, CKPT_VERSION, CKPT_CHECKSUM, step, (unsigned long long)samples,
            c->step0, (unsigned long long)c->samples0, (unsigned long long)cfg->seed);
    json_data_position(f, c->data, samples);
    fprintf(f, "  \"optimizer\": {\"name\": \"%s\", \"t\": %d, \"block_size\": %d, "
               "\"min_8bit_size\": %d, \"fp32_embedding\": %s, \"v_map\": \"%s\"},\n",
            ckpt_optim_name(c), t, cfg->optim_block, cfg->optim_min_8bit,
            cfg->optim_fp32_embedding ? "true" : "false", CKPT_V_MAP);
    fprintf(f, "  \"model\": {\"n_layer\": %d, \"n_head\": %d, \"n_embd\": %d, \"vocab\": %d, "
               "\"n_ctx\": %d},\n",
            s->n_layer, s->n_head, s->n_embd, s->vocab, s->n_ctx);
    // sequence_parallel: a record of how the run computed; checkpoints do not depend on it
    fprintf(f, "  \"layout\": {\"world\": %d, \"dp\": %d, \"pp\": %d, \"tp\": %d, \"zero\": %d, "
               "\"sequence_parallel\": %s, \"schedule\": \"%s\", \"recompute\": \"%s\", "
               "\"recompute_layers\": %d, \"partition\": \"%s\", \"stage_first_unit\": [",
            g->world, g->dp, g->pp, g->tp, cfg->zero, cfg->sequence_parallel ? "true" : "false",
            zt_schedule_kind_name(cfg->schedule), zt_recompute_mode_name(cfg->recompute),
            cfg->recompute_layers, cfg->partition);
    // every partition stage's (interleaved: every chunk's, pp x V of them)
    for (int k = 0; k <= c->part->n_stages; k++)
        fprintf(f, "%s%d", k ? ", " : "", c->part->first[k]);
    fprintf(f, "]},\n");
    json_config(f, c, g->dp);
    // every tensor of the model, in zerotrain's global shape (wte without padding)
    zt_layout full;
    zt_model_shape s1 = *s;
    s1.padded_vocab = zt_padded_vocab(s->vocab, 1);
    ZT_ASSERT(zt_layout_init(&full, &s1, 0, zt_unit_count(s), 1, 0, ZT_ALIGN_ELEMS) == ZT_OK);
    fprintf(f, "  \"tensors\": [\n");
    for (int i = 0; i < full.n; i++) {
        const zt_tensor_desc *d = &full.t[i];
        int state8 = c->is_8bit && zt_adamw8bit_is_8bit(d, &c->opt8->opt);
        long long R = d->split == ZT_SPLIT_VOCAB ? s->vocab : d->shape[0];
        fprintf(f, "    {\"name\": \"%s\", \"shape\": [%lld", d->name, R);
        if (d->ndim == 2) fprintf(f, ", %lld", (long long)d->shape[1]);
        fprintf(f, "], \"hf_transposed\": %s, \"state\": \"%s\"}%s\n",
                d->hf_transposed ? "true" : "false", state8 ? "8bit" : "fp32",
                i + 1 < full.n ? "," : "");
    }
    zt_layout_free(&full);
    fprintf(f, "  ],\n  \"files\": [\n");
    int first = 1;
    for (int r = 0; r < g->world; r++) {
        if (!rec[3 * r]) continue;
        int dpr, ppr, tpr;
        zt_grid_coords(r, g->dp, g->pp, g->tp, &dpr, &ppr, &tpr);
        char name[128];
        shard_name(name, sizeof name, ppr, tpr, dpr);
        fprintf(f, "%s    {\"name\": \"%s\", \"rank\": %d, \"bytes\": %llu, "
                   "\"digest\": \"%016llx\"}",
                first ? "" : ",\n", name, r, (unsigned long long)rec[3 * r + 1],
                (unsigned long long)rec[3 * r + 2]);
        first = 0;
    }
    fprintf(f, "\n  ]\n}\n");
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    return ok ? ZT_OK : zt_errorf("writing %s failed: %s", path, strerror(errno));
}

// Rank 0: manifest.json's checksum into its sidecar manifest.json.xxh3, from the bytes on
// disk (what a reader will hash), fsync'ed. A manifest edited afterwards (its samples, say:
// the resume would read from another data position) no longer matches.
static zt_status seal_manifest(const char *tmp) {
    char path[PATHN + 32], side[PATHN + 32];
    snprintf(path, sizeof path, "%s/" CKPT_MANIFEST, tmp);
    snprintf(side, sizeof side, "%s/" CKPT_MANIFEST_SUM, tmp);
    size_t n;
    char *text = zt_read_file(path, &n);
    if (!text) return zt_errorf("cannot read back %s: %s", path, zt_file_error(errno));
    unsigned long long h = XXH3_64bits(text, n);
    free(text);
    FILE *f = fopen(side, "w");
    int ok = f && fprintf(f, "%016llx  " CKPT_MANIFEST "\n", h) > 0 && fflush(f) == 0 &&
             fsync(fileno(f)) == 0;
    ok = f && fclose(f) == 0 && ok;
    return ok ? ZT_OK : zt_errorf("cannot write %s: %s", side, strerror(errno));
}

// The steps of the complete checkpoints in `dir` (step-N directories holding a
// manifest.json), at most `max` of them; -1 when dir cannot be opened.
static int complete_steps(const char *dir, int *steps, int max) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    char p[2 * PATHN];
    while ((e = readdir(d)) && n < max) {
        int st;
        char tail;
        if (sscanf(e->d_name, "step-%d%c", &st, &tail) != 1) continue;
        snprintf(p, sizeof p, "%s/%s/manifest.json", dir, e->d_name);
        if (ckpt_file_exists(p)) steps[n++] = st;
    }
    closedir(d);
    return n;
}

// Removes a step-N directory as one step: renamed first to "retired-step-N" (atomic), then
// emptied. A kill while its files were unlinked in place left a manifest-less step-N that no
// later run removed; a kill now leaves a retired-step-N, which the next run's
// zt_ckpt_remove_interrupted removes.
static void retire_step(const char *dir, int step) {
    char from[PATHN], to[PATHN];
    snprintf(from, sizeof from, "%s/step-%d", dir, step);
    snprintf(to, sizeof to, "%s/" CKPT_RETIRED "%d", dir, step);
    remove_dir(to);
    if (rename(from, to) == 0) remove_dir(to);
}

// Rank 0: deletes complete checkpoints older than the newest `keep`, never `just` (the
// one this save wrote). Directories without a manifest are not checkpoints: left alone.
static void prune(const char *dir, int keep, int just) {
    if (keep <= 0) return;
    int steps[4096], n = complete_steps(dir, steps, 4096);
    // the newest `keep` survive
    for (int i = 0; i < n; i++) {
        if (steps[i] == just) continue;
        int newer = 0;
        for (int j = 0; j < n; j++) newer += steps[j] > steps[i];
        if (newer >= keep) retire_step(dir, steps[i]);
    }
    fsync_path(dir);
}

zt_status zt_ckpt_check_dir(const char *dir, int start) {
    int steps[4096], n = complete_steps(dir, steps, 4096), newest = -1;
    for (int i = 0; i < n; i++)
        if (steps[i] > newest) newest = steps[i];
    if (newest <= start) return ZT_OK;
    return zt_errorf("--ckpt-dir %s holds step-%d, newer than this run's start at step %d: its "
                     "checkpoints and `latest` would mix two runs (and --ckpt-keep would "
                     "delete the new ones first); give another --ckpt-dir, or move the newer "
                     "step-N directories away", dir, newest, start);
}

// Whether `name` is a file a save writes into a step directory: a shard, the manifest, its
// seal, or one of their writers' temporaries ("NAME.tmp.PID").
static int save_file(const char *name) {
    int pp, tp, dp, k = 0;
    if (sscanf(name, "shard-pp%d-tp%d-dp%d.safetensors%n", &pp, &tp, &dp, &k) == 3 && k > 0 &&
        (name[k] == 0 || strncmp(name + k, ".tmp.", 5) == 0))
        return 1;
    return strncmp(name, CKPT_MANIFEST, strlen(CKPT_MANIFEST)) == 0;
}

// Whether the directory `p` holds only files a save writes (and so is a dead save's or a
// half-removed checkpoint's, never a user's).
static int only_save_files(const char *p) {
    DIR *d = opendir(p);
    if (!d) return 0;
    struct dirent *e;
    int ok = 1;
    while (ok && (e = readdir(d)))
        ok = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || save_file(e->d_name);
    closedir(d);
    return ok;
}

// What a stopped run leaves in `name` (of `dir`): "the save ..." for tmp-step-N (killed
// before its commit), a retired-step-N (killed while --ckpt-keep removed it), a step-N
// without manifest.json (killed while an older zerotrain pruned it in place); NULL for
// anything else, complete checkpoints first of all.
static const char *leftover(const char *dir, const char *name) {
    int step;
    char tail, p[2 * PATHN];
    if (strncmp(name, "tmp-step-", 9) == 0) return "the save of a run that stopped before its commit";
    if (strncmp(name, CKPT_RETIRED, strlen(CKPT_RETIRED)) == 0)
        return "a checkpoint that --ckpt-keep was removing when its run stopped";
    if (sscanf(name, "step-%d%c", &step, &tail) != 1) return NULL;
    snprintf(p, sizeof p, "%s/%s/" CKPT_MANIFEST, dir, name);
    struct stat st;
    if (lstat(p, &st) == 0 || errno != ENOENT) return NULL;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return only_save_files(p) ? "a checkpoint without manifest.json, half removed when its run "
                                "stopped (it cannot be resumed)" : NULL;
}

zt_status zt_ckpt_remove_interrupted(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return ZT_OK;
    struct dirent *e;
    char p[2 * PATHN];
    while ((e = readdir(d))) {
        const char *what = leftover(dir, e->d_name);
        if (!what) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode)) continue; // never through a link
        if (remove_dir(p))
            printf("checkpoint: removed %s, %s (this run holds %s/" CKPT_LOCK ", so no other run "
                   "writes there)\n", p, what, dir);
        else
            fprintf(stderr, "zerotrain: warning: %s, %s, is kept: it holds what a save does not "
                            "write; move it away or remove it\n", p, what);
    }
    closedir(d);
    fflush(stdout);
    return ZT_OK;
}

// Every rank: its shard into `tmp` (the writing ranks), then the agreement.
static zt_status write_shards(const zt_ckpt_ctx *c, const char *tmp, uint64_t mine[3]) {
    const zt_grid *g = c->grid;
    zt_status s = ZT_OK;
    if (writes(c)) {
        ckpt_host_state h;
        ckpt_map_state(c, &h, 1);
        seglist l = {0};
        collect(c, &l, &h);
        char name[128], path[PATHN + 128];
        shard_name(name, sizeof name, g->pp_rank, g->tp_rank, g->dp_rank);
        snprintf(path, sizeof path, "%s/%s", tmp, name);
        s = zt_safetensors_write_ex(path, l.t, l.n, "\"format\":\"" CKPT_FORMAT "-shard\"", 1,
                                    &mine[2], &mine[1]);
        mine[0] = 1;
        seg_free(&l);
        ckpt_unmap_state(c, &h, 0);
    }
    return zt_comm_agree(&g->world_comm, s);
}

// Rank 0: `latest` through latest.tmp, fsync'ed, renamed, and the directory synced.
static zt_status write_latest(const char *dir, int step) {
    char lt[PATHN], lp[PATHN];
    snprintf(lt, sizeof lt, "%s/latest.tmp", dir);
    snprintf(lp, sizeof lp, "%s/latest", dir);
    FILE *f = fopen(lt, "w");
    int ok = f && fprintf(f, "step-%d\n", step) > 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = f && fclose(f) == 0 && ok;
    if (!ok || rename(lt, lp) != 0) return zt_errorf("cannot write %s: %s", lp, strerror(errno));
    return fsync_path(dir);
}

// Whether DIR/latest reads "step-<step>\n" (the pointer a finished save leaves).
static int latest_names(const char *dir, int step) {
    char p[PATHN], want[32], got[32] = "";
    snprintf(p, sizeof p, "%s/latest", dir);
    snprintf(want, sizeof want, "step-%d\n", step);
    FILE *f = fopen(p, "r");
    size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
    if (f) fclose(f);
    got[n] = 0;
    return strcmp(got, want) == 0;
}

zt_status zt_ckpt_finish_commit(const char *dir, int step, int keep) {
    int steps[4096], n = complete_steps(dir, steps, 4096), newest = -1;
    for (int i = 0; i < n; i++)
        if (steps[i] > newest) newest = steps[i];
    if (newest != step) return ZT_OK; // step-N is not this directory's newest checkpoint
    char lt[PATHN];
    snprintf(lt, sizeof lt, "%s/latest.tmp", dir);
    int stale = !latest_names(dir, step) || ckpt_file_exists(lt);
    if (stale) ZT_TRY(write_latest(dir, step));
    prune(dir, keep, step);
    if (stale)
        printf("checkpoint: %s/latest now names step-%d (the save of step-%d stopped after its "
               "commit, before latest was renamed)\n", dir, step, step);
    fflush(stdout);
    return ZT_OK;
}

// Rank 0: the manifest and its seal, then the commit: the directory's entries, the rename,
// then the pointer; --ckpt-keep's pruning and the line saying what was written.
static zt_status commit(const zt_ckpt_ctx *c, const char *tmp, const char *fin, int step,
                        uint64_t samples, const uint64_t *rec, double t0) {
    const char *dir = c->run->dir;
    ZT_TRY(write_manifest(c, tmp, step, samples, rec));
    ZT_TRY(seal_manifest(tmp));
    ZT_TRY(fsync_path(tmp));
    // the directory may have been moved since the save began (its tmp then lies elsewhere):
    // checked again right before anything in it is named a checkpoint
    ZT_TRY(ckpt_lock_verify(dir));
    retire_step(dir, step); // an older save of the same step (a rerun)
    if (rename(tmp, fin) != 0)
        return zt_errorf("cannot rename %s to %s: %s", tmp, fin, strerror(errno));
    ZT_TRY(fsync_path(dir));
    ZT_TRY(write_latest(dir, step));
    prune(dir, c->run->keep, step);
    const zt_grid *g = c->grid;
    uint64_t total = 0, most = 0;
    int files = 0;
    for (int r = 0; r < g->world; r++) {
        total += rec[3 * r + 1];
        most = rec[3 * r + 1] > most ? rec[3 * r + 1] : most;
        files += (int)rec[3 * r];
    }
    printf("checkpoint %s: %.1f MiB in %d files (largest %.1f MiB) in %.2f s\n", fin,
           total / 1048576.0, files, most / 1048576.0, ckpt_now_s() - t0);
    fflush(stdout);
    return ZT_OK;
}

zt_status zt_ckpt_save(const zt_ckpt_ctx *c, int step, uint64_t samples) {
    const zt_grid *g = c->grid;
    double t0 = ckpt_now_s();
    const char *dir = c->run->dir;
    char tmp[PATHN], fin[PATHN];
    snprintf(tmp, sizeof tmp, "%s/tmp-step-%d", dir, step);
    snprintf(fin, sizeof fin, "%s/step-%d", dir, step);
    zt_status s = ZT_OK;
    if (g->rank == 0) s = ckpt_lock_verify(dir);
    if (g->rank == 0 && s == ZT_OK) {
        // a locked directory exists: one made here would be another (the locked one moved)
        if (!ckpt_lock_holds(dir) && mkdir(dir, 0755) != 0 && errno != EEXIST)
            s = zt_errorf("cannot create the checkpoint directory %s: %s", dir, strerror(errno));
        remove_dir(tmp); // a crash's leftovers
        if (s == ZT_OK && mkdir(tmp, 0755) != 0)
            s = zt_errorf("cannot create %s: %s", tmp, strerror(errno));
    }
    ZT_TRY(zt_comm_agree(&g->world_comm, s));
    uint64_t mine[3] = {0, 0, 0};
    s = write_shards(c, tmp, mine);
    if (s == ZT_OK) {
        uint64_t *rec = calloc((size_t)g->world * 3, sizeof *rec);
        ZT_ASSERT(rec);
        zt_comm_all_gather(&g->world_comm, mine, rec, (size_t)g->world * 3, ZT_I64, NULL);
        if (g->rank == 0) s = commit(c, tmp, fin, step, samples, rec, t0);
        free(rec);
        s = zt_comm_agree(&g->world_comm, s);
    }
    // A failed save (a full disk) removes what it wrote: every rank has stopped writing
    // (agreed), and before the commit nothing in tmp is a checkpoint; after it tmp is gone.
    if (s != ZT_OK && g->rank == 0) remove_dir(tmp);
    return s;
}
