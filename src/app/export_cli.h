// `zerotrain export`: merges a checkpoint into one Hugging Face directory.
#ifndef ZT_EXPORT_CLI_H
#define ZT_EXPORT_CLI_H

#include <stdio.h>

void zt_export_usage(FILE *f);
// Runs the command on its arguments (after `export`); the process's exit status.
int zt_export_main(int argc, char **argv);

#endif
