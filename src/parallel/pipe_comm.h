// The stage's pipeline transfers, blocking or nonblocking inside (docs/design.md, "Pipeline"):
// the schedule's receive and send actions, and the waits around its forwards and backwards.
//
// Blocking (the default, and any pp path without nonblocking point-to-point): each action is
// its call where the schedule puts it; sends wait for their receiver, so the pairs of 1F1B's
// steady state are combined exchanges (zt_comm_send_recv).
//
// Nonblocking (--overlap-comm on, on a pp path with isend/irecv): a stage's sends of
// activations (forward) and of its input's gradient (backward) are started and left in
// flight while it computes, and completed only before their buffer is written again; each
// receive is posted as soon as its buffer is free, not when the schedule reaches it, and
// waited for just before the forward or backward that reads it.
//
// Messages travel as bytes (ZT_U8, counts in bytes): an activation and a gradient (N * C each
// of the model's stream dtype, bf16 under bf16) cross in one send_recv, which
// takes one type; a point-to-point message is its bytes, and both neighbours name the same
// counts.
//
// Buffers, as both use them: micro-batch k's activations arrive in recv_in slot
// k mod n_slots and its output gradient in recv_dout slot k mod n_slots; its output is sent
// from the model's activation slot k mod n_slots, its input gradient from the one `dinput`.
// So a receive for k may be posted once the forward (backward) of k - n_slots has read its
// slot, the send of k's output must complete before the forward of k + n_slots overwrites
// that slot, and the send of dinput before the next backward writes it. Forwards and
// backwards each run in micro-batch order (both schedules), so receives from a neighbour are
// posted in the order it sends (MPI matches a pair's messages in order).
//
// Why the nonblocking run cannot deadlock where the blocking one does not: every wait there
// is for a transfer the blocking executor would already have completed at that point of the
// schedule (a send at its action, a receive at its action), and every receive is posted no
// later.
#ifndef ZT_PIPE_COMM_H
#define ZT_PIPE_COMM_H

#include "comm.h"
#include "schedule.h"

typedef struct {
    const zt_comm *pp;     // the pipeline group's tensor path
    int async;             // 1: nonblocking; 0: blocking (only zt_pipe_comm_transfer acts;
                           // the calls around the forwards and backwards return at once)
    int prev, next;        // neighbour stages' ranks in pp, -1 where there is none
    size_t msg_bytes;      // bytes of one message, an activation or a gradient (N * C of
                           // stream_dt)
    int n_slots, micro;    // slots per buffer, micro-batches per step
    void *recv_in;         // (n_slots, msg_bytes) the caller's: activations from prev
    void *recv_dout;       // (n_slots, msg_bytes) the caller's: output gradients from next
    zt_comm_req *req;      // (3 * n_slots + 1), used when nonblocking: receives in, receives dout,
                           // sends of each activation slot, the send of dinput
    int in_posted, dout_posted; // this step: micro-batches whose receive is posted
    int fwd_done, bwd_done;     // this step: forwards / backwards that have read their input
    double comm_s;         // this step: seconds in the transfers' calls (nonblocking:
                           // posting, sending and waiting)
    int transfers;         // this step: nonblocking sends and receives started (0: blocking)
} zt_pipe_comm;

// The transfers of stage pp_rank of pp_size: nonblocking when `overlap` (--overlap-comm on)
// and the path has nonblocking point-to-point (zt_comm_has_async_p2p) and there is a
// neighbour, else blocking. count: elements of one message (N * C); stream_dt: the dtype of
// the activations and their gradients. recv_in, recv_dout: the caller's (they must outlive
// this).
// Free with zt_pipe_comm_free (which accepts a zero-filled one).
void zt_pipe_comm_init(zt_pipe_comm *o, const zt_comm *pp, int pp_rank, int pp_size,
                       size_t count, zt_dtype stream_dt, int n_slots, int micro, void *recv_in,
                       void *recv_dout, int overlap);
void zt_pipe_comm_free(zt_pipe_comm *o);

// A new step: posts the receives whose slots are free (all of them: nothing is in flight).
void zt_pipe_comm_begin(zt_pipe_comm *o);
// A transfer action of the schedule (receive, send, or the two combined). `out`: micro-batch
// a->micro's output (its activation slot's), read by the actions that send forward; `dinput`
// the input gradient, read by those that send backward. Blocking: the call itself;
// nonblocking: a send starts, a receive is checked to be posted already.
void zt_pipe_comm_transfer(zt_pipe_comm *o, const zt_sched_action *a, const void *out,
                           const void *dinput);
// Before the forward of micro-batch k: its activations are in recv_in, and its activation
// slot's earlier send is complete. After it: posts the receives that freed.
void zt_pipe_comm_before_fwd(zt_pipe_comm *o, int k);
void zt_pipe_comm_after_fwd(zt_pipe_comm *o, int k);
// The same for the backward of k (its output gradient in recv_dout; dinput's send done).
void zt_pipe_comm_before_bwd(zt_pipe_comm *o, int k);
void zt_pipe_comm_after_bwd(zt_pipe_comm *o, int k);
// The end of the step's schedule: waits for every send (the buffers are the next step's and
// the validation's); every receive has been read by then.
void zt_pipe_comm_end(zt_pipe_comm *o);

#endif
