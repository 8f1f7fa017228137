// TensorBoard event files: scalars per step, as TFRecords of tensorboard.Event messages.
#ifndef ZT_TB_EVENTS_H
#define ZT_TB_EVENTS_H

#include <stdint.h>
#include <stdio.h>

#include "common.h"

typedef struct {
    FILE *f;
    char path[4200];
} zt_tb_writer;

// Creates DIR (and its parents) if needed and DIR/events.out.tfevents.<time>.<host>.<pid>
// (TensorBoard reads files whose name holds "tfevents"), starting with the file_version event.
// Errors name the path and the fix; on error nothing is open (zt_tb_close is still safe).
zt_status zt_tb_open(zt_tb_writer *w, const char *dir);

// One event at `step` (wall time now): the n scalars (tags[i], values[i]) in one summary, flushed to the file
// so that TensorBoard shows the step while the run goes on. Fails on a write error.
zt_status zt_tb_scalars(zt_tb_writer *w, int64_t step,
                        const char *const *tags, const float *values, int n);

void zt_tb_close(zt_tb_writer *w);

#endif
