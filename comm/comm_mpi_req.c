// The MPI backend's nonblocking operations: the requests behind zt_comm_iall_reduce & co.,
// isend/irecv, and their test and wait.
//
// MPI's own (Open MPI: libnbc), never the staging window: a staged chunk needs every rank at
// a barrier, which a rank busy computing is not. They progress only inside MPI calls, so the
// caller polls (zt_comm_test). Both timeout modes cover them: each counts as entered at issue
// (the staging window's record), and the wait is the blocking call that the watchdog
// watches, or with ZT_COMM_TIMEOUT_S a polled zt_mpi_wait_timed. (A rank named as not arrived
// is one whose count of entered collectives is behind: with several buckets in flight a rank
// merely slower to issue the last ones can be named beside the stuck one.)
//
// The in-place reduce_scatter moves the rank's block from the front to its place (as the
// blocking one does) once the operation completes: the request remembers the move.
//
// isend/irecv are MPI_Isend/MPI_Irecv, one call each. Point-to-point is not a collective: it
// counts as nothing entered; its wait names the peer, as the blocking send and recv do, and
// a receive checks its count at completion.
#include <string.h>

#include "comm_mpi_impl.h"

typedef struct {
    MPI_Request rq;
    char *move_dst;      // in-place reduce_scatter: where the block goes at completion
    const char *move_src;
    size_t move_bytes;
    const char *what;    // the operation's name, for the timeout's message
    int peer;            // point-to-point: the other rank (named by a timeout); -1 collective
    int recv_n;          // irecv: the elements expected (checked at completion), else -1
    zt_dtype recv_dt;
} mpi_req;
_Static_assert(sizeof(mpi_req) <= sizeof(((zt_comm_req *)0)->impl),
               "zt_comm_req.impl (comm.h) must hold the MPI backend's request");

// peer: -1 for a collective (counted as entered), else the point-to-point peer.
static mpi_req *req_start_peer(const zt_comm *c, zt_comm_req *r, const char *what, int peer) {
    mpi_req *q = (mpi_req *)r->impl;
    memset(q, 0, sizeof *q);
    q->rq = MPI_REQUEST_NULL;
    q->what = what;
    q->peer = peer;
    q->recv_n = -1;
    if (peer < 0 && (zt_mpi_timeout_s > 0 || zt_mpi_timeout_auto)) zt_mpi_coll_enter(c);
    return q;
}
static mpi_req *req_start(const zt_comm *c, zt_comm_req *r, const char *what) {
    return req_start_peer(c, r, what, -1);
}

static void req_done(mpi_req *q, const MPI_Status *st) {
    if (q->move_bytes && q->move_dst != q->move_src) memmove(q->move_dst, q->move_src, q->move_bytes);
    q->move_bytes = 0;
    if (q->recv_n >= 0) zt_mpi_check_received(st, q->recv_dt, q->recv_n, q->peer);
}

void zt_mpi_iall_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                        zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *r) {
    zt_mpi_check_stream(stream);
    int n = zt_mpi_block_count("iall_reduce", count);
    mpi_req *q = req_start(c, r, "iall_reduce");
    ZT_CHECK_MPI(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, n, zt_mpi_type(dt),
                                zt_mpi_op(op, dt), zt_mpi_handle(c), &q->rq));
}

void zt_mpi_ireduce(const zt_comm *c, const void *send, void *recv, size_t count, zt_dtype dt,
                    zt_reduce_op op, int root, void *stream, zt_comm_req *r) {
    zt_mpi_check_stream(stream);
    int n = zt_mpi_block_count("ireduce", count);
    mpi_req *q = req_start(c, r, "ireduce");
    // MPI_IN_PLACE is the root's to give; elsewhere recv is not significant
    const void *s = c->rank == root && send == recv ? MPI_IN_PLACE : send;
    ZT_CHECK_MPI(MPI_Ireduce(s, recv, n, zt_mpi_type(dt), zt_mpi_op(op, dt), root,
                             zt_mpi_handle(c), &q->rq));
}

void zt_mpi_ireduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *r) {
    zt_mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    int n = zt_mpi_block_count("ireduce_scatter", block);
    mpi_req *q = req_start(c, r, "ireduce_scatter");
    char *own = (char *)send + (size_t)c->rank * block * es;
    if ((char *)recv == own) { // in place: the result comes at the front (comm_mpi.c)
        q->move_dst = own;
        q->move_src = send;
        q->move_bytes = block * es;
        ZT_CHECK_MPI(MPI_Ireduce_scatter_block(MPI_IN_PLACE, (void *)send, n, zt_mpi_type(dt),
                                               zt_mpi_op(op, dt), zt_mpi_handle(c), &q->rq));
    } else {
        ZT_CHECK_MPI(MPI_Ireduce_scatter_block(send, recv, n, zt_mpi_type(dt), zt_mpi_op(op, dt),
                                               zt_mpi_handle(c), &q->rq));
    }
}

void zt_mpi_iall_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                        zt_dtype dt, void *stream, zt_comm_req *r) {
    zt_mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    int n = zt_mpi_block_count("iall_gather", block);
    mpi_req *q = req_start(c, r, "iall_gather");
    if ((const char *)send == (const char *)recv + (size_t)c->rank * block * es)
        ZT_CHECK_MPI(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, zt_mpi_type(dt),
                                    zt_mpi_handle(c), &q->rq));
    else
        ZT_CHECK_MPI(MPI_Iallgather(send, n, zt_mpi_type(dt), recv, n, zt_mpi_type(dt),
                                    zt_mpi_handle(c), &q->rq));
}

void zt_mpi_ibroadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                       void *stream, zt_comm_req *r) {
    zt_mpi_check_stream(stream);
    int n = zt_mpi_block_count("ibroadcast", count);
    mpi_req *q = req_start(c, r, "ibroadcast");
    ZT_CHECK_MPI(MPI_Ibcast(buf, n, zt_mpi_type(dt), root, zt_mpi_handle(c), &q->rq));
}

// One MPI call each, so a message must fit one (the blocking forms split larger ones).
void zt_mpi_isend(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                  int tag, void *stream, zt_comm_req *r) {
    zt_mpi_check_stream(stream);
    int n = zt_mpi_block_count("isend", count);
    mpi_req *q = req_start_peer(c, r, "send", peer);
    ZT_CHECK_MPI(MPI_Isend(buf, n, zt_mpi_type(dt), peer, tag, zt_mpi_handle(c), &q->rq));
}

void zt_mpi_irecv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                  void *stream, zt_comm_req *r) {
    zt_mpi_check_stream(stream);
    int n = zt_mpi_block_count("irecv", count);
    mpi_req *q = req_start_peer(c, r, "recv", peer);
    q->recv_n = n;
    q->recv_dt = dt;
    ZT_CHECK_MPI(MPI_Irecv(buf, n, zt_mpi_type(dt), peer, tag, zt_mpi_handle(c), &q->rq));
}

int zt_mpi_test(const zt_comm *c, zt_comm_req *r) {
    mpi_req *q = (mpi_req *)r->impl;
    int done = 0;
    MPI_Status st;
    ZT_CHECK_MPI(MPI_Test(&q->rq, &done, &st));
    if (done) req_done(q, &st);
    return done;
}

void zt_mpi_wait(const zt_comm *c, zt_comm_req *r) {
    mpi_req *q = (mpi_req *)r->impl;
    MPI_Status st;
    if (zt_mpi_timeout_s > 0) {
        zt_mpi_wait_timed(c, q->what, 1, &q->rq, &st, &q->peer);
    } else {
        zt_mpi_watch_begin(c, q->what, q->peer);
        ZT_CHECK_MPI(MPI_Wait(&q->rq, &st));
        zt_mpi_watch_end();
    }
    req_done(q, &st);
}
