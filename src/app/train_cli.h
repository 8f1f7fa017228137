// `zerotrain train`, the default command.
#ifndef ZT_TRAIN_CLI_H
#define ZT_TRAIN_CLI_H

// Runs the command on its arguments (after `train`, if given) on every rank of the MPI world
// it starts; argv0 locates the embedded default data. The process's exit status.
int zt_train_main(int argc, char **argv, const char *argv0);

#endif
