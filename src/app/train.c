// The training loop (docs/design.md §2): each dp rank reads its part of the global batch;
// the pipeline schedule runs forward/backward over its micro-batches on this rank's
// stage, moving activations and their gradients between neighbour stages; the tied
// embedding's two gradient copies are summed; gradients are reduced over dp
// (all-reduce for --zero 0, reduce-scatter for --zero 1), clipped by the global norm,
// AdamW updates this rank's range, and --zero 1 all-gathers the parameters.
#include "train.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adamw.h"
#include "adamw8bit.h"
#include "blas_core.h"
#include "ckpt.h"
#include "backend_cuda.h"
#include "backend_profile.h"
#include "comm_profile.h"
#include "comm.h"
#include "data.h"
#include "gpt2.h"
#include "grad_norm.h"
#include "grid.h"
#include "hf_export.h"
#include "hf_import.h"
#include "host_memory.h"
#include "llmc_checkpoint.h"
#include "memory.h"
#include "partition.h"
#include "planner.h"
#include "rng.h"
#include "schedule.h"
#include "train_sample.h"

float zt_lr_at(const zt_config *cfg, int step) {
    if (step < cfg->warmup) return cfg->lr * (float)(step + 1) / (float)cfg->warmup;
    if (strcmp(cfg->lr_schedule, "constant") == 0) return cfg->lr;
    int span = cfg->steps - cfg->warmup;
    float ratio = span > 1 ? (float)(step - cfg->warmup) / (float)(span - 1) : 1.0f;
    float coeff = 0.5f * (1.0f + cosf(3.14159265358979f * ratio));
    float lr_min = cfg->lr * cfg->lr_final_frac;
    return lr_min + coeff * (cfg->lr - lr_min);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// The embedded default data sits next to the binary (build/data/default_*.bin).
static void default_data_path(char *out, size_t size, const char *argv0, const char *file) {
    char exe[ZT_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = 0;
    else snprintf(exe, sizeof exe, "%s", argv0);
    snprintf(out, size, "%s/data/%s", dirname(exe), file);
}

typedef struct {
    const zt_config *cfg;
    const zt_backend *be;      // where the model, its buffers and the optimizer live
    zt_grid grid;
    zt_model_shape shape;
    zt_partition part;
    int unit_first, unit_last; // this rank's stage
    zt_schedule sched;
    zt_gpt2 model;
    zt_plan_spec plan;         // the run as the planner sees it: layout, schedule, optimizer
    zt_adamw opt;              // fp32 state (--optim adamw)
    zt_adamw8bit opt8;         // 8-bit state (--optim adamw8bit)
    zt_dataset train, val;
    int has_val;
    size_t shard_lo, shard_hi; // this rank's optimizer range of the flat buffer
    int n_slots;               // micro-batches this stage holds at once
    // device memory of `be`:
    int32_t *inputs, *targets; // (n_slots, B*T) tokens of each held micro-batch
    float *recv_in;            // (n_slots, N*C) activations received from the stage before
    float *recv_dout;          // (n_slots, N*C) their gradients received from the stage after
    float *dinput;             // (N*C) gradient of this stage's input, to send back
    double compute_s, sched_s; // time in forward/backward, and in the whole schedule, last step
    int step0;                 // completed steps at start (--resume), and
    uint64_t sample0;          // training samples consumed by then
    zt_train_sampler sampler;  // --sample-every
    FILE *log;
    int log_errno;             // rank 0: the errno of a failed log write (0 = none)
    char last_mem[256];        // rank 0: the memory figures last printed
    // --profile: `be` and the grid's tensor paths are timing decorators over the real ones
    zt_profile prof;           // phase totals since the start
    zt_profile prof_steps;     // summed over the timed steps (all but the run's first)
    double prof_steps_s;       // their wall time
    int prof_n;                // their number
    zt_backend prof_be;
    zt_backend_profile_state prof_be_st;
    zt_comm prof_comm[4];
    zt_comm_profile_state prof_comm_st[4];
} trainer;

// --profile: every op of the backend and of the tensor paths goes through a timer from
// here on (before the model and the optimizer take the backend).
static void start_profile(trainer *t) {
    zt_backend_profile_init(&t->prof_be, &t->prof_be_st, t->be, &t->prof);
    t->be = &t->prof_be;
    zt_grid *g = &t->grid;
    const zt_comm **paths[4] = {&g->tp_data, &g->dp_data, &g->pp_data, &g->embed_data};
    for (int i = 0; i < 4; i++) {
        zt_comm_profile_init(&t->prof_comm[i], &t->prof_comm_st[i], *paths[i], &t->prof);
        *paths[i] = &t->prof_comm[i];
    }
}

// rank 0: notes a failed write of the log (disk full, /dev/full); the next step's world
// all-reduce tells every rank, so the run stops instead of exiting 0 with a truncated log
static void check_log_write(trainer *t) {
    if (t->log && !t->log_errno && (fflush(t->log) != 0 || ferror(t->log)))
        t->log_errno = errno ? errno : EIO;
}

static int is_first_stage(const trainer *t) { return t->grid.pp_rank == 0; }
static int is_last_stage(const trainer *t) { return t->grid.pp_rank == t->grid.pp - 1; }
static size_t act_count(const trainer *t) {
    return (size_t)t->cfg->micro_batch * t->cfg->seq * t->shape.n_embd;
}

// Reads micro-batch `k` of step `step` for this dp rank into slot `slot`: sample indices
// are global (step * G + (dp_rank * grad_accum + k) * B + b), so every layout sees the
// same batch. Every stage reads (it is cheap); the first uses the inputs, the last the
// targets.
static void read_batch(trainer *t, zt_dataset *ds, uint64_t step, int k, int accum, int slot) {
    const zt_config *c = t->cfg;
    size_t BT = (size_t)c->micro_batch * c->seq, bytes = BT * sizeof(int32_t);
    uint64_t G = (uint64_t)c->micro_batch * accum * t->grid.dp;
    uint64_t base = ds == &t->train ? t->sample0 + (step - (uint64_t)t->step0) * G : step * G;
    uint64_t first = base + ((uint64_t)t->grid.dp_rank * accum + k) * c->micro_batch;
    int32_t *in = zt_be_map(t->be, t->inputs + slot * BT, bytes, 0);
    int32_t *tg = zt_be_map(t->be, t->targets + slot * BT, bytes, 0);
    for (int b = 0; b < c->micro_batch; b++)
        zt_dataset_sample(ds, first + b, in + (size_t)b * c->seq, tg + (size_t)b * c->seq);
    zt_be_unmap(t->be, t->inputs + slot * BT, in, bytes, 1);
    zt_be_unmap(t->be, t->targets + slot * BT, tg, bytes, 1);
}

// Runs this stage's schedule for one step (forward and backward of every micro-batch,
// gradients added into the flat grad buffer). Returns this stage's loss sum (non-zero
// on the last stage only).
static double run_schedule(trainer *t, uint64_t step, float loss_scale) {
    const zt_config *c = t->cfg;
    const zt_comm *pp = t->grid.pp_data;
    zt_gpt2 *m = &t->model;
    int prev = t->grid.pp_rank - 1, next = t->grid.pp_rank + 1;
    size_t NC = act_count(t), BT = (size_t)c->micro_batch * c->seq;
    double loss = 0.0, start = now_s();
    t->compute_s = 0.0;
    for (int i = 0; i < t->sched.n_actions; i++) {
        double t0 = now_s();
        const zt_sched_action *a = &t->sched.actions[i];
        int slot = a->micro % t->n_slots, rslot = a->recv_micro % t->n_slots;
        if (a->recv_micro < 0) rslot = 0;
        switch (a->op) {
        case ZT_SCHED_OP_RECV_FWD:
            zt_comm_recv(pp, t->recv_in + slot * NC, NC, ZT_F32, prev, 0, NULL);
            break;
        case ZT_SCHED_OP_FWD:
            zt_gpt2_use_slot(m, slot);
            read_batch(t, &t->train, step, a->micro, c->grad_accum, slot);
            loss += zt_gpt2_forward(m, t->inputs + slot * BT, t->recv_in + slot * NC,
                                    t->targets + slot * BT, 1, loss_scale);
            break;
        case ZT_SCHED_OP_SEND_FWD:
            zt_gpt2_use_slot(m, slot);
            zt_comm_send(pp, zt_gpt2_output(m), NC, ZT_F32, next, 0, NULL);
            break;
        case ZT_SCHED_OP_RECV_BWD:
            zt_comm_recv(pp, t->recv_dout + slot * NC, NC, ZT_F32, next, 0, NULL);
            break;
        case ZT_SCHED_OP_BWD:
            zt_gpt2_use_slot(m, slot);
            zt_gpt2_backward(m, t->inputs + slot * BT, t->recv_dout + slot * NC, t->dinput);
            break;
        case ZT_SCHED_OP_SEND_BWD:
            zt_comm_send(pp, t->dinput, NC, ZT_F32, prev, 0, NULL);
            break;
        case ZT_SCHED_OP_SEND_FWD_RECV_BWD:
            zt_gpt2_use_slot(m, slot);
            zt_comm_send_recv(pp, zt_gpt2_output(m), NC, next, t->recv_dout + rslot * NC, NC, next,
                              ZT_F32, 0, NULL);
            break;
        case ZT_SCHED_OP_SEND_BWD_RECV_FWD:
            zt_comm_send_recv(pp, t->dinput, NC, prev, t->recv_in + rslot * NC, NC, prev, ZT_F32,
                              0, NULL);
            break;
        default: ZT_ASSERTF(0, "unknown schedule op %d", (int)a->op);
        }
        if (a->op == ZT_SCHED_OP_FWD || a->op == ZT_SCHED_OP_BWD) t->compute_s += now_s() - t0;
    }
    t->sched_s = now_s() - start;
    return loss;
}

// Mean validation loss over the first val_batches global batches of the validation
// file (the same samples whatever the layout), through the pipeline stage by stage.
static double evaluate(trainer *t) {
    const zt_config *c = t->cfg;
    const zt_comm *pp = t->grid.pp_data;
    zt_gpt2 *m = &t->model;
    size_t NC = act_count(t);
    double sum = 0.0;
    zt_gpt2_use_slot(m, 0);
    for (int vb = 0; vb < c->val_batches; vb++)
        for (int k = 0; k < c->grad_accum; k++) {
            read_batch(t, &t->val, (uint64_t)vb, k, c->grad_accum, 0);
            if (!is_first_stage(t))
                zt_comm_recv(pp, t->recv_in, NC, ZT_F32, t->grid.pp_rank - 1, 0, NULL);
            double part = zt_gpt2_forward(m, t->inputs, t->recv_in, t->targets, 0, 0.0f);
            if (t->grid.tp_rank == 0) sum += part; // every tp rank has the same losses
            if (!is_last_stage(t))
                zt_comm_send(pp, zt_gpt2_output(m), NC, ZT_F32, t->grid.pp_rank + 1, 0, NULL);
        }
    double total;
    zt_comm_all_reduce(&t->grid.world_comm, &sum, &total, 1, ZT_F64, ZT_REDUCE_SUM, NULL);
    return total / ((double)c->val_batches * c->grad_accum * c->micro_batch * c->seq * t->grid.dp);
}

// Refuses, before any rank allocates, a run predicted not to fit: per rank against
// --mem-limit, else the ranks of this machine together against its available memory.
static zt_status check_memory(const trainer *t) {
    const zt_config *c = t->cfg;
    double limit = zt_config_mem_limit(c);
    if (limit > 0) {
        char what[64];
        snprintf(what, sizeof what, "--mem-limit %s", c->mem_limit);
        return zt_plan_check_fits(&t->plan, limit, 1, what);
    }
    // ulimit -v bounds each rank (its address space holds more than the plan: a lower
    // bound, so this refuses only what cannot fit)
    ZT_TRY(zt_plan_check_fits(&t->plan, zt_host_rank_limit_bytes(), 1,
                              "ulimit -v (the memory limit of each rank's address space)"));
    return zt_plan_check_fits(&t->plan, zt_host_available_bytes(), t->plan.ranks_per_node,
                              "this machine's available memory (MemAvailable and the memory "
                              "cgroup's limit)");
}

// Before anything is allocated or loaded (rank 0): a resume with nothing left to train, and
// a --ckpt-dir holding checkpoints newer than this run's start (zt_ckpt_check_dir).
static zt_status check_start(const zt_config *c) {
    int start = 0;
    if (c->resume[0]) {
        ZT_TRY(zt_ckpt_peek(c->resume, NULL, &start));
        if (start >= c->steps)
            return zt_errorf("the checkpoint is at step %d and --steps %d is not beyond it: "
                             "nothing to train; raise --steps to continue (zerotrain export "
                             "turns a checkpoint into a model directory)", start, c->steps);
    }
    return c->ckpt_dir[0] ? zt_ckpt_check_dir(c->ckpt_dir, start) : ZT_OK;
}

static zt_status setup(trainer *t, const char *argv0) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    t->shape = zt_config_shape(c);
    char path[ZT_PATH_MAX];
    const char *train_path = c->data, *val_path = c->val_data;
    char def_val[ZT_PATH_MAX];
    if (!train_path[0]) {
        default_data_path(path, sizeof path, argv0, "default_train.bin");
        default_data_path(def_val, sizeof def_val, argv0, "default_val.bin");
        train_path = path;
        if (!val_path[0]) val_path = def_val;
    }
    ZT_TRY(zt_dataset_open(&t->train, train_path, c->seq, t->shape.vocab, c->shuffle, c->seed));
    uint64_t batch = (uint64_t)c->grad_accum * c->micro_batch * g->dp;
    if (t->train.n_samples < batch && g->rank == 0)
        fprintf(stderr, "zerotrain: warning: one step reads %llu sequences of %d tokens but %s "
                "holds %llu, so every step repeats them; give more data, or a smaller "
                "--micro-batch, --grad-accum or --seq\n", (unsigned long long)batch, c->seq,
                train_path, (unsigned long long)t->train.n_samples);
    if (val_path[0]) {
        ZT_TRY(zt_dataset_open(&t->val, val_path, c->seq, t->shape.vocab, 0, c->seed));
        t->has_val = c->val_every > 0;
        // evaluate() reads val_batches global batches; beyond the file it wraps around
        uint64_t want = (uint64_t)c->val_batches * c->grad_accum * c->micro_batch * g->dp;
        uint64_t fit = t->val.n_samples / ((uint64_t)c->grad_accum * c->micro_batch * g->dp);
        char fix[96] = "a smaller --micro-batch or --grad-accum";
        if (fit > 0) snprintf(fix, sizeof fix, "--val-batches %llu or less", (unsigned long long)fit);
        if (t->has_val && want > t->val.n_samples && g->rank == 0)
            fprintf(stderr, "zerotrain: warning: validation reads %llu sequences of %d tokens "
                    "but %s holds %llu, so some are counted more than once; use %s\n",
                    (unsigned long long)want, c->seq, val_path,
                    (unsigned long long)t->val.n_samples, fix);
    }
    ZT_TRY(zt_plan_partition(&t->plan, &t->part));
    t->unit_first = t->part.first[g->pp_rank];
    t->unit_last = t->part.first[g->pp_rank + 1];
    ZT_TRY(zt_schedule_build(&t->sched, t->plan.schedule, g->pp, g->pp_rank, c->grad_accum));
    t->n_slots = zt_schedule_peak_in_flight(&t->sched);
    ZT_ASSERT(t->n_slots == zt_plan_stage_slots(&t->plan, g->pp_rank));
    size_t pad = (size_t)g->dp * ZT_ALIGN_ELEMS;
    ZT_TRY(zt_gpt2_init(&t->model, t->be, &t->shape, t->unit_first, t->unit_last, g->tp,
                        g->tp_rank, ZT_ALIGN_ELEMS, pad, c->micro_batch, c->seq, c->loss_chunk,
                        t->n_slots, g->tp_data));
    // with --resume, zt_ckpt_resume fills the weights once the optimizer exists
    if (c->init_from[0] && !c->resume[0]) ZT_TRY(zt_init_load(&t->model, c->init_from));
    else zt_gpt2_init_random(&t->model, c->seed);
    size_t BT = (size_t)c->micro_batch * c->seq, NC = act_count(t);
    t->inputs = zt_be_alloc(t->be, ZT_MEM_WORKSPACE, (size_t)t->n_slots * BT * sizeof(int32_t));
    t->targets = zt_be_alloc(t->be, ZT_MEM_WORKSPACE, (size_t)t->n_slots * BT * sizeof(int32_t));
    t->recv_in = zt_be_alloc(t->be, ZT_MEM_COMM, (size_t)t->n_slots * NC * sizeof(float));
    t->recv_dout = zt_be_alloc(t->be, ZT_MEM_COMM, (size_t)t->n_slots * NC * sizeof(float));
    t->dinput = zt_be_alloc(t->be, ZT_MEM_COMM, NC * sizeof(float));
    if (c->sample_every > 0) // each stage decodes its own layers
        ZT_TRY(zt_train_sampler_init(&t->sampler, &t->model, g->tp_data, g->pp_data,
                                     t->train.tokens[0], g->rank == 0));
    return ZT_OK;
}

// This rank's optimizer range [lo, hi) of the flat buffer (ZeRO shard arithmetic:
// src/planner/planner.h).
static void plan_shard(trainer *t) {
    zt_plan_shard(&t->plan, t->model.layout.numel, t->grid.dp_rank, &t->shard_lo, &t->shard_hi);
}

static void print_start(trainer *t) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    // every rank's memory (total and optimizer), for the report
    double mine[2] = {(double)zt_mem_total(), (double)zt_mem_current(ZT_MEM_OPTIMIZER)};
    double *all = calloc((size_t)g->world * 2, sizeof(double));
    ZT_ASSERT(all);
    zt_comm_all_gather(&g->world_comm, mine, all, (size_t)g->world * 2, ZT_F64, NULL);
    if (g->rank == 0) {
        char mem[256], part[1024];
        zt_mem_format(mem, sizeof mem);
        zt_partition_format(&t->part, &t->shape, part, sizeof part);
        printf("zerotrain: GPT-2 %d layers, %d heads, %d channels, vocab %d (padded %d), "
               "n_ctx %d: %.2fM parameters\n",
               t->shape.n_layer, t->shape.n_head, t->shape.n_embd, t->shape.vocab,
               t->shape.padded_vocab, t->shape.n_ctx, zt_model_param_count(&t->shape) / 1e6);
        printf("layout: world %d = dp %d x pp %d x tp %d, zero %d; global batch %d x %d x %d "
               "sequences of %d tokens; %d OpenMP threads per rank\n",
               g->world, g->dp, g->pp, g->tp, c->zero, c->micro_batch, c->grad_accum, g->dp,
               c->seq, omp_get_max_threads());
        if (strcmp(t->be->ops->name, "cpu") != 0)
            printf("backend: %s (GPU 0)%s; memory below counts its device allocations\n",
                   t->be->ops->name, c->tf32 ? ", TF32 matrix products" : ", fp32 matrix products");
        printf("loss: chunks of %d tokens, %.1f MiB of logits per chunk per rank (%d of the "
               "%d padded vocabulary columns)\n", t->model.loss_chunk,
               (double)t->model.loss_chunk * t->shape.padded_vocab / g->tp * sizeof(float) /
                   1048576.0, t->shape.padded_vocab / g->tp, t->shape.padded_vocab);
        if (g->pp > 1) {
            printf("pipeline: %s schedule, partition %s: %s\n", c->schedule, c->partition, part);
            for (int s = 0; s < g->pp; s++) { // measured on stage s's dp 0, tp 0 rank
                zt_plan_bytes b;
                ZT_ASSERT(zt_plan_rank(&t->plan, &t->part, 0, s, 0, &b) == ZT_OK);
                printf("  stage %d: predicted %.1f MiB, allocated %.1f MiB on each rank\n", s,
                       b.tracked / 1048576.0, all[2 * ((size_t)s * g->dp * g->tp)] / 1048576.0);
            }
        }
        char blas[512];
        zt_blas_describe(blas, sizeof blas);
        printf("blas (rank 0): %s\n", blas);
        printf("memory (rank 0): %s\n", mem);
        printf("optimizer bytes per rank:");
        for (int r = 0; r < g->world; r++) printf(" %.0f", all[2 * r + 1]);
        printf("\n");
        fflush(stdout);
    }
    free(all);
}

// Writes the final weights: the dp 0 rank of every (stage, tp rank) sends its flat
// parameters to rank 0, which assembles and exports them as one Hugging Face directory.
static zt_status save_model(trainer *t) {
    const zt_grid *g = &t->grid;
    const zt_config *c = t->cfg;
    if (g->dp_rank != 0) return ZT_OK;
    zt_gpt2 *m = &t->model;
    size_t bytes = m->layout.numel * sizeof(float);
    float *mine = zt_be_map(t->be, m->params, bytes, 1);
    if (g->rank != 0) {
        zt_comm_send(&g->world_comm, mine, m->layout.numel, ZT_F32, 0, 0, NULL);
        zt_be_unmap(t->be, m->params, mine, bytes, 0);
        return ZT_OK;
    }
    int n = g->pp * g->tp; // part k = stage k / tp, tp rank k % tp
    zt_layout *lays = calloc((size_t)n, sizeof *lays);
    const float **params = calloc((size_t)n, sizeof *params);
    float **owned = calloc((size_t)n, sizeof *owned);
    ZT_ASSERT(lays && params && owned);
    for (int k = 0; k < n; k++) {
        int stage = k / g->tp, tp_rank = k % g->tp;
        ZT_ASSERT(zt_layout_init(&lays[k], &t->shape, t->part.first[stage],
                                 t->part.first[stage + 1], g->tp, tp_rank, ZT_ALIGN_ELEMS) == ZT_OK);
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
    zt_status s = zt_hf_export(&t->shape, lays, params, n, c->save);
    if (s == ZT_OK) printf("saved %s/model.safetensors\n", c->save);
    for (int k = 0; k < n; k++) {
        zt_layout_free(&lays[k]);
        free(owned[k]);
    }
    free(lays);
    free(params);
    free(owned);
    zt_be_unmap(t->be, m->params, mine, bytes, 0);
    return s;
}

// The first and last stage each hold the tied embedding; they take identical updates
// from identical gradients, so the copies must stay bit-identical (docs/design.md §2.4).
static zt_status check_tied_copies(trainer *t) {
    const zt_grid *g = &t->grid;
    zt_gpt2 *m = &t->model;
    if (g->pp == 1 || !g->in_embed_group) return ZT_OK;
    size_t n = m->layout.tied_numel;
    float *mine = zt_be_map(t->be, m->params, n * sizeof(float), 1);
    int same = 1;
    if (is_last_stage(t)) {
        zt_comm_send(&g->embed_comm, mine, n, ZT_F32, 0, 0, NULL);
    } else {
        float *other = malloc(n * sizeof(float));
        ZT_ASSERT(other);
        zt_comm_recv(&g->embed_comm, other, n, ZT_F32, 1, 0, NULL);
        same = memcmp(other, mine, n * sizeof(float)) == 0;
        free(other);
    }
    zt_be_unmap(t->be, m->params, mine, n * sizeof(float), 0);
    if (is_last_stage(t)) return ZT_OK;
    if (!same)
        return zt_errorf("the tied embedding copies of the first and last stage differ (dp rank "
                         "%d): a bug; please report it", g->dp_rank);
    if (g->rank == 0) printf("tied embedding: the first and last stage copies are bit-identical\n");
    return ZT_OK;
}

// Tensors replicated across tp (LayerNorms, row-parallel biases, wpe) take identical
// gradients on every tp rank without a reduction (gpt2.c), so they must stay
// bit-identical: compared by a hash of their bytes.
static zt_status check_tp_replicas(trainer *t) {
    const zt_grid *g = &t->grid;
    const zt_layout *lay = &t->model.layout;
    if (g->tp == 1) return ZT_OK;
    uint64_t h = ZT_FNV1A_BASIS;
    size_t bytes = lay->numel * sizeof(float);
    const float *params = zt_be_map(t->be, t->model.params, bytes, 1);
    for (int i = 0; i < lay->n; i++)
        if (lay->t[i].replicated)
            h = zt_hash_bytes(h, params + lay->t[i].offset, lay->t[i].numel * sizeof(float));
    zt_be_unmap(t->be, t->model.params, (void *)params, bytes, 0);
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
static zt_status check_collective_trace(trainer *t) {
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

// Every rank's memory peaks, per category and in total, and its peak resident set, as
// one JSON line per rank in the log (for bench/memory.sh: predicted against measured).
static void log_rank_memory(trainer *t) {
    const zt_grid *g = &t->grid;
    if (!t->cfg->log[0]) return; // every rank knows: no one joins the gather
    enum { K = ZT_MEM_NCAT + 2 };
    double mine[K], *all = calloc((size_t)g->world * K, sizeof(double));
    ZT_ASSERT(all);
    for (int c = 0; c < ZT_MEM_NCAT; c++) mine[c] = (double)zt_mem_peak((zt_mem_category)c);
    mine[ZT_MEM_NCAT] = (double)zt_mem_peak_total();
    mine[ZT_MEM_NCAT + 1] = (double)zt_mem_rss_peak();
    zt_comm_all_gather(&g->world_comm, mine, all, (size_t)g->world * K, ZT_F64, NULL);
    for (int r = 0; t->log && r < g->world; r++) {
        const double *v = all + (size_t)r * K;
        int dp_rank, pp_rank, tp_rank;
        zt_grid_coords(r, g->dp, g->pp, g->tp, &dp_rank, &pp_rank, &tp_rank);
        fprintf(t->log, "{\"rank\":%d,\"dp_rank\":%d,\"pp_rank\":%d,\"tp_rank\":%d,\"mem_peak\":{",
                r, dp_rank, pp_rank, tp_rank);
        for (int c = 0; c < ZT_MEM_NCAT; c++)
            fprintf(t->log, "%s\"%s\":%.0f", c ? "," : "", zt_mem_category_name((zt_mem_category)c),
                    v[c]);
        fprintf(t->log, "},\"mem_peak_total\":%.0f,\"rss_peak\":%.0f}\n", v[ZT_MEM_NCAT],
                v[ZT_MEM_NCAT + 1]);
    }
    if (t->log) fflush(t->log);
    free(all);
}

// What a checkpoint of this rank holds (src/checkpoint/ckpt.h).
static zt_ckpt_ctx ckpt_ctx(trainer *t) {
    zt_ckpt_ctx x = {t->cfg, &t->grid, &t->part, &t->model, t->plan.is_8bit, &t->opt, &t->opt8,
                     t->shard_lo, t->shard_hi};
    return x;
}

static zt_status run(trainer *t) {
    const zt_config *c = t->cfg;
    zt_grid *g = &t->grid;
    zt_gpt2 *m = &t->model;
    size_t total = m->layout.numel;
    int B = c->micro_batch, T = c->seq;
    double global_tokens = (double)B * T * c->grad_accum * g->dp;
    float loss_scale = (float)(1.0 / global_tokens);
    zt_adamw_config oc = {c->lr, c->beta1, c->beta2, c->eps, c->weight_decay};
    int is_zero = c->zero == 1;
    double t_start = now_s();
    for (int step = t->step0; step < c->steps; step++) {
        // test hook (tests/sh/rank_stalls.sh): this world rank stops, as a hung node would
        const char *stall = getenv("ZT_TEST_STALL_RANK"), *at = getenv("ZT_TEST_STALL_STEP");
        if (stall && at && atoi(stall) == zt_log_rank() && atoi(at) == step + 1) raise(SIGSTOP);
        double t0 = now_s();
        zt_profile prof0 = t->prof;
        t->be->ops->memset(t->be, m->grads, 0, total * sizeof(float));
        double loss_sum = run_schedule(t, (uint64_t)step, loss_scale);
        // the tied embedding: sum the first and last stage's gradient copies over the
        // whole tensor, before the dp reduction, so both stages then shard and update
        // identical values (stages in the middle issue the same call with nothing in it)
        zt_comm_all_reduce(g->embed_data, m->grads, m->grads,
                           g->in_embed_group ? m->layout.tied_numel : 0, ZT_F32, ZT_REDUCE_SUM,
                           NULL);
        // sum gradients over dp: the loss scale already divides by the global tokens
        if (is_zero)
            zt_comm_reduce_scatter(g->dp_data, m->grads, m->grads + t->shard_lo, total, ZT_F32,
                                   ZT_REDUCE_SUM, NULL);
        else
            zt_comm_all_reduce(g->dp_data, m->grads, m->grads, total, ZT_F32, ZT_REDUCE_SUM,
                               NULL);
        // one world all-reduce: [sum of squares, non-finite count, loss sum]; with
        // --zero 0 every dp rank holds the whole gradient, so only dp rank 0 counts it
        double v[4] = {0, 0, 0, t->log_errno != 0}, r[4];
        if (is_zero || g->dp_rank == 0)
            zt_grad_sumsq(t->be, v, m->grads, &m->layout, t->shard_lo, t->shard_hi,
                          g->tp_rank == 0, g->pp_rank == 0);
        v[2] = g->tp_rank == 0 ? loss_sum : 0.0; // every tp rank has the same losses
        zt_comm_all_reduce(&g->world_comm, v, r, 4, ZT_F64, ZT_REDUCE_SUM, NULL);
        if (r[3] > 0)
            return zt_errorf("cannot write the log file %s: %s; the run stopped at step %d",
                             c->log, strerror(t->log_errno ? t->log_errno : EIO), step + 1);
        double loss = r[2] / global_tokens, norm = sqrt(r[0]);
        if (!isfinite(loss) || r[1] > 0)
            return zt_errorf("the loss became %s at step %d (%.0f non-finite gradient values): "
                             "training diverged; lower --lr (now %g), raise --warmup or check "
                             "--grad-clip. Nothing was updated at this step.",
                             isfinite(loss) ? "finite but gradients did not" : "NaN/Inf", step + 1,
                             r[1], c->lr);
        float lr = zt_lr_at(c, step);
        float clip = zt_clip_scale(norm, c->grad_clip);
        if (t->plan.is_8bit) zt_adamw8bit_step(&t->opt8, m->params, m->grads, &m->layout, &oc, lr, clip);
        else zt_adamw_step(&t->opt, m->params, m->grads, &m->layout, &oc, lr, clip);
        if (is_zero)
            zt_comm_all_gather(g->dp_data, m->params + t->shard_lo, m->params, total, ZT_F32,
                               NULL);
        t->be->ops->sync(t->be); // the step's work is done (and its errors seen) here
        double ms = (now_s() - t0) * 1000.0;
        zt_profile phases;
        zt_profile_diff(&phases, &t->prof, &prof0);
        if (c->profile && step > t->step0) { // the first step warms caches and pages up
            zt_profile_add(&t->prof_steps, &phases);
            t->prof_steps_s += ms / 1000.0;
            t->prof_n++;
        }
        double tps = global_tokens / (ms / 1000.0);
        // the pipeline bubble: the share of the schedule's time each stage spent
        // waiting rather than in its forwards and backwards, averaged over the ranks
        // (every rank joins the call)
        double idle = 1.0 - t->compute_s / t->sched_s, bubble = 0.0;
        if (g->pp > 1) {
            zt_comm_all_reduce(&g->world_comm, &idle, &bubble, 1, ZT_F64, ZT_REDUCE_SUM, NULL);
            bubble /= g->world;
        }
        if (g->rank == 0) {
            // model FLOPs per token: 6 per parameter (forward and backward) plus attention's
            // 12 * L * C * T (the PaLM paper's appendix B); MFU against --peak-tflops
            char mem[256], perf[64] = "";
            zt_mem_format(mem, sizeof mem);
            double tflops = (6.0 * zt_model_param_count(&t->shape) +
                             12.0 * t->shape.n_layer * t->shape.n_embd * T) * tps / 1e12;
            if (c->peak_tflops > 0)
                snprintf(perf, sizeof perf, " | MFU %4.1f%%",
                         100.0 * tflops / ((double)c->peak_tflops * g->world));
            else snprintf(perf, sizeof perf, " | %6.3f TFLOP/s", tflops);
            // the memory figures only when they change (first step, then rarely)
            int mem_new = strcmp(mem, t->last_mem) != 0;
            if (mem_new) snprintf(t->last_mem, sizeof t->last_mem, "%s", mem);
            printf("step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %7.1f ms | %8.0f tok/s%s%s%s\n",
                   step + 1, c->steps, loss, lr, norm, ms, tps, perf, mem_new ? " | " : "",
                   mem_new ? mem : "");
            fflush(stdout);
            if (t->log) {
                fprintf(t->log,
                        "{\"step\":%d,\"loss\":%.9g,\"lr\":%.6e,\"grad_norm\":%.6f,\"ms\":%.3f,"
                        "\"tokens_per_s\":%.1f,\"bubble\":%.4f,\"mem\":{",
                        step + 1, loss, lr, norm, ms, tps, bubble);
                for (int cat = 0; cat < ZT_MEM_NCAT; cat++)
                    fprintf(t->log, "%s\"%s\":%zu", cat ? "," : "",
                            zt_mem_category_name((zt_mem_category)cat),
                            zt_mem_current((zt_mem_category)cat));
                fputc('}', t->log);
                if (c->profile) {
                    fputs(",\"phases\":", t->log);
                    zt_profile_write_json(t->log, &phases, ms / 1000.0);
                }
                fprintf(t->log, "}\n");
                check_log_write(t);
            }
        }
        int last = step + 1 == c->steps;
        if (t->has_val && ((step + 1) % c->val_every == 0 || last)) {
            double vl = evaluate(t);
            if (g->rank == 0) {
                printf("step %5d/%d | val loss %.4f\n", step + 1, c->steps, vl);
                if (t->log) fprintf(t->log, "{\"step\":%d,\"val_loss\":%.6f}\n", step + 1, vl);
            }
        }
        if (c->sample_every > 0 && ((step + 1) % c->sample_every == 0 || last))
            zt_train_sample(&t->sampler, c->sample_len, c->seed, step + 1, g->rank == 0);
        if (c->ckpt_dir[0] && ((c->ckpt_every > 0 && (step + 1) % c->ckpt_every == 0) || last)) {
            zt_ckpt_ctx x = ckpt_ctx(t);
            uint64_t per_step = (uint64_t)B * c->grad_accum * g->dp;
            ZT_TRY(zt_ckpt_save(&x, step + 1, t->sample0 + (uint64_t)(step + 1 - t->step0) * per_step));
        }
    }
    if (g->rank == 0)
        printf("done: %d steps in %.1f s\n", c->steps, now_s() - t_start);
    if (g->rank == 0 && c->profile && t->prof_n > 0)
        zt_profile_print(stdout, &t->prof_steps, t->prof_n, t->prof_steps_s / t->prof_n,
                         omp_get_max_threads());
    log_rank_memory(t);
    zt_status s = zt_comm_agree(&g->world_comm, check_tied_copies(t));
    if (s == ZT_OK) s = zt_comm_agree(&g->world_comm, check_tp_replicas(t));
    if (s == ZT_OK) s = check_collective_trace(t);
    if (s == ZT_OK && c->save[0]) s = zt_comm_agree(&g->world_comm, save_model(t));
    return s;
}

zt_status zt_train(const zt_config *cfg, const zt_comm *world_comm, const char *argv0) {
    trainer t;
    memset(&t, 0, sizeof t);
    t.cfg = cfg;
    t.be = zt_backend_cpu();
    const zt_comm *world = world_comm;
    int dp = 0;
    zt_status s = zt_grid_layout(world->size, cfg->dp, cfg->pp, cfg->tp, &dp);
    if (s == ZT_OK) s = zt_config_validate(cfg);
    if (cfg->threads > 0) omp_set_num_threads(cfg->threads);
    if (s == ZT_OK) s = zt_plan_spec_from_config(&t.plan, cfg, dp);
    if (s != ZT_OK) return s; // the same on every rank: no agreement needed
    // --backend cuda: one rank on GPU 0 for now. Tensors of several ranks need the NCCL
    // comm backend or MPI with host staging (the MPI here takes host pointers only).
    zt_backend cuda_be = {0};
    if (!strcmp(cfg->backend, "cuda")) {
        if (world->size > 1)
            return zt_errorf("--backend cuda runs on one rank for now (%d ranks given): "
                             "several GPU ranks wait for the NCCL comm backend; run one rank "
                             "or --backend cpu",
                             world->size);
        ZT_TRY(zt_backend_cuda_init(&cuda_be, 0));
        zt_backend_cuda_set_tf32(&cuda_be, cfg->tf32);
        t.be = &cuda_be;
    }
    ZT_TRY(zt_grid_init(&t.grid, world, dp, cfg->pp, cfg->tp));
    if (cfg->profile) start_profile(&t);
    t.plan.ranks_per_node = zt_host_local_ranks(t.grid.world);
    s = zt_comm_agree(&t.grid.world_comm, t.grid.rank == 0 ? check_start(cfg) : ZT_OK);
    // the memory check first, as a step of its own, so no rank has allocated yet when
    // another reads the machine's available memory
    if (s == ZT_OK) s = zt_comm_agree(&t.grid.world_comm, check_memory(&t));
    if (s == ZT_OK) s = zt_comm_agree(&t.grid.world_comm, setup(&t, argv0));
    if (s == ZT_OK) {
        plan_shard(&t);
        if (t.plan.is_8bit)
            s = zt_adamw8bit_init(&t.opt8, t.be, &t.model.layout, t.shard_lo, t.shard_hi,
                                  &t.plan.opt8);
        else
            zt_adamw_init(&t.opt, t.be, t.shard_lo, t.shard_hi);
        if (t.grid.rank == 0 && cfg->log[0]) {
            t.log = fopen(cfg->log, "w");
            if (!t.log) s = zt_errorf("cannot write the log file %s", cfg->log);
            else { // a header line: the BLAS kernels this run's products use
                zt_blas_write_json(t.log);
                fputc('\n', t.log);
            }
        }
        s = zt_comm_agree(&t.grid.world_comm, s);
    }
    if (s == ZT_OK && cfg->resume[0]) {
        zt_ckpt_ctx x = ckpt_ctx(&t);
        s = zt_ckpt_resume(&x, cfg->resume, &t.step0, &t.sample0);
    }
    if (s == ZT_OK) {
        print_start(&t);
        s = run(&t);
    }
    if (t.log) {
        check_log_write(&t);
        if (fclose(t.log) != 0 && !t.log_errno) t.log_errno = errno;
        if (t.log_errno && s == ZT_OK)
            s = zt_errorf("cannot write the log file %s: %s", cfg->log, strerror(t.log_errno));
    }
    zt_be_free(t.be, t.inputs);
    zt_be_free(t.be, t.targets);
    zt_be_free(t.be, t.recv_in);
    zt_be_free(t.be, t.recv_dout);
    zt_be_free(t.be, t.dinput);
    zt_train_sampler_free(&t.sampler); // before the model whose weights it borrows
    zt_schedule_free(&t.sched);
    zt_partition_free(&t.part);
    zt_adamw_free(&t.opt);
    zt_adamw8bit_free(&t.opt8);
    zt_gpt2_free(&t.model);
    zt_dataset_close(&t.train);
    zt_dataset_close(&t.val);
    zt_grid_free(&t.grid);
    zt_backend_cuda_free(&cuda_be); // after everything allocated through it
    return s;
}
