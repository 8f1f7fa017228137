// A dataset's file list: --data / --val-data's comma-separated list and glob patterns, expanded.
#ifndef ZT_DATA_SHARDS_H
#define ZT_DATA_SHARDS_H

#include "common.h"

// The paths of a data spec, in the order they are read (caller frees with zt_data_paths_free).
typedef struct {
    char **paths;  // (n)
    int n;
} zt_data_paths;

// Expands spec: a path naming an existing file is that one file (even with a comma or a
// wildcard in its name); otherwise the spec is a comma-separated list whose items are paths or
// glob patterns (*, ?, [...]), each pattern's matches in name order (C locale), the items in
// the order given. A pattern that matches nothing, an empty item or a file named twice is an
// error naming it and the fix. On error *out is empty.
zt_status zt_data_paths_expand(zt_data_paths *out, const char *spec);
void zt_data_paths_free(zt_data_paths *p);

#endif
