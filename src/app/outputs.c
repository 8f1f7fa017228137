// Output paths checked before step 1, so a run never trains for hours and then fails to
// write, and never truncates one of its own inputs (a --log naming the data file did).
#include "outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// "dir/name" with dir canonical; 0 when the directory does not exist.
static int canonical(const char *p, char *out, size_t size) {
    char d[ZT_PATH_MAX], b[ZT_PATH_MAX], real[PATH_MAX];
    snprintf(d, sizeof d, "%s", p);
    snprintf(b, sizeof b, "%s", p);
    if (!realpath(dirname(d), real)) return 0;
    snprintf(out, size, "%s/%s", real, basename(b));
    return 1;
}

int zt_same_path(const char *a, const char *b) {
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) return 0;
    char ca[ZT_PATH_MAX + PATH_MAX], cb[ZT_PATH_MAX + PATH_MAX];
    return canonical(a, ca, sizeof ca) && canonical(b, cb, sizeof cb) && strcmp(ca, cb) == 0;
}

// Whether `dir` holds a file named `name` (a regular file).
static int holds(const char *dir, const char *name) {
    char p[2 * ZT_PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

// Refuses `out` when it is the same file as one of the inputs, or one of the files an
// input directory holds: the model files of an --init-from directory, `latest` of a
// --resume directory, anything in a checkpoint's step directory (beside a manifest.json).
static zt_status not_an_input(const zt_config *c, const char *flag, const char *out) {
    struct stat o;
    if (stat(out, &o) != 0) return ZT_OK;
    const char *names[] = {"--data", "--val-data", "--init-from", "--config", "--resume"};
    const char *paths[] = {c->data, c->val_data, c->init_from, c->config, c->resume};
    static const char *const inside[] = {"model.safetensors", "config.json", "latest",
                                         "manifest.json"};
    char p[2 * ZT_PATH_MAX];
    for (int i = 0; i < 5; i++) {
        if (!paths[i][0]) continue;
        // (--resume may be the --ckpt-dir itself: a run continuing in its own directory)
        if (i < 4 && zt_same_path(paths[i], out))
            return zt_errorf("%s %s is the same file as %s %s: writing it would destroy the "
                             "input; give %s another path", flag, out, names[i], paths[i], flag);
        for (size_t k = 0; k < sizeof inside / sizeof *inside; k++) {
            snprintf(p, sizeof p, "%s/%s", paths[i], inside[k]);
            if (zt_same_path(p, out))
                return zt_errorf("%s %s is %s of %s %s: writing it would destroy the input; "
                                 "give %s another path", flag, out, inside[k], names[i],
                                 paths[i], flag);
        }
    }
    snprintf(p, sizeof p, "%s", out);
    const char *parent = dirname(p);
    if (!S_ISDIR(o.st_mode) && holds(parent, "manifest.json"))
        return zt_errorf("%s %s is inside the checkpoint %s (beside its manifest.json): "
                         "writing it would corrupt the checkpoint; give %s a path outside it",
                         flag, out, parent, flag);
    return ZT_OK;
}

static zt_status check_log(const zt_config *c) {
    ZT_TRY(not_an_input(c, "--log", c->log));
    struct stat st;
    int existed = stat(c->log, &st) == 0;
    if (existed && S_ISDIR(st.st_mode))
        return zt_errorf("cannot write the log file %s: it is a directory; --log takes a file "
                         "path", c->log);
    // append, no truncation: the check changes nothing; a file it created is removed
    int fd = open(c->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0)
        return zt_errorf("cannot write the log file %s: %s; check that the directory exists "
                         "and is writable", c->log, strerror(errno));
    close(fd);
    if (!existed) unlink(c->log);
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

// An output directory (--save, --ckpt-dir): an existing one must be a writable directory
// whose files `files` are not inputs, and its parent must be writable too (a --save export
// is written into a sibling directory and swapped in; checkpoints are renamed into place);
// a new one needs a writable parent.
static zt_status check_out_dir(const zt_config *c, const char *flag, const char *d,
                               const char *const *files, int n_files) {
    struct stat st;
    int exists = stat(d, &st) == 0;
    if (exists) {
        if (!S_ISDIR(st.st_mode))
            return zt_errorf("%s %s exists and is not a directory: %s takes a directory", flag,
                             d, flag);
        ZT_TRY(not_an_input(c, flag, d)); // an input directory (--init-from a HF export)
        char f[ZT_PATH_MAX + 32];
        for (int i = 0; i < n_files; i++) {
            snprintf(f, sizeof f, "%s/%s", d, files[i]);
            ZT_TRY(not_an_input(c, flag, f));
        }
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

zt_status zt_outputs_check(const zt_config *c) {
    if (c->log[0]) ZT_TRY(check_log(c));
    static const char *const export_files[] = {"model.safetensors", "config.json"};
    if (c->save[0]) ZT_TRY(check_out_dir(c, "--save", c->save, export_files, 2));
    if (c->ckpt_dir[0]) ZT_TRY(check_out_dir(c, "--ckpt-dir", c->ckpt_dir, NULL, 0));
    return ZT_OK;
}
