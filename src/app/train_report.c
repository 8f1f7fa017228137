// What a training run prints and logs: the start-up report (model, layout, stages, kernels,
// memory), one line and one log record per step, and every rank's memory peaks at the end.
#include "trainer.h"

#include "version.h"

#include <errno.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

// Disk full, /dev/full: the run stops instead of exiting 0 with a truncated log.
void zt_trainer_check_log_write(zt_trainer *t) {
    if (t->log && !t->log_errno && (fflush(t->log) != 0 || ferror(t->log)))
        t->log_errno = errno ? errno : EIO;
}

// --sequence-parallel: how the rows are split, or that at tp 1 there is nothing to split
// (accepted, as --zero 1 at dp 1, so one configuration serves every layout).
static void print_seq_parallel(const zt_trainer *t) {
    const zt_config *c = t->cfg;
    if (!c->sequence_parallel) return;
    size_t N = (size_t)c->micro_batch * c->seq;
    if (zt_trainer_compute_model(t)->seq_parallel)
        printf("sequence parallel: each tp rank holds %zu of a micro-batch's %zu token rows "
               "outside the tp products (LayerNorms, residual stream, pipeline transfers)\n",
               zt_gpt2_rows(c->micro_batch, c->seq, t->grid.tp, 1), N);
    else
        printf("sequence parallel: no effect at tp 1 (nothing to split)\n");
}

// --recompute: which blocks recompute what in their backward (the same results, docs/design.md).
static void print_recompute(const zt_trainer *t) {
    const zt_recompute *r = &zt_trainer_compute_model(t)->recompute;
    if (r->mode == ZT_RECOMPUTE_NONE) return;
    char which[48] = "every block";
    if (r->layers) snprintf(which, sizeof which, "each stage's first %d blocks", r->layers);
    printf("recompute %s (%s): %s in the backward (the same results, less activation memory)\n",
           zt_recompute_mode_name(r->mode), which,
           r->mode == ZT_RECOMPUTE_FULL ? "the block's forward runs again"
                                        : "the LayerNorm and GELU outputs are made again");
}

void zt_trainer_print_start(zt_trainer *t) {
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
        printf("layout: world %d = dp %d x pp %d x tp %d, %s; global batch %d x %d x %d "
               "sequences of %d tokens; %d OpenMP threads per rank\n",
               g->world, g->dp, g->pp, g->tp, zt_dp_sync_describe(&t->sync), c->micro_batch,
               c->grad_accum, g->dp, c->seq, omp_get_max_threads());
        print_seq_parallel(t);
        print_recompute(t);
        if (t->model.dtype == ZT_BF16) {
            printf("precision: bf16 weights and gradients, fp32 master weights in the optimizer; "
                   "products on bf16 operands with fp32 sums, their inputs stored in bf16, the "
                   "other activations fp32\n");
            char gemm[512];
            t->be->ops->describe_gemm_mixed(t->be, gemm, sizeof gemm);
            printf("%s\n", gemm);
        }
        if (t->be->caps->device_memory)
            printf("backend: %s%s; memory below counts its device allocations\n",
                   t->be->ops->name, c->tf32 ? ", TF32 matrix products" : ", fp32 matrix products");
        if (g->devices_report[0]) printf("devices: %s\n", g->devices_report);
        if (g->paths_report[0]) printf("tensor paths: %s\n", g->paths_report);
        int chunk = zt_trainer_compute_model(t)->loss_chunk;
        printf("loss: chunks of %d tokens, %.1f MiB of logits per chunk per rank (%d of the "
               "%d padded vocabulary columns)\n", chunk,
               (double)chunk * t->shape.padded_vocab / g->tp *
                   (double)zt_dtype_size(c->param_dtype) / 1048576.0, t->shape.padded_vocab / g->tp, t->shape.padded_vocab);
        if (g->pp > 1) {
            printf("pipeline: %s schedule, partition %s: %s\n", zt_schedule_kind_name(c->schedule),
                   c->partition, part);
            if (t->n_chunks > 1) // the partition's stages are chunks
                printf("  %d chunks per rank: rank r holds the stages above numbered r, r+%d, "
                       "...\n", t->n_chunks, g->pp);
            for (int s = 0; s < g->pp; s++) { // measured on stage s's dp 0, tp 0 rank
                zt_plan_bytes b;
                ZT_ASSERT(zt_plan_rank(&t->plan, &t->part, 0, s, 0, &b) == ZT_OK);
                printf("  stage %d: predicted %.1f MiB, allocated %.1f MiB on each rank\n", s,
                       b.tracked / 1048576.0, all[2 * ((size_t)s * g->dp * g->tp)] / 1048576.0);
            }
        }
        char kernels[512];
        t->be->ops->describe(t->be, kernels, sizeof kernels);
        printf("%s (rank 0): %s\n", t->be->ops->library, kernels);
        printf("memory (rank 0): %s\n", mem);
        printf("optimizer bytes per rank:");
        for (int r = 0; r < g->world; r++) printf(" %.0f", all[2 * r + 1]);
        printf("\n");
        fflush(stdout);
    }
    free(all);
}

// The log's first record: the backend's fields as before (the BLAS library and the kernels
// its products run on: tools read them from the first line), then zerotrain's version, the
// layout, the threads and every option with its resolved value (zt_config_write_json).
void zt_trainer_write_log_header(zt_trainer *t) {
    char *be_json = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&be_json, &n);
    ZT_ASSERT(m);
    t->be->ops->write_json(t->be, m);
    ZT_ASSERT(fclose(m) == 0);
    char *close = strrchr(be_json, '}');
    ZT_ASSERT(be_json[0] == '{' && close);
    *close = 0; // the backend's fields stay open for ours
    const zt_grid *g = &t->grid;
    char describe[512];
    t->be->ops->describe(t->be, describe, sizeof describe);
    fprintf(t->log, "%s%s\"zerotrain_version\":", be_json, close > be_json + 1 ? "," : "");
    zt_json_string(t->log, zt_version());
    fprintf(t->log, ",\"backend\":");
    zt_json_string(t->log, t->be->ops->name);
    fprintf(t->log, ",\"backend_describe\":");
    zt_json_string(t->log, describe);
    fprintf(t->log, ",\"layout\":{\"world\":%d,\"dp\":%d,\"pp\":%d,\"tp\":%d},"
            "\"threads_per_rank\":%d,\"config\":", g->world, g->dp, g->pp, g->tp,
            omp_get_max_threads());
    zt_config_write_json(t->log, t->cfg);
    fputs("}\n", t->log);
    free(be_json);
}

// A duration as m:ss, or h:mm:ss from an hour on; "-" when not known (negative).
static void format_duration(char *out, size_t size, double s) {
    if (s < 0) {
        snprintf(out, size, "-");
        return;
    }
    long r = (long)(s + 0.5);
    if (r >= 3600) snprintf(out, size, "%ld:%02ld:%02ld", r / 3600, r / 60 % 60, r % 60);
    else snprintf(out, size, "%ld:%02ld", r / 60, r % 60);
}

// The wall time since the loop began, and the estimated time to the last step: the steps
// left times the mean time per step after the run's first (which warms caches and pages;
// validation and checkpoints between steps count, as they will in the steps left).
// *eta is -1 after the first step: there is nothing to average yet.
static void progress(zt_trainer *t, int step, double *elapsed, double *eta) {
    *elapsed = zt_mono_s() - t->run_t0;
    if (step == t->step0) {
        t->first_step_s = *elapsed;
        *eta = -1.0;
        return;
    }
    double mean = (*elapsed - t->first_step_s) / (step - t->step0);
    *eta = mean * (t->cfg->steps - step - 1);
}

// --tensorboard: a failed write says so once and ends the event file; training goes on (the
// dashboard is a view of the run, and the --log holds the same numbers).
static void tb_write(zt_trainer *t, int step, const char *const *tags, const float *v, int n) {
    if (!t->tb.f) return;
    if (zt_tb_scalars(&t->tb, step, tags, v, n) == ZT_OK) return;
    fprintf(stderr, "zerotrain: warning: %s; no more TensorBoard events are written, training "
            "goes on\n", zt_error_message());
    zt_tb_close(&t->tb);
}

void zt_trainer_tb_val(zt_trainer *t, int step, double val_loss) {
    static const char *const tag[] = {"val/loss"};
    float v = (float)val_loss;
    tb_write(t, step, tag, &v, 1);
}

// The step's scalars in TensorBoard (the --log record's numbers, as float32): memory by
// category in MiB; MFU only with --peak-tflops (mfu < 0 without).
static void tb_step(zt_trainer *t, int step, const zt_step_stats *st, double tps,
                    double tflops, double mfu) {
    enum { BASE = 6, N = BASE + 1 + ZT_MEM_NCAT };
    static char mem_tags[ZT_MEM_NCAT][64];
    const char *tags[N] = {"train/loss", "train/lr", "train/grad_norm", "perf/step_ms",
                           "perf/tokens_per_s", "perf/tflops"};
    float v[N] = {(float)st->loss, (float)st->lr, (float)st->norm, (float)st->ms, (float)tps,
                  (float)tflops};
    int n = BASE;
    if (mfu >= 0) {
        tags[n] = "perf/mfu";
        v[n++] = (float)mfu;
    }
    for (int c = 0; c < ZT_MEM_NCAT; c++) {
        snprintf(mem_tags[c], sizeof mem_tags[c], "memory/%s_mib",
                 zt_mem_category_name((zt_mem_category)c));
        tags[n] = mem_tags[c];
        v[n++] = (float)(zt_mem_current((zt_mem_category)c) / 1048576.0);
    }
    tb_write(t, step + 1, tags, v, n);
}

// The step's record in the log (every step, whatever --log-every says).
static void log_step(zt_trainer *t, int step, const zt_step_stats *st, double tps,
                     double tflops, double mfu, double bubble, double elapsed, double eta,
                     const char *pp_json) {
    fprintf(t->log,
            "{\"step\":%d,\"loss\":%.9g,\"lr\":%.6e,\"grad_norm\":%.6f,\"ms\":%.3f,"
            "\"grad_comm_ms\":%.3f,\"param_comm_ms\":%.3f,\"param_overlapped\":%d,"
            "\"pp_comm_ms\":%.3f,\"pp_async\":%d,\"tokens_per_s\":%.1f,\"tflops\":%.9g,"
            "\"mfu\":",
            step + 1, st->loss, st->lr, st->norm, st->ms, st->grad_comm_ms, st->param_comm_ms,
            st->param_overlapped, st->pp_comm_ms, st->pp_async, tps, tflops);
    if (mfu < 0) fputs("null", t->log);
    else fprintf(t->log, "%.9g", mfu);
    fprintf(t->log, ",\"bubble\":%.4f,\"elapsed_s\":%.3f,\"eta_s\":", bubble, elapsed);
    if (eta < 0) fputs("null", t->log);
    else fprintf(t->log, "%.3f", eta);
    fputs(",\"mem\":{", t->log);
    for (int cat = 0; cat < ZT_MEM_NCAT; cat++)
        fprintf(t->log, "%s\"%s\":%zu", cat ? "," : "", zt_mem_category_name((zt_mem_category)cat),
                zt_mem_current((zt_mem_category)cat));
    fputc('}', t->log);
    if (t->cfg->profile) {
        fputs(",\"phases\":", t->log);
        zt_profile_write_json(t->log, &st->phases, st->ms / 1000.0);
    }
    fprintf(t->log, "%s}\n", pp_json);
    zt_trainer_check_log_write(t);
}

// The step's line on stdout (every --log-every steps, the run's first and its last) and its
// record in the log; --profile's totals; the pipeline bubble (a collective: every rank joins).
void zt_trainer_report_step(zt_trainer *t, int step, const zt_step_stats *st) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    if (c->profile && step > t->step0) { // the first step warms caches and pages up
        zt_profile_add(&t->prof_steps, &st->phases);
        t->prof_steps_s += st->ms / 1000.0;
        t->prof_n++;
    }
    double tps = (double)c->micro_batch * c->seq * c->grad_accum * g->dp / (st->ms / 1000.0);
    // the pipeline bubble: the share of the schedule's time each stage spent
    // waiting rather than in its forwards and backwards, averaged over the ranks
    double idle = 1.0 - t->compute_s / t->sched_s, bubble = 0.0;
    if (g->pp > 1) {
        zt_comm_all_reduce(&g->world_comm, &idle, &bubble, 1, ZT_F64, ZT_REDUCE_SUM, NULL);
        bubble /= g->world;
    }
    // each stage's idle and predicted idle: at most 2 x 32 bytes per stage
    size_t pp_cap = 64 * (size_t)g->pp + 64;
    char *pp_json = malloc(pp_cap);
    ZT_ASSERT(pp_json);
    zt_trainer_pipeline_figures(t, step, pp_json, pp_cap);
    if (g->rank != 0) {
        free(pp_json);
        return;
    }
    double elapsed, eta;
    progress(t, step, &elapsed, &eta);
    // model FLOPs per token: 6 per parameter (forward and backward) plus attention's
    // 12 * L * C * T (the PaLM paper's appendix B); MFU (a fraction) against --peak-tflops
    double tflops = (6.0 * zt_model_param_count(&t->shape) +
                     12.0 * t->shape.n_layer * t->shape.n_embd * c->seq) * tps / 1e12;
    double mfu = c->peak_tflops > 0 ? tflops / ((double)c->peak_tflops * g->world) : -1.0;
    if (t->log) log_step(t, step, st, tps, tflops, mfu, bubble, elapsed, eta, pp_json);
    free(pp_json);
    tb_step(t, step, st, tps, tflops, mfu);
    if (step != t->step0 && step + 1 != c->steps && (step + 1) % c->log_every != 0) return;
    char mem[256], perf[64] = "", el[32], left[32];
    zt_mem_format(mem, sizeof mem);
    if (mfu >= 0) snprintf(perf, sizeof perf, " | MFU %4.1f%%", 100.0 * mfu);
    else snprintf(perf, sizeof perf, " | %6.3f TFLOP/s", tflops);
    format_duration(el, sizeof el, elapsed);
    format_duration(left, sizeof left, eta);
    // the memory figures only when they change (first step, then rarely)
    int mem_new = strcmp(mem, t->last_mem) != 0;
    if (mem_new) snprintf(t->last_mem, sizeof t->last_mem, "%s", mem);
    printf("step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %7.1f ms | %8.0f tok/s%s | "
           "elapsed %s | ETA %s%s%s\n", step + 1, c->steps, st->loss, st->lr, st->norm, st->ms,
           tps, perf, el, left, mem_new ? " | " : "", mem_new ? mem : "");
    fflush(stdout);
}

// Every rank's memory peaks, per category and in total, and its peak resident set, as
// one JSON line per rank in the log (for bench/memory.sh: predicted against measured).
void zt_trainer_log_rank_memory(zt_trainer *t) {
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

