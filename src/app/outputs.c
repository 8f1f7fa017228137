// What every output may be, decided before anything opens: an output never is, by identity
// (device and inode after links; a file not there yet by its resolved directory and name),
// an input or a file the run itself writes. A --log linked to the shard being resumed
// truncated it; a --save linked to a checkpoint directory moved the checkpoints into the
// export; `--log ck/latest` was replaced by the run's own pointer. docs/checkpoints.md.
#include "outputs.h"

#include "data_shards.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hf_export.h"
#include "hf_tokenizer_export.h"

// A path's identity: an existing file's device and inode (links followed), and for every
// path its canonical form (the resolved directory + its name; "" when the directory does not
// resolve), so that a file not yet written and one of its links compare too.
typedef struct {
    int exists;
    dev_t dev;
    ino_t ino;
    char canon[PATH_MAX + ZT_PATH_MAX];
} path_id;

static void identify(const char *p, path_id *id) {
    struct stat st;
    memset(id, 0, sizeof *id);
    id->exists = stat(p, &st) == 0;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    char real[PATH_MAX], d[ZT_PATH_MAX * 2], b[ZT_PATH_MAX * 2];
    if (id->exists && realpath(p, real)) { // (a directory, or a file through its links)
        snprintf(id->canon, sizeof id->canon, "%s", real);
        return;
    }
    snprintf(d, sizeof d, "%s", p);
    snprintf(b, sizeof b, "%s", p);
    if (realpath(dirname(d), real)) snprintf(id->canon, sizeof id->canon, "%s/%s", real, basename(b));
}

static int same_id(const path_id *a, const path_id *b) {
    if (a->exists && b->exists) return a->dev == b->dev && a->ino == b->ino;
    return !a->exists && !b->exists && a->canon[0] && strcmp(a->canon, b->canon) == 0;
}

int zt_same_path(const char *a, const char *b) {
    path_id x, y;
    identify(a, &x);
    identify(b, &y);
    return same_id(&x, &y);
}

// Whether canonical path `inner` is `outer` or lies under it.
static int within(const char *inner, const char *outer) {
    size_t n = strlen(outer);
    return outer[0] && strncmp(inner, outer, n) == 0 && (inner[n] == 0 || inner[n] == '/');
}

// A set of files by identity, each with what it is ("latest of --resume ck").
typedef struct {
    path_id id;
    char what[2 * ZT_PATH_MAX + 64];
} known_file;
typedef struct {
    known_file *f;
    int n, cap;
} file_set;

static void set_add(file_set *s, const char *path, const char *fmt, const char *a,
                    const char *b) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->f = realloc(s->f, (size_t)s->cap * sizeof *s->f);
        ZT_ASSERT(s->f);
    }
    known_file *k = &s->f[s->n];
    identify(path, &k->id);
    if (!k->id.exists) return; // only what is there can be destroyed
    snprintf(k->what, sizeof k->what, fmt, a, b);
    s->n++;
}

// `path` (a file or a directory, `depth` levels of it) into the set as "`role` `path`",
// each file inside as "NAME of `role` `path`"; only the entries whose top-level name
// `pick` takes (all when NULL). A checkpoint directory is two levels deep.
static void set_add_tree(file_set *s, const char *role, const char *path, int depth,
                         int (*pick)(const char *name)) {
    struct stat root;
    int is_dir = stat(path, &root) == 0 && S_ISDIR(root.st_mode);
    set_add(s, path, is_dir ? "the directory %s %s" : "the same file as %s %s", role, path);
    DIR *d = depth > 0 ? opendir(path) : NULL;
    if (!d) return;
    struct dirent *e;
    char p[4 * ZT_PATH_MAX], who[2 * ZT_PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (pick && !pick(e->d_name)) continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        snprintf(who, sizeof who, "%s of %s", e->d_name, role);
        set_add(s, p, "%s %s", who, path);
        struct stat st;
        if (depth > 1 && lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            DIR *sub = opendir(p);
            struct dirent *f;
            char q[6 * ZT_PATH_MAX], w2[4 * ZT_PATH_MAX];
            while (sub && (f = readdir(sub)) != NULL) {
                if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0) continue;
                snprintf(q, sizeof q, "%s/%s", p, f->d_name);
                snprintf(w2, sizeof w2, "%s/%s of %s", e->d_name, f->d_name, role);
                set_add(s, q, "%s %s", w2, path);
            }
            if (sub) closedir(sub);
        }
    }
    closedir(d);
}

// Whether `dir` holds a file named `name` (a regular file).
static int holds(const char *dir, const char *name) {
    char p[2 * ZT_PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

// A name the checkpoint code writes in a --ckpt-dir: latest, its temporary, the lock, and
// the step directories (written, pruned, retired).
static int ckpt_dir_name(const char *name) {
    return strcmp(name, "latest") == 0 || strcmp(name, "latest.tmp") == 0 ||
           strcmp(name, "lock") == 0 || strncmp(name, "step-", 5) == 0 ||
           strncmp(name, "tmp-step-", 9) == 0 || strncmp(name, "retired-step-", 13) == 0;
}

// A name an export writes in its directory (the rest of it is moved back, never replaced).
static int export_name(const char *name) {
    return strcmp(name, "model.safetensors") == 0 || strcmp(name, "config.json") == 0 ||
           zt_hf_tokenizer_file(name);
}

// The known file `id` is, or NULL.
static const known_file *set_find(const file_set *s, const path_id *id) {
    for (int i = 0; i < s->n; i++)
        if (same_id(&s->f[i].id, id)) return &s->f[i];
    return NULL;
}

// Every shard a --data or --val-data spec names (a list or glob: data_shards.h); a spec that
// does not expand is added as it is (the data reader refuses it with the reason).
static void add_data_inputs(file_set *in, const char *role, const char *spec) {
    zt_data_paths d;
    if (zt_data_paths_expand(&d, spec) != ZT_OK) {
        set_add(in, spec, "the same file as %s %s", role, spec);
        return;
    }
    for (int i = 0; i < d.n; i++) set_add(in, d.paths[i], "the same file as %s %s", role, d.paths[i]);
    zt_data_paths_free(&d);
}

// Every input of a training run: the files it reads, and every file in its input directories.
static void collect_inputs(const zt_config *c, file_set *in) {
    if (c->data[0]) add_data_inputs(in, "--data", c->data);
    if (c->val_data[0]) add_data_inputs(in, "--val-data", c->val_data);
    if (c->config[0]) set_add(in, c->config, "the same file as %s %s", "--config", c->config);
    // what a run reads there: a model directory's files; a checkpoint directory's latest and
    // steps, or all of one step directory
    if (c->init_from[0]) set_add_tree(in, "--init-from", c->init_from, 1, export_name);
    if (c->resume[0])
        set_add_tree(in, "--resume", c->resume, 2,
                     holds(c->resume, "manifest.json") ? NULL : ckpt_dir_name);
}

// The files that the run itself writes or replaces: --save's and --ckpt-dir's (whose step
// directories --ckpt-keep removes).
static void collect_written(const zt_config *c, file_set *out) {
    if (c->save[0]) set_add_tree(out, "--save", c->save, 1, export_name);
    if (c->ckpt_dir[0]) set_add_tree(out, "--ckpt-dir", c->ckpt_dir, 2, ckpt_dir_name);
}

static zt_status clash(const char *flag, const char *out, const known_file *k) {
    return zt_errorf("%s %s is %s (by device and inode, links followed): writing it would "
                     "destroy it; give %s another path", flag, out, k->what, flag);
}

// An output file (--log, --trace: `flag` `out`) against the inputs, the files the run writes,
// and the directories it replaces.
static zt_status file_not_an_input(const zt_config *c, const char *flag, const char *out,
                                   const file_set *in, const file_set *own) {
    path_id id, save, ck;
    identify(out, &id);
    const known_file *k = id.exists ? set_find(in, &id) : NULL;
    if (!k && id.exists) k = set_find(own, &id);
    if (k) return clash(flag, out, k);
    identify(c->save, &save);
    if (c->save[0] && within(id.canon, save.canon) && strcmp(id.canon, save.canon) != 0)
        return zt_errorf("%s %s is inside the --save directory %s, which the export replaces "
                         "as a whole: give %s a path outside it", flag, out, c->save, flag);
    identify(c->ckpt_dir, &ck);
    if (c->ckpt_dir[0] && within(id.canon, ck.canon) && strcmp(id.canon, ck.canon) != 0) {
        const char *rest = id.canon + strlen(ck.canon) + 1;
        if (strchr(rest, '/') || ckpt_dir_name(rest))
            return zt_errorf("%s %s is a file the run writes in --ckpt-dir %s (%s): give "
                             "%s another path (a name of its own beside the step "
                             "directories is fine)", flag, out, c->ckpt_dir, rest, flag);
    }
    char p[ZT_PATH_MAX];
    snprintf(p, sizeof p, "%s", out);
    const char *parent = dirname(p);
    if (holds(parent, "manifest.json"))
        return zt_errorf("%s %s is inside the checkpoint %s (beside its manifest.json): "
                         "writing it would corrupt the checkpoint; give %s a path outside it",
                         flag, out, parent, flag);
    return ZT_OK;
}

// An output file the run writes (`flag` `out`: --log, --trace): not an input, a file of the
// run's or a dangling link, and writable.
static zt_status check_output_file(const zt_config *c, const char *flag, const char *out,
                                   const file_set *in, const file_set *own) {
    struct stat st;
    // (opened with O_CREAT, a dangling link makes its target: a file no check above named)
    if (lstat(out, &st) == 0 && S_ISLNK(st.st_mode) && stat(out, &st) != 0)
        return zt_errorf("%s %s is a symbolic link to a file that does not exist: the %s "
                         "would be created wherever it points; give %s the file's own path",
                         flag, out, flag + 2, flag);
    ZT_TRY(file_not_an_input(c, flag, out, in, own));
    int existed = stat(out, &st) == 0;
    if (existed && S_ISDIR(st.st_mode))
        return zt_errorf("cannot write the %s file %s: it is a directory; %s takes a file path",
                         flag + 2, out, flag); // "log", "trace"
    // append, no truncation: the check changes nothing; a file it created is removed
    int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0)
        return zt_errorf("cannot write the %s file %s: %s; check that the directory exists "
                         "and is writable", flag + 2, out, strerror(errno));
    close(fd);
    if (!existed) unlink(out);
    return ZT_OK;
}

// --log and --trace are two files: one path for both would interleave them.
static zt_status log_apart_from_trace(const zt_config *c) {
    if (!c->log[0] || !c->trace[0]) return ZT_OK;
    path_id a, b;
    identify(c->log, &a);
    identify(c->trace, &b);
    if (strcmp(a.canon, b.canon) == 0 || (a.exists && b.exists && same_id(&a, &b)))
        return zt_errorf("--trace %s is the --log file %s: give the trace a file of its own",
                         c->trace, c->log);
    return ZT_OK;
}

// Creates and removes a directory in `dir`: access() says yes to root even where nothing
// can be created (/sys, a read-only mount), which showed only when the save came.
static int can_create_in(const char *dir) {
    char p[ZT_PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/.zerotrain-probe-%d", dir, (int)getpid());
    if (mkdir(p, 0700) != 0) return 0;
    rmdir(p);
    return 1;
}

// An output directory (--save, --ckpt-dir): an existing one must be a writable directory,
// and its parent must be writable too (a --save export is written into a sibling directory
// and swapped in; checkpoints are renamed into place); a new one needs a writable parent.
static zt_status check_writable_dir(const char *flag, const char *d) {
    struct stat st;
    int exists = stat(d, &st) == 0;
    if (exists) {
        if (!S_ISDIR(st.st_mode))
            return zt_errorf("%s %s exists and is not a directory: %s takes a directory", flag,
                             d, flag);
        if (access(d, W_OK | X_OK) != 0 || !can_create_in(d))
            return zt_errorf("cannot write into the %s directory %s: %s", flag, d,
                             strerror(errno));
    }
    char parent[ZT_PATH_MAX];
    snprintf(parent, sizeof parent, "%s", d);
    const char *p = dirname(parent);
    // (a parent that is a file was said "does not exist", sending the user to look for it)
    if (stat(p, &st) != 0 && errno == ENOENT)
        return zt_errorf("cannot create the %s directory %s: its parent %s does not exist", flag,
                         d, p);
    if (stat(p, &st) != 0)
        return zt_errorf("cannot create the %s directory %s: its parent %s cannot be reached: "
                         "%s; give %s a path inside a directory", flag, d, p, strerror(errno),
                         flag);
    if (!S_ISDIR(st.st_mode))
        return zt_errorf("cannot create the %s directory %s: its parent %s is not a directory "
                         "(a file); give %s a path inside a directory", flag, d, p, flag);
    if (access(p, W_OK | X_OK) != 0 || !can_create_in(p))
        return zt_errorf("cannot %s the %s directory %s in %s: %s",
                         exists ? "replace" : "create", flag, d, p, strerror(errno));
    return ZT_OK;
}

// An export directory (--save, export --out): not a link (zt_hf_export_check_dir), not an
// input directory, none of the files it replaces an input, and apart from every checkpoint
// directory (the export swaps its whole directory: one holding checkpoints, or inside one).
static zt_status export_dir_apart(const char *flag, const char *d, const file_set *in,
                                  const char *const *ckpts, const char *const *ckpt_flags,
                                  int n_ckpts) {
    ZT_TRY(zt_hf_export_check_dir(d));
    path_id id, f;
    identify(d, &id);
    const known_file *k = id.exists ? set_find(in, &id) : NULL;
    if (k) return clash(flag, d, k);
    static const char *const own[] = {"model.safetensors", "config.json"};
    char p[2 * ZT_PATH_MAX];
    for (int i = 0; i < 2 + ZT_HF_TOKENIZER_NFILES; i++) {
        snprintf(p, sizeof p, "%s/%s", d, i < 2 ? own[i] : zt_hf_tokenizer_files[i - 2]);
        identify(p, &f);
        if (f.exists && (k = set_find(in, &f)) != NULL)
            return zt_errorf("%s %s holds %s, which is %s: the export would replace it; give %s "
                             "another directory", flag, d, p, k->what, flag);
    }
    for (int i = 0; i < n_ckpts; i++) {
        if (!ckpts[i][0]) continue;
        path_id c;
        identify(ckpts[i], &c);
        if (id.canon[0] && c.canon[0] && (within(id.canon, c.canon) || within(c.canon, id.canon)))
            return zt_errorf("%s %s and %s %s are %s: an export replaces its directory as a "
                             "whole, so the two must be apart; give %s a directory outside "
                             "the checkpoints", flag, d, ckpt_flags[i], ckpts[i],
                             strcmp(id.canon, c.canon) == 0 ? "the same directory"
                                                            : "one inside the other", flag);
    }
    return ZT_OK;
}

// --ckpt-dir: not the --init-from or a checkpoint's step directory, and none of the files it
// writes or prunes an input other than the --resume checkpoint (which may be this directory).
static zt_status ckpt_dir_apart(const zt_config *c, const file_set *in) {
    file_set written = {0};
    set_add_tree(&written, "--ckpt-dir", c->ckpt_dir, 2, ckpt_dir_name);
    path_id r;
    identify(c->resume, &r);
    zt_status s = ZT_OK;
    for (int i = 1; i < written.n && s == ZT_OK; i++) { // (0: the directory, below)
        const known_file *k = set_find(in, &written.f[i].id);
        // (the --resume checkpoint may be this directory's: a run continuing in it)
        if (k && !strstr(k->what, "--resume "))
            s = zt_errorf("--ckpt-dir %s: %s is %s: the checkpoints written and pruned there "
                          "would destroy it; give --ckpt-dir another directory", c->ckpt_dir,
                          written.f[i].what, k->what);
    }
    free(written.f);
    ZT_TRY(s);
    if (holds(c->ckpt_dir, "manifest.json"))
        return zt_errorf("--ckpt-dir %s is a checkpoint's step directory (it holds "
                         "manifest.json): give the directory that holds the step-N "
                         "directories", c->ckpt_dir);
    return ZT_OK;
}

zt_status zt_outputs_check(const zt_config *c) {
    file_set in = {0}, own = {0};
    collect_inputs(c, &in);
    collect_written(c, &own);
    zt_status s = ZT_OK;
    if (c->log[0]) s = check_output_file(c, "--log", c->log, &in, &own);
    if (s == ZT_OK && c->trace[0]) s = check_output_file(c, "--trace", c->trace, &in, &own);
    if (s == ZT_OK) s = log_apart_from_trace(c);
    const char *ckpts[] = {c->ckpt_dir, c->resume};
    const char *ckpt_flags[] = {"--ckpt-dir", "--resume"};
    if (s == ZT_OK && c->save[0]) s = export_dir_apart("--save", c->save, &in, ckpts, ckpt_flags, 2);
    if (s == ZT_OK && c->save[0]) s = check_writable_dir("--save", c->save);
    if (s == ZT_OK && c->ckpt_dir[0]) s = ckpt_dir_apart(c, &in);
    if (s == ZT_OK && c->ckpt_dir[0]) s = check_writable_dir("--ckpt-dir", c->ckpt_dir);
    free(in.f);
    free(own.f);
    return s;
}

zt_status zt_outputs_check_export(const char *ckpt, const char *out) {
    file_set in = {0};
    set_add_tree(&in, "the checkpoint", ckpt, 2, NULL);
    const char *ckpts[] = {ckpt};
    const char *flags[] = {"the checkpoint"};
    zt_status s = export_dir_apart("--out", out, &in, ckpts, flags, 1);
    free(in.f);
    return s;
}
