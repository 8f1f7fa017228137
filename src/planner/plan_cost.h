// The work of one micro-batch on one stage, recorded from the model's own calls: each pass
// (forward, backward, or the backward's input and weight halves) run once on the recording
// backend (kernels/backend_record.h) and the tp group's recording communicator
// (comm/comm_record.h) at the spec's shapes, and the optimizer's step on a shard. What the
// time model prices (plan_time.h; docs/design.md "Step-time model").
#ifndef ZT_PLAN_COST_H
#define ZT_PLAN_COST_H

#include "adamw.h"
#include "backend_record.h"
#include "comm_record.h"
#include "planner.h"

// One pass of one micro-batch on tp rank 0 of a stage.
typedef struct {
    zt_record ops;     // the backend ops it issued, by phase
    zt_comm_record tp; // the tp group's collectives it issued (tp > 1)
} zt_plan_pass;

typedef struct {
    zt_plan_pass f;    // zt_gpt2_forward with backward (the last stage's head gradient too)
    zt_plan_pass b;    // zt_gpt2_backward; split: zt_gpt2_backward_input
    zt_plan_pass w;    // split only: zt_gpt2_backward_weight (else zero)
    int split;         // the schedule splits the backward (ZB-H1)
    double act_bytes;  // the stage's output (Nr x C of the stream's dtype: the model's): one
                       // pipeline transfer's bytes, an activation or its gradient
    size_t numel;      // the stage's flat buffer, padded to dp x ZT_ALIGN_ELEMS (elements)
} zt_plan_stage_work;

// The work of units [first, last) under spec `s` (its tp, sequence parallelism,
// recomputation, dtype, micro-batch and sequence; split: record the backward in two).
// Fails as zt_gpt2_init does (a shape tp cannot split). A search asks for the same stage
// many times: the answers are kept (keyed by everything they depend on: the micro-batch,
// sequence, dp, tp, sequence parallelism, recomputation, dtype, split, units, shape and
// backend) in a process-wide memo of bounded size.
zt_status zt_plan_stage_work_of(const zt_plan_spec *s, int first, int last, int split,
                                zt_plan_stage_work *out);

// The hyperparameters of a recorded update: the ops it issues do not depend on them.
extern const zt_adamw_config zt_plan_adamw_config;

// The optimizer's step on the shard [lo, hi) of a rank's flat buffer (lay: its tensors, and
// its padded length), as the trainer runs it: the gradient's sum of squares over the shard
// (zt_grad_sumsq; count_tied: the rank counts the tied embedding), then the spec's update,
// one call per tensor piece in the shard; recorded. Fails as zt_adamw8bit_init does.
zt_status zt_plan_optimizer_work(const zt_plan_spec *s, const zt_layout *lay, size_t lo,
                                 size_t hi, int count_tied, zt_record *out);

#endif
