// What every backend shares: agreement on a status, and the collective trace.
#include "comm.h"

#include <string.h>

zt_status zt_comm_agree(const zt_comm *c, zt_status s) {
    // MAX of (0 for ok, size - rank for failed) names the lowest failing rank.
    int32_t mine = s == ZT_OK ? 0 : c->size - c->rank, worst;
    zt_comm_all_reduce(c, &mine, &worst, 1, ZT_I32, ZT_REDUCE_MAX, NULL);
    if (worst == 0) return ZT_OK;
    int failed = c->size - worst;
    if (failed == 0) return ZT_ERR; // rank 0 holds the message and prints it once, later
    // The finder's message travels to every rank, so that rank 0 prints it once at the
    // end: the finder printing it here and rank 0 a pointer to it made two error lines.
    char msg[2048] = ""; // the size of the pending message (src/core/common.c)
    if (c->rank == failed) snprintf(msg, sizeof msg, "%s", zt_error_message());
    zt_comm_broadcast(c, msg, sizeof msg, ZT_U8, failed, NULL);
    msg[sizeof msg - 1] = 0;
    // which rank found it: a file that one node cannot see is that node's problem
    if (strncmp(msg, "(rank ", 6) == 0) zt_errorf("%s", msg);
    else zt_errorf("(rank %d) %s", failed, msg[0] ? msg : "unknown error");
    return ZT_ERR;
}

zt_comm_trace zt_comm_trace_state;
