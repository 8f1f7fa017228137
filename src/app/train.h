// The training loop: data, model, optimizer, schedule, logging.
#ifndef ZT_TRAIN_H
#define ZT_TRAIN_H

#include <stdint.h>

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

// Rank 0, in place of zt_train when the --resume checkpoint is already at --steps (`step`):
// nothing is trained. With a --ckpt-dir it takes the directory's lock as a run's start does,
// removes what killed runs left there and finishes the save of step-N where a kill stopped it
// after its commit (zt_ckpt_finish_commit); then one line says the run was complete. ZT_ERR
// as a run's start (the directory in use, or holding a newer checkpoint).
zt_status zt_train_complete(const zt_config *cfg, int step);

// What `zerotrain eval` measured.
typedef struct {
    double loss;            // mean cross-entropy per token (nats) over the sequences read
    int val_batches;        // global batches read (--val-batches, or what 0 chose)
    uint64_t sequences;     // val_batches global batches of micro-batch x grad-accum x dp
    char data[ZT_PATH_MAX]; // the token file read
    int step;               // --resume: the checkpoint's completed steps; -1 otherwise
    int dp, pp, tp;
} zt_eval_result;

// The validation pass of training (zt_trainer_evaluate) alone, on the weights of --resume
// (parameters only), --init-from, or random ones from --seed, in any layout of `world`: the
// loss over --val-batches global batches of --val-data (else --data, else the embedded
// default validation split). The same samples as a training run's validation with the same
// global batch. ZT_ERR, the same on every rank, as zt_train.
zt_status zt_evaluate(const zt_config *cfg, const zt_comm *world, const char *argv0,
                      zt_eval_result *out);

#endif
