// Hugging Face GPT-2 directory: model.safetensors + config.json.
#include "hf_export.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "safetensors.h"

zt_status zt_hf_export(const zt_gpt2 *m, const char *dir) {
    const zt_layout *lay = &m->layout;
    ZT_ASSERTF(lay->tp == 1 && lay->unit_first == 0 && lay->unit_last == zt_unit_count(&m->shape),
               "zt_hf_export needs the whole model on one rank");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return zt_errorf("cannot create directory %s: %s", dir, strerror(errno));
    zt_st_tensor *t = calloc((size_t)lay->n, sizeof *t);
    float **owned = calloc((size_t)lay->n, sizeof *owned);
    ZT_ASSERT(t && owned);
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *d = &lay->t[i];
        const float *p = m->params + d->offset;
        t[i].name = d->name;
        t[i].ndim = d->ndim;
        t[i].shape[0] = d->shape[0];
        t[i].shape[1] = d->shape[1];
        t[i].data = p;
        if (d->split == ZT_SPLIT_VOCAB) t[i].shape[0] = m->shape.vocab; // drop padding rows
        if (d->hf_transposed) {
            size_t R = (size_t)d->shape[0], C = (size_t)d->shape[1];
            float *tr = owned[i] = malloc(R * C * sizeof(float));
            ZT_ASSERT(tr);
            for (size_t r = 0; r < R; r++)
                for (size_t c = 0; c < C; c++) tr[c * R + r] = p[r * C + c];
            t[i].shape[0] = (int64_t)C;
            t[i].shape[1] = (int64_t)R;
            t[i].data = tr;
        }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    zt_status s = zt_safetensors_write(path, t, lay->n);
    for (int i = 0; i < lay->n; i++) free(owned[i]);
    free(owned);
    free(t);
    ZT_TRY(s);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return zt_errorf("cannot write %s: %s", path, strerror(errno));
    const zt_model_shape *sh = &m->shape;
    fprintf(f,
            "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
            "  \"vocab_size\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"n_embd\": %d,\n"
            "  \"n_layer\": %d,\n  \"n_head\": %d,\n  \"activation_function\": \"gelu_new\",\n"
            "  \"layer_norm_epsilon\": 1e-05,\n  \"tie_word_embeddings\": true,\n"
            "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
            "  \"torch_dtype\": \"float32\"\n}\n",
            sh->vocab, sh->n_ctx, sh->n_ctx, sh->n_embd, sh->n_layer, sh->n_head);
    if (fclose(f) != 0) return zt_errorf("writing %s failed", path);
    return ZT_OK;
}
