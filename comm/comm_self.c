// The size-1 communicator backend: every collective is a copy or nothing, so the whole
// program (and every test) runs on one rank without MPI.
#include <string.h>

#include "comm.h"

static void self_check_stream(void *stream) {
    ZT_ASSERTF(stream == NULL, "the self communicator works on host memory: stream must be NULL");
}

// With one rank every reduction is the identity: recv = send.
static void self_copy(const void *send, void *recv, size_t count, zt_dtype dt) {
    if (send != recv && count) memcpy(recv, send, count * zt_dtype_size(dt));
}

static void self_all_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, zt_reduce_op op, void *stream) {
    self_check_stream(stream);
    self_copy(send, recv, count, dt);
}

// Block = count, rank 0: the in-place form (recv == send + 0) is a no-op.
static void self_reduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                                zt_dtype dt, zt_reduce_op op, void *stream) {
    self_check_stream(stream);
    self_copy(send, recv, count, dt);
}

static void self_all_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, void *stream) {
    self_check_stream(stream);
    self_copy(send, recv, count, dt);
}

static void self_broadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                           void *stream) {
    self_check_stream(stream);
}

// The wrappers in comm.h already refuse a peer equal to this rank, which with one rank
// is every peer; these are the backstop if a backend function is called directly.
static void self_send(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                      int tag, void *stream) {
    zt_fatal(__FILE__, __LINE__, "send on a size-1 communicator: there is no peer");
}

static void self_recv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer,
                      int tag, void *stream) {
    zt_fatal(__FILE__, __LINE__, "recv on a size-1 communicator: there is no peer");
}

static void self_send_recv(const zt_comm *c, const void *sendbuf, size_t send_count, int dst,
                           void *recvbuf, size_t recv_count, int src, zt_dtype dt, int tag,
                           void *stream) {
    zt_fatal(__FILE__, __LINE__, "send_recv on a size-1 communicator: there is no peer");
}

static void self_barrier(const zt_comm *c, void *stream) { self_check_stream(stream); }

// Whatever the color (ZT_COMM_UNDEFINED included), the only group is this rank.
static void self_split(const zt_comm *c, int color, int key, zt_comm *out) {
    zt_comm_self_init(out);
}

static void self_free(zt_comm *c) {}

// Nonblocking forms: with one rank the work is the copy, done at issue; test and wait have
// nothing left to do.
static void self_iall_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                             zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *req) {
    self_all_reduce(c, send, recv, count, dt, op, stream);
}
static void self_ireduce(const zt_comm *c, const void *send, void *recv, size_t count,
                         zt_dtype dt, zt_reduce_op op, int root, void *stream, zt_comm_req *req) {
    self_all_reduce(c, send, recv, count, dt, op, stream); // root is 0, the only rank
}
static void self_ireduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                                 zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *req) {
    self_reduce_scatter(c, send, recv, count, dt, op, stream);
}
static void self_iall_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                             zt_dtype dt, void *stream, zt_comm_req *req) {
    self_all_gather(c, send, recv, count, dt, stream);
}
static void self_ibroadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                            void *stream, zt_comm_req *req) {
    self_broadcast(c, buf, count, dt, root, stream);
}
static int self_test(const zt_comm *c, zt_comm_req *req) { return 1; }
static void self_wait(const zt_comm *c, zt_comm_req *req) {}

static const zt_comm_i zt_comm_self_ops = {
    .name = "self",
    .all_reduce = self_all_reduce,
    .reduce_scatter = self_reduce_scatter,
    .all_gather = self_all_gather,
    .broadcast = self_broadcast,
    .send = self_send,
    .recv = self_recv,
    .send_recv = self_send_recv,
    .barrier = self_barrier,
    .split = self_split,
    .free = self_free,
    .iall_reduce = self_iall_reduce,
    .ireduce = self_ireduce,
    .ireduce_scatter = self_ireduce_scatter,
    .iall_gather = self_iall_gather,
    .ibroadcast = self_ibroadcast, // (isend, irecv: there is no peer)
    .test = self_test,
    .wait = self_wait,
};

void zt_comm_self_init(zt_comm *out) {
    ZT_ASSERT(out);
    out->ops = &zt_comm_self_ops;
    out->impl = NULL;
    out->rank = 0;
    out->size = 1;
}
