// TensorBoard event files written by zerotrain: tensorboard.Event messages (tb_event.proto,
// encoded by protobuf-c) in TFRecord framing.
//
// A TFRecord (TensorFlow's record_writer.cc; every integer little endian):
//
//   byte offset   size     field
//   ------------  -------  --------------------------------------------------------------
//   0             uint64   length: bytes of data
//   8             uint32   masked CRC-32C of the 8 length bytes (crc32c.h: zt_crc32c_mask)
//   12            length   data: one serialized tensorboard.Event
//   12 + length   uint32   masked CRC-32C of the data
//
// The file's first record is an Event with file_version "brain.Event:2"; each step's scalars
// follow as one Event whose summary holds a Value (tag, simple_value) per scalar.
#include "tb_events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "crc32c.h"
#include "tb_event.pb-c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "TFRecord framing is little endian; tb_events.c needs byte swapping on this host"
#endif

static double wall_now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

// mkdir -p: each prefix of dir that does not exist yet.
static zt_status make_dirs(const char *dir) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return zt_errorf("--tensorboard %s: path too long", dir);
    for (char *s = p + 1;; s++) {
        int end = *s == '\0';
        if (*s == '/' || end) {
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST)
                return zt_errorf("cannot create --tensorboard directory %s: %s; give a "
                                 "directory you can write", p, strerror(errno));
            if (end) break;
            *s = '/';
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return zt_errorf("--tensorboard %s is not a directory; give a directory for the event "
                         "files", dir);
    return ZT_OK;
}

// One record around the serialized event (len bytes at data), appended to the file.
static int write_record(FILE *f, const uint8_t *data, size_t len) {
    uint64_t n = len;
    uint32_t crc_len = zt_crc32c_mask(zt_crc32c(&n, sizeof n));
    uint32_t crc_data = zt_crc32c_mask(zt_crc32c(data, len));
    return fwrite(&n, sizeof n, 1, f) == 1 && fwrite(&crc_len, sizeof crc_len, 1, f) == 1 &&
           (len == 0 || fwrite(data, len, 1, f) == 1) &&
           fwrite(&crc_data, sizeof crc_data, 1, f) == 1;
}

// The event serialized by protobuf-c and written as one record, then flushed.
static zt_status write_event(zt_tb_writer *w, const Tensorboard__Event *ev) {
    size_t len = tensorboard__event__get_packed_size(ev);
    uint8_t *buf = malloc(len ? len : 1);
    ZT_ASSERT(buf != NULL);
    tensorboard__event__pack(ev, buf);
    int ok = write_record(w->f, buf, len) && fflush(w->f) == 0;
    free(buf);
    if (!ok)
        return zt_errorf("cannot write TensorBoard event file %s: %s (disk full?)", w->path,
                         strerror(errno));
    return ZT_OK;
}

zt_status zt_tb_open(zt_tb_writer *w, const char *dir) {
    ZT_ASSERT(w != NULL && dir != NULL);
    memset(w, 0, sizeof *w);
    ZT_TRY(make_dirs(dir));
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%ld.%s.%ld.zerotrain", dir,
             (long)wall_now(), host, (long)getpid());
    w->f = fopen(w->path, "wb");
    if (!w->f)
        return zt_errorf("cannot create TensorBoard event file %s: %s; give --tensorboard a "
                         "directory you can write", w->path, strerror(errno));
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = wall_now();
    ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
    ev.file_version = "brain.Event:2";
    zt_status s = write_event(w, &ev);
    if (s != ZT_OK) zt_tb_close(w);
    return s;
}

zt_status zt_tb_scalars(zt_tb_writer *w, int64_t step,
                        const char *const *tags, const float *values, int n) {
    ZT_ASSERT(w != NULL && w->f != NULL && n >= 0 && (n == 0 || (tags && values)));
    Tensorboard__Summary__Value *v = calloc((size_t)n + 1, sizeof *v);
    Tensorboard__Summary__Value **pv = calloc((size_t)n + 1, sizeof *pv);
    ZT_ASSERT(v != NULL && pv != NULL);
    for (int i = 0; i < n; i++) {
        tensorboard__summary__value__init(&v[i]);
        v[i].tag = (char *)tags[i];  // protobuf-c's fields are not const; only read
        v[i].simple_value = values[i];
        pv[i] = &v[i];
    }
    Tensorboard__Summary sum = TENSORBOARD__SUMMARY__INIT;
    sum.n_value = (size_t)n;
    sum.value = pv;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = wall_now();
    ev.step = step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    zt_status s = write_event(w, &ev);
    free(pv);
    free(v);
    return s;
}

void zt_tb_close(zt_tb_writer *w) {
    if (!w) return;
    if (w->f) fclose(w->f);
    w->f = NULL;
}
