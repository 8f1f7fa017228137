// `zerotrain train`, the default command, and the start and end it shares with `eval`.
#ifndef ZT_TRAIN_CLI_H
#define ZT_TRAIN_CLI_H

#include "comm.h"
#include "config.h"

// Runs the command on its arguments (after `train`, if given) on every rank of the MPI world
// it starts; argv0 locates the embedded default data. The process's exit status.
int zt_train_main(int argc, char **argv, const char *argv0);

// The start of a command that runs the model over the MPI world (train, eval): MPI up, the
// world duplicated into `world`, the fatal hook set. 0 where the launch started several
// processes that MPI cannot join (refused with one message; MPI is finalized: exit 1).
int zt_run_init_world(zt_comm *world);
// Then its options: parsed and the same on every rank, the environment, and the model shape
// of --resume or --init-from adopted (*start: the step a --resume begins at). `only` NULL:
// training, which also checks its outputs and installs the preemption signals; else the
// NULL-terminated names of the options the command uses, every other one reset to its
// default (zt_config_keep_only). Agreed on every rank.
zt_status zt_run_options(const zt_comm *world, zt_config *cfg, int argc, char **argv,
                         const char *const *only, int *start);
// Reports the error (rank 0), frees the world and finalizes MPI. 1 when s failed, else 0.
int zt_run_end(zt_comm *world, zt_status s);

#endif
