// --save: the final weights of every stage and tp rank, assembled on rank 0 into one Hugging
// Face directory.
#include "trainer.h"

#include <stdlib.h>

#include "hf_export.h"

// This rank's final weights as fp32 on the host. A bf16 run saved as fp32 writes its fp32
// masters (more than their bf16 rounding): each dp rank puts its range's masters in place and
// the synchronizer makes the buffer whole (every dp rank takes part). Otherwise the
// model's weights widened: bf16 weights are the masters rounded, exactly what a bf16 file holds.
static float *final_weights(zt_trainer *t) {
    zt_gpt2 *m = &t->model;
    float *w = zt_gpt2_params_map(m, 1); // fp32, whatever the model's dtype
    float *master = zt_trainer_master(t);
    if (!master || zt_config_save_dtype(t->cfg) != ZT_F32) return w;
    size_t lo = t->sync.shard_lo, n = t->sync.shard_hi - lo;
    t->be->ops->copy(t->be, w + lo, master, n * sizeof(float), ZT_COPY_D2H);
    zt_dp_sync_gather_host(&t->sync, w);
    return w;
}

// Writes the final weights: the dp 0 rank of every (stage, tp rank) sends its flat
// parameters to rank 0, which assembles and exports them as one Hugging Face directory.
zt_status zt_trainer_save_model(zt_trainer *t) {
    const zt_grid *g = &t->grid;
    const zt_config *c = t->cfg;
    zt_gpt2 *m = &t->model;
    float *mine = final_weights(t);
    if (g->dp_rank != 0) {
        zt_gpt2_params_unmap(m, mine, 0);
        return ZT_OK;
    }
    if (g->rank != 0) {
        zt_comm_send(&g->world_comm, mine, m->layout.numel, ZT_F32, 0, 0, NULL);
        zt_gpt2_params_unmap(m, mine, 0);
        return ZT_OK;
    }
    int n = g->pp * g->tp; // part k = stage k / tp, tp rank k % tp
    zt_layout *lays = calloc((size_t)n, sizeof *lays);
    const float **params = calloc((size_t)n, sizeof *params);
    float **owned = calloc((size_t)n, sizeof *owned);
    ZT_ASSERT(lays && params && owned);
    for (int k = 0; k < n; k++) {
        int stage = k / g->tp, tp_rank = k % g->tp, V = t->n_chunks, firsts[V], lasts[V];
        for (int c = 0; c < V; c++) { // the stage's chunks (one but under interleaved)
            firsts[c] = t->part.first[c * g->pp + stage];
            lasts[c] = t->part.first[c * g->pp + stage + 1];
        }
        ZT_ASSERT(zt_layout_init_ranges(&lays[k], &t->shape, V, firsts, lasts, g->tp, tp_rank,
                                        ZT_ALIGN_ELEMS) == ZT_OK);
        lays[k].numel = zt_round_up(lays[k].numel, (size_t)g->dp * ZT_ALIGN_ELEMS);
        if (k == 0) {
            params[k] = mine;
            continue;
        }
        owned[k] = malloc(lays[k].numel * sizeof(float));
        ZT_ASSERT(owned[k]);
        zt_comm_recv(&g->world_comm, owned[k], lays[k].numel, ZT_F32,
                     zt_grid_rank(0, stage, tp_rank, g->dp, g->pp, g->tp), 0, NULL);
        params[k] = owned[k];
    }
    zt_dtype dtype = zt_config_save_dtype(c);
    zt_status s = zt_hf_export(&t->shape, lays, params, n, dtype, c->save);
    if (s == ZT_OK)
        printf("saved %s/model.safetensors (%s)\n", c->save, dtype == ZT_BF16 ? "bf16" : "fp32");
    for (int k = 0; k < n; k++) {
        zt_layout_free(&lays[k]);
        free(owned[k]);
    }
    free(lays);
    free(params);
    free(owned);
    zt_gpt2_params_unmap(m, mine, 0);
    return s;
}

