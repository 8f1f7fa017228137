// A backend that records the ops a caller issues instead of running them: the time model's
// costs (src/planner/plan_cost.c, docs/design.md "Step-time model") come from the model's
// own calls at the shapes it runs, and each op's flops from its entry in backend_ops.h.
#ifndef ZT_BACKEND_RECORD_H
#define ZT_BACKEND_RECORD_H

#include "backend.h"
#include "backend_op_ids.h"
#include "profile.h"

// What the recorded ops asked for, by phase (profile.h's phases).
typedef struct {
    double flops[ZT_PHASE_COUNT]; // the entries' flops formulas
    double bytes[ZT_PHASE_COUNT]; // an upper bound of the memory traffic: every pointer
                                  // argument streamed once over the op's extent (below)
    long calls[ZT_PHASE_COUNT];
} zt_record;

#define ZT_RECORD_MAX_BUFFERS 64

// One shape an op was called at: its arguments, named as the op list names them, with their
// values (sizes, scalars such as beta, enums such as the dtypes and the copy kind), a pointer
// as 1 or 0 (given, or NULL: "NULL to skip"), and how many calls had it.
#define ZT_SHAPE_MAX_ARGS 20
typedef struct {
    int op;     // zt_op_id
    int n_args;
    const char *name[ZT_SHAPE_MAX_ARGS]; // the list's parameter names (static strings)
    double value[ZT_SHAPE_MAX_ARGS];
    double flops, bytes; // one call's: the entry's formula, the traffic bound
    long calls;
} zt_op_shape;

// The distinct shapes of the recorded calls, in the order they first came.
#define ZT_OP_SHAPES_MAX 512
typedef struct {
    zt_op_shape s[ZT_OP_SHAPES_MAX];
    int n;
} zt_op_shapes;

typedef struct {
    zt_record *acc;
    zt_op_record *by_op;   // NULL, or also counted op by op (the caller sets it after init)
    zt_op_shapes *shapes;  // NULL, or every call's shape kept (set after init; more than
                           // ZT_OP_SHAPES_MAX distinct shapes is fatal)
    zt_backend_i ops; // the recording table, named "record"
    void *ptr[ZT_RECORD_MAX_BUFFERS]; // the address ranges handed out, and their lengths
    size_t len[ZT_RECORD_MAX_BUFFERS];
    int n;
} zt_backend_record_state;

// out (and st, which out->impl points at) must outlive every use of out. caps: the backend
// whose buffers and scratch the recorded caller sizes (its attention scratch, its bf16
// group); the recorder offers every op. alloc hands out fresh inaccessible address ranges
// (mmap PROT_NONE, reserved, never backed): a caller that touches one on the host faults,
// so a model of any size records in microseconds. free returns them; map is fatal.
// Call zt_backend_record_free(st) for the ranges the caller did not free.
// An op's extent: rows (N, n, n_q or B*T) times width (C, OC, 3C... as its size arguments
// name them: the widest of C, OC, ld, n_pos), or n, or bytes / 4.
void zt_backend_record_init(zt_backend *out, zt_backend_record_state *st,
                            const zt_backend_caps *caps, zt_record *acc);

void zt_backend_record_free(zt_backend_record_state *st);

#endif
