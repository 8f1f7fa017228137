// The training loop: data, model, optimizer, schedule, logging.
#ifndef ZT_TRAIN_H
#define ZT_TRAIN_H

#include "comm.h"
#include "config.h"

// Learning rate at step (0-based): linear warmup over `warmup` steps to lr, then
// constant or cosine decay to lr * lr_final_frac at the last step.
float zt_lr_at(const zt_config *cfg, int step);

// Trains as configured on the ranks of `world` (the layout is checked first). argv0
// locates the embedded default data; start is the step a --resume begins at (its manifest's,
// read once by the caller with zt_ckpt_peek; 0 without one). Returns ZT_ERR with the message
// set on a user-fixable problem (bad layout, data, NaN loss, ...), the same on every rank.
// *preempted: 1 where a preemption signal stopped the run after a checkpoint (signals.h).
zt_status zt_train(const zt_config *cfg, const zt_comm *world, const char *argv0, int start,
                   int *preempted);

#endif
