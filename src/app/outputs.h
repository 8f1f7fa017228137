// Output paths (--log, --save), checked before any work: writable, and never an input.
#ifndef ZT_OUTPUTS_H
#define ZT_OUTPUTS_H

#include "config.h"

// Checks, without leaving anything behind, that --log can be written (creating it if
// needed) and that --save is a writable directory or can be created, and refuses an output
// that is the same file (device and inode, not name) as --data, --val-data, --init-from
// or --config. ZT_ERR with a message naming the flag, the path and the reason.
zt_status zt_outputs_check(const zt_config *cfg);

// Whether paths a and b name the same file: the same device and inode when both exist,
// else the same canonical directory and name (so "out.bin" and "./out.bin" are one file
// before either is written).
int zt_same_path(const char *a, const char *b);

#endif
