// The checkpoint's view of a configured run: a zt_ckpt_run from the resolved options.
#ifndef ZT_CKPT_VIEW_H
#define ZT_CKPT_VIEW_H

#include "ckpt.h"
#include "config.h"

// What a checkpoint records of the run `c` describes (ckpt.h): where it goes and the options
// its manifest holds. Its `dir` and `partition` point into `c`, which must outlive it.
zt_ckpt_run zt_ckpt_view_of(const zt_config *c);

#endif
