// The data-parallel synchronizer: the one owner of ZeRO (--zero 0 or 1) and of its overlap
// (--overlap-comm): which range of the flat buffers each dp rank optimizes, how a step's
// gradient becomes the global one, and how the updated parameters reach every dp rank
// (docs/design.md, "ZeRO: the data-parallel synchronizer").
//
// A step, as the trainer drives it:
//   the schedule  zt_dp_sync_next_forward / _next_backward before each forward and backward;
//                 the model calls the two hooks (zt_dp_sync_grads_final,
//                 zt_dp_sync_params_needed), given to it once at set-up, inside them
//   synchronize   zt_dp_sync_reduce: the tied embedding summed over the embed group, then the
//                 gradient summed over dp (--zero 0: all-reduced; --zero 1: each rank's shard
//                 reduced to it)
//   norm          zt_dp_sync_norm_range: the part of the reduced gradient this rank counts
//   update        the optimizer over [shard_lo, shard_hi)
//   gather        zt_dp_sync_gather: --zero 1 brings every shard's new weights to every dp
//                 rank (blocking, or left in flight into the next step's first forward)
//
// What is blocking and what overlapped is decided here only: with overlap the step's last
// backward starts the reduction in buckets (grad_reduce.h) and, under --zero 1, the gather is
// broadcast piece by piece and waited for unit by unit by the next first forward
// (param_gather.h). Either way every rank of the dp group makes the same calls in the same
// order, and the numbers are the blocking path's (docs/design.md).
#ifndef ZT_DP_SYNC_H
#define ZT_DP_SYNC_H

#include "comm.h"
#include "grad_reduce.h"
#include "layout.h"
#include "param_gather.h"

// ZeRO's shard arithmetic, the one copy (the trainer, the planner and every caller of a
// range ask it): dp rank `dp_rank`'s optimizer range [*lo, *hi) of a flat buffer of `numel`
// elements. zero 1: the equal shard [r * numel/dp, (r+1) * numel/dp); zero 0: the whole
// buffer. numel must be a multiple of dp * ZT_ALIGN_ELEMS (the model pads its buffers so:
// shards are equal and no 8-bit block straddles two); fatal otherwise. Pure.
void zt_dp_shard(size_t numel, int dp, int dp_rank, int zero, size_t *lo, size_t *hi);

typedef struct {
    int zero;            // 0: all-reduce, every dp rank optimizes everything; 1: ZeRO-1
    int overlap;         // 1: the reduction in buckets in the last backward, and (zero 1) the
                         // gather left in flight into the next step's first forward
    size_t bucket_bytes; // overlap: bytes a bucket waits for (0: a bucket per announcement
                         // of the gradient, per tensor of the parameters)
    int max_ready;       // overlap: announcements of final gradient per backward (gpt2.h)
} zt_dp_sync_options;

// What the synchronizer measured, for the step's log record.
typedef struct {
    double grad_comm_s;   // this step, in the dp reduction's calls (overlapped: starting,
                          // polling and waiting for buckets)
    double param_comm_s;  // since the last take, in the parameter gather's calls (blocking:
                          // the all-gather; overlapped: the pieces waited for and polled in
                          // this step's forward or between the steps, and this step's start)
    int param_overlapped; // pieces of the last gather completed inside this step's first
                          // forward (0 on the blocking path)
} zt_dp_sync_stats;

typedef struct {
    const zt_comm *dp;        // the dp group's tensor path (the flat buffers)
    const zt_comm *dp_host;   // the dp group's control path (host buffers)
    const zt_comm *embed;     // the embed group's tensor path (the tied embedding)
    zt_dtype dt;              // of the flat buffers: bf16 gradients reduce in bf16
    size_t numel;             // of each flat buffer
    size_t tied;              // elements of the tied embedding at the buffers' front (0 on a
                              // middle stage: it issues the embed call with nothing in it)
    char *grads, *params;     // (numel) the model's flat buffers, of dt
    int zero, overlap;        // the options (zt_dp_sync_options)
    size_t shard_lo, shard_hi; // this dp rank's optimizer range (zt_dp_shard)
    zt_grad_reduce gr;        // overlap: the bucketed reduction
    zt_param_gather pg;       // overlap and zero 1: the piecewise gather
    int final_backward;       // inside the step's last backward: announcements start buckets
    int first_forward;        // inside the step's first forward: requests wait for pieces
    zt_dp_sync_stats st;      // this step's so far
} zt_dp_sync;

// Sets up the synchronizer of this rank's flat buffers (`numel` = lay->numel elements of
// `dt` at `grads` and `params`, the caller's: they must outlive it). `tied`: the tied
// embedding's elements on a first or last stage, 0 elsewhere. Allocates the overlap's
// requests (nothing without overlap). Free with zt_dp_sync_free (which accepts a zero-filled
// one). Fatal on a numel the shards do not divide (a bug: the model pads it).
void zt_dp_sync_init(zt_dp_sync *s, const zt_dp_sync_options *o, const zt_comm *dp,
                     const zt_comm *dp_host, const zt_comm *embed, size_t tied, void *grads,
                     void *params, zt_dtype dt, const zt_layout *lay);
void zt_dp_sync_free(zt_dp_sync *s);

// The model's hooks (zt_gpt2.grad_ready, .params_need), given to it once; ctx is the
// zt_dp_sync. Inert outside the moments the schedule names: grads [from, numel) are final (the last backward: buckets
// start), params [lo, hi) are about to be read (the first forward: their pieces are waited for).
void zt_dp_sync_grads_final(void *ctx, size_t from);
void zt_dp_sync_params_needed(void *ctx, size_t lo, size_t hi);

// The schedule says what runs next: a forward (`first`: the step's first, the first to read
// the weights) or a backward (`last`: the step's last, after which every gradient is final).
void zt_dp_sync_next_forward(zt_dp_sync *s, int first);
void zt_dp_sync_next_backward(zt_dp_sync *s, int last);
// Seconds spent waiting for parameters since the last take (the forward's communication).
double zt_dp_sync_param_wait_s(const zt_dp_sync *s);

// After the schedule: the gradient made global. Waits for the pieces of the last gather no
// forward asked for (the padding) before the optimizer writes the shards, sums the tied
// embedding over the embed group, then sums over dp: on return grads [shard_lo, shard_hi)
// hold the global gradient (--zero 0: the whole buffer on every dp rank).
void zt_dp_sync_reduce(zt_dp_sync *s);
// The part of the reduced gradient this rank adds to the global norm, so that the world sum
// counts every element once: its shard under --zero 1, everything on dp rank 0 under
// --zero 0. Returns 0 where the rank counts nothing.
int zt_dp_sync_norm_range(const zt_dp_sync *s, size_t *lo, size_t *hi);
// After the update of [shard_lo, shard_hi): --zero 1 brings every shard to every dp rank
// (blocking, or started and left in flight: zt_dp_sync_settle); nothing under --zero 0.
void zt_dp_sync_gather(zt_dp_sync *s);
// Waits for any parameters still in flight: before anything outside a training step reads
// the weights (validation, a sample, a checkpoint, the end). Nothing in flight: returns.
void zt_dp_sync_settle(zt_dp_sync *s);
// The step's figures (zt_dp_sync_stats), reset for the next.
zt_dp_sync_stats zt_dp_sync_take_stats(zt_dp_sync *s);

// A host fp32 buffer of numel elements whose [shard_lo, shard_hi) this rank filled: made
// whole on every dp rank (--zero 1: an all-gather over the control path; --zero 0: every
// rank holds it all already). Collective over the dp group.
void zt_dp_sync_gather_host(const zt_dp_sync *s, float *buf);
// "zero 0" or "zero 1": the layout line's words for the mode.
const char *zt_dp_sync_describe(const zt_dp_sync *s);

#endif
