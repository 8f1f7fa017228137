// One whole-model training step on one rank, run or recorded (plan_step_ops.h).
#include "plan_step_ops.h"

#include <string.h>

#include "grad_norm.h"
#include "layout.h"
#include "plan_cost.h"


zt_status zt_plan_step_init(zt_plan_step *st, const zt_plan_spec *s, const zt_backend *be) {
    memset(st, 0, sizeof *st);
    if (s->dp != 1 || s->pp != 1 || s->tp != 1)
        return zt_errorf("one step's ops are recorded for one rank holding the whole model "
                         "(got --dp %d --pp %d --tp %d): give --dp 1 --pp 1 --tp 1",
                         s->dp, s->pp, s->tp);
    zt_dtype dt = s->param_bytes == 2 ? ZT_BF16 : ZT_F32;
    zt_act_options opts = {s->recompute, 0, 0};
    ZT_TRY(zt_gpt2_init(&st->model, be, &s->shape, 0, zt_unit_count(&s->shape), 1, 0,
                        ZT_ALIGN_ELEMS, ZT_ALIGN_ELEMS, s->micro_batch, s->seq, s->loss_chunk, 1,
                        NULL, dt, &opts));
    st->numel = zt_round_up(st->model.layout.numel, ZT_ALIGN_ELEMS);
    st->is_8bit = s->is_8bit;
    st->grad_accum = s->grad_accum > 0 ? s->grad_accum : 1;
    if (s->is_8bit)
        ZT_TRY(zt_adamw8bit_init(&st->opt8, be, &st->model.layout, 0, st->numel, &s->opt8, dt));
    else zt_adamw_init(&st->opt, be, 0, st->numel, dt);
    size_t BT = (size_t)s->micro_batch * s->seq;
    st->tokens = zt_be_alloc(be, ZT_MEM_WORKSPACE, 2 * BT * sizeof(int32_t));
    return ZT_OK;
}

void zt_plan_step_run(zt_plan_step *st) {
    zt_gpt2 *m = &st->model;
    const zt_backend *be = m->be;
    size_t BT = (size_t)m->B * m->T;
    zt_gpt2_zero_grads(m);
    float loss_scale = (float)(1.0 / ((double)BT * st->grad_accum));
    for (int k = 0; k < st->grad_accum; k++) {
        zt_gpt2_forward(m, st->tokens, NULL, st->tokens + BT, 1, loss_scale);
        zt_gpt2_backward(m, st->tokens, NULL, NULL);
    }
    (void)zt_gpt2_take_loss(m);
    double sumsq[2];
    zt_grad_sumsq(be, sumsq, m->grads, m->dtype, &m->layout, 0, st->numel, 1, 1);
    const zt_adamw_config *c = &zt_plan_adamw_config;
    if (st->is_8bit) zt_adamw8bit_step(&st->opt8, m->params, m->grads, &m->layout, c, c->lr, 1.0f);
    else zt_adamw_step(&st->opt, m->params, m->grads, &m->layout, c, c->lr, 1.0f);
}

void zt_plan_step_free(zt_plan_step *st) {
    if (st->model.be && st->tokens) zt_be_free(st->model.be, st->tokens);
    if (st->is_8bit) zt_adamw8bit_free(&st->opt8);
    else zt_adamw_free(&st->opt);
    if (st->model.be) zt_gpt2_free(&st->model);
    memset(st, 0, sizeof *st);
}

zt_status zt_plan_step_ops(const zt_plan_spec *s, zt_op_record *ops, zt_op_shapes *shapes,
                           size_t *numel) {
    zt_record by_phase;
    memset(&by_phase, 0, sizeof by_phase);
    zt_backend be;
    zt_backend_record_state *rs = calloc(1, sizeof *rs);
    ZT_ASSERT(rs);
    zt_backend_record_init(&be, rs, s->backend, &by_phase);
    zt_plan_step *st = calloc(1, sizeof *st);
    ZT_ASSERT(st);
    zt_status status = zt_plan_step_init(st, s, &be);
    if (status == ZT_OK) {
        memset(ops, 0, sizeof *ops); // init's zero-fills are not the step's work
        if (shapes) shapes->n = 0;
        rs->by_op = ops;
        rs->shapes = shapes;
        zt_plan_step_run(st);
        if (numel) *numel = st->numel;
        rs->by_op = NULL;
        rs->shapes = NULL;
    }
    zt_plan_step_free(st);
    free(st);
    zt_backend_record_free(rs);
    free(rs);
    return status;
}
