// The pipeline's transfers without blocking the stage (--overlap-comm on, on a pp path with
// nonblocking point-to-point): a stage's sends of activations (forward) and of its input's
// gradient (backward) are started and left in flight while it computes, and completed only
// before their buffer is written again; each receive is posted as soon as its buffer is
// free, not when the schedule reaches it, and waited for just before the forward or backward
// that reads it (docs/design.md, "Pipeline", nonblocking transfers).
//
// Buffers, as the blocking executor uses them: micro-batch k's activations arrive in
// recv_in slot k mod n_slots and its output gradient in recv_dout slot k mod n_slots; its
// output is sent from the model's activation slot k mod n_slots, its input gradient from the
// one `dinput`. So a receive for k may be posted once the forward (backward) of k - n_slots
// has read its slot, the send of k's output must complete before the forward of k + n_slots
// overwrites that slot, and the send of dinput before the next backward writes it.
// Forwards and backwards each run in micro-batch order (both schedules), so receives from a
// neighbour are posted in the order it sends (MPI matches a pair's messages in order).
//
// Why it cannot deadlock where the blocking schedule does not: every wait here is for a
// transfer the blocking executor would already have completed at that point of the schedule
// (a send at its action, a receive at its action), and every receive is posted no later.
#ifndef ZT_PIPE_COMM_H
#define ZT_PIPE_COMM_H

#include "comm.h"

typedef struct {
    const zt_comm *pp;     // the pipeline group's tensor path (zt_comm_has_async_p2p)
    int prev, next;        // neighbour stages' ranks in pp, -1 where there is none
    size_t count;          // fp32 elements of one message (N * C)
    int n_slots, micro;    // slots per buffer, micro-batches per step
    float *recv_in;        // (n_slots, count) the caller's: activations from prev
    float *recv_dout;      // (n_slots, count) the caller's: output gradients from next
    zt_comm_req *req;      // (3 * n_slots + 1): receives in, receives dout, sends of each
                           // activation slot, the send of dinput
    int in_posted, dout_posted; // this step: micro-batches whose receive is posted
    int fwd_done, bwd_done;     // this step: forwards / backwards that have read their input
    double comm_s;         // this step: seconds in posting, sending and waiting
    int transfers;         // this step: nonblocking sends and receives started
} zt_pipe_comm;

void zt_pipe_comm_init(zt_pipe_comm *o, const zt_comm *pp, int pp_rank, int pp_size,
                       size_t count, int n_slots, int micro, float *recv_in, float *recv_dout);
void zt_pipe_comm_free(zt_pipe_comm *o);

// A new step: posts the receives whose slots are free (all of them: nothing is in flight).
void zt_pipe_comm_begin(zt_pipe_comm *o);
// Receive actions of the schedule: checks that micro-batch k's receive is posted already.
void zt_pipe_comm_check_posted(const zt_pipe_comm *o, int k, int backward);
// Before the forward of micro-batch k: its activations are in recv_in, and its activation
// slot's earlier send is complete. After it: posts the receives that freed.
void zt_pipe_comm_before_fwd(zt_pipe_comm *o, int k);
void zt_pipe_comm_after_fwd(zt_pipe_comm *o, int k);
// The same for the backward of k (its output gradient in recv_dout; dinput's send done).
void zt_pipe_comm_before_bwd(zt_pipe_comm *o, int k);
void zt_pipe_comm_after_bwd(zt_pipe_comm *o, int k);
// Starts the send of micro-batch k's output (`out`, its activation slot's) to next, and of
// the input gradient `dinput` to prev.
void zt_pipe_comm_send_fwd(zt_pipe_comm *o, int k, const float *out);
void zt_pipe_comm_send_bwd(zt_pipe_comm *o, const float *dinput);
// The end of the step's schedule: waits for every send (the buffers are the next step's and
// the validation's); every receive has been read by then.
void zt_pipe_comm_end(zt_pipe_comm *o);

#endif
