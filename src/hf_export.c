// Hugging Face GPT-2 directory: model.safetensors + config.json.
#include "hf_export.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safetensors.h"

zt_status zt_hf_export(const zt_model_shape *shape, const zt_layout *lays,
                       const float *const *params, int n_parts, const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return zt_errorf("cannot create directory %s: %s", dir, strerror(errno));
    int cap = 0;
    for (int k = 0; k < n_parts; k++) cap += lays[k].n;
    zt_st_tensor *t = calloc((size_t)cap, sizeof *t);
    float **owned = calloc((size_t)cap, sizeof *owned);
    ZT_ASSERT(t && owned);
    int n = 0;
    for (int k = 0; k < n_parts; k++)
        for (int i = 0; i < lays[k].n; i++) {
            const zt_tensor_desc *d = &lays[k].t[i];
            int seen = 0;
            for (int j = 0; j < n; j++) seen |= strcmp(t[j].name, d->name) == 0;
            if (seen) continue;
            zt_st_tensor *o = &t[n];
            o->name = d->name;
            o->ndim = d->ndim;
            // the whole tensor, without the vocabulary padding
            size_t R = d->split == ZT_SPLIT_VOCAB ? (size_t)shape->vocab : (size_t)d->shape[0];
            size_t C = (size_t)d->shape[1];
            o->shape[0] = (int64_t)R;
            o->shape[1] = (int64_t)C;
            o->data = params[k] + d->offset;
            if (lays[k].tp > 1) {
                // assemble it from the tp slices: the first part of each tp rank holding it
                float *whole = owned[n] = malloc(R * C * sizeof(float));
                int *have = calloc((size_t)lays[k].tp, sizeof *have);
                ZT_ASSERT(whole && have);
                for (int q = k; q < n_parts; q++) {
                    int e = zt_layout_find(&lays[q], d->name);
                    if (e < 0 || have[lays[q].tp_rank]) continue;
                    have[lays[q].tp_rank] = 1;
                    const zt_tensor_desc *dq = &lays[q].t[e];
                    const float *src = params[q] + dq->offset;
                    for (size_t x = 0; x < dq->numel; x++) {
                        size_t g = zt_layout_global_index(&lays[q], dq, x);
                        if (g < R * C) whole[g] = src[x];
                    }
                }
                for (int r = 0; r < lays[k].tp; r++)
                    ZT_ASSERTF(have[r], "%s: no part holds tp rank %d's slice", d->name, r);
                free(have);
                o->data = whole;
            }
            if (d->hf_transposed) {
                const float *p = o->data;
                float *tr = malloc(R * C * sizeof(float));
                ZT_ASSERT(tr);
                for (size_t r = 0; r < R; r++)
                    for (size_t c = 0; c < C; c++) tr[c * R + r] = p[r * C + c];
                free(owned[n]);
                owned[n] = tr;
                o->shape[0] = (int64_t)C;
                o->shape[1] = (int64_t)R;
                o->data = tr;
            }
            n++;
        }
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    zt_status s = zt_safetensors_write(path, t, n);
    for (int i = 0; i < n; i++) free(owned[i]);
    free(owned);
    free(t);
    ZT_TRY(s);
    // config.json through a temporary name too, so a crash never leaves half of it
    char tmp[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return zt_errorf("cannot write %s: %s", tmp, strerror(errno));
    const zt_model_shape *sh = shape;
    fprintf(f,
            "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
            "  \"vocab_size\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"n_embd\": %d,\n"
            "  \"n_layer\": %d,\n  \"n_head\": %d,\n  \"activation_function\": \"gelu_new\",\n"
            "  \"layer_norm_epsilon\": 1e-05,\n  \"tie_word_embeddings\": true,\n"
            "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
            "  \"torch_dtype\": \"float32\"\n}\n",
            sh->vocab, sh->n_ctx, sh->n_ctx, sh->n_embd, sh->n_layer, sh->n_head);
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) return zt_errorf("writing %s failed", path);
    return ZT_OK;
}
