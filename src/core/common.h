// Shared definitions: status codes, the two tiers of error checks, alignment.
#ifndef ZT_COMMON_H
#define ZT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

// A returned status for what a user can fix (config, data, checkpoints, layout).
// The message lives in one process-wide buffer set by zt_errorf; the caller that
// finally gives up prints it once (rank 0 only, see zt_error_report).
typedef enum { ZT_OK = 0, ZT_ERR = 1 } zt_status;

// Sets the pending error message and returns ZT_ERR, so `return zt_errorf(...)` reads well.
zt_status zt_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// The pending message ("" if none).
const char *zt_error_message(void);
// Prints "zerotrain: error: <message>" to stderr when `print` is true; used by main
// so that only rank 0 speaks for a problem every rank found.
void zt_error_report(int print);

// Opens `path` for reading only if it is a regular file. The open is non-blocking: a FIFO
// without a writer (or a tty, some devices) would otherwise block it forever; fstat then
// refuses anything that is not a regular file, and the reads are made blocking again. -1
// (NULL) with errno: open's, EISDIR for a directory, EINVAL for any other file that is not
// regular (zt_file_error words it). Every input that must be a file opens through these;
// --config alone reads pipes (config_file.c).
int zt_open_regular(const char *path);
FILE *zt_fopen_regular(const char *path);
// strerror(e), except EINVAL (zt_open_regular's refusal): "not a regular file (a FIFO, a
// device or a socket)".
const char *zt_file_error(int e);

// A regular file's whole text, NUL-terminated (*len its bytes; len may be NULL); NULL with
// errno set when it cannot be read: EISDIR, or EINVAL for another non-regular file (a
// directory's "size" would be taken as a length, a FIFO would block). The caller frees it.
char *zt_read_file(const char *path, size_t *len);

// Writes `s` as a JSON string: quoted, with '"', '\\' and control characters escaped, valid
// UTF-8 as it is, and each byte that is not valid UTF-8 (a path of another encoding) as
// \udcXX, Python's surrogateescape, so the line stays valid JSON and the bytes come back
// (os.fsencode of the decoded string).
void zt_json_string(FILE *f, const char *s);

// The offset of the first byte of s[0..n) that does not begin a valid UTF-8 sequence (an
// overlong form, a surrogate, past U+10FFFF, cut short), or n when all of it is valid.
size_t zt_utf8_invalid_at(const char *s, size_t n);

// Propagate a status: ZT_TRY(f(x)); returns from the caller on error.
#define ZT_TRY(expr)                          \
    do {                                      \
        zt_status zt_try_s_ = (expr);         \
        if (zt_try_s_ != ZT_OK) return zt_try_s_; \
    } while (0)

// Always-on fatal checks for bugs and broken libraries (never for user input).
void zt_fatal(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
#define ZT_ASSERT(cond)                                                        \
    do {                                                                       \
        if (!(cond)) zt_fatal(__FILE__, __LINE__, "assertion failed: %s", #cond); \
    } while (0)
#define ZT_ASSERTF(cond, ...)                                  \
    do {                                                       \
        if (!(cond)) zt_fatal(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

// Called by zt_fatal before abort(): main installs the MPI abort here, so a failed
// check on one rank ends every rank instead of leaving them waiting in a collective.
void zt_set_fatal_hook(void (*hook)(int code));

// This process's rank in the world, for messages (set once the grid exists; 0 before).
void zt_set_log_rank(int rank);
int zt_log_rank(void);

static inline size_t zt_round_up(size_t x, size_t multiple) {
    return (x + multiple - 1) / multiple * multiple;
}
static inline size_t zt_min_sz(size_t a, size_t b) { return a < b ? a : b; }

// Seconds on the monotonic clock (for durations: the time spent in communication calls).
static inline double zt_mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
