// A communicator that records the collectives a caller issues instead of running them (the
// tensor-parallel traffic of a recorded step: src/planner/plan_cost.c): bytes by kind.
#ifndef ZT_COMM_RECORD_H
#define ZT_COMM_RECORD_H

#include "comm.h"

typedef enum { ZT_RECORD_ALL_REDUCE, ZT_RECORD_REDUCE_SCATTER, ZT_RECORD_ALL_GATHER,
               ZT_RECORD_KIND_COUNT } zt_record_kind;

// What the recorded collectives moved: per kind, the calls and the bytes of the whole
// buffer (`count` as comm.h defines it, times the dtype's size).
typedef struct {
    double bytes[ZT_RECORD_KIND_COUNT];
    long calls[ZT_RECORD_KIND_COUNT];
} zt_comm_record;

// Rank `rank` of a recording communicator of `size` ranks adding to `acc` (which must
// outlive it; out->impl points at it). The blocking all_reduce, reduce_scatter and
// all_gather are recorded; the table has no other operation (the model's tp group issues
// none), so zt_comm_free is the only other call it takes.
void zt_comm_record_init(zt_comm *out, int rank, int size, zt_comm_record *acc);

#endif
