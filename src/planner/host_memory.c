// What this machine gives a run (host_memory.h).
#include "host_memory.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "memory.h"

// One number from a cgroup file ("max" = no limit: 0); 0 when the file is missing.
static double cgroup_value(const char *dir, const char *file) {
    char path[600], text[64] = "";
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(text, sizeof text, f) != NULL;
    fclose(f);
    if (!ok || !isdigit((unsigned char)text[0])) return 0;
    return strtod(text, NULL);
}

// What the memory cgroup of this process still allows (0 = no limit): cgroup v2
// memory.max - memory.current, or v1 memory.limit_in_bytes - memory.usage_in_bytes (v1
// writes a huge number for "no limit"). Read at the mount point, which a container's
// cgroup namespace makes its own cgroup; ZT_CGROUP_DIR points elsewhere (tests).
static double cgroup_room(void) {
    const char *dir = getenv("ZT_CGROUP_DIR");
    const char *v2 = dir ? dir : "/sys/fs/cgroup", *v1 = dir ? dir : "/sys/fs/cgroup/memory";
    double max = cgroup_value(v2, "memory.max"), used = cgroup_value(v2, "memory.current");
    if (max <= 0) {
        max = cgroup_value(v1, "memory.limit_in_bytes");
        used = cgroup_value(v1, "memory.usage_in_bytes");
        if (max >= 4.0e18) max = 0; // v1 writes about 2^63 for "no limit"
    }
    if (max <= 0) return 0;
    return max > used ? max - used : 1; // at the limit: nothing left, but not "no limit"
}

double zt_host_available_bytes(void) {
    double avail = zt_mem_proc_bytes("/proc/meminfo", "MemAvailable"), room = cgroup_room();
    if (room > 0 && (avail <= 0 || room < avail)) avail = room;
    return avail;
}

double zt_host_rank_limit_bytes(void) {
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 0;
    return (double)r.rlim_cur;
}
