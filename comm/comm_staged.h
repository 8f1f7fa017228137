// Host staging: a communicator whose buffers are device memory, carried by a host
// communicator (MPI) through host buffers. The tensor path of a group whose ranks share a
// GPU, where NCCL refuses them ("Duplicate GPU detected"); docs/design.md, "Backends".
#ifndef ZT_COMM_STAGED_H
#define ZT_COMM_STAGED_H

#include "comm.h"

// How to reach device memory: comm/ sits beside kernels/ (docs/design.md, "Floors"), so the
// caller hands in these four (src/parallel/grid_data.c adapts a zt_backend). Both copies
// return once the copy is done (the host buffer may be read or reused), and are ordered
// after the device work issued before them.
typedef struct {
    void *ctx;
    // `bytes` of host memory the copies are fastest from and to (pinned on a GPU); NULL
    // only for 0 bytes (out of memory is fatal in the callee). Freed with host_free.
    void *(*host_alloc)(void *ctx, size_t bytes);
    void (*host_free)(void *ctx, void *p);
    void (*to_host)(void *ctx, void *host, const void *dev, size_t bytes);
    void (*to_device)(void *ctx, void *dev, const void *host, size_t bytes);
} zt_comm_staging;

// Default bytes of each of the two staging buffers (send side, receive side).
#define ZT_COMM_STAGE_BYTES_DEFAULT ((size_t)16 << 20)

// Makes *out a communicator with inner's ranks whose operations take device memory: each
// copies its device input into a host buffer (st->to_host), runs inner's operation there
// (stream NULL: inner is a host backend), and copies the result back (st->to_device).
// comm.h's counts, dtypes and in-place forms are kept: the same bits as inner's operation
// on host copies of the buffers. An operation larger than the staging buffer (stage_bytes,
// two of them) runs in pieces: all_reduce, broadcast and point-to-point in consecutive
// pieces, reduce_scatter and all_gather in the same slice of every rank's block at once
// (so a sum of one element still adds the same values; its order is inner's for the
// piece's length). On one rank an operation in place copies nothing (free). `inner` is borrowed and must outlive *out, except that a communicator
// made by split owns its own split of inner. Collective over inner (the ranks check that
// they staged alike: pieces must match). The buffers are allocated here, once; free *out
// with zt_comm_free (zt_comm_free(inner) after).
void zt_comm_staged_init(zt_comm *out, const zt_comm *inner, const zt_comm_staging *st,
                         size_t stage_bytes);

// Bytes of host memory zt_comm_staged_init(..., stage_bytes) allocates through host_alloc
// (its two buffers), for the memory planner.
size_t zt_comm_staged_host_bytes(size_t stage_bytes);

// Whether c is a staged communicator (made by zt_comm_staged_init or its split).
int zt_comm_is_staged(const zt_comm *c);

// Gives staged communicator c nonblocking point-to-point (until then it has none:
// zt_comm_has_async_p2p is 0): `n_ops` host slots of `bytes` each, allocated here through the
// staging's host_alloc, one per isend or irecv in flight (a slot is free again once its
// request's test says done or its wait returns). isend copies the device buffer to a slot
// (after the device work that wrote it) and sends it; irecv receives into a slot and copies
// to the device at test or wait. Messages are cut in the blocking calls' pieces, so either
// side of a pair may be blocking. A message over `bytes`, or more operations in flight than
// n_ops, is fatal. Local (not collective); once per communicator; freed with it.
void zt_comm_staged_reserve_p2p(zt_comm *c, int n_ops, size_t bytes);

// Bytes zt_comm_staged_reserve_p2p(c, n_ops, bytes) allocates through host_alloc.
size_t zt_comm_staged_p2p_host_bytes(int n_ops, size_t bytes);

#endif
