// The interleaved schedule's transfers on the pipeline ring (docs/design.md, "Pipeline"):
// rank r sends activations to r+1 mod p (the last rank's chunk c feeds the first rank's
// chunk c+1) and input gradients to r-1 mod p.
//
// Every send is nonblocking and stays in flight until the buffer it reads is about to be
// written again (zt_pipe_ring_before_write) or the step ends; every receive blocks at its
// action, which the interleaved generator places just before the compute that reads it. That
// is the simulator's nonblocking transport (sends complete when posted, a receive waited for
// by the compute that reads it), which tests/test_schedule.c proves free of deadlock for
// every list this executor runs. At pp 2 activations (the ring's wrap) and gradients go
// between the same two ranks; they carry tags 0 and 1, but the order alone matches them, as
// comm.h requires (NCCL has no tags, nor yet isend/irecv here): each rank receives from a peer
// in the order the peer sends, kinds mixed (tests/test_schedule.c, schedule_ring_order).
//
// Buffers are the caller's, one per (chunk, slot) over all chunks ("slot" below: the
// trainer's index of it): a forward's output is sent from its activation slot, a backward's
// input gradient from that slot's input-gradient buffer.
#ifndef ZT_PIPE_RING_H
#define ZT_PIPE_RING_H

#include "comm.h"
#include "schedule.h"

typedef struct {
    const zt_comm *pp;  // the pipeline group's tensor path (isend needed)
    int prev, next;     // ring neighbours' ranks in pp
    size_t count;       // elements of one message (N * C)
    zt_dtype stream_dt; // the activations' and their gradients' dtype (the model's stream's)
    int n_bufs;         // the caller's slots over all chunks
    zt_comm_req *req;   // (2 * n_bufs): the send from each slot's activations, from each
                        // slot's input gradient
    double comm_s;      // this step: seconds in the transfers' calls
    int transfers;      // this step: sends and receives
} zt_pipe_ring;

// The ring of stage pp_rank of pp_size (>= 2) over `pp`, which must have nonblocking
// point-to-point (zt_comm_has_async_p2p: the caller refuses the run otherwise). Free with
// zt_pipe_ring_free (which accepts a zero-filled one).
void zt_pipe_ring_init(zt_pipe_ring *o, const zt_comm *pp, int pp_rank, int pp_size,
                       size_t count, zt_dtype stream_dt, int n_bufs);
void zt_pipe_ring_free(zt_pipe_ring *o);
// A new step: nothing is in flight (asserted).
void zt_pipe_ring_begin(zt_pipe_ring *o);
// A transfer action (RECV_FWD, SEND_FWD, RECV_BWD, SEND_BWD; the combined ops are never in
// an interleaved list) of slot `slot`: a send starts from `buf`, a receive fills `buf`.
void zt_pipe_ring_transfer(zt_pipe_ring *o, const zt_sched_action *a, int slot, void *buf);
// Before a compute writes slot `slot`'s buffer that a send may still read: the forward its
// activations (backward 0), the backward its input gradient (backward 1).
void zt_pipe_ring_before_write(zt_pipe_ring *o, int slot, int backward);
// The end of the step's schedule: waits for every send.
void zt_pipe_ring_end(zt_pipe_ring *o);

#endif
