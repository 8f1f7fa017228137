// Error reporting: the pending user-facing message and fatal checks; opening input files.
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_error[2048];
static int g_rank;
static void (*g_fatal_hook)(int);

void zt_set_fatal_hook(void (*hook)(int code)) { g_fatal_hook = hook; }

zt_status zt_errorf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
    return ZT_ERR;
}

const char *zt_error_message(void) { return g_error; }

void zt_error_report(int print) {
    if (print) fprintf(stderr, "zerotrain: error: %s\n", g_error[0] ? g_error : "unknown error");
}

void zt_fatal(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "zerotrain: fatal (rank %d) %s:%d: ", g_rank, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    if (g_fatal_hook) g_fatal_hook(1);
    abort();
}

void zt_set_log_rank(int rank) { g_rank = rank; }
int zt_log_rank(void) { return g_rank; }

int zt_open_regular(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -1;
    struct stat st;
    int ok = fstat(fd, &st) == 0;
    if (!ok || !S_ISREG(st.st_mode)) {
        int e = !ok ? errno : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        close(fd);
        errno = e;
        return -1;
    }
    // blocking again: a regular file's reads never wait for a writer, and some readers
    // (stdio, mmap) expect the usual semantics
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

FILE *zt_fopen_regular(const char *path) {
    int fd = zt_open_regular(path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

const char *zt_file_error(int e) {
    return e == EINVAL ? "not a regular file (a FIFO, a device or a socket)" : strerror(e);
}

char *zt_read_file(const char *path, size_t *len) {
    FILE *f = zt_fopen_regular(path);
    if (!f) return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        int e = errno;
        fclose(f);
        errno = e;
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    ZT_ASSERT(buf);
    size_t got = fread(buf, 1, (size_t)st.st_size, f);
    fclose(f);
    buf[got] = 0;
    if (len) *len = got;
    return buf;
}

// The length of the valid UTF-8 sequence at p (1 to 4), or 0 (an invalid or overlong
// sequence, a surrogate, past U+10FFFF, or cut short).
static int utf8_len(const unsigned char *p) {
    unsigned c = p[0];
    int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n <= 1) return n;
    unsigned cp = c & (0x7F >> n);
    for (int k = 1; k < n; k++) {
        if ((p[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[k] & 0x3F);
    }
    static const unsigned least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

size_t zt_utf8_invalid_at(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t k = 0; k < n;) {
        int len = p[k] ? utf8_len(p + k) : 1;
        if (len == 0 || k + (size_t)len > n) return k;
        k += (size_t)len;
    }
    return n;
}

void zt_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_len(p);
        if (n == 0) fprintf(f, "\\udc%02x", *p); // Python's surrogateescape: os.fsencode(
                                                 // json.loads(...)) gives the bytes back
        else if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fwrite(p, 1, (size_t)n, f);
        p += n ? n : 1;
    }
    fputc('"', f);
}
