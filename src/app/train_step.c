// One training step's data path (docs/design.md §2), the learning-rate schedule and the
// validation pass: the stage's schedule (train_schedule.c) runs forward/backward over the
// micro-batches; then the gradient's reductions, the norm, the update and ZeRO-1's gather.
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

double zt_now_s(void) { return zt_mono_s(); }

// Mean validation loss over the first val_batches global batches of the validation
// file (the same samples whatever the layout), through the pipeline stage by stage.
double zt_trainer_evaluate(zt_trainer *t) {
    const zt_config *c = t->cfg;
    const zt_comm *pp = t->grid.pp_data;
    zt_gpt2 *m = &t->model;
    size_t NC = zt_trainer_act_count(t);
    double sum = 0.0;
    zt_gpt2_use_slot(m, 0);
    for (int vb = 0; vb < c->val_batches; vb++)
        for (int k = 0; k < c->grad_accum; k++) {
            zt_trainer_read_batch(t, &t->val, (uint64_t)vb, k, c->grad_accum, 0);
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
    double loss_sum = zt_trainer_run_schedule(t, (uint64_t)step, (float)(1.0 / global_tokens));
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
