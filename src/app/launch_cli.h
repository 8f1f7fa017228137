// `zerotrain launch -np N COMMAND ...`: runs a zerotrain command on N ranks of this machine
// through mpirun, with the flags a small or shared machine needs, and says which.
#ifndef ZT_LAUNCH_CLI_H
#define ZT_LAUNCH_CLI_H

#include <stdio.h>

void zt_launch_usage(FILE *f);
// Runs the command on its arguments (after `launch`): replaces this process with mpirun, so
// it returns only on an error (the process's exit status).
int zt_launch_main(int argc, char **argv);

#endif
