// The stage's pipeline schedule executed for one training step (docs/design.md, "Pipeline"):
// its forwards and backwards over the micro-batches, and its transfers (pipe_comm.h, blocking
// or nonblocking inside); and, for the data-parallel synchronizer (dp_sync.h), which forward
// is the step's first and which backward its last.
#include "trainer.h"

#include <string.h>

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

// The index of the stage's last backward (or, split, its last weight-gradient pass): once it
// runs, every other micro-batch's gradient has been added, so what it finishes is final.
// Every forward comes before it.
static int last_backward(const zt_schedule *s) {
    int last = -1;
    for (int i = 0; i < s->n_actions; i++)
        if (s->actions[i].op == ZT_SCHED_OP_BWD || s->actions[i].op == ZT_SCHED_OP_BWD_W) last = i;
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

// Interleaved: a transfer action on the ring (pipe_ring.h) from or into the buffers of
// (a->chunk, a->micro): a forward's output is sent from its activation slot.
static void ring_transfer(zt_trainer *t, const zt_sched_action *a) {
    int s = zt_trainer_slot(t, a->chunk, a->micro);
    void *buf;
    if (a->op == ZT_SCHED_OP_RECV_FWD) buf = zt_trainer_recv_in(t, s);
    else if (a->op == ZT_SCHED_OP_RECV_BWD) buf = zt_trainer_slot_of(t, t->recv_dout, s);
    else if (a->op == ZT_SCHED_OP_SEND_BWD) buf = zt_trainer_slot_of(t, t->dinput, s);
    else {
        zt_gpt2 *m = zt_trainer_chunk(t, a->chunk);
        zt_gpt2_use_slot(m, a->micro % t->chunk_slots[a->chunk]);
        buf = (void *)zt_gpt2_output(m); // a send only reads it
    }
    zt_pipe_ring_transfer(&t->ring, a, s, buf);
}

// A transfer action (pipe_comm.h, blocking or not inside): the actions that send forward
// read micro-batch a->micro's output from its activation slot.
static void transfer(zt_trainer *t, const zt_sched_action *a) {
    if (t->chunks) {
        ring_transfer(t, a);
        return;
    }
    const void *out = NULL;
    if (a->op == ZT_SCHED_OP_SEND_FWD || a->op == ZT_SCHED_OP_SEND_FWD_RECV_BWD) {
        zt_gpt2_use_slot(&t->model, a->micro % t->n_slots);
        out = zt_gpt2_output(&t->model);
    }
    zt_pipe_comm_transfer(&t->pc, a, out, t->dinput);
}

// Micro-batch k's forward of chunk `ch` in its slot. The chunk's first forward of the step
// (`first`; with one chunk the step's first) reads the weights the last step's parameter
// gather may still be bringing: the synchronizer waits for each unit's as the model asks
// (dp_sync.h); that wait is communication, not compute. *start: when the forward begins, after the pipeline's wait
// for its input (the --trace timeline).
static void forward(zt_trainer *t, uint64_t step, int ch, int k, float loss_scale, int first,
                    double *start) {
    const zt_config *c = t->cfg;
    zt_gpt2 *m = zt_trainer_chunk(t, ch);
    size_t BT = (size_t)c->micro_batch * c->seq;
    int slot = zt_trainer_slot(t, ch, k); // the trainer's buffers'; the model's: k mod its slots
    if (t->chunks) zt_pipe_ring_before_write(&t->ring, slot, 0);
    else zt_pipe_comm_before_fwd(&t->pc, k);
    double t0 = *start = zt_mono_s(), g0 = zt_dp_sync_param_wait_s(&t->sync);
    zt_gpt2_use_slot(m, k % t->chunk_slots[ch]);
    zt_trainer_read_batch(t, &t->train, step, k, c->grad_accum, slot);
    zt_dp_sync_next_forward(&t->sync, first);
    // its loss: added on the device, taken once a step
    zt_gpt2_forward(m, t->inputs + slot * BT, zt_trainer_recv_in(t, slot),
                    t->targets + slot * BT, 1, loss_scale);
    double secs = zt_mono_s() - t0 - (zt_dp_sync_param_wait_s(&t->sync) - g0);
    t->compute_s += secs;
    t->fwd_s += secs;
    if (!t->chunks) zt_pipe_comm_after_fwd(&t->pc, k);
}

// Micro-batch k's backward of chunk `ch` (*start: as forward's), or with `input_only` its
// input-gradient pass (ZB-H1's B: what the previous stage waits for; its weight gradients
// wait in W slot k mod n_wslots: the waiting ones are consecutive and at most the model's
// n_wslots,
// zt_schedule_peak_w_pending). What the step's last backward (`last`) finishes is final: the
// synchronizer may start reducing it as the model announces it (dp_sync.h).
static void backward(zt_trainer *t, int ch, int k, int last, int input_only, double *start) {
    const zt_config *c = t->cfg;
    zt_gpt2 *m = zt_trainer_chunk(t, ch);
    size_t BT = (size_t)c->micro_batch * c->seq;
    int slot = zt_trainer_slot(t, ch, k);
    // interleaved: a dinput per slot (each send in flight until the slot is reused)
    void *dinput = zt_trainer_slot_of(t, t->dinput, t->chunks ? slot : 0);
    if (t->chunks) zt_pipe_ring_before_write(&t->ring, slot, 1);
    else zt_pipe_comm_before_bwd(&t->pc, k);
    double t0 = *start = zt_mono_s();
    zt_gpt2_use_slot(m, k % t->chunk_slots[ch]);
    if (input_only) zt_gpt2_use_wslot(m, k % m->n_wslots);
    zt_dp_sync_next_backward(&t->sync, last);
    const int32_t *tokens = t->inputs + slot * BT;
    const void *dout = zt_trainer_slot_of(t, t->recv_dout, slot);
    if (input_only) zt_gpt2_backward_input(m, tokens, dout, dinput);
    else zt_gpt2_backward(m, tokens, dout, dinput);
    double secs = zt_mono_s() - t0;
    t->compute_s += secs;
    t->bwd_s += secs;
    if (!t->chunks) zt_pipe_comm_after_bwd(&t->pc, k);
}

// Micro-batch k's weight-gradient pass (ZB-H1's W): no transfer; the step's last one
// (`last`) finishes the gradient, as the last combined backward does.
static void backward_weight(zt_trainer *t, int k, int last) {
    const zt_config *c = t->cfg;
    zt_gpt2 *m = &t->model;
    size_t BT = (size_t)c->micro_batch * c->seq;
    int slot = k % t->n_slots;
    double t0 = zt_mono_s();
    zt_gpt2_use_slot(m, slot);
    zt_gpt2_use_wslot(m, k % m->n_wslots);
    zt_dp_sync_next_backward(&t->sync, last);
    zt_gpt2_backward_weight(m, t->inputs + slot * BT);
    double secs = zt_mono_s() - t0;
    t->compute_s += secs;
    t->wgt_s += secs;
}

// Runs this stage's schedule for one step (forward and backward of every micro-batch,
// gradients added into the flat grad buffer). Returns this stage's loss sum (non-zero
// on the last stage only). The synchronizer is told which forward is the first and which
// backward the last (dp_sync.h); the transfers block or not inside pipe_comm.h.
double zt_trainer_run_schedule(zt_trainer *t, uint64_t step, float loss_scale) {
    double start = zt_mono_s();
    int first_fwd = first_forward(&t->sched), last_bwd = last_backward(&t->sched);
    char read[t->n_chunks]; // chunks whose weights a forward of this step has read
    memset(read, 0, sizeof read);
    t->compute_s = t->fwd_s = t->bwd_s = t->wgt_s = 0.0;
    if (t->chunks) zt_pipe_ring_begin(&t->ring);
    else zt_pipe_comm_begin(&t->pc);
    for (int i = 0; i < t->sched.n_actions; i++) {
        const zt_sched_action *a = &t->sched.actions[i];
        double *at = &t->action_t[2 * i]; // a compute's: after the waits for its inputs
        *at = zt_mono_s();
        int c = a->chunk, k = a->micro;
        // a chunk's first forward reads its units' weights first (the step's first forward
        // is chunk 0's): the gather's pieces are waited for there
        int first = a->op == ZT_SCHED_OP_FWD && !read[c];
        if (first) read[c] = 1;
        ZT_ASSERT(!first || c > 0 || i == first_fwd);
        if (a->op == ZT_SCHED_OP_FWD) forward(t, step, c, k, loss_scale, first, at);
        else if (a->op == ZT_SCHED_OP_BWD) backward(t, c, k, i == last_bwd, 0, at);
        else if (a->op == ZT_SCHED_OP_BWD_B) backward(t, c, k, 0, 1, at);
        else if (a->op == ZT_SCHED_OP_BWD_W) backward_weight(t, a->micro, i == last_bwd);
        else transfer(t, a);
        t->action_t[2 * i + 1] = zt_mono_s();
    }
    if (t->chunks) zt_pipe_ring_end(&t->ring);
    else zt_pipe_comm_end(&t->pc);
    t->pp_comm_s = t->chunks ? t->ring.comm_s : t->pc.comm_s;
    t->sched_s = zt_mono_s() - start;
    // the micro-batches' losses, added on the device of the chunk with the head
    return zt_gpt2_take_loss(zt_trainer_chunk(t, t->n_chunks - 1));
}
