// The MPI communicator backend over host memory: comm.h's blocking operations, split and free,
// and the ops table that joins them with the nonblocking ones (comm_mpi_req.c). The backend's
// other parts, in its private header comm_mpi_impl.h: the staging window for node-local
// collectives (comm_mpi_stage.c), the collective timeout (comm_mpi_timeout.c), the ZT_COMM_*
// settings (comm_mpi_settings.c), dtypes, reductions and the checks of counts
// (comm_mpi_types.c), MPI's lifetime (comm_mpi_world.c) and the failure path
// (comm_mpi_fail.c). Its own interface is comm_mpi.h.
//
// Every MPI call goes through ZT_CHECK_MPI: MPI_COMM_WORLD (and so every communicator made
// from it) returns errors instead of aborting inside the library, and the check turns a
// failure into one line "zerotrain: fatal (rank R) file:line: MPI_X(...) failed: <MPI's
// message>" followed by MPI_Abort, so the other ranks do not wait forever in a collective.
//
// A large reduce_scatter (and the reduce-scatter half of a large all_reduce) on a
// communicator whose ranks share one node goes through the staging window instead of MPI's
// own collective; everything else is MPI's call, in pieces of at most ZT_COMM_MPI_MAX_COUNT
// elements where the operation allows (comm_mpi.h).
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi_impl.h"
#include "memory.h"

// Elements of piece `i` when `count` is cut into pieces of at most the communicator's
// max_count; there is always at least one piece (possibly empty), so a zero-length send still
// meets its recv.
static size_t max_count(const zt_comm *c) {
    return (size_t)((const zt_mpi_comm *)c->impl)->max_count;
}
static size_t n_pieces(const zt_comm *c, size_t count) {
    return count == 0 ? 1 : (count + max_count(c) - 1) / max_count(c);
}
static int piece_len(const zt_comm *c, size_t count, size_t i) {
    size_t off = i * max_count(c);
    return (int)(count - off < max_count(c) ? count - off : max_count(c));
}

// ---- the operations ----

static void mpi_all_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, zt_reduce_op op, void *stream) {
    zt_mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    if (zt_mpi_use_stage(c, count * es)) {
        // reduce-scatter into this rank's block of recv, then all-gather it in place
        zt_mpi_comm *m = c->impl;
        int n = c->size;
        char *mine = (char *)recv + zt_mpi_blk_lo(count, n, c->rank) * es;
        zt_mpi_stage_reduce_scatter(c, send, mine, count, dt, op, "all_reduce");
        if (m->stage_ag || count > INT_MAX) { // Allgatherv's displacements are ints
            zt_mpi_stage_all_gather(c, mine, recv, count, dt, "all_reduce");
            return;
        }
        int *counts = m->ag_counts, *displs = m->ag_counts + n;
        for (int q = 0; q < n; q++) {
            counts[q] = (int)zt_mpi_blk_len(count, n, q);
            displs[q] = (int)zt_mpi_blk_lo(count, n, q);
        }
        ZT_COLL(c, "all_reduce", MPI_Allgatherv, MPI_Iallgatherv, MPI_IN_PLACE, 0,
                MPI_DATATYPE_NULL, recv, counts, displs, zt_mpi_type(dt), zt_mpi_handle(c));
        return;
    }
    int in_place = send == recv;
    for (size_t i = 0; i < n_pieces(c, count); i++) {
        size_t off = i * max_count(c) * es;
        const void *s = in_place ? MPI_IN_PLACE : (const char *)send + off;
        ZT_COLL(c, "all_reduce", MPI_Allreduce, MPI_Iallreduce, s, (char *)recv + off,
                piece_len(c, count, i), zt_mpi_type(dt), zt_mpi_op(op, dt), zt_mpi_handle(c));
    }
}

static void mpi_reduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                               zt_dtype dt, zt_reduce_op op, void *stream) {
    zt_mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    if (zt_mpi_use_stage(c, count * es)) {
        zt_mpi_stage_reduce_scatter(c, send, recv, count, dt, op, "reduce_scatter");
        return;
    }
    int n = zt_mpi_block_count("reduce_scatter", block);
    char *own = (char *)send + (size_t)c->rank * block * es;
    if ((char *)recv == own) {
        // MPI_IN_PLACE reduces the whole buffer and leaves the result at its front; our
        // rule (comm.h) wants it at the rank's own block.
        char *base = (char *)send;
        ZT_COLL(c, "reduce_scatter", MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                MPI_IN_PLACE, base, n, zt_mpi_type(dt), zt_mpi_op(op, dt), zt_mpi_handle(c));
        if (own != base && block) memmove(own, base, block * es);
    } else {
        ZT_COLL(c, "reduce_scatter", MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                send, recv, n, zt_mpi_type(dt), zt_mpi_op(op, dt), zt_mpi_handle(c));
    }
}

static void mpi_all_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, void *stream) {
    zt_mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    if (zt_mpi_use_stage(c, count * es) && ((const zt_mpi_comm *)c->impl)->stage_ag) {
        zt_mpi_stage_all_gather(c, send, recv, count, dt, "all_gather");
        return;
    }
    int n = zt_mpi_block_count("all_gather", block);
    if ((const char *)send == (const char *)recv + (size_t)c->rank * block * es) {
        // MPI_IN_PLACE takes this rank's block from recv at rank*block: our rule exactly.
        ZT_COLL(c, "all_gather", MPI_Allgather, MPI_Iallgather, MPI_IN_PLACE, 0,
                MPI_DATATYPE_NULL, recv, n, zt_mpi_type(dt), zt_mpi_handle(c));
    } else {
        ZT_COLL(c, "all_gather", MPI_Allgather, MPI_Iallgather, send, n, zt_mpi_type(dt), recv, n,
                zt_mpi_type(dt), zt_mpi_handle(c));
    }
}

static void mpi_broadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                          void *stream) {
    zt_mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    for (size_t i = 0; i < n_pieces(c, count); i++)
        ZT_COLL(c, "broadcast", MPI_Bcast, MPI_Ibcast, (char *)buf + i * max_count(c) * es,
                piece_len(c, count, i), zt_mpi_type(dt), root, zt_mpi_handle(c));
}

static void mpi_send(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                     int tag, void *stream) {
    zt_mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    for (size_t i = 0; i < n_pieces(c, count); i++) {
        const char *p = (const char *)buf + i * max_count(c) * es;
        if (zt_mpi_timeout_s > 0) {
            MPI_Request rq;
            ZT_CHECK_MPI(MPI_Isend(p, piece_len(c, count, i), zt_mpi_type(dt), peer, tag,
                                   zt_mpi_handle(c), &rq));
            zt_mpi_wait_timed(c, "send", 1, &rq, MPI_STATUSES_IGNORE, &peer);
        } else {
            zt_mpi_watch_begin(c, "send", peer);
            ZT_CHECK_MPI(MPI_Send(p, piece_len(c, count, i), zt_mpi_type(dt), peer, tag,
                                  zt_mpi_handle(c)));
            zt_mpi_watch_end();
        }
    }
}

static void mpi_recv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                     void *stream) {
    zt_mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    for (size_t i = 0; i < n_pieces(c, count); i++) {
        MPI_Status st;
        int n = piece_len(c, count, i);
        char *p = (char *)buf + i * max_count(c) * es;
        if (zt_mpi_timeout_s > 0) {
            MPI_Request rq;
            ZT_CHECK_MPI(MPI_Irecv(p, n, zt_mpi_type(dt), peer, tag, zt_mpi_handle(c), &rq));
            zt_mpi_wait_timed(c, "recv", 1, &rq, &st, &peer);
        } else {
            zt_mpi_watch_begin(c, "recv", peer);
            ZT_CHECK_MPI(MPI_Recv(p, n, zt_mpi_type(dt), peer, tag, zt_mpi_handle(c), &st));
            zt_mpi_watch_end();
        }
        zt_mpi_check_received(&st, dt, n, peer);
    }
}

// Piece i of the receive and piece i of the send are posted together and completed
// together. The peer that receives our piece i has it as its own receive piece i (its
// recv_count is our send_count), so every posted operation is matched in the same round.
static void mpi_send_recv(const zt_comm *c, const void *sendbuf, size_t send_count, int dst,
                          void *recvbuf, size_t recv_count, int src, zt_dtype dt, int tag,
                          void *stream) {
    zt_mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    size_t ns = n_pieces(c, send_count), nr = n_pieces(c, recv_count);
    for (size_t i = 0; i < ns || i < nr; i++) {
        MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        MPI_Status st[2];
        int rn = i < nr ? piece_len(c, recv_count, i) : 0;
        if (i < nr)
            ZT_CHECK_MPI(MPI_Irecv((char *)recvbuf + i * max_count(c) * es, rn, zt_mpi_type(dt),
                                   src, tag, zt_mpi_handle(c), &req[0]));
        if (i < ns)
            ZT_CHECK_MPI(MPI_Isend((const char *)sendbuf + i * max_count(c) * es,
                                   piece_len(c, send_count, i), zt_mpi_type(dt), dst, tag,
                                   zt_mpi_handle(c), &req[1]));
        if (zt_mpi_timeout_s > 0) {
            zt_mpi_wait_timed(c, "send_recv", 2, req, st, (const int[]){src, dst});
        } else {
            // (the receive is what waits on the other rank: its source is named)
            zt_mpi_watch_begin(c, "send_recv", src);
            ZT_CHECK_MPI(MPI_Waitall(2, req, st));
            zt_mpi_watch_end();
        }
        if (i < nr) zt_mpi_check_received(&st[0], dt, rn, src);
    }
}

static void mpi_barrier(const zt_comm *c, void *stream) {
    zt_mpi_check_stream(stream);
    ZT_COLL(c, "barrier", MPI_Barrier, MPI_Ibarrier, zt_mpi_handle(c));
}

static void mpi_split(const zt_comm *c, int color, int key, zt_comm *out) {
    MPI_Comm nc = MPI_COMM_NULL;
    int mcolor = color == ZT_COMM_UNDEFINED ? MPI_UNDEFINED : color;
    ZT_CHECK_MPI(MPI_Comm_split(zt_mpi_handle(c), mcolor, key, &nc));
    if (nc == MPI_COMM_NULL) {
        // Not a member: a size-1 communicator, so collectives stay harmless copies.
        ZT_MPI_ASSERTF(color == ZT_COMM_UNDEFINED, "MPI_Comm_split returned no communicator");
        ZT_CHECK_MPI(MPI_Comm_dup(MPI_COMM_SELF, &nc));
    }
    zt_mpi_wrap(nc, out);
}

static void mpi_free(zt_comm *c) {
    zt_mpi_comm *m = c->impl;
    if (!m) return;
    int fin = 0;
    MPI_Finalized(&fin);
    ZT_MPI_ASSERTF(!fin, "zt_comm_free of an MPI communicator after MPI_Finalize");
    zt_mpi_stage_free(m); // collective, like the communicator's creation
    if (m->comm != MPI_COMM_NULL) ZT_CHECK_MPI(MPI_Comm_free(&m->comm));
    zt_mem_free(m);
    c->impl = NULL;
}

static const zt_comm_i zt_comm_mpi_ops = {
    .name = "mpi",
    .all_reduce = mpi_all_reduce,
    .reduce_scatter = mpi_reduce_scatter,
    .all_gather = mpi_all_gather,
    .broadcast = mpi_broadcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .send_recv = mpi_send_recv,
    .barrier = mpi_barrier,
    .split = mpi_split,
    .free = mpi_free,
    .iall_reduce = zt_mpi_iall_reduce,
    .ireduce = zt_mpi_ireduce,
    .ireduce_scatter = zt_mpi_ireduce_scatter,
    .iall_gather = zt_mpi_iall_gather,
    .ibroadcast = zt_mpi_ibroadcast,
    .isend = zt_mpi_isend,
    .irecv = zt_mpi_irecv,
    .test = zt_mpi_test,
    .wait = zt_mpi_wait,
};

// The members' world ranks as first + q * stride, when they are such a progression (a single
// member: stride 1); stride 0 otherwise.
static void world_progression(MPI_Comm comm, int size, zt_mpi_comm *m) {
    int *mine = malloc(2 * (size_t)size * sizeof *mine), *w = mine + size;
    ZT_ASSERT(mine);
    MPI_Group g, world;
    ZT_CHECK_MPI(MPI_Comm_group(comm, &g));
    ZT_CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    for (int q = 0; q < size; q++) mine[q] = q;
    ZT_CHECK_MPI(MPI_Group_translate_ranks(g, size, mine, world, w));
    ZT_CHECK_MPI(MPI_Group_free(&g));
    ZT_CHECK_MPI(MPI_Group_free(&world));
    m->world_first = w[0];
    m->world_stride = size > 1 ? w[1] - w[0] : 1;
    for (int q = 2; q < size && m->world_stride; q++)
        if (w[q] - w[q - 1] != m->world_stride) m->world_stride = 0;
    if (m->world_stride < 0) m->world_stride = 0;
    free(mine);
}

// Takes ownership of `comm` (freed by zt_comm_free).
void zt_mpi_wrap(MPI_Comm comm, zt_comm *out) {
    // Inherited from the parent already; set anyway so no communicator of ours can abort
    // inside MPI without our message (MPI_COMM_SELF's default handler is fatal).
    ZT_CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    zt_mpi_comm *m = zt_mem_alloc(ZT_MEM_COMM, sizeof *m);
    m->comm = comm;
    out->ops = &zt_comm_mpi_ops;
    out->impl = m;
    ZT_CHECK_MPI(MPI_Comm_rank(comm, &out->rank));
    ZT_CHECK_MPI(MPI_Comm_size(comm, &out->size));
    m->rank = out->rank;
    world_progression(comm, out->size, m);
    zt_comm_mpi_settings s;
    zt_mpi_settings_read(&s); // every communicator reads them anew (bench/comm_bw.c varies them)
    m->max_count = (int)s.max_count;
    if (out->size > 1) zt_mpi_settings_agree(comm, &s);
    zt_mpi_stage_init(m, out->size, &s);
}
