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
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

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

static zt_status parse_entry(zt_st_file *f, const cJSON *e, size_t data_bytes) {
    zt_st_entry *t = &f->t[f->n];
    memset(t, 0, sizeof *t);
    const char *path = f->path;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsObject(e) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
        cJSON_GetArraySize(off) != 2)
        return zt_errorf("%s is corrupt: tensor '%s' lacks dtype, shape or data_offsets", path,
                         e->string);
    const char *d = dt->valuestring;
    if (strcmp(d, "F32") == 0) t->dtype = ZT_ST_F32;
    else if (strcmp(d, "F16") == 0) t->dtype = ZT_ST_F16;
    else if (strcmp(d, "BF16") == 0) t->dtype = ZT_ST_BF16;
    else if (strcmp(d, "U8") == 0) t->dtype = ZT_ST_U8;
    else
        return zt_errorf("%s: tensor '%s' has dtype %s; zerotrain reads F32, BF16, F16 (and U8 "
                         "optimizer codes)", path, e->string, d);
    t->ndim = cJSON_GetArraySize(sh);
    if (t->ndim > 4) return zt_errorf("%s: tensor '%s' has %d dimensions", path, e->string, t->ndim);
    t->numel = 1;
    for (int k = 0; k < t->ndim; k++) {
        const cJSON *v = cJSON_GetArrayItem(sh, k);
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15)
            return zt_errorf("%s is corrupt: tensor '%s' has a bad shape", path, e->string);
        t->shape[k] = (int64_t)v->valuedouble;
        t->numel *= (size_t)t->shape[k];
    }
    const cJSON *b = cJSON_GetArrayItem(off, 0), *en = cJSON_GetArrayItem(off, 1);
    if (!cJSON_IsNumber(b) || !cJSON_IsNumber(en) || b->valuedouble < 0 ||
        en->valuedouble < b->valuedouble)
        return zt_errorf("%s is corrupt: tensor '%s' has bad data_offsets", path, e->string);
    t->begin = (size_t)b->valuedouble;
    t->end = (size_t)en->valuedouble;
    if (t->end - t->begin != t->numel * dtype_size(t->dtype))
        return zt_errorf("%s is corrupt: tensor '%s' has %zu bytes for %zu %s values", path,
                         e->string, t->end - t->begin, t->numel, d);
    if (t->end > data_bytes)
        return zt_errorf("%s is truncated: tensor '%s' ends at byte %zu of a %zu-byte data "
                         "section", path, e->string, t->end, data_bytes);
    t->name = strdup(e->string);
    ZT_ASSERT(t->name);
    f->n++;
    return ZT_OK;
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
    cJSON *root = cJSON_ParseWithLength(json, (size_t)hlen);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return zt_errorf("%s is corrupt or not a safetensors file: its header is not a JSON "
                         "object", path);
    }
    f->data = (const uint8_t *)f->map + 8 + hlen;
    size_t data_bytes = size - 8 - (size_t)hlen;
    f->t = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *f->t);
    ZT_ASSERT(f->t);
    zt_status s = ZT_OK;
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        if ((s = parse_entry(f, e, data_bytes)) != ZT_OK) break;
    }
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
