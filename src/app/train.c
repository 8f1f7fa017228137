// A training run (docs/design.md §2): the backend, the grid, the memory check, the data, the
// model, the optimizer and the log are set up; the loop runs the steps (train_step.c) and
// reports them (train_report.c); then everything is released in reverse.
#include "train.h"

#include <errno.h>
#include <libgen.h>
#include <omp.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_view.h"
#include "comm_mpi.h"
#include "data_pairing.h"
#include "host_memory.h"
#include "grid_data.h"
#include "hf_import.h"
#include "launcher.h"
#include "plan_spec.h"
#include "signals.h"
#include "trainer.h"

// The embedded default data sits next to the binary (build/data/default_*.bin).
static void default_data_path(char *out, size_t size, const char *argv0, const char *file) {
    char exe[ZT_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = 0;
    else snprintf(exe, sizeof exe, "%s", argv0);
    snprintf(out, size, "%s/data/%s", dirname(exe), file);
}

// --profile: every op of the backend and of the tensor paths goes through a timer from
// here on (before the model and the optimizer take the backend).
static void start_profile(zt_trainer *t) {
    zt_backend_profile_init(&t->prof_be, &t->prof_be_st, t->be, &t->prof);
    memset(&t->prof_ops, 0, sizeof t->prof_ops);
    t->be = &t->prof_be;
    zt_grid *g = &t->grid;
    const zt_comm **paths[4] = {&g->tp_data, &g->dp_data, &g->pp_data, &g->embed_data};
    for (int i = 0; i < 4; i++) {
        zt_comm_profile_init(&t->prof_comm[i], &t->prof_comm_st[i], *paths[i], &t->prof);
        *paths[i] = &t->prof_comm[i];
    }
}

// --val-batches 0: as many whole global batches as the validation file holds, 8 at most (the
// default's count before it was automatic) and at least 1, so a default run never reads a
// validation sample twice where the file allows it.
static int auto_val_batches(const zt_trainer *t) {
    const zt_config *c = t->cfg;
    uint64_t batch = (uint64_t)c->grad_accum * c->micro_batch * t->grid.dp;
    if (c->val_batches > 0) return c->val_batches;
    uint64_t fit = t->val.n_samples / batch;
    return fit < 1 ? 1 : fit > 8 ? 8 : (int)fit;
}

// The validation file holds fewer sequences than --val-batches reads: say so (rank 0).
static void warn_short_val(const zt_trainer *t, const char *val_path) {
    const zt_config *c = t->cfg;
    uint64_t batch = (uint64_t)c->grad_accum * c->micro_batch * t->grid.dp;
    // evaluate() reads val_batches global batches; beyond the file it wraps around
    uint64_t want = (uint64_t)t->val_batches * batch, fit = t->val.n_samples / batch;
    char fix[96] = "a smaller --micro-batch or --grad-accum";
    if (fit > 0) snprintf(fix, sizeof fix, "--val-batches %llu or less", (unsigned long long)fit);
    if (want > t->val.n_samples && t->grid.rank == 0)
        fprintf(stderr, "zerotrain: warning: validation reads %llu sequences of %d tokens "
                "but %s holds %llu, so some are counted more than once; use %s\n",
                (unsigned long long)want, c->seq, val_path, (unsigned long long)t->val.n_samples,
                fix);
}

// The token files. Training reads --data (else the embedded default text) and validates on
// --val-data (else, with the default text, its validation split). Evaluation reads only the
// validation file: --val-data, else --data, else the default split.
static zt_status open_data(zt_trainer *t, const char *argv0) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    char path[ZT_PATH_MAX], def_val[ZT_PATH_MAX];
    const char *train_path = c->data, *val_path = c->val_data;
    if (!train_path[0]) {
        default_data_path(path, sizeof path, argv0, "default_train.bin");
        default_data_path(def_val, sizeof def_val, argv0, "default_val.bin");
        train_path = path;
        if (!val_path[0]) val_path = def_val;
    }
    if (t->eval_only && !c->val_data[0]) val_path = c->data[0] ? c->data : def_val;
    snprintf(t->val_path, sizeof t->val_path, "%s", val_path);
    if (!t->eval_only) {
        ZT_TRY(zt_dataset_open(&t->train, train_path, c->seq, t->shape.vocab, c->shuffle,
                               c->seed));
        uint64_t batch = (uint64_t)c->grad_accum * c->micro_batch * g->dp;
        if (t->train.n_samples < batch && g->rank == 0)
            fprintf(stderr, "zerotrain: warning: one step reads %llu sequences of %d tokens but "
                    "%s holds %llu, so every step repeats them; give more data, or a smaller "
                    "--micro-batch, --grad-accum or --seq\n", (unsigned long long)batch, c->seq,
                    train_path, (unsigned long long)t->train.n_samples);
    }
    if (!val_path[0]) return ZT_OK;
    if (!t->eval_only) ZT_TRY(zt_pair_check(train_path, val_path));
    ZT_TRY(zt_dataset_open(&t->val, val_path, c->seq, t->shape.vocab, 0, c->seed));
    t->has_val = t->eval_only || c->val_every > 0;
    t->val_batches = auto_val_batches(t);
    if (t->has_val) warn_short_val(t, val_path);
    return ZT_OK;
}

// --overlap-comm, for the synchronizer and the pipeline's transfers (evaluation: off).
static int overlap_comm(const zt_trainer *t) {
    return t->cfg->overlap_comm && !t->eval_only;
}

// The synchronizer's options: the run's --zero and --overlap-comm, a bucket per --bucket-mib,
// two announcements per block (gpt2.h).
static zt_dp_sync_options dp_sync_options(const zt_trainer *t) {
    const zt_config *c = t->cfg;
    return (zt_dp_sync_options){.zero = c->zero,
                                .overlap = overlap_comm(t),
                                .bucket_bytes = (size_t)c->bucket_mib << 20,
                                .max_ready = 2 * t->shape.n_layer};
}

// The data-parallel synchronizer of the model's flat buffers, and the model's hooks into it,
// given once: the model announces final gradients and asks for parameters (gpt2.h), and the
// synchronizer acts on them in the moments the schedule names (dp_sync.h).
static void init_dp_sync(zt_trainer *t) {
    const zt_grid *g = &t->grid;
    zt_gpt2 *m = &t->model;
    zt_dp_sync_options o = dp_sync_options(t);
    zt_dp_sync_init(&t->sync, &o, g->dp_data, &g->dp_comm, g->embed_data,
                    g->in_embed_group ? m->layout.tied_numel : 0, m->grads, m->params, m->dtype,
                    &m->layout);
    m->grad_ready = zt_dp_sync_grads_final;
    m->grad_ready_ctx = &t->sync;
    m->params_need = zt_dp_sync_params_needed;
    m->params_need_ctx = &t->sync;
    for (int c = 0; t->chunks && c < t->n_chunks; c++) { // the views announce and ask alike
        zt_gpt2 *v = &t->chunks[c];
        v->grad_ready = m->grad_ready;
        v->grad_ready_ctx = m->grad_ready_ctx;
        v->params_need = m->params_need;
        v->params_need_ctx = m->params_need_ctx;
    }
}

// Each chunk's activation slots and where its slots start in the trainer's buffers: the
// schedule's peak with one chunk, each chunk's own under interleaved (the planner's count).
static void init_slots(zt_trainer *t) {
    int V = t->n_chunks;
    t->chunk_slots = calloc((size_t)V, sizeof(int));
    t->slot_base = calloc((size_t)V, sizeof(int));
    ZT_ASSERT(t->chunk_slots && t->slot_base);
    t->n_slots = 0;
    for (int c = 0; c < V; c++) {
        t->chunk_slots[c] = V > 1 ? zt_schedule_chunk_slots(&t->sched, c)
                                  : zt_schedule_peak_in_flight(&t->sched);
        ZT_ASSERT(t->chunk_slots[c] ==
                  zt_plan_stage_slots(&t->plan, c * t->grid.pp + t->grid.pp_rank));
        t->slot_base[c] = t->n_slots;
        t->n_slots += t->chunk_slots[c];
    }
}

// Interleaved: the rank's flat buffers over its chunks (virtual stages c * pp + pp_rank),
// and a view computing each chunk (docs/design.md, "Pipeline").
static zt_status init_chunks(zt_trainer *t, const zt_act_options *opts) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    int V = t->n_chunks, firsts[V], lasts[V];
    for (int k = 0; k < V; k++) {
        firsts[k] = t->part.first[k * g->pp + g->pp_rank];
        lasts[k] = t->part.first[k * g->pp + g->pp_rank + 1];
    }
    ZT_TRY(zt_gpt2_init_ranges(&t->model, t->be, &t->shape, V, firsts, lasts, g->tp, g->tp_rank,
                               ZT_ALIGN_ELEMS, (size_t)g->dp * ZT_ALIGN_ELEMS, c->param_dtype));
    t->chunks = calloc((size_t)V, sizeof *t->chunks);
    ZT_ASSERT(t->chunks);
    for (int k = 0; k < V; k++)
        ZT_TRY(zt_gpt2_init_view(&t->chunks[k], &t->model, firsts[k], lasts[k], c->micro_batch,
                                 c->seq, t->plan.loss_chunk, t->chunk_slots[k], g->tp_data, opts));
    return ZT_OK;
}

// The interleaved ring's sends must not hold the stage (pipe_ring.h): a pipeline path
// without nonblocking point-to-point cannot run it. MPI has it, host staging once reserved
// (reserve_ring_staging); NCCL's does not (docs/design.md, "Pipeline": what it needs).
static zt_status check_ring(const zt_trainer *t) {
    if (t->n_chunks == 1 || zt_comm_has_async_p2p(t->grid.pp_data)) return ZT_OK;
    return zt_errorf("--schedule interleaved needs nonblocking pipeline transfers, which NCCL "
                     "between GPUs lacks here (NCCL point-to-point holds its stream until the "
                     "peer matches it, and the ring sends ahead of its receives): use "
                     "--schedule 1f1b, or run the ranks of each pipeline on one GPU (host "
                     "staging) or on the CPU backend");
}

// Host staging's nonblocking sends for the interleaved ring: a host slot per send it can
// hold in flight, as the planner counts them (zt_plan_ring_sends). Before --profile wraps
// the path, which then has them too.
static void reserve_ring_staging(zt_trainer *t) {
    zt_grid *g = &t->grid;
    int V = t->cfg->virtual_stages, slots = 0;
    if (V < 2 || g->pp < 2 || !zt_comm_is_staged(g->pp_data)) return;
    ZT_ASSERT(g->pp_data == &g->pp_dev);
    for (int c = 0; c < V; c++) slots += zt_plan_stage_slots(&t->plan, c * g->pp + g->pp_rank);
    size_t bytes;
    int sends = zt_plan_ring_sends(&t->plan, slots, &bytes);
    zt_comm_staged_reserve_p2p(&g->pp_dev, sends, bytes);
}

static zt_status setup(zt_trainer *t, const char *argv0) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    t->shape = zt_config_shape(c);
    ZT_TRY(open_data(t, argv0));
    ZT_TRY(zt_plan_partition(&t->plan, &t->part));
    t->n_chunks = c->virtual_stages > 1 ? c->virtual_stages : 1;
    ZT_TRY(check_ring(t));
    t->unit_first = t->part.first[g->pp_rank];
    t->unit_last = t->part.first[(t->n_chunks - 1) * g->pp + g->pp_rank + 1];
    ZT_TRY(zt_schedule_build_chunks(&t->sched, t->plan.schedule, g->pp, g->pp_rank,
                                    c->grad_accum, t->n_chunks));
    init_slots(t);
    t->action_t = calloc(2 * (size_t)t->sched.n_actions, sizeof(double));
    ZT_ASSERT(t->action_t);
    size_t pad = (size_t)g->dp * ZT_ALIGN_ELEMS;
    zt_act_options opts = {t->plan.recompute, c->sequence_parallel,
                           zt_plan_stage_w_slots(&t->plan, t->n_slots)};
    if (t->n_chunks > 1) ZT_TRY(init_chunks(t, &opts));
    else
        ZT_TRY(zt_gpt2_init(&t->model, t->be, &t->shape, t->unit_first, t->unit_last, g->tp,
                            g->tp_rank, ZT_ALIGN_ELEMS, pad, c->micro_batch, c->seq,
                            t->plan.loss_chunk, t->n_slots, g->tp_data, c->param_dtype, &opts));
    // with --resume, zt_ckpt_resume fills the weights once the optimizer exists
    if (c->init_from[0] && !c->resume[0]) ZT_TRY(zt_init_load(&t->model, c->init_from));
    else zt_gpt2_init_random(&t->model, c->seed);
    size_t BT = (size_t)c->micro_batch * c->seq, NC = zt_trainer_act_count(t);
    t->inputs = zt_be_alloc(t->be, ZT_MEM_WORKSPACE, (size_t)t->n_slots * BT * sizeof(int32_t));
    t->targets = zt_be_alloc(t->be, ZT_MEM_WORKSPACE, (size_t)t->n_slots * BT * sizeof(int32_t));
    zt_dtype stream_dt = zt_gpt2_stream_dtype(&t->model);
    size_t msg = NC * zt_dtype_size(stream_dt); // one activation or gradient message
    t->recv_in = zt_be_alloc(t->be, ZT_MEM_COMM, (size_t)t->n_slots * msg);
    t->recv_dout = zt_be_alloc(t->be, ZT_MEM_COMM, (size_t)t->n_slots * msg);
    size_t dinputs = t->n_chunks > 1 ? (size_t)t->n_slots : 1; // interleaved: sends in flight
    t->dinput = zt_be_alloc(t->be, ZT_MEM_COMM, dinputs * msg);
    init_dp_sync(t);
    if (t->n_chunks > 1)
        zt_pipe_ring_init(&t->ring, g->pp_data, g->pp_rank, g->pp, NC, stream_dt, t->n_slots);
    else
        zt_pipe_comm_init(&t->pc, g->pp_data, g->pp_rank, g->pp, NC, stream_dt, t->n_slots,
                          c->grad_accum, t->recv_in, t->recv_dout, overlap_comm(t));
    if (c->sample_every > 0) // each stage decodes its own layers
        ZT_TRY(zt_train_sampler_init(&t->sampler, &t->model, g->tp_data, g->pp_data,
                                     t->train.tokens[0], g->rank == 0));
    return ZT_OK;
}

// What a checkpoint of this rank holds (src/checkpoint/ckpt.h).
static zt_ckpt_ctx ckpt_ctx(zt_trainer *t) {
    zt_ckpt_ctx x = {&t->ckpt_run, &t->grid, &t->part, &t->model, t->plan.is_8bit, &t->opt,
                     &t->opt8, t->sync.shard_lo, t->sync.shard_hi, t->step0, t->sample0,
                     t->eval_only ? NULL : &t->train};
    return x;
}

// A preemption signal reached a rank (SIGTERM, SIGUSR1: signals.h) and the checkpoint of
// `step` is written: the run ends there, without the end-of-run checks and --save, which a
// scheduler's grace period need not wait for.
static zt_status preempted(zt_trainer *t, int step) {
    t->preempted = 1;
    if (t->grid.rank == 0)
        printf("preempted: a stop signal arrived; saved %s/step-%d and stopped (exit %d). "
               "Resume with --resume %s\n", t->cfg->ckpt_dir, step, ZT_EXIT_PREEMPTED,
               t->cfg->ckpt_dir);
    fflush(stdout);
    return ZT_OK;
}

// The steps, with validation, samples and checkpoints between them; then the end-of-run
// report, the invariant checks and --save.
static zt_status run(zt_trainer *t) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    t->run_t0 = zt_mono_s();
    double longest = 0;
    // the default collective timeout (armed since the start, comm/comm_mpi_timeout.c): its
    // deadline follows the longest step (with its validation, sample and checkpoint), so no
    // healthy wait reaches it; it stays armed through the stop, the checks and --save
    zt_comm_mpi_watch(0);
    for (int step = t->step0; step < c->steps; step++) {
        zt_launcher_check();
        double t_step = zt_mono_s();
        zt_step_stats st;
        ZT_TRY(zt_trainer_step(t, step, &st));
        zt_trainer_report_step(t, step, &st);
        int last = step + 1 == c->steps;
        int val = t->has_val && ((step + 1) % c->val_every == 0 || last);
        int sample = c->sample_every > 0 && ((step + 1) % c->sample_every == 0 || last);
        int every = c->ckpt_every > 0 && (step + 1) % c->ckpt_every == 0;
        int ckpt = c->ckpt_dir[0] && (every || last || st.stop);
        // the step's parameter gather is left in flight into the next step's forward only:
        // validation, a sample, a checkpoint, the end and a stop read the weights first
        if (val || sample || ckpt || last || st.stop) zt_dp_sync_settle(&t->sync);
        if (val) {
            double vl = zt_trainer_evaluate(t);
            if (g->rank == 0) {
                printf("step %5d/%d | val loss %.4f\n", step + 1, c->steps, vl);
                if (t->log) fprintf(t->log, "{\"step\":%d,\"val_loss\":%.9g}\n", step + 1, vl);
                zt_trainer_tb_val(t, step + 1, vl);
            }
        }
        if (sample) zt_train_sample(&t->sampler, c->sample_len, c->seed, step + 1, g->rank == 0);
        if (ckpt) {
            zt_ckpt_ctx x = ckpt_ctx(t);
            uint64_t per_step = (uint64_t)c->micro_batch * c->grad_accum * g->dp;
            ZT_TRY(zt_ckpt_save(&x, step + 1,
                                t->sample0 + (uint64_t)(step + 1 - t->step0) * per_step));
        }
        if (st.stop && !last) return preempted(t, step + 1);
        if (zt_mono_s() - t_step > longest) zt_comm_mpi_watch(longest = zt_mono_s() - t_step);
    }
    if (g->rank == 0) printf("done: %d steps in %.1f s\n", c->steps, zt_mono_s() - t->run_t0);
    if (g->rank == 0 && c->profile && t->prof_n > 0) {
        zt_profile_print(stdout, &t->prof_steps, t->prof_n, t->prof_steps_s / t->prof_n,
                         omp_get_max_threads());
        zt_profile_print_ops(stdout, &t->prof_ops, t->prof_n, t->prof_steps_s / t->prof_n, 16);
    }
    zt_trainer_log_rank_memory(t);
    zt_status s = zt_trainer_check_invariants(t);
    if (s == ZT_OK && c->save[0]) s = zt_comm_agree(&g->world_comm, zt_trainer_save_model(t));
    return s;
}

// Before anything is allocated, the same on every rank (no agreement needed): the layout, the
// options, the backend (the CPU's sets the thread count the plan sizes scratch by), the plan.
static zt_status open_run(zt_trainer *t, zt_backend *backend, const zt_comm *world, int *dp) {
    const zt_config *cfg = t->cfg;
    ZT_TRY(zt_grid_layout(world->size, cfg->dp, cfg->pp, cfg->tp, dp));
    ZT_TRY(zt_config_validate(cfg));
    // A backend whose tensors the comm backends cannot move runs one rank.
    const zt_backend_caps *caps = zt_backend_caps_of(cfg->backend);
    if (caps && !caps->multi_rank && world->size > 1)
        return zt_errorf("--backend %s runs on one rank (%d ranks given): its tensors cannot "
                         "move between ranks; run one rank or --backend cpu",
                         cfg->backend, world->size);
    long long tokens = (long long)cfg->micro_batch * cfg->seq;
    if (caps && caps->max_tokens && tokens > caps->max_tokens)
        return zt_errorf("--backend %s takes at most %d tokens per micro-batch (--micro-batch "
                         "%d x --seq %d = %lld): lower --micro-batch and raise --grad-accum",
                         cfg->backend, caps->max_tokens, cfg->micro_batch, cfg->seq, tokens);
    // The GPU: --device, else the rank's place on its machine as the launcher says (every
    // rank on one machine when it does not: the world rank)
    int local_rank = zt_launcher_local_rank(NULL);
    zt_backend_options bo = {.device = cfg->device,
                             .local_rank = local_rank >= 0 ? local_rank : world->rank,
                             .threads = cfg->threads,
                             .tf32 = cfg->tf32,
                             .bf16_gemm = cfg->bf16_gemm,
                             .attention = cfg->cuda_attention};
    ZT_TRY(zt_backend_open(backend, cfg->backend, &bo));
    t->be = backend;
    return zt_plan_spec_from_config(&t->plan, cfg, *dp);
}

// This rank's optimizer range and state, and rank 0's log with its first record (the library
// and kernels the products run on, the version, the layout and every option). Agreed on every
// rank.
static zt_status init_optimizer_and_log(zt_trainer *t) {
    const zt_config *cfg = t->cfg;
    zt_status s = ZT_OK;
    size_t lo = t->sync.shard_lo, hi = t->sync.shard_hi;
    if (t->plan.is_8bit)
        s = zt_adamw8bit_init(&t->opt8, t->be, &t->model.layout, lo, hi, &t->plan.opt8,
                              t->model.dtype);
    else zt_adamw_init(&t->opt, t->be, lo, hi, t->model.dtype);
    // bf16: the masters start as the weights set so far (random or --init-from, in bf16);
    // a --resume then loads the checkpoint's fp32 values into them
    float *master = zt_trainer_master(t);
    if (s == ZT_OK && master)
        zt_master_from_params(t->be, master, t->model.params, lo, hi);
    if (s == ZT_OK && t->grid.rank == 0 && cfg->log[0]) {
        t->log = fopen(cfg->log, "w");
        if (!t->log) s = zt_errorf("cannot write the log file %s", cfg->log);
        else zt_trainer_write_log_header(t);
    }
    if (s == ZT_OK && t->grid.rank == 0 && cfg->tensorboard[0])
        s = zt_tb_open(&t->tb, cfg->tensorboard);
    if (s == ZT_OK && t->grid.rank == 0 && cfg->trace[0] && !(t->trace = fopen(cfg->trace, "w")))
        s = zt_errorf("cannot write the --trace file %s: choose a writable path", cfg->trace);
    return zt_comm_agree(&t->grid.world_comm, s);
}

// Closes rank 0's log; a write that failed on the way turns a run that succeeded into an error.
static zt_status close_log(zt_trainer *t, zt_status s) {
    zt_tb_close(&t->tb);
    if (!t->log) return s;
    zt_trainer_check_log_write(t);
    if (fclose(t->log) != 0 && !t->log_errno) t->log_errno = errno;
    if (t->log_errno && s == ZT_OK)
        s = zt_errorf("cannot write the log file %s: %s", t->cfg->log, strerror(t->log_errno));
    return s;
}

// Everything setup and the optimizer made, in reverse; accepts a half-built trainer.
static void free_trainer(zt_trainer *t) {
    if (t->be) {
        zt_be_free(t->be, t->inputs);
        zt_be_free(t->be, t->targets);
        zt_be_free(t->be, t->recv_in);
        zt_be_free(t->be, t->recv_dout);
        zt_be_free(t->be, t->dinput);
    }
    zt_train_sampler_free(&t->sampler); // before the model whose weights it borrows
    zt_schedule_free(&t->sched);
    free(t->action_t);
    if (t->trace) fclose(t->trace);
    zt_partition_free(&t->part);
    zt_adamw_free(&t->opt);
    zt_adamw8bit_free(&t->opt8);
    zt_dp_sync_free(&t->sync);
    zt_pipe_comm_free(&t->pc);
    zt_pipe_ring_free(&t->ring);
    for (int c = 0; t->chunks && c < t->n_chunks; c++) zt_gpt2_free(&t->chunks[c]);
    free(t->chunks);
    free(t->chunk_slots);
    free(t->slot_base);
    zt_gpt2_free(&t->model);
    zt_dataset_close(&t->train);
    zt_dataset_close(&t->val);
    zt_grid_free(&t->grid);
}

// The backend, the grid, the checks before any allocation (the start, for a training run;
// the memory, as a step of its own so that no rank has allocated yet when another reads the
// machine's available memory), then the data and the model. Agreed on every rank.
static zt_status open_trainer(zt_trainer *t, zt_backend *backend, const zt_comm *world,
                              const char *argv0, int start) {
    const zt_config *cfg = t->cfg;
    int dp = 0;
    ZT_TRY(open_run(t, backend, world, &dp));
    ZT_TRY(zt_grid_init(&t->grid, world, dp, cfg->pp, cfg->tp));
    // a device backend's tensors: NCCL, or MPI with host staging (before the profile wraps)
    ZT_TRY(zt_grid_open_data(&t->grid, backend, cfg->tensor_path == ZT_TENSOR_PATH_STAGED));
    reserve_ring_staging(t);
    if (cfg->profile) start_profile(t);
    // the launcher says which ranks share a machine; else all (the conservative guess)
    t->plan.ranks_per_node = zt_launcher_local_size(t->grid.world);
    zt_trainer_pick_loss_chunk(t); // before the fit check, which counts it
    const zt_comm *w = &t->grid.world_comm;
    if (!t->eval_only)
        ZT_TRY(zt_comm_agree(w, t->grid.rank == 0
                                    ? zt_trainer_check_start(cfg, start, &t->ckpt_lock)
                                    : ZT_OK));
    ZT_TRY(zt_comm_agree(w, zt_trainer_check_memory(t)));
    return zt_comm_agree(w, setup(t, argv0));
}

zt_status zt_train(const zt_config *cfg, const zt_comm *world, const char *argv0, int start,
                   int *preempted_out) {
    zt_trainer t;
    memset(&t, 0, sizeof t);
    t.cfg = cfg;
    t.ckpt_run = zt_ckpt_view_of(cfg);
    t.ckpt_lock = -1;
    zt_backend backend = {0};
    zt_status s = open_trainer(&t, &backend, world, argv0, start);
    if (s == ZT_OK) s = init_optimizer_and_log(&t);
    if (s == ZT_OK && cfg->resume[0]) {
        zt_ckpt_ctx x = ckpt_ctx(&t);
        s = zt_ckpt_resume(&x, cfg->resume, &t.step0, &t.sample0);
    }
    if (s == ZT_OK) {
        zt_trainer_print_start(&t);
        s = run(&t);
    }
    s = close_log(&t, s);
    *preempted_out = t.preempted;
    free_trainer(&t);
    zt_ckpt_unlock(t.ckpt_lock); // after the last save, and whatever ended the run
    zt_backend_close(&backend); // after everything allocated through it
    return s;
}

zt_status zt_evaluate(const zt_config *cfg, const zt_comm *world, const char *argv0,
                      zt_eval_result *out) {
    zt_trainer t;
    memset(&t, 0, sizeof t);
    memset(out, 0, sizeof *out);
    t.cfg = cfg;
    t.eval_only = 1;
    zt_backend backend = {0};
    zt_status s = open_trainer(&t, &backend, world, argv0, 0);
    out->step = -1;
    // no optimizer: a checkpoint gives its weights only (setup loaded --init-from's)
    if (s == ZT_OK && cfg->resume[0])
        s = zt_ckpt_load_weights(&t.grid, &t.model, cfg->resume, &out->step);
    if (s == ZT_OK) {
        out->loss = zt_trainer_evaluate(&t); // the validation pass training runs
        out->val_batches = t.val_batches;
        out->sequences = (uint64_t)t.val_batches * cfg->grad_accum * cfg->micro_batch *
                         t.grid.dp;
        out->dp = t.grid.dp;
        out->pp = t.grid.pp;
        out->tp = t.grid.tp;
        snprintf(out->data, sizeof out->data, "%s", t.val_path);
    }
    free_trainer(&t);
    zt_backend_close(&backend);
    return s;
}
