// Fault injection for the shell tests, outside the production code: a library the tests load
// with LD_PRELOAD, which wraps a few libc calls and fails or kills on request.
//
//   ZT_FAULT_KILL_AFTER_SHARDS=n  this process SIGKILLs itself right after fsync of its n-th
//                                 checkpoint shard (a file shard-*.safetensors under a
//                                 tmp-step-* directory), before the checkpoint is committed;
//   ZT_FAULT_KILL_RANK=r          only on world rank r (the launcher's rank variable; 0 when
//                                 unset);
//   ZT_FAULT_NO_RENAME_EXCHANGE=1 renameat2 with RENAME_EXCHANGE fails with EINVAL, as on a
//                                 file system without the exchange;
//   ZT_FAULT_KILL_AT_RENAME=glob  this process SIGKILLs itself just before the n-th rename
//                                 (n = ZT_FAULT_RENAME_NTH, default 1) whose new path
//                                 matches glob: "*/latest" stops a save after step-N is
//                                 committed and before `latest` names it (latest.tmp left);
//                                 on ZT_FAULT_KILL_RANK only, as above;
//   ZT_FAULT_PAUSE_AT_RENAME=glob the same rename waits instead, until the file named by
//                                 ZT_FAULT_CONTINUE exists (at most 60 s): a run held alive
//                                 at a known point while a test starts another;
//   ZT_FAULT_KILL_AT_UNLINK=glob  this process SIGKILLs itself just before the n-th unlink
//                                 (n = ZT_FAULT_UNLINK_NTH, default 1) of a path matching
//                                 glob ("*step-*/*": --ckpt-keep's pruning half done); on
//                                 ZT_FAULT_KILL_RANK only;
//   ZT_FAULT_ENOSPC_AT_FSYNC=glob fsync of a file whose path matches glob fails with ENOSPC
//                                 (the data not synced), as a full disk shows on a file
//                                 system that allocates late; every rank (a shared disk);
//   ZT_FAULT_PAUSE_AT_MKDIR=glob  the first mkdir of a path matching glob waits, as
//                                 ZT_FAULT_PAUSE_AT_RENAME's rename does;
//   ZT_FAULT_STOP_AT_IBARRIER=n   this process stops itself (SIGSTOP) just before its n-th
//                                 MPI_Ibarrier (the staged collectives' synchronisation under
//                                 ZT_COMM_TIMEOUT_S), after it counted the collective as
//                                 entered: a rank hung inside a collective the others wait in;
//                                 on ZT_FAULT_KILL_RANK only;
//   ZT_FAULT_LOG=file             each fault injected appends a line there (so a test knows
//                                 the library was loaded and the fault happened).
//
// Built as build/libzt_faults.so (the Makefile); tests/sh/ckpt_faults.sh, ckpt_latest.sh,
// ckpt_lock.sh, tmp_cleanup.sh, kill_campaign.sh, rank_stalls.sh and tests/sh/hf_tokenizer_files.sh
// use it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static void note(const char *what) {
    const char *path = getenv("ZT_FAULT_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%ld %s\n", (long)getpid(), what);
    fclose(f);
}

static int world_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return env_int(vars[i], 0);
    return 0;
}

// Whether the file open as fd has a path matching glob.
static int fd_matches(int fd, const char *glob) {
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    return fnmatch(glob, path, 0) == 0;
}

static int is_ckpt_shard(int fd) { return fd_matches(fd, "*/tmp-step-*/shard-*.safetensors"); }

int fsync(int fd) {
    static int (*real)(int);
    static int shards;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    const char *full = getenv("ZT_FAULT_ENOSPC_AT_FSYNC");
    if (full && *full && fd_matches(fd, full)) {
        note("fsync fails with ENOSPC");
        errno = ENOSPC;
        return -1;
    }
    int rc = real(fd);
    int after = env_int("ZT_FAULT_KILL_AFTER_SHARDS", 0);
    if (after > 0 && is_ckpt_shard(fd) && ++shards == after &&
        world_rank() == env_int("ZT_FAULT_KILL_RANK", 0)) {
        fprintf(stderr, "faults: rank %d kills itself after %d checkpoint shards\n",
                world_rank(), shards);
        note("kill after checkpoint shard");
        raise(SIGKILL);
    }
    return rc;
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
              unsigned int flags) {
    static int (*real)(int, const char *, int, const char *, unsigned int);
    if (!real)
        real = (int (*)(int, const char *, int, const char *, unsigned int))dlsym(RTLD_NEXT,
                                                                                  "renameat2");
    if ((flags & RENAME_EXCHANGE) && env_int("ZT_FAULT_NO_RENAME_EXCHANGE", 0) == 1) {
        note("renameat2 RENAME_EXCHANGE refused");
        errno = EINVAL;
        return -1;
    }
    return real(olddirfd, oldpath, newdirfd, newpath, flags);
}

// ZT_FAULT_PAUSE_AT_RENAME's wait: until ZT_FAULT_CONTINUE exists, at most 60 s.
static void pause_until_continued(void) {
    const char *go = getenv("ZT_FAULT_CONTINUE");
    struct stat st;
    note("paused before rename");
    for (int i = 0; i < 600 && go && *go && stat(go, &st) != 0; i++) usleep(100000);
}

int mkdir(const char *path, mode_t mode) {
    static int (*real)(const char *, mode_t);
    static int seen;
    if (!real) real = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
    const char *glob = getenv("ZT_FAULT_PAUSE_AT_MKDIR");
    if (glob && *glob && fnmatch(glob, path, 0) == 0 && !seen++) pause_until_continued();
    return real(path, mode);
}

int rename(const char *oldpath, const char *newpath) {
    static int (*real)(const char *, const char *);
    static int seen;
    if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    const char *kill_at = getenv("ZT_FAULT_KILL_AT_RENAME");
    const char *pause_at = getenv("ZT_FAULT_PAUSE_AT_RENAME");
    const char *glob = kill_at && *kill_at ? kill_at : pause_at;
    if (glob && *glob && fnmatch(glob, newpath, 0) == 0 &&
        ++seen == env_int("ZT_FAULT_RENAME_NTH", 1)) {
        if (glob == pause_at) {
            pause_until_continued();
        } else if (world_rank() == env_int("ZT_FAULT_KILL_RANK", 0)) {
            fprintf(stderr, "faults: rank %d kills itself before renaming %s to %s\n",
                    world_rank(), oldpath, newpath);
            note("kill before rename");
            raise(SIGKILL);
        }
    }
    return real(oldpath, newpath);
}

int unlink(const char *path) {
    static int (*real)(const char *);
    static int seen;
    if (!real) real = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
    const char *glob = getenv("ZT_FAULT_KILL_AT_UNLINK");
    if (glob && *glob && fnmatch(glob, path, 0) == 0 &&
        ++seen == env_int("ZT_FAULT_UNLINK_NTH", 1) &&
        world_rank() == env_int("ZT_FAULT_KILL_RANK", 0)) {
        fprintf(stderr, "faults: rank %d kills itself before removing %s\n", world_rank(), path);
        note("kill before unlink");
        raise(SIGKILL);
    }
    return real(path);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) {
    static int (*real)(MPI_Comm, MPI_Request *);
    static int seen;
    if (!real) real = (int (*)(MPI_Comm, MPI_Request *))dlsym(RTLD_NEXT, "MPI_Ibarrier");
    int nth = env_int("ZT_FAULT_STOP_AT_IBARRIER", 0);
    if (nth > 0 && ++seen == nth && world_rank() == env_int("ZT_FAULT_KILL_RANK", 0)) {
        note("stop before MPI_Ibarrier");
        raise(SIGSTOP);
    }
    return real(comm, req);
}
