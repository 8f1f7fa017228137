// `zerotrain plan --calibrate`: this machine's op rates, measured by running the model's
// step on the CPU backend under the --profile decorator and dividing the recorded work of
// the same passes (plan_cost.h) by each phase's time; its copy bandwidth for the links.
#ifndef ZT_PLAN_CALIBRATE_H
#define ZT_PLAN_CALIBRATE_H

#include <stdio.h>

#include "plan_device.h"
#include "planner.h"

// Measures the rates at s's model and sequence on s->threads threads (tp 1, one stage
// holding every unit), at the micro-batch and half of it (twice it for 1): per dtype (fp32,
// and bf16 where the backend has it) 5 rounds of each size, alternating, each round a
// warm-up step then `steps` steps, each phase's median over a round's steps and then its
// fastest round (other users' work only slows a round); each phase's rate and per-call time
// fitted to the two sizes; the rounds' spread kept (d->spread); progress lines to `progress`. Also the cores that ranks reach now
// (the step alone, then in as many processes at once as the machine has cores for: other
// users' load and the shared memory bus included; the median of 5) and a message's latency
// between two threads (a ping-pong). Fills d as the `cpu` device (rates, peaks, cores and
// latency measured; the links' bandwidth half the copy bandwidth, assumed). Fails where the
// CPU backend does not open.
zt_status zt_plan_calibrate(const zt_plan_spec *s, int steps, FILE *progress, zt_plan_device *d);

#endif
