// TensorBoard event files: CRC-32C against published check values, and a written file's
// TFRecord framing read back (lengths, masked CRCs, the events' fields).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "tb_event.pb-c.h"
#include "tb_events.h"
#include "test.h"

// RFC 3720 (iSCSI) appendix B.4's vectors and the common "123456789" check value.
ZT_TEST(tb_crc32c_known_values) {
    CHECK_EQ_INT(zt_crc32c("123456789", 9), 0xE3069283u);
    unsigned char b[32];
    memset(b, 0, sizeof b);
    CHECK_EQ_INT(zt_crc32c(b, 32), 0x8A9136AAu);
    memset(b, 0xFF, sizeof b);
    CHECK_EQ_INT(zt_crc32c(b, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++) b[i] = (unsigned char)i;
    CHECK_EQ_INT(zt_crc32c(b, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++) b[i] = (unsigned char)(31 - i);
    CHECK_EQ_INT(zt_crc32c(b, 32), 0x113FDB5Cu);
    CHECK_EQ_INT(zt_crc32c(b, 0), 0u);
    // TensorFlow's Mask: rotate right by 15, add the constant
    CHECK_EQ_INT(zt_crc32c_mask(0), 0xa282ead8u);
    CHECK_EQ_INT(zt_crc32c_mask(0x8000u), 0xa282ead9u);
    return ZT_PASS;
}

// Reads the next record of f into *data (caller frees): 1, or 0 at the end; -1 on a bad CRC.
static int read_record(FILE *f, uint8_t **data, size_t *len) {
    uint64_t n;
    uint32_t crc_len, crc_data;
    if (fread(&n, sizeof n, 1, f) != 1) return 0;
    if (fread(&crc_len, 4, 1, f) != 1 || crc_len != zt_crc32c_mask(zt_crc32c(&n, 8))) return -1;
    *data = malloc(n ? n : 1);
    *len = n;
    if (!*data || (n && fread(*data, n, 1, f) != 1) || fread(&crc_data, 4, 1, f) != 1 ||
        crc_data != zt_crc32c_mask(zt_crc32c(*data, n)))
        return -1;
    return 1;
}

ZT_TEST(tb_events_roundtrip) {
    char dir[] = "/tmp/zt_test_tb_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/a/b", dir);  // created with its parent
    zt_tb_writer w;
    CHECK(zt_tb_open(&w, sub) == ZT_OK);
    CHECK(strstr(w.path, "/events.out.tfevents.") != NULL);
    const char *tags[] = {"train/loss", "memory/params_mib"};
    const float v1[] = {5.5f, 0.125f}, v2[] = {2.25f, -1.0f};
    CHECK(zt_tb_scalars(&w, 1, tags, v1, 2) == ZT_OK);
    {  // flushed at once: a reader sees the step while the writer is still open
        FILE *r = fopen(w.path, "rb");
        CHECK(r != NULL);
        uint8_t *d;
        size_t n;
        int got = read_record(r, &d, &n) == 1;
        if (got) free(d);
        got = got && read_record(r, &d, &n) == 1;
        if (got) free(d);
        fclose(r);
        CHECK(got);
    }
    CHECK(zt_tb_scalars(&w, 2, tags, v2, 2) == ZT_OK);
    char path[sizeof w.path];
    snprintf(path, sizeof path, "%s", w.path);
    zt_tb_close(&w);
    zt_tb_close(&w);  // twice is fine
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    uint8_t *data;
    size_t len;
    CHECK(read_record(f, &data, &len) == 1);
    Tensorboard__Event *ev = tensorboard__event__unpack(NULL, len, data);
    CHECK(ev && ev->what_case == TENSORBOARD__EVENT__WHAT_FILE_VERSION);
    CHECK(strcmp(ev->file_version, "brain.Event:2") == 0 && ev->wall_time > 1.7e9);
    tensorboard__event__free_unpacked(ev, NULL);
    free(data);
    for (int step = 1; step <= 2; step++) {
        CHECK(read_record(f, &data, &len) == 1);
        ev = tensorboard__event__unpack(NULL, len, data);
        CHECK(ev && ev->what_case == TENSORBOARD__EVENT__WHAT_SUMMARY && ev->step == step);
        CHECK(ev->summary->n_value == 2);
        for (int i = 0; i < 2; i++) {
            CHECK(strcmp(ev->summary->value[i]->tag, tags[i]) == 0);
            CHECK(ev->summary->value[i]->simple_value == (step == 1 ? v1 : v2)[i]);
        }
        tensorboard__event__free_unpacked(ev, NULL);
        free(data);
    }
    CHECK(read_record(f, &data, &len) == 0);
    fclose(f);
    // a directory that cannot be made: one error naming it
    snprintf(sub, sizeof sub, "%s", path);  // a file, not a directory
    CHECK(zt_tb_open(&w, sub) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "--tensorboard") != NULL);
    unlink(path);
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/a", dir);
    rmdir(sub);
    rmdir(dir);
    return ZT_PASS;
}
