// The pipeline schedule as plain data: for one stage, the ordered list of forward,
// backward, send and receive actions over the micro-batches of one step (docs/design.md §2,
// §4, "Pipeline"). Building it is pure and tested exhaustively; the executor (train.c) only
// walks the list. Also: the peak of micro-batches held in flight (for the memory planner)
// and a simulator that runs every stage's list, checks that each action's inputs exist when
// it runs, and measures the bubble from given action costs.
//
// Conventions, for every kind:
//   - every micro-batch k in [0, n_micro) has, on every chunk of every stage, exactly one FWD
//     and either one combined BWD or one BWD_B (the input gradient) and one BWD_W (the weight
//     gradient) after it; FWD before BWD/BWD_B before BWD_W; forwards, backwards and weight
//     passes of a chunk each run in micro-batch order 0..m-1, so gradients accumulate in the
//     same micro-batch order under every kind (GPipe and 1F1B give bit-identical gradients);
//   - stage s > 0 receives the input of FWD k before it (RECV_FWD), stage s < p-1 sends the
//     output of FWD k after it (SEND_FWD); stage s < p-1 receives the gradient of its output
//     before BWD k (RECV_BWD), stage s > 0 sends the gradient of its input after it
//     (SEND_BWD). The first stage has no RECV_FWD/SEND_BWD, the last no SEND_FWD/RECV_BWD
//     (its loss starts the backward). BWD_W has no transfer: it reads only what the stage's
//     own FWD and BWD_B of that micro-batch left.
//   - with V chunks (interleaved): stage r holds chunks r, r+p, ..., r+(V-1)p of the p·V
//     virtual stages; `chunk` is the index c of virtual stage c·p + r. The successor of
//     virtual stage v is v+1, on stage (r+1) mod p: stage p-1 sends chunk c's output to stage
//     0's chunk c+1 (the ring's wrap link). With V = 1, chunk is always 0.
//   - a combined op pairs one send and one receive with the SAME neighbour and runs as one
//     zt_comm_send_recv (both posted, then both waited for). Why the executor must not split
//     it into a blocking send followed by a blocking receive: schedule.c, top.
#ifndef ZT_SCHEDULE_H
#define ZT_SCHEDULE_H

#include "common.h"

typedef enum {
    ZT_SCHED_1F1B,
    ZT_SCHED_GPIPE,
    ZT_SCHED_ZB_H1,       // zero bubble, handcrafted 1 (Qi et al., ICLR 2024): 1F1B's order of
                          // F and B, the backward split into B and W, W deferred
    ZT_SCHED_INTERLEAVED, // Megatron's interleaved 1F1B over V chunks per stage
    ZT_SCHED_KIND_COUNT
} zt_schedule_kind;

// "1f1b" | "gpipe" | "zb-h1" | "interleaved" (static string).
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
    ZT_SCHED_OP_BWD_B,             // input-gradient half of the backward of `micro`: what
                                   //   SEND_BWD sends (on the critical path)
    ZT_SCHED_OP_BWD_W,             // weight-gradient half of the backward of `micro` (after
                                   //   its BWD_B; accumulates into the grads)
    ZT_SCHED_OP_COUNT
} zt_sched_op;

// "RECV_FWD", "FWD", ..., "BWD_B", "BWD_W" (static string).
const char *zt_sched_op_name(zt_sched_op op);

typedef struct {
    zt_sched_op op;
    int micro;      // the micro-batch computed or sent (for a combined op: the one sent)
    int recv_micro; // combined ops only: the micro-batch received; -1 otherwise
    int chunk;      // the chunk computed or sent (virtual stage chunk·p + stage); 0 if V = 1
    int recv_chunk; // combined ops only: the chunk whose message is received; 0 otherwise
} zt_sched_action;

typedef struct {
    zt_schedule_kind kind;
    int n_stages, stage, n_micro;  // stage in [0, n_stages)
    int n_chunks;                  // V: chunks (virtual stages) per stage; 1 but interleaved
    int n_actions;
    zt_sched_action *actions;      // (n_actions), in execution order; owned
} zt_schedule;

// Builds the action list of `stage` (0-based) of an n_stages pipeline over n_micro
// micro-batches:
//   GPipe: all forwards (0..m-1), then all backwards (0..m-1).
//   1F1B (PipeDream-flush, Megatron non-interleaved): warmup = min(n_stages-stage-1,
//     n_micro) forwards, then steady state one forward + one backward, then the cooldown
//     backwards.
//   ZB-H1: 1F1B's forwards, transfers and input-gradient passes (BWD_B) in 1F1B's places;
//     stage s defers its weight passes so that up to s of them wait (the paper's "delay the
//     W passes by the number of warm-up micro-batches": every stage then holds up to p
//     micro-batches, the first stage's 1F1B peak), and in the cooldown runs one waiting W
//     after each B, the rest at the end.
//   interleaved (n_chunks = V >= 2; n_micro a multiple of n_stages, as Megatron requires):
//     zt_schedule_build_chunks.
// ZT_ERR (nothing allocated) if n_stages < 1 or n_micro < 1; fatal on a stage out of range
// or an unknown kind (bugs). The caller frees with zt_schedule_free, which also accepts a
// zero-filled or failed schedule.
zt_status zt_schedule_build(zt_schedule *s, zt_schedule_kind kind, int n_stages, int stage,
                            int n_micro);
// The same with V = n_chunks chunks per stage: interleaved only (V >= 1; V = 1 is 1F1B's
// order); Megatron's order: virtual forward j (0 <= j < m·V) is micro-batch
// (j / (p·V))·p + j mod p of chunk (j / p) mod V, virtual backward j the same micro-batch
// of chunk V-1 - (j / p) mod V; warmup = min((p-s-1)·2 + (V-1)·p, m·V) forwards, then one
// forward + one backward, then the cooldown backwards. Its transfers are single sends and
// receives, each next to the compute that makes or needs it: they need a transport whose
// sends do not wait for the receiver (the simulator's ZT_SIM_NONBLOCKING; Megatron batches them
// as isend/irecv). ZT_ERR if V < 1, n_micro is not a multiple of n_stages (V >= 2), or
// n_stages < 2 with V >= 2; other kinds take V = 1 only.
zt_status zt_schedule_build_chunks(zt_schedule *s, zt_schedule_kind kind, int n_stages,
                                   int stage, int n_micro, int n_chunks);
void zt_schedule_free(zt_schedule *s);

// The largest number of micro-batches whose FWD has run and whose backward has not
// finished (BWD, or BWD_W where the backward is split), at any point of the list, over all
// chunks: min(n_stages - stage, n_micro) under 1F1B, n_micro under GPipe, min(n_stages,
// n_micro) under ZB-H1 (tested). The memory planner sizes the stage's activation memory by
// it. Also an upper bound on the micro-batches "live" at once counting a received, not yet
// forwarded input; under 1F1B and GPipe those are always consecutive, so an executor may keep
// micro k in activation slot k % peak (tested).
int zt_schedule_peak_in_flight(const zt_schedule *s);
// The activation slots chunk `chunk` of the stage needs: the largest number of its
// micro-batches live at once, a micro-batch's life running from its RECV_FWD (or its FWD
// where there is none) to the end of its backward. A chunk's forwards and its backwards each
// run in micro-batch order, so the live ones are consecutive and micro-batch k may take slot
// k mod this (the interleaved executor's slots, and the planner's). With V = 1 and no
// receive before the forward it equals zt_schedule_peak_in_flight.
int zt_schedule_chunk_slots(const zt_schedule *s, int chunk);
// The largest number of micro-batches whose BWD_B has run and whose BWD_W has not (0 for
// the kinds without the split): what W needs kept past B (the activation gradients).
int zt_schedule_peak_w_pending(const zt_schedule *s);

// Each compute action's cost in time units: FWD f, BWD_B b, BWD_W w, a combined BWD b + w.
typedef struct {
    int f, b, w; // each >= 1
} zt_sched_costs;

// How the simulator's point-to-point behaves.
typedef enum {
    ZT_SIM_RENDEZVOUS, // blocking: a send completes only once the peer posted the receive
    ZT_SIM_NONBLOCKING, // as pipe_comm.h's nonblocking path: a send completes at once (in
                        // flight), a receive is posted at its action and waited for by the
                        // compute that reads what it brings
} zt_sim_transport;

// What a simulation measured, per stage.
typedef struct {
    long busy;          // time units computing
    long idle;          // the step's span (ticks) minus busy: waits and the tail
    int peak_held;      // as zt_schedule_peak_in_flight, over the run
    int peak_w_pending; // as zt_schedule_peak_w_pending, over the run
} zt_sim_stage;

// One compute action as it ran (for a timeline): stage, action index, start and end.
typedef struct {
    int stage, action;
    long start, end;
} zt_sim_event;

// Runs the lists of all n_stages stages together (stages[i].stage == i, all of one n_micro
// and n_chunks). Under ZT_SIM_RENDEZVOUS: a send completes only once the peer has posted the
// matching receive, a combined op once both its halves have matched, a receive once the
// peer's send is posted (the worst case of blocking point-to-point). Under
// ZT_SIM_NONBLOCKING a send completes when posted and a receive's wait moves to the compute
// that reads it. Messages are matched per channel (activations s -> next,
// gradients next -> s) in order, naming (micro-batch, virtual stage), so a channel whose two
// ends disagree is an error. Communication costs no time; compute costs `costs`.
// Checked as the lists run (ZT_ERR naming the stage, action and what is missing): every
// action's inputs exist (FWD: the chunk's input received, or the first virtual stage;
// BWD/BWD_B: its FWD ran and its output gradient was received, or the last virtual stage;
// BWD_W: its BWD_B ran; a send: the compute that makes its message ran; under nonblocking a
// compute waits for a posted receive, and one never posted is the error), nothing runs twice,
// and at the end every micro-batch's forward and backward ran on every chunk. ZT_ERR naming
// every stage's blocked action on a deadlock. On success *ticks_out = the time at which the
// last stage finishes; per_stage (n_stages entries, or NULL) gets each stage's figures;
// events (NULL, or room for every compute action of every list) gets the compute actions in
// the order they started, *n_events their count. Allocates only temporaries.
zt_status zt_schedule_simulate_lists(const zt_schedule *stages, int n_stages,
                                     const zt_sched_costs *costs, zt_sim_transport transport,
                                     long *ticks_out, zt_sim_stage *per_stage,
                                     zt_sim_event *events, int *n_events);
// Builds every stage's list of `kind` (n_chunks: zt_schedule_build_chunks) and simulates it;
// costs: n_stages entries, or one for every stage with `same_costs`.
zt_status zt_schedule_simulate(zt_schedule_kind kind, int n_stages, int n_micro, int n_chunks,
                               const zt_sched_costs *costs, int same_costs,
                               zt_sim_transport transport, long *ticks_out,
                               zt_sim_stage *per_stage);
// As zt_schedule_simulate with a cost per virtual stage: costs[c * n_stages + s] (n_stages *
// n_chunks entries) prices stage s's chunk c, so each chunk costs what its own units do (the
// planner: zerotrain plan's interleaved layouts).
zt_status zt_schedule_simulate_virtual(zt_schedule_kind kind, int n_stages, int n_micro,
                                       int n_chunks, const zt_sched_costs *costs,
                                       zt_sim_transport transport, long *ticks_out,
                                       zt_sim_stage *per_stage);

#endif
