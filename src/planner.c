// The memory planner (planner.h): every rank's bytes by category without allocating,
// the `memory` partition's stage cost, the fits-check and its advice (each change
// planned before it is offered), and the report of `zerotrain memory`.
#include "planner.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <string.h>
#include <sys/resource.h>

#include "generate.h"
#include "gpt2.h"
#include "grid.h"

// Communicators of one rank: main's world, then the grid's world, tp, dp, pp and embed.
#define N_COMMS 6
// The advice does not plan layouts beyond this many ranks.
#define MAX_ADVICE_WORLD 65536

const char *zt_plan_format_bytes(double b, char *buf, size_t size) {
    if (b >= 1073741824.0) snprintf(buf, size, "%.2f GiB", b / 1073741824.0);
    else if (b >= 1048576.0) snprintf(buf, size, "%.1f MiB", b / 1048576.0);
    else if (b >= 1024.0) snprintf(buf, size, "%.1f KiB", b / 1024.0);
    else snprintf(buf, size, "%.0f B", b);
    return buf;
}

// ---------------------------------------------------------------- the spec

int zt_plan_stage_kib_from_env(void) {
    const char *algo = getenv("ZT_COMM_MPI_ALGO"), *kib = getenv("ZT_COMM_MPI_STAGE_KIB");
    if (algo && strcmp(algo, "mpi") == 0) return 0;
    if (!kib || !*kib) return 256;
    char *end = NULL;
    long v = strtol(kib, &end, 10);
    return *end || v < 4 || v > 65536 ? 256 : (int)v;
}

zt_status zt_plan_spec_from_config(zt_plan_spec *s, const zt_config *c, int dp) {
    memset(s, 0, sizeof *s);
    if (dp < 1)
        return zt_errorf("the data-parallel degree must be at least 1 (got %d): give --dp", dp);
    s->shape = zt_config_shape(c);
    // a shape that tp cannot split fails here, with the layout's message, and never later
    // inside the `memory` partition's cost
    zt_layout lay;
    ZT_TRY(zt_layout_init(&lay, &s->shape, 0, zt_unit_count(&s->shape), c->tp, 0, ZT_ALIGN_ELEMS));
    zt_layout_free(&lay);
    s->dp = dp;
    s->pp = c->pp;
    s->tp = c->tp;
    s->zero = c->zero;
    s->micro_batch = c->micro_batch;
    s->seq = c->seq;
    s->grad_accum = c->grad_accum;
    s->loss_chunk = c->loss_chunk;
    ZT_TRY(zt_schedule_parse(c->schedule, &s->schedule));
    snprintf(s->partition, sizeof s->partition, "%s", c->partition);
    s->is_8bit = strcmp(c->optim, "adamw8bit") == 0;
    s->opt8 = zt_adamw8bit_default_options();
    s->opt8.block_size = c->optim_block;
    s->opt8.min_8bit_size = c->optim_min_8bit;
    s->opt8.fp32_embedding = c->optim_fp32_embedding;
    if (s->is_8bit) ZT_TRY(zt_adamw8bit_check_options(&s->opt8, ZT_ALIGN_ELEMS));
    if (strcmp(c->param_dtype, "fp32") == 0) s->param_bytes = 4;
    else if (strcmp(c->param_dtype, "bf16") == 0) s->param_bytes = 2;
    else
        return zt_errorf("--param-dtype '%s' is not known: use one of fp32, bf16",
                         c->param_dtype);
    s->ranks_per_node = c->ranks_per_node;
    s->stage_kib = zt_plan_stage_kib_from_env();
    s->save = c->save[0] != 0;
    s->sample = c->sample_every > 0;
    s->threads = c->threads > 0 ? c->threads : omp_get_max_threads();
    return ZT_OK;
}

int zt_plan_stage_slots(const zt_plan_spec *s, int stage) {
    int m = s->grad_accum, left = s->pp - stage;
    return s->schedule == ZT_SCHED_GPIPE ? m : (left < m ? left : m);
}

void zt_plan_shard(const zt_plan_spec *s, size_t numel, int dp_rank, size_t *lo, size_t *hi) {
    size_t dp = (size_t)s->dp;
    ZT_ASSERT(numel % (dp * ZT_ALIGN_ELEMS) == 0 && dp_rank >= 0 && dp_rank < s->dp);
    if (s->zero == 1) {
        *lo = (size_t)dp_rank * (numel / dp);
        *hi = *lo + numel / dp;
    } else {
        *lo = 0;
        *hi = numel;
    }
}

// ---------------------------------------------------------------- one rank

// The stage's part of a plan: units [first, last) on tp rank `tp_rank` with `slots`
// micro-batches in flight; everything but the optimizer, the comm backend and the end
// of the run.
static zt_status plan_stage(const zt_plan_spec *s, int first, int last, int tp_rank, int slots,
                            zt_plan_bytes *o) {
    size_t m[ZT_MEM_NCAT], pad = (size_t)s->dp * ZT_ALIGN_ELEMS;
    // the attention workspace is sized by the calling thread's OpenMP thread count
    // (zt_attention_workspace): plan with the rank's
    int mine = omp_get_max_threads();
    if (s->threads > 0) omp_set_num_threads(s->threads);
    zt_status st = zt_gpt2_footprint(m, &s->shape, first, last, s->tp, tp_rank, ZT_ALIGN_ELEMS,
                                     pad, s->micro_batch, s->seq, s->loss_chunk, slots);
    omp_set_num_threads(mine);
    ZT_TRY(st);
    memset(o, 0, sizeof *o);
    o->unit_first = first;
    o->unit_last = last;
    o->n_slots = slots;
    o->tp_rank = tp_rank;
    o->numel = m[ZT_MEM_PARAMS] / sizeof(float);
    for (int k = 0; k < ZT_MEM_NCAT; k++) o->bytes[k] = (double)m[k];
    // 16-bit values where the model holds parameters and activations (planner.h)
    double scale = s->param_bytes / 4.0;
    o->bytes[ZT_MEM_PARAMS] *= scale;
    o->bytes[ZT_MEM_GRADS] *= scale;
    o->bytes[ZT_MEM_ACTIVATIONS] *= scale;
    o->bytes[ZT_MEM_LOGITS] *= scale;
    // the trainer's own buffers: token ids of every held micro-batch (inputs and
    // targets), the activations received from the stage before and their gradients from
    // the stage after, per slot, and the gradient of the stage's input
    double BT = (double)s->micro_batch * s->seq, NC = BT * s->shape.n_embd;
    o->bytes[ZT_MEM_WORKSPACE] += 2.0 * slots * BT * sizeof(int32_t);
    o->bytes[ZT_MEM_COMM] += (2.0 * slots + 1.0) * NC * s->param_bytes;
    if (s->sample) { // the --sample-every decoder's own buffers (fp32, src/generate.h)
        size_t dec[ZT_MEM_NCAT];
        zt_decoder_bytes(dec, &s->shape, s->tp);
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
// (members are increasing, machines hold consecutive ranks): the backend's tables in
// the allocator's count, and the staging window outside it when every member shares
// a machine (comm/comm_mpi.c, stage_init).
static void add_comm(const zt_plan_spec *s, zt_plan_bytes *o, int size, int lo, int hi) {
    if (size < 2 || s->stage_kib == 0 || node_of(s, lo) != node_of(s, hi)) return;
    o->comm_backend += size * (sizeof(char *) + 2 * sizeof(int));
    o->comm_window += 2.0 * size * (double)s->stage_kib * 1024.0;
}

static void plan_comm_backend(const zt_plan_spec *s, zt_plan_bytes *o) {
    int dp = s->dp, pp = s->pp, tp = s->tp, W = dp * pp * tp;
    int d = o->dp_rank, p = o->pp_rank;
    // what comm/comm_mpi.c allocates through zt_mem_alloc for every communicator
    o->comm_backend = N_COMMS * (double)zt_comm_mpi_state_bytes();
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
    o->bytes[ZT_MEM_COMM] += o->comm_backend;
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

static void finish(zt_plan_bytes *o) {
    o->tracked = 0.0;
    for (int k = 0; k < ZT_MEM_NCAT; k++) o->tracked += o->bytes[k];
    o->peak = o->tracked + o->comm_window + o->end_transient;
}

// Every stage's padded flat length on tp rank 0 (rank 0's export gathers them).
static zt_status stage_numels(const zt_plan_spec *s, const zt_partition *p, size_t *numel) {
    for (int k = 0; k < s->pp; k++) {
        zt_plan_bytes b;
        ZT_TRY(plan_stage(s, p->first[k], p->first[k + 1], 0, 1, &b));
        numel[k] = b.numel;
    }
    return ZT_OK;
}

zt_status zt_plan_rank(const zt_plan_spec *s, const zt_partition *p, int dp_rank, int pp_rank,
                       int tp_rank, zt_plan_bytes *out) {
    ZT_ASSERT(p->n_stages == s->pp && pp_rank >= 0 && pp_rank < s->pp);
    ZT_TRY(plan_stage(s, p->first[pp_rank], p->first[pp_rank + 1], tp_rank,
                      zt_plan_stage_slots(s, pp_rank), out));
    out->dp_rank = dp_rank;
    out->pp_rank = pp_rank;
    out->rank = zt_grid_rank(dp_rank, pp_rank, tp_rank, s->dp, s->pp, s->tp);
    zt_layout lay = {0};
    if (s->is_8bit)
        ZT_TRY(stage_layout(s, out->unit_first, out->unit_last, tp_rank, out->numel, &lay));
    plan_optimizer(s, &lay, dp_rank, out);
    zt_layout_free(&lay);
    plan_comm_backend(s, out);
    size_t *numel = calloc((size_t)s->pp, sizeof *numel);
    ZT_ASSERT(numel);
    zt_status st = out->rank == 0 && s->save ? stage_numels(s, p, numel) : ZT_OK;
    if (st == ZT_OK) {
        plan_end(s, out, numel);
        finish(out);
    }
    free(numel);
    return st;
}

zt_status zt_plan_all(const zt_plan_spec *s, const zt_partition *p, zt_plan_bytes *out) {
    ZT_ASSERT(p->n_stages == s->pp);
    size_t *numel = calloc((size_t)s->pp, sizeof *numel);
    ZT_ASSERT(numel);
    zt_status st = ZT_OK;
    for (int pr = 0; pr < s->pp && st == ZT_OK; pr++)
        for (int t = 0; t < s->tp && st == ZT_OK; t++) {
            zt_plan_bytes base;
            st = plan_stage(s, p->first[pr], p->first[pr + 1], t, zt_plan_stage_slots(s, pr),
                            &base);
            if (st != ZT_OK) break;
            if (t == 0) numel[pr] = base.numel;
            zt_layout lay = {0};
            if (s->is_8bit) st = stage_layout(s, base.unit_first, base.unit_last, t, base.numel,
                                              &lay);
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
        for (int r = 0; r < W; r++) {
            plan_comm_backend(s, &out[r]);
            plan_end(s, &out[r], numel);
            finish(&out[r]);
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

// A stage's cost depends on its units only through (holds the embed unit, holds the
// head unit, number of blocks): every block has the same tensors and activations. So the
// `memory` partition's dynamic program, which asks for every (stage, first, last), costs
// one footprint per distinct key, and slots enter linearly (activations, token ids,
// pipeline buffers are per slot). The cache is valid for one spec's sizes; pp, the
// schedule and grad_accum (which only set slots) may change under it.
typedef struct {
    int L;
    char *done;     // (2 * 2 * (L + 1))
    double *fixed;  // the stage's bytes with 1 slot (tp rank 0, dp rank 0's optimizer)
    double *per_slot; // the bytes each further slot adds
} stage_cache;

static void cache_init(stage_cache *c, const zt_plan_spec *s) {
    c->L = s->shape.n_layer;
    size_t n = 4 * ((size_t)c->L + 1);
    c->done = calloc(n, 1);
    c->fixed = calloc(n, sizeof *c->fixed);
    c->per_slot = calloc(n, sizeof *c->per_slot);
    ZT_ASSERT(c->done && c->fixed && c->per_slot);
}

static void cache_free(stage_cache *c) {
    free(c->done);
    free(c->fixed);
    free(c->per_slot);
    memset(c, 0, sizeof *c);
}

// The exact cost of a stage: its tracked bytes at tp rank 0 and dp rank 0 (the other dp
// ranks' 8-bit shards differ by a few blocks), without the comm backend, which every
// stage has alike.
static zt_status exact_cost(const zt_plan_spec *s, int first, int last, int slots,
                            double *cost) {
    zt_plan_bytes b;
    ZT_TRY(plan_stage(s, first, last, 0, slots, &b));
    zt_layout lay = {0};
    if (s->is_8bit) ZT_TRY(stage_layout(s, first, last, 0, b.numel, &lay));
    plan_optimizer(s, &lay, 0, &b);
    zt_layout_free(&lay);
    finish(&b);
    *cost = b.tracked;
    return ZT_OK;
}

static double cached_cost(const zt_plan_spec *s, stage_cache *c, int first, int last,
                          int slots) {
    int L = c->L, embed = first == 0, head = last == L + 2;
    int lo = first > 1 ? first : 1, hi = last < L + 1 ? last : L + 1;
    int blocks = hi > lo ? hi - lo : 0;
    size_t key = ((size_t)(embed * 2 + head)) * ((size_t)L + 1) + (size_t)blocks;
    if (!c->done[key]) {
        double one, two;
        // validated with the spec (tp divides the shape): a failure here is a bug
        ZT_ASSERT(exact_cost(s, first, last, 1, &one) == ZT_OK);
        ZT_ASSERT(exact_cost(s, first, last, 2, &two) == ZT_OK);
        c->fixed[key] = one;
        c->per_slot[key] = two - one;
        c->done[key] = 1;
    }
    return c->fixed[key] + (slots - 1) * c->per_slot[key];
}

typedef struct {
    const zt_plan_spec *s;
    stage_cache *cache;
} cost_ctx;

static double stage_cost(void *ctx, int stage, int first, int last) {
    cost_ctx *k = ctx;
    return cached_cost(k->s, k->cache, first, last, zt_plan_stage_slots(k->s, stage));
}

static zt_status partition_with(const zt_plan_spec *s, stage_cache *cache, zt_partition *out) {
    if (strcmp(s->partition, "memory") != 0)
        return zt_partition_build(out, s->partition, &s->shape, s->pp, NULL);
    cost_ctx k = {s, cache};
    return zt_partition_build_staged(out, zt_unit_count(&s->shape), s->pp, stage_cost, &k);
}

zt_status zt_plan_partition(const zt_plan_spec *s, zt_partition *out) {
    stage_cache c;
    cache_init(&c, s);
    zt_status st = partition_with(s, &c, out);
    cache_free(&c);
    return st;
}

// Test hook (tests/test_planner.c): every (stage, first, last) cost from one cache
// against the exact cost; returns the number that differ (printing the first).
int zt_plan_cache_mismatches_(const zt_plan_spec *s);
int zt_plan_cache_mismatches_(const zt_plan_spec *s) {
    stage_cache c;
    cache_init(&c, s);
    int U = zt_unit_count(&s->shape), bad = 0;
    for (int stage = s->pp - 1; stage >= 0; stage--) // reuse keys filled by other stages
        for (int first = 0; first < U; first++)
            for (int last = first + 1; last <= U; last++) {
                int slots = zt_plan_stage_slots(s, stage);
                double want, got = cached_cost(s, &c, first, last, slots);
                ZT_ASSERT(exact_cost(s, first, last, slots, &want) == ZT_OK);
                if (got != want && bad++ == 0)
                    fprintf(stderr, "stage %d units [%d, %d): cached %.0f, exact %.0f\n", stage,
                            first, last, got, want);
            }
    cache_free(&c);
    return bad;
}

// ---------------------------------------------------------------- fits and advice

// One number from a cgroup file ("max" = no limit: 0); 0 when the file is missing.
static double cgroup_value(const char *dir, const char *file) {
    char path[600], text[64] = "";
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(text, sizeof text, f) != NULL;
    fclose(f);
    if (!ok || !isdigit((unsigned char)text[0])) return 0;
    return strtod(text, NULL);
}

// What the memory cgroup of this process still allows (0 = no limit): cgroup v2
// memory.max - memory.current, or v1 memory.limit_in_bytes - memory.usage_in_bytes (v1
// writes a huge number for "no limit"). Read at the mount point, which a container's
// cgroup namespace makes its own cgroup; ZT_CGROUP_DIR points elsewhere (tests).
static double cgroup_room(void) {
    const char *dir = getenv("ZT_CGROUP_DIR");
    const char *v2 = dir ? dir : "/sys/fs/cgroup", *v1 = dir ? dir : "/sys/fs/cgroup/memory";
    double max = cgroup_value(v2, "memory.max"), used = cgroup_value(v2, "memory.current");
    if (max <= 0) {
        max = cgroup_value(v1, "memory.limit_in_bytes");
        used = cgroup_value(v1, "memory.usage_in_bytes");
        if (max >= 4.0e18) max = 0; // v1 writes about 2^63 for "no limit"
    }
    if (max <= 0) return 0;
    return max > used ? max - used : 1; // at the limit: nothing left, but not "no limit"
}

double zt_plan_available_bytes(void) {
    double avail = zt_mem_proc_bytes("/proc/meminfo", "MemAvailable"), room = cgroup_room();
    if (room > 0 && (avail <= 0 || room < avail)) avail = room;
    return avail;
}

double zt_plan_rank_limit_bytes(void) {
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 0;
    return (double)r.rlim_cur;
}

int zt_plan_local_ranks(int world) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "SLURM_NTASKS_PER_NODE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && isdigit((unsigned char)v[0])) { // Slurm may write "4(x2)": the first count
            int n = atoi(v);
            if (n >= 1 && n <= world) return n;
        }
    }
    return world;
}

// A planned variant: the largest need (per rank or per machine) and the worst rank.
typedef struct {
    double need;
    int first_rank;       // the group with that need
    zt_plan_bytes worst;  // its largest rank
    int world;
    char partition[1024]; // zt_partition_format of the variant
} variant;

// Plans `s` (cache: NULL, or one valid for s's sizes). Fails when the variant cannot be
// built (a partition that does not fit its pp, ...).
static zt_status plan_variant(const zt_plan_spec *s, stage_cache *cache, int sharing,
                              variant *v) {
    stage_cache own;
    if (!cache) cache_init(&own, s);
    zt_partition p = {0};
    zt_status st = partition_with(s, cache ? cache : &own, &p);
    zt_plan_bytes *all = NULL;
    v->world = s->dp * s->pp * s->tp;
    if (st == ZT_OK) {
        all = malloc((size_t)v->world * sizeof *all);
        ZT_ASSERT(all);
        st = zt_plan_all(s, &p, all);
    }
    if (st == ZT_OK) {
        v->need = zt_plan_max_need(s, all, sharing, &v->first_rank);
        int n = sharing < 1 ? 1 : sharing;
        v->worst = all[v->first_rank];
        for (int r = v->first_rank; r < v->first_rank + n && r < v->world; r++)
            if (all[r].peak > v->worst.peak) v->worst = all[r];
        zt_partition_format(&p, &s->shape, v->partition, sizeof v->partition);
    }
    free(all);
    zt_partition_free(&p);
    if (!cache) cache_free(&own);
    return st;
}

// The advice's search stops trying changes at this deadline (omp_get_wtime seconds; 0 =
// none): planning a deep model for every stage count and dp took minutes (issue 16), and a
// refusal must come at once. What was found by then is advised.
#define ADVICE_BUDGET_S 0.5
static double advice_deadline;

static int fits(const zt_plan_spec *s, stage_cache *cache, double limit, int sharing,
                variant *v) {
    if (advice_deadline > 0 && omp_get_wtime() > advice_deadline) return 0;
    if ((double)s->dp * s->pp * s->tp > MAX_ADVICE_WORLD) return 0;
    return plan_variant(s, cache, sharing, v) == ZT_OK && v->need <= limit;
}

static void add_advice(zt_plan_advice *adv, int *n, int max, const char *change,
                       const variant *v) {
    if (*n >= max) return;
    snprintf(adv[*n].change, sizeof adv[*n].change, "%s", change);
    adv[*n].need = v->need;
    adv[*n].world = v->world;
    (*n)++;
}

// Each search changes one thing of `s`, in growing steps, and keeps the first step that
// fits. `prefix` ("" or an earlier change, for combinations) starts the text.
static void try_dp(const zt_plan_spec *s, double limit, int sharing, const char *prefix,
                   zt_plan_advice *adv, int *n, int max) {
    for (int d = s->zero ? 2 * s->dp : s->dp; (double)d * s->pp * s->tp <= MAX_ADVICE_WORLD;
         d *= 2) {
        zt_plan_spec t = *s;
        t.zero = 1;
        t.dp = d;
        variant v;
        if (!fits(&t, NULL, limit, sharing, &v)) continue;
        char c[160];
        if (d == s->dp) snprintf(c, sizeof c, "%s--zero 1", prefix);
        else snprintf(c, sizeof c, "%s--zero 1 --dp %d", prefix, d);
        add_advice(adv, n, max, c, &v);
        return;
    }
}

static void try_pp(const zt_plan_spec *s, double limit, int sharing, const char *prefix,
                   zt_plan_advice *adv, int *n, int max) {
    stage_cache cache;
    cache_init(&cache, s);
    int named = strspn(s->partition, "0123456789:,") != strlen(s->partition);
    // every stage count up to 8, then steps of 1/4: each try plans a partition, so
    // trying every count of a deep model took minutes (issue 16); the advice stays within
    // 25% of the fewest stages that fit
    for (int p = s->pp + 1; p <= zt_unit_count(&s->shape); p += p < 8 ? 1 : p / 4) {
        if ((double)s->dp * p * s->tp > MAX_ADVICE_WORLD) break;
        zt_plan_spec t = *s;
        t.pp = p;
        variant v;
        char c[160];
        // the same partition method first (unit ranges fix pp: they cannot carry over)
        if (named && fits(&t, &cache, limit, sharing, &v)) {
            snprintf(c, sizeof c, "%s--pp %d", prefix, p);
            add_advice(adv, n, max, c, &v);
            break;
        }
        snprintf(t.partition, sizeof t.partition, "memory");
        if (strcmp(s->partition, "memory") != 0 && fits(&t, &cache, limit, sharing, &v)) {
            snprintf(c, sizeof c, "%s--pp %d --partition memory", prefix, p);
            add_advice(adv, n, max, c, &v);
            break;
        }
    }
    cache_free(&cache);
}

static void try_micro_batch(const zt_plan_spec *s, double limit, int sharing,
                            const char *prefix, zt_plan_advice *adv, int *n, int max) {
    // divisors of B, largest first: grad-accum grows by the same factor, so the global
    // batch stays the same
    for (int b = s->micro_batch - 1; b >= 1; b--) {
        if (s->micro_batch % b || (long long)s->grad_accum * (s->micro_batch / b) > INT_MAX)
            continue;
        zt_plan_spec t = *s;
        t.micro_batch = b;
        t.grad_accum = s->grad_accum * (s->micro_batch / b);
        variant v;
        if (!fits(&t, NULL, limit, sharing, &v)) continue;
        char c[160];
        snprintf(c, sizeof c, "%s--micro-batch %d --grad-accum %d", prefix, b, t.grad_accum);
        add_advice(adv, n, max, c, &v);
        return;
    }
}

static void try_singles(const zt_plan_spec *s, double limit, int sharing, zt_plan_advice *adv,
                        int *n, int max) {
    variant v;
    try_dp(s, limit, sharing, "", adv, n, max);
    if (!s->is_8bit) {
        zt_plan_spec t = *s;
        t.is_8bit = 1;
        if (fits(&t, NULL, limit, sharing, &v)) add_advice(adv, n, max, "--optim adamw8bit", &v);
    }
    try_pp(s, limit, sharing, "", adv, n, max);
    try_micro_batch(s, limit, sharing, "", adv, n, max);
    if (s->schedule == ZT_SCHED_GPIPE) {
        zt_plan_spec t = *s;
        t.schedule = ZT_SCHED_1F1B;
        if (fits(&t, NULL, limit, sharing, &v)) add_advice(adv, n, max, "--schedule 1f1b", &v);
    }
    // the loss's logits chunk, halved until it fits
    long long BT = (long long)s->micro_batch * s->seq;
    int N = BT < INT_MAX ? (int)BT : INT_MAX;
    int chunk = s->loss_chunk > 0 ? (s->loss_chunk < N ? s->loss_chunk : N)
                                  : zt_gpt2_auto_loss_chunk(s->shape.padded_vocab / s->tp, N);
    for (int c = chunk / 2; c >= 1; c /= 2) {
        zt_plan_spec t = *s;
        t.loss_chunk = c;
        if (!fits(&t, NULL, limit, sharing, &v)) continue;
        char txt[160];
        snprintf(txt, sizeof txt, "--loss-chunk %d", c);
        add_advice(adv, n, max, txt, &v);
        break;
    }
}

static int advise(const zt_plan_spec *s, double limit, int sharing, zt_plan_advice *adv,
                  int max);

int zt_plan_advise(const zt_plan_spec *s, double limit, int sharing, zt_plan_advice *adv,
                   int max) {
    advice_deadline = omp_get_wtime() + ADVICE_BUDGET_S;
    int n = advise(s, limit, sharing, adv, max);
    advice_deadline = 0;
    return n;
}

static int advise(const zt_plan_spec *s, double limit, int sharing, zt_plan_advice *adv,
                  int max) {
    int n = 0;
    try_singles(s, limit, sharing, adv, &n, max);
    if (n > 0) return n;
    // no single change fits: the 8-bit optimizer (and 1F1B) with one more change
    zt_plan_spec t = *s;
    char prefix[64] = "";
    if (!t.is_8bit) {
        t.is_8bit = 1;
        strcat(prefix, "--optim adamw8bit ");
    }
    if (t.schedule == ZT_SCHED_GPIPE) {
        t.schedule = ZT_SCHED_1F1B;
        strcat(prefix, "--schedule 1f1b ");
    }
    if (!prefix[0]) return 0;
    try_dp(&t, limit, sharing, prefix, adv, &n, max);
    try_pp(&t, limit, sharing, prefix, adv, &n, max);
    try_micro_batch(&t, limit, sharing, prefix, adv, &n, max);
    return n;
}

// "parameters 1.00 GiB, gradients 1.00 GiB, ..." of one rank into buf.
static void format_categories(const zt_plan_bytes *b, char *buf, size_t size) {
    static const char *const words[ZT_MEM_NCAT] = {"parameters",  "gradients", "optimizer",
                                                   "activations", "workspace", "comm",
                                                   "logits"};
    size_t off = 0;
    char x[32];
    buf[0] = 0;
    for (int k = 0; k < ZT_MEM_NCAT && off < size; k++)
        off += (size_t)snprintf(buf + off, size - off, "%s%s %s", k ? ", " : "", words[k],
                                zt_plan_format_bytes(b->bytes[k], x, sizeof x));
    if (b->comm_window > 0 && off < size)
        off += (size_t)snprintf(buf + off, size - off, ", MPI staging windows %s",
                                zt_plan_format_bytes(b->comm_window, x, sizeof x));
    if (b->end_transient > 0 && off < size)
        snprintf(buf + off, size - off, ", at the end of the run %s",
                 zt_plan_format_bytes(b->end_transient, x, sizeof x));
}

zt_status zt_plan_check_fits(const zt_plan_spec *s, double limit, int sharing,
                             const char *limit_what) {
    if (!(limit > 0)) return ZT_OK;
    int W = s->dp * s->pp * s->tp;
    if (sharing < 1) sharing = 1;
    if (sharing > W) sharing = W;
    variant v;
    ZT_TRY(plan_variant(s, NULL, sharing, &v));
    if (v.need <= limit) return ZT_OK;
    char msg[2048], cats[512], a[32], b[32], c[32];
    format_categories(&v.worst, cats, sizeof cats);
    size_t off;
    if (sharing == 1)
        off = (size_t)snprintf(msg, sizeof msg,
                               "this run needs %s on rank %d (stage %d: %s) but %s allows %s "
                               "per rank",
                               zt_plan_format_bytes(v.need, a, sizeof a), v.worst.rank,
                               v.worst.pp_rank, cats, limit_what,
                               zt_plan_format_bytes(limit, b, sizeof b));
    else
        off = (size_t)snprintf(msg, sizeof msg,
                               "the %d ranks on one machine (ranks %d-%d) need %s together, "
                               "rank %d %s (stage %d: %s), but %s is %s",
                               sharing, v.first_rank, v.first_rank + sharing - 1,
                               zt_plan_format_bytes(v.need, a, sizeof a), v.worst.rank,
                               zt_plan_format_bytes(v.worst.peak, c, sizeof c),
                               v.worst.pp_rank, cats, limit_what,
                               zt_plan_format_bytes(limit, b, sizeof b));
    zt_plan_advice adv[8];
    int n = zt_plan_advise(s, limit, sharing, adv, 8);
    if (n == 0) {
        snprintf(msg + off, sizeof msg - off,
                 ". No change the planner tries fits (more dp with --zero 1, --optim "
                 "adamw8bit, more --pp, a smaller --micro-batch, --loss-chunk): use a smaller "
                 "model, a shorter --seq, or machines with more memory");
        return zt_errorf("%s", msg);
    }
    off += (size_t)snprintf(msg + off, sizeof msg - off, ". Changes that fit (each planned):");
    for (int i = 0; i < n && off < sizeof msg; i++) {
        char ranks[48] = "";
        if (adv[i].world != W) snprintf(ranks, sizeof ranks, "%d ranks, ", adv[i].world);
        off += (size_t)snprintf(msg + off, sizeof msg - off, "%s %s (%sneeds %s %s)",
                                i ? ";" : "", adv[i].change, ranks,
                                zt_plan_format_bytes(adv[i].need, a, sizeof a),
                                sharing == 1 ? "per rank" : "per machine");
    }
    return zt_errorf("%s", msg);
}

// ---------------------------------------------------------------- the ZeRO formula

double zt_plan_zero_formula(int stage, double psi, double p, double g, double k, double nd) {
    switch (stage) {
    case 0: return (p + g + k) * psi;
    case 1: return (p + g) * psi + k * psi / nd;
    case 2: return p * psi + (g + k) * psi / nd;
    case 3: return (p + g + k) * psi / nd;
    default: ZT_ASSERTF(0, "ZeRO stage %d", stage);
    }
}

// ---------------------------------------------------------------- the report

// The published configuration the report quotes: the ZeRO paper's Figure 1, 7.5B
// parameters on 64 data-parallel ranks, mixed-precision Adam (K = 12): 120 GB baseline,
// 31.4 GB Pos, 16.6 GB Pos+g, 1.9 GB Pos+g+p (GB = 1e9 bytes).
#define PAPER_PSI 7.5e9
#define PAPER_ND 64.0
static const double k_paper_gb[4] = {120.0, 31.4, 16.6, 1.9};
static const char *const k_zero_names[4] = {"baseline", "Pos", "Pos+g", "Pos+g+p"};

// Whether two ranks' plans are alike (the same numbers; which rank they are aside).
static int alike(const zt_plan_bytes *a, const zt_plan_bytes *b) {
    if (a->pp_rank != b->pp_rank || a->n_slots != b->n_slots || a->numel != b->numel)
        return 0;
    for (int k = 0; k < ZT_MEM_NCAT; k++)
        if (a->bytes[k] != b->bytes[k]) return 0;
    return a->opt_master == b->opt_master && a->opt_m == b->opt_m && a->opt_v == b->opt_v &&
           a->opt_absmax == b->opt_absmax && a->opt_table == b->opt_table &&
           a->comm_backend == b->comm_backend && a->comm_window == b->comm_window &&
           a->end_transient == b->end_transient;
}

// "0-3,5,7-9" of the set bits of `on` (n entries), truncated with "..." to fit.
static void format_set(const char *on, int n, char *buf, size_t size) {
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        if (!on[i]) continue;
        int j = i;
        while (j + 1 < n && on[j + 1]) j++;
        char item[32];
        if (j > i) snprintf(item, sizeof item, "%s%d-%d", off ? "," : "", i, j);
        else snprintf(item, sizeof item, "%s%d", off ? "," : "", i);
        if (off + strlen(item) + 4 >= size) {
            snprintf(buf + off, size - off, ",...");
            return;
        }
        off += (size_t)snprintf(buf + off, size - off, "%s", item);
        i = j;
    }
}

typedef struct {
    zt_plan_bytes max;   // every field the largest over the members
    zt_plan_bytes first; // the first member
    int count;
    double spread;       // largest difference in peak between members
    char label[160];
} group;

// Groups the ranks: alike ranks share a group; with more than 16 groups (8-bit shards
// that differ by a few blocks on many dp ranks), one group per stage and tp rank holding
// the largest value of each field. Returns the count; *out is the caller's to free.
static int make_groups(const zt_plan_spec *s, const zt_plan_bytes *all, group **out) {
    int W = s->dp * s->pp * s->tp, cap = 16, n = 0;
    int *of = malloc((size_t)W * sizeof *of);
    group *g = calloc((size_t)(cap > s->pp * s->tp ? cap : s->pp * s->tp), sizeof *g);
    ZT_ASSERT(of && g);
    for (int r = 0; r < W && n <= cap; r++) {
        int k = 0;
        while (k < n && !alike(&g[k].first, &all[r])) k++;
        if (k == n && n++ < cap) g[k].first = all[r];
        of[r] = k;
    }
    int by_stage = n > cap;
    if (by_stage) {
        n = s->pp * s->tp;
        for (int r = 0; r < W; r++) of[r] = all[r].pp_rank * s->tp + all[r].tp_rank;
        for (int k = 0; k < n; k++) g[k].count = 0;
    }
    for (int r = 0; r < W; r++) {
        group *x = &g[of[r]];
        const zt_plan_bytes *b = &all[r];
        if (x->count++ == 0) {
            x->first = x->max = *b;
            continue;
        }
        zt_plan_bytes *m = &x->max;
        for (int k = 0; k < ZT_MEM_NCAT; k++) m->bytes[k] = fmax(m->bytes[k], b->bytes[k]);
        m->opt_master = fmax(m->opt_master, b->opt_master);
        m->opt_m = fmax(m->opt_m, b->opt_m);
        m->opt_v = fmax(m->opt_v, b->opt_v);
        m->opt_absmax = fmax(m->opt_absmax, b->opt_absmax);
        m->opt_table = fmax(m->opt_table, b->opt_table);
        m->comm_backend = fmax(m->comm_backend, b->comm_backend);
        m->comm_window = fmax(m->comm_window, b->comm_window);
        m->end_transient = fmax(m->end_transient, b->end_transient);
        m->tracked = fmax(m->tracked, b->tracked);
        x->spread = fmax(x->spread, fabs(b->peak - x->first.peak));
        m->peak = fmax(m->peak, b->peak);
    }
    // labels: "stage 0, dp 0-3, tp 0-1" when the members are such a product, else ranks
    char *dps = malloc((size_t)s->dp), *tps = malloc((size_t)s->tp), *rs = malloc((size_t)W);
    ZT_ASSERT(dps && tps && rs);
    for (int k = 0; k < n; k++) {
        memset(dps, 0, (size_t)s->dp);
        memset(tps, 0, (size_t)s->tp);
        memset(rs, 0, (size_t)W);
        int nd = 0, nt = 0;
        for (int r = 0; r < W; r++) {
            if (of[r] != k) continue;
            rs[r] = 1;
            nd += !dps[all[r].dp_rank];
            nt += !tps[all[r].tp_rank];
            dps[all[r].dp_rank] = tps[all[r].tp_rank] = 1;
        }
        char a[48], b[48];
        if (nd * nt == g[k].count) {
            format_set(dps, s->dp, a, sizeof a);
            format_set(tps, s->tp, b, sizeof b);
            snprintf(g[k].label, sizeof g[k].label, "stage %d, dp %s%s%s", g[k].first.pp_rank,
                     a, s->tp > 1 ? ", tp " : "", s->tp > 1 ? b : "");
        } else {
            format_set(rs, W, a, sizeof a);
            snprintf(g[k].label, sizeof g[k].label, "stage %d, ranks %s", g[k].first.pp_rank, a);
        }
        if (by_stage) {
            size_t len = strlen(g[k].label);
            snprintf(g[k].label + len, sizeof g[k].label - len, " (max)");
        }
    }
    free(dps);
    free(tps);
    free(rs);
    free(of);
    *out = g;
    return n;
}

// Nominal optimizer bytes per element of the shard: fp32 m and v (8), or 8-bit codes
// plus two fp32 absmax per block (2 + 8/block); plus the fp32 master copy for 16-bit
// parameters.
static double nominal_k(const zt_plan_spec *s) {
    double k = s->is_8bit ? 2.0 + 8.0 / s->opt8.block_size : 8.0;
    return k + (s->param_bytes < 4 ? 4.0 : 0.0);
}

// "124.44M", "174.60B" parameters.
static const char *format_count(double n, char *buf, size_t size) {
    if (n >= 1e9) snprintf(buf, size, "%.2fB", n / 1e9);
    else snprintf(buf, size, "%.2fM", n / 1e6);
    return buf;
}

static void text_report(FILE *f, const zt_plan_spec *s, const zt_partition *p,
                        const zt_plan_bytes *all, double limit, const char *limit_what) {
    int W = s->dp * s->pp * s->tp;
    char part[1024], x[32], y[32];
    zt_partition_format(p, &s->shape, part, sizeof part);
    const zt_model_shape *m = &s->shape;
    double psi = (double)zt_model_param_count(m);
    char cnt[32];
    fprintf(f, "zerotrain memory: GPT-2 %d layers, %d heads, %d channels, vocab %d (padded %d), "
               "n_ctx %d: %s parameters\n",
            m->n_layer, m->n_head, m->n_embd, m->vocab, m->padded_vocab, m->n_ctx,
            format_count(psi, cnt, sizeof cnt));
    fprintf(f, "layout: %d ranks = dp %d x pp %d x tp %d; --zero %d, %s, %s parameters; "
               "micro-batch %d x %d tokens, grad-accum %d, %s\n",
            W, s->dp, s->pp, s->tp, s->zero, s->is_8bit ? "adamw8bit" : "adamw",
            s->param_bytes == 4 ? "fp32" : "bf16 (fp32 master)", s->micro_batch, s->seq,
            s->grad_accum, zt_schedule_kind_name(s->schedule));
    fprintf(f, "partition %s: %s\n", s->partition, part);
    fprintf(f, "%d OpenMP threads per rank (--threads, else OMP_NUM_THREADS: the attention "
               "workspace grows with them)\n",
            s->threads);
    group *g = NULL;
    int n = make_groups(s, all, &g);
    double top = 0.0;
    for (int r = 0; r < W; r++) top = fmax(top, all[r].peak);
    double unit = top >= 10.0 * 1073741824.0 ? 1073741824.0 : 1048576.0;
    const char *uname = unit > 1048576.0 ? "GiB" : "MiB";
    fprintf(f, "\npredicted bytes per rank in %s, allocated before step 1 (ranks alike share "
               "a row):\n",
            uname);
    fprintf(f, "%-30s %5s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "ranks", "slots", "params",
            "grads", "optimizer", "activ.", "workspace", "comm", "logits", "windows",
            "end", "peak");
    for (int k = 0; k < n; k++) {
        const zt_plan_bytes *b = &g[k].max;
        fprintf(f, "%-30s %5d", g[k].label, b->n_slots);
        for (int c = 0; c < ZT_MEM_NCAT; c++) fprintf(f, " %9.1f", b->bytes[c] / unit);
        fprintf(f, " %9.1f %9.1f %9.1f\n", b->comm_window / unit, b->end_transient / unit,
                b->peak / unit);
    }
    fprintf(f, "(windows: the MPI backend's shared-memory staging windows, outside the "
               "allocator's count; end: buffers the run mallocs at its end%s)\n",
            s->save ? ", the --save export included" : "");
    fprintf(f, "\noptimizer state in %s:\n%-30s %9s %9s %9s %9s %9s\n", uname, "ranks",
            "master", "m", "v", "absmax", "table");
    for (int k = 0; k < n; k++) {
        const zt_plan_bytes *b = &g[k].max;
        fprintf(f, "%-30s %9.1f %9.1f %9.1f %9.1f %9.3f\n", g[k].label, b->opt_master / unit,
                b->opt_m / unit, b->opt_v / unit, b->opt_absmax / unit, b->opt_table / unit);
    }
    int worst = 0;
    double sum = 0.0;
    for (int r = 0; r < W; r++) {
        sum += all[r].peak;
        if (all[r].peak > all[worst].peak) worst = r;
    }
    const zt_plan_bytes *w = &all[worst];
    fprintf(f, "\nlargest rank: %d (stage %d, dp %d, tp %d) %s; all %d ranks together %s\n",
            worst, w->pp_rank, w->dp_rank, w->tp_rank,
            zt_plan_format_bytes(w->peak, x, sizeof x), W, zt_plan_format_bytes(sum, y, sizeof y));
    if (s->ranks_per_node > 0 && s->ranks_per_node < W) {
        int at = 0;
        double need = zt_plan_max_need(s, all, s->ranks_per_node, &at);
        fprintf(f, "per machine of %d ranks: the largest (ranks %d-%d) needs %s\n",
                s->ranks_per_node, at, at + s->ranks_per_node - 1,
                zt_plan_format_bytes(need, x, sizeof x));
    }
    // the ZeRO paper's model-state formula
    double nd = s->zero ? s->dp : 1.0, pb = s->param_bytes, K = nominal_k(s);
    double state = w->bytes[ZT_MEM_PARAMS] + w->bytes[ZT_MEM_GRADS] + w->bytes[ZT_MEM_OPTIMIZER];
    fprintf(f, "\nmodel state against the ZeRO paper's formula (Rajbhandari et al. 2019: psi "
               "parameters, p and g bytes per parameter and gradient, K optimizer bytes per "
               "parameter, Nd = dp ranks sharing the optimizer):\n");
    fprintf(f, "  this run, largest rank: psi = %zu elements (its padded flat buffer), p = g = "
               "%.0f, K = %g, Nd = %.0f: (p+g)psi + K psi/Nd = %s; planned params + grads + "
               "optimizer = %s\n",
            w->numel, pb, K, nd,
            zt_plan_format_bytes(zt_plan_zero_formula(1, (double)w->numel, pb, pb, K, nd), x,
                                 sizeof x),
            zt_plan_format_bytes(state, y, sizeof y));
    fprintf(f, "  the paper's mixed-precision Adam (p = g = 2, K = 12) for this model whole "
               "(psi = %s) on Nd = %d:",
            format_count(psi, cnt, sizeof cnt), s->dp);
    for (int z = 0; z < 4; z++)
        fprintf(f, " %s %.3g GB%s", k_zero_names[z],
                zt_plan_zero_formula(z, psi, 2, 2, 12, s->dp) / 1e9, z < 3 ? "," : "\n");
    fprintf(f, "  published (the paper's Figure 1): psi = 7.5B on Nd = 64:");
    for (int z = 0; z < 4; z++)
        fprintf(f, " %s %.1f GB (formula %.1f)%s", k_zero_names[z], k_paper_gb[z],
                zt_plan_zero_formula(z, PAPER_PSI, 2, 2, 12, PAPER_ND) / 1e9, z < 3 ? "," : "\n");
    double avail = zt_plan_available_bytes();
    if (avail > 0)
        fprintf(f, "this machine has %s available\n", zt_plan_format_bytes(avail, x, sizeof x));
    if (limit > 0) {
        if (w->peak <= limit) {
            fprintf(f, "%s: every rank fits (the largest needs %s of %s)\n", limit_what,
                    zt_plan_format_bytes(w->peak, x, sizeof x),
                    zt_plan_format_bytes(limit, y, sizeof y));
        } else {
            int over = 0;
            for (int r = 0; r < W; r++) over += all[r].peak > limit;
            fprintf(f, "%s: %d of %d ranks do not fit (the largest needs %s of %s)\n",
                    limit_what, over, W, zt_plan_format_bytes(w->peak, x, sizeof x),
                    zt_plan_format_bytes(limit, y, sizeof y));
            zt_plan_advice adv[8];
            int na = zt_plan_advise(s, limit, 1, adv, 8);
            if (na == 0) fprintf(f, "  no change the planner tries fits\n");
            for (int i = 0; i < na; i++)
                fprintf(f, "  fits with %s: %d ranks, the largest needs %s\n", adv[i].change,
                        adv[i].world, zt_plan_format_bytes(adv[i].need, x, sizeof x));
        }
    }
    free(g);
}

static cJSON *bytes_json(const zt_plan_bytes *b) {
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < ZT_MEM_NCAT; k++)
        cJSON_AddNumberToObject(o, zt_mem_category_name((zt_mem_category)k), b->bytes[k]);
    return o;
}

static void json_report(FILE *f, const zt_plan_spec *s, const zt_partition *p,
                        const zt_plan_bytes *all, double limit) {
    int W = s->dp * s->pp * s->tp;
    const zt_model_shape *m = &s->shape;
    cJSON *root = cJSON_CreateObject();
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddNumberToObject(model, "n_layer", m->n_layer);
    cJSON_AddNumberToObject(model, "n_head", m->n_head);
    cJSON_AddNumberToObject(model, "n_embd", m->n_embd);
    cJSON_AddNumberToObject(model, "vocab", m->vocab);
    cJSON_AddNumberToObject(model, "padded_vocab", m->padded_vocab);
    cJSON_AddNumberToObject(model, "n_ctx", m->n_ctx);
    cJSON_AddNumberToObject(model, "parameters", (double)zt_model_param_count(m));
    cJSON *lay = cJSON_AddObjectToObject(root, "layout");
    cJSON_AddNumberToObject(lay, "world", W);
    cJSON_AddNumberToObject(lay, "dp", s->dp);
    cJSON_AddNumberToObject(lay, "pp", s->pp);
    cJSON_AddNumberToObject(lay, "tp", s->tp);
    cJSON_AddNumberToObject(lay, "zero", s->zero);
    cJSON_AddStringToObject(lay, "optim", s->is_8bit ? "adamw8bit" : "adamw");
    cJSON_AddStringToObject(lay, "param_dtype", s->param_bytes == 4 ? "fp32" : "bf16");
    cJSON_AddNumberToObject(lay, "micro_batch", s->micro_batch);
    cJSON_AddNumberToObject(lay, "seq", s->seq);
    cJSON_AddNumberToObject(lay, "grad_accum", s->grad_accum);
    cJSON_AddNumberToObject(lay, "loss_chunk", s->loss_chunk);
    cJSON_AddStringToObject(lay, "schedule", zt_schedule_kind_name(s->schedule));
    cJSON_AddStringToObject(lay, "partition", s->partition);
    cJSON_AddNumberToObject(lay, "ranks_per_node", s->ranks_per_node);
    cJSON_AddNumberToObject(lay, "stage_kib", s->stage_kib);
    cJSON_AddNumberToObject(lay, "threads", s->threads);
    cJSON *stages = cJSON_AddArrayToObject(root, "stages");
    for (int k = 0; k < s->pp; k++) {
        cJSON *st = cJSON_CreateObject();
        cJSON_AddNumberToObject(st, "stage", k);
        cJSON_AddNumberToObject(st, "unit_first", p->first[k]);
        cJSON_AddNumberToObject(st, "unit_last", p->first[k + 1]);
        cJSON_AddNumberToObject(st, "slots", zt_plan_stage_slots(s, k));
        cJSON_AddItemToArray(stages, st);
    }
    cJSON *ranks = cJSON_AddArrayToObject(root, "ranks");
    double top = 0.0;
    int worst = 0;
    for (int r = 0; r < W; r++) {
        const zt_plan_bytes *b = &all[r];
        if (b->peak > top) top = b->peak, worst = r;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "rank", b->rank);
        cJSON_AddNumberToObject(o, "dp_rank", b->dp_rank);
        cJSON_AddNumberToObject(o, "pp_rank", b->pp_rank);
        cJSON_AddNumberToObject(o, "tp_rank", b->tp_rank);
        cJSON_AddNumberToObject(o, "slots", b->n_slots);
        cJSON_AddNumberToObject(o, "numel", (double)b->numel);
        cJSON_AddNumberToObject(o, "shard_lo", (double)b->shard_lo);
        cJSON_AddNumberToObject(o, "shard_hi", (double)b->shard_hi);
        cJSON_AddItemToObject(o, "bytes", bytes_json(b));
        cJSON *opt = cJSON_AddObjectToObject(o, "optimizer_split");
        cJSON_AddNumberToObject(opt, "master", b->opt_master);
        cJSON_AddNumberToObject(opt, "m", b->opt_m);
        cJSON_AddNumberToObject(opt, "v", b->opt_v);
        cJSON_AddNumberToObject(opt, "absmax", b->opt_absmax);
        cJSON_AddNumberToObject(opt, "table", b->opt_table);
        cJSON_AddNumberToObject(o, "comm_backend", b->comm_backend);
        cJSON_AddNumberToObject(o, "comm_window", b->comm_window);
        cJSON_AddNumberToObject(o, "end_transient", b->end_transient);
        cJSON_AddNumberToObject(o, "tracked", b->tracked);
        cJSON_AddNumberToObject(o, "peak", b->peak);
        cJSON_AddItemToArray(ranks, o);
    }
    cJSON_AddNumberToObject(root, "max_peak", top);
    cJSON_AddNumberToObject(root, "max_peak_rank", worst);
    // the ZeRO paper's formula: this run's largest rank, this model whole, the paper's
    const zt_plan_bytes *w = &all[worst];
    double nd = s->zero ? s->dp : 1.0, pb = s->param_bytes, K = nominal_k(s);
    double psi = (double)zt_model_param_count(m);
    cJSON *zf = cJSON_AddObjectToObject(root, "zero_formula");
    cJSON *run = cJSON_AddObjectToObject(zf, "this_run");
    cJSON_AddNumberToObject(run, "psi", (double)w->numel);
    cJSON_AddNumberToObject(run, "p", pb);
    cJSON_AddNumberToObject(run, "g", pb);
    cJSON_AddNumberToObject(run, "K", K);
    cJSON_AddNumberToObject(run, "Nd", nd);
    cJSON_AddNumberToObject(run, "formula",
                            zt_plan_zero_formula(1, (double)w->numel, pb, pb, K, nd));
    cJSON_AddNumberToObject(run, "planned", w->bytes[ZT_MEM_PARAMS] + w->bytes[ZT_MEM_GRADS] +
                                                w->bytes[ZT_MEM_OPTIMIZER]);
    cJSON *paper = cJSON_AddObjectToObject(zf, "mixed_precision_adam_this_model");
    cJSON_AddNumberToObject(paper, "psi", psi);
    cJSON_AddNumberToObject(paper, "Nd", s->dp);
    for (int z = 0; z < 4; z++)
        cJSON_AddNumberToObject(paper, k_zero_names[z],
                                zt_plan_zero_formula(z, psi, 2, 2, 12, s->dp));
    cJSON *pub = cJSON_AddObjectToObject(zf, "published_7.5B_Nd64");
    for (int z = 0; z < 4; z++) {
        cJSON *e = cJSON_AddObjectToObject(pub, k_zero_names[z]);
        cJSON_AddNumberToObject(e, "paper_GB", k_paper_gb[z]);
        cJSON_AddNumberToObject(e, "formula_GB",
                                zt_plan_zero_formula(z, PAPER_PSI, 2, 2, 12, PAPER_ND) / 1e9);
    }
    if (limit > 0) {
        cJSON_AddNumberToObject(root, "limit", limit);
        cJSON_AddBoolToObject(root, "fits", top <= limit);
        cJSON *adv = cJSON_AddArrayToObject(root, "advice");
        if (top > limit) {
            zt_plan_advice a[8];
            int na = zt_plan_advise(s, limit, 1, a, 8);
            for (int i = 0; i < na; i++) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "change", a[i].change);
                cJSON_AddNumberToObject(e, "world", a[i].world);
                cJSON_AddNumberToObject(e, "need", a[i].need);
                cJSON_AddItemToArray(adv, e);
            }
        }
    }
    char *text = cJSON_PrintUnformatted(root);
    ZT_ASSERT(text);
    fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(root);
}

zt_status zt_plan_report(FILE *f, const zt_plan_spec *s, int json, double limit,
                         const char *limit_what) {
    zt_partition p = {0};
    ZT_TRY(zt_plan_partition(s, &p));
    int W = s->dp * s->pp * s->tp;
    zt_plan_bytes *all = malloc((size_t)W * sizeof *all);
    ZT_ASSERT(all);
    zt_status st = zt_plan_all(s, &p, all);
    if (st == ZT_OK) {
        if (json) json_report(f, s, &p, all, limit);
        else text_report(f, s, &p, all, limit, limit_what);
    }
    free(all);
    zt_partition_free(&p);
    return st;
}
