// safetensors writer. Format (little endian):
//
//   uint64 N                       length of the JSON header
//   N bytes JSON                   {"name": {"dtype": "F32", "shape": [..],
//                                   "data_offsets": [begin, end]}, ...,
//                                   "__metadata__": {"format": "pt"}}
//                                  padded with spaces so the data starts 8-aligned
//   the tensor bytes               offsets relative to the end of the header
#include "safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

zt_status zt_safetensors_write(const char *path, const zt_st_tensor *t, int n) {
    size_t cap = 256 + (size_t)n * 160, len = 0;
    char *hdr = malloc(cap);
    ZT_ASSERT(hdr);
    len += (size_t)snprintf(hdr + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t bytes = (uint64_t)t[i].shape[0] * (t[i].ndim == 2 ? t[i].shape[1] : 1) * 4;
        if (t[i].ndim == 2)
            len += (size_t)snprintf(hdr + len, cap - len,
                                    ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],"
                                    "\"data_offsets\":[%llu,%llu]}",
                                    t[i].name, (long long)t[i].shape[0], (long long)t[i].shape[1],
                                    (unsigned long long)off, (unsigned long long)(off + bytes));
        else
            len += (size_t)snprintf(hdr + len, cap - len,
                                    ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld],"
                                    "\"data_offsets\":[%llu,%llu]}",
                                    t[i].name, (long long)t[i].shape[0], (unsigned long long)off,
                                    (unsigned long long)(off + bytes));
        ZT_ASSERT(len < cap);
        off += bytes;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while ((8 + len) % 8) hdr[len++] = ' ';
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(hdr);
        return zt_errorf("cannot write %s: %s", tmp, strerror(errno));
    }
    uint64_t hlen = len;
    int ok = fwrite(&hlen, 8, 1, f) == 1 && fwrite(hdr, 1, len, f) == len;
    for (int i = 0; ok && i < n; i++) {
        size_t cnt = (size_t)t[i].shape[0] * (size_t)(t[i].ndim == 2 ? t[i].shape[1] : 1);
        ok = fwrite(t[i].data, 4, cnt, f) == cnt;
    }
    // on disk before the rename, so a crash leaves the old file or the whole new one
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int err = ok ? 0 : errno;
    ok = (fclose(f) == 0) && ok;
    if (!err && !ok) err = errno;
    free(hdr);
    if (!ok || rename(tmp, path) != 0) {
        if (!err) err = errno;
        unlink(tmp);
        return zt_errorf("writing %s failed: %s", path, strerror(err));
    }
    return ZT_OK;
}
