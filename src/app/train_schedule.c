// The stage's pipeline schedule executed for one training step (docs/design.md, "Pipeline"):
// its forwards and backwards over the micro-batches, and its transfers, blocking or, with
// --overlap-comm on, nonblocking (pipe_comm.h); the hooks through which the first forward
// waits for the parameter gather and the last backward starts the gradient's buckets.
#include "trainer.h"

// Reads micro-batch `k` of step `step` for this dp rank into slot `slot`: sample indices
// are global (step * G + (dp_rank * grad_accum + k) * B + b), so every layout sees the
// same batch. Every stage reads (it is cheap); the first uses the inputs, the last the
// targets.
void zt_trainer_read_batch(zt_trainer *t, zt_dataset *ds, uint64_t step, int k, int accum,
                           int slot) {
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
    size_t NC = zt_trainer_act_count(t);
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
static void forward(zt_trainer *t, uint64_t step, int k, float loss_scale, int first) {
    const zt_config *c = t->cfg;
    zt_gpt2 *m = &t->model;
    size_t NC = zt_trainer_act_count(t), BT = (size_t)c->micro_batch * c->seq;
    int slot = k % t->n_slots;
    if (t->overlap_pipe) zt_pipe_comm_before_fwd(&t->pc, k);
    double t0 = zt_now_s(), g0 = t->pg.comm_s;
    zt_gpt2_use_slot(m, slot);
    zt_trainer_read_batch(t, &t->train, step, k, c->grad_accum, slot);
    if (first && t->overlap_gather) {
        m->params_need = params_need;
        m->params_need_ctx = &t->pg;
    }
    zt_gpt2_forward(m, t->inputs + slot * BT, t->recv_in + slot * NC, t->targets + slot * BT, 1,
                    loss_scale); // its loss: added on the device, taken once a step
    m->params_need = NULL;
    t->compute_s += zt_now_s() - t0 - (t->pg.comm_s - g0);
    if (t->overlap_pipe) zt_pipe_comm_after_fwd(&t->pc, k);
}

// Micro-batch k's backward. In the step's last one (`last`) the model announces final
// gradient tails and the dp reduction starts buckets (grad_reduce.h).
static void backward(zt_trainer *t, int k, int last) {
    const zt_config *c = t->cfg;
    zt_gpt2 *m = &t->model;
    size_t NC = zt_trainer_act_count(t), BT = (size_t)c->micro_batch * c->seq;
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
double zt_trainer_run_schedule(zt_trainer *t, uint64_t step, float loss_scale) {
    double start = zt_now_s();
    int first_fwd = first_forward(&t->sched), last_bwd = last_backward(&t->sched);
    t->compute_s = 0.0;
    t->pp_comm_s = 0.0;
    if (t->overlap_pipe) zt_pipe_comm_begin(&t->pc);
    for (int i = 0; i < t->sched.n_actions; i++) {
        const zt_sched_action *a = &t->sched.actions[i];
        double t0 = zt_now_s();
        if (a->op == ZT_SCHED_OP_FWD) forward(t, step, a->micro, loss_scale, i == first_fwd);
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
    return zt_gpt2_take_loss(&t->model); // the micro-batches' losses, added on the device
}
