// The pipeline schedule as plain data: for one stage, the ordered list of forward,
// backward, send and receive actions over the micro-batches of one step (docs/design.md §2,
// §4). Building it is pure and tested exhaustively; the executor (train.c) only walks the
// list. Also: the peak of micro-batches held in flight (for the memory planner)
// and a simulator that runs every stage's list with blocking rendezvous send/recv.
//
// Conventions, for every kind:
//   - every micro-batch k in [0, n_micro) has exactly one FWD and one BWD on every stage,
//     FWD before BWD; forwards run in order 0..m-1 and backwards run in order 0..m-1, so
//     gradients accumulate in the same micro-batch order under GPipe and 1F1B (both
//     schedules give bit-identical gradients);
//   - stage s > 0 receives the input of FWD k before it (RECV_FWD), stage s < p-1 sends the
//     output of FWD k after it (SEND_FWD); stage s < p-1 receives the gradient of its output
//     before BWD k (RECV_BWD), stage s > 0 sends the gradient of its input after it
//     (SEND_BWD). The first stage has no RECV_FWD/SEND_BWD, the last no SEND_FWD/RECV_BWD
//     (its loss starts the backward).
//   - a combined op pairs one send and one receive with the SAME neighbour and runs as one
//     zt_comm_send_recv (both posted, then both waited for). Why the executor must not split
//     it into a blocking send followed by a blocking receive: schedule.c, top.
#ifndef ZT_SCHEDULE_H
#define ZT_SCHEDULE_H

#include "common.h"

typedef enum { ZT_SCHED_1F1B, ZT_SCHED_GPIPE } zt_schedule_kind;

// "1f1b" | "gpipe" (static string).
const char *zt_schedule_kind_name(zt_schedule_kind kind);

typedef enum {
    ZT_SCHED_OP_RECV_FWD = 0,      // receive the input activations of `micro` from s-1
    ZT_SCHED_OP_FWD,               // forward of `micro`
    ZT_SCHED_OP_SEND_FWD,          // send the output activations of `micro` to s+1
    ZT_SCHED_OP_RECV_BWD,          // receive d(loss)/d(output) of `micro` from s+1
    ZT_SCHED_OP_BWD,               // backward of `micro` (accumulates into the grads)
    ZT_SCHED_OP_SEND_BWD,          // send d(loss)/d(input) of `micro` to s-1
    ZT_SCHED_OP_SEND_FWD_RECV_BWD, // with s+1: send output of `micro`, receive
                                   //   d(loss)/d(output) of `recv_micro`
    ZT_SCHED_OP_SEND_BWD_RECV_FWD, // with s-1: send d(loss)/d(input) of `micro`, receive
                                   //   the input of `recv_micro`
    ZT_SCHED_OP_COUNT
} zt_sched_op;

// "RECV_FWD", "FWD", ... (static string).
const char *zt_sched_op_name(zt_sched_op op);

typedef struct {
    zt_sched_op op;
    int micro;      // the micro-batch computed or sent (for a combined op: the one sent)
    int recv_micro; // combined ops only: the micro-batch received; -1 otherwise
} zt_sched_action;

typedef struct {
    zt_schedule_kind kind;
    int n_stages, stage, n_micro;  // stage in [0, n_stages)
    int n_actions;
    zt_sched_action *actions;      // (n_actions), in execution order; owned
} zt_schedule;

// Builds the action list of `stage` (0-based) of an n_stages pipeline over n_micro
// micro-batches:
//   GPipe: all forwards (0..m-1), then all backwards (0..m-1).
//   1F1B (PipeDream-flush, Megatron non-interleaved): warmup = min(n_stages-stage-1,
//     n_micro) forwards, then steady state one forward + one backward, then the cooldown
//     backwards.
// ZT_ERR (nothing allocated) if n_stages < 1 or n_micro < 1; fatal on a stage out of range
// or an unknown kind (bugs). The caller frees with zt_schedule_free, which also accepts a
// zero-filled or failed schedule.
zt_status zt_schedule_build(zt_schedule *s, zt_schedule_kind kind, int n_stages, int stage,
                            int n_micro);
void zt_schedule_free(zt_schedule *s);

// The largest number of micro-batches whose FWD has run and whose BWD has not, at any point
// of the list: min(n_stages - stage, n_micro) under 1F1B, n_micro under GPipe. The memory
// planner sizes the stage's activation memory by it. Also an upper bound on the micro-
// batches "live" at once counting a received, not yet forwarded input; those are always
// consecutive, so an executor may keep micro k in activation slot k % peak (tested).
int zt_schedule_peak_in_flight(const zt_schedule *s);

// Runs the lists of all n_stages stages together (stages[i].stage == i) with the worst-case
// semantics of blocking point-to-point: a send completes only once the peer has posted the
// matching receive (rendezvous), a combined op once both its halves have matched, a receive
// once the peer's send is posted. Messages are matched per channel (activations s -> s+1,
// gradients s+1 -> s) in order, so a channel whose two ends disagree on the micro-batch is an
// error. Communication costs no time; FWD costs fwd_cost and BWD bwd_cost time units (>= 1).
// On success *ticks_out = the time at which the last stage finishes. ZT_ERR with a message
// naming every stage's blocked action on a deadlock, or the mismatch. Allocates only
// temporaries.
zt_status zt_schedule_simulate_lists(const zt_schedule *stages, int n_stages, int fwd_cost,
                                     int bwd_cost, int *ticks_out);
// Builds every stage's list of `kind` and runs zt_schedule_simulate_lists on it.
zt_status zt_schedule_simulate(zt_schedule_kind kind, int n_stages, int n_micro, int fwd_cost,
                               int bwd_cost, int *ticks_out);

#endif
