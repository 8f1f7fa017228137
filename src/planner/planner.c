// The memory planner's arithmetic (planner.h): every rank's bytes by category without
// allocating anything, and the stage costs the `memory` partition balances. The fits-check
// and its advice are in planner_advice.c, the report of `zerotrain memory` in
// planner_report.c.
#include "planner.h"

#include <string.h>

#include "dp_sync.h"
#include "comm_mpi.h"
#include "generate.h"
#include "gpt2.h"
#include "grid.h"
#include "grid_data.h"

const char *zt_plan_format_bytes(double b, char *buf, size_t size) {
    if (b >= 1073741824.0) snprintf(buf, size, "%.2f GiB", b / 1073741824.0);
    else if (b >= 1048576.0) snprintf(buf, size, "%.1f MiB", b / 1048576.0);
    else if (b >= 1024.0) snprintf(buf, size, "%.1f KiB", b / 1024.0);
    else snprintf(buf, size, "%.0f B", b);
    return buf;
}

// ---------------------------------------------------------------- the spec

int zt_plan_partition_stages(const zt_plan_spec *s) {
    return s->pp * (s->virtual_stages > 1 ? s->virtual_stages : 1);
}

// Under interleaved: virtual stage v's chunk slots, from its rank's list. The spec is
// validated (m a multiple of pp): a failure to build is a bug.
static int chunk_slots(const zt_plan_spec *s, int v) {
    zt_schedule sch;
    ZT_ASSERT(zt_schedule_build_chunks(&sch, s->schedule, s->pp, v % s->pp, s->grad_accum,
                                       s->virtual_stages) == ZT_OK);
    int n = zt_schedule_chunk_slots(&sch, v / s->pp);
    zt_schedule_free(&sch);
    return n;
}

int zt_plan_stage_slots(const zt_plan_spec *s, int stage) {
    if (s->virtual_stages > 1) return chunk_slots(s, stage);
    int m = s->grad_accum, left = s->pp - stage;
    if (s->schedule == ZT_SCHED_ZB_H1) left = s->pp; // every stage holds up to p (schedule.h)
    return s->schedule == ZT_SCHED_GPIPE ? m : (left < m ? left : m);
}

int zt_plan_stage_w_slots(const zt_plan_spec *s, int slots) {
    return s->schedule == ZT_SCHED_ZB_H1 ? slots : 0;
}

int zt_plan_ring_sends(const zt_plan_spec *s, int slots, size_t *bytes) {
    *bytes = zt_gpt2_rows(s->micro_batch, s->seq, s->tp, s->seq_parallel) *
             (size_t)s->shape.n_embd * sizeof(float);
    return s->virtual_stages > 1 && s->pp > 1 ? 2 * slots : 0;
}

void zt_plan_shard(const zt_plan_spec *s, size_t numel, int dp_rank, size_t *lo, size_t *hi) {
    zt_dp_shard(numel, s->dp, dp_rank, s->zero, lo, hi); // the trainer's own arithmetic
}

// ---------------------------------------------------------------- one rank

// The stage's part of a plan: units [first, last) on tp rank `tp_rank` with `slots`
// micro-batches in flight; everything but the optimizer, the comm backend and the end
// of the run.
static zt_status plan_stage(const zt_plan_spec *s, int first, int last, int tp_rank, int slots,
                            zt_plan_bytes *o) {
    size_t m[ZT_MEM_NCAT], pad = (size_t)s->dp * ZT_ALIGN_ELEMS;
    size_t work = s->backend->attention_workspace
                      ? s->backend->attention_workspace(s->threads, s->seq) : 0;
    zt_dtype dtype = s->param_bytes == 2 ? ZT_BF16 : ZT_F32;
    ZT_TRY(zt_gpt2_footprint(m, &s->shape, first, last, s->tp, tp_rank, ZT_ALIGN_ELEMS, pad,
                             s->micro_batch, s->seq, s->loss_chunk, slots, work, dtype,
                             s->backend->gemm_mixed_workspace,
                             &(zt_act_options){s->recompute, s->seq_parallel,
                                               zt_plan_stage_w_slots(s, slots)}));
    memset(o, 0, sizeof *o);
    o->unit_first = first;
    o->unit_last = last;
    o->n_slots = slots;
    o->tp_rank = tp_rank;
    o->numel = m[ZT_MEM_PARAMS] / zt_dtype_size(dtype);
    for (int k = 0; k < ZT_MEM_NCAT; k++) o->bytes[k] = (double)m[k];
    // the trainer's own buffers: token ids of every held micro-batch (inputs and
    // targets), the activations received from the stage before and their gradients from
    // the stage after, per slot, and the gradient of the stage's input (this rank's rows)
    double BT = (double)s->micro_batch * s->seq;
    double NC = (double)zt_gpt2_rows(s->micro_batch, s->seq, s->tp, s->seq_parallel) *
                s->shape.n_embd;
    o->bytes[ZT_MEM_WORKSPACE] += 2.0 * slots * BT * sizeof(int32_t);
    // the backend's own buffers, allocated when it opens (CUDA: cuBLAS's workspace, the
    // sums' and the bf16 ops' scratch)
    o->bytes[ZT_MEM_WORKSPACE] += (double)s->backend->fixed_workspace;
    // activations and gradients in the stream's dtype (the model's)
    o->bytes[ZT_MEM_COMM] += (2.0 * slots + 1.0) * NC * zt_dtype_size(dtype);
    if (s->sample) { // the --sample-every decoder's own buffers (fp32, src/model/generate.h)
        size_t dec[ZT_MEM_NCAT];
        zt_decoder_bytes(dec, &s->shape, first, last, s->tp);
        for (int k = 0; k < ZT_MEM_NCAT; k++) o->bytes[k] += (double)dec[k];
    }
    return ZT_OK;
}

// The layout adamw8bit walks: the stage's tensors, the flat length padded as allocated.
static zt_status stage_layout(const zt_plan_spec *s, int first, int last, int tp_rank,
                              size_t numel, zt_layout *lay) {
    ZT_TRY(zt_layout_init(lay, &s->shape, first, last, s->tp, tp_rank, ZT_ALIGN_ELEMS));
    ZT_ASSERT(zt_round_up(lay->numel, (size_t)s->dp * ZT_ALIGN_ELEMS) == numel);
    lay->numel = numel;
    return ZT_OK;
}

// An interleaved rank's units: its chunks' ranges (firsts, lasts: V entries each).
static void rank_chunks(const zt_plan_spec *s, const zt_partition *p, int pp_rank, int *firsts,
                        int *lasts) {
    for (int c = 0; c < s->virtual_stages; c++) {
        firsts[c] = p->first[c * s->pp + pp_rank];
        lasts[c] = p->first[c * s->pp + pp_rank + 1];
    }
}

// An interleaved rank (V > 1; the trainer's zt_gpt2_init_ranges and zt_gpt2_init_view): one
// flat parameter and gradient buffer over its chunks, each chunk's activations, workspace
// and logits with its own slots, and the trainer's buffers per chunk slot (token ids, the
// activations and output gradients received, the input gradient sent: 3 per slot, since
// every send stays in flight until its slot is reused).
static zt_status plan_chunks(const zt_plan_spec *s, const zt_partition *p, int pp_rank,
                             int tp_rank, zt_plan_bytes *o) {
    int V = s->virtual_stages, firsts[V], lasts[V], slots = 0;
    size_t m[ZT_MEM_NCAT], pad = (size_t)s->dp * ZT_ALIGN_ELEMS;
    size_t work = s->backend->attention_workspace
                      ? s->backend->attention_workspace(s->threads, s->seq) : 0;
    zt_dtype dtype = s->param_bytes == 2 ? ZT_BF16 : ZT_F32;
    memset(o, 0, sizeof *o);
    rank_chunks(s, p, pp_rank, firsts, lasts);
    for (int c = 0; c < V; c++) {
        int n = zt_plan_stage_slots(s, c * s->pp + pp_rank);
        ZT_TRY(zt_gpt2_footprint(m, &s->shape, firsts[c], lasts[c], s->tp, tp_rank,
                                 ZT_ALIGN_ELEMS, pad, s->micro_batch, s->seq, s->loss_chunk, n,
                                 work, dtype, s->backend->gemm_mixed_workspace,
                                 &(zt_act_options){s->recompute, s->seq_parallel, 0}));
        for (int k = ZT_MEM_ACTIVATIONS; k <= ZT_MEM_LOGITS; k++) o->bytes[k] += (double)m[k];
        slots += n;
    }
    zt_layout lay;
    ZT_TRY(zt_layout_init_ranges(&lay, &s->shape, V, firsts, lasts, s->tp, tp_rank,
                                 ZT_ALIGN_ELEMS));
    o->numel = zt_round_up(lay.numel, pad);
    zt_layout_free(&lay);
    o->bytes[ZT_MEM_PARAMS] = o->bytes[ZT_MEM_GRADS] = (double)(o->numel * zt_dtype_size(dtype));
    o->unit_first = firsts[0];
    o->unit_last = lasts[V - 1];
    o->n_slots = slots;
    o->tp_rank = tp_rank;
    double BT = (double)s->micro_batch * s->seq;
    double NC = (double)zt_gpt2_rows(s->micro_batch, s->seq, s->tp, s->seq_parallel) *
                s->shape.n_embd;
    o->bytes[ZT_MEM_WORKSPACE] += 2.0 * slots * BT * sizeof(int32_t);
    o->bytes[ZT_MEM_WORKSPACE] += (double)s->backend->fixed_workspace;
    o->bytes[ZT_MEM_COMM] += 3.0 * slots * NC * zt_dtype_size(dtype); // in, dout, dinput a slot
    return ZT_OK;
}

// The stage part of rank pp_rank's plan (plan_stage, or plan_chunks under interleaved).
static zt_status plan_rank_stage(const zt_plan_spec *s, const zt_partition *p, int pp_rank,
                                 int tp_rank, zt_plan_bytes *o) {
    if (s->virtual_stages > 1) return plan_chunks(s, p, pp_rank, tp_rank, o);
    return plan_stage(s, p->first[pp_rank], p->first[pp_rank + 1], tp_rank,
                      zt_plan_stage_slots(s, pp_rank), o);
}

zt_status zt_plan_rank_layout(const zt_plan_spec *s, const zt_partition *p, int pp_rank,
                              int tp_rank, zt_layout *lay) {
    int V = s->virtual_stages > 1 ? s->virtual_stages : 1, firsts[V], lasts[V];
    if (V == 1) firsts[0] = p->first[pp_rank], lasts[0] = p->first[pp_rank + 1];
    else rank_chunks(s, p, pp_rank, firsts, lasts);
    ZT_TRY(zt_layout_init_ranges(lay, &s->shape, V, firsts, lasts, s->tp, tp_rank,
                                 ZT_ALIGN_ELEMS));
    lay->numel = zt_round_up(lay->numel, (size_t)s->dp * ZT_ALIGN_ELEMS);
    return ZT_OK;
}

// The layout adamw8bit walks on rank pp_rank, whose flat buffer the plan counted as numel.
static zt_status rank_layout(const zt_plan_spec *s, const zt_partition *p, int pp_rank,
                             int tp_rank, size_t numel, zt_layout *lay) {
    ZT_TRY(zt_plan_rank_layout(s, p, pp_rank, tp_rank, lay));
    ZT_ASSERT(lay->numel == numel);
    return ZT_OK;
}

// The optimizer state of dp rank `dp_rank` (lay: the stage's layout, needed for 8 bits).
static void plan_optimizer(const zt_plan_spec *s, const zt_layout *lay, int dp_rank,
                           zt_plan_bytes *o) {
    zt_plan_shard(s, o->numel, dp_rank, &o->shard_lo, &o->shard_hi);
    size_t lo = o->shard_lo, hi = o->shard_hi;
    double n = (double)(hi - lo);
    o->opt_master = s->param_bytes < 4 ? n * sizeof(float) : 0.0;
    o->opt_absmax = o->opt_table = 0.0;
    if (!s->is_8bit) {
        o->opt_m = o->opt_v = n * sizeof(float);
    } else {
        // adamw8bit.c's plan, counted by kind: per tensor piece of [lo, hi), fp32 m and v
        // below min_8bit_size, else one code each and one absmax each per block
        size_t B = (size_t)s->opt8.block_size, n32 = 0, n8 = 0, blocks = 0, pieces = 0;
        for (int i = 0; i < lay->n; i++) {
            const zt_tensor_desc *t = &lay->t[i];
            size_t a = t->offset > lo ? t->offset : lo;
            size_t b = zt_min_sz(t->offset + t->numel, hi);
            if (a >= b) continue;
            pieces++;
            if (zt_adamw8bit_is_8bit(t, &s->opt8)) {
                n8 += b - a;
                blocks += (b - a + B - 1) / B;
            } else {
                n32 += b - a;
            }
        }
        o->opt_m = o->opt_v = (double)n32 * sizeof(float) + (double)n8;
        o->opt_absmax = 2.0 * (double)blocks * sizeof(float);
        o->opt_table = (double)pieces * sizeof(zt_adamw8bit_piece);
        // the split must add up to what the optimizer allocates (a planner bug otherwise)
        double whole = (double)zt_adamw8bit_state_bytes(lay, lo, hi, &s->opt8);
        ZT_ASSERTF(o->opt_m + o->opt_v + o->opt_absmax + o->opt_table == whole,
                   "planner: adamw8bit state split %.0f != %.0f",
                   o->opt_m + o->opt_v + o->opt_absmax + o->opt_table, whole);
    }
    o->bytes[ZT_MEM_OPTIMIZER] = o->opt_master + o->opt_m + o->opt_v + o->opt_absmax + o->opt_table;
}

static int node_of(const zt_plan_spec *s, int rank) {
    return s->ranks_per_node > 0 ? rank / s->ranks_per_node : 0;
}

// One communicator of `size` ranks whose lowest and highest world ranks are lo, hi
// (members are increasing, machines hold consecutive ranks): what the MPI backend says it
// costs, its tables in the allocator's count and its staging window outside it.
static void add_comm(const zt_plan_spec *s, zt_plan_bytes *o, int size, int lo, int hi) {
    zt_comm_mpi_footprint f =
        zt_comm_mpi_footprint_of(size, s->stage_kib, node_of(s, lo) == node_of(s, hi));
    o->comm_backend += (double)f.tables;
    o->comm_window += (double)f.window;
}

// Every rank holds six communicators: main's world, then the grid's world, tp, dp, pp and
// embed (a size-1 one off the embed group, or with one stage).
static void plan_comm_backend(const zt_plan_spec *s, zt_plan_bytes *o) {
    int dp = s->dp, pp = s->pp, tp = s->tp, W = dp * pp * tp;
    int d = o->dp_rank, p = o->pp_rank;
    o->comm_backend = 0.0;
    o->comm_window = 0.0;
    add_comm(s, o, W, 0, W - 1); // main's world
    add_comm(s, o, W, 0, W - 1); // the grid's world
    add_comm(s, o, tp, zt_grid_rank(d, p, 0, dp, pp, tp), zt_grid_rank(d, p, tp - 1, dp, pp, tp));
    add_comm(s, o, dp, zt_grid_rank(0, p, o->tp_rank, dp, pp, tp),
             zt_grid_rank(dp - 1, p, o->tp_rank, dp, pp, tp));
    add_comm(s, o, pp, zt_grid_rank(d, 0, o->tp_rank, dp, pp, tp),
             zt_grid_rank(d, pp - 1, o->tp_rank, dp, pp, tp));
    if (pp > 1 && (p == 0 || p == pp - 1)) // the embed group: first and last stage
        add_comm(s, o, 2, zt_grid_rank(d, 0, o->tp_rank, dp, pp, tp),
                 zt_grid_rank(d, pp - 1, o->tp_rank, dp, pp, tp));
    else
        add_comm(s, o, 1, 0, 0);
    o->bytes[ZT_MEM_COMM] += o->comm_backend;
}

// ---------------------------------------------------------------- host staging

// The grid's groups that get a tensor path (grid_data.c), in its order.
static const zt_grid_group k_data_groups[4] = {ZT_GRID_GROUP_TP, ZT_GRID_GROUP_DP,
                                               ZT_GRID_GROUP_PP, ZT_GRID_GROUP_EMBED};

// The members of world rank (d, p, t)'s group of kind g in group order (zt_grid_members'
// order, by arithmetic: a plan of a million ranks must not scan the world per rank).
static int group_ranks(const zt_plan_spec *s, zt_grid_group g, int d, int p, int t, int *out) {
    int dp = s->dp, pp = s->pp, tp = s->tp, n = 0;
    switch (g) {
    case ZT_GRID_GROUP_TP:
        for (int i = 0; i < tp; i++) out[n++] = zt_grid_rank(d, p, i, dp, pp, tp);
        break;
    case ZT_GRID_GROUP_DP:
        for (int i = 0; i < dp; i++) out[n++] = zt_grid_rank(i, p, t, dp, pp, tp);
        break;
    case ZT_GRID_GROUP_PP:
        for (int i = 0; i < pp; i++) out[n++] = zt_grid_rank(d, i, t, dp, pp, tp);
        break;
    default: // the embed group: the first and last stage; a middle stage (or pp 1) alone
        out[n++] = zt_grid_rank(d, pp > 1 && p == pp - 1 ? 0 : p, t, dp, pp, tp);
        if (pp > 1 && (p == 0 || p == pp - 1)) out[n++] = zt_grid_rank(d, pp - 1, t, dp, pp, tp);
        break;
    }
    return n;
}

#define DEVICE_ID 32

// The device identity the grid would gather from world rank r (zt_backend_i.device): its
// machine and the GPU it opens there, picked as the backend picks it (local rank mod the
// machine's GPUs; a GPU of its own when gpus_per_node is 0); "" on a host backend.
static void device_id(const zt_plan_spec *s, int r, char *id) {
    id[0] = 0;
    if (!s->backend->device_memory) return;
    int local = s->ranks_per_node > 0 ? r % s->ranks_per_node : r, gpu = 0;
    int count = s->gpus_per_node > 0 ? s->gpus_per_node : local + 1;
    ZT_ASSERT(zt_backend_pick_device(-1, local, count, &gpu) == ZT_OK);
    snprintf(id, DEVICE_ID, "%d/%d", node_of(s, r), gpu);
}

// The grid's choice of tensor path for one group (members[0..n)).
static zt_data_path group_path(const zt_plan_spec *s, const int *members, int n,
                               char (*ids)[DEVICE_ID], const char **pids) {
    for (int i = 0; i < n; i++) {
        device_id(s, members[i], ids[i]);
        pids[i] = ids[i];
    }
    return zt_grid_group_path(pids, n, s->stage_all, NULL, NULL);
}

// Host staging bytes of a group on `path`: two buffers of the path's size.
static double path_staging(zt_data_path path) {
    return (double)zt_comm_staged_host_bytes(zt_grid_stage_bytes(path));
}

// The interleaved ring's slots of rank plan o where its pipeline group is staged
// (src/app/train.c reserves them: zt_plan_ring_sends).
static double ring_staging(const zt_plan_spec *s, zt_grid_group g, zt_data_path path,
                           const zt_plan_bytes *o) {
    size_t bytes;
    int sends = zt_plan_ring_sends(s, o->n_slots, &bytes);
    if (g != ZT_GRID_GROUP_PP || path == ZT_DATA_NCCL || !sends) return 0.0;
    return (double)zt_comm_staged_p2p_host_bytes(sends, bytes);
}

// Whether the grid makes tensor paths at all (zt_grid_open_data): a device backend, or
// --tensor-path staged.
static int has_data_paths(const zt_plan_spec *s) {
    return s->backend->device_memory || s->stage_all;
}

// Adds `bytes` of staging to rank plan o: counted in comm where the allocator counts host
// memory (a host backend), else beside it.
static void add_staging(const zt_plan_spec *s, zt_plan_bytes *o, double bytes) {
    o->staging += bytes;
    if (!s->backend->device_memory) o->bytes[ZT_MEM_COMM] += bytes;
}

typedef struct {
    int *members;
    char (*ids)[DEVICE_ID];
    const char **pids;
} group_scratch;

static void scratch_init(group_scratch *g, int n) {
    g->members = malloc((size_t)n * sizeof *g->members);
    g->ids = malloc((size_t)n * sizeof *g->ids);
    g->pids = malloc((size_t)n * sizeof *g->pids);
    ZT_ASSERT(g->members && g->ids && g->pids);
}

static void scratch_free(group_scratch *g) {
    free(g->members);
    free(g->ids);
    free(g->pids);
}

int zt_plan_interleaved_runs(const zt_plan_spec *s) {
    if (!has_data_paths(s)) return 1; // MPI between host ranks
    group_scratch g;
    scratch_init(&g, s->pp);
    int ok = 1;
    for (int d = 0; d < s->dp && ok; d++)
        for (int t = 0; t < s->tp && ok; t++) {
            int n = group_ranks(s, ZT_GRID_GROUP_PP, d, 0, t, g.members);
            ok = group_path(s, g.members, n, g.ids, g.pids) != ZT_DATA_NCCL;
        }
    scratch_free(&g);
    return ok;
}

// The staging of one rank (one != NULL: its four groups) or of every rank (all, indexed by
// world rank: each group's path chosen once, with its first member, and added to every
// member, so a plan of many ranks costs one choice per group).
static void plan_staging(const zt_plan_spec *s, zt_plan_bytes *one, zt_plan_bytes *all) {
    int W = s->dp * s->pp * s->tp, lo = one ? one->rank : 0, hi = one ? one->rank + 1 : W;
    for (int r = lo; r < hi; r++) (one ? one : &all[r])->staging = 0.0;
    if (!has_data_paths(s)) return;
    int most = s->dp > s->pp ? s->dp : s->pp;
    group_scratch g;
    scratch_init(&g, most > s->tp ? most : s->tp);
    for (int r = lo; r < hi; r++) {
        const zt_plan_bytes *o = one ? one : &all[r];
        for (int k = 0; k < 4; k++) {
            int n = group_ranks(s, k_data_groups[k], o->dp_rank, o->pp_rank, o->tp_rank,
                                g.members);
            zt_grid_group kind = k_data_groups[k];
            if (one) {
                zt_data_path path = group_path(s, g.members, n, g.ids, g.pids);
                add_staging(s, one, path_staging(path) + ring_staging(s, kind, path, one));
                continue;
            }
            if (g.members[0] != r) continue; // planned with its first member
            zt_data_path path = group_path(s, g.members, n, g.ids, g.pids);
            for (int i = 0; i < n; i++) {
                zt_plan_bytes *m = &all[g.members[i]];
                add_staging(s, m, path_staging(path) + ring_staging(s, kind, path, m));
            }
        }
    }
    scratch_free(&g);
}

// What the trainer mallocs at the end while everything else is still held: the first
// stage's copy of the last stage's tied embedding (the bit-identity check, pp > 1), then,
// with --save, rank 0's copy of every other (stage, tp rank) part's parameters (the
// export; every tp rank of a stage has the same length). The export's own buffers are
// not counted.
static void plan_end(const zt_plan_spec *s, zt_plan_bytes *o, const size_t *stage_numel) {
    double tied = 0.0, save = 0.0;
    if (s->pp > 1 && o->pp_rank == 0) {
        size_t wte = (size_t)s->shape.padded_vocab / (size_t)s->tp * (size_t)s->shape.n_embd;
        tied = (double)zt_round_up(wte, ZT_ALIGN_ELEMS) * sizeof(float);
    }
    if (s->save && o->rank == 0) {
        for (int k = 0; k < s->pp; k++) save += (double)stage_numel[k] * s->tp;
        save = (save - (double)stage_numel[0]) * sizeof(float);
    }
    o->end_transient = tied > save ? tied : save;
}

static void finish(const zt_plan_spec *s, zt_plan_bytes *o) {
    o->tracked = 0.0;
    for (int k = 0; k < ZT_MEM_NCAT; k++) o->tracked += o->bytes[k];
    o->peak = o->tracked + o->comm_window + o->end_transient +
              (s->backend->device_memory ? o->staging : 0.0);
}

// Every stage's padded flat length on tp rank 0 (rank 0's export gathers them).
static zt_status stage_numels(const zt_plan_spec *s, const zt_partition *p, size_t *numel) {
    for (int k = 0; k < s->pp; k++) {
        zt_plan_bytes b;
        ZT_TRY(plan_rank_stage(s, p, k, 0, &b));
        numel[k] = b.numel;
    }
    return ZT_OK;
}

zt_status zt_plan_rank(const zt_plan_spec *s, const zt_partition *p, int dp_rank, int pp_rank,
                       int tp_rank, zt_plan_bytes *out) {
    ZT_ASSERT(p->n_stages == zt_plan_partition_stages(s) && pp_rank >= 0 && pp_rank < s->pp);
    ZT_TRY(plan_rank_stage(s, p, pp_rank, tp_rank, out));
    out->dp_rank = dp_rank;
    out->pp_rank = pp_rank;
    out->rank = zt_grid_rank(dp_rank, pp_rank, tp_rank, s->dp, s->pp, s->tp);
    zt_layout lay = {0};
    if (s->is_8bit)
        ZT_TRY(rank_layout(s, p, pp_rank, tp_rank, out->numel, &lay));
    plan_optimizer(s, &lay, dp_rank, out);
    zt_layout_free(&lay);
    plan_comm_backend(s, out);
    plan_staging(s, out, NULL);
    size_t *numel = calloc((size_t)s->pp, sizeof *numel);
    ZT_ASSERT(numel);
    zt_status st = out->rank == 0 && s->save ? stage_numels(s, p, numel) : ZT_OK;
    if (st == ZT_OK) {
        plan_end(s, out, numel);
        finish(s, out);
    }
    free(numel);
    return st;
}

zt_status zt_plan_all(const zt_plan_spec *s, const zt_partition *p, zt_plan_bytes *out) {
    ZT_ASSERT(p->n_stages == zt_plan_partition_stages(s));
    size_t *numel = calloc((size_t)s->pp, sizeof *numel);
    ZT_ASSERT(numel);
    zt_status st = ZT_OK;
    for (int pr = 0; pr < s->pp && st == ZT_OK; pr++)
        for (int t = 0; t < s->tp && st == ZT_OK; t++) {
            zt_plan_bytes base;
            st = plan_rank_stage(s, p, pr, t, &base);
            if (st != ZT_OK) break;
            if (t == 0) numel[pr] = base.numel;
            zt_layout lay = {0};
            if (s->is_8bit) st = rank_layout(s, p, pr, t, base.numel, &lay);
            for (int d = 0; d < s->dp && st == ZT_OK; d++) {
                int r = zt_grid_rank(d, pr, t, s->dp, s->pp, s->tp);
                zt_plan_bytes *o = &out[r];
                if (d == 0 || s->is_8bit) { // fp32 state: every shard has the same length
                    *o = base;
                    plan_optimizer(s, &lay, d, o);
                } else {
                    *o = out[zt_grid_rank(0, pr, t, s->dp, s->pp, s->tp)];
                    zt_plan_shard(s, o->numel, d, &o->shard_lo, &o->shard_hi);
                }
                o->rank = r;
                o->dp_rank = d;
                o->pp_rank = pr;
                o->tp_rank = t;
            }
            zt_layout_free(&lay);
        }
    if (st == ZT_OK) {
        int W = s->dp * s->pp * s->tp;
        for (int r = 0; r < W; r++) plan_comm_backend(s, &out[r]);
        plan_staging(s, NULL, out);
        for (int r = 0; r < W; r++) {
            plan_end(s, &out[r], numel);
            finish(s, &out[r]);
        }
    }
    free(numel);
    return st;
}

double zt_plan_max_need(const zt_plan_spec *s, const zt_plan_bytes *all, int sharing,
                        int *first_rank) {
    int W = s->dp * s->pp * s->tp;
    if (sharing < 1) sharing = 1;
    if (sharing > W) sharing = W;
    double worst = -1.0;
    int at = 0;
    for (int g = 0; g < W; g += sharing) {
        double sum = 0.0;
        for (int r = g; r < g + sharing && r < W; r++) sum += all[r].peak;
        if (sum > worst) worst = sum, at = g;
    }
    if (first_rank) *first_rank = at;
    return worst;
}

// ---------------------------------------------------------------- the memory partition

void zt_plan_cache_init(zt_plan_cache *c, const zt_plan_spec *s) {
    c->L = s->shape.n_layer;
    size_t n = 4 * ((size_t)c->L + 1);
    c->done = calloc(n, 1);
    c->fixed = calloc(n, sizeof *c->fixed);
    c->per_slot = calloc(n, sizeof *c->per_slot);
    ZT_ASSERT(c->done && c->fixed && c->per_slot);
}

void zt_plan_cache_free(zt_plan_cache *c) {
    free(c->done);
    free(c->fixed);
    free(c->per_slot);
    memset(c, 0, sizeof *c);
}

// The exact cost of a stage: its tracked bytes at tp rank 0 and dp rank 0 (the other dp
// ranks' 8-bit shards differ by a few blocks), without the comm backend, which every
// stage has alike.
zt_status zt_plan_stage_cost(const zt_plan_spec *s, int first, int last, int slots, double *cost) {
    zt_plan_bytes b;
    ZT_TRY(plan_stage(s, first, last, 0, slots, &b));
    zt_layout lay = {0};
    if (s->is_8bit) ZT_TRY(stage_layout(s, first, last, 0, b.numel, &lay));
    plan_optimizer(s, &lay, 0, &b);
    zt_layout_free(&lay);
    finish(s, &b);
    *cost = b.tracked;
    return ZT_OK;
}

double zt_plan_stage_cost_cached(const zt_plan_spec *s, zt_plan_cache *c, int first, int last,
                                 int slots) {
    int L = c->L, embed = first == 0, head = last == L + 2;
    int lo = first > 1 ? first : 1, hi = last < L + 1 ? last : L + 1;
    int blocks = hi > lo ? hi - lo : 0;
    size_t key = ((size_t)(embed * 2 + head)) * ((size_t)L + 1) + (size_t)blocks;
    if (!c->done[key]) {
        double one, two;
        // validated with the spec (tp divides the shape): a failure here is a bug
        ZT_ASSERT(zt_plan_stage_cost(s, first, last, 1, &one) == ZT_OK);
        ZT_ASSERT(zt_plan_stage_cost(s, first, last, 2, &two) == ZT_OK);
        c->fixed[key] = one;
        c->per_slot[key] = two - one;
        c->done[key] = 1;
    }
    return c->fixed[key] + (slots - 1) * c->per_slot[key];
}

typedef struct {
    const zt_plan_spec *s;
    zt_plan_cache *cache;
} cost_ctx;

static double stage_cost(void *ctx, int stage, int first, int last) {
    cost_ctx *k = ctx;
    return zt_plan_stage_cost_cached(k->s, k->cache, first, last,
                                     zt_plan_stage_slots(k->s, stage));
}

// The partition builder's message names its stage count --pp: under interleaved say that it
// counts chunks.
static zt_status chunks_error(const zt_plan_spec *s) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", zt_error_message());
    return zt_errorf("%s (--schedule interleaved partitions --pp %d x --virtual-stages %d = %d "
                     "chunks: --pp %d above counts them; lower --virtual-stages, or give "
                     "--partition unit ranges, one per chunk)",
                     msg, s->pp, s->virtual_stages, zt_plan_partition_stages(s),
                     zt_plan_partition_stages(s));
}

static zt_status partition_cached(const zt_plan_spec *s, zt_plan_cache *cache,
                                  zt_partition *out) {
    if (!zt_partition_needs_costs(s->partition))
        return zt_partition_build(out, s->partition, &s->shape, zt_plan_partition_stages(s),
                                  NULL);
    cost_ctx k = {s, cache};
    return zt_partition_build_staged(out, zt_unit_count(&s->shape), zt_plan_partition_stages(s),
                                     stage_cost, &k);
}

zt_status zt_plan_partition_cached(const zt_plan_spec *s, zt_plan_cache *cache,
                                   zt_partition *out) {
    zt_status st = partition_cached(s, cache, out);
    return st != ZT_OK && s->virtual_stages > 1 ? chunks_error(s) : st;
}

zt_status zt_plan_partition(const zt_plan_spec *s, zt_partition *out) {
    zt_plan_cache c;
    zt_plan_cache_init(&c, s);
    zt_status st = zt_plan_partition_cached(s, &c, out);
    zt_plan_cache_free(&c);
    return st;
}
