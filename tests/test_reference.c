// The C model against the PyTorch reference (tests/reference/gpt2_ref.py, regenerated
// by tests/sh/reference_pytorch.sh into $ZT_REF_DIR): logits, loss, every gradient,
// the grad norm, one AdamW step with clipping and weight decay, and several steps.
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adamw.h"
#include "data.h"
#include "gpt2.h"
#include "grad_norm.h"
#include "llmc_checkpoint.h"
#include "test.h"

// ---- expect.bin: records of (int32 name length, name, int32 ndim, int64 dims, f32 data)
typedef struct {
    char name[96];
    size_t n;
    float *data;
} record;
typedef struct {
    record *r;
    int n;
} records;

static int load_records(records *out, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    memset(out, 0, sizeof *out);
    int32_t len;
    while (fread(&len, 4, 1, f) == 1) {
        out->r = realloc(out->r, (size_t)(out->n + 1) * sizeof(record));
        record *r = &out->r[out->n++];
        memset(r, 0, sizeof *r);
        if (len <= 0 || len >= (int)sizeof r->name || fread(r->name, 1, (size_t)len, f) != (size_t)len)
            return -1;
        int32_t ndim;
        if (fread(&ndim, 4, 1, f) != 1 || ndim < 0 || ndim > 8) return -1;
        r->n = 1;
        for (int d = 0; d < ndim; d++) {
            int64_t dim;
            if (fread(&dim, 8, 1, f) != 1) return -1;
            r->n *= (size_t)dim;
        }
        r->data = malloc(r->n * sizeof(float));
        if (fread(r->data, sizeof(float), r->n, f) != r->n) return -1;
    }
    fclose(f);
    return 0;
}

static const record *find(const records *rs, const char *fmt, const char *arg) {
    char name[128];
    snprintf(name, sizeof name, fmt, arg);
    for (int i = 0; i < rs->n; i++)
        if (strcmp(rs->r[i].name, name) == 0) return &rs->r[i];
    fprintf(stderr, "expect.bin has no record %s\n", name);
    exit(1);
}

static double max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

static int json_int(const cJSON *j, const char *k) {
    return cJSON_GetObjectItem(j, k)->valueint;
}
static float json_num(const cJSON *j, const char *k) {
    return (float)cJSON_GetObjectItem(j, k)->valuedouble;
}

// The reference (llm.c layout) element of our element k: row-parallel weights are ours
// (in, out) and the reference's (out, in).
static size_t ref_index(const zt_tensor_desc *t, size_t k) {
    size_t I = (size_t)t->shape[0], O = (size_t)t->shape[1];
    return t->in_out ? (k % O) * I + k / O : k;
}

// Compares a flat-buffer tensor set (params or grads) with records "<prefix><name>"
// within |got - ref| <= atol_elem[i] (or, when atol_elem is NULL, tol * max|ref| of the
// tensor: reassociated fp32 sums err in proportion to the tensor's magnitude). The key
// part of c_attn.bias is compared against key_atol (see its caller). The padded
// vocabulary rows must stay exactly zero.
static int compare_tensors(const zt_gpt2 *m, const float *flat, const records *rs,
                           const char *prefix, double tol, const float *atol_elem,
                           double key_atol) {
    const zt_layout *lay = &m->layout;
    int bad = 0;
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        char fmt[128];
        snprintf(fmt, sizeof fmt, "%s%%s", prefix);
        const record *r = find(rs, fmt, t->name);
        const float *got = flat + t->offset;
        size_t n = r->n; // wte: the reference has V rows, we have Vp; compare the first V
        double atol = tol * max_abs(r->data, n), worst = 0;
        size_t wi = 0;
        for (size_t k = 0; k < n; k++) {
            double lim = atol_elem ? atol_elem[t->offset + k] : atol;
            if (key_atol > 0 && strstr(t->name, "c_attn.bias") && k >= (size_t)m->shape.n_embd &&
                k < 2 * (size_t)m->shape.n_embd)
                lim = key_atol;
            double d = fabs((double)got[k] - r->data[ref_index(t, k)]);
            if (!(d <= lim)) bad = 1;
            if (!(d / (lim + 1e-30) <= worst)) worst = d / (lim + 1e-30), wi = k;
        }
        printf("  %s%-26s worst |diff|/bound %.3f at [%zu]: %.9g vs %.9g\n", prefix, t->name,
               worst, wi, got[wi], r->data[ref_index(t, wi)]);
        for (size_t k = n; k < t->numel; k++)
            if (got[k] != 0.0f) {
                fprintf(stderr, "%s: padded element %zu is %g, must stay 0\n", t->name, k, got[k]);
                bad = 1;
                break;
            }
    }
    if (bad) fprintf(stderr, "%s*: some element exceeds its bound (ratio > 1 above)\n", prefix);
    return bad;
}

// Gradient error bound, relative to each tensor's largest gradient. Backward sums over
// N = 32 tokens and 2 micro-batches through 3 layers in another order than PyTorch; the
// measured error is below 1e-6 of the tensor's largest entry, so 1e-5 holds with a 10x
// margin, and a real mistake (a wrong term) is O(1) relative.
#define GRAD_RTOL 1e-5
// Gradients of steps after the first, at parameters that differ from PyTorch's by up to
// the AdamW bound below: they differ by that drift through the loss's curvature as well as
// by rounding (measured up to 5.8e-5 of the tensor's largest gradient, against ~1e-6 at
// step 0: Adam moves weights whose gradient is rounding noise, the key bias's, by +-lr).
// 3e-4 leaves 5x; a wrong term is still O(1).
#define GRAD_DRIFT_RTOL 3e-4

// Adds to bound[i] how far this AdamW step can move parameter i away from PyTorch's
// given gradients that differ by at most dg: the update lr * m/(sqrt(v)+eps) changes by at
// most lr * 2*dg/(sqrt(v)+eps) (m and sqrt(v) both move by ~dg), and never by more than
// 2*lr (a flipped sign). Weight decay and rounding of the update itself add a few ulps of
// p. dg is GRAD_RTOL * max|g| of the tensor (rounding) or, when larger, the difference
// measured against PyTorch's gradient of this step (records named ref_fmt, none at step
// 0): after the first update the two runs' parameters differ by rounding, and later
// gradients carry that drift, which no rounding argument bounds (a bound without it
// failed by 1% on one weight after 4 steps when a kernel's summation order changed).
static void add_step_bound(float *bound, const zt_gpt2 *m, const zt_adamw *o, float lr,
                           float grad_scale, const records *rs, const char *ref_fmt) {
    const zt_layout *lay = &m->layout;
    float bc2 = 1.0f - powf(0.95f, (float)o->t);
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        const float *g = (const float *)m->grads + t->offset, *p = m->params;
        double dg = GRAD_RTOL * max_abs(g, t->numel);
        if (ref_fmt) {
            const record *r = find(rs, ref_fmt, t->name);
            for (size_t k = 0; k < r->n; k++) {
                double d = fabs((double)g[k] - r->data[ref_index(t, k)]);
                dg = d > dg ? d : dg;
            }
        }
        dg *= grad_scale;
        for (size_t k = 0; k < t->numel; k++) {
            size_t j = t->offset + k;
            double s = sqrt(o->v[j] / bc2) + 1e-8;
            double b = lr * 2.0 * dg / s;
            bound[j] += (float)((b < 2.0 * lr ? b : 2.0 * lr) + 4e-7 * fabs(p[j]));
        }
    }
}

ZT_TEST(reference_pytorch) {
    const char *dir = getenv("ZT_REF_DIR");
    if (!dir) {
        fprintf(stderr, "ZT_REF_DIR not set: run tests/sh/reference_pytorch.sh\n");
        return ZT_SKIP;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "rb");
    CHECK(f);
    char buf[4096];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    cJSON *j = cJSON_Parse(buf);
    CHECK(j);
    zt_model_shape s = {json_int(j, "vocab"), 0, json_int(j, "n_ctx"), json_int(j, "n_layer"),
                        json_int(j, "n_head"), json_int(j, "n_embd")};
    s.padded_vocab = zt_padded_vocab(s.vocab, 1);
    CHECK_EQ_INT(s.padded_vocab, json_int(j, "padded_vocab"));
    int B = json_int(j, "micro_batch"), T = json_int(j, "seq"), accum = json_int(j, "grad_accum");
    int steps = json_int(j, "steps");
    zt_adamw_config oc = {json_num(j, "lr"), json_num(j, "beta1"), json_num(j, "beta2"),
                          json_num(j, "eps"), json_num(j, "weight_decay")};
    float clip = json_num(j, "grad_clip");
    cJSON_Delete(j);

    records rs;
    snprintf(path, sizeof path, "%s/expect.bin", dir);
    CHECK(load_records(&rs, path) == 0);

    // A loss chunk of 7 tokens: chunks that do not divide B*T exercise the chunked head.
    zt_gpt2 m;
    CHECK(zt_gpt2_init(&m, zt_test_cpu(), &s, 0, zt_unit_count(&s), 1, 0, 256, 256, B, T, 7, 1, NULL, ZT_F32, 0) == ZT_OK);
    CHECK(fabsf(oc.beta2 - 0.95f) < 1e-7f); // add_step_bound assumes it
    snprintf(path, sizeof path, "%s/model.bin", dir);
    CHECK(zt_llmc_load(&m, path) == ZT_OK);
    zt_dataset ds;
    snprintf(path, sizeof path, "%s/train.bin", dir);
    CHECK(zt_dataset_open(&ds, path, T, s.vocab, 0, 0) == ZT_OK);
    int N = B * T;
    int32_t *in = malloc(sizeof(int32_t) * N), *tg = malloc(sizeof(int32_t) * N);
    float *logits = malloc(sizeof(float) * (size_t)N * s.padded_vocab);
    float *lv = malloc(sizeof(float) * (size_t)N * s.vocab);
    zt_adamw opt;
    zt_adamw_init(&opt, zt_test_cpu(), 0, m.layout.numel, ZT_F32);
    float *bound = calloc(m.layout.numel, sizeof(float));
    float scale = 1.0f / (float)(accum * N);
    int bad = 0;

    for (int step = 0; step < steps; step++) {
        memset(m.grads, 0, m.layout.numel * sizeof(float));
        double loss = 0;
        for (int k = 0; k < accum; k++) {
            for (int b = 0; b < B; b++)
                zt_dataset_sample(&ds, (uint64_t)(step * accum + k) * B + b, in + b * T, tg + b * T);
            zt_gpt2_forward(&m, in, NULL, tg, 1, scale);
            double sum = zt_gpt2_take_loss(&m);
            loss += sum;
            if (step == 0 && k == 0) {
                // fp32 forward through 3 layers with sums of at most 4C = 256 terms in
                // another order than PyTorch's: ~1e-6 at |logit| ~ 1; 2e-5 allows 10x.
                zt_gpt2_logits(&m, logits);
                for (int n = 0; n < N; n++)
                    memcpy(lv + (size_t)n * s.vocab, logits + (size_t)n * s.padded_vocab,
                           sizeof(float) * s.vocab);
                bad |= zt_check_close("logits", lv, find(&rs, "logits", "")->data,
                                      (size_t)N * s.vocab, 2e-5, 0);
                float mine = (float)(sum / N);
                bad |= zt_check_close("loss", &mine, find(&rs, "loss", "")->data, 1, 1e-5, 0);
            }
            zt_gpt2_backward(&m, in, NULL, NULL);
        }
        char key[32];
        snprintf(key, sizeof key, "%d", step);
        float lmean = (float)(loss / (accum * N));
        bad |= zt_check_close("loss.step", &lmean, find(&rs, "loss.step%s", key)->data, 1, 1e-5, 0);
        // Step 0's gradients against the rounding tolerance; later steps' start from
        // parameters that drifted by rounding and are held to GRAD_DRIFT_RTOL.
        char grad_prefix[32], grad_fmt[40];
        snprintf(grad_prefix, sizeof grad_prefix, step == 0 ? "grad." : "grad%d.", step);
        snprintf(grad_fmt, sizeof grad_fmt, "%s%%s", grad_prefix);
        bad |= compare_tensors(&m, m.grads, &rs, grad_prefix,
                               step == 0 ? GRAD_RTOL : GRAD_DRIFT_RTOL, NULL, 0);
        double ss[2];
        zt_grad_sumsq(zt_test_cpu(), ss, m.grads, ZT_F32, &m.layout, 0, m.layout.numel, 1, 1);
        float norm = (float)sqrt(ss[0]);
        bad |= zt_check_close("grad_norm", &norm, find(&rs, "grad_norm.step%s", key)->data, 1, 0,
                              1e-5);
        float gs = zt_clip_scale(norm, clip);
        zt_adamw_step(&opt, m.params, m.grads, &m.layout, &oc, oc.lr, gs);
        add_step_bound(bound, &m, &opt, oc.lr, gs, &rs, step == 0 ? NULL : grad_fmt);
        // The key bias's exact gradient is zero (softmax ignores a constant added to a
        // whole score row), so both sides update it from rounding noise, which Adam
        // normalizes to +-lr: its only honest bound is 2*lr per step.
        if (step == 0) bad |= compare_tensors(&m, m.params, &rs, "param1.", 0, bound, 2.0 * oc.lr);
    }
    bad |= compare_tensors(&m, m.params, &rs, "param.", 0, bound, 2.0 * steps * oc.lr);
    free(bound);
    zt_adamw_free(&opt);
    zt_dataset_close(&ds);
    zt_gpt2_free(&m);
    free(in);
    free(tg);
    free(logits);
    free(lv);
    return bad ? ZT_FAIL : ZT_PASS;
}
