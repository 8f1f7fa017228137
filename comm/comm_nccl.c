// The NCCL backend of comm.h: collectives and point-to-point on device memory, one NCCL
// communicator per zt_comm. The first is created from an ncclUniqueId that the control
// communicator (MPI, host memory) broadcasts; split derives the others from it
// (ncclCommSplit: no new bootstrap). Nonblocking collectives run on a stream of their own,
// ordered by events; a watchdog thread polls every communicator for NCCL's asynchronous
// errors and stalled operations. Compiled in `make cuda` only.
#include "comm_nccl.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "comm_mpi.h"

// The last operation issued on one stream: what the watchdog asks about.
typedef struct {
    cudaEvent_t done;   // recorded after the operation
    int64_t issued_ns;  // when (CLOCK_MONOTONIC); 0: nothing pending
    const char *what;   // its name, for the message
} probe;

typedef struct {
    ncclComm_t nccl;
    cudaStream_t stream;      // for operations called with stream NULL
    cudaStream_t comm_stream; // the nonblocking collectives' own stream
    cudaEvent_t ready;        // a caller's stream up to a nonblocking collective's start
    probe last, ilast;        // the last blocking and nonblocking operation
    zt_comm ctrl;             // this communicator's ranks on the control path (owned)
} nccl_impl;

// A nonblocking collective's handle (zt_comm_req.impl).
typedef struct {
    cudaEvent_t done;    // recorded on comm_stream after the collective
    cudaStream_t order;  // the caller's stream, which wait orders after it
} nccl_req;
_Static_assert(sizeof(nccl_req) <= sizeof(((zt_comm_req *)0)->impl), "zt_comm_req too small");

#define ZT_CHECK_NCCL_(call, comm)                                                      \
    do {                                                                                \
        ncclResult_t zt_nc_r_ = (call);                                                 \
        if (zt_nc_r_ != ncclSuccess)                                                    \
            zt_fatal(__FILE__, __LINE__, "NCCL error %s in %s: %s",                     \
                     ncclGetErrorString(zt_nc_r_), #call, ncclGetLastError(comm));      \
    } while (0)
#define ZT_CHECK_NCCL(call) ZT_CHECK_NCCL_(call, n->nccl)
#define ZT_CHECK_CUDA(call)                                                             \
    do {                                                                                \
        cudaError_t zt_cu_e_ = (call);                                                  \
        if (zt_cu_e_ != cudaSuccess)                                                    \
            zt_fatal(__FILE__, __LINE__, "CUDA error %s in %s",                         \
                     cudaGetErrorString(zt_cu_e_), #call);                              \
    } while (0)

static const zt_comm_i nccl_ops;

static nccl_impl *impl_of(const zt_comm *c) { return (nccl_impl *)c->impl; }
static cudaStream_t stream_of(const zt_comm *c, void *stream) {
    return stream ? (cudaStream_t)stream : impl_of(c)->stream;
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// After each operation: the watchdog's probe of its stream moves past it.
// The probe is cleared while the event moves, so the watchdog never pairs an old time with
// a new operation's event (stalled() re-reads the time after its query).
static void issued(probe *p, cudaStream_t st, const char *what) {
    __atomic_store_n(&p->issued_ns, 0, __ATOMIC_RELEASE);
    ZT_CHECK_CUDA(cudaEventRecord(p->done, st));
    __atomic_store_n(&p->what, what, __ATOMIC_RELAXED);
    __atomic_store_n(&p->issued_ns, mono_ns(), __ATOMIC_RELEASE);
}

// ---------------------------------------------------------------- the watchdog
//
// NCCL reports a peer that died or a broken network only through ncclCommGetAsyncError,
// and an operation whose peer stopped never completes: its kernel waits on the GPU and the
// host waits in cudaStreamSynchronize, forever. So one thread per process looks at every
// live communicator twice a second. An asynchronous error, or the last operation on one of
// its streams still running past the collective timeout (zt_comm_mpi_stall_limit_s: the
// MPI path's own limit, so both paths time out alike), prints one line, aborts every
// communicator (ncclCommAbort: their kernels return, nothing waits on them) and ends this
// process; mpirun then ends the others, whose own watchdogs see the dead peer meanwhile.

#define ZT_NCCL_MAX_LIVE 64
static struct {
    pthread_mutex_t mu;
    nccl_impl *live[ZT_NCCL_MAX_LIVE];
    int n, started, device;
} g_live = {.mu = PTHREAD_MUTEX_INITIALIZER};

// One write(2) and the end: the main thread may hold a stdio lock where it is stuck. An
// abort may itself block behind a kernel that waits on a dead peer: the alarm (its default
// action ends the process) bounds it, since ending is what matters.
static void watch_fire(const char *why) {
    char line[768];
    int n = snprintf(line, sizeof line, "zerotrain: error: (rank %d) %s; ending the job\n",
                     zt_log_rank(), why);
    ssize_t w = write(STDERR_FILENO, line,
                      n > 0 && n < (int)sizeof line ? (size_t)n : sizeof line - 1);
    (void)w;
    alarm(5);
    for (int i = 0; i < g_live.n; i++) ncclCommAbort(g_live.live[i]->nccl);
    _exit(1);
}

// Pending past the limit and not done: stalled. A probe seen done is cleared (no query). The
// time is re-read after the query: if it changed, the event answered for a newer operation.
// The age counts from the host's enqueue, so GPU backlog counts too; the default limit is at
// least 10 steps, so only a small explicit ZT_COMM_TIMEOUT_S comes near it.
static int stalled(probe *p, int64_t now, double limit_s) {
    int64_t t = __atomic_load_n(&p->issued_ns, __ATOMIC_ACQUIRE);
    if (t == 0 || limit_s <= 0 || (double)(now - t) * 1e-9 < limit_s) return 0;
    cudaError_t q = cudaEventQuery(p->done);
    if (__atomic_load_n(&p->issued_ns, __ATOMIC_ACQUIRE) != t) return 0;
    if (q != cudaErrorNotReady) {
        __atomic_compare_exchange_n(&p->issued_ns, &t, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
        return 0;
    }
    return 1;
}

static void watch_one(nccl_impl *n, int64_t now, double limit_s) {
    char why[512];
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(n->nccl, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
        snprintf(why, sizeof why, "NCCL reports %s on the communicator of %d ranks (a rank "
                 "died, or the network failed): %s", ncclGetErrorString(async), n->ctrl.size,
                 ncclGetLastError(n->nccl));
        watch_fire(why);
    }
    probe *p = stalled(&n->last, now, limit_s) ? &n->last
               : stalled(&n->ilast, now, limit_s) ? &n->ilast : NULL;
    if (!p) return;
    snprintf(why, sizeof why, "an NCCL %s on the communicator of %d ranks has not completed "
             "in %.0f s: a rank stopped or hung (the collective timeout, as on the MPI path; "
             "ZT_COMM_TIMEOUT_S=S sets it, 0 waits forever)",
             (const char *)__atomic_load_n(&p->what, __ATOMIC_RELAXED), n->ctrl.size,
             (double)(now - p->issued_ns) * 1e-9);
    watch_fire(why);
}

static void *watch_thread(void *arg) {
    (void)arg;
    cudaSetDevice(g_live.device); // the thread's queries on the ranks' own GPU
    const struct timespec tick = {0, 500 * 1000 * 1000};
    for (;;) {
        nanosleep(&tick, NULL);
        double limit_s = zt_comm_mpi_stall_limit_s();
        pthread_mutex_lock(&g_live.mu);
        int64_t now = mono_ns();
        for (int i = 0; i < g_live.n; i++) watch_one(g_live.live[i], now, limit_s);
        pthread_mutex_unlock(&g_live.mu);
    }
    return NULL;
}

static void watch_add(nccl_impl *n) {
    pthread_mutex_lock(&g_live.mu);
    ZT_ASSERTF(g_live.n < ZT_NCCL_MAX_LIVE, "more than %d NCCL communicators",
               ZT_NCCL_MAX_LIVE);
    g_live.live[g_live.n++] = n;
    if (!g_live.started) {
        ZT_CHECK_CUDA(cudaGetDevice(&g_live.device));
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        g_live.started = pthread_create(&t, &a, watch_thread, NULL) == 0;
        pthread_attr_destroy(&a);
        if (!g_live.started)
            fprintf(stderr, "zerotrain: warning: (rank %d) cannot start the NCCL watchdog: "
                            "a rank that dies or stops would hang the job\n", zt_log_rank());
    }
    pthread_mutex_unlock(&g_live.mu);
}

static void watch_remove(nccl_impl *n) {
    pthread_mutex_lock(&g_live.mu);
    for (int i = 0; i < g_live.n; i++)
        if (g_live.live[i] == n) g_live.live[i] = g_live.live[--g_live.n];
    pthread_mutex_unlock(&g_live.mu);
}

// ---------------------------------------------------------------- the operations

static ncclDataType_t nccl_dtype(zt_dtype dt) {
    switch (dt) {
    case ZT_F32: return ncclFloat32;
    case ZT_F64: return ncclFloat64;
    case ZT_I32: return ncclInt32;
    case ZT_I64: return ncclInt64;
    case ZT_U8: return ncclUint8;
    case ZT_BF16: return ncclBfloat16; // SUM: each step adds in fp32, rounds to bf16
    default: zt_fatal(__FILE__, __LINE__, "NCCL: bad dtype %d", (int)dt);
    }
}
static ncclRedOp_t nccl_op(zt_reduce_op op) {
    return op == ZT_REDUCE_MAX ? ncclMax : ncclSum;
}

static void nccl_all_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, zt_reduce_op op, void *stream) {
    nccl_impl *n = impl_of(c);
    cudaStream_t st = stream_of(c, stream);
    ZT_CHECK_NCCL(ncclAllReduce(send, recv, count, nccl_dtype(dt), nccl_op(op), n->nccl, st));
    issued(&n->last, st, "all-reduce");
}

// comm.h's in-place forms are NCCL's own (recv == send + rank*B; send == recv + rank*B).
static void nccl_reduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                                zt_dtype dt, zt_reduce_op op, void *stream) {
    nccl_impl *n = impl_of(c);
    cudaStream_t st = stream_of(c, stream);
    ZT_CHECK_NCCL(ncclReduceScatter(send, recv, count / (size_t)c->size, nccl_dtype(dt),
                                    nccl_op(op), n->nccl, st));
    issued(&n->last, st, "reduce-scatter");
}

static void nccl_all_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, void *stream) {
    nccl_impl *n = impl_of(c);
    cudaStream_t st = stream_of(c, stream);
    ZT_CHECK_NCCL(
        ncclAllGather(send, recv, count / (size_t)c->size, nccl_dtype(dt), n->nccl, st));
    issued(&n->last, st, "all-gather");
}

static void nccl_broadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                           void *stream) {
    nccl_impl *n = impl_of(c);
    cudaStream_t st = stream_of(c, stream);
    ZT_CHECK_NCCL(ncclBroadcast(buf, buf, count, nccl_dtype(dt), root, n->nccl, st));
    issued(&n->last, st, "broadcast");
}

// NCCL has no tags: messages between a pair of ranks match in issue order (comm.h).
static void nccl_send(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                      int tag, void *stream) {
    (void)tag;
    nccl_impl *n = impl_of(c);
    cudaStream_t st = stream_of(c, stream);
    ZT_CHECK_NCCL(ncclSend(buf, count, nccl_dtype(dt), peer, n->nccl, st));
    issued(&n->last, st, "send");
}

static void nccl_recv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                      void *stream) {
    (void)tag;
    nccl_impl *n = impl_of(c);
    cudaStream_t st = stream_of(c, stream);
    ZT_CHECK_NCCL(ncclRecv(buf, count, nccl_dtype(dt), peer, n->nccl, st));
    issued(&n->last, st, "receive");
}

// Both directions in one group, so neither side waits for the other to post first.
static void nccl_send_recv(const zt_comm *c, const void *sendbuf, size_t send_count, int dst,
                           void *recvbuf, size_t recv_count, int src, zt_dtype dt, int tag,
                           void *stream) {
    (void)tag;
    nccl_impl *n = impl_of(c);
    cudaStream_t st = stream_of(c, stream);
    ZT_CHECK_NCCL(ncclGroupStart());
    ZT_CHECK_NCCL(ncclSend(sendbuf, send_count, nccl_dtype(dt), dst, n->nccl, st));
    ZT_CHECK_NCCL(ncclRecv(recvbuf, recv_count, nccl_dtype(dt), src, n->nccl, st));
    ZT_CHECK_NCCL(ncclGroupEnd());
    issued(&n->last, st, "send-receive");
}

// Everything issued on the stream is done, on every rank.
static void nccl_barrier(const zt_comm *c, void *stream) {
    cudaError_t e = cudaStreamSynchronize(stream_of(c, stream));
    ZT_ASSERTF(e == cudaSuccess, "CUDA error %s before an NCCL barrier", cudaGetErrorString(e));
    const zt_comm *ctrl = &impl_of(c)->ctrl;
    ctrl->ops->barrier(ctrl, NULL);
}

// ---------------------------------------------------------------- nonblocking collectives
//
// Each runs on comm_stream, after everything the caller's stream had issued (the buffers'
// producers), so the caller's kernels go on beside it. Completion is in stream order, as for
// the blocking operations (comm_nccl.h): wait makes the caller's stream wait for it without
// blocking the host; test asks the GPU. Collectives of different communicators then run
// concurrently on two streams; NCCL calls that deadlock-free while their kernels fit on the
// GPU at once (an H100 holds them easily); NCCL_LAUNCH_ORDER_IMPLICIT=1 (NCCL 2.26+) orders
// them by host issue order where that ever fails.

static cudaStream_t istart(const zt_comm *c, void *stream) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_CUDA(cudaEventRecord(n->ready, stream_of(c, stream)));
    ZT_CHECK_CUDA(cudaStreamWaitEvent(n->comm_stream, n->ready, 0));
    return n->comm_stream;
}

static void ifinish(const zt_comm *c, void *stream, zt_comm_req *req, const char *what) {
    nccl_impl *n = impl_of(c);
    nccl_req *q = (nccl_req *)req->impl;
    ZT_CHECK_CUDA(cudaEventCreateWithFlags(&q->done, cudaEventDisableTiming));
    ZT_CHECK_CUDA(cudaEventRecord(q->done, n->comm_stream));
    q->order = stream_of(c, stream);
    issued(&n->ilast, n->comm_stream, what);
}

static void nccl_iall_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                             zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *req) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclAllReduce(send, recv, count, nccl_dtype(dt), nccl_op(op), n->nccl,
                                istart(c, stream)));
    ifinish(c, stream, req, "all-reduce (nonblocking)");
}

static void nccl_ireduce(const zt_comm *c, const void *send, void *recv, size_t count,
                         zt_dtype dt, zt_reduce_op op, int root, void *stream,
                         zt_comm_req *req) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclReduce(send, recv, count, nccl_dtype(dt), nccl_op(op), root, n->nccl,
                             istart(c, stream)));
    ifinish(c, stream, req, "reduce (nonblocking)");
}

static void nccl_ireduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                                 zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *req) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclReduceScatter(send, recv, count / (size_t)c->size, nccl_dtype(dt),
                                    nccl_op(op), n->nccl, istart(c, stream)));
    ifinish(c, stream, req, "reduce-scatter (nonblocking)");
}

static void nccl_iall_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                             zt_dtype dt, void *stream, zt_comm_req *req) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclAllGather(send, recv, count / (size_t)c->size, nccl_dtype(dt), n->nccl,
                                istart(c, stream)));
    ifinish(c, stream, req, "all-gather (nonblocking)");
}

static void nccl_ibroadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                            void *stream, zt_comm_req *req) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclBroadcast(buf, buf, count, nccl_dtype(dt), root, n->nccl,
                                istart(c, stream)));
    ifinish(c, stream, req, "broadcast (nonblocking)");
}

// The caller's stream waits for the collective; the handle is released (a destroyed event
// still completes the waits already queued on it).
static void icomplete(nccl_req *q) {
    ZT_CHECK_CUDA(cudaStreamWaitEvent(q->order, q->done, 0));
    ZT_CHECK_CUDA(cudaEventDestroy(q->done));
}

static int nccl_test(const zt_comm *c, zt_comm_req *req) {
    (void)c;
    nccl_req *q = (nccl_req *)req->impl;
    cudaError_t e = cudaEventQuery(q->done);
    if (e == cudaErrorNotReady) return 0;
    ZT_CHECK_CUDA(e);
    icomplete(q);
    return 1;
}

static void nccl_wait(const zt_comm *c, zt_comm_req *req) {
    (void)c;
    icomplete((nccl_req *)req->impl);
}

// ---------------------------------------------------------------- communicators

// Wraps an NCCL communicator of ctrl's ranks (same order) into *out; takes ownership of
// both (moves *ctrl).
static void wrap(zt_comm *out, ncclComm_t comm, zt_comm *ctrl, cudaStream_t stream) {
    nccl_impl *n = calloc(1, sizeof *n);
    ZT_ASSERTF(n, "out of host memory");
    n->nccl = comm;
    n->stream = stream;
    ZT_CHECK_CUDA(cudaStreamCreateWithFlags(&n->comm_stream, cudaStreamNonBlocking));
    ZT_CHECK_CUDA(cudaEventCreateWithFlags(&n->ready, cudaEventDisableTiming));
    ZT_CHECK_CUDA(cudaEventCreateWithFlags(&n->last.done, cudaEventDisableTiming));
    ZT_CHECK_CUDA(cudaEventCreateWithFlags(&n->ilast.done, cudaEventDisableTiming));
    n->ctrl = *ctrl; // moved
    memset(ctrl, 0, sizeof *ctrl);
    out->ops = &nccl_ops;
    out->impl = n;
    out->rank = n->ctrl.rank;
    out->size = n->ctrl.size;
    watch_add(n);
}

// Joins the NCCL communicator whose id rank 0 of ctrl makes; takes ownership of *ctrl.
static zt_status nccl_join(zt_comm *out, zt_comm *ctrl, cudaStream_t stream) {
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = ncclSuccess;
    if (ctrl->rank == 0) r = ncclGetUniqueId(&id);
    // every rank takes part in the broadcast, so a failure on rank 0 reaches all
    int ok = r == ncclSuccess;
    zt_comm_broadcast(ctrl, &ok, 1, ZT_I32, 0, NULL);
    if (!ok) {
        zt_comm_free(ctrl);
        return zt_errorf("NCCL: no unique id on rank 0 (%s)", ncclGetErrorString(r));
    }
    zt_comm_broadcast(ctrl, &id, sizeof id, ZT_U8, 0, NULL);
    ncclComm_t comm = NULL;
    r = ncclCommInitRank(&comm, ctrl->size, id, ctrl->rank);
    zt_status s = zt_comm_agree(ctrl, r == ncclSuccess ? ZT_OK
                                                       : zt_errorf("NCCL refused rank %d of %d: "
                                                                   "%s (%s)",
                                                                   ctrl->rank, ctrl->size,
                                                                   ncclGetErrorString(r),
                                                                   ncclGetLastError(NULL)));
    if (s != ZT_OK) {
        if (r == ncclSuccess) ncclCommDestroy(comm);
        zt_comm_free(ctrl);
        return s;
    }
    wrap(out, comm, ctrl, stream);
    return ZT_OK;
}

// The control path splits first, then NCCL splits its own communicator alike:
// ncclCommSplit orders by key, ties by rank, as MPI does, so both agree (checked).
// nccl_color < 0: this rank joins no NCCL communicator (*out stays zero-filled). A failure
// here is a broken library (fatal: split returns nothing).
static void split_as(const zt_comm *c, int nccl_color, int ctrl_color, int key, zt_comm *out) {
    nccl_impl *n = impl_of(c);
    zt_comm part;
    zt_comm_split(&n->ctrl, ctrl_color, key, &part);
    ncclComm_t sub = NULL;
    ZT_CHECK_NCCL(ncclCommSplit(n->nccl, nccl_color >= 0 ? nccl_color : NCCL_SPLIT_NOCOLOR, key,
                                &sub, NULL));
    if (nccl_color < 0) {
        zt_comm_free(&part);
        return;
    }
    int rank = -1;
    ZT_CHECK_NCCL_(ncclCommUserRank(sub, &rank), sub);
    ZT_ASSERTF(rank == part.rank, "NCCL split: rank %d, the control path's %d", rank,
               part.rank);
    wrap(out, sub, &part, n->stream);
}

// comm.h's split: a rank outside every group gets a size-1 communicator, so it takes a color
// of its own (NCCL's "no color" would leave it none).
#define ZT_NCCL_OWN_COLOR0 (1 << 30)
static void nccl_split(const zt_comm *c, int color, int key, zt_comm *out) {
    ZT_ASSERTF(color < ZT_NCCL_OWN_COLOR0, "NCCL split: color %d too large", color);
    split_as(c, color >= 0 ? color : ZT_NCCL_OWN_COLOR0 + c->rank, color, key, out);
}

void zt_comm_nccl_split(const zt_comm *parent, int color, int key, zt_comm *out) {
    ZT_ASSERTF(parent && parent->ops == &nccl_ops, "zt_comm_nccl_split: not an NCCL parent");
    memset(out, 0, sizeof *out);
    split_as(parent, color, color, key, out);
}

static void nccl_free(zt_comm *c) {
    nccl_impl *n = impl_of(c);
    if (!n) return;
    cudaStreamSynchronize(n->stream); // nothing of ours still in flight (still watched: a
    cudaStreamSynchronize(n->comm_stream); // peer dying now ends the job, not a hang)
    watch_remove(n);
    if (n->nccl) ncclCommDestroy(n->nccl);
    cudaStreamDestroy(n->comm_stream);
    cudaEventDestroy(n->ready);
    cudaEventDestroy(n->last.done);
    cudaEventDestroy(n->ilast.done);
    zt_comm_free(&n->ctrl);
    free(n);
    c->impl = NULL;
}

static const zt_comm_i nccl_ops = {
    .name = "nccl",
    .all_reduce = nccl_all_reduce,
    .reduce_scatter = nccl_reduce_scatter,
    .all_gather = nccl_all_gather,
    .broadcast = nccl_broadcast,
    .send = nccl_send,
    .recv = nccl_recv,
    .send_recv = nccl_send_recv,
    .barrier = nccl_barrier,
    .split = nccl_split,
    .free = nccl_free,
    .iall_reduce = nccl_iall_reduce,
    .ireduce = nccl_ireduce,
    .ireduce_scatter = nccl_ireduce_scatter,
    .iall_gather = nccl_iall_gather,
    .ibroadcast = nccl_ibroadcast, // (no isend/irecv: an unmatched send holds its stream)
    .test = nccl_test,
    .wait = nccl_wait,
};

zt_status zt_comm_nccl_init(zt_comm *out, const zt_comm *ctrl, void *stream) {
    memset(out, 0, sizeof *out);
    zt_comm mine; // a control communicator of our own, so the caller may free theirs
    zt_comm_split(ctrl, 0, ctrl->rank, &mine);
    return nccl_join(out, &mine, (cudaStream_t)stream);
}
