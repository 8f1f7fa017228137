// One training step's data path (docs/design.md §2), the learning-rate schedule and the
// validation pass: each dp rank reads its part of the global batch; the pipeline schedule
// runs forward/backward over its micro-batches on this rank's stage, moving activations and
// their gradients between neighbour stages.
#include "trainer.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "grad_norm.h"
#include "signals.h"
#include "train.h"

float zt_lr_at(const zt_config *cfg, int step) {
    if (step < cfg->warmup) return cfg->lr * (float)(step + 1) / (float)cfg->warmup;
    if (strcmp(cfg->lr_schedule, "constant") == 0) return cfg->lr;
    int span = cfg->steps - cfg->warmup;
    float ratio = span > 1 ? (float)(step - cfg->warmup) / (float)(span - 1) : 1.0f;
    float coeff = 0.5f * (1.0f + cosf(3.14159265358979f * ratio));
    float lr_min = cfg->lr * cfg->lr_final_frac;
    return lr_min + coeff * (cfg->lr - lr_min);
}

double zt_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}


static size_t act_count(const zt_trainer *t) {
    return (size_t)t->cfg->micro_batch * t->cfg->seq * t->shape.n_embd;
}


// Reads micro-batch `k` of step `step` for this dp rank into slot `slot`: sample indices
// are global (step * G + (dp_rank * grad_accum + k) * B + b), so every layout sees the
// same batch. Every stage reads (it is cheap); the first uses the inputs, the last the
// targets.
static void read_batch(zt_trainer *t, zt_dataset *ds, uint64_t step, int k, int accum, int slot) {
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

// --overlap-comm on: the model's announcement that a tail of the gradient is final, and its
// request for a unit's weights while the parameter gather may be in flight.
static void grad_ready(void *ctx, size_t from) { zt_grad_reduce_ready(ctx, from); }
static void params_need(void *ctx, size_t lo, size_t hi) { zt_param_gather_need(ctx, lo, hi); }

// The index of the stage's last backward: once it runs, every other micro-batch's gradient
// has been added, so what it finishes is final. Every forward comes before it.
static int last_backward(const zt_schedule *s) {
    int last = -1;
    for (int i = 0; i < s->n_actions; i++)
        if (s->actions[i].op == ZT_SCHED_OP_BWD) last = i;
    for (int i = last + 1; i < s->n_actions; i++)
        ZT_ASSERTF(s->actions[i].op != ZT_SCHED_OP_FWD, "a forward after the last backward");
    return last;
}

// The index of the stage's first forward: the first to read the weights in a step.
static int first_forward(const zt_schedule *s) {
    for (int i = 0; i < s->n_actions; i++)
        if (s->actions[i].op == ZT_SCHED_OP_FWD) return i;
    return -1;
}

// The schedule's transfer actions, blocking: sends wait for their receiver, so the pairs of
// 1F1B's steady state are combined exchanges (docs/design.md, "Pipeline").
static void transfer_blocking(zt_trainer *t, const zt_sched_action *a) {
    const zt_comm *pp = t->grid.pp_data;
    int prev = t->grid.pp_rank - 1, next = t->grid.pp_rank + 1;
    size_t NC = act_count(t);
    int slot = a->micro % t->n_slots, rslot = a->recv_micro < 0 ? 0 : a->recv_micro % t->n_slots;
    switch (a->op) {
    case ZT_SCHED_OP_RECV_FWD:
        zt_comm_recv(pp, t->recv_in + slot * NC, NC, ZT_F32, prev, 0, NULL);
        break;
    case ZT_SCHED_OP_SEND_FWD:
        zt_gpt2_use_slot(&t->model, slot);
        zt_comm_send(pp, zt_gpt2_output(&t->model), NC, ZT_F32, next, 0, NULL);
        break;
    case ZT_SCHED_OP_RECV_BWD:
        zt_comm_recv(pp, t->recv_dout + slot * NC, NC, ZT_F32, next, 0, NULL);
        break;
    case ZT_SCHED_OP_SEND_BWD:
        zt_comm_send(pp, t->dinput, NC, ZT_F32, prev, 0, NULL);
        break;
    case ZT_SCHED_OP_SEND_FWD_RECV_BWD:
        zt_gpt2_use_slot(&t->model, slot);
        zt_comm_send_recv(pp, zt_gpt2_output(&t->model), NC, next, t->recv_dout + rslot * NC, NC,
                          next, ZT_F32, 0, NULL);
        break;
    case ZT_SCHED_OP_SEND_BWD_RECV_FWD:
        zt_comm_send_recv(pp, t->dinput, NC, prev, t->recv_in + rslot * NC, NC, prev, ZT_F32, 0,
                          NULL);
        break;
    default: ZT_ASSERTF(0, "unknown schedule op %d", (int)a->op);
    }
}

// The same actions nonblocking (pipe_comm.h): a send starts and the stage moves on; a
// receive was posted as soon as its buffer was free, and the forward or backward that reads
// it waits for it.
static void transfer_async(zt_trainer *t, const zt_sched_action *a) {
    zt_pipe_comm *pc = &t->pc;
    switch (a->op) {
    case ZT_SCHED_OP_RECV_FWD: zt_pipe_comm_check_posted(pc, a->micro, 0); break;
    case ZT_SCHED_OP_RECV_BWD: zt_pipe_comm_check_posted(pc, a->micro, 1); break;
    case ZT_SCHED_OP_SEND_FWD:
    case ZT_SCHED_OP_SEND_FWD_RECV_BWD:
        zt_gpt2_use_slot(&t->model, a->micro % t->n_slots);
        zt_pipe_comm_send_fwd(pc, a->micro, zt_gpt2_output(&t->model));
        if (a->recv_micro >= 0) zt_pipe_comm_check_posted(pc, a->recv_micro, 1);
        break;
    case ZT_SCHED_OP_SEND_BWD:
    case ZT_SCHED_OP_SEND_BWD_RECV_FWD:
        zt_pipe_comm_send_bwd(pc, t->dinput);
        if (a->recv_micro >= 0) zt_pipe_comm_check_posted(pc, a->recv_micro, 0);
        break;
    default: ZT_ASSERTF(0, "unknown schedule op %d", (int)a->op);
    }
}

// Micro-batch k's forward in its slot. In the step's first forward (`first`) the model asks
// for each unit's weights as it reaches them while the last step's parameter gather may
// still be in flight (param_gather.h); that wait is communication, not compute.
static double forward(zt_trainer *t, uint64_t step, int k, float loss_scale, int first) {
    const zt_config *c = t->cfg;
    zt_gpt2 *m = &t->model;
    size_t NC = act_count(t), BT = (size_t)c->micro_batch * c->seq;
    int slot = k % t->n_slots;
    if (t->overlap_pipe) zt_pipe_comm_before_fwd(&t->pc, k);
    double t0 = zt_now_s(), g0 = t->pg.comm_s;
    zt_gpt2_use_slot(m, slot);
    read_batch(t, &t->train, step, k, c->grad_accum, slot);
    if (first && t->overlap_gather) {
        m->params_need = params_need;
        m->params_need_ctx = &t->pg;
    }
    double loss = zt_gpt2_forward(m, t->inputs + slot * BT, t->recv_in + slot * NC,
                                  t->targets + slot * BT, 1, loss_scale);
    m->params_need = NULL;
    t->compute_s += zt_now_s() - t0 - (t->pg.comm_s - g0);
    if (t->overlap_pipe) zt_pipe_comm_after_fwd(&t->pc, k);
    return loss;
}

// Micro-batch k's backward. In the step's last one (`last`) the model announces final
// gradient tails and the dp reduction starts buckets (grad_reduce.h).
static void backward(zt_trainer *t, int k, int last) {
    const zt_config *c = t->cfg;
    zt_gpt2 *m = &t->model;
    size_t NC = act_count(t), BT = (size_t)c->micro_batch * c->seq;
    int slot = k % t->n_slots;
    if (t->overlap_pipe) zt_pipe_comm_before_bwd(&t->pc, k);
    double t0 = zt_now_s();
    zt_gpt2_use_slot(m, slot);
    if (last && t->overlap) {
        m->grad_ready = grad_ready;
        m->grad_ready_ctx = &t->gr;
    }
    zt_gpt2_backward(m, t->inputs + slot * BT, t->recv_dout + slot * NC, t->dinput);
    m->grad_ready = NULL;
    t->compute_s += zt_now_s() - t0;
    if (t->overlap_pipe) zt_pipe_comm_after_bwd(&t->pc, k);
}

// Runs this stage's schedule for one step (forward and backward of every micro-batch,
// gradients added into the flat grad buffer). Returns this stage's loss sum (non-zero
// on the last stage only). With --overlap-comm on, the last backward starts the dp
// reduction's buckets as it goes (grad_reduce.h), the first forward waits for the parameter
// gather piece by piece (param_gather.h), and the transfers do not block (pipe_comm.h).
static double run_schedule(zt_trainer *t, uint64_t step, float loss_scale) {
    double loss = 0.0, start = zt_now_s();
    int first_fwd = first_forward(&t->sched), last_bwd = last_backward(&t->sched);
    t->compute_s = 0.0;
    t->pp_comm_s = 0.0;
    if (t->overlap_pipe) zt_pipe_comm_begin(&t->pc);
    for (int i = 0; i < t->sched.n_actions; i++) {
        const zt_sched_action *a = &t->sched.actions[i];
        double t0 = zt_now_s();
        if (a->op == ZT_SCHED_OP_FWD) loss += forward(t, step, a->micro, loss_scale, i == first_fwd);
        else if (a->op == ZT_SCHED_OP_BWD) backward(t, a->micro, i == last_bwd);
        else if (t->overlap_pipe) transfer_async(t, a);
        else {
            transfer_blocking(t, a);
            t->pp_comm_s += zt_now_s() - t0;
        }
    }
    if (t->overlap_pipe) {
        zt_pipe_comm_end(&t->pc);
        t->pp_comm_s = t->pc.comm_s;
    }
    t->sched_s = zt_now_s() - start;
    return loss;
}

// Mean validation loss over the first val_batches global batches of the validation
// file (the same samples whatever the layout), through the pipeline stage by stage.
double zt_trainer_evaluate(zt_trainer *t) {
    const zt_config *c = t->cfg;
    const zt_comm *pp = t->grid.pp_data;
    zt_gpt2 *m = &t->model;
    size_t NC = act_count(t);
    double sum = 0.0;
    zt_gpt2_use_slot(m, 0);
    for (int vb = 0; vb < c->val_batches; vb++)
        for (int k = 0; k < c->grad_accum; k++) {
            read_batch(t, &t->val, (uint64_t)vb, k, c->grad_accum, 0);
            if (!zt_trainer_first_stage(t))
                zt_comm_recv(pp, t->recv_in, NC, ZT_F32, t->grid.pp_rank - 1, 0, NULL);
            double part = zt_gpt2_forward(m, t->inputs, t->recv_in, t->targets, 0, 0.0f);
            if (t->grid.tp_rank == 0) sum += part; // every tp rank has the same losses
            if (!zt_trainer_last_stage(t))
                zt_comm_send(pp, zt_gpt2_output(m), NC, ZT_F32, t->grid.pp_rank + 1, 0, NULL);
        }
    double total;
    zt_comm_all_reduce(&t->grid.world_comm, &sum, &total, 1, ZT_F64, ZT_REDUCE_SUM, NULL);
    return total / ((double)c->val_batches * c->grad_accum * c->micro_batch * c->seq * t->grid.dp);
}

// One step (docs/design.md §2): the schedule's forwards and backwards add into the flat
// gradient buffer; the tied embedding's two copies are summed; dp reduces (all-reduce under
// --zero 0, reduce-scatter under --zero 1); one world all-reduce gives the norm, the loss and
// the non-finite count; the optimizer updates this rank's range; --zero 1 all-gathers
// (overlapped: starts the gather, which the next step's first forward waits for).
zt_status zt_trainer_step(zt_trainer *t, int step, zt_step_stats *out) {
    const zt_config *c = t->cfg;
    zt_grid *g = &t->grid;
    zt_gpt2 *m = &t->model;
    size_t total = m->layout.numel, elem = zt_gpt2_elem_size(m);
    zt_dtype dt = m->dtype; // of the flat buffers: bf16 gradients reduce in bf16 (design.md)
    char *grads = m->grads, *params = m->params;
    double global_tokens = (double)c->micro_batch * c->seq * c->grad_accum * g->dp;
    int is_zero = c->zero == 1;
    double t0 = zt_now_s();
    zt_profile prof0 = t->prof;
    t->be->ops->memset(t->be, m->grads, 0, total * elem);
    if (t->overlap) zt_grad_reduce_begin(&t->gr);
    double loss_sum = run_schedule(t, (uint64_t)step, (float)(1.0 / global_tokens));
    // the pieces no forward asked for (the buffer's padding), before the update writes
    if (t->overlap_gather) zt_param_gather_finish(&t->pg);
    // the tied embedding: sum the first and last stage's gradient copies over the
    // whole tensor, before the dp reduction, so both stages then shard and update
    // identical values (stages in the middle issue the same call with nothing in it).
    // Overlapped, no bucket has touched it yet: the backward never announces the front of
    // the buffer (the embedding), which zt_grad_reduce_finish starts after this.
    zt_comm_all_reduce(g->embed_data, grads, grads, g->in_embed_group ? m->layout.tied_numel : 0,
                       dt, ZT_REDUCE_SUM, NULL);
    // sum gradients over dp: the loss scale already divides by the global tokens
    double tc = zt_now_s();
    if (t->overlap)
        zt_grad_reduce_finish(&t->gr);
    else if (is_zero)
        zt_comm_reduce_scatter(g->dp_data, grads, grads + t->shard_lo * elem, total, dt,
                               ZT_REDUCE_SUM, NULL);
    else
        zt_comm_all_reduce(g->dp_data, grads, grads, total, dt, ZT_REDUCE_SUM, NULL);
    out->grad_comm_ms = 1000.0 * (t->overlap ? t->gr.comm_s : zt_now_s() - tc);
    // one world all-reduce: [sum of squares, non-finite count, loss sum, log failed, stop
    // requested]; with --zero 0 every dp rank holds the whole gradient, so only dp rank 0
    // counts it
    double v[5] = {0, 0, 0, t->log_errno != 0, zt_signals_stop_requested()}, r[5];
    if (is_zero || g->dp_rank == 0)
        zt_grad_sumsq(t->be, v, grads, dt, &m->layout, t->shard_lo, t->shard_hi,
                      g->tp_rank == 0, g->pp_rank == 0);
    v[2] = g->tp_rank == 0 ? loss_sum : 0.0; // every tp rank has the same losses
    zt_comm_all_reduce(&g->world_comm, v, r, 5, ZT_F64, ZT_REDUCE_SUM, NULL);
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
    zt_adamw_config oc = {c->lr, c->beta1, c->beta2, c->eps, c->weight_decay};
    float lr = zt_lr_at(c, step);
    float clip = zt_clip_scale(norm, c->grad_clip);
    if (t->plan.is_8bit) zt_adamw8bit_step(&t->opt8, m->params, m->grads, &m->layout, &oc, lr, clip);
    else zt_adamw_step(&t->opt, m->params, m->grads, &m->layout, &oc, lr, clip);
    double tg = zt_now_s();
    if (t->overlap_gather) zt_param_gather_start(&t->pg); // waited for in the next forward
    else if (is_zero)
        zt_comm_all_gather(g->dp_data, params + t->shard_lo * elem, params, total, dt, NULL);
    out->param_overlapped = 0;
    out->param_comm_ms = 1000.0 * (t->overlap_gather
                                       ? zt_param_gather_take(&t->pg, &out->param_overlapped)
                                       : zt_now_s() - tg);
    out->pp_comm_ms = 1000.0 * t->pp_comm_s;
    out->pp_async = t->overlap_pipe ? t->pc.transfers : 0;
    t->be->ops->sync(t->be); // the step's work is done (and its errors seen) here
    out->stop = r[4] > 0; // a rank was asked to stop: every rank stops after this step
    out->loss = loss;
    out->norm = norm;
    out->lr = lr;
    out->ms = (zt_now_s() - t0) * 1000.0;
    zt_profile_diff(&out->phases, &t->prof, &prof0);
    return ZT_OK;
}
