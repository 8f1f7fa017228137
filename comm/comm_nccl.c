// The NCCL backend of comm.h: collectives and point-to-point on device memory, one NCCL
// communicator per zt_comm, created from an ncclUniqueId that the control communicator
// (MPI, host memory) broadcasts. split splits the control communicator and makes a new
// NCCL communicator over each part the same way. Compiled in `make cuda` only.
#include "comm_nccl.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdlib.h>

typedef struct {
    ncclComm_t nccl;
    cudaStream_t stream; // for operations called with stream NULL
    zt_comm ctrl;        // this communicator's ranks on the control path (owned)
} nccl_impl;

#define ZT_CHECK_NCCL_(call, comm)                                                      \
    do {                                                                                \
        ncclResult_t zt_nc_r_ = (call);                                                 \
        if (zt_nc_r_ != ncclSuccess)                                                    \
            zt_fatal(__FILE__, __LINE__, "NCCL error %s in %s: %s",                     \
                     ncclGetErrorString(zt_nc_r_), #call, ncclGetLastError(comm));      \
    } while (0)
#define ZT_CHECK_NCCL(call) ZT_CHECK_NCCL_(call, n->nccl)

static const zt_comm_i nccl_ops;

static nccl_impl *impl_of(const zt_comm *c) { return (nccl_impl *)c->impl; }
static cudaStream_t stream_of(const zt_comm *c, void *stream) {
    return stream ? (cudaStream_t)stream : impl_of(c)->stream;
}

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
    ZT_CHECK_NCCL(ncclAllReduce(send, recv, count, nccl_dtype(dt), nccl_op(op), n->nccl,
                                stream_of(c, stream)));
}

// comm.h's in-place forms are NCCL's own (recv == send + rank*B; send == recv + rank*B).
static void nccl_reduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                                zt_dtype dt, zt_reduce_op op, void *stream) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclReduceScatter(send, recv, count / (size_t)c->size, nccl_dtype(dt),
                                    nccl_op(op), n->nccl, stream_of(c, stream)));
}

static void nccl_all_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, void *stream) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclAllGather(send, recv, count / (size_t)c->size, nccl_dtype(dt), n->nccl,
                                stream_of(c, stream)));
}

static void nccl_broadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                           void *stream) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclBroadcast(buf, buf, count, nccl_dtype(dt), root, n->nccl,
                                stream_of(c, stream)));
}

// NCCL has no tags: messages between a pair of ranks match in issue order (comm.h).
static void nccl_send(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                      int tag, void *stream) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclSend(buf, count, nccl_dtype(dt), peer, n->nccl, stream_of(c, stream)));
}

static void nccl_recv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                      void *stream) {
    nccl_impl *n = impl_of(c);
    ZT_CHECK_NCCL(ncclRecv(buf, count, nccl_dtype(dt), peer, n->nccl, stream_of(c, stream)));
}

// Both directions in one group, so neither side waits for the other to post first.
static void nccl_send_recv(const zt_comm *c, const void *sendbuf, size_t send_count, int dst,
                           void *recvbuf, size_t recv_count, int src, zt_dtype dt, int tag,
                           void *stream) {
    nccl_impl *n = impl_of(c);
    cudaStream_t st = stream_of(c, stream);
    ZT_CHECK_NCCL(ncclGroupStart());
    ZT_CHECK_NCCL(ncclSend(sendbuf, send_count, nccl_dtype(dt), dst, n->nccl, st));
    ZT_CHECK_NCCL(ncclRecv(recvbuf, recv_count, nccl_dtype(dt), src, n->nccl, st));
    ZT_CHECK_NCCL(ncclGroupEnd());
}

// Everything issued on the stream is done, on every rank.
static void nccl_barrier(const zt_comm *c, void *stream) {
    cudaError_t e = cudaStreamSynchronize(stream_of(c, stream));
    ZT_ASSERTF(e == cudaSuccess, "CUDA error %s before an NCCL barrier", cudaGetErrorString(e));
    const zt_comm *ctrl = &impl_of(c)->ctrl;
    ctrl->ops->barrier(ctrl, NULL);
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
    nccl_impl *n = calloc(1, sizeof *n);
    ZT_ASSERTF(n, "out of host memory");
    r = ncclCommInitRank(&n->nccl, ctrl->size, id, ctrl->rank);
    zt_status s = zt_comm_agree(ctrl, r == ncclSuccess ? ZT_OK
                                                       : zt_errorf("NCCL refused rank %d of %d: "
                                                                   "%s (%s)",
                                                                   ctrl->rank, ctrl->size,
                                                                   ncclGetErrorString(r),
                                                                   ncclGetLastError(NULL)));
    if (s != ZT_OK) {
        if (r == ncclSuccess) ncclCommDestroy(n->nccl);
        zt_comm_free(ctrl);
        free(n);
        return s;
    }
    n->stream = stream;
    n->ctrl = *ctrl; // moved
    memset(ctrl, 0, sizeof *ctrl);
    out->ops = &nccl_ops;
    out->impl = n;
    out->rank = n->ctrl.rank;
    out->size = n->ctrl.size;
    return ZT_OK;
}

// The control path splits first (a rank outside every group gets a size-1 communicator
// there, comm.h), then each part joins an NCCL communicator of its own. A failure here is
// a broken library or a layout NCCL cannot run (fatal: split returns nothing).
static void nccl_split(const zt_comm *c, int color, int key, zt_comm *out) {
    zt_comm part;
    zt_comm_split(&impl_of(c)->ctrl, color, key, &part);
    ZT_ASSERTF(nccl_join(out, &part, impl_of(c)->stream) == ZT_OK, "NCCL split: %s",
               zt_error_message());
}

static void nccl_free(zt_comm *c) {
    nccl_impl *n = impl_of(c);
    if (!n) return;
    cudaStreamSynchronize(n->stream); // nothing of ours still in flight
    if (n->nccl) ncclCommDestroy(n->nccl);
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
};

zt_status zt_comm_nccl_init(zt_comm *out, const zt_comm *ctrl, void *stream) {
    memset(out, 0, sizeof *out);
    zt_comm mine; // a control communicator of our own, so the caller may free theirs
    zt_comm_split(ctrl, 0, ctrl->rank, &mine);
    return nccl_join(out, &mine, (cudaStream_t)stream);
}
