// Host staging (comm_staged.h): device buffers copied to host buffers, the wrapped host
// communicator's operation run there, the result copied back. Every operation is a loop
// over pieces no larger than a staging buffer; most calls are one piece.
#include "comm_staged.h"

#include <stdlib.h>

typedef struct {
    const zt_comm *inner; // the host communicator (borrowed, or &own)
    zt_comm own;          // inner's split, owned, for a communicator made by split
    zt_comm_staging st;
    unsigned char *h[2]; // (bytes) each: [0] sends and collectives, [1] receives
    size_t bytes;
    struct p2p_slot *slots; // (n_p2p) nonblocking point-to-point, once reserved
    unsigned char *p2p_host; // (n_p2p * p2p_bytes): slot i's host buffer at i * p2p_bytes
    int n_p2p;
    size_t p2p_bytes;
} staged_impl;

// One nonblocking send or receive in flight: its message in the slot's host buffer, cut in
// the blocking calls' pieces (so either side may be blocking), each an inner request.
typedef struct p2p_slot {
    zt_comm_req *inner; // (max_pieces) the pieces' host operations
    int n_pieces;       // in flight; 0: the slot is free
    void *dev;          // a receive's destination (NULL for a send)
    size_t bytes;
} p2p_slot;

static const zt_comm_i staged_ops, staged_p2p_ops;

// A request's state in zt_comm_req.impl.
typedef struct {
    int32_t slot; // a point-to-point operation's slot; -1: a collective's, complete at issue
} staged_req;
static staged_req *req_of(zt_comm_req *req) { return (staged_req *)req->impl; }

static staged_impl *impl_of(const zt_comm *c) { return (staged_impl *)c->impl; }
static void to_host(const staged_impl *s, void *host, const void *dev, size_t bytes) {
    if (bytes) s->st.to_host(s->st.ctx, host, dev, bytes);
}
static void to_device(const staged_impl *s, void *dev, const void *host, size_t bytes) {
    if (bytes) s->st.to_device(s->st.ctx, dev, host, bytes);
}
static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
// Pieces of at most k elements in n; a count of 0 is one empty piece, so the inner
// operation is still issued (as plain MPI would be) and every rank issues the same ones.
static size_t n_pieces(size_t n, size_t k) { return n == 0 ? 1 : (n + k - 1) / k; }
#define B_(p, i, es) ((unsigned char *)(p) + (size_t)(i) * (es)) // element i's address

// On one rank an operation in place leaves the buffer as it is: no copies at all, so a
// group of one (dp 1 on one GPU) costs nothing. (Out of place it is staged as ever: a copy.)
static int one_in_place(const zt_comm *c, const void *send, const void *recv) {
    return c->size == 1 && send == recv;
}

// The sum (or max) over ranks into recv on rank `root`, or on every rank (root -1).
static void reduce_to(const zt_comm *c, const void *send, void *recv, size_t count, zt_dtype dt,
                      zt_reduce_op op, int root) {
    const staged_impl *s = impl_of(c);
    if (one_in_place(c, send, recv)) return;
    size_t es = zt_dtype_size(dt), k = s->bytes / es, np = n_pieces(count, k);
    for (size_t p = 0; p < np; p++) {
        size_t off = p * k, n = min_sz(k, count - off);
        to_host(s, s->h[0], B_(send, off, es), n * es);
        s->inner->ops->all_reduce(s->inner, s->h[0], s->h[0], n, dt, op, NULL);
        if (root < 0 || c->rank == root) to_device(s, B_(recv, off, es), s->h[0], n * es);
    }
}

static void staged_all_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                              zt_dtype dt, zt_reduce_op op, void *stream) {
    reduce_to(c, send, recv, count, dt, op, -1);
}

// Piece p is elements [off, off+n) of every rank's block, gathered into the host buffer as
// `size` consecutive slices of n, so inner's block for this rank is slice `rank`. In place
// (recv == send + rank*B) the write-back covers only [off, off+n) of this rank's block,
// which later pieces do not read.
static void staged_reduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                                  zt_dtype dt, zt_reduce_op op, void *stream) {
    const staged_impl *s = impl_of(c);
    if (one_in_place(c, send, recv)) return;
    size_t es = zt_dtype_size(dt), size = (size_t)c->size, B = count / size;
    size_t k = s->bytes / (es * size), np = n_pieces(B, k);
    for (size_t p = 0; p < np; p++) {
        size_t off = p * k, n = min_sz(k, B - off);
        if (n == B) to_host(s, s->h[0], send, count * es); // one piece: one copy
        else
            for (size_t j = 0; j < size; j++)
                to_host(s, B_(s->h[0], j * n, es), B_(send, j * B + off, es), n * es);
        unsigned char *mine = B_(s->h[0], (size_t)c->rank * n, es);
        s->inner->ops->reduce_scatter(s->inner, s->h[0], mine, n * size, dt, op, NULL);
        to_device(s, B_(recv, off, es), mine, n * es);
    }
}

// Piece p: this rank's [off, off+n) into slice `rank` of the host buffer, inner's in-place
// all_gather, then slice j back to block j's [off, off+n). In place (send == recv + rank*B)
// the rank's own block is rewritten with the values it held.
static void staged_all_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                              zt_dtype dt, void *stream) {
    const staged_impl *s = impl_of(c);
    if (one_in_place(c, send, recv)) return;
    size_t es = zt_dtype_size(dt), size = (size_t)c->size, B = count / size;
    size_t k = s->bytes / (es * size), np = n_pieces(B, k);
    for (size_t p = 0; p < np; p++) {
        size_t off = p * k, n = min_sz(k, B - off);
        unsigned char *mine = B_(s->h[0], (size_t)c->rank * n, es);
        to_host(s, mine, B_(send, off, es), n * es);
        s->inner->ops->all_gather(s->inner, mine, s->h[0], n * size, dt, NULL);
        if (n == B) to_device(s, recv, s->h[0], count * es);
        else
            for (size_t j = 0; j < size; j++)
                to_device(s, B_(recv, j * B + off, es), B_(s->h[0], j * n, es), n * es);
    }
}

static void staged_broadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                             void *stream) {
    const staged_impl *s = impl_of(c);
    if (c->size == 1) return; // the root's buffer is the result
    size_t es = zt_dtype_size(dt), k = s->bytes / es, np = n_pieces(count, k);
    for (size_t p = 0; p < np; p++) {
        size_t off = p * k, n = min_sz(k, count - off);
        if (c->rank == root) to_host(s, s->h[0], B_(buf, off, es), n * es);
        s->inner->ops->broadcast(s->inner, s->h[0], n, dt, root, NULL);
        if (c->rank != root) to_device(s, B_(buf, off, es), s->h[0], n * es);
    }
}

// Point-to-point in pieces: both sides cut a message of n elements alike (the ranks agreed
// on the staging size at init), and messages of a pair arrive in order, so piece i meets
// piece i.
static void staged_send(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                        int tag, void *stream) {
    const staged_impl *s = impl_of(c);
    size_t es = zt_dtype_size(dt), k = s->bytes / es, np = n_pieces(count, k);
    for (size_t p = 0; p < np; p++) {
        size_t off = p * k, n = min_sz(k, count - off);
        to_host(s, s->h[0], B_(buf, off, es), n * es);
        s->inner->ops->send(s->inner, s->h[0], n, dt, peer, tag, NULL);
    }
}

static void staged_recv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer,
                        int tag, void *stream) {
    const staged_impl *s = impl_of(c);
    size_t es = zt_dtype_size(dt), k = s->bytes / es, np = n_pieces(count, k);
    for (size_t p = 0; p < np; p++) {
        size_t off = p * k, n = min_sz(k, count - off);
        s->inner->ops->recv(s->inner, s->h[1], n, dt, peer, tag, NULL);
        to_device(s, B_(buf, off, es), s->h[1], n * es);
    }
}

// Piece i of both directions at once while both have one, then the longer direction alone.
// No deadlock: a rank sending piece i alone has received all its pieces, and its peer dst,
// which receives exactly as many pieces as this rank sends, posts the receive of piece i
// in its own round i, paired or alone.
static void staged_send_recv(const zt_comm *c, const void *sendbuf, size_t send_count, int dst,
                             void *recvbuf, size_t recv_count, int src, zt_dtype dt, int tag,
                             void *stream) {
    const staged_impl *s = impl_of(c);
    const zt_comm *in = s->inner;
    size_t es = zt_dtype_size(dt), k = s->bytes / es;
    size_t ps = n_pieces(send_count, k), pr = n_pieces(recv_count, k);
    for (size_t p = 0; p < ps || p < pr; p++) {
        size_t off = p * k;
        size_t ns = p < ps ? min_sz(k, send_count - off) : 0;
        size_t nr = p < pr ? min_sz(k, recv_count - off) : 0;
        if (p < ps) to_host(s, s->h[0], B_(sendbuf, off, es), ns * es);
        if (p < ps && p < pr)
            in->ops->send_recv(in, s->h[0], ns, dst, s->h[1], nr, src, dt, tag, NULL);
        else if (p < ps) in->ops->send(in, s->h[0], ns, dt, dst, tag, NULL);
        else in->ops->recv(in, s->h[1], nr, dt, src, tag, NULL);
        if (p < pr) to_device(s, B_(recvbuf, off, es), s->h[1], nr * es);
    }
}

// The copies wait for their device work, so every rank has finished its part here.
static void staged_barrier(const zt_comm *c, void *stream) {
    const zt_comm *in = impl_of(c)->inner;
    in->ops->barrier(in, NULL);
}

static void init_impl(zt_comm *out, staged_impl *s, const zt_comm *inner,
                      const zt_comm_staging *st, size_t stage_bytes) {
    ZT_ASSERTF(inner && inner->ops, "staged communicator over a communicator never made");
    ZT_ASSERTF(st && st->host_alloc && st->host_free && st->to_host && st->to_device,
               "staged communicator without its copy functions");
    // a reduce_scatter piece holds one element of the widest dtype (8 bytes) per rank
    ZT_ASSERTF(stage_bytes >= 8 * (size_t)inner->size,
               "staging buffer of %zu bytes: at least 8 per rank (%d ranks)", stage_bytes,
               inner->size);
    // Pieces must be cut alike on every rank: the same staging size everywhere.
    int64_t mine[2] = {(int64_t)stage_bytes, -(int64_t)stage_bytes}, agreed[2];
    inner->ops->all_reduce(inner, mine, agreed, 2, ZT_I64, ZT_REDUCE_MAX, NULL);
    ZT_ASSERTF(agreed[0] == (int64_t)stage_bytes && -agreed[1] == (int64_t)stage_bytes,
               "staged communicator: ranks stage with different buffer sizes (%zu here, "
               "%lld..%lld over the ranks)", stage_bytes, (long long)-agreed[1],
               (long long)agreed[0]);
    s->inner = inner;
    s->st = *st;
    s->bytes = stage_bytes;
    // the two buffers, as zt_comm_staged_host_bytes says
    s->h[0] = st->host_alloc(st->ctx, stage_bytes);
    s->h[1] = st->host_alloc(st->ctx, stage_bytes);
    out->ops = &staged_ops;
    out->impl = s;
    out->rank = inner->rank;
    out->size = inner->size;
}

static void staged_split(const zt_comm *c, int color, int key, zt_comm *out) {
    const staged_impl *s = impl_of(c);
    staged_impl *n = calloc(1, sizeof *n);
    ZT_ASSERTF(n, "out of host memory");
    zt_comm_split(s->inner, color, key, &n->own);
    init_impl(out, n, &n->own, &s->st, s->bytes);
}

static void staged_free(zt_comm *c) {
    staged_impl *s = impl_of(c);
    if (!s) return;
    for (int i = 0; i < s->n_p2p; i++) {
        ZT_ASSERTF(!s->slots[i].n_pieces, "a staged point-to-point operation still in flight "
                                          "at the communicator's free");
        free(s->slots[i].inner);
    }
    free(s->slots);
    if (s->p2p_host) s->st.host_free(s->st.ctx, s->p2p_host);
    for (int i = 0; i < 2; i++)
        if (s->h[i]) s->st.host_free(s->st.ctx, s->h[i]);
    zt_comm_free(&s->own); // (a zero-filled one when inner is borrowed)
    free(s);
    c->impl = NULL;
}

// Nonblocking collectives: staged and done at issue (the copies to and from the device sit on the
// issuing thread anyway), so test and wait have nothing left; no overlap through staging.
// ireduce reduces into every rank's host buffer and writes back at the root only.
static void staged_iall_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                               zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *req) {
    staged_all_reduce(c, send, recv, count, dt, op, stream);
    req_of(req)->slot = -1;
}
static void staged_ireduce(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, zt_reduce_op op, int root, void *stream,
                           zt_comm_req *req) {
    reduce_to(c, send, recv, count, dt, op, root);
    req_of(req)->slot = -1;
}
static void staged_ireduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                                   zt_dtype dt, zt_reduce_op op, void *stream,
                                   zt_comm_req *req) {
    staged_reduce_scatter(c, send, recv, count, dt, op, stream);
    req_of(req)->slot = -1;
}
static void staged_iall_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                               zt_dtype dt, void *stream, zt_comm_req *req) {
    staged_all_gather(c, send, recv, count, dt, stream);
    req_of(req)->slot = -1;
}
static void staged_ibroadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                              void *stream, zt_comm_req *req) {
    staged_broadcast(c, buf, count, dt, root, stream);
    req_of(req)->slot = -1;
}
// Until zt_comm_staged_reserve_p2p no isend/irecv: done at issue they would be blocking, and
// two neighbours that both send first would wait on each other (comm.h). The collectives'
// requests (done at issue) have no slot.
static unsigned char *slot_host(const staged_impl *s, int i) {
    return s->p2p_host + (size_t)i * s->p2p_bytes;
}

// A free slot for a message of `bytes`, its index written into req.
static int take_slot(staged_impl *s, size_t bytes, zt_comm_req *req) {
    ZT_ASSERTF(bytes <= s->p2p_bytes, "staged isend/irecv of %zu bytes: the reserved slots "
               "hold %zu (zt_comm_staged_reserve_p2p)", bytes, s->p2p_bytes);
    for (int i = 0; i < s->n_p2p; i++)
        if (!s->slots[i].n_pieces) {
            req_of(req)->slot = i;
            s->slots[i].bytes = bytes;
            return i;
        }
    ZT_ASSERTF(0, "staged isend/irecv: %d operations in flight already, as many as reserved "
               "(zt_comm_staged_reserve_p2p)", s->n_p2p);
    return -1;
}

// Copies the device data to the slot once the stream has written it (to_host is ordered
// after the device work issued before it), then sends it in the blocking send's pieces.
static void staged_isend(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                         int tag, void *stream, zt_comm_req *req) {
    staged_impl *s = impl_of(c);
    size_t es = zt_dtype_size(dt), k = s->bytes / es, np = n_pieces(count, k);
    int i = take_slot(s, count * es, req);
    p2p_slot *sl = &s->slots[i];
    unsigned char *h = slot_host(s, i);
    to_host(s, h, buf, count * es);
    sl->dev = NULL;
    sl->n_pieces = (int)np;
    for (size_t p = 0; p < np; p++) {
        size_t off = p * k, n = min_sz(k, count - off);
        zt_comm_isend(s->inner, B_(h, off, es), n, dt, peer, tag, NULL, &sl->inner[p]);
    }
}

// Receives into the slot in the blocking receive's pieces; the copy to the device waits for
// test or wait.
static void staged_irecv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer,
                         int tag, void *stream, zt_comm_req *req) {
    staged_impl *s = impl_of(c);
    size_t es = zt_dtype_size(dt), k = s->bytes / es, np = n_pieces(count, k);
    int i = take_slot(s, count * es, req);
    p2p_slot *sl = &s->slots[i];
    unsigned char *h = slot_host(s, i);
    sl->dev = buf;
    sl->n_pieces = (int)np;
    for (size_t p = 0; p < np; p++) {
        size_t off = p * k, n = min_sz(k, count - off);
        zt_comm_irecv(s->inner, B_(h, off, es), n, dt, peer, tag, NULL, &sl->inner[p]);
    }
}

// The slot's pieces are done: a receive's message goes to the device, the slot is free.
static void finish_slot(staged_impl *s, int i) {
    p2p_slot *sl = &s->slots[i];
    if (sl->dev) to_device(s, sl->dev, slot_host(s, i), sl->bytes);
    sl->n_pieces = 0;
    sl->dev = NULL;
}

static p2p_slot *slot_of(const zt_comm *c, zt_comm_req *req, int *i) {
    staged_impl *s = impl_of(c);
    *i = req_of(req)->slot;
    if (*i < 0) return NULL;
    ZT_ASSERT(*i < s->n_p2p && s->slots[*i].n_pieces > 0);
    return &s->slots[*i];
}

static int staged_test(const zt_comm *c, zt_comm_req *req) {
    int i;
    p2p_slot *sl = slot_of(c, req, &i);
    if (!sl) return 1;
    int done = 1;
    for (int p = 0; p < sl->n_pieces; p++) done &= zt_comm_test(&sl->inner[p]);
    if (done) finish_slot(impl_of(c), i);
    return done;
}

static void staged_wait(const zt_comm *c, zt_comm_req *req) {
    int i;
    p2p_slot *sl = slot_of(c, req, &i);
    if (!sl) return;
    for (int p = 0; p < sl->n_pieces; p++) zt_comm_wait(&sl->inner[p]);
    finish_slot(impl_of(c), i);
}

// The operations both tables have (the second adds isend and irecv once reserved).
#define STAGED_OPS                                                                                 \
    .name = "staged",                                                                              \
    .all_reduce = staged_all_reduce,                                                               \
    .reduce_scatter = staged_reduce_scatter,                                                       \
    .all_gather = staged_all_gather,                                                               \
    .broadcast = staged_broadcast,                                                                 \
    .send = staged_send,                                                                           \
    .recv = staged_recv,                                                                           \
    .send_recv = staged_send_recv,                                                                 \
    .barrier = staged_barrier,                                                                     \
    .iall_reduce = staged_iall_reduce,                                                             \
    .ireduce = staged_ireduce,                                                                     \
    .ireduce_scatter = staged_ireduce_scatter,                                                     \
    .iall_gather = staged_iall_gather,                                                             \
    .ibroadcast = staged_ibroadcast,                                                               \
    .test = staged_test,                                                                           \
    .wait = staged_wait,                                                                           \
    .split = staged_split,                                                                         \
    .free = staged_free

static const zt_comm_i staged_ops = {STAGED_OPS};
static const zt_comm_i staged_p2p_ops = {STAGED_OPS, .isend = staged_isend,
                                         .irecv = staged_irecv};

void zt_comm_staged_init(zt_comm *out, const zt_comm *inner, const zt_comm_staging *st,
                         size_t stage_bytes) {
    ZT_ASSERT(out);
    memset(out, 0, sizeof *out);
    staged_impl *s = calloc(1, sizeof *s);
    ZT_ASSERTF(s, "out of host memory");
    init_impl(out, s, inner, st, stage_bytes);
}

size_t zt_comm_staged_host_bytes(size_t stage_bytes) { return 2 * stage_bytes; }

int zt_comm_is_staged(const zt_comm *c) {
    return c && (c->ops == &staged_ops || c->ops == &staged_p2p_ops);
}

void zt_comm_staged_reserve_p2p(zt_comm *c, int n_ops, size_t bytes) {
    ZT_ASSERTF(c && c->ops == &staged_ops, "zt_comm_staged_reserve_p2p: not a staged "
               "communicator, or one reserved already");
    ZT_ASSERT(n_ops >= 1 && bytes > 0);
    staged_impl *s = impl_of(c);
    // a message's pieces as the blocking calls cut it, for the dtype that cuts most
    size_t most = 0;
    for (size_t es = 1; es <= 8; es *= 2) {
        size_t np = n_pieces(bytes / es, s->bytes / es);
        most = np > most ? np : most;
    }
    s->slots = calloc((size_t)n_ops, sizeof *s->slots);
    ZT_ASSERTF(s->slots, "out of host memory");
    for (int i = 0; i < n_ops; i++) {
        s->slots[i].inner = calloc(most, sizeof *s->slots[i].inner);
        ZT_ASSERTF(s->slots[i].inner, "out of host memory");
    }
    s->p2p_host = s->st.host_alloc(s->st.ctx, zt_comm_staged_p2p_host_bytes(n_ops, bytes));
    s->n_p2p = n_ops;
    s->p2p_bytes = bytes;
    c->ops = &staged_p2p_ops;
}

size_t zt_comm_staged_p2p_host_bytes(int n_ops, size_t bytes) { return (size_t)n_ops * bytes; }
