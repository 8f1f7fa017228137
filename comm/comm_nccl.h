// The NCCL communicator backend (comm.h's interface on device memory), in the CUDA build
// only (`make cuda`); a build without CUDA has init refuse with a message.
#ifndef ZT_COMM_NCCL_H
#define ZT_COMM_NCCL_H

#include "comm.h"

// Makes *out an NCCL communicator over the ranks of `ctrl` (a host communicator, MPI or
// self: the control path), with the same ranks: rank 0 of ctrl creates an ncclUniqueId
// and broadcasts it over ctrl, then every rank joins on its current CUDA device. `stream`
// (a cudaStream_t) is where operations called with stream NULL run: the CUDA backend's
// stream, so they are ordered with its kernels. Operations are asynchronous on their
// stream (comm.h's blocking rule holds in stream order: nothing later on the stream sees
// a buffer before the operation is done with it); barrier also waits for the stream.
// Nonblocking collectives run on a stream of the communicator's own after what the
// caller's stream had issued; zt_comm_wait orders the caller's stream after them (the host
// does not block), zt_comm_test asks whether the GPU finished. zt_comm_split derives new
// communicators by ncclCommSplit (no new bootstrap). A watchdog thread ends the job with
// one line on an asynchronous NCCL error (a rank died) or an operation pending past the
// collective timeout (zt_comm_mpi_stall_limit_s), aborting the communicators first.
// *out keeps a split of ctrl of its own (freed with it), so ctrl may be freed first.
// Collective over ctrl. ZT_ERR with NCCL's message when it refuses (e.g. two ranks of
// the communicator on one GPU: "Duplicate GPU detected"), or in a build without CUDA.
zt_status zt_comm_nccl_init(zt_comm *out, const zt_comm *ctrl, void *stream);
// Collective over `parent` (an NCCL communicator): the ranks passing one color >= 0 get an
// NCCL communicator in *out, ordered by key (ties by rank in parent), by ncclCommSplit; a
// rank passing ZT_COMM_UNDEFINED gets none (*out zero-filled). Fatal in a build without CUDA.
void zt_comm_nccl_split(const zt_comm *parent, int color, int key, zt_comm *out);

#endif
