// One training step of a rank that holds the whole model, as the trainer issues it on its
// backend, and its ops recorded per op and per shape: the inventory bench/gpu_model.py prices
// (`zerotrain plan --ops-json`; docs/design.md "Step-time model").
#ifndef ZT_PLAN_STEP_OPS_H
#define ZT_PLAN_STEP_OPS_H

#include "adamw.h"
#include "adamw8bit.h"
#include "backend_record.h"
#include "gpt2.h"
#include "planner.h"

typedef struct {
    zt_gpt2 model;
    zt_adamw opt;       // fp32 AdamW (or its bf16 form), when not is_8bit
    zt_adamw8bit opt8;  // 8-bit AdamW, when is_8bit
    int is_8bit, grad_accum;
    size_t numel;       // the optimizer's range [0, numel): the flat buffer, padded
    int32_t *tokens;    // (2, B, T) device memory: the inputs, then the targets
} zt_plan_step;

// The model, the optimizer and the token buffers of spec s's run on backend be, one rank
// holding every unit (dp, pp and tp 1: ZT_ERR otherwise, naming the fix; and as
// zt_gpt2_init fails). Free with zt_plan_step_free, which accepts a half-built one.
zt_status zt_plan_step_init(zt_plan_step *st, const zt_plan_spec *s, const zt_backend *be);

// One step's backend calls, in src/app/train_step.c's order: the gradient zeroed, each
// micro-batch's forward (with backward) and backward, the loss read, the gradient's sums of
// squares (optim/grad_norm.c), the optimizer's update (optim/adamw.c or adamw8bit.c). Not
// among them: the token upload (the trainer maps and unmaps each micro-batch's tokens,
// 2 x 4 B T bytes host to device).
void zt_plan_step_run(zt_plan_step *st);

void zt_plan_step_free(zt_plan_step *st);

// The ops one step of spec s issues on the backend s->backend describes (its caps: bf16
// group, scratch), recorded (kernels/backend_record.h): per op into *ops, each distinct call
// shape into *shapes (NULL: not kept), the flat buffer's padded length into *numel (NULL: not
// asked). Fails as zt_plan_step_init.
zt_status zt_plan_step_ops(const zt_plan_spec *s, zt_op_record *ops, zt_op_shapes *shapes,
                           size_t *numel);

#endif
