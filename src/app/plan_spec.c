// The planner's view of a configured run (plan_spec.h).
#include "plan_spec.h"

#include <omp.h>
#include <string.h>

#include "comm_mpi.h"

zt_status zt_plan_spec_from_config(zt_plan_spec *s, const zt_config *c, int dp) {
    memset(s, 0, sizeof *s);
    if (dp < 1)
        return zt_errorf("the data-parallel degree must be at least 1 (got %d): give --dp", dp);
    s->shape = zt_config_shape(c);
    // a shape that tp cannot split fails here, with the layout's message, and never later
    // inside the `memory` partition's cost
    zt_layout lay;
    ZT_TRY(zt_layout_init(&lay, &s->shape, 0, zt_unit_count(&s->shape), c->tp, 0, ZT_ALIGN_ELEMS));
    zt_layout_free(&lay);
    s->dp = dp;
    s->pp = c->pp;
    s->tp = c->tp;
    s->seq_parallel = c->sequence_parallel;
    s->zero = c->zero;
    s->micro_batch = c->micro_batch;
    s->seq = c->seq;
    s->grad_accum = c->grad_accum;
    s->loss_chunk = c->loss_chunk;
    s->schedule = c->schedule;
    s->virtual_stages = c->virtual_stages;
    s->recompute = (zt_recompute){c->recompute, c->recompute_layers};
    snprintf(s->partition, sizeof s->partition, "%s", c->partition);
    s->is_8bit = c->optim == ZT_OPTIM_ADAMW8BIT;
    s->opt8 = zt_adamw8bit_default_options();
    s->opt8.block_size = c->optim_block;
    s->opt8.min_8bit_size = c->optim_min_8bit;
    s->opt8.fp32_embedding = c->optim_fp32_embedding;
    if (s->is_8bit) ZT_TRY(zt_adamw8bit_check_options(&s->opt8, ZT_ALIGN_ELEMS));
    s->param_bytes = (int)zt_dtype_size(c->param_dtype); // 4: fp32; 2: bf16
    s->ranks_per_node = c->ranks_per_node;
    s->gpus_per_node = c->gpus_per_node;
    s->stage_all = c->tensor_path == ZT_TENSOR_PATH_STAGED;
    zt_comm_mpi_settings cs;
    ZT_TRY(zt_config_comm_settings(c, &cs));
    s->stage_kib = cs.stage_kib;
    s->save = c->save[0] != 0;
    s->sample = c->sample_every > 0;
    s->threads = c->threads > 0 ? c->threads : omp_get_max_threads();
    s->backend = zt_backend_caps_of(c->backend);
    if (!s->backend) return zt_errorf("--backend %s is not known: use cpu or cuda", c->backend);
    return ZT_OK;
}
