// `zerotrain prepare`: the command line around src/formats/tokenizer_prepare.c.
#ifndef ZT_PREPARE_CLI_H
#define ZT_PREPARE_CLI_H

#include <stdio.h>

// Runs `zerotrain prepare` with argv[0..argc) (the flags after the command name), in this
// one process. Returns the exit code: 0, or 1 after one message on stderr.
int zt_prepare_main(int argc, char **argv);

// The command's own options, for --help.
void zt_prepare_usage(FILE *f);

#endif
