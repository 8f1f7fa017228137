// `zerotrain plan`: the fastest layouts that fit a world of ranks, predicted (the search:
// src/planner/plan_search.h; the model: docs/design.md "Step-time model"), and
// `zerotrain plan --calibrate`, which measures this machine for `--device cpu`.
#ifndef ZT_PLAN_CLI_H
#define ZT_PLAN_CLI_H

#include <stdio.h>

// The command's help text (its own flags, then train's).
void zt_plan_usage(FILE *f);
// Runs the command on its arguments (after `plan`); the process's exit status.
int zt_plan_main(int argc, char **argv);

#endif
