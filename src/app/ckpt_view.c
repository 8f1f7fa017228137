// The checkpoint's view of a configured run (ckpt_view.h).
#include "ckpt_view.h"

zt_ckpt_run zt_ckpt_view_of(const zt_config *c) {
    return (zt_ckpt_run){
        .dir = c->ckpt_dir, .keep = c->ckpt_keep, .zero = c->zero, .schedule = c->schedule,
        .partition = c->partition, .micro_batch = c->micro_batch, .seq = c->seq,
        .grad_accum = c->grad_accum, .steps = c->steps, .warmup = c->warmup,
        .shuffle = c->shuffle, .lr = c->lr, .lr_final_frac = c->lr_final_frac,
        .weight_decay = c->weight_decay, .beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps,
        .grad_clip = c->grad_clip,
        .lr_schedule = zt_config_enum_name("lr-schedule", (int)c->lr_schedule),
        .optim_block = c->optim_block, .optim_min_8bit = c->optim_min_8bit,
        .optim_fp32_embedding = c->optim_fp32_embedding, .seed = c->seed};
}
