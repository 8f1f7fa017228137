// The ZeRO-1 parameter all-gather overlapped with the next step's forward (--overlap-comm on):
// after the update each dp rank holds only its shard's new values; the blocking step then
// all-gathers the whole buffer before the next step. Here the gather is started in buckets,
// nonblocking, and the next forward waits for a layer's buckets just before it first reads
// that layer's weights (docs/design.md §2, "Overlapped parameter all-gather").
//
// Buckets follow the flat buffer's order (layout.h), which is the forward's: the embedding,
// the blocks first to last, the final LayerNorm (the last stage's tied wte sits at the front
// and is waited for at the head). A bucket holds whole tensors, at least `bucket` elements
// of them (the last may hold less), and is cut at the shard boundaries it crosses; each piece
// is broadcast from its shard's owner. Together the pieces move exactly what one all-gather
// of the buffer moves, and every element ends as the owner's bytes, so the result is the
// blocking gather's bit for bit.
//
// Every rank of the dp group has the same layout, so it cuts and starts the same pieces in
// the same order. Between zt_param_gather_start and the last wait, the parameters of a piece
// in flight may be neither read (off its owner) nor written (on any rank).
#ifndef ZT_PARAM_GATHER_H
#define ZT_PARAM_GATHER_H

#include "comm.h"
#include "layout.h"

typedef struct {
    const zt_comm *dp;  // the dp group's tensor path
    char *params;       // (numel) the flat parameters, of dt
    zt_dtype dt;
    size_t *lo;         // (n) piece i is params [lo[i], lo[i+1]), lo[n] = numel
    int *owner;         // (n) the dp rank whose shard holds piece i
    int n;
    zt_comm_req *req;   // (n) pieces in flight
    double comm_s;      // seconds in starting, polling and waiting since zt_param_gather_take
    int waited_in_use;  // pieces still in flight when a zt_param_gather_need first asked
                        // for them or polled them (overlapped with the caller's work)
} zt_param_gather;

// Cuts the layout's buffer (lay->numel elements of dt at `params`, numel divisible by the dp
// size: the ZeRO shards) into pieces; `bucket` elements per bucket (1: a bucket per tensor).
// `params` is the caller's and must outlive this. Free with zt_param_gather_free (which
// accepts a zero-filled one).
void zt_param_gather_init(zt_param_gather *o, const zt_comm *dp, void *params, zt_dtype dt,
                          const zt_layout *lay, size_t bucket);
void zt_param_gather_free(zt_param_gather *o);

// Starts every piece (each rank's shard holds its new values). Nothing may be in flight.
void zt_param_gather_start(zt_param_gather *o);
// Parameters [lo, hi) are about to be read: waits for the pieces in flight that overlap them,
// then polls the others (MPI progresses them only inside MPI calls).
void zt_param_gather_need(zt_param_gather *o, size_t lo, size_t hi);
// Waits for every piece: on return the parameters are the blocking all-gather's.
void zt_param_gather_finish(zt_param_gather *o);
// 1 while some piece may be in flight.
int zt_param_gather_pending(const zt_param_gather *o);
// The time and the overlapped pieces counted since the last take, and resets both.
double zt_param_gather_take(zt_param_gather *o, int *waited_in_use);

#endif
