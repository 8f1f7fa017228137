// A backend that times another (`--profile`, src/core/profile.h): each op runs the inner
// backend's, waits for it (sync: a GPU op is asynchronous) and adds its time to its phase.
#ifndef ZT_BACKEND_PROFILE_H
#define ZT_BACKEND_PROFILE_H

#include "backend.h"
#include "backend_op_ids.h"
#include "profile.h"

typedef struct {
    const zt_backend *inner;
    zt_profile *acc;
    zt_op_record *by_op; // NULL, or each timed op's calls, flops and time also counted by op
                         // (the caller sets it after init; bytes stay 0: nothing measures
                         // them)
    zt_backend_i ops; // the timing table, named as the inner backend, with its gaps
} zt_backend_profile_state;

// out (and st, which out->impl points at) must outlive every use of out.
void zt_backend_profile_init(zt_backend *out, zt_backend_profile_state *st,
                             const zt_backend *inner, zt_profile *acc);

// The table of the `top` ops of `r` (summed over `steps` steps, each step_s long on average)
// that took the most time: ms/step (its waits included: each op is synced), share of the
// step, calls per step and microseconds per call.
void zt_profile_print_ops(FILE *f, const zt_op_record *r, int steps, double step_s, int top);

#endif
