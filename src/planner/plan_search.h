// The layouts `zerotrain plan` weighs (docs/design.md "Step-time model"): every grid of the
// world (tp within a machine), micro-batch and accumulation giving the global batch,
// schedule, parameter dtype, sequence parallelism, partition and overlap, each with the
// cheapest memory savings that make it fit (the planner's own arithmetic, planner.h), timed
// by the step-time model (plan_time.h) and ranked by tokens/s.
#ifndef ZT_PLAN_SEARCH_H
#define ZT_PLAN_SEARCH_H

#include "plan_time.h"
#include "planner.h"

// The pipeline schedules the search tries. Interleaved with V = 2..ZT_PLAN_MAX_VIRTUAL chunks
// per rank where --grad-accum is a multiple of pp, every chunk keeps a unit, and the run can
// execute it (zt_plan_interleaved_runs: not over NCCL).
#define ZT_PLAN_SCHEDULES {ZT_SCHED_1F1B, ZT_SCHED_GPIPE, ZT_SCHED_ZB_H1, ZT_SCHED_INTERLEAVED}
#define ZT_PLAN_MAX_VIRTUAL 4

// What the user fixed (a flag given), by dimension: the search keeps base's value there.
typedef struct {
    int dp, pp, tp, zero, optim, dtype, recompute, seq_parallel, schedule, virtual_stages,
        micro_batch, partition, overlap;
} zt_plan_fixed;

typedef struct {
    zt_plan_spec base;    // the model, --seq, --loss-chunk, the backend, threads, and the
                          // values of the fixed dimensions
    int overlap;          // --overlap-comm of a fixed overlap
    zt_plan_fixed fixed;
    int world;
    int ranks_per_node;   // ranks of one machine (tp stays within it); 0: all on one
    long global_batch;    // sequences per step
    double limit;         // bytes a group of `sharing` consecutive ranks may use
    int sharing;          // 1: per rank (a GPU's memory); world: the ranks of one machine
} zt_plan_question;

typedef struct {
    zt_plan_spec spec;
    int overlap;
    zt_plan_time time;
    double need;          // the largest need of a group of `sharing` ranks (zt_plan_max_need)
    double rank_peak;     // the largest rank's peak bytes
} zt_plan_answer;

// Every layout that fits, fastest first, into *out (the caller frees it), *n of them; the
// first `exact` of them (at most) have need and rank_peak from every rank's plan
// (zt_plan_all), the rest from each stage's first rank. When none fits: ZT_ERR naming the
// smallest need any layout has, the layout that has it, and the fix. Also ZT_ERR when no
// layout of the world divides the global batch.
zt_status zt_plan_search(const zt_plan_question *q, const zt_plan_device *d, int exact,
                         zt_plan_answer **out, int *n);

// The flags that run answer `a`'s layout (after the model's and --seq): "--dp 8 --pp 2 ...".
void zt_plan_layout_flags(const zt_plan_spec *s, int overlap, char *buf, size_t size);

#endif
