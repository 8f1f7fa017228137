// The MPI backend's private definitions, shared by its files and by nothing else: the
// communicator's state, the checked MPI call, and what each of its parts offers the others
// (types, settings, the timeout, the staging window, the nonblocking operations).
//   comm_mpi.c          the communicator: blocking operations, split, free, the ops table
//   comm_mpi_req.c      nonblocking operations (requests)
//   comm_mpi_stage.c    node-local collectives through a shared-memory staging window
//   comm_mpi_timeout.c  the collective timeout: polling, and the default watchdog
//   comm_mpi_settings.c the ZT_COMM_* variables
//   comm_mpi_types.c    dtypes, reductions and counts as MPI's (bf16's user ops), the checks
//   comm_mpi_world.c    MPI's lifetime
//   comm_mpi_fail.c     the failure path and the abort
// Calls go one way (scripts/check_floors.py checks it): comm_mpi.c and comm_mpi_world.c on
// top, then the nonblocking operations, the staging window, the settings, the timeout, the
// types and checks, and the failure path at the bottom, which calls none of them.
#ifndef ZT_COMM_MPI_IMPL_H
#define ZT_COMM_MPI_IMPL_H

#include <stdint.h>

#include <mpi.h>

#include "comm_mpi.h"

typedef struct {
    MPI_Comm comm;
    // The node-local staging window, or MPI_WIN_NULL (size 1, ranks on several nodes, or
    // ZT_COMM_MPI_ALGO=mpi). Each rank's part: a header, then 2 halves x size slots x
    // slot_bytes.
    MPI_Win win;
    char **part;          // (size) every rank's part of the window, mapped in this process
    int *ag_counts;       // (2 * size) all_reduce's MPI_Allgatherv counts, then displacements
    int stage_ag;         // all_gather staged too (ZT_COMM_MPI_ALGO=stage-all)
    int max_count;        // elements per MPI call (ZT_COMM_MPI_MAX_COUNT, <= INT_MAX)
    size_t slot_bytes;
    size_t hdr_bytes;     // the header with the timeout on, else 0 (no header)
    unsigned long chunks; // chunks staged so far; its parity picks the half (same on all ranks)
    uint64_t entered;     // collectives this rank entered on comm, with the timeout on
    // The world ranks of the members, first + q * stride (grid groups are such progressions;
    // stride 0: not one): the watchdog names them without calling MPI from its thread.
    int world_first, world_stride;
    int rank;             // this rank in comm
} zt_mpi_comm;

static inline MPI_Comm zt_mpi_handle(const zt_comm *c) {
    return ((const zt_mpi_comm *)c->impl)->comm;
}

// ---- the failure path (comm_mpi_fail.c) ----

// One line "zerotrain: fatal (rank R) file:line: <message>", then MPI_Abort: the other ranks
// do not wait forever in a collective.
void zt_mpi_fatalf(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
// zt_mpi_fatalf with "MPI_X failed: <MPI's message for rc>".
void zt_mpi_fail(const char *file, int line, const char *call, int rc) __attribute__((noreturn));

// Every MPI call goes through it: MPI_COMM_WORLD (and so every communicator made from it)
// returns errors instead of aborting inside the library. A broken MPI call is a bug-tier
// failure (docs/design.md, coding rules: two tiers of errors).
#define ZT_CHECK_MPI(call)                                                              \
    do {                                                                                \
        int zt_mpi_rc_ = (call);                                                        \
        if (zt_mpi_rc_ != MPI_SUCCESS) zt_mpi_fail(__FILE__, __LINE__, #call, zt_mpi_rc_); \
    } while (0)

#define ZT_MPI_ASSERTF(cond, ...)                                    \
    do {                                                             \
        if (!(cond)) zt_mpi_fatalf(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

// ---- dtypes, reductions and the checks on arguments (comm_mpi_types.c) ----

MPI_Datatype zt_mpi_type(zt_dtype dt);
MPI_Op zt_mpi_op(zt_reduce_op op, zt_dtype dt);
// bf16's user ops: created once MPI is initialized, freed before it is finalized.
void zt_mpi_bf16_ops_create(void);
void zt_mpi_bf16_ops_free(void);
// Fatal unless stream is NULL: this backend works on host memory.
void zt_mpi_check_stream(void *stream);
// `block` as one MPI call's count: fatal past INT_MAX (TODO: split).
int zt_mpi_block_count(const char *what, size_t block);
// Fatal unless a receive got `want` elements (a longer message fails inside MPI).
void zt_mpi_check_received(const MPI_Status *st, zt_dtype dt, int want, int peer);

// ---- settings (comm_mpi_settings.c) ----

// The settings in force (zt_comm_mpi_settings_use's), else the environment's without a
// message: a bad value takes its default (or no timeout); the options refuse it by name.
void zt_mpi_settings_read(zt_comm_mpi_settings *out);
// Collective over comm: fatal unless every rank has the same staging, max-count and timeout
// settings (`timeout_auto`/`timeout_s`: the ones in force, zt_mpi_timeout_*).
void zt_mpi_settings_agree(MPI_Comm comm, const zt_comm_mpi_settings *s);

// ---- the collective timeout (comm_mpi_timeout.c) ----

// In force from zt_comm_mpi_init_world on (zt_mpi_timeout_start): ZT_COMM_TIMEOUT_S's
// seconds (> 0: polling; 0: off or the default) and whether the default watchdog is on.
extern double zt_mpi_timeout_s;
extern int zt_mpi_timeout_auto;

// Takes the timeout's settings, and starts the watchdog on a world of two or more ranks.
void zt_mpi_timeout_start(const zt_comm_mpi_settings *s, int world_size);
// The timeout's settings changed after the start (zt_comm_mpi_settings_use): the watchdog
// starts if they now ask for it, and stands down (never armed again) if they do not.
void zt_mpi_timeout_restart(const zt_comm_mpi_settings *s);
// Called before each collective MPI call with a timeout on: this rank's count of entered
// collectives, in its header of the staging window (the record of who arrived).
void zt_mpi_coll_enter(const zt_comm *c);
// Completes req[0..n) (statuses into st, or MPI_STATUSES_IGNORE) within ZT_COMM_TIMEOUT_S,
// sleeping between polls; past it, one line naming who did not arrive and MPI_Abort.
// peers[i] is the peer of req[i] for point-to-point, -1 for a collective.
void zt_mpi_wait_timed(const zt_comm *c, const char *what, int n, MPI_Request *req,
                       MPI_Status *st, const int *peers);
// The watchdog's record of the blocking call in progress (peer: -1 for a collective).
void zt_mpi_watch_begin(const zt_comm *c, const char *what, int peer);
void zt_mpi_watch_end(void);
// A staging window's header joins (leaves) the heartbeats the watchdog writes.
void zt_mpi_heartbeat_register(zt_mpi_comm *m);
void zt_mpi_heartbeat_unregister(zt_mpi_comm *m);

// One collective MPI call: `blocking(args)` when ZT_COMM_TIMEOUT_S is off (exactly the call
// made without the timeout, watched by the default watchdog), else `nonblocking(args, &req)`
// completed by zt_mpi_wait_timed.
#define ZT_COLL(c, what, blocking, nonblocking, ...)                                      \
    do {                                                                                  \
        if (zt_mpi_timeout_s > 0) {                                                       \
            MPI_Request zt_rq_;                                                           \
            static const int zt_coll_peer_ = -1;                                          \
            zt_mpi_coll_enter(c);                                                         \
            ZT_CHECK_MPI(nonblocking(__VA_ARGS__, &zt_rq_));                              \
            zt_mpi_wait_timed(c, what, 1, &zt_rq_, MPI_STATUSES_IGNORE, &zt_coll_peer_);  \
        } else {                                                                          \
            if (zt_mpi_timeout_auto) zt_mpi_coll_enter(c); /* the record the watchdog reads */ \
            zt_mpi_watch_begin(c, what, -1);                                              \
            ZT_CHECK_MPI(blocking(__VA_ARGS__));                                          \
            zt_mpi_watch_end();                                                           \
        }                                                                                 \
    } while (0)

// ---- the staging window (comm_mpi_stage.c) ----

// Collective over m->comm: the window when every rank of the communicator is on this node
// and `s` stages, else none (m->win = MPI_WIN_NULL).
void zt_mpi_stage_init(zt_mpi_comm *m, int size, const zt_comm_mpi_settings *s);
void zt_mpi_stage_free(zt_mpi_comm *m);
// Whether an operation on `bytes` (the whole buffer) goes through the window.
int zt_mpi_use_stage(const zt_comm *c, size_t bytes);
// Block q of `count` elements cut into n uneven blocks (the first count % n one longer):
// [zt_mpi_blk_lo, zt_mpi_blk_lo + zt_mpi_blk_len).
size_t zt_mpi_blk_lo(size_t count, int n, int q);
size_t zt_mpi_blk_len(size_t count, int n, int q);
// This rank's block of op over ranks of send, written to `out` (send + its block's offset,
// in place, or disjoint from send).
void zt_mpi_stage_reduce_scatter(const zt_comm *c, const void *send, void *out, size_t count,
                                 zt_dtype dt, zt_reduce_op op, const char *what);
// recv[block q] = rank q's block for every q; this rank's is read from `own` (recv + its
// block's offset, in place, or disjoint from recv).
void zt_mpi_stage_all_gather(const zt_comm *c, const void *own, void *recv, size_t count,
                             zt_dtype dt, const char *what);

// ---- the communicator (comm_mpi.c) ----

// Makes `out` a communicator of this backend over `comm`, which it then owns (freed by
// zt_comm_free). Collective over comm.
void zt_mpi_wrap(MPI_Comm comm, zt_comm *out);

// ---- nonblocking operations (comm_mpi_req.c): the ops table's slots ----

void zt_mpi_iall_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                        zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *r);
void zt_mpi_ireduce(const zt_comm *c, const void *send, void *recv, size_t count, zt_dtype dt,
                    zt_reduce_op op, int root, void *stream, zt_comm_req *r);
void zt_mpi_ireduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *r);
void zt_mpi_iall_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                        zt_dtype dt, void *stream, zt_comm_req *r);
void zt_mpi_ibroadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                       void *stream, zt_comm_req *r);
void zt_mpi_isend(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                  int tag, void *stream, zt_comm_req *r);
void zt_mpi_irecv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                  void *stream, zt_comm_req *r);
int zt_mpi_test(const zt_comm *c, zt_comm_req *r);
void zt_mpi_wait(const zt_comm *c, zt_comm_req *r);

#endif
