// The op list's names and phases by number (backend_op_ids.h), generated from backend_ops.h.
#include "backend_op_ids.h"

static const char *const names[ZT_OPID_COUNT] = {
#define ZT_OP(ret, name, ...) #name,
#include "backend_ops.h"
#undef ZT_OP
};

static const int phases[ZT_OPID_COUNT] = {
#define ZT_OP(ret, name, group, phase, ...) phase,
#include "backend_ops.h"
#undef ZT_OP
};

const char *zt_op_name(int id) { return id >= 0 && id < ZT_OPID_COUNT ? names[id] : NULL; }

int zt_op_phase(int id) { return id >= 0 && id < ZT_OPID_COUNT ? phases[id] : ZT_OP_UNTIMED; }
