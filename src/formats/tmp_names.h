// Temporary names of outputs being written ("<path>.tmp.<pid>.<host>": whose it is), and the
// removal of those a dead writer left: a kill -9 between creating and renaming an output left
// them for good (an export's directory, prepare's token files).
#ifndef ZT_TMP_NAMES_H
#define ZT_TMP_NAMES_H

#include <stddef.h>

#include "common.h"

// "<path>.tmp.<pid>.<host>" into out; ZT_ERR when it does not fit `size` or its last
// component would pass NAME_MAX (a name near 255 bytes passed every check and failed only
// when the temporary was created).
zt_status zt_tmp_name(char *out, size_t size, const char *path);

// The pid of `name` when it is a temporary name of `base` (a file name, no directory)
// whose writer died on this host: its pid runs no process here. -1 otherwise: another
// host's, a live process's, this process's, or not such a name.
long zt_tmp_dead_pid(const char *name, const char *base);

// Calls remove(parent/name, pid, arg) for each dead writer's temporary of `path` in its
// directory.
void zt_tmp_each_dead(const char *path, void (*remove)(const char *tmp, long pid, void *arg),
                      void *arg);

#endif
