// safetensors reader and writer. Format (little endian):
//
//   uint64 N                       length of the JSON header
//   N bytes JSON                   {"name": {"dtype": "F32", "shape": [..],
//                                   "data_offsets": [begin, end]}, ...,
//                                   "__metadata__": {"format": "pt"}}
//                                  padded with spaces so the data starts 8-aligned
//   the tensor bytes               offsets relative to the end of the header
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "json_keys.h"

static const char *dtype_name(zt_st_dtype d) {
    switch (d) {
    case ZT_ST_F32: return "F32";
    case ZT_ST_F16: return "F16";
    case ZT_ST_BF16: return "BF16";
    case ZT_ST_U8: return "U8";
    }
    return "?";
}
static size_t dtype_size(zt_st_dtype d) {
    return d == ZT_ST_F32 ? 4 : d == ZT_ST_U8 ? 1 : 2;
}

// Appends to a growing buffer.
typedef struct {
    char *p;
    size_t len, cap;
} sbuf;
static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void sb_printf(sbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        ZT_ASSERT(k >= 0);
        if (b->len + (size_t)k < b->cap) {
            b->len += (size_t)k;
            return;
        }
        b->cap = 2 * (b->cap + (size_t)k + 64);
        b->p = realloc(b->p, b->cap);
        ZT_ASSERT(b->p);
    }
}

// fwrite that also hashes what it writes (XXH3-64, streaming: no second pass over the data).
static int hwrite(FILE *f, const void *p, size_t n, XXH3_state_t *h) {
    if (h) ZT_ASSERT(XXH3_64bits_update(h, p, n) == XXH_OK);
    return fwrite(p, 1, n, f) == n;
}

zt_status zt_safetensors_write_ex(const char *path, const zt_st_tensor *t, int n,
                                  const char *meta, int direct, uint64_t *hash,
                                  uint64_t *bytes) {
    sbuf hdr = {malloc(256), 0, 256};
    ZT_ASSERT(hdr.p);
    sb_printf(&hdr, "{\"__metadata__\":{%s}", meta ? meta : "\"format\":\"pt\"");
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t cnt = (uint64_t)t[i].shape[0] * (t[i].ndim == 2 ? (uint64_t)t[i].shape[1] : 1);
        uint64_t nb = cnt * dtype_size(t[i].dtype);
        sb_printf(&hdr, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld", t[i].name,
                  dtype_name(t[i].dtype), (long long)t[i].shape[0]);
        if (t[i].ndim == 2) sb_printf(&hdr, ",%lld", (long long)t[i].shape[1]);
        sb_printf(&hdr, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                  (unsigned long long)(off + nb));
        off += nb;
    }
    sb_printf(&hdr, "}");
    while ((8 + hdr.len) % 8) sb_printf(&hdr, " ");
    char tmp[4096];
    if (direct) snprintf(tmp, sizeof tmp, "%s", path);
    else snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(hdr.p);
        return zt_errorf("cannot write %s: %s", tmp, strerror(errno));
    }
    uint64_t hlen = hdr.len;
    XXH3_state_t *h = NULL;
    if (hash) {
        h = XXH3_createState();
        ZT_ASSERT(h && XXH3_64bits_reset(h) == XXH_OK);
    }
    int ok = hwrite(f, &hlen, 8, h) && hwrite(f, hdr.p, hdr.len, h);
    for (int i = 0; ok && i < n; i++) {
        size_t cnt = (size_t)t[i].shape[0] * (size_t)(t[i].ndim == 2 ? t[i].shape[1] : 1);
        ok = hwrite(f, t[i].data, cnt * dtype_size(t[i].dtype), h);
    }
    // on disk before the rename, so a crash leaves the old file or the whole new one; the
    // message gives the first failure's errno
    int err = ok ? 0 : errno;
    uint64_t digest = h ? XXH3_64bits_digest(h) : 0;
    XXH3_freeState(h);
    if (fflush(f) != 0 && !err) err = errno;
    if (fsync(fileno(f)) != 0 && !err) err = errno;
    if (fclose(f) != 0 && !err) err = errno;
    free(hdr.p);
    if (!err && !direct && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        return zt_errorf("writing %s failed: %s", path, strerror(err));
    }
    if (hash) *hash = digest;
    if (bytes) *bytes = 8 + hlen + off;
    return ZT_OK;
}

zt_status zt_safetensors_write(const char *path, const zt_st_tensor *t, int n) {
    return zt_safetensors_write_ex(path, t, n, NULL, 0, NULL, NULL);
}

// ---------------------------------------------------------------- reading

void zt_st_close(zt_st_file *f) {
    if (f->map) munmap(f->map, f->map_bytes);
    for (int i = 0; i < f->n; i++) free(f->t[i].name);
    free(f->t);
    memset(f, 0, sizeof *f);
}

// What every refusal of a bad header ends with: such a file is not ours to repair.
#define REWRITE "write or download the file again"

// A count or byte offset from the header. JSON numbers are doubles: one is taken only when
// it is a whole number in [0, 2^53] (exact in a double, and past any file); the range is
// checked before the cast, since a double outside size_t's range converts to anything
// (undefined behaviour: 8.9e49 passed every later check as some offset).
static int whole_count(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0)) return 0;
    *out = (uint64_t)d;
    return (double)*out == d; // 256.5 is no count (it was read as 256)
}

static zt_status parse_dtype(const char *path, const char *key, const char *d, zt_st_entry *t) {
    if (strcmp(d, "F32") == 0) t->dtype = ZT_ST_F32;
    else if (strcmp(d, "F16") == 0) t->dtype = ZT_ST_F16;
    else if (strcmp(d, "BF16") == 0) t->dtype = ZT_ST_BF16;
    else if (strcmp(d, "U8") == 0) t->dtype = ZT_ST_U8;
    else
        return zt_errorf("%s: tensor '%s' has dtype %s; zerotrain reads F32, BF16, F16 (and U8 "
                         "optimizer codes)", path, key, d);
    return ZT_OK;
}

// The shape's dimensions and their product, which must count in 64 bits with its bytes:
// [2^40, 2^24] is 2^64 elements, 0 once wrapped, and matched data_offsets [0, 0].
static zt_status parse_shape(const char *path, const char *key, const cJSON *sh, zt_st_entry *t) {
    t->ndim = cJSON_GetArraySize(sh);
    if (t->ndim > 4) return zt_errorf("%s: tensor '%s' has %d dimensions", path, key, t->ndim);
    char dims[160] = "";
    int wrapped = 0;
    uint64_t numel = 1;
    for (int k = 0; k < t->ndim; k++) {
        const cJSON *v = cJSON_GetArrayItem(sh, k);
        uint64_t d;
        if (!whole_count(v, &d))
            return zt_errorf("%s is corrupt: tensor '%s' has dimension %.15g in its shape, not a "
                             "whole number from 0 to 2^53: " REWRITE, path, key,
                             cJSON_IsNumber(v) ? v->valuedouble : NAN);
        t->shape[k] = (int64_t)d;
        wrapped |= __builtin_mul_overflow(numel, d, &numel);
        size_t len = strlen(dims);
        snprintf(dims + len, sizeof dims - len, "%s%llu", k ? ", " : "", (unsigned long long)d);
    }
    uint64_t bytes;
    if (wrapped || __builtin_mul_overflow(numel, (uint64_t)dtype_size(t->dtype), &bytes))
        return zt_errorf("%s is corrupt: tensor '%s' has shape [%s], more bytes than 64 bits "
                         "count: " REWRITE, path, key, dims);
    t->numel = (size_t)numel;
    return ZT_OK;
}

static zt_status parse_offsets(const char *path, const char *key, const cJSON *off,
                               size_t data_bytes, zt_st_entry *t) {
    const cJSON *b = cJSON_GetArrayItem(off, 0), *en = cJSON_GetArrayItem(off, 1);
    uint64_t begin, end;
    if (!whole_count(b, &begin) || !whole_count(en, &end) || end < begin)
        return zt_errorf("%s is corrupt: tensor '%s' has data_offsets [%.15g, %.15g], not two "
                         "whole numbers from 0 to 2^53 in order: " REWRITE, path, key,
                         cJSON_IsNumber(b) ? b->valuedouble : NAN,
                         cJSON_IsNumber(en) ? en->valuedouble : NAN);
    t->begin = (size_t)begin;
    t->end = (size_t)end;
    if (t->end - t->begin != t->numel * dtype_size(t->dtype))
        return zt_errorf("%s is corrupt: tensor '%s' has %zu bytes for %zu %s values", path, key,
                         t->end - t->begin, t->numel, dtype_name(t->dtype));
    if (t->end > data_bytes)
        return zt_errorf("%s is truncated: tensor '%s' ends at byte %zu of a %zu-byte data "
                         "section", path, key, t->end, data_bytes);
    return ZT_OK;
}

static zt_status parse_entry(zt_st_file *f, const cJSON *e, size_t data_bytes) {
    zt_st_entry *t = &f->t[f->n];
    memset(t, 0, sizeof *t);
    const char *path = f->path, *key = e->string;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsObject(e) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
        cJSON_GetArraySize(off) != 2)
        return zt_errorf("%s is corrupt: tensor '%s' lacks dtype, shape or data_offsets", path,
                         key);
    const char *twice = zt_json_duplicate_key(e);
    if (twice)
        return zt_errorf("%s is corrupt: tensor '%s' gives '%s' twice: " REWRITE, path, key,
                         twice);
    ZT_TRY(parse_dtype(path, key, dt->valuestring, t));
    ZT_TRY(parse_shape(path, key, sh, t));
    ZT_TRY(parse_offsets(path, key, off, data_bytes, t));
    t->name = strdup(key);
    ZT_ASSERT(t->name);
    f->n++;
    return ZT_OK;
}

// __metadata__ is safetensors' free-form text: an object of strings, or absent.
static zt_status check_metadata(const char *path, const cJSON *meta) {
    const cJSON *v;
    int ok = cJSON_IsObject(meta);
    if (ok) cJSON_ArrayForEach(v, meta) ok &= cJSON_IsString(v);
    if (!ok)
        return zt_errorf("%s is corrupt: its '__metadata__' is not an object of strings (the "
                         "safetensors format keeps free-form text there): " REWRITE, path);
    return ZT_OK;
}

// An entry's byte range and its place in the header, sorted by begin, then end (an empty
// tensor first), ties in header order.
typedef struct {
    size_t begin, end;
    int i;
} st_place;
static int by_begin(const void *a, const void *b) {
    const st_place *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->i - y->i;
}

// The data section is the tensors end to end, as the reference implementation requires:
// sorted by offset, each begins where the one before ends and the last ends at the file's
// end. A header length 4 bytes short shifted every tensor by one float and still fitted;
// two tensors sharing bytes load as one tensor twice (a writer's bug); a hole or trailing
// bytes are data no tensor owns.
static zt_status check_layout(const zt_st_file *f, size_t data_bytes) {
    st_place *order = malloc((size_t)(f->n + 1) * sizeof *order);
    ZT_ASSERT(order);
    for (int i = 0; i < f->n; i++) order[i] = (st_place){f->t[i].begin, f->t[i].end, i};
    qsort(order, (size_t)f->n, sizeof *order, by_begin);
    const zt_st_entry *last = NULL; // the entry ending where the next must begin
    size_t reached = 0;
    zt_status s = ZT_OK;
    for (int k = 0; k < f->n && s == ZT_OK; k++) {
        const zt_st_entry *t = &f->t[order[k].i];
        if (t->begin < reached)
            s = zt_errorf("%s is corrupt: tensors '%s' and '%s' share bytes (data_offsets "
                          "[%zu, %zu] and [%zu, %zu]); each tensor needs bytes of its own: "
                          REWRITE, f->path, last->name, t->name, last->begin, last->end,
                          t->begin, t->end);
        else if (t->begin > reached)
            s = zt_errorf("%s is corrupt: bytes %zu to %zu of its data belong to no tensor "
                          "(tensor '%s' begins at %zu); the data must be the tensors end to end "
                          "(a header length that is off shows so): " REWRITE, f->path, reached,
                          t->begin, t->name, t->begin);
        if (t->end > reached || !last) last = t;
        if (t->end > reached) reached = t->end;
    }
    free(order);
    if (s == ZT_OK && reached != data_bytes)
        s = zt_errorf("%s is corrupt: its tensors end at byte %zu of a %zu-byte data section "
                      "(%zu bytes after them belong to no tensor; a header length that is off "
                      "shows so): " REWRITE, f->path, reached, data_bytes, data_bytes - reached);
    return s;
}

// The header's text: UTF-8 JSON without control bytes (a JSON string may not hold them raw;
// the reference implementation refuses both) and nothing but spaces after the object.
static zt_status check_header_text(const char *path, const char *json, size_t n,
                                   const char *parsed_end) {
    for (size_t k = 0; k < n; k++) {
        unsigned char ch = (unsigned char)json[k];
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
            return zt_errorf("%s is corrupt: its header holds the control byte 0x%02x at byte %zu "
                             "(not JSON text): " REWRITE, path, ch, k);
    }
    size_t bad = zt_utf8_invalid_at(json, n);
    if (bad < n)
        return zt_errorf("%s is corrupt: its header is not UTF-8 text (byte 0x%02x at byte %zu): "
                         REWRITE, path, (unsigned char)json[bad], bad);
    for (const char *p = parsed_end; p < json + n; p++)
        if (*p != ' ')
            return zt_errorf("%s is corrupt: its header has text after the JSON object (byte "
                             "%td of %zu); only space padding may follow it: " REWRITE, path,
                             p - json, n);
    return ZT_OK;
}

// The header's top level: each key once (cJSON keeps both of a pair and finds the first;
// Python's safetensors keeps the last), __metadata__ as the format says, every tensor.
static zt_status parse_header(zt_st_file *f, const cJSON *root, size_t data_bytes) {
    const char *twice = zt_json_duplicate_key(root);
    if (twice)
        return zt_errorf("%s is corrupt: its header names '%s' twice (zerotrain would read the "
                         "first, Python's safetensors the last): write the file again with each name "
                         "once",
                         f->path, twice);
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        if (strcmp(e->string, "__metadata__") == 0) ZT_TRY(check_metadata(f->path, e));
        else ZT_TRY(parse_entry(f, e, data_bytes));
    }
    return check_layout(f, data_bytes);
}

zt_status zt_st_open(zt_st_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    int fd = zt_open_regular(path);
    if (fd < 0 && (errno == EISDIR || errno == EINVAL))
        return zt_errorf("%s is not a regular file", path);
    if (fd < 0) return zt_errorf("cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return zt_errorf("cannot read %s: %s", path, strerror(errno));
    }
    size_t size = (size_t)st.st_size;
    if (size < 8) {
        close(fd);
        return zt_errorf("%s is truncated: %zu bytes, shorter than a safetensors header", path,
                         size);
    }
    f->map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        return zt_errorf("cannot map %s: %s", path, strerror(errno));
    }
    f->map_bytes = size;
    uint64_t hlen;
    memcpy(&hlen, f->map, 8);
    if (hlen > size - 8 || hlen > (100u << 20))
        return zt_errorf("%s is %s: its header claims %llu bytes of JSON in a %zu-byte file", path,
                         hlen > size - 8 ? "truncated or not a safetensors file" : "corrupt",
                         (unsigned long long)hlen, size);
    const char *json = (const char *)f->map + 8;
    const char *parsed_end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, (size_t)hlen, &parsed_end, 0);
    if (root && check_header_text(path, json, (size_t)hlen, parsed_end) != ZT_OK) {
        cJSON_Delete(root);
        return ZT_ERR;
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return zt_errorf("%s is corrupt or not a safetensors file: its header is not a JSON "
                         "object", path);
    }
    f->data = (const uint8_t *)f->map + 8 + hlen;
    size_t data_bytes = size - 8 - (size_t)hlen;
    f->t = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *f->t);
    ZT_ASSERT(f->t);
    zt_status s = parse_header(f, root, data_bytes);
    cJSON_Delete(root);
    return s;
}

int zt_st_find(const zt_st_file *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0) return i;
    return -1;
}

static float half_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, bits;
    if (e == 0) {
        if (m == 0) bits = sign;
        else { // subnormal: normalize
            e = 127 - 15 + 1;
            while (!(m & 1024)) {
                m <<= 1;
                e--;
            }
            bits = sign | (e << 23) | ((m & 1023) << 13);
        }
    } else if (e == 31) bits = sign | 0x7f800000u | (m << 13);
    else bits = sign | ((e + 127 - 15) << 23) | (m << 13);
    float x;
    memcpy(&x, &bits, 4);
    return x;
}

void zt_st_read_f32(const zt_st_file *f, int i, size_t first, size_t n, float *out) {
    const zt_st_entry *t = &f->t[i];
    ZT_ASSERT(first + n <= t->numel);
    const uint8_t *p = zt_st_bytes(f, i);
    switch (t->dtype) {
    case ZT_ST_F32: memcpy(out, p + first * 4, n * 4); break;
    case ZT_ST_U8:
        for (size_t k = 0; k < n; k++) out[k] = p[first + k];
        break;
    case ZT_ST_BF16:
        for (size_t k = 0; k < n; k++) {
            uint16_t v;
            memcpy(&v, p + (first + k) * 2, 2);
            uint32_t bits = (uint32_t)v << 16;
            memcpy(&out[k], &bits, 4);
        }
        break;
    case ZT_ST_F16:
        for (size_t k = 0; k < n; k++) {
            uint16_t v;
            memcpy(&v, p + (first + k) * 2, 2);
            out[k] = half_to_f32(v);
        }
        break;
    }
}
