// Where a step's time goes (`--profile`): every backend op and every tensor collective is
// timed and its wall time, the process's CPU time and its flops added to one phase. The
// backend and comm decorators (kernels/backend_profile.c, comm/comm_profile.c) do the
// timing around the real backend; the trainer reads the totals per step.
#ifndef ZT_PROFILE_H
#define ZT_PROFILE_H

#include <stdio.h>

typedef enum {
    ZT_PHASE_GEMM = 0,    // matrix products (gemm, matmul_*): the layers and the lm-head
    ZT_PHASE_ATTENTION,   // attention forward/backward (its own BLAS products included)
    ZT_PHASE_LOSS,        // the vocabulary-parallel cross-entropy passes
    ZT_PHASE_ELEMENTWISE, // encoder, layernorm, gelu, residual add
    ZT_PHASE_OPTIMIZER,   // AdamW / 8-bit AdamW
    ZT_PHASE_GRAD_NORM,   // sums of squares and loss sums that come back to the host
    ZT_PHASE_MEMORY,      // memset, copies, host views
    ZT_PHASE_COMM,        // tensor collectives and pipeline sends/receives (waits included)
    ZT_PHASE_COUNT
} zt_phase;

typedef struct {
    double wall[ZT_PHASE_COUNT]; // seconds
    double cpu[ZT_PHASE_COUNT];  // process CPU seconds, all threads
    double flops[ZT_PHASE_COUNT];
    long calls[ZT_PHASE_COUNT];
} zt_profile;

const char *zt_phase_name(zt_phase p);

// A timing in progress: zt_profile_begin before the op, zt_profile_end after it (once
// the op's work is done: a GPU decorator syncs first).
typedef struct {
    double wall, cpu;
} zt_profile_mark;
void zt_profile_begin(zt_profile_mark *m);
// Returns the wall seconds it added.
double zt_profile_end(zt_profile *p, const zt_profile_mark *m, zt_phase phase, double flops);

// `after` - `before`, phase by phase.
void zt_profile_diff(zt_profile *out, const zt_profile *after, const zt_profile *before);

// acc += d, phase by phase.
void zt_profile_add(zt_profile *acc, const zt_profile *d);

// Two JSON members, `{"gemm":ms,...,"other":ms},"phase_gflop":{"gemm":GFLOP,...}`, to
// follow a key: each phase's wall milliseconds in `d` (one step), "other" the rest of
// `step_s` (host code, the schedule's bookkeeping), then the flops of the phases that
// count them.
void zt_profile_write_json(FILE *f, const zt_profile *d, double step_s);

// The table of `d` (summed over `steps` steps, each step_s long on average): per phase
// ms/step, share of the step, GFLOP/s where flops were counted, and how busy the
// `threads` threads were (CPU time / (wall * threads); with OMP_WAIT_POLICY=PASSIVE a
// waiting thread sleeps, so this is the share of thread time spent working).
void zt_profile_print(FILE *f, const zt_profile *d, int steps, double step_s, int threads);

#endif
