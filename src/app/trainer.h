// The trainer's state and its parts, shared by the files of the training run: train.c (set-up
// and the loop), train_step.c (one step's data path), train_schedule.c (the stage's
// schedule within it), train_report.c (what is printed and
// logged), train_checks.c (the checks before and after), train_export.c (--save).
#ifndef ZT_TRAINER_H
#define ZT_TRAINER_H

#include <stdio.h>

#include "adamw.h"
#include "adamw8bit.h"
#include "backend_profile.h"
#include "ckpt.h"
#include "comm_profile.h"
#include "config.h"
#include "data.h"
#include "dp_sync.h"
#include "gpt2.h"
#include "grid.h"
#include "partition.h"
#include "pipe_comm.h"
#include "pipe_ring.h"
#include "planner.h"
#include "profile.h"
#include "schedule.h"
#include "tb_events.h"
#include "train_sample.h"

typedef struct {
    const zt_config *cfg;
    zt_ckpt_run ckpt_run;      // the checkpoint's view of cfg (ckpt.h)
    int ckpt_lock;             // rank 0: the --ckpt-dir's lock, held for the run (-1: none)
    const zt_backend *be;      // where the model, its buffers and the optimizer live
    zt_grid grid;
    zt_model_shape shape;
    zt_partition part;
    int unit_first, unit_last; // this rank's stage
    zt_schedule sched;
    zt_gpt2 model;             // interleaved: the rank's flat buffers over its chunks
                               // (zt_gpt2_init_ranges), computing through `chunks`
    int n_chunks;              // V: chunks of layers on this rank (interleaved), else 1
    zt_gpt2 *chunks;           // (n_chunks) interleaved: each chunk's view over `model`
                               // (zt_gpt2_init_view); NULL otherwise
    int *chunk_slots;          // (n_chunks) each chunk's activation slots (interleaved:
                               // zt_schedule_chunk_slots; else n_slots), and
    int *slot_base;            // (n_chunks) their prefix sums: the trainer's buffers hold
                               // chunk c's slot j at index slot_base[c] + j
    zt_plan_spec plan;         // the run as the planner sees it: layout, schedule, optimizer
    zt_adamw opt;              // fp32 state (--optim adamw)
    zt_adamw8bit opt8;         // 8-bit state (--optim adamw8bit)
    int eval_only;             // `zerotrain eval`: no training data, optimizer or log
    zt_dataset train, val;
    char val_path[ZT_PATH_MAX];
    int has_val;
    int val_batches;           // global batches a validation reads: --val-batches, or when 0
                               // what the validation file holds (at most 8, at least 1)
    zt_dp_sync sync;           // ZeRO: this rank's optimizer range (sync.shard_lo, shard_hi),
                               // the gradient's reduction and the parameters' gather
    int n_slots;               // micro-batches this stage holds at once (all chunks' slots)
    // device memory of `be`:
    int32_t *inputs, *targets; // (n_slots, B*T) tokens of each held micro-batch
    void *recv_in;             // (n_slots, N*C) activations received from the stage before,
                               // of the model's stream dtype (zt_gpt2_stream_dtype)
    void *recv_dout;           // (n_slots, N*C) their gradients received from the stage after
    void *dinput;              // (N*C) gradient of this stage's input, to send back;
                               // interleaved (n_slots, N*C): each in flight until reused;
                               // both of the stream dtype too
    double compute_s, sched_s; // time in forward/backward, and in the whole schedule, last step
    double fwd_s, bwd_s, wgt_s; // of compute_s: in the forwards, the backwards (or input-
                                // gradient passes) and the weight-gradient passes, last step
    double *action_t;          // (sched.n_actions, 2) each action's start and end (zt_mono_s),
                               // last step: the --trace timeline
    FILE *trace;               // rank 0, --trace: the timeline's file
    double pp_comm_s;          // of the schedule, in pipeline transfers, last step
    zt_pipe_comm pc;           // the stage's pipeline transfers (blocking or not inside)
    zt_pipe_ring ring;         // interleaved: the ring's transfers instead (pipe_ring.h)
    int step0;                 // completed steps at start (--resume), and
    uint64_t sample0;          // training samples consumed by then
    zt_train_sampler sampler;  // --sample-every
    int preempted;             // stopped by a preemption signal, after a checkpoint
    double run_t0;             // when the loop began (zt_mono_s)
    double first_step_s;       // rank 0: seconds from run_t0 to the end of the run's first step
    FILE *log;
    zt_tb_writer tb;           // rank 0, --tensorboard: tb.f NULL when not writing
    int log_errno;             // rank 0: the errno of a failed log write (0 = none)
    char last_mem[256];        // rank 0: the memory figures last printed
    // --profile: `be` and the grid's tensor paths are timing decorators over the real ones
    zt_profile prof;           // phase totals since the start
    zt_profile prof_steps;     // summed over the timed steps (all but the run's first)
    double prof_steps_s;       // their wall time
    int prof_n;                // their number
    zt_op_record prof_ops;     // the backend's ops over the same steps (prof_be_st.by_op)
    zt_backend prof_be;
    zt_backend_profile_state prof_be_st;
    zt_comm prof_comm[4];
    zt_comm_profile_state prof_comm_st[4];
} zt_trainer;


// What one step gave, for the report.
typedef struct {
    double loss, norm; // mean training loss, global gradient norm (before clipping)
    float lr;
    double ms;         // wall time of the step
    double grad_comm_ms; // of it, in the dp gradient reduction's calls (blocking: the whole
                         // reduction; overlapped: starting, polling and waiting for buckets)
    double param_comm_ms; // in the ZeRO-1 parameter all-gather's calls since the last step
                          // (blocking: the all-gather; overlapped: the last step's pieces
                          // waited for and polled in this forward or between the steps,
                          // and the start of this step's)
    int param_overlapped; // pieces of the last step's gather completed inside this step's
                          // first forward (0 on the blocking path)
    double pp_comm_ms;    // in the pipeline's sends and receives (blocking: the calls;
                          // nonblocking: posting, starting and waiting)
    int pp_async;         // nonblocking pipeline sends and receives started (0: blocking)
    zt_profile phases; // --profile: the step's phase times
    int stop;          // a preemption signal reached some rank: save and stop after it
} zt_step_stats;

static inline int zt_trainer_first_stage(const zt_trainer *t) { return t->grid.pp_rank == 0; }
static inline int zt_trainer_last_stage(const zt_trainer *t) {
    return t->grid.pp_rank == t->grid.pp - 1;
}

// Elements of one micro-batch's activations on this rank (Nr * C, Nr = zt_gpt2_rows: N, or
// N/tp with --sequence-parallel): what the pipeline moves.
static inline size_t zt_trainer_act_count(const zt_trainer *t) {
    const zt_config *c = t->cfg;
    return zt_gpt2_rows(c->micro_batch, c->seq, t->grid.tp, c->sequence_parallel) *
           (size_t)t->shape.n_embd;
}
// Slot `slot` of a buffer of zt_trainer_act_count values a slot of the model's stream dtype
// (bf16 under bf16): recv_in, recv_dout, an interleaved run's dinput.
static inline void *zt_trainer_slot_of(const zt_trainer *t, void *buf, int slot) {
    size_t es = zt_dtype_size(zt_gpt2_stream_dtype(&t->model));
    return (char *)buf + (size_t)slot * zt_trainer_act_count(t) * es;
}
// Slot `slot` of recv_in: the activations received for it.
static inline void *zt_trainer_recv_in(const zt_trainer *t, int slot) {
    return zt_trainer_slot_of(t, t->recv_in, slot);
}
// The model that computes chunk c (the stage's model itself but under interleaved).
static inline zt_gpt2 *zt_trainer_chunk(zt_trainer *t, int c) {
    return t->chunks ? &t->chunks[c] : &t->model;
}
// The model whose compute settings (loss chunk, recomputation, sequence parallelism) the
// report shows: the stage's, or under interleaved its first chunk's view (the rank's model
// there only holds the buffers).
static inline const zt_gpt2 *zt_trainer_compute_model(const zt_trainer *t) {
    return t->chunks ? &t->chunks[0] : &t->model;
}
// The trainer's buffer index of micro-batch k of chunk c (its activation slot in the
// chunk's model: k mod chunk_slots[c]).
static inline int zt_trainer_slot(const zt_trainer *t, int c, int k) {
    return t->slot_base[c] + k % t->chunk_slots[c];
}
// Tokens in one global batch (micro-batch x seq x grad-accum x dp): the loss's divisor.
static inline double zt_trainer_global_tokens(const zt_trainer *t) {
    return (double)t->cfg->micro_batch * t->cfg->seq * t->cfg->grad_accum * t->grid.dp;
}
// train_schedule.c. Micro-batch k of `step` (of `accum` per dp rank) from ds into slot `slot`.
void zt_trainer_read_batch(zt_trainer *t, zt_dataset *ds, uint64_t step, int k, int accum,
                           int slot);
// Runs this stage's schedule for one step; returns its loss sum (non-zero on the last stage).
double zt_trainer_run_schedule(zt_trainer *t, uint64_t step, float loss_scale);

// The fp32 master weights of this rank's optimizer range under bf16, else NULL.
static inline float *zt_trainer_master(const zt_trainer *t) {
    return t->plan.is_8bit ? t->opt8.master : t->opt.master;
}
// train_step.c. One training step on every rank: forward and backward over the micro-batches, the
// reductions, the clip and the update. ZT_ERR (the same on every rank) when the loss or a
// gradient is not finite, or rank 0 could not write the log.
zt_status zt_trainer_step(zt_trainer *t, int step, zt_step_stats *out);
// Mean validation loss over --val-batches global batches (the same samples in every layout).
double zt_trainer_evaluate(zt_trainer *t);

// train_pipeline_report.c. Every rank joins (they gather): the step's pipeline figures as
// log-record fields into `json` (cap bytes, "" but on rank 0): each stage's idle time
// ("pp_idle_ms": the schedule's wall time less its forwards and backwards) and the
// simulator's prediction from the step's measured mean forward and backward per stage
// ("pp_idle_pred_ms"); on the run's last step, the --trace timeline. Nothing at pp 1.
void zt_trainer_pipeline_figures(zt_trainer *t, int step, char *json, size_t cap);

// train_report.c. Every rank joins each (they gather).
void zt_trainer_print_start(zt_trainer *t);
void zt_trainer_report_step(zt_trainer *t, int step, const zt_step_stats *st);
void zt_trainer_log_rank_memory(zt_trainer *t);
// Rank 0: the log's first record (the backend, version, layout and every option).
void zt_trainer_write_log_header(zt_trainer *t);
// Rank 0, --tensorboard: the validation loss after `step` (1-based) as "val/loss".
void zt_trainer_tb_val(zt_trainer *t, int step, double val_loss);

// Rank 0: notes a failed write of the log (the next step's all-reduce tells every rank).
void zt_trainer_check_log_write(zt_trainer *t);

// train_checks.c. Before anything is allocated: a run predicted not to fit, and (rank 0) a
// resume with nothing to train, the --ckpt-dir's lock (*lock, released by zt_ckpt_unlock)
// and a --ckpt-dir holding newer checkpoints (`start`: the step the run begins at).
zt_status zt_trainer_check_memory(const zt_trainer *t);

// train_loss_chunk.c. On a GPU with --loss-chunk 0 (automatic): t->plan.loss_chunk as large
// as 1/16 of the smallest free device memory of the world's ranks allows (the model takes
// it from the plan, so the fit check counts it). Elsewhere it leaves the plan as configured.
// Collective over the world.
void zt_trainer_pick_loss_chunk(zt_trainer *t);
// That chunk for plan p (its micro-batch, sequence, vocabulary slice and dtype) on a GPU with
// free_bytes of free memory (pure: `zerotrain plan --ops-json` sizes a step's loss by it).
int zt_trainer_device_loss_chunk(const zt_plan_spec *p, double free_bytes);
zt_status zt_trainer_check_start(const zt_config *c, int start, int *lock);
// After the last step: the copies that must be bit-identical are, and every rank issued
// the same collectives. Collective; agreed on every rank.
zt_status zt_trainer_check_invariants(zt_trainer *t);

// train_export.c. --save: rank 0 assembles every stage's and tp rank's weights into one
// Hugging Face directory. Collective over the dp 0 ranks.
zt_status zt_trainer_save_model(zt_trainer *t);

#endif
