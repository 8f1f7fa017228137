// The dp gradient reduction overlapped with the backward (--overlap-comm on): the flat
// gradient is reduced in buckets, each started by a nonblocking collective as soon as the
// step's last backward has finished it, and all completed before the gradient norm
// (docs/design.md §2, "Overlapped gradient reduction").
//
// Buckets. The model's backward runs its blocks last to first, so the flat buffer (layout.h)
// becomes final from its end towards its front. zt_grad_reduce_ready(from) says the tail
// [from, numel) is final; once the final but not yet started part [from, issued_lo) holds
// `bucket` elements it is started. zt_grad_reduce_finish starts the rest, [0, issued_lo)
// (the embedding, whose tied copy the caller has summed over the embed group by then), and
// waits for every bucket.
//
// Where each bucket lands. --zero 0: an all-reduce of the bucket, in place. --zero 1: rank q
// owns the shard [q*S, (q+1)*S), S = numel/dp, and must end with the sum of exactly that
// range, at that range (the optimizer, the norm and the checkpoints read it there). A bucket
// is cut at the shard boundaries it crosses and each piece is reduced to its owner (a
// reduce, in place at the root): together the pieces move what one reduce-scatter of the
// whole buffer moves, nothing more, and the shard layout stays as it is. The two
// alternatives: an all-reduce of each bucket, every rank keeping its slice (twice the bytes:
// the all-gather half is thrown away), or an equal-block reduce-scatter of each bucket
// (balanced, but rank q's result is then the q-th piece of every bucket: a shard scattered
// through the buffer, which the optimizer, the norm and the checkpoints would have to
// follow). The cost of the reduce: one bucket's traffic converges on one rank at a time
// (the tail shard's owner first), balanced only over the whole backward.
//
// Every rank of the dp group has the same layout and makes the same calls, so it starts the
// same buckets in the same order.
#ifndef ZT_GRAD_REDUCE_H
#define ZT_GRAD_REDUCE_H

#include "comm.h"

typedef struct {
    const zt_comm *dp;  // the dp group's tensor path
    char *grads;        // (numel) the flat gradient, of dt
    zt_dtype dt;
    size_t numel;
    size_t shard;       // --zero 1: numel / dp, each piece reduced to its owner; 0: all-reduce
    size_t bucket;      // elements a bucket waits for during the backward (the last may be less)
    size_t issued_lo;   // this step: [issued_lo, numel) has been started
    zt_comm_req *req;   // (cap) the buckets of this step, in the order started
    int n, cap;
    double comm_s;      // this step: seconds spent starting, polling and waiting
} zt_grad_reduce;

// Allocates the requests for a step that calls zt_grad_reduce_ready at most `max_ready`
// times. `grads` is the caller's (it must outlive this); zero is 0 or 1. Free with
// zt_grad_reduce_free (which accepts a zero-filled one).
void zt_grad_reduce_init(zt_grad_reduce *o, const zt_comm *dp, void *grads, zt_dtype dt,
                         size_t numel, int zero, size_t bucket, int max_ready);
void zt_grad_reduce_free(zt_grad_reduce *o);

// A new step: nothing started.
void zt_grad_reduce_begin(zt_grad_reduce *o);
// grads [from, numel) are final: starts a bucket if enough is waiting, then polls every
// bucket in flight (MPI progresses them only inside MPI calls).
void zt_grad_reduce_ready(zt_grad_reduce *o, size_t from);
// Starts what is left ([0, issued_lo): the whole buffer is final now) and waits for every
// bucket: on return the gradient is reduced as the blocking path reduces it.
void zt_grad_reduce_finish(zt_grad_reduce *o);

#endif
