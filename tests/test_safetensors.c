// safetensors reader: round trip with the writer, BF16/F16 widening, and one clear error
// naming the file for truncated or corrupt input; the writer's XXH3-64 checksum.
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "safetensors.h"
#include "test.h"

static const char *tmp_path(const char *name) {
    static char p[256];
    snprintf(p, sizeof p, "/tmp/zt_test_st_%d_%s", (int)getpid(), name);
    return p;
}

// A file written by hand: header `json`, then `data`.
static void write_raw(const char *path, const char *json, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    uint64_t len = strlen(json);
    fwrite(&len, 8, 1, f);
    fwrite(json, 1, len, f);
    fwrite(data, 1, n, f);
    fclose(f);
}

ZT_TEST(safetensors_roundtrip) {
    float a[6] = {1, -2, 3.5f, 4, 5, 6};
    uint8_t q[3] = {7, 8, 9};
    zt_st_tensor t[2] = {{"a", 2, {2, 3}, a, ZT_ST_F32}, {"q", 1, {3, 0}, q, ZT_ST_U8}};
    const char *p = tmp_path("rt");
    CHECK(zt_safetensors_write(p, t, 2) == ZT_OK);
    zt_st_file f;
    CHECK(zt_st_open(&f, p) == ZT_OK);
    CHECK_EQ_INT(f.n, 2);
    int i = zt_st_find(&f, "a"), j = zt_st_find(&f, "q");
    CHECK(i >= 0 && j >= 0);
    CHECK_EQ_INT(f.t[i].shape[1], 3);
    float back[6];
    zt_st_read_f32(&f, i, 0, 6, back);
    CHECK(memcmp(back, a, sizeof a) == 0);
    CHECK(memcmp(zt_st_bytes(&f, j), q, 3) == 0);
    zt_st_close(&f);
    remove(p);
    return ZT_PASS;
}

// The checksum a checkpoint's manifest records: XXH3-64 (seed 0) of every byte of the file,
// computed while writing, equals the one-shot hash of the file as read back; and it is the
// XXH3-64 that Python's xxhash.xxh3_64_intdigest computes (the empty input's published
// digest), so scripts/read_ckpt.py verifies the same number.
ZT_TEST(safetensors_xxh3_checksum) {
    CHECK(XXH3_64bits("", 0) == 0x2D06800538D394C2ULL);
    static float big[300000]; // more than the streaming state's internal buffer, in pieces
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) big[i] = (float)i * 0.25f - 7.0f;
    uint8_t q[5] = {1, 2, 3, 4, 5};
    zt_st_tensor t[3] = {{"big", 1, {300000, 0}, big, ZT_ST_F32},
                         {"q", 1, {5, 0}, q, ZT_ST_U8},
                         {"small", 2, {2, 3}, big + 11, ZT_ST_F32}};
    const char *p = tmp_path("xxh3");
    uint64_t h = 0, bytes = 0;
    CHECK(zt_safetensors_write_ex(p, t, 3, "\"format\":\"test\"", 1, &h, &bytes) == ZT_OK);
    FILE *f = fopen(p, "rb");
    CHECK(f != NULL);
    static uint8_t back[2 << 20];
    size_t n = fread(back, 1, sizeof back, f);
    fclose(f);
    CHECK(n == bytes && n > sizeof big);
    CHECK(h == XXH3_64bits(back, n));
    back[n / 2] ^= 1; // any changed byte changes it
    CHECK(h != XXH3_64bits(back, n));
    remove(p);
    return ZT_PASS;
}

ZT_TEST(safetensors_half_types) {
    // bf16 0x3fc0 = 1.5, 0xc000 = -2; f16 0x3e00 = 1.5, 0x0001 = 2^-24 (subnormal)
    uint16_t d[4] = {0x3fc0, 0xc000, 0x3e00, 0x0001};
    const char *p = tmp_path("half");
    write_raw(p, "{\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                 "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,8]}}", d, 8);
    zt_st_file f;
    CHECK(zt_st_open(&f, p) == ZT_OK);
    float b[2], h[2];
    zt_st_read_f32(&f, zt_st_find(&f, "b"), 0, 2, b);
    zt_st_read_f32(&f, zt_st_find(&f, "h"), 0, 2, h);
    CHECK(b[0] == 1.5f && b[1] == -2.0f && h[0] == 1.5f && h[1] == 0x1p-24f);
    zt_st_close(&f);
    remove(p);
    return ZT_PASS;
}

ZT_TEST(safetensors_bad_files) {
    float d[2] = {1, 2};
    const char *p = tmp_path("bad");
    const char *cases[][2] = {
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", "truncated"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "corrupt"},
        {"{\"x\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", "dtype I64"},
        {"{\"x\": [1, 2", "not a JSON object"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        write_raw(p, cases[k][0], d, sizeof d);
        zt_st_file f;
        CHECK(zt_st_open(&f, p) == ZT_ERR);
        zt_st_close(&f);
        const char *msg = zt_error_message();
        CHECK(strstr(msg, p) != NULL);
        CHECK(strstr(msg, cases[k][1]) != NULL);
    }
    // a header length past the end of the file
    FILE *f0 = fopen(p, "wb");
    uint64_t big = 1000;
    fwrite(&big, 8, 1, f0);
    fwrite("{}", 1, 2, f0);
    fclose(f0);
    zt_st_file f;
    CHECK(zt_st_open(&f, p) == ZT_ERR);
    zt_st_close(&f);
    CHECK(strstr(zt_error_message(), "truncated") != NULL);
    remove(p);
    return ZT_PASS;
}

// The data section must be the tensors end to end and end at the file's end, as the
// reference implementation (safetensors' validate) requires: a header length 4 bytes short
// loaded every tensor one float early; trailing bytes, a hole, an overlap, a control byte
// in the header or text after its object are refused, each naming the file.
ZT_TEST(safetensors_strict_layout) {
    float d[4] = {1, 2, 3, 4};
    const char *p = tmp_path("strict");
    const char *one = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    struct { const char *json; size_t data; const char *says; } cases[] = {
        {one, 12, "belong to no tensor"}, // trailing bytes
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, "belong to no tensor"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "share bytes"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "belong to no tensor"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_\x01offsets\":[0,8]}}", 8, "control byte"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}  x", 8, "after the JSON"},
        {"{\"x\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "not UTF-8"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        write_raw(p, cases[k].json, d, cases[k].data);
        zt_st_file f;
        CHECK(zt_st_open(&f, p) == ZT_ERR);
        zt_st_close(&f);
        CHECK(strstr(zt_error_message(), p) != NULL);
        CHECK(strstr(zt_error_message(), cases[k].says) != NULL);
    }
    // a header length 4 short: the JSON still parses (its space padding), and the data
    // would start one float early
    write_raw(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}    ", d,
              12);
    FILE *f0 = fopen(p, "r+b");
    uint64_t hlen;
    CHECK(fread(&hlen, 8, 1, f0) == 1);
    hlen -= 4;
    fseek(f0, 0, SEEK_SET);
    fwrite(&hlen, 8, 1, f0);
    fclose(f0);
    zt_st_file f;
    CHECK(zt_st_open(&f, p) == ZT_ERR);
    zt_st_close(&f);
    CHECK(strstr(zt_error_message(), "belong to no tensor") != NULL);
    // empty tensors anywhere in the order, and space padding, stay valid
    write_raw(p, "{\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
                 "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ", d, 8);
    CHECK(zt_st_open(&f, p) == ZT_OK);
    zt_st_close(&f);
    remove(p);
    return ZT_PASS;
}
