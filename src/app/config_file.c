// The JSON config file given by --config: reading it, and setting options from its keys.
#include "config_options.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_keys.h"

static const char *json_type_name(const cJSON *it) {
    if (cJSON_IsBool(it)) return "a bool";
    if (cJSON_IsNull(it)) return "null";
    if (cJSON_IsNumber(it)) return "a number";
    if (cJSON_IsString(it)) return "a string";
    if (cJSON_IsArray(it)) return "an array";
    if (cJSON_IsObject(it)) return "an object";
    return "an invalid value";
}

// The user's value written as the option's type wants it, for the fix in a type error: a quoted
// number or bool unquoted, a number or bool quoted for a string option; the default (or
// `fallback`) where the value says nothing usable (an array, a string that is no number).
// want: 'n' a number, 's' a string, 'b' a bool.
static const char *suggested(const cJSON *it, char want, const char *fallback, char *buf,
                             size_t cap) {
    char raw[64] = "";
    if (cJSON_IsString(it) && it->valuestring) snprintf(raw, sizeof raw, "%s", it->valuestring);
    else if (cJSON_IsBool(it)) snprintf(raw, sizeof raw, "%s", cJSON_IsTrue(it) ? "true" : "false");
    else if (cJSON_IsNumber(it)) {
        snprintf(raw, sizeof raw, "%.15g", it->valuedouble);
        if (strtod(raw, NULL) != it->valuedouble) snprintf(raw, sizeof raw, "%.17g", it->valuedouble);
    }
    if (want == 's') {
        snprintf(buf, cap, "\"%s\"", raw[0] ? raw : fallback);
        return buf;
    }
    char *end;
    double v = raw[0] ? strtod(raw, &end) : 0;
    int is_number = raw[0] && !*end && isfinite(v);
    int is_bool = strcmp(raw, "true") == 0 || strcmp(raw, "false") == 0;
    snprintf(buf, cap, "%s", (want == 'n' ? is_number : is_bool) ? raw : fallback);
    return buf;
}

// Sets option `o` from a JSON value. Numbers must be JSON numbers (a quoted "8" is a
// mistake worth reporting, not guessing at), integers integral and in range.
static zt_status set_from_json(zt_config *cfg, const opt_desc *o, const cJSON *it,
                               const char *where) {
    void *field = (char *)cfg + o->offset;
    char fix[80];
    switch (o->type) {
    case OPT_STR:
        if (!cJSON_IsString(it) || !it->valuestring)
            return zt_errorf("%s must be a string, got %s: write \"%s\": %s", where,
                             json_type_name(it), o->name,
                             suggested(it, 's', o->def[0] ? o->def : "...", fix, sizeof fix));
        return zt_opt_set_string(cfg, o, it->valuestring, where);
    case OPT_ENUM:
        if (!cJSON_IsString(it) || !it->valuestring)
            return zt_errorf("%s must be a string, got %s: write \"%s\": %s", where,
                             json_type_name(it), o->name,
                             suggested(it, 's', o->def[0] ? o->def : o->names[0].name, fix,
                                       sizeof fix));
        return zt_opt_set_enum(cfg, o, it->valuestring, where);
    case OPT_BOOL:
        if (!cJSON_IsBool(it))
            return zt_errorf("%s must be true or false (unquoted), got %s: write \"%s\": %s",
                             where, json_type_name(it), o->name,
                             suggested(it, 'b', o->def[0] == 't' ? "true" : "false", fix,
                                       sizeof fix));
        *(int *)field = cJSON_IsTrue(it) ? 1 : 0;
        return ZT_OK;
    case OPT_INT:
    case OPT_U64: {
        const char *kind = o->type == OPT_INT ? "an integer" : "a non-negative integer";
        if (!cJSON_IsNumber(it))
            return zt_errorf("%s must be %s (a JSON number, unquoted), got %s: write \"%s\": %s",
                             where, kind, json_type_name(it), o->name,
                             suggested(it, 'n', o->def, fix, sizeof fix));
        double v = it->valuedouble;
        if (!isfinite(v) || v != floor(v))
            return zt_errorf("%s must be %s, got %g", where, kind, v);
        if (o->type == OPT_INT) {
            if (v < INT_MIN || v > INT_MAX)
                return zt_errorf("%s: %.17g is out of range for an int", where, v);
            *(int *)field = (int)v;
        } else {
            // JSON numbers arrive as doubles; above 2^53 the file's digits are already lost.
            if (v < 0 || v > 9007199254740992.0)
                return zt_errorf("%s: %.17g is outside [0, 2^53], where a JSON number is exact: "
                                 "pass larger values with --%s",
                                 where, v, o->name);
            *(uint64_t *)field = (uint64_t)v;
        }
        return ZT_OK;
    }
    case OPT_FLOAT:
        if (!cJSON_IsNumber(it))
            return zt_errorf("%s must be a number (unquoted), got %s: write \"%s\": %s", where,
                             json_type_name(it), o->name, suggested(it, 'n', o->def, fix, sizeof fix));
        if (!isfinite(it->valuedouble) || fabs(it->valuedouble) > FLT_MAX)
            return zt_errorf("%s: %g is not a finite 32-bit float", where, it->valuedouble);
        *(float *)field = (float)it->valuedouble;
        return ZT_OK;
    }
    ZT_ASSERTF(0, "option %s has an unknown type %d", o->name, (int)o->type);
}

// The most a config file may hold: a few hundred options fit in a few kB; /dev/zero or a
// wrong path to a data file must not be read until memory runs out.
#define CONFIG_MAX_BYTES (1u << 20)
// How long a pipe may take to deliver the text: a FIFO that no one writes blocked forever.
#define CONFIG_PIPE_WAIT_MS 10000

// Opens without blocking (a FIFO without a writer blocked open(2)), then takes a regular
// file or a pipe (process substitution, /dev/fd/N); a device, socket or directory is refused.
static zt_status open_config(const char *path, int *fd, int *is_pipe) {
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0)
        return zt_errorf("cannot open config file %s: %s: check the path given to --config",
                         path, strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
        *is_pipe = S_ISFIFO(st.st_mode);
        return ZT_OK;
    }
    close(*fd);
    return zt_errorf("cannot read config file %s: it is %s: --config takes a JSON file (or a "
                     "pipe)", path,
                     S_ISDIR(st.st_mode) ? "a directory" : "not a regular file (a device or a "
                                                           "socket)");
}

// One read of at most `n` bytes; a pipe first waits up to CONFIG_PIPE_WAIT_MS for data or
// its writer's end (a FIFO opened before its writer reads as ended: poll(2) waits for one).
// 0 at the end; -1 with errno (ETIMEDOUT when the pipe's writer never came).
static ssize_t read_some(int fd, int is_pipe, char *p, size_t n) {
    for (;;) {
        struct pollfd w = {fd, POLLIN, 0};
        int r = is_pipe ? poll(&w, 1, CONFIG_PIPE_WAIT_MS) : 1;
        if (r == 0) errno = ETIMEDOUT;
        ssize_t got = r > 0 ? read(fd, p, n) : -1;
        if (got >= 0 || (errno != EAGAIN && errno != EINTR)) return got;
    }
}

// Reads the whole file into a NUL-terminated buffer the caller frees, at most
// CONFIG_MAX_BYTES. Reads in a loop rather than trusting the size, so pipes and /dev/fd
// paths work too (zt_read_file in common.h takes regular files only).
static zt_status read_whole_file(const char *path, char **out, size_t *out_len) {
    int fd, is_pipe = 0;
    ZT_TRY(open_config(path, &fd, &is_pipe));
    char *buf = malloc(CONFIG_MAX_BYTES + 2);
    ZT_ASSERTF(buf, "out of memory reading %s", path);
    size_t len = 0;
    ssize_t got = 1;
    while (len <= CONFIG_MAX_BYTES &&
           (got = read_some(fd, is_pipe, buf + len, CONFIG_MAX_BYTES + 1 - len)) > 0)
        len += (size_t)got;
    int err = got < 0 ? errno : 0;
    close(fd);
    zt_status s = ZT_OK;
    if (err == ETIMEDOUT)
        s = zt_errorf("config file %s is a pipe that gave nothing for %d s (a FIFO that no one "
                      "writes?): write the options to a file and give --config its path",
                      path, CONFIG_PIPE_WAIT_MS / 1000);
    else if (err)
        s = zt_errorf("cannot read config file %s: %s: --config needs a readable JSON file",
                      path, strerror(err));
    else if (len > CONFIG_MAX_BYTES)
        s = zt_errorf("config file %s is larger than %u bytes: a config file holds options "
                      "(a few kB); check the path given to --config", path, CONFIG_MAX_BYTES);
    if (s != ZT_OK) {
        free(buf);
        return s;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return ZT_OK;
}

// The line and column of `end` in `buf`, for messages.
static void line_col(const char *buf, const char *end, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (const char *p = buf; p < end; p++) {
        if (*p == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

static zt_status apply_json_object(zt_config *cfg, const cJSON *root, const char *path,
                                   unsigned char *set) {
    for (const cJSON *it = root->child; it; it = it->next) {
        const char *key = it->string ? it->string : "";
        // a key twice in one file is an editing slip (flags may repeat: the last wins)
        for (const cJSON *before = root->child; before != it; before = before->next)
            if (before->string && strcmp(before->string, key) == 0)
                return zt_errorf("config file %s: key \"%s\" appears twice: keep one", path,
                                 key);
        if (strcmp(key, "config") == 0)
            return zt_errorf("config file %s: key \"config\" is not allowed in a config file "
                             "(files do not include other files): remove it",
                             path);
        const opt_desc *o = zt_opt_find(key, strlen(key));
        if (!o) {
            const char *s = zt_opt_suggest(key, strlen(key), 0);
            if (s)
                return zt_errorf("config file %s: unknown key \"%s\"; did you mean \"%s\"? "
                                 "(keys are the flag names without \"--\"; zerotrain --help "
                                 "lists them)",
                                 path, key, s);
            return zt_errorf("config file %s: unknown key \"%s\" (keys are the flag names "
                             "without \"--\"; zerotrain --help lists them)",
                             path, key);
        }
        char where[ZT_PATH_MAX + 64];
        snprintf(where, sizeof where, "config file %s: key \"%s\"", path, o->name);
        ZT_TRY(set_from_json(cfg, o, it, where));
        set[o - zt_opts] = 1;
    }
    return ZT_OK;
}

zt_status zt_config_file_apply(zt_config *cfg, const char *path, unsigned char *set) {
    if (!path[0]) return zt_errorf("--config is empty: write --config FILE.json");
    char *buf = NULL;
    size_t len = 0;
    ZT_TRY(read_whole_file(path, &buf, &len));
    if (memchr(buf, '\0', len)) {
        free(buf);
        return zt_errorf("config file %s contains a NUL byte: it must be a JSON text file", path);
    }
    if (buf[strspn(buf, " \t\r\n")] == '\0') {
        free(buf);
        return zt_errorf("config file %s is empty: write a JSON object such as {\"steps\": 100}",
                         path);
    }
    size_t at;
    const char *lenient = zt_json_lenient_part(buf, len, &at);
    if (lenient) {
        int line, col;
        line_col(buf, buf + at, &line, &col);
        zt_status st = zt_errorf("config file %s is not valid JSON: %s at line %d, column %d: "
                                 "fix it there", path, lenient, line, col);
        free(buf);
        return st;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(buf, &end, 1);
    if (!root) {
        // cJSON reports where it stopped; turn that into a line and column.
        if (!end || end < buf || end > buf + len) end = buf + len;
        int line, col;
        line_col(buf, end, &line, &col);
        // Quote the rest of the offending line (at most 20 characters) for context.
        int near = (int)strcspn(end, "\r\n");
        if (near > 20) near = 20;
        zt_status st = zt_errorf("config file %s is not valid JSON: error at line %d, column %d "
                                 "(%s%.*s%s): fix the syntax there",
                                 path, line, col, near ? "near \"" : "at the end of the line",
                                 near, end, near ? "\"" : "");
        free(buf);
        return st;
    }
    zt_status st = ZT_OK;
    if (!cJSON_IsObject(root))
        st = zt_errorf("config file %s: the top level must be a JSON object such as "
                       "{\"steps\": 100}, got %s",
                       path, json_type_name(root));
    else
        st = apply_json_object(cfg, root, path, set);
    cJSON_Delete(root);
    free(buf);
    return st;
}
