// The stage's pipeline transfers, blocking or nonblocking (pipe_comm.h).
#include "pipe_comm.h"

#include <stdlib.h>
#include <string.h>

// The requests, by role (pipe_comm.h: zt_pipe_comm.req).
static zt_comm_req *r_in(zt_pipe_comm *o, int k) { return &o->req[k % o->n_slots]; }
static zt_comm_req *r_dout(zt_pipe_comm *o, int k) { return &o->req[o->n_slots + k % o->n_slots]; }
static zt_comm_req *r_out(zt_pipe_comm *o, int k) {
    return &o->req[2 * o->n_slots + k % o->n_slots];
}
static zt_comm_req *r_dinput(zt_pipe_comm *o) { return &o->req[3 * o->n_slots]; }

void zt_pipe_comm_init(zt_pipe_comm *o, const zt_comm *pp, int pp_rank, int pp_size,
                       size_t count, zt_dtype stream_dt, int n_slots, int micro, void *recv_in,
                       void *recv_dout, int overlap) {
    memset(o, 0, sizeof *o);
    ZT_ASSERT(n_slots >= 1 && micro >= 1);
    o->pp = pp;
    o->async = overlap && pp_size > 1 && zt_comm_has_async_p2p(pp);
    o->prev = pp_rank > 0 ? pp_rank - 1 : -1;
    o->next = pp_rank + 1 < pp_size ? pp_rank + 1 : -1;
    o->msg_bytes = count * zt_dtype_size(stream_dt);
    o->n_slots = n_slots;
    o->micro = micro;
    o->recv_in = recv_in;
    o->recv_dout = recv_dout;
    o->req = calloc(3 * (size_t)n_slots + 1, sizeof *o->req);
    ZT_ASSERT(o->req);
}

void zt_pipe_comm_free(zt_pipe_comm *o) {
    free(o->req);
    memset(o, 0, sizeof *o);
}

// Posts the receives from `peer` into buf's slots of `bytes` (requests reqs) while a slot is
// free: micro-batch k's once `done` forwards (backwards) have read the slot of k - n_slots.
static void post_side(zt_pipe_comm *o, int *posted, int done, int peer, void *buf,
                      size_t bytes, zt_comm_req *reqs) {
    while (peer >= 0 && *posted < o->micro && *posted - o->n_slots < done) {
        int slot = (*posted)++ % o->n_slots;
        zt_comm_irecv(o->pp, (char *)buf + (size_t)slot * bytes, bytes, ZT_U8, peer, 0, NULL,
                      &reqs[slot]);
        o->transfers++;
    }
}

// Posts every receive whose slot is free, activations and gradients. Timed.
static void post_free(zt_pipe_comm *o) {
    double t0 = zt_mono_s();
    post_side(o, &o->in_posted, o->fwd_done, o->prev, o->recv_in, o->msg_bytes, r_in(o, 0));
    post_side(o, &o->dout_posted, o->bwd_done, o->next, o->recv_dout, o->msg_bytes,
              r_dout(o, 0));
    o->comm_s += zt_mono_s() - t0;
}

// Starts a send of one message of `bytes` to `peer`, tracked by r. Timed.
static void start_send(zt_pipe_comm *o, const void *buf, size_t bytes, int peer,
                       zt_comm_req *r) {
    ZT_ASSERTF(peer >= 0, "a pipeline send past the first or last stage");
    double t0 = zt_mono_s();
    zt_comm_isend(o->pp, buf, bytes, ZT_U8, peer, 0, NULL, r);
    o->transfers++;
    o->comm_s += zt_mono_s() - t0;
}

void zt_pipe_comm_begin(zt_pipe_comm *o) {
    o->comm_s = 0.0;
    o->transfers = 0;
    if (!o->async) return;
    for (int i = 0; i <= 3 * o->n_slots; i++)
        ZT_ASSERTF(!o->req[i].c, "a pipeline transfer of the last step in flight");
    o->in_posted = o->dout_posted = o->fwd_done = o->bwd_done = 0;
    post_free(o);
}

// Receive actions, nonblocking: micro-batch k's receive must be posted already.
static void check_posted(const zt_pipe_comm *o, int k, int backward) {
    ZT_ASSERTF((backward ? o->dout_posted : o->in_posted) > k,
               "the receive of micro-batch %d (%s) was not posted before the schedule needed it",
               k, backward ? "gradient" : "activations");
}

// Waits for `r` (nothing when it is not in flight), timed.
static void wait_timed(zt_pipe_comm *o, zt_comm_req *r) {
    if (!r->c) return;
    double t0 = zt_mono_s();
    zt_comm_wait(r);
    o->comm_s += zt_mono_s() - t0;
}

void zt_pipe_comm_before_fwd(zt_pipe_comm *o, int k) {
    if (!o->async) return;
    ZT_ASSERTF(k == o->fwd_done, "forwards out of micro-batch order (%d after %d)", k, o->fwd_done);
    if (o->prev >= 0) {
        check_posted(o, k, 0);
        wait_timed(o, r_in(o, k));
    }
    wait_timed(o, r_out(o, k)); // the send of k - n_slots reads the slot the forward writes
}

void zt_pipe_comm_after_fwd(zt_pipe_comm *o, int k) {
    if (!o->async) return;
    o->fwd_done = k + 1;
    post_free(o);
}

void zt_pipe_comm_before_bwd(zt_pipe_comm *o, int k) {
    if (!o->async) return;
    ZT_ASSERTF(k == o->bwd_done, "backwards out of micro-batch order (%d after %d)", k,
               o->bwd_done);
    if (o->next >= 0) {
        check_posted(o, k, 1);
        wait_timed(o, r_dout(o, k));
    }
    wait_timed(o, r_dinput(o)); // the backward writes dinput
}

void zt_pipe_comm_after_bwd(zt_pipe_comm *o, int k) {
    if (!o->async) return;
    o->bwd_done = k + 1;
    post_free(o);
}

// Micro-batch k's slot of recv_in / recv_dout.
static void *in_slot(const zt_pipe_comm *o, int k) {
    return (char *)o->recv_in + (size_t)(k % o->n_slots) * o->msg_bytes;
}
static void *dout_slot(const zt_pipe_comm *o, int k) {
    return (char *)o->recv_dout + (size_t)(k % o->n_slots) * o->msg_bytes;
}

// The actions blocking: each its call; a send waits for its receiver.
static void transfer_blocking(zt_pipe_comm *o, const zt_sched_action *a, const void *out,
                              const void *dinput) {
    size_t n = o->msg_bytes;
    void *in = in_slot(o, a->micro), *dout = dout_slot(o, a->micro);
    int r = a->recv_micro < 0 ? 0 : a->recv_micro;
    switch (a->op) {
    case ZT_SCHED_OP_RECV_FWD: zt_comm_recv(o->pp, in, n, ZT_U8, o->prev, 0, NULL); break;
    case ZT_SCHED_OP_SEND_FWD: zt_comm_send(o->pp, out, n, ZT_U8, o->next, 0, NULL); break;
    case ZT_SCHED_OP_RECV_BWD: zt_comm_recv(o->pp, dout, n, ZT_U8, o->next, 0, NULL); break;
    case ZT_SCHED_OP_SEND_BWD: zt_comm_send(o->pp, dinput, n, ZT_U8, o->prev, 0, NULL); break;
    case ZT_SCHED_OP_SEND_FWD_RECV_BWD:
        zt_comm_send_recv(o->pp, out, n, o->next, dout_slot(o, r), n, o->next, ZT_U8, 0, NULL);
        break;
    case ZT_SCHED_OP_SEND_BWD_RECV_FWD:
        zt_comm_send_recv(o->pp, dinput, n, o->prev, in_slot(o, r), n, o->prev, ZT_U8, 0,
                          NULL);
        break;
    default: ZT_ASSERTF(0, "unknown schedule op %d", (int)a->op);
    }
}

// The same actions nonblocking: a send starts and the stage moves on; a receive was posted
// as soon as its buffer was free, and the forward or backward that reads it waits for it.
static void transfer_async(zt_pipe_comm *o, const zt_sched_action *a, const void *out,
                           const void *dinput) {
    switch (a->op) {
    case ZT_SCHED_OP_RECV_FWD: check_posted(o, a->micro, 0); break;
    case ZT_SCHED_OP_RECV_BWD: check_posted(o, a->micro, 1); break;
    case ZT_SCHED_OP_SEND_FWD:
    case ZT_SCHED_OP_SEND_FWD_RECV_BWD:
        start_send(o, out, o->msg_bytes, o->next, r_out(o, a->micro));
        if (a->recv_micro >= 0) check_posted(o, a->recv_micro, 1);
        break;
    case ZT_SCHED_OP_SEND_BWD:
    case ZT_SCHED_OP_SEND_BWD_RECV_FWD:
        start_send(o, dinput, o->msg_bytes, o->prev, r_dinput(o));
        if (a->recv_micro >= 0) check_posted(o, a->recv_micro, 0);
        break;
    default: ZT_ASSERTF(0, "unknown schedule op %d", (int)a->op);
    }
}

void zt_pipe_comm_transfer(zt_pipe_comm *o, const zt_sched_action *a, const void *out,
                           const void *dinput) {
    if (o->async) {
        transfer_async(o, a, out, dinput); // times its own calls
        return;
    }
    double t0 = zt_mono_s();
    transfer_blocking(o, a, out, dinput);
    o->comm_s += zt_mono_s() - t0;
}

void zt_pipe_comm_end(zt_pipe_comm *o) {
    if (!o->async) return;
    ZT_ASSERTF((o->prev < 0 || o->fwd_done == o->micro) && (o->next < 0 || o->bwd_done == o->micro),
               "the step ended with micro-batches not run");
    for (int i = 0; i <= 3 * o->n_slots; i++) wait_timed(o, &o->req[i]);
}
