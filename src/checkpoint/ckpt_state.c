// A rank's state as host memory, and where its elements sit in the checkpoint's global
// tensors (ckpt_internal.h).
#include "ckpt_internal.h"

#include <string.h>

#include "backend.h"

static void *view(const zt_backend *be, void *dev, size_t bytes, int read) {
    return bytes ? zt_be_map(be, dev, bytes, read) : dev;
}
static void unview(const zt_backend *be, void *dev, void *host, size_t bytes, int write) {
    if (bytes) zt_be_unmap(be, dev, host, bytes, write);
}

// The fp32 master weights of this rank's range [lo, hi) under bf16, else NULL.
static float *master_of(const zt_ckpt_ctx *c) {
    return c->is_8bit ? c->opt8->master : c->opt->master;
}

// Under bf16 a checkpoint's parameters are the fp32 masters (docs/checkpoints.md): they
// replace the widened bf16 values in [lo, hi) of the host view, or are set from it.
static void copy_masters(const zt_ckpt_ctx *c, float *params, int to_master) {
    float *master = master_of(c);
    size_t n = c->hi - c->lo, bytes = n * sizeof(float);
    if (!master || !n) return;
    const zt_backend *be = c->model->be;
    float *host = zt_be_map(be, master, bytes, !to_master);
    if (to_master) memcpy(host, params + c->lo, bytes);
    else memcpy(params + c->lo, host, bytes);
    zt_be_unmap(be, master, host, bytes, to_master);
}

void ckpt_map_state(const zt_ckpt_ctx *c, ckpt_host_state *h, int read) {
    zt_gpt2 *m = c->model;
    memset(h, 0, sizeof *h);
    h->params = zt_gpt2_params_map(m, read); // fp32 whatever the dtype
    if (read) copy_masters(c, h->params, 0);
    if (!c->is_8bit) {
        size_t n = (c->opt->hi - c->opt->lo) * sizeof(float);
        h->m = view(c->opt->be, c->opt->m, n, read);
        h->v = view(c->opt->be, c->opt->v, n, read);
    } else {
        zt_adamw8bit *o = c->opt8;
        h->m32 = view(o->be, o->m32, o->n32 * 4, read);
        h->v32 = view(o->be, o->v32, o->n32 * 4, read);
        h->qm = view(o->be, o->qm, o->n8, read);
        h->qv = view(o->be, o->qv, o->n8, read);
        h->am = view(o->be, o->absmax_m, o->n_blocks * 4, read);
        h->av = view(o->be, o->absmax_v, o->n_blocks * 4, read);
    }
}

void ckpt_unmap_state(const zt_ckpt_ctx *c, ckpt_host_state *h, int write) {
    zt_gpt2 *m = c->model;
    if (write) copy_masters(c, h->params, 1);
    zt_gpt2_params_unmap(m, h->params, write);
    if (!c->is_8bit) {
        size_t n = (c->opt->hi - c->opt->lo) * sizeof(float);
        unview(c->opt->be, c->opt->m, h->m, n, write);
        unview(c->opt->be, c->opt->v, h->v, n, write);
    } else {
        zt_adamw8bit *o = c->opt8;
        unview(o->be, o->m32, h->m32, o->n32 * 4, write);
        unview(o->be, o->v32, h->v32, o->n32 * 4, write);
        unview(o->be, o->qm, h->qm, o->n8, write);
        unview(o->be, o->qv, h->qv, o->n8, write);
        unview(o->be, o->absmax_m, h->am, o->n_blocks * 4, write);
        unview(o->be, o->absmax_v, h->av, o->n_blocks * 4, write);
    }
}

size_t ckpt_run_len(const zt_layout *lay, const zt_tensor_desc *t, size_t i, size_t end,
                    size_t *g) {
    size_t C = (size_t)t->local[1];
    *g = zt_layout_global_index(lay, t, i);
    size_t j = (i / C + 1) * C;
    if (j > end) j = end;
    while (j < end && zt_layout_global_index(lay, t, j) == *g + (j - i)) j = zt_min_sz(j + C, end);
    return j - i;
}

size_t ckpt_stored_numel(const zt_tensor_desc *t, const zt_model_shape *s) {
    size_t R = t->split == ZT_SPLIT_VOCAB ? (size_t)s->vocab : (size_t)t->shape[0];
    return R * (size_t)t->shape[1];
}
