// The step-time model (docs/design.md "Step-time model"): a layout's step on a device,
// from the recorded work of its stages (plan_cost.h) priced at the device's rates
// (plan_device.h), its collectives by a ring's latency-bandwidth cost on the link each
// group crosses, the pipeline's bubble from the schedule's own simulator
// (src/parallel/schedule.h) and the overlap --overlap-comm gives.
#ifndef ZT_PLAN_TIME_H
#define ZT_PLAN_TIME_H

#include "plan_device.h"
#include "planner.h"

// The predicted step of one layout. The parts are rank 0's (stage 0), and add up to step_s:
// what it waits for beyond its own work (the other stages' tails) is in bubble_s.
typedef struct {
    double step_s, tokens_per_s;
    double compute_s;   // its kernels, all micro-batches (recomputation included)
    double tp_s;        // its tp collectives (blocking, inside the passes)
    double pp_s;        // its pipeline transfers (counted as blocking)
    double dp_s;        // the exposed part of its dp gradient reduction and parameter gather
    double embed_s;     // the tied embedding's gradient all-reduce (first and last stage)
    double bubble_s;    // pipeline idle time and the wait for slower stages
    double optimizer_s; // its optimizer step and gradient norm
    double model_flops; // per step, without recomputation (the MFU's numerator)
    double mfu;         // model_flops / (step_s x ranks x the device's peak for the dtype)
} zt_plan_time;

// How a run's ranks sit: `ranks_per_node` consecutive world ranks share a machine (its
// links are the device's intra link; 0: all on one). overlap: --overlap-comm on.
// Fails as zt_plan_stage_work_of does, or when the schedule's simulation fails.
zt_status zt_plan_time_of(const zt_plan_spec *s, const zt_partition *p, const zt_plan_device *d,
                          int ranks_per_node, int overlap, zt_plan_time *out);

#endif
