// One training step's data path (docs/design.md §2), the learning-rate schedule and the
// validation pass: the stage's schedule (train_schedule.c) runs forward/backward over the
// micro-batches; the data-parallel synchronizer (dp_sync.h) reduces; then the norm, the
// update and the synchronizer's gather.
#include "trainer.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "grad_norm.h"
#include "signals.h"
#include "train.h"

float zt_lr_at(const zt_config *cfg, int step) {
    if (step < cfg->warmup) return cfg->lr * (float)(step + 1) / (float)cfg->warmup;
    if (cfg->lr_schedule == ZT_LR_CONSTANT) return cfg->lr;
    int span = cfg->steps - cfg->warmup;
    float ratio = span > 1 ? (float)(step - cfg->warmup) / (float)(span - 1) : 1.0f;
    float coeff = 0.5f * (1.0f + cosf(3.14159265358979f * ratio));
    float lr_min = cfg->lr * cfg->lr_final_frac;
    return lr_min + coeff * (cfg->lr - lr_min);
}

// Mean validation loss over the first t->val_batches global batches of the validation
// file (the same samples whatever the layout), through the pipeline stage by stage.
// The mean validation loss from every rank's loss sum.
static double finish_evaluation(zt_trainer *t, double sum) {
    const zt_config *c = t->cfg;
    double total;
    zt_comm_all_reduce(&t->grid.world_comm, &sum, &total, 1, ZT_F64, ZT_REDUCE_SUM, NULL);
    return total / ((double)t->val_batches * c->grad_accum * c->micro_batch * c->seq * t->grid.dp);
}

// Interleaved: micro-batch k of validation batch vb through the virtual stages in order, this
// rank computing its chunks (v mod pp == pp_rank) between a blocking receive from the ring's
// previous rank and a send to the next: one chain along the virtual stages, so no two ranks
// wait on each other. Returns this rank's loss sum (the head's chunk; else 0).
static double evaluate_chunks(zt_trainer *t, int vb, int k) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    size_t NC = zt_trainer_act_count(t), BT = (size_t)c->micro_batch * c->seq;
    int n_virtual = g->pp * t->n_chunks;
    double sum = 0.0;
    for (int v = g->pp_rank; v < n_virtual; v += g->pp) {
        int ch = v / g->pp, s = zt_trainer_slot(t, ch, 0);
        zt_gpt2 *m = zt_trainer_chunk(t, ch);
        zt_gpt2_use_slot(m, 0);
        zt_trainer_read_batch(t, &t->val, (uint64_t)vb, k, c->grad_accum, s);
        if (v > 0)
            zt_comm_recv(g->pp_data, zt_trainer_recv_in(t, s), NC, zt_gpt2_stream_dtype(m),
                         (v - 1) % g->pp, 0, NULL);
        sum += zt_gpt2_forward(m, t->inputs + s * BT, zt_trainer_recv_in(t, s),
                               t->targets + s * BT, 0, 0.0f);
        if (v + 1 < n_virtual)
            zt_comm_send(g->pp_data, zt_gpt2_output(m), NC, zt_gpt2_stream_dtype(m),
                         (v + 1) % g->pp, 0, NULL);
    }
    return sum;
}

double zt_trainer_evaluate(zt_trainer *t) {
    const zt_config *c = t->cfg;
    const zt_comm *pp = t->grid.pp_data;
    zt_gpt2 *m = &t->model;
    size_t NC = zt_trainer_act_count(t);
    double sum = 0.0;
    if (t->chunks) {
        for (int vb = 0; vb < t->val_batches; vb++)
            for (int k = 0; k < c->grad_accum; k++) {
                double part = evaluate_chunks(t, vb, k);
                if (t->grid.tp_rank == 0) sum += part; // every tp rank has the same losses
            }
        return finish_evaluation(t, sum);
    }
    zt_gpt2_use_slot(m, 0);
    for (int vb = 0; vb < t->val_batches; vb++)
        for (int k = 0; k < c->grad_accum; k++) {
            zt_trainer_read_batch(t, &t->val, (uint64_t)vb, k, c->grad_accum, 0);
            if (!zt_trainer_first_stage(t))
                zt_comm_recv(pp, t->recv_in, NC, zt_gpt2_stream_dtype(m), t->grid.pp_rank - 1, 0,
                             NULL);
            double part = zt_gpt2_forward(m, t->inputs, t->recv_in, t->targets, 0, 0.0f);
            if (t->grid.tp_rank == 0) sum += part; // every tp rank has the same losses
            if (!zt_trainer_last_stage(t))
                zt_comm_send(pp, zt_gpt2_output(m), NC, zt_gpt2_stream_dtype(m),
                             t->grid.pp_rank + 1, 0, NULL);
        }
    return finish_evaluation(t, sum);
}

// The global gradient's squared norm and non-finite count into v[0], v[1]: each element
// counted once in the world (the synchronizer says which part this rank counts; tp-replicated
// tensors on tp rank 0, the tied embedding on the first stage).
static void grad_sumsq(zt_trainer *t, double v[2]) {
    const zt_gpt2 *m = &t->model;
    size_t lo, hi;
    if (zt_dp_sync_norm_range(&t->sync, &lo, &hi))
        zt_grad_sumsq(t->be, v, m->grads, m->dtype, &m->layout, lo, hi, t->grid.tp_rank == 0,
                      t->grid.pp_rank == 0);
}

// One world all-reduce of [sum of squares, non-finite count, loss sum, log failed, stop
// requested] gives the step's loss and gradient norm (out->loss, out->norm) and out->stop.
// ZT_ERR, the same on every rank, when rank 0's log failed or a value is not finite.
static zt_status world_figures(zt_trainer *t, int step, double loss_sum, zt_step_stats *out) {
    const zt_config *c = t->cfg;
    const zt_grid *g = &t->grid;
    double v[5] = {0, 0, 0, t->log_errno != 0, zt_signals_stop_requested()}, r[5];
    grad_sumsq(t, v);
    v[2] = g->tp_rank == 0 ? loss_sum : 0.0; // every tp rank has the same losses
    zt_comm_all_reduce(&g->world_comm, v, r, 5, ZT_F64, ZT_REDUCE_SUM, NULL);
    if (r[3] > 0)
        return zt_errorf("cannot write the log file %s: %s; the run stopped at step %d",
                         c->log, strerror(t->log_errno ? t->log_errno : EIO), step + 1);
    out->loss = r[2] / zt_trainer_global_tokens(t);
    out->norm = sqrt(r[0]);
    out->stop = r[4] > 0; // a rank was asked to stop: every rank stops after this step
    if (!isfinite(out->loss) || r[1] > 0)
        return zt_errorf("the loss became %s at step %d (%.0f non-finite gradient values): "
                         "training diverged; lower --lr (now %g), raise --warmup or check "
                         "--grad-clip. Nothing was updated at this step.",
                         isfinite(out->loss) ? "finite but gradients did not" : "NaN/Inf",
                         step + 1, r[1], c->lr);
    return ZT_OK;
}

// The optimizer's update of this rank's range, clipped to --grad-clip by the global norm.
static float update(zt_trainer *t, int step, double norm) {
    const zt_config *c = t->cfg;
    zt_gpt2 *m = &t->model;
    zt_adamw_config oc = {c->lr, c->beta1, c->beta2, c->eps, c->weight_decay};
    float lr = zt_lr_at(c, step);
    float clip = zt_clip_scale(norm, c->grad_clip);
    if (t->plan.is_8bit) zt_adamw8bit_step(&t->opt8, m->params, m->grads, &m->layout, &oc, lr, clip);
    else zt_adamw_step(&t->opt, m->params, m->grads, &m->layout, &oc, lr, clip);
    return lr;
}

// One step (docs/design.md §2): the schedule's forwards and backwards add into the flat
// gradient buffer; the synchronizer makes it the global gradient (dp_sync.h); one world
// all-reduce gives the norm and the loss; the optimizer updates this rank's range; the
// synchronizer gathers the parameters.
zt_status zt_trainer_step(zt_trainer *t, int step, zt_step_stats *out) {
    zt_gpt2 *m = &t->model;
    double t0 = zt_mono_s();
    zt_profile prof0 = t->prof;
    // --profile counts the ops of the steps its table counts (all but the run's first)
    if (t->cfg->profile) t->prof_be_st.by_op = step > t->step0 ? &t->prof_ops : NULL;
    zt_gpt2_zero_grads(m);
    double loss_sum = zt_trainer_run_schedule(t, (uint64_t)step,
                                              (float)(1.0 / zt_trainer_global_tokens(t)));
    zt_dp_sync_reduce(&t->sync);
    ZT_TRY(world_figures(t, step, loss_sum, out));
    out->lr = update(t, step, out->norm);
    zt_dp_sync_gather(&t->sync);
    zt_dp_sync_stats ds = zt_dp_sync_take_stats(&t->sync);
    out->grad_comm_ms = 1000.0 * ds.grad_comm_s;
    out->param_comm_ms = 1000.0 * ds.param_comm_s;
    out->param_overlapped = ds.param_overlapped;
    out->pp_comm_ms = 1000.0 * t->pp_comm_s;
    out->pp_async = t->chunks ? t->ring.transfers : t->pc.transfers;
    t->be->ops->sync(t->be); // the step's work is done (and its errors seen) here
    out->ms = (zt_mono_s() - t0) * 1000.0;
    zt_profile_diff(&out->phases, &t->prof, &prof0);
    t->prof_be_st.by_op = NULL;
    return ZT_OK;
}
