// The interleaved schedule's transfers on the pipeline ring (pipe_ring.h).
#include "pipe_ring.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_ACTIVATIONS = 0, TAG_GRADIENTS = 1 };

void zt_pipe_ring_init(zt_pipe_ring *o, const zt_comm *pp, int pp_rank, int pp_size,
                       size_t count, zt_dtype stream_dt, int n_bufs) {
    memset(o, 0, sizeof *o);
    ZT_ASSERT(pp_size >= 2 && n_bufs >= 1 && zt_comm_has_async_p2p(pp));
    o->pp = pp;
    o->prev = (pp_rank + pp_size - 1) % pp_size;
    o->next = (pp_rank + 1) % pp_size;
    o->count = count;
    o->stream_dt = stream_dt;
    o->n_bufs = n_bufs;
    o->req = calloc(2 * (size_t)n_bufs, sizeof *o->req);
    ZT_ASSERT(o->req);
}

void zt_pipe_ring_free(zt_pipe_ring *o) {
    free(o->req);
    memset(o, 0, sizeof *o);
}

void zt_pipe_ring_begin(zt_pipe_ring *o) {
    o->comm_s = 0.0;
    o->transfers = 0;
    for (int i = 0; i < 2 * o->n_bufs; i++)
        ZT_ASSERTF(!o->req[i].c, "a pipeline send of the last step in flight");
}

static zt_comm_req *send_req(zt_pipe_ring *o, int slot, int backward) {
    ZT_ASSERT(slot >= 0 && slot < o->n_bufs);
    return &o->req[(size_t)backward * o->n_bufs + slot];
}

// Waits for `r` (nothing when it is not in flight), timed.
static void wait_timed(zt_pipe_ring *o, zt_comm_req *r) {
    if (!r->c) return;
    double t0 = zt_mono_s();
    zt_comm_wait(r);
    o->comm_s += zt_mono_s() - t0;
}

void zt_pipe_ring_transfer(zt_pipe_ring *o, const zt_sched_action *a, int slot, void *buf) {
    double t0 = zt_mono_s();
    size_t n = o->count;
    switch (a->op) {
    case ZT_SCHED_OP_RECV_FWD:
        zt_comm_recv(o->pp, buf, n, o->stream_dt, o->prev, TAG_ACTIVATIONS, NULL);
        break;
    case ZT_SCHED_OP_RECV_BWD:
        zt_comm_recv(o->pp, buf, n, o->stream_dt, o->next, TAG_GRADIENTS, NULL);
        break;
    case ZT_SCHED_OP_SEND_FWD:
        ZT_ASSERTF(!send_req(o, slot, 0)->c, "a send from an activation slot still in flight");
        zt_comm_isend(o->pp, buf, n, o->stream_dt, o->next, TAG_ACTIVATIONS, NULL,
                      send_req(o, slot, 0));
        break;
    case ZT_SCHED_OP_SEND_BWD:
        ZT_ASSERTF(!send_req(o, slot, 1)->c, "a send from an input gradient still in flight");
        zt_comm_isend(o->pp, buf, n, o->stream_dt, o->prev, TAG_GRADIENTS, NULL,
                      send_req(o, slot, 1));
        break;
    default: ZT_ASSERTF(0, "schedule op %s on the interleaved ring", zt_sched_op_name(a->op));
    }
    o->transfers++;
    o->comm_s += zt_mono_s() - t0;
}

void zt_pipe_ring_before_write(zt_pipe_ring *o, int slot, int backward) {
    wait_timed(o, send_req(o, slot, backward));
}

void zt_pipe_ring_end(zt_pipe_ring *o) {
    for (int i = 0; i < 2 * o->n_bufs; i++) wait_timed(o, &o->req[i]);
}
