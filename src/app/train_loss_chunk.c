// The automatic loss chunk of a run on a GPU: sized by the device's free memory (a CPU's run
// keeps the model's host rule, zt_gpt2_auto_loss_chunk: 64 MiB of logits).
#include "trainer.h"

#include "gpt2.h"

// A GPU's automatic chunk may take this share of the smallest free device memory among the
// ranks: 1/16 of an 80 GB H100 (about 4.9 GB) holds GPT-2 124M's whole micro-batch at B16
// T1024 (16384 x 50304 fp32 logits, 3.3 GB), so its head runs as one lm-head product and one
// wte-gradient product instead of 50 chunks of 328 tokens, while the rest of the device stays
// for everything else (the fit check then counts the chunk chosen here).
#define DEVICE_LOGITS_SHARE 16

int zt_trainer_device_loss_chunk(const zt_plan_spec *p, double free_bytes) {
    size_t budget = (size_t)(free_bytes / DEVICE_LOGITS_SHARE);
    if (budget < ZT_LOSS_CHUNK_HOST_BYTES) budget = ZT_LOSS_CHUNK_HOST_BYTES; // the host rule's
    return zt_gpt2_loss_chunk_for_budget(p->shape.padded_vocab / p->tp,
                                         p->micro_batch * p->seq, (size_t)p->param_bytes,
                                         budget);
}

void zt_trainer_pick_loss_chunk(zt_trainer *t) {
    const zt_config *c = t->cfg;
    if (c->loss_chunk > 0 || !t->be->caps->device_memory) return; // given, or the host rule
    size_t free_b = 0, total_b = 0, held = 0;
    (void)t->be->ops->memory_info(t->be, &free_b, &total_b, &held);
    // every rank of a tp group must cut its loss alike (one all-reduce per chunk): the
    // smallest free memory of the world decides, as -max(-free)
    double neg_free = -(double)free_b, neg_min = 0;
    zt_comm_all_reduce(&t->grid.world_comm, &neg_free, &neg_min, 1, ZT_F64, ZT_REDUCE_MAX, NULL);
    t->plan.loss_chunk = zt_trainer_device_loss_chunk(&t->plan, -neg_min);
}
