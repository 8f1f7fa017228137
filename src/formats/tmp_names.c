// Temporary names of outputs being written, and finding a dead writer's (tmp_names.h).
#include "tmp_names.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void host_name(char *host, size_t size) {
    host[0] = 0;
    gethostname(host, size - 1);
    host[size - 1] = 0;
}

zt_status zt_tmp_name(char *out, size_t size, const char *path) {
    char host[256], b[4096];
    host_name(host, sizeof host);
    int n = snprintf(out, size, "%s.tmp.%ld.%s", path, (long)getpid(), host);
    snprintf(b, sizeof b, "%s", out);
    if (n < 0 || (size_t)n >= size || strlen(basename(b)) > NAME_MAX)
        return zt_errorf("%s: the name is too long for its temporary sibling %s.tmp.%ld.%s "
                         "(a file name holds at most %d bytes): give a shorter name", path,
                         path, (long)getpid(), host, NAME_MAX);
    return ZT_OK;
}

long zt_tmp_dead_pid(const char *name, const char *base) {
    size_t n = strlen(base);
    char host[256], *end;
    if (strncmp(name, base, n) != 0 || strncmp(name + n, ".tmp.", 5) != 0) return -1;
    const char *num = name + n + 5;
    if (*num < '0' || *num > '9') return -1;
    long pid = strtol(num, &end, 10);
    host_name(host, sizeof host);
    if (*end != '.' || strcmp(end + 1, host) != 0 || pid <= 0 || pid == (long)getpid())
        return -1;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH ? pid : -1;
}

void zt_tmp_each_dead(const char *path, void (*remove)(const char *tmp, long pid, void *arg),
                      void *arg) {
    char pd[4200], bd[4200], p[8400];
    snprintf(pd, sizeof pd, "%s", path);
    snprintf(bd, sizeof bd, "%s", path);
    const char *parent = dirname(pd), *base = basename(bd);
    DIR *d = opendir(parent);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = zt_tmp_dead_pid(e->d_name, base);
        if (pid < 0) continue;
        snprintf(p, sizeof p, "%s/%s", parent, e->d_name);
        remove(p, pid, arg);
    }
    closedir(d);
}
