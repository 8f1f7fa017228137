// What every backend shares: agreement on a status, and the collective trace.
#include "comm.h"

zt_status zt_comm_agree(const zt_comm *c, zt_status s) {
    // MAX of (0 for ok, size - rank for failed) names the lowest failing rank.
    int32_t mine = s == ZT_OK ? 0 : c->size - c->rank, worst;
    zt_comm_all_reduce(c, &mine, &worst, 1, ZT_I32, ZT_REDUCE_MAX, NULL);
    if (worst == 0) return ZT_OK;
    int failed = c->size - worst;
    if (c->rank == failed && failed != 0) zt_error_report(1);
    if (c->rank != failed) zt_errorf("rank %d failed during setup (its message is above)", failed);
    return ZT_ERR;
}

zt_comm_trace zt_comm_trace_state;
