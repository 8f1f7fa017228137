// The communication interface: collectives and point-to-point on a communicator, one
// interface struct with a size-1 `self` backend, an MPI backend (host memory), MPI with
// host staging for device memory (comm_staged.h) and an NCCL backend (device memory; built
// by `make cuda`). docs/design.md §6.
//
// Conventions every backend keeps (the zt_comm_* wrappers below check them once, so a
// backend may assume them):
//
// - Counts are in elements of `dtype`, never bytes.
// - reduce_scatter and all_gather take `count` = the length of the WHOLE buffer (the send
//   buffer of reduce_scatter, the receive buffer of all_gather), so a ZeRO step reads
//       zt_comm_reduce_scatter(c, grads, grads + r*B, N, ...);   // B = N / size
//       zt_comm_all_gather(c, params + r*B, params, N, ...);
//   `count` must be divisible by the communicator size (a fatal check: the caller pads,
//   see docs/design.md §3); rank r's block is elements [r*B, (r+1)*B), B = count / size.
// - Buffers must not overlap, except in these in-place forms (NCCL's convention; pointer
//   arithmetic in elements, `send + rank*B` meaning (T *)send + rank*B):
//     all_reduce      recv == send.
//     reduce_scatter  recv == send + rank*B: the whole input sits in the buffer and the
//                     rank's reduced block is written over its own block, so a gradient
//                     shard stays at the offset of its parameter shard. The rest of the
//                     buffer is undefined afterwards (the staged MPI path leaves it as it
//                     was; the plain-MPI path reduces into the front, as MPI_IN_PLACE
//                     does, and moves the block). On rank 0 this is
//                     recv == send. (Not MPI's "result at the front" rule: that would put
//                     rank r's gradient shard at offset 0 and its parameter shard at r*B.)
//     all_gather      send == recv + rank*B: the rank's block already sits at its place
//                     (MPI_IN_PLACE's rule too).
//   Any other overlap is a fatal error.
// - The MPI backend splits all_reduce, broadcast and point-to-point calls larger than
//   INT_MAX elements (or ZT_COMM_MPI_MAX_COUNT, comm_mpi.h) into pieces; a
//   reduce_scatter/all_gather block (count / size) must still fit in INT_MAX elements
//   (fatal otherwise; TODO).
// - Reductions: ZT_REDUCE_SUM and ZT_REDUCE_MAX on every dtype (U8 wraps on overflow; it
//   exists for moving 8-bit optimizer state, not for summing it). BF16 sums pairwise, each
//   step adding the two widened values in fp32 and rounding once to bf16 (nearest even), as
//   NCCL does; the order of the steps is each backend's, fixed from run to run.
// - Every operation takes `stream`: NULL for host backends (self, MPI — both check it);
//   the NCCL backend takes the cudaStream_t its collectives are ordered on.
// - Operations return nothing: a failure is a bug or a broken library, never user input,
//   and ends the job with a message naming file, line and rank (the MPI backend calls
//   MPI_Abort so no rank is left waiting in a collective).
// - Collectives are blocking on host backends (the i* ones below excepted) and must be
//   issued by every rank of the communicator in the same order (docs/design.md §2: "every
//   rank issues the same collectives").
// - send/recv: `peer` is a rank of this communicator; a rank may not send to itself.
//   Messages between one pair of ranks are received in the order they were sent; `tag`
//   (0..32767) must match on both sides. Do not rely on tags to reorder messages: NCCL
//   has no tags, its backend will ignore them. send and recv block until the buffer may be
//   reused; for an exchange in both directions use send_recv, which cannot deadlock.
#ifndef ZT_COMM_H
#define ZT_COMM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "dtype.h"

typedef enum { ZT_REDUCE_SUM = 0, ZT_REDUCE_MAX, ZT_REDUCE_COUNT } zt_reduce_op;

// split's color for a rank that joins no group: it gets a size-1 communicator of the same
// backend (every collective is then a copy, so it may keep issuing the same calls as the
// members do).
#define ZT_COMM_UNDEFINED (-1)

// Largest tag send/recv accept (the minimum MPI guarantees for MPI_TAG_UB).
#define ZT_COMM_TAG_MAX 32767

typedef struct zt_comm zt_comm;

// A nonblocking collective in flight (zt_comm_iall_reduce & co. below). The caller owns the
// struct (zero-filled = nothing in flight) and keeps it, and the operation's buffers
// untouched, until zt_comm_test says done or zt_comm_wait returns; the request may be
// copied meanwhile (the backend keeps no pointer to it). `impl` holds the backend's handle.
typedef struct {
    const zt_comm *c; // the communicator it runs on; NULL once complete
    _Alignas(8) unsigned char impl[64];
} zt_comm_req;

// One backend. The comm argument is the communicator the op runs on; every pointer
// argument is host memory for self/MPI and device memory for NCCL.
typedef struct zt_comm_i {
    const char *name; // "self", "mpi", "nccl"
    // recv[i] = op over ranks of send[i], i < count.
    void (*all_reduce)(const zt_comm *c, const void *send, void *recv, size_t count,
                       zt_dtype dt, zt_reduce_op op, void *stream);
    // recv[0..B) = op over ranks of send[rank*B .. (rank+1)*B), B = count / size.
    void (*reduce_scatter)(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, zt_reduce_op op, void *stream);
    // recv[r*B .. (r+1)*B) = rank r's send[0..B), B = count / size.
    void (*all_gather)(const zt_comm *c, const void *send, void *recv, size_t count,
                       zt_dtype dt, void *stream);
    // buf[0..count) = root's buf[0..count).
    void (*broadcast)(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                      void *stream);
    void (*send)(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                 int tag, void *stream);
    // Receives exactly `count` elements (a shorter or longer message is fatal).
    void (*recv)(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                 void *stream);
    // send to `dst` and receive from `src` at once (either may be the same rank as the
    // other, never this rank); sendbuf and recvbuf must not overlap.
    void (*send_recv)(const zt_comm *c, const void *sendbuf, size_t send_count, int dst,
                      void *recvbuf, size_t recv_count, int src, zt_dtype dt, int tag,
                      void *stream);
    void (*barrier)(const zt_comm *c, void *stream);
    // Collective over c: ranks with the same color form one new communicator, ordered by
    // key (ties by rank in c). color >= 0 or ZT_COMM_UNDEFINED. `out` is the caller's
    // to zt_comm_free.
    void (*split)(const zt_comm *c, int color, int key, zt_comm *out);
    void (*free)(zt_comm *c);
    // Nonblocking collectives (NULL: the backend has none yet; the wrappers refuse the call).
    // Same results and in-place rules as the blocking ones, complete at test/wait.
    void (*iall_reduce)(const zt_comm *c, const void *send, void *recv, size_t count,
                        zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *req);
    // recv[0..count) on rank `root` = op over ranks of send[0..count); recv is not
    // touched on the other ranks.
    void (*ireduce)(const zt_comm *c, const void *send, void *recv, size_t count, zt_dtype dt,
                    zt_reduce_op op, int root, void *stream, zt_comm_req *req);
    void (*ireduce_scatter)(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *req);
    void (*iall_gather)(const zt_comm *c, const void *send, void *recv, size_t count,
                        zt_dtype dt, void *stream, zt_comm_req *req);
    void (*ibroadcast)(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                       void *stream, zt_comm_req *req);
    // Nonblocking point-to-point (NULL: none; a backend whose operations complete at issue
    // must leave them NULL, since two ranks that both send first would wait on each other).
    // Same rules as send and recv; complete at test/wait.
    void (*isend)(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                  int tag, void *stream, zt_comm_req *req);
    void (*irecv)(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                  void *stream, zt_comm_req *req);
    // Advances the operation (MPI progresses a nonblocking collective only inside MPI
    // calls); 1 once it is complete (its results in place), else 0.
    int (*test)(const zt_comm *c, zt_comm_req *req);
    // Blocks until it is complete: the waits the collective timeout watches.
    void (*wait)(const zt_comm *c, zt_comm_req *req);
} zt_comm_i;

// A communicator. A zero-filled zt_comm is "none": zt_comm_free accepts it, every other
// call on it is fatal.
struct zt_comm {
    const zt_comm_i *ops;
    void *impl; // backend state (MPI: the MPI_Comm handle)
    int rank, size;
};

// Agrees on a status across every rank of c (collective): ZT_OK on every rank only if
// every rank passed ZT_OK. Otherwise every rank gets ZT_ERR; the lowest failing rank's
// message is the one that counts: it is broadcast and becomes every rank's pending
// message, "(rank N) " in front when N is not 0, and rank 0 prints it once at the end.
// So an error found on some ranks only (a file one node cannot see) ends every rank,
// printed once, and no rank waits in a collective for one that gave up.
zt_status zt_comm_agree(const zt_comm *c, zt_status s);

// ---- backends ----

// The size-1 communicator: rank 0 of 1; collectives are copies (or nothing in place),
// broadcast needs root 0, send/recv are fatal (there is no peer). Allocates nothing.
void zt_comm_self_init(zt_comm *out);

// The MPI backend (host memory): comm_mpi.h, which makes the world communicator; NCCL (device
// memory): comm_nccl.h; MPI with host staging of device memory: comm_staged.h.

// ---- the operations: check the conventions above once, then call the backend ----

// Every collective issued through these wrappers is counted and its kind folded into a
// hash (point-to-point is not: its pattern differs by pipeline stage by design), so a
// run can check that every rank issued the same collectives in the same order
// (docs/design.md §2: the rule that keeps a job from hanging).
typedef struct {
    uint64_t count, hash;
} zt_comm_trace;
extern zt_comm_trace zt_comm_trace_state;
static inline void zt_comm_trace_(int kind) {
    zt_comm_trace_state.count++;
    zt_comm_trace_state.hash = zt_comm_trace_state.hash * 1000003u + (uint64_t)kind;
}

static inline void zt_comm_check_(const zt_comm *c) {
    ZT_ASSERTF(c && c->ops, "operation on a communicator that was never initialized");
}
static inline void zt_comm_check_dtype_(zt_dtype dt) {
    ZT_ASSERTF(dt >= 0 && dt < ZT_DTYPE_COUNT, "bad dtype %d", (int)dt);
}
static inline void zt_comm_check_op_(zt_reduce_op op) {
    ZT_ASSERTF(op >= 0 && op < ZT_REDUCE_COUNT, "bad reduction op %d", (int)op);
}
// Fatal unless [a, a+an) and [b, b+bn) (bytes) are disjoint.
static inline void zt_comm_check_disjoint_(const char *what, const void *a, size_t an,
                                           const void *b, size_t bn) {
    uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    ZT_ASSERTF(an == 0 || bn == 0 || a0 + an <= b0 || b0 + bn <= a0,
               "%s: send and recv buffers overlap in a way the in-place rules (comm.h) do "
               "not allow",
               what);
}
static inline void zt_comm_check_peer_(const zt_comm *c, const char *what, int peer) {
    ZT_ASSERTF(peer >= 0 && peer < c->size && peer != c->rank,
               "%s: peer %d is not another rank of this communicator (rank %d of %d)", what,
               peer, c->rank, c->size);
}
static inline void zt_comm_check_block_(const zt_comm *c, const char *what, size_t count) {
    ZT_ASSERTF(count % (size_t)c->size == 0,
               "%s: count %zu is not divisible by the communicator size %d (pad the buffer)",
               what, count, c->size);
}

// A point-to-point call's arguments: dtype, peer, tag and buffer.
static inline void zt_comm_check_p2p_(const zt_comm *c, const char *what, zt_dtype dt, int peer,
                                      int tag, const void *buf, size_t count) {
    zt_comm_check_dtype_(dt);
    zt_comm_check_peer_(c, what, peer);
    ZT_ASSERTF(tag >= 0 && tag <= ZT_COMM_TAG_MAX, "%s: tag %d outside 0..%d", what, tag,
               ZT_COMM_TAG_MAX);
    ZT_ASSERTF(count == 0 || buf, "%s: NULL buffer", what);
}

static inline void zt_comm_all_reduce(const zt_comm *c, const void *send, void *recv,
                                      size_t count, zt_dtype dt, zt_reduce_op op,
                                      void *stream) {
    zt_comm_check_(c);
    zt_comm_check_dtype_(dt);
    zt_comm_check_op_(op);
    ZT_ASSERTF(count == 0 || (send && recv), "all_reduce: NULL buffer");
    size_t bytes = count * zt_dtype_size(dt);
    if (send != recv) zt_comm_check_disjoint_("all_reduce", send, bytes, recv, bytes);
    zt_comm_trace_(1);
    c->ops->all_reduce(c, send, recv, count, dt, op, stream);
}

static inline void zt_comm_reduce_scatter(const zt_comm *c, const void *send, void *recv,
                                          size_t count, zt_dtype dt, zt_reduce_op op,
                                          void *stream) {
    zt_comm_check_(c);
    zt_comm_check_dtype_(dt);
    zt_comm_check_op_(op);
    zt_comm_check_block_(c, "reduce_scatter", count);
    ZT_ASSERTF(count == 0 || (send && recv), "reduce_scatter: NULL buffer");
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    if ((const char *)recv != (const char *)send + (size_t)c->rank * block * es)
        zt_comm_check_disjoint_("reduce_scatter", send, count * es, recv, block * es);
    zt_comm_trace_(2);
    c->ops->reduce_scatter(c, send, recv, count, dt, op, stream);
}

static inline void zt_comm_all_gather(const zt_comm *c, const void *send, void *recv,
                                      size_t count, zt_dtype dt, void *stream) {
    zt_comm_check_(c);
    zt_comm_check_dtype_(dt);
    zt_comm_check_block_(c, "all_gather", count);
    ZT_ASSERTF(count == 0 || (send && recv), "all_gather: NULL buffer");
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    if ((const char *)send != (const char *)recv + (size_t)c->rank * block * es)
        zt_comm_check_disjoint_("all_gather", send, block * es, recv, count * es);
    zt_comm_trace_(3);
    c->ops->all_gather(c, send, recv, count, dt, stream);
}

static inline void zt_comm_broadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt,
                                     int root, void *stream) {
    zt_comm_check_(c);
    zt_comm_check_dtype_(dt);
    ZT_ASSERTF(root >= 0 && root < c->size, "broadcast: root %d is not a rank of 0..%d",
               root, c->size - 1);
    ZT_ASSERTF(count == 0 || buf, "broadcast: NULL buffer");
    zt_comm_trace_(4);
    c->ops->broadcast(c, buf, count, dt, root, stream);
}

static inline void zt_comm_send(const zt_comm *c, const void *buf, size_t count, zt_dtype dt,
                                int peer, int tag, void *stream) {
    zt_comm_check_(c);
    zt_comm_check_p2p_(c, "send", dt, peer, tag, buf, count);
    c->ops->send(c, buf, count, dt, peer, tag, stream);
}

static inline void zt_comm_recv(const zt_comm *c, void *buf, size_t count, zt_dtype dt,
                                int peer, int tag, void *stream) {
    zt_comm_check_(c);
    zt_comm_check_p2p_(c, "recv", dt, peer, tag, buf, count);
    c->ops->recv(c, buf, count, dt, peer, tag, stream);
}

static inline void zt_comm_send_recv(const zt_comm *c, const void *sendbuf, size_t send_count,
                                     int dst, void *recvbuf, size_t recv_count, int src,
                                     zt_dtype dt, int tag, void *stream) {
    zt_comm_check_(c);
    zt_comm_check_dtype_(dt);
    zt_comm_check_peer_(c, "send_recv (dst)", dst);
    zt_comm_check_peer_(c, "send_recv (src)", src);
    ZT_ASSERTF(tag >= 0 && tag <= ZT_COMM_TAG_MAX, "send_recv: tag %d outside 0..%d", tag,
               ZT_COMM_TAG_MAX);
    ZT_ASSERTF((send_count == 0 || sendbuf) && (recv_count == 0 || recvbuf),
               "send_recv: NULL buffer");
    size_t es = zt_dtype_size(dt);
    zt_comm_check_disjoint_("send_recv", sendbuf, send_count * es, recvbuf, recv_count * es);
    c->ops->send_recv(c, sendbuf, send_count, dst, recvbuf, recv_count, src, dt, tag, stream);
}

static inline void zt_comm_barrier(const zt_comm *c, void *stream) {
    zt_comm_check_(c);
    zt_comm_trace_(5);
    c->ops->barrier(c, stream);
}

// ---- nonblocking collectives ----
//
// Each starts the operation and returns at once; `req` (zero-filled, or completed) then
// tracks it until zt_comm_test returns 1 or zt_comm_wait returns. Every rank of c issues the
// same nonblocking and blocking collectives on c in the same order (they match in issue
// order, whatever order they complete in). Until completion the send buffer must not be
// written and the receive buffer neither read nor written. The collective trace counts them
// at issue (kinds of their own: an overlapped run's sequence differs from a blocking one's).
// On the MPI backend they are MPI's nonblocking collectives (Open MPI: libnbc), which
// advance only inside MPI calls: a caller computing meanwhile polls with zt_comm_test.

static inline void zt_comm_istart_(const zt_comm *c, int have, const char *what,
                                   zt_comm_req *req) {
    ZT_ASSERTF(have, "%s: the %s backend has no nonblocking collectives yet (TODO)", what,
               c->ops->name);
    ZT_ASSERTF(req && !req->c, "%s: the request is still in flight", what);
}

static inline void zt_comm_iall_reduce(const zt_comm *c, const void *send, void *recv,
                                       size_t count, zt_dtype dt, zt_reduce_op op, void *stream,
                                       zt_comm_req *req) {
    zt_comm_check_(c);
    zt_comm_istart_(c, c->ops->iall_reduce != NULL, "iall_reduce", req);
    zt_comm_check_dtype_(dt);
    zt_comm_check_op_(op);
    ZT_ASSERTF(count == 0 || (send && recv), "iall_reduce: NULL buffer");
    size_t bytes = count * zt_dtype_size(dt);
    if (send != recv) zt_comm_check_disjoint_("iall_reduce", send, bytes, recv, bytes);
    zt_comm_trace_(6);
    c->ops->iall_reduce(c, send, recv, count, dt, op, stream, req);
    req->c = c;
}

// Reduce to `root`: in place when recv == send (on every rank); recv may be NULL off root.
static inline void zt_comm_ireduce(const zt_comm *c, const void *send, void *recv, size_t count,
                                   zt_dtype dt, zt_reduce_op op, int root, void *stream,
                                   zt_comm_req *req) {
    zt_comm_check_(c);
    zt_comm_istart_(c, c->ops->ireduce != NULL, "ireduce", req);
    zt_comm_check_dtype_(dt);
    zt_comm_check_op_(op);
    ZT_ASSERTF(root >= 0 && root < c->size, "ireduce: root %d is not a rank of 0..%d", root,
               c->size - 1);
    ZT_ASSERTF(count == 0 || (send && (recv || c->rank != root)), "ireduce: NULL buffer");
    size_t bytes = count * zt_dtype_size(dt);
    if (recv && send != recv) zt_comm_check_disjoint_("ireduce", send, bytes, recv, bytes);
    zt_comm_trace_(7);
    c->ops->ireduce(c, send, recv, count, dt, op, root, stream, req);
    req->c = c;
}

static inline void zt_comm_ireduce_scatter(const zt_comm *c, const void *send, void *recv,
                                           size_t count, zt_dtype dt, zt_reduce_op op,
                                           void *stream, zt_comm_req *req) {
    zt_comm_check_(c);
    zt_comm_istart_(c, c->ops->ireduce_scatter != NULL, "ireduce_scatter", req);
    zt_comm_check_dtype_(dt);
    zt_comm_check_op_(op);
    zt_comm_check_block_(c, "ireduce_scatter", count);
    ZT_ASSERTF(count == 0 || (send && recv), "ireduce_scatter: NULL buffer");
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    if ((const char *)recv != (const char *)send + (size_t)c->rank * block * es)
        zt_comm_check_disjoint_("ireduce_scatter", send, count * es, recv, block * es);
    zt_comm_trace_(8);
    c->ops->ireduce_scatter(c, send, recv, count, dt, op, stream, req);
    req->c = c;
}

static inline void zt_comm_iall_gather(const zt_comm *c, const void *send, void *recv,
                                       size_t count, zt_dtype dt, void *stream,
                                       zt_comm_req *req) {
    zt_comm_check_(c);
    zt_comm_istart_(c, c->ops->iall_gather != NULL, "iall_gather", req);
    zt_comm_check_dtype_(dt);
    zt_comm_check_block_(c, "iall_gather", count);
    ZT_ASSERTF(count == 0 || (send && recv), "iall_gather: NULL buffer");
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    if ((const char *)send != (const char *)recv + (size_t)c->rank * block * es)
        zt_comm_check_disjoint_("iall_gather", send, block * es, recv, count * es);
    zt_comm_trace_(9);
    c->ops->iall_gather(c, send, recv, count, dt, stream, req);
    req->c = c;
}

static inline void zt_comm_ibroadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt,
                                      int root, void *stream, zt_comm_req *req) {
    zt_comm_check_(c);
    zt_comm_istart_(c, c->ops->ibroadcast != NULL, "ibroadcast", req);
    zt_comm_check_dtype_(dt);
    ZT_ASSERTF(root >= 0 && root < c->size, "ibroadcast: root %d is not a rank of 0..%d", root,
               c->size - 1);
    ZT_ASSERTF(count == 0 || buf, "ibroadcast: NULL buffer");
    zt_comm_trace_(10);
    c->ops->ibroadcast(c, buf, count, dt, root, stream, req);
    req->c = c;
}

// ---- nonblocking point-to-point ----
//
// isend/irecv start a send or receive and return at once; the buffer stays the operation's
// until zt_comm_test says done or zt_comm_wait returns (a receive's count is checked then).
// Messages between a pair match in the order they were posted, as for send/recv. Not
// traced (point-to-point never is). A backend without them (zt_comm_has_async_p2p 0) is
// fatal to call: the caller uses send, recv and send_recv there.

static inline int zt_comm_has_async_p2p(const zt_comm *c) {
    zt_comm_check_(c);
    return c->ops->isend != NULL && c->ops->irecv != NULL;
}

static inline void zt_comm_isend(const zt_comm *c, const void *buf, size_t count, zt_dtype dt,
                                 int peer, int tag, void *stream, zt_comm_req *req) {
    zt_comm_check_(c);
    zt_comm_istart_(c, c->ops->isend != NULL, "isend", req);
    zt_comm_check_p2p_(c, "isend", dt, peer, tag, buf, count);
    c->ops->isend(c, buf, count, dt, peer, tag, stream, req);
    req->c = c;
}

static inline void zt_comm_irecv(const zt_comm *c, void *buf, size_t count, zt_dtype dt,
                                 int peer, int tag, void *stream, zt_comm_req *req) {
    zt_comm_check_(c);
    zt_comm_istart_(c, c->ops->irecv != NULL, "irecv", req);
    zt_comm_check_p2p_(c, "irecv", dt, peer, tag, buf, count);
    c->ops->irecv(c, buf, count, dt, peer, tag, stream, req);
    req->c = c;
}

// 1 when the request is complete (or was never started), else 0; advances it either way.
static inline int zt_comm_test(zt_comm_req *req) {
    if (!req->c) return 1;
    if (!req->c->ops->test(req->c, req)) return 0;
    req->c = NULL;
    return 1;
}

// Returns once the request is complete (at once for one never started or already done).
// On MPI the wait is watched like a blocking call (the default timeout's watchdog, or
// ZT_COMM_TIMEOUT_S's polling).
static inline void zt_comm_wait(zt_comm_req *req) {
    if (!req->c) return;
    req->c->ops->wait(req->c, req);
    req->c = NULL;
}

// Collective over c (every rank calls it). On return `out` is a new communicator the
// caller frees with zt_comm_free; `out` must not be `c`.
static inline void zt_comm_split(const zt_comm *c, int color, int key, zt_comm *out) {
    zt_comm_check_(c);
    ZT_ASSERTF(color >= 0 || color == ZT_COMM_UNDEFINED,
               "split: color %d (must be >= 0 or ZT_COMM_UNDEFINED)", color);
    ZT_ASSERTF(out && out != c, "split: bad output communicator");
    memset(out, 0, sizeof *out);
    c->ops->split(c, color, key, out);
}

// Releases the communicator and zero-fills it. Accepts a zero-filled (never initialized)
// one. For MPI it is collective over c (MPI_Comm_free).
static inline void zt_comm_free(zt_comm *c) {
    if (!c || !c->ops) return;
    c->ops->free(c);
    memset(c, 0, sizeof *c);
}

#endif
