// The training loop (DESIGN.md §2): each dp rank reads its part of the global batch,
// runs forward/backward over its micro-batches, the gradients are reduced over dp
// (all-reduce for --zero 0, reduce-scatter for --zero 1), clipped by the global norm,
// AdamW updates this rank's range, and --zero 1 all-gathers the parameters.
#include "train.h"

#include <libgen.h>
#include <math.h>
#include <omp.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adamw.h"
#include "comm.h"
#include "data.h"
#include "gpt2.h"
#include "grad_norm.h"
#include "grid.h"
#include "hf_export.h"
#include "llmc_checkpoint.h"
#include "memory.h"

// Every tensor and shard boundary sits on a multiple of this many elements: the
// 8-bit optimizer's block (DESIGN.md §3, §7).
#define ZT_ALIGN_ELEMS 256

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
    zt_grid grid;
    zt_model_shape shape;
    zt_gpt2 model;
    zt_adamw opt;
    zt_dataset train, val;
    int has_val;
    size_t shard_lo, shard_hi; // this rank's optimizer range of the flat buffer
    int32_t *inputs, *targets; // (B*T)
    FILE *log;
} trainer;

// Reads micro-batch `k` of step `step` for this dp rank: sample indices are global
// (step * G + (dp_rank * grad_accum + k) * B + b), so every layout sees the same batch.
static void read_batch(trainer *t, zt_dataset *ds, uint64_t step, int k, int accum) {
    const zt_config *c = t->cfg;
    uint64_t G = (uint64_t)c->micro_batch * accum * t->grid.dp;
    uint64_t first = step * G + ((uint64_t)t->grid.dp_rank * accum + k) * c->micro_batch;
    for (int b = 0; b < c->micro_batch; b++)
        zt_dataset_sample(ds, first + b, t->inputs + (size_t)b * c->seq,
                          t->targets + (size_t)b * c->seq);
}

// Mean validation loss over the first val_batches global batches of the validation
// file: the same samples whatever the layout.
static double evaluate(trainer *t) {
    const zt_config *c = t->cfg;
    double sum = 0.0;
    for (int vb = 0; vb < c->val_batches; vb++)
        for (int k = 0; k < c->grad_accum; k++) {
            read_batch(t, &t->val, (uint64_t)vb, k, c->grad_accum);
            sum += zt_gpt2_forward(&t->model, t->inputs, NULL, t->targets, 0, 0.0f);
        }
    double total;
    zt_comm_all_reduce(&t->grid.world_comm, &sum, &total, 1, ZT_F64, ZT_REDUCE_SUM, NULL);
    return total / ((double)c->val_batches * c->grad_accum * c->micro_batch * c->seq * t->grid.dp);
}

// Bytes of memory the kernel says are available (MemAvailable), or 0 if unknown.
static double available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024.0;
}

// Refuses, before allocating anything, a run whose model state and activations cannot
// fit in this machine's available memory (all ranks on one node share it).
// TODO(issue 7): the memory planner replaces this estimate with a per-rank prediction.
static zt_status check_fits(trainer *t, size_t pad) {
    const zt_config *c = t->cfg;
    size_t b[ZT_MEM_NCAT];
    ZT_TRY(zt_gpt2_footprint(b, &t->shape, 0, zt_unit_count(&t->shape), 1, 0, ZT_ALIGN_ELEMS, pad,
                             c->micro_batch, c->seq, c->loss_chunk));
    double opt = 2.0 * b[ZT_MEM_PARAMS] / (c->zero == 1 ? t->grid.dp : 1);
    double need = opt;
    for (int k = 0; k < ZT_MEM_NCAT; k++) need += (double)b[k];
    double avail = available_bytes();
    if (avail > 0 && need > avail)
        return zt_errorf("this run needs %.2f GiB per rank (parameters %.2f, gradients %.2f, "
                         "optimizer %.2f, activations %.2f, workspace %.2f GiB) but the machine has "
                         "%.2f GiB of memory available: lower --micro-batch or --seq, use a smaller "
                         "model, or shard the optimizer over more ranks with --zero 1",
                         need / 1073741824.0, b[ZT_MEM_PARAMS] / 1073741824.0,
                         b[ZT_MEM_GRADS] / 1073741824.0, opt / 1073741824.0,
                         b[ZT_MEM_ACTIVATIONS] / 1073741824.0, b[ZT_MEM_WORKSPACE] / 1073741824.0,
                         avail / 1073741824.0);
    return ZT_OK;
}

static zt_status setup(trainer *t, const char *argv0) {
    const zt_config *c = t->cfg;
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
    if (val_path[0]) {
        ZT_TRY(zt_dataset_open(&t->val, val_path, c->seq, t->shape.vocab, 0, c->seed));
        t->has_val = c->val_every > 0;
    }
    int units = zt_unit_count(&t->shape);
    size_t pad = (size_t)t->grid.dp * ZT_ALIGN_ELEMS;
    ZT_TRY(check_fits(t, pad));
    ZT_TRY(zt_gpt2_init(&t->model, &t->shape, 0, units, 1, 0, ZT_ALIGN_ELEMS, pad, c->micro_batch,
                        c->seq, c->loss_chunk));
    if (c->init_from[0]) ZT_TRY(zt_llmc_load(&t->model, c->init_from));
    else zt_gpt2_init_random(&t->model, c->seed);
    return ZT_OK;
}

// The flat buffer is padded to a multiple of dp * block so that ZeRO shards are equal
// and block-aligned (DESIGN.md §3); this rank's shard is [lo, hi).
static void plan_shard(trainer *t) {
    zt_layout *lay = &t->model.layout;
    size_t dp = (size_t)t->grid.dp;
    ZT_ASSERT(lay->numel % (dp * ZT_ALIGN_ELEMS) == 0);
    if (t->cfg->zero == 1) {
        size_t S = lay->numel / dp;
        t->shard_lo = (size_t)t->grid.dp_rank * S;
        t->shard_hi = t->shard_lo + S;
    } else {
        t->shard_lo = 0;
        t->shard_hi = lay->numel;
    }
}

static void print_start(trainer *t) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    // optimizer bytes of every rank, for the memory report
    double mine = (double)zt_mem_current(ZT_MEM_OPTIMIZER);
    double *all = calloc((size_t)g->world, sizeof(double));
    ZT_ASSERT(all);
    zt_comm_all_gather(&g->world_comm, &mine, all, (size_t)g->world, ZT_F64, NULL);
    if (g->rank == 0) {
        char mem[256];
        zt_mem_format(mem, sizeof mem);
        printf("zerotrain: GPT-2 %d layers, %d heads, %d channels, vocab %d (padded %d), "
               "n_ctx %d: %.2fM parameters\n",
               t->shape.n_layer, t->shape.n_head, t->shape.n_embd, t->shape.vocab,
               t->shape.padded_vocab, t->shape.n_ctx, zt_model_param_count(&t->shape) / 1e6);
        printf("layout: world %d = dp %d x pp %d x tp %d, zero %d; global batch %d x %d x %d "
               "sequences of %d tokens; %d OpenMP threads per rank\n",
               g->world, g->dp, g->pp, g->tp, c->zero, c->micro_batch, c->grad_accum, g->dp,
               c->seq, omp_get_max_threads());
        printf("memory (rank 0): %s\n", mem);
        printf("optimizer bytes per rank:");
        for (int r = 0; r < g->world; r++) printf(" %.0f", all[r]);
        printf("\n");
        fflush(stdout);
    }
    free(all);
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
    for (int step = 0; step < c->steps; step++) {
        double t0 = now_s();
        memset(m->grads, 0, total * sizeof(float));
        double loss_sum = 0.0;
        for (int k = 0; k < c->grad_accum; k++) {
            read_batch(t, &t->train, (uint64_t)step, k, c->grad_accum);
            loss_sum += zt_gpt2_forward(m, t->inputs, NULL, t->targets, 1, loss_scale);
            zt_gpt2_backward(m, t->inputs, NULL, NULL);
        }
        // sum gradients over dp: the loss scale already divides by the global tokens
        if (is_zero)
            zt_comm_reduce_scatter(&g->dp_comm, m->grads, m->grads + t->shard_lo, total, ZT_F32,
                                   ZT_REDUCE_SUM, NULL);
        else if (g->dp > 1)
            zt_comm_all_reduce(&g->dp_comm, m->grads, m->grads, total, ZT_F32, ZT_REDUCE_SUM,
                               NULL);
        // one world all-reduce: [sum of squares, non-finite count, loss sum]; with
        // --zero 0 every dp rank holds the whole gradient, so only dp rank 0 counts it
        double v[3] = {0, 0, loss_sum}, r[3];
        if (is_zero || g->dp_rank == 0)
            zt_grad_sumsq(v, m->grads, &m->layout, t->shard_lo, t->shard_hi, g->tp_rank == 0,
                          g->pp_rank == 0);
        v[2] = loss_sum;
        zt_comm_all_reduce(&g->world_comm, v, r, 3, ZT_F64, ZT_REDUCE_SUM, NULL);
        double loss = r[2] / global_tokens, norm = sqrt(r[0]);
        if (!isfinite(loss) || r[1] > 0)
            return zt_errorf("the loss became %s at step %d (%.0f non-finite gradient values): "
                             "training diverged; lower --lr (now %g), raise --warmup or check "
                             "--grad-clip. Nothing was updated at this step.",
                             isfinite(loss) ? "finite but gradients did not" : "NaN/Inf", step + 1,
                             r[1], c->lr);
        float lr = zt_lr_at(c, step);
        zt_adamw_step(&t->opt, m->params, m->grads, &m->layout, &oc, lr,
                      zt_clip_scale(norm, c->grad_clip));
        if (is_zero)
            zt_comm_all_gather(&g->dp_comm, m->params + t->shard_lo, m->params, total, ZT_F32,
                               NULL);
        double ms = (now_s() - t0) * 1000.0;
        double tps = global_tokens / (ms / 1000.0);
        if (g->rank == 0) {
            char mem[256];
            zt_mem_format(mem, sizeof mem);
            printf("step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %7.1f ms | %8.0f tok/s | %s\n",
                   step + 1, c->steps, loss, lr, norm, ms, tps, mem);
            fflush(stdout);
            if (t->log) {
                fprintf(t->log,
                        "{\"step\":%d,\"loss\":%.9g,\"lr\":%.6e,\"grad_norm\":%.6f,\"ms\":%.3f,"
                        "\"tokens_per_s\":%.1f,\"mem\":{",
                        step + 1, loss, lr, norm, ms, tps);
                for (int cat = 0; cat < ZT_MEM_NCAT; cat++)
                    fprintf(t->log, "%s\"%s\":%zu", cat ? "," : "",
                            zt_mem_category_name((zt_mem_category)cat),
                            zt_mem_current((zt_mem_category)cat));
                fprintf(t->log, "}}\n");
                fflush(t->log);
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
    }
    if (g->rank == 0)
        printf("done: %d steps in %.1f s\n", c->steps, now_s() - t_start);
    // every dp rank holds the same whole parameters; rank 0 writes them
    zt_status s = ZT_OK;
    if (c->save[0] && g->rank == 0) {
        s = zt_hf_export(m, c->save);
        if (s == ZT_OK) printf("saved %s/model.safetensors\n", c->save);
    }
    return zt_comm_agree(&g->world_comm, s);
}

zt_status zt_train(const zt_config *cfg, const zt_comm *world_comm, const char *argv0) {
    trainer t;
    memset(&t, 0, sizeof t);
    t.cfg = cfg;
    const zt_comm *world = world_comm;
    int dp = 0;
    zt_status s = zt_grid_layout(world->size, cfg->dp, cfg->pp, cfg->tp, &dp);
    if (s == ZT_OK) s = zt_config_validate(cfg);
    // TODO(issues 4-6): pipeline stages, tensor parallel layers, the 8-bit optimizer.
    if (s == ZT_OK && (cfg->pp > 1 || cfg->tp > 1))
        s = zt_errorf("--pp %d --tp %d: pipeline and tensor parallel layouts are not built yet; "
                      "use --pp 1 --tp 1 (data parallel over all ranks)", cfg->pp, cfg->tp);
    if (s == ZT_OK && strcmp(cfg->optim, "adamw") != 0)
        s = zt_errorf("--optim %s is not built yet; use --optim adamw", cfg->optim);
    if (s != ZT_OK) return s; // the same on every rank: no agreement needed
    if (cfg->threads > 0) omp_set_num_threads(cfg->threads);
    ZT_TRY(zt_grid_init(&t.grid, world, dp, cfg->pp, cfg->tp));
    s = zt_comm_agree(&t.grid.world_comm, setup(&t, argv0));
    if (s == ZT_OK) {
        t.inputs = calloc((size_t)cfg->micro_batch * cfg->seq, sizeof(int32_t));
        t.targets = calloc((size_t)cfg->micro_batch * cfg->seq, sizeof(int32_t));
        ZT_ASSERT(t.inputs && t.targets);
        plan_shard(&t);
        zt_adamw_init(&t.opt, t.shard_lo, t.shard_hi);
        if (t.grid.rank == 0 && cfg->log[0]) {
            t.log = fopen(cfg->log, "w");
            if (!t.log) s = zt_errorf("cannot write the log file %s", cfg->log);
        }
        s = zt_comm_agree(&t.grid.world_comm, s);
    }
    if (s == ZT_OK) {
        print_start(&t);
        s = run(&t);
    }
    if (t.log) fclose(t.log);
    free(t.inputs);
    free(t.targets);
    zt_adamw_free(&t.opt);
    zt_gpt2_free(&t.model);
    zt_dataset_close(&t.train);
    zt_dataset_close(&t.val);
    zt_grid_free(&t.grid);
    return s;
}
