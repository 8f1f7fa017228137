// The lock of a checkpoint directory: one run at a time writes into a --ckpt-dir. Two runs
// in one directory interleave their step-N and `latest`, and one's --ckpt-keep deletes the
// other's newest checkpoint (seen: `latest` naming a deleted step-20). docs/checkpoints.md.
#include "ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

// This process's lock: the directory itself is flock'ed (deleting DIR/lock, the file that
// names the holder, let a second run lock a new file, and both wrote the directory), and
// every save verifies that DIR is still the directory locked (ckpt_lock_verify), before it
// creates anything and again right before its commit.
static int g_dir_fd = -1;
static char g_dir[PATHN];

// Who holds the lock, as its holder wrote it in the file ("" when it has not yet).
static void read_holder(int fd, char *out, size_t size) {
    ssize_t n = pread(fd, out, size - 1, 0);
    out[n > 0 ? n : 0] = 0;
    out[strcspn(out, "\n")] = 0;
}

// Writes this process's identity into the lock file it holds: pid, host, start time.
static void write_holder(int fd) {
    char host[256] = "?", when[64] = "?", line[512];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %z", &tm);
    int n = snprintf(line, sizeof line, "pid %ld on host %s, started %s\n", (long)getpid(),
                     host, when);
    // best effort: the lock is the flock; the text only names its holder to a second run
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != n) return;
}

// The refusal of a second run; `fd` the lock file (its text names the holder, unless it was
// deleted: then this run locked a new file, and only the directory's flock refused it).
static zt_status in_use(const char *dir, const char *path, int fd, int file_locked) {
    char who[512];
    read_holder(fd, who, sizeof who);
    if (file_locked)
        snprintf(who, sizeof who, "its lock file was deleted or replaced while it held the "
                                  "directory, so who it is is not known; never delete a lock");
    return zt_errorf("--ckpt-dir %s is in use by another run (%s; its lock: %s): two runs in "
                     "one directory mix their checkpoints and delete each other's; wait for "
                     "it to end, or give another --ckpt-dir", dir,
                     who[0] ? who : "it has not written who it is yet", path);
}

// The flock of both the file and the directory: 0, or errno (EWOULDBLOCK: held by another).
// A directory that cannot be locked otherwise (a file system that locks files only) leaves
// the file's lock alone: *dir_fd is closed and -1 then.
static int lock_both(int fd, int *dir_fd) {
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) return errno;
    if (*dir_fd >= 0 && flock(*dir_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) return errno;
        close(*dir_fd);
        *dir_fd = -1;
    }
    return 0;
}

zt_status zt_ckpt_lock(const char *dir, int *fd_out) {
    *fd_out = -1;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return zt_errorf("cannot create the checkpoint directory %s: %s", dir, strerror(errno));
    char path[PATHN];
    snprintf(path, sizeof path, "%s/" CKPT_LOCK, dir);
    // O_NONBLOCK and O_NOFOLLOW: whatever else stands at the name is refused, not waited on
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        return zt_errorf("%s is not a regular file: it is the checkpoint directory's lock; "
                         "remove it", path);
    }
    if (fd < 0)
        return zt_errorf("cannot open %s, the checkpoint directory's lock: %s", path,
                         strerror(errno));
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = lock_both(fd, &dir_fd);
    if (e == 0) {
        write_holder(fd);
        *fd_out = fd;
        g_dir_fd = dir_fd;
        snprintf(g_dir, sizeof g_dir, "%s", dir);
        return ZT_OK;
    }
    if (dir_fd >= 0) close(dir_fd);
    if (e != EWOULDBLOCK) {
        // a file system without locks (an NFS mount without lockd): the run goes on
        close(fd);
        fprintf(stderr, "zerotrain: warning: cannot lock %s: %s; a second run in --ckpt-dir %s "
                        "at the same time would not be refused\n", path, strerror(e), dir);
        return ZT_OK;
    }
    zt_status s = in_use(dir, path, fd, flock(fd, LOCK_EX | LOCK_NB) == 0);
    close(fd);
    return s;
}

void zt_ckpt_unlock(int fd) {
    if (fd >= 0) close(fd); // the lock goes with the descriptor; the file stays
    if (fd >= 0 && g_dir_fd >= 0) {
        close(g_dir_fd);
        g_dir_fd = -1;
    }
}

int ckpt_lock_holds(const char *dir) { return g_dir_fd >= 0 && strcmp(dir, g_dir) == 0; }

zt_status ckpt_lock_verify(const char *dir) {
    if (!ckpt_lock_holds(dir)) return ZT_OK; // no lock (no flock here)
    struct stat held, now;
    if (stat(dir, &now) == 0 && fstat(g_dir_fd, &held) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino)
        return ZT_OK;
    return zt_errorf("--ckpt-dir %s is no longer the directory this run locked (it was moved, "
                     "removed or replaced while the run held it): another run may be writing "
                     "there now, so this run stops without saving; move the directory back, or "
                     "resume from where its checkpoints are now", dir);
}
