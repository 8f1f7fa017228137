// Output paths (--log, --save, --ckpt-dir, export --out), checked before anything opens:
// writable, and never an input or a file the run itself writes, by identity.
#ifndef ZT_OUTPUTS_H
#define ZT_OUTPUTS_H

#include "config.h"

// Checks, without leaving anything behind, that --log can be written (creating it if
// needed) and that --save and --ckpt-dir are writable directories or can be created, and
// refuses an output that is, by identity (device and inode after links; a file not there
// yet by its resolved directory and name), an input (--data, --val-data, --config, and
// every file of --init-from and --resume) or a file the run writes (--save's, --ckpt-dir's
// latest, lock and step directories), a --save that is a link or shares a tree with a
// checkpoint directory, a --log inside --save. ZT_ERR with a message naming both paths
// and the fix.
zt_status zt_outputs_check(const zt_config *cfg);

// `zerotrain export CKPT --out OUT`: OUT is not a link, none of its files a file of the
// checkpoint, and the two directories apart. ZT_ERR as above.
zt_status zt_outputs_check_export(const char *ckpt, const char *out);

// Whether paths a and b name the same file: the same device and inode when both exist,
// else the same canonical directory and name (so "out.bin" and "./out.bin" are one file
// before either is written).
int zt_same_path(const char *a, const char *b);

#endif
