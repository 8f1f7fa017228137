// The train/validation pairing marker and a killed prepare's temporaries (data_pairing.h).
#include "data_pairing.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmp_names.h"

#define UNPAIRED ".unpaired"

static void marker_path(char *out, size_t size, const char *train) {
    snprintf(out, size, "%s" UNPAIRED, train);
}

// fsync of the directory holding `path`, so a rename or a new name in it is on disk.
static void sync_parent(const char *path) {
    char d[4200];
    snprintf(d, sizeof d, "%s", path);
    int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

zt_status zt_pair_begin(const char *train, const char *val) {
    char m[4200];
    marker_path(m, sizeof m, train);
    FILE *f = fopen(m, "w");
    int ok = f && fprintf(f, "%s\n", val) > 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) {
        int e = errno;
        unlink(m);
        return zt_errorf("cannot write %s (the mark that %s and %s are being replaced): %s",
                         m, train, val, strerror(e));
    }
    sync_parent(m);
    return ZT_OK;
}

void zt_pair_end(const char *train) {
    char m[4200];
    marker_path(m, sizeof m, train);
    unlink(m);
    sync_parent(m);
}

zt_status zt_pair_check(const char *train, const char *val) {
    char m[4200];
    struct stat st;
    marker_path(m, sizeof m, train);
    if (lstat(m, &st) != 0) return ZT_OK;
    return zt_errorf("--data %s was written by a `zerotrain prepare` that stopped before it put "
                     "its validation file in place (%s says so): --val-data %s may be an older "
                     "file that does not match it; run the prepare again", train, m, val);
}

static void remove_dead_tmp(const char *tmp, long pid, void *arg) {
    (void)arg;
    if (unlink(tmp) == 0)
        printf("zerotrain: removed %s, a token file of a prepare that did not finish (pid %ld on "
               "this host, no longer running)\n", tmp, pid);
}

void zt_token_tmps_remove_dead(const char *path) {
    zt_tmp_each_dead(path, remove_dead_tmp, NULL);
    fflush(stdout);
}
