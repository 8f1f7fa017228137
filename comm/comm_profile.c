// The timing decorator for communicators (comm_profile.h). A blocking op's time includes
// the wait for its peers; a stream (NCCL) op is timed as issued. A nonblocking op counts
// its issue, every poll (test) and its wait: the time the caller spent in communication,
// not the time the transfer took (the part hidden behind computation is not comm time).
#include "comm_profile.h"

#define ST(c) ((const zt_comm_profile_state *)(c)->impl)

#define TIMED(call)                                                       \
    do {                                                                  \
        const zt_comm *in = ST(c)->inner;                                 \
        zt_profile_mark mark_;                                            \
        zt_profile_begin(&mark_);                                         \
        call;                                                             \
        zt_profile_end(ST(c)->acc, &mark_, ZT_PHASE_COMM, 0);             \
    } while (0)

static void p_all_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                         zt_dtype dt, zt_reduce_op op, void *stream) {
    TIMED(in->ops->all_reduce(in, send, recv, count, dt, op, stream));
}
static void p_reduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                             zt_dtype dt, zt_reduce_op op, void *stream) {
    TIMED(in->ops->reduce_scatter(in, send, recv, count, dt, op, stream));
}
static void p_all_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                         zt_dtype dt, void *stream) {
    TIMED(in->ops->all_gather(in, send, recv, count, dt, stream));
}
static void p_broadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                        void *stream) {
    TIMED(in->ops->broadcast(in, buf, count, dt, root, stream));
}
static void p_send(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                   int tag, void *stream) {
    TIMED(in->ops->send(in, buf, count, dt, peer, tag, stream));
}
static void p_recv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                   void *stream) {
    TIMED(in->ops->recv(in, buf, count, dt, peer, tag, stream));
}
static void p_send_recv(const zt_comm *c, const void *sendbuf, size_t send_count, int dst,
                        void *recvbuf, size_t recv_count, int src, zt_dtype dt, int tag,
                        void *stream) {
    TIMED(in->ops->send_recv(in, sendbuf, send_count, dst, recvbuf, recv_count, src, dt, tag,
                             stream));
}
static void p_barrier(const zt_comm *c, void *stream) { TIMED(in->ops->barrier(in, stream)); }
static void p_split(const zt_comm *c, int color, int key, zt_comm *out) {
    const zt_comm *in = ST(c)->inner;
    in->ops->split(in, color, key, out);
}
static void p_free(zt_comm *c) {} // the inner communicator is its owner's to free
// The inner backend may have no nonblocking collectives (NCCL, for now).
#define HAVE(fn)                                                                        \
    ZT_ASSERTF(ST(c)->inner->ops->fn, #fn ": the %s backend has no nonblocking collectives " \
               "yet (TODO)", ST(c)->inner->ops->name)
// The request is the inner backend's (its impl); zt_comm_test/wait come back through the
// decorator because the wrapper records c, this communicator.
static void p_iall_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                          zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *req) {
    HAVE(iall_reduce);
    TIMED(in->ops->iall_reduce(in, send, recv, count, dt, op, stream, req));
}
static void p_ireduce(const zt_comm *c, const void *send, void *recv, size_t count, zt_dtype dt,
                      zt_reduce_op op, int root, void *stream, zt_comm_req *req) {
    HAVE(ireduce);
    TIMED(in->ops->ireduce(in, send, recv, count, dt, op, root, stream, req));
}
static void p_ireduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                              zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *req) {
    HAVE(ireduce_scatter);
    TIMED(in->ops->ireduce_scatter(in, send, recv, count, dt, op, stream, req));
}
static void p_iall_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                          zt_dtype dt, void *stream, zt_comm_req *req) {
    HAVE(iall_gather);
    TIMED(in->ops->iall_gather(in, send, recv, count, dt, stream, req));
}
static void p_ibroadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                         void *stream, zt_comm_req *req) {
    HAVE(ibroadcast);
    TIMED(in->ops->ibroadcast(in, buf, count, dt, root, stream, req));
}
static void p_isend(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                    int tag, void *stream, zt_comm_req *req) {
    TIMED(in->ops->isend(in, buf, count, dt, peer, tag, stream, req));
}
static void p_irecv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                    void *stream, zt_comm_req *req) {
    TIMED(in->ops->irecv(in, buf, count, dt, peer, tag, stream, req));
}
static int p_test(const zt_comm *c, zt_comm_req *req) {
    int done = 0;
    TIMED(done = in->ops->test(in, req));
    return done;
}
static void p_wait(const zt_comm *c, zt_comm_req *req) { TIMED(in->ops->wait(in, req)); }

// Two tables, so that the decorator has nonblocking point-to-point exactly when the inner
// backend does (zt_comm_has_async_p2p is how callers choose).
#define PROFILE_OPS                          \
    .name = "profile",                      \
    .all_reduce = p_all_reduce,             \
    .reduce_scatter = p_reduce_scatter,     \
    .all_gather = p_all_gather,             \
    .broadcast = p_broadcast,               \
    .send = p_send,                         \
    .recv = p_recv,                         \
    .send_recv = p_send_recv,               \
    .barrier = p_barrier,                   \
    .split = p_split,                       \
    .free = p_free,                         \
    .iall_reduce = p_iall_reduce,           \
    .ireduce = p_ireduce,                   \
    .ireduce_scatter = p_ireduce_scatter,   \
    .iall_gather = p_iall_gather,           \
    .test = p_test,                         \
    .wait = p_wait,                         \
    .ibroadcast = p_ibroadcast

static const zt_comm_i profile_ops = {PROFILE_OPS};
static const zt_comm_i profile_ops_p2p = {PROFILE_OPS, .isend = p_isend, .irecv = p_irecv};

void zt_comm_profile_init(zt_comm *out, zt_comm_profile_state *st, const zt_comm *inner,
                          zt_profile *acc) {
    st->inner = inner;
    st->acc = acc;
    out->ops = zt_comm_has_async_p2p(inner) ? &profile_ops_p2p : &profile_ops;
    out->impl = st;
    out->rank = inner->rank;
    out->size = inner->size;
}
