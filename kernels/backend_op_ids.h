// The op list's entries by number, and what a step asked of each op: generated from the op
// list (backend_ops.h), for the recording backend's and the --profile decorator's per-op
// counts (backend_record.h, backend_profile.h; docs/design.md "Step-time model").
#ifndef ZT_BACKEND_OP_IDS_H
#define ZT_BACKEND_OP_IDS_H

#include "backend.h"

// ZT_OPID_<name>, in the list's order.
typedef enum {
#define ZT_OP(ret, name, ...) ZT_OPID_##name,
#include "backend_ops.h"
#undef ZT_OP
    ZT_OPID_COUNT
} zt_op_id;

// The op's name in the list ("gemm_mixed"); NULL for an id outside it.
const char *zt_op_name(int id);
// The phase the list gives the op (profile.h's, or ZT_OP_UNTIMED).
int zt_op_phase(int id);

// Calls, flops (the entry's formula), bytes (the recorder's traffic bound; 0 where the
// counter does not know it) and wall seconds (the --profile decorator's; 0 where nothing
// timed it) per op, over the ops that have a phase (the untimed ones, such as alloc,
// describe and sync, are no work).
typedef struct {
    long calls[ZT_OPID_COUNT];
    double flops[ZT_OPID_COUNT];
    double bytes[ZT_OPID_COUNT];
    double wall[ZT_OPID_COUNT];
} zt_op_record;

#endif
