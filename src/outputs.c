// Output paths checked before step 1, so a run never trains for hours and then fails to
// write, and never truncates one of its own inputs (a --log naming the data file did).
#include "outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// Refuses `out` when it exists and is the same file as one of the inputs.
static zt_status not_an_input(const zt_config *c, const char *flag, const char *out) {
    struct stat o, in;
    if (stat(out, &o) != 0) return ZT_OK;
    const char *names[] = {"--data", "--val-data", "--init-from", "--config"};
    const char *paths[] = {c->data, c->val_data, c->init_from, c->config};
    for (int i = 0; i < 4; i++)
        if (paths[i][0] && stat(paths[i], &in) == 0 && in.st_dev == o.st_dev &&
            in.st_ino == o.st_ino)
            return zt_errorf("%s %s is the same file as %s %s: writing it would destroy the "
                             "input; give %s another path", flag, out, names[i], paths[i], flag);
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

static zt_status check_save(const zt_config *c) {
    const char *d = c->save;
    struct stat st;
    if (stat(d, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return zt_errorf("--save %s exists and is not a directory: --save takes a directory "
                             "(model.safetensors and config.json are written into it)", d);
        char f[ZT_PATH_MAX + 32];
        snprintf(f, sizeof f, "%s/model.safetensors", d);
        ZT_TRY(not_an_input(c, "--save", f));
        snprintf(f, sizeof f, "%s/config.json", d);
        ZT_TRY(not_an_input(c, "--save", f));
        if (access(d, W_OK | X_OK) != 0)
            return zt_errorf("cannot write into the --save directory %s: %s", d, strerror(errno));
        return ZT_OK;
    }
    char parent[ZT_PATH_MAX];
    snprintf(parent, sizeof parent, "%s", d);
    const char *p = dirname(parent);
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        return zt_errorf("cannot create the --save directory %s: its parent %s does not exist",
                         d, p);
    if (access(p, W_OK | X_OK) != 0)
        return zt_errorf("cannot create the --save directory %s in %s: %s", d, p,
                         strerror(errno));
    return ZT_OK;
}

zt_status zt_outputs_check(const zt_config *c) {
    if (c->log[0]) ZT_TRY(check_log(c));
    if (c->save[0]) ZT_TRY(check_save(c));
    return ZT_OK;
}
