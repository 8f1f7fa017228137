// The trainer's checks: before anything is allocated, that the run fits and has something to
// train; after the last step, the invariants every layout must keep.
#include "trainer.h"

#include <stdlib.h>
#include <string.h>

#include "grid_data.h"
#include "host_memory.h"
#include "rng.h"

// A device run (collective over the grid's world): every rank reads its GPU's memory,
// all gather it, and each decides alike from every rank's plan and the device identities
// the grid gathered (zt_grid_open_data): the ranks of each GPU together against its free
// memory, so a refusal is the same on every rank and rank 0 prints it once. Then the
// host-side parts (MPI tables and windows, the end's buffers, the pinned staging) against
// each rank's ulimit -v and the machine's available memory.
static zt_status check_device_memory(const zt_trainer *t) {
    const zt_grid *g = &t->grid;
    int W = g->world;
    ZT_ASSERTF(g->device_ids && g->device_index, "the grid gathered no devices");
    size_t fb = 0, tb = 0, hb = 0;
    (void)t->be->ops->memory_info(t->be, &fb, &tb, &hb);
    double mine[3] = {(double)fb, (double)tb, (double)hb};
    zt_device_memory *mem = calloc((size_t)W, sizeof *mem);
    double *raw = calloc((size_t)W * 3, sizeof *raw);
    const char **ids = calloc((size_t)W, sizeof *ids);
    zt_plan_bytes *all = calloc((size_t)W, sizeof *all);
    ZT_ASSERTF(mem && raw && ids && all, "out of host memory");
    zt_comm_all_gather(&g->world_comm, mine, raw, (size_t)W * 3, ZT_F64, NULL);
    for (int r = 0; r < W; r++) {
        mem[r] = (zt_device_memory){raw[3 * r], raw[3 * r + 1], raw[3 * r + 2]};
        ids[r] = g->device_ids + (size_t)r * ZT_GRID_DEVICE_ID;
    }
    zt_partition p;
    memset(&p, 0, sizeof p);
    zt_status s = zt_plan_partition(&t->plan, &p);
    if (s == ZT_OK) s = zt_plan_all(&t->plan, &p, all);
    if (s == ZT_OK) s = zt_plan_check_devices(all, W, ids, g->device_index, mem, NULL);
    // the staging buffers are allocated already (the grid's paths): in the address space
    // that ulimit -v bounds, but no longer in MemAvailable
    if (s == ZT_OK)
        s = zt_plan_check_host_parts(all, W, 1, 1, zt_host_rank_limit_bytes(),
                                     "ulimit -v (the memory limit of each rank's address "
                                     "space)");
    if (s == ZT_OK)
        s = zt_plan_check_host_parts(all, W, t->plan.ranks_per_node, 0,
                                     zt_host_available_bytes(),
                                     "this machine's available memory (MemAvailable and the "
                                     "memory cgroup's limit)");
    zt_partition_free(&p);
    free(all), free(ids), free(raw), free(mem);
    return s;
}

// Refuses, before any rank allocates, a run predicted not to fit: per rank against
// --mem-limit, else the ranks of this machine together against its available memory. On a
// device backend (collective then) --mem-limit as on the CPU, and the GPUs' memory and
// the host-side parts (check_device_memory) in any case.
zt_status zt_trainer_check_memory(const zt_trainer *t) {
    const zt_config *c = t->cfg;
    double limit = zt_config_mem_limit(c);
    int device = t->be->caps->device_memory;
    if (limit > 0) {
        char what[64];
        snprintf(what, sizeof what, "--mem-limit %s", c->mem_limit);
        if (!device) return zt_plan_check_fits(&t->plan, limit, 1, what);
        // agreed before the collective below: every rank then takes part in it
        ZT_TRY(zt_comm_agree(&t->grid.world_comm, zt_plan_check_fits(&t->plan, limit, 1, what)));
    }
    if (device) return check_device_memory(t);
    // ulimit -v bounds each rank (its address space holds more than the plan: a lower
    // bound, so this refuses only what cannot fit)
    ZT_TRY(zt_plan_check_fits(&t->plan, zt_host_rank_limit_bytes(), 1,
                              "ulimit -v (the memory limit of each rank's address space)"));
    return zt_plan_check_fits(&t->plan, zt_host_available_bytes(), t->plan.ranks_per_node,
                              "this machine's available memory (MemAvailable and the memory "
                              "cgroup's limit)");
}

// Before anything is allocated or loaded (rank 0): a resume from beyond --steps; the
// --ckpt-dir's lock (*lock: its descriptor, held until the run ends), taken before the
// directory is looked at so that no other run changes it from here on; the interrupted saves
// there (tmp-step-*) removed; and a --ckpt-dir
// holding checkpoints newer than this run's start (zt_ckpt_check_dir).
zt_status zt_trainer_check_start(const zt_config *c, int start, int *lock) {
    // (at --steps exactly the run is complete: zt_train_complete, not here)
    if (c->resume[0] && start > c->steps)
        return zt_errorf("the checkpoint is at step %d, beyond --steps %d: nothing to train; "
                         "raise --steps to continue (zerotrain export turns a checkpoint into "
                         "a model directory)", start, c->steps);
    if (!c->ckpt_dir[0]) return ZT_OK;
    ZT_TRY(zt_ckpt_lock(c->ckpt_dir, lock));
    // held (not a file system without flock): no other run writes there
    if (*lock >= 0) ZT_TRY(zt_ckpt_remove_interrupted(c->ckpt_dir));
    return zt_ckpt_check_dir(c->ckpt_dir, start);
}

// The first and last stage each hold the tied embedding; they take identical updates
// from identical gradients, so the copies must stay bit-identical (docs/design.md §2).
static zt_status check_tied_copies(zt_trainer *t) {
    const zt_grid *g = &t->grid;
    zt_gpt2 *m = &t->model;
    if (g->pp == 1 || !g->in_embed_group) return ZT_OK;
    size_t n = m->layout.tied_numel;
    float *mine = zt_gpt2_params_map(m, 1);
    int same = 1;
    if (zt_trainer_last_stage(t)) {
        zt_comm_send(&g->embed_comm, mine, n, ZT_F32, 0, 0, NULL);
    } else {
        float *other = malloc(n * sizeof(float));
        ZT_ASSERT(other);
        zt_comm_recv(&g->embed_comm, other, n, ZT_F32, 1, 0, NULL);
        same = memcmp(other, mine, n * sizeof(float)) == 0;
        free(other);
    }
    zt_gpt2_params_unmap(m, mine, 0);
    if (zt_trainer_last_stage(t)) return ZT_OK;
    if (!same)
        return zt_errorf("the tied embedding copies of the first and last stage differ (dp rank "
                         "%d): a bug; please report it", g->dp_rank);
    if (g->rank == 0) printf("tied embedding: the first and last stage copies are bit-identical\n");
    return ZT_OK;
}

// Tensors replicated across tp (LayerNorms, row-parallel biases, wpe) take identical
// gradients on every tp rank without a reduction (gpt2.c), so they must stay
// bit-identical: compared by a hash of their bytes.
static zt_status check_tp_replicas(zt_trainer *t) {
    const zt_grid *g = &t->grid;
    const zt_layout *lay = &t->model.layout;
    if (g->tp == 1) return ZT_OK;
    uint64_t h = ZT_FNV1A_BASIS;
    float *params = zt_gpt2_params_map(&t->model, 1);
    for (int i = 0; i < lay->n; i++)
        if (lay->t[i].replicated)
            h = zt_hash_bytes(h, params + lay->t[i].offset, lay->t[i].numel * sizeof(float));
    zt_gpt2_params_unmap(&t->model, params, 0);
    uint64_t *all = calloc((size_t)g->tp, sizeof *all);
    ZT_ASSERT(all);
    zt_comm_all_gather(&g->tp_comm, &h, all, (size_t)g->tp, ZT_I64, NULL);
    int same = 1;
    for (int r = 1; r < g->tp; r++) same &= all[r] == all[0];
    free(all);
    if (!same)
        return zt_errorf("the tensors replicated across tp (LayerNorms, biases) differ between "
                         "the tp ranks of stage %d, dp rank %d: a bug; please report it",
                         g->pp_rank, g->dp_rank);
    if (g->rank == 0) printf("tp replicas: LayerNorms and biases are bit-identical across tp\n");
    return ZT_OK;
}

// Every rank must have issued the same collectives in the same order (docs/design.md §2).
// The ranks of one stage share every communicator's work; stages differ by design (the
// last one's loss issues tp all-reduces the others do not), so ranks are compared with
// the first rank of their stage.
static zt_status check_collective_trace(zt_trainer *t) {
    const zt_grid *g = &t->grid;
    uint64_t mine[2] = {zt_comm_trace_state.count, zt_comm_trace_state.hash};
    uint64_t *all = calloc((size_t)g->world * 2, sizeof(uint64_t));
    ZT_ASSERT(all);
    zt_comm_all_gather(&g->world_comm, mine, all, (size_t)g->world * 2, ZT_I64, NULL);
    int same = 1;
    for (int r = 0; r < g->world; r++) {
        int dp_rank, pp_rank, tp_rank;
        zt_grid_coords(r, g->dp, g->pp, g->tp, &dp_rank, &pp_rank, &tp_rank);
        int first = zt_grid_rank(0, pp_rank, 0, g->dp, g->pp, g->tp);
        same &= all[2 * r] == all[2 * first] && all[2 * r + 1] == all[2 * first + 1];
    }
    if (g->rank == 0 && same)
        printf("collectives: %llu per rank on stage 0, the same sequence on every rank of a "
               "stage\n", (unsigned long long)all[0]);
    free(all);
    return same ? ZT_OK : zt_errorf("ranks issued different collective sequences: a bug");
}


zt_status zt_trainer_check_invariants(zt_trainer *t) {
    const zt_comm *world = &t->grid.world_comm;
    zt_status s = zt_comm_agree(world, check_tied_copies(t));
    if (s == ZT_OK) s = zt_comm_agree(world, check_tp_replicas(t));
    if (s == ZT_OK) s = check_collective_trace(t);
    return s;
}
