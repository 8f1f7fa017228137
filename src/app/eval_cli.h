// `zerotrain eval`: a model's validation loss and perplexity, without training.
#ifndef ZT_EVAL_CLI_H
#define ZT_EVAL_CLI_H

#include <stdio.h>

void zt_eval_usage(FILE *f);

// Runs the command on its arguments (after `eval`) on every rank of the MPI world it starts;
// argv0 locates the embedded default data. The process's exit status.
int zt_eval_main(int argc, char **argv, const char *argv0);

#endif
