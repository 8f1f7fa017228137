// `zerotrain generate`: the command line around the KV-cache decoder (src/model/generate.h).
#ifndef ZT_GENERATE_CLI_H
#define ZT_GENERATE_CLI_H

#include <stdio.h>

// Runs `zerotrain generate` with argv[0..argc) (the flags after the command name);
// initializes and finalizes MPI itself (one process, or --tp N ranks under mpirun).
// Returns the process exit code: 0, or 1 after one error message (printed by rank 0).
int zt_generate_main(int argc, char **argv);

// The command's own options, for --help.
void zt_generate_usage(FILE *f);

#endif
