// `zerotrain memory`: plans the layout the flags describe, in this one process.
#ifndef ZT_MEMORY_CLI_H
#define ZT_MEMORY_CLI_H

#include <stdio.h>

// The command's help text (its own flags, then train's).
void zt_memory_usage(FILE *f);
// Runs the command on its arguments (after `memory`); the process's exit status.
int zt_memory_main(int argc, char **argv);

#endif
