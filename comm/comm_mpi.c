// The MPI communicator backend over host memory, and the job's MPI lifetime: init,
// finalize, and the abort that ends every rank when one fails.
//
// Every MPI call goes through ZT_CHECK_MPI: MPI_COMM_WORLD (and so every communicator made
// from it) returns errors instead of aborting inside the library, and the check turns a
// failure into one line "zerotrain: fatal (rank R) file:line: MPI_X(...) failed: <MPI's
// message>" followed by MPI_Abort, so the other ranks do not wait forever in a collective.
#include <limits.h>
#include <stdarg.h>
#include <string.h>

#include <mpi.h>

#include "comm.h"
#include "memory.h"

typedef struct {
    MPI_Comm comm;
} zt_mpi_comm;

static int g_init_here;                 // MPI was initialized by zt_comm_mpi_init_world
static size_t g_max_count = INT_MAX;    // elements per MPI call (zt_comm_mpi_set_max_count)

// ---- the failure path ----

static void mpi_fatalf(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
static void mpi_fatalf(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "zerotrain: fatal (rank %d) %s:%d: ", zt_log_rank(), file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    zt_comm_mpi_abort(1);
    abort(); // MPI is not running: nothing else to end
}

static void mpi_fail(const char *file, int line, const char *call, int rc)
    __attribute__((noreturn));
static void mpi_fail(const char *file, int line, const char *call, int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    int name_len = (int)strcspn(call, "("); // "MPI_Recv", not its whole argument list
    mpi_fatalf(file, line, "%.*s failed: %s", name_len, call, msg);
}

// A broken MPI call is a bug-tier failure (STYLE.md guideline 5).
#define ZT_CHECK_MPI(call)                                                   \
    do {                                                                     \
        int zt_mpi_rc_ = (call);                                             \
        if (zt_mpi_rc_ != MPI_SUCCESS) mpi_fail(__FILE__, __LINE__, #call, zt_mpi_rc_); \
    } while (0)

#define ZT_MPI_ASSERTF(cond, ...)                                  \
    do {                                                           \
        if (!(cond)) mpi_fatalf(__FILE__, __LINE__, __VA_ARGS__);   \
    } while (0)

void zt_comm_mpi_abort(int code) {
    int init = 0, fin = 0;
    // Both are callable at any time, before init and after finalize.
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin) return;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    abort(); // MPI_Abort does not return; should it, still end this rank
}

void zt_comm_mpi_set_max_count(size_t count) {
    g_max_count = count == 0 || count > INT_MAX ? (size_t)INT_MAX : count;
}

// ---- helpers ----

static MPI_Comm mpi_comm(const zt_comm *c) { return ((const zt_mpi_comm *)c->impl)->comm; }

static MPI_Datatype mpi_type(zt_dtype dt) {
    switch (dt) {
    case ZT_F32: return MPI_FLOAT;
    case ZT_F64: return MPI_DOUBLE;
    case ZT_I32: return MPI_INT32_T;
    case ZT_I64: return MPI_INT64_T;
    case ZT_U8: return MPI_UINT8_T;
    default: break;
    }
    mpi_fatalf(__FILE__, __LINE__, "bad dtype %d", (int)dt);
}

static MPI_Op mpi_op(zt_reduce_op op) {
    switch (op) {
    case ZT_REDUCE_SUM: return MPI_SUM;
    case ZT_REDUCE_MAX: return MPI_MAX;
    default: break;
    }
    mpi_fatalf(__FILE__, __LINE__, "bad reduction op %d", (int)op);
}

static void mpi_check_stream(void *stream) {
    ZT_MPI_ASSERTF(stream == NULL, "the MPI communicator works on host memory: stream must be NULL");
}

// Elements of piece `i` when `count` is cut into pieces of at most g_max_count; there is
// always at least one piece (possibly empty), so a zero-length send still meets its recv.
static size_t n_pieces(size_t count) {
    return count == 0 ? 1 : (count + g_max_count - 1) / g_max_count;
}
static int piece_len(size_t count, size_t i) {
    size_t off = i * g_max_count;
    return (int)(count - off < g_max_count ? count - off : g_max_count);
}

static void mpi_wrap(MPI_Comm comm, zt_comm *out);

// ---- the operations ----

static void mpi_all_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, zt_reduce_op op, void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    int in_place = send == recv;
    for (size_t i = 0; i < n_pieces(count); i++) {
        size_t off = i * g_max_count * es;
        const void *s = in_place ? MPI_IN_PLACE : (const char *)send + off;
        ZT_CHECK_MPI(MPI_Allreduce(s, (char *)recv + off, piece_len(count, i), mpi_type(dt),
                                   mpi_op(op), mpi_comm(c)));
    }
}

// TODO: split blocks over INT_MAX elements (needs strided pieces: a packing buffer sized at
// init, or a derived datatype for all_gather). 2^31 elements per rank is far beyond
// GPT-2 XL's whole parameter count, so a fatal check stands in for now.
static int block_count(const char *what, size_t block) {
    ZT_MPI_ASSERTF(block <= INT_MAX, "%s: %zu elements per rank exceed INT_MAX (TODO: split)",
                   what, block);
    return (int)block;
}

static void mpi_reduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                               zt_dtype dt, zt_reduce_op op, void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    int n = block_count("reduce_scatter", block);
    char *own = (char *)send + (size_t)c->rank * block * es;
    if ((char *)recv == own) {
        // MPI_IN_PLACE reduces the whole buffer and leaves the result at its front; our
        // rule (comm.h) wants it at the rank's own block.
        char *base = (char *)send;
        ZT_CHECK_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, base, n, mpi_type(dt), mpi_op(op),
                                              mpi_comm(c)));
        if (own != base && block) memmove(own, base, block * es);
    } else {
        ZT_CHECK_MPI(MPI_Reduce_scatter_block(send, recv, n, mpi_type(dt), mpi_op(op),
                                              mpi_comm(c)));
    }
}

static void mpi_all_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    int n = block_count("all_gather", block);
    if ((const char *)send == (const char *)recv + (size_t)c->rank * block * es) {
        // MPI_IN_PLACE takes this rank's block from recv at rank*block: our rule exactly.
        ZT_CHECK_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, mpi_type(dt),
                                   mpi_comm(c)));
    } else {
        ZT_CHECK_MPI(MPI_Allgather(send, n, mpi_type(dt), recv, n, mpi_type(dt), mpi_comm(c)));
    }
}

static void mpi_broadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                          void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    for (size_t i = 0; i < n_pieces(count); i++)
        ZT_CHECK_MPI(MPI_Bcast((char *)buf + i * g_max_count * es, piece_len(count, i),
                               mpi_type(dt), root, mpi_comm(c)));
}

static void mpi_send(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                     int tag, void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    for (size_t i = 0; i < n_pieces(count); i++)
        ZT_CHECK_MPI(MPI_Send((const char *)buf + i * g_max_count * es, piece_len(count, i),
                              mpi_type(dt), peer, tag, mpi_comm(c)));
}

// A longer message fails inside MPI (MPI_ERR_TRUNCATE); a shorter one is caught here.
static void check_received(const MPI_Status *st, zt_dtype dt, int want, int peer) {
    int got = -1;
    ZT_CHECK_MPI(MPI_Get_count(st, mpi_type(dt), &got));
    ZT_MPI_ASSERTF(got == want, "recv from rank %d: expected %d %s elements, got %d", peer,
                   want, zt_dtype_name(dt), got);
}

static void mpi_recv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                     void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    for (size_t i = 0; i < n_pieces(count); i++) {
        MPI_Status st;
        int n = piece_len(count, i);
        ZT_CHECK_MPI(MPI_Recv((char *)buf + i * g_max_count * es, n, mpi_type(dt), peer, tag,
                              mpi_comm(c), &st));
        check_received(&st, dt, n, peer);
    }
}

// Piece i of the receive and piece i of the send are posted together and completed
// together. The peer that receives our piece i has it as its own receive piece i (its
// recv_count is our send_count), so every posted operation is matched in the same round.
static void mpi_send_recv(const zt_comm *c, const void *sendbuf, size_t send_count, int dst,
                          void *recvbuf, size_t recv_count, int src, zt_dtype dt, int tag,
                          void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    size_t ns = n_pieces(send_count), nr = n_pieces(recv_count);
    for (size_t i = 0; i < ns || i < nr; i++) {
        MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        MPI_Status st[2];
        int rn = i < nr ? piece_len(recv_count, i) : 0;
        if (i < nr)
            ZT_CHECK_MPI(MPI_Irecv((char *)recvbuf + i * g_max_count * es, rn, mpi_type(dt), src,
                                   tag, mpi_comm(c), &req[0]));
        if (i < ns)
            ZT_CHECK_MPI(MPI_Isend((const char *)sendbuf + i * g_max_count * es,
                                   piece_len(send_count, i), mpi_type(dt), dst, tag, mpi_comm(c),
                                   &req[1]));
        ZT_CHECK_MPI(MPI_Waitall(2, req, st));
        if (i < nr) check_received(&st[0], dt, rn, src);
    }
}

static void mpi_barrier(const zt_comm *c, void *stream) {
    mpi_check_stream(stream);
    ZT_CHECK_MPI(MPI_Barrier(mpi_comm(c)));
}

static void mpi_split(const zt_comm *c, int color, int key, zt_comm *out) {
    MPI_Comm nc = MPI_COMM_NULL;
    int mcolor = color == ZT_COMM_UNDEFINED ? MPI_UNDEFINED : color;
    ZT_CHECK_MPI(MPI_Comm_split(mpi_comm(c), mcolor, key, &nc));
    if (nc == MPI_COMM_NULL) {
        // Not a member: a size-1 communicator, so collectives stay harmless copies.
        ZT_MPI_ASSERTF(color == ZT_COMM_UNDEFINED, "MPI_Comm_split returned no communicator");
        ZT_CHECK_MPI(MPI_Comm_dup(MPI_COMM_SELF, &nc));
    }
    mpi_wrap(nc, out);
}

static void mpi_free(zt_comm *c) {
    zt_mpi_comm *m = c->impl;
    if (!m) return;
    int fin = 0;
    MPI_Finalized(&fin);
    ZT_MPI_ASSERTF(!fin, "zt_comm_free of an MPI communicator after MPI_Finalize");
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
};

// Takes ownership of `comm` (freed by zt_comm_free).
static void mpi_wrap(MPI_Comm comm, zt_comm *out) {
    // Inherited from the parent already; set anyway so no communicator of ours can abort
    // inside MPI without our message (MPI_COMM_SELF's default handler is fatal).
    ZT_CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    zt_mpi_comm *m = zt_mem_alloc(ZT_MEM_COMM, sizeof *m);
    m->comm = comm;
    out->ops = &zt_comm_mpi_ops;
    out->impl = m;
    ZT_CHECK_MPI(MPI_Comm_rank(comm, &out->rank));
    ZT_CHECK_MPI(MPI_Comm_size(comm, &out->size));
}

// ---- lifetime ----

void zt_comm_mpi_init_world(zt_comm *out, int *argc, char ***argv) {
    ZT_ASSERT(out);
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin) zt_fatal(__FILE__, __LINE__, "zt_comm_mpi_init_world after MPI_Finalize");
    if (!init) {
        int provided = MPI_THREAD_SINGLE;
        // Before init MPI's default handler is fatal, so a failure mostly ends the process
        // inside MPI with its own message; an error code that does come back is ours to say.
        int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) zt_fatal(__FILE__, __LINE__, "MPI_Init_thread failed: error %d", rc);
        g_init_here = 1;
        ZT_MPI_ASSERTF(provided >= MPI_THREAD_FUNNELED,
                       "MPI provides thread level %d, zerotrain needs MPI_THREAD_FUNNELED",
                       provided);
    }
    ZT_CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int rank = 0;
    ZT_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    zt_set_log_rank(rank);
    // Our own handle: the runtime's traffic never matches messages of other MPI users.
    MPI_Comm world = MPI_COMM_NULL;
    ZT_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &world));
    memset(out, 0, sizeof *out);
    mpi_wrap(world, out);
}

void zt_comm_mpi_finalize(void) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!g_init_here || !init || fin) return;
    ZT_CHECK_MPI(MPI_Finalize());
}
