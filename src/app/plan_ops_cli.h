// `zerotrain plan --ops-json FILE`: one training step's ops at the train flags' shapes on a
// device's backend, per op and per call shape, as JSON (bench/gpu_model.py prices them).
#ifndef ZT_PLAN_OPS_CLI_H
#define ZT_PLAN_OPS_CLI_H

#include "config.h"
#include "plan_device.h"

// Records one step of cfg's run (one rank, the whole model) on d's backend, with the loss
// chunk a run on d would pick (a GPU's: by its memory, src/app/train_loss_chunk.c), and
// writes it to path. ZT_ERR for a layout other than one rank, a file that cannot be written.
zt_status zt_plan_ops_json(const zt_config *cfg, const zt_plan_device *d, const char *path);

#endif
