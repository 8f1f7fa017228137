// zt_hf_export's dtypes: F32 as given; BF16 every tensor rounded to nearest even (hand-made
// ties and near-ties against bits written out by hand, every value against the F32 export's),
// config.json's torch_dtype; and --init-from (zt_init_load) of the BF16 export gives back
// exactly the rounded values.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "bf16_math.h"
#include "hf_export.h"
#include "hf_import.h"
#include "safetensors.h"
#include "test.h"

// fp32 bits, and the bf16 bits round-to-nearest-even gives them, worked out by hand.
static const uint32_t k_in[] = {0x3f808000u, 0x3f818000u, 0x3f808001u, 0xbf817fffu, 0x00000001u,
                                0xc0000000u};
static const uint16_t k_want[] = {0x3f80, 0x3f82, 0x3f81, 0xbf81, 0x0000, 0xc000};
#define N_CRAFTED (sizeof k_in / sizeof k_in[0])

// A small model (the vocabulary padded: the export drops the padding) with random weights,
// the first values of wte replaced by k_in.
static int model_init(zt_gpt2 *m, zt_model_shape *s) {
    *s = (zt_model_shape){.vocab = 300, .n_ctx = 16, .n_layer = 1, .n_head = 2, .n_embd = 32};
    s->padded_vocab = zt_padded_vocab(s->vocab, 1);
    CHECK(zt_gpt2_init(m, zt_test_cpu(), s, 0, zt_unit_count(s), 1, 0, 256, 256, 1, 16, 0, 1,
                       NULL, ZT_F32, 0) == ZT_OK);
    zt_gpt2_init_random(m, 11);
    float *p = zt_gpt2_params_map(m, 1);
    int e = zt_layout_find(&m->layout, "wte.weight");
    CHECK(e >= 0);
    memcpy(p + m->layout.t[e].offset, k_in, sizeof k_in);
    zt_gpt2_params_unmap(m, p, 1);
    return ZT_PASS;
}

// Every tensor of the F32 export has a BF16 twin of its shape whose bits are its values
// rounded; wte's first values are the hand-worked ones.
static int check_rounded(const char *f32_path, const char *bf16_path) {
    zt_st_file a, b;
    CHECK(zt_st_open(&a, f32_path) == ZT_OK);
    CHECK(zt_st_open(&b, bf16_path) == ZT_OK);
    CHECK_EQ_INT(a.n, b.n);
    size_t bad = 0;
    for (int i = 0; i < a.n; i++) {
        int j = zt_st_find(&b, a.t[i].name);
        CHECK(j >= 0);
        CHECK(a.t[i].dtype == ZT_ST_F32 && b.t[j].dtype == ZT_ST_BF16);
        CHECK(a.t[i].ndim == b.t[j].ndim && a.t[i].numel == b.t[j].numel);
        for (int k = 0; k < a.t[i].ndim; k++) CHECK(a.t[i].shape[k] == b.t[j].shape[k]);
        const float *x = zt_st_bytes(&a, i);
        const uint8_t *y = zt_st_bytes(&b, j);
        for (size_t k = 0; k < a.t[i].numel; k++) {
            uint16_t got;
            memcpy(&got, y + 2 * k, 2);
            bad += got != zt_bf16_from_fp32(x[k]);
        }
    }
    int wte = zt_st_find(&b, "wte.weight");
    CHECK(wte >= 0);
    uint16_t head[N_CRAFTED];
    memcpy(head, zt_st_bytes(&b, wte), sizeof head);
    for (size_t k = 0; k < N_CRAFTED; k++) CHECK_EQ_INT(head[k], k_want[k]);
    zt_st_close(&a);
    zt_st_close(&b);
    CHECK_EQ_INT(bad, 0);
    return ZT_PASS;
}

// config.json names the dtype as transformers spells it.
static int check_config(const char *dir, const char *torch_dtype) {
    char path[512], text[4096], want[64];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "r");
    CHECK(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    snprintf(want, sizeof want, "\"torch_dtype\": \"%s\"", torch_dtype);
    CHECK(strstr(text, want) != NULL);
    return ZT_PASS;
}

// A second model loaded from the BF16 export holds the first's values rounded, bit for bit.
static int check_reload(zt_gpt2 *m, const zt_model_shape *s, const char *dir) {
    zt_gpt2 back;
    CHECK(zt_gpt2_init(&back, zt_test_cpu(), s, 0, zt_unit_count(s), 1, 0, 256, 256, 1, 16, 0,
                       1, NULL, ZT_F32, 0) == ZT_OK);
    CHECK(zt_init_load(&back, dir) == ZT_OK);
    float *p = zt_gpt2_params_map(m, 1), *q = zt_gpt2_params_map(&back, 1);
    size_t bad = 0;
    for (size_t i = 0; i < m->layout.numel; i++) {
        float want = zt_bf16_to_fp32(zt_bf16_from_fp32(p[i]));
        bad += memcmp(&want, &q[i], sizeof want) != 0;
    }
    zt_gpt2_params_unmap(m, p, 0);
    zt_gpt2_params_unmap(&back, q, 0);
    zt_gpt2_free(&back);
    CHECK_EQ_INT(bad, 0);
    return ZT_PASS;
}

ZT_TEST(hf_export_bf16) {
    zt_gpt2 m;
    zt_model_shape s;
    if (model_init(&m, &s) != ZT_PASS) return ZT_FAIL;
    char d32[256], d16[256], st32[300], st16[300], rm[600];
    snprintf(d32, sizeof d32, "/tmp/zt_test_hfx_%d_f32", (int)getpid());
    snprintf(d16, sizeof d16, "/tmp/zt_test_hfx_%d_bf16", (int)getpid());
    snprintf(st32, sizeof st32, "%s/model.safetensors", d32);
    snprintf(st16, sizeof st16, "%s/model.safetensors", d16);
    const float *p = zt_gpt2_params_map(&m, 1);
    zt_status a = zt_hf_export(&s, &m.layout, &p, 1, ZT_F32, d32);
    zt_status b = zt_hf_export(&s, &m.layout, &p, 1, ZT_BF16, d16);
    zt_gpt2_params_unmap(&m, (float *)p, 0);
    int r = a == ZT_OK && b == ZT_OK ? ZT_PASS : ZT_FAIL;
    if (r == ZT_PASS) r = check_rounded(st32, st16);
    if (r == ZT_PASS) r = check_config(d32, "float32");
    if (r == ZT_PASS) r = check_config(d16, "bfloat16");
    if (r == ZT_PASS) r = check_reload(&m, &s, d16);
    zt_gpt2_free(&m);
    snprintf(rm, sizeof rm, "rm -rf '%s' '%s'", d32, d16);
    if (system(rm) != 0) fprintf(stderr, "could not remove %s, %s\n", d32, d16);
    return r;
}
