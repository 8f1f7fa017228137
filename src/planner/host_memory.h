// What this machine and this process give a run: the planner's fits-check compares its
// predictions with these before anything is allocated (train.c), and `zerotrain memory`
// reports them.
#ifndef ZT_HOST_MEMORY_H
#define ZT_HOST_MEMORY_H

// The memory this machine's ranks may still use together: MemAvailable, lowered to what
// the memory cgroup allows (v2 memory.max, v1 memory.limit_in_bytes, less its usage); 0 if
// unknown.
double zt_host_available_bytes(void);

// The address-space limit of one process (ulimit -v, RLIMIT_AS) in bytes; 0 when none.
double zt_host_rank_limit_bytes(void);


#endif
