// The MPI backend's node-local collectives: reduce-scatter (and all-gather) through a small
// shared-memory staging window per communicator, and what that window costs.
//
// Why: on one node Open MPI 4.1's reduce-scatter allocates full-size temporaries on every
// call (fresh pages: a fault per 4 KiB) and reduces through them, and its single-copy
// transport (CMA, process_vm_readv) pins the user's pages 4 KiB at a time. On the 2-core
// dev machine a 64 MiB MPI_Reduce_scatter_block took 5-10x as long as the staged one below,
// whatever coll_tuned algorithm was forced, and more than MPI_Allreduce of the same buffer
// (bench/RESULTS.md, "Collective bandwidth" and "ZeRO-1 vs ZeRO-0 step time"). So every
// rank of a node-local communicator maps, from the communicator's creation, a small window
// (MPI_Win_allocate_shared) that the other ranks read with plain loads: no message, no
// pinning, no allocation in the step.
//
// The buffer is cut into chunks; chunk k uses half k%2 of every rank's part, then
//   reduce_scatter: rank r copies its contribution to each other rank q's block into its
//                   slot q; barrier; r adds slot r of every other rank into its own block.
//   all_gather:     rank r copies its block into its half (all `size` slots, one region);
//                   barrier; r copies every other rank's half into place.
// The all-gather is staged only with ZT_COMM_MPI_ALGO=stage-all: it costs two copies and a
// barrier per chunk against MPI's one copy per peer, and won only on a quiet machine with
// 4 KiB pages (about 20%); with huge pages or a loaded machine MPI_Allgather was faster.
// One barrier per chunk is enough with two halves: a rank passes barrier k+1 only after
// every rank has finished reading chunk k (each reads chunk k before writing chunk k+1),
// so half k%2 is free again for chunk k+2. The count of chunks persists across calls, so a
// call may follow another at once. Every rank computes the same chunks from the same
// count, so every rank makes the same barriers.
//
// Blocks may be uneven (all_reduce of any count): block q is [lo(q), lo(q) + len(q)) with
// the first count % size blocks one element longer. Sums run in the order own, r+1, r+2,
// ... (mod size): fixed, so repeated runs agree bit for bit.
#include <string.h>

#include "comm_mpi_impl.h"
#include "memory.h"

// Collectives of fewer bytes (the whole buffer) use MPI's own: at 16-32 KiB the two take
// the same time, from 64 KiB the staging path is faster (bench/RESULTS.md).
#define ZT_STAGE_MIN_BYTES ((size_t)64 << 10)
// Bytes at the front of each rank's part of the staging window, before its slots, when the
// collective timeout is on: its count of collectives entered and its heartbeat (the record
// of who arrived, comm_mpi_timeout.c). A whole page, so each part stays a multiple of the
// page size (MPI rounds a part up to it).
#define ZT_STAGE_HDR_BYTES 4096

size_t zt_mpi_blk_lo(size_t count, int n, int q) {
    size_t b = count / (size_t)n, rem = count % (size_t)n;
    return b * (size_t)q + ((size_t)q < rem ? (size_t)q : rem);
}
size_t zt_mpi_blk_len(size_t count, int n, int q) {
    return count / (size_t)n + ((size_t)q < count % (size_t)n);
}
// Elements of block q's chunk at offset `off` (chunks of C elements; 0 past its end).
static size_t chunk_len(size_t count, int n, int q, size_t off, size_t C) {
    size_t len = zt_mpi_blk_len(count, n, q);
    return off >= len ? 0 : len - off < C ? len - off : C;
}

static char *stage_slot(const zt_mpi_comm *m, int n, int owner, int half, int slot) {
    return m->part[owner] + m->hdr_bytes +
           ((size_t)half * (size_t)n + (size_t)slot) * m->slot_bytes;
}

// Everything this rank wrote to its part is visible to every rank, and everything the
// others wrote before their barrier is visible here (the unified model's sync pattern).
static void stage_sync(const zt_comm *c, const char *what) {
    const zt_mpi_comm *m = c->impl;
    ZT_CHECK_MPI(MPI_Win_sync(m->win));
    ZT_COLL(c, what, MPI_Barrier, MPI_Ibarrier, m->comm);
    ZT_CHECK_MPI(MPI_Win_sync(m->win));
}

int zt_mpi_use_stage(const zt_comm *c, size_t bytes) {
    const zt_mpi_comm *m = c->impl;
    return m->win != MPI_WIN_NULL && bytes >= ZT_STAGE_MIN_BYTES;
}

void zt_mpi_stage_reduce_scatter(const zt_comm *c, const void *send, void *out, size_t count,
                                 zt_dtype dt, zt_reduce_op op, const char *what) {
    zt_mpi_comm *m = c->impl;
    int n = c->size, r = c->rank;
    size_t es = zt_dtype_size(dt), C = m->slot_bytes / es;
    size_t max_len = zt_mpi_blk_len(count, n, 0), lo_r = zt_mpi_blk_lo(count, n, r);
    const char *s = send;
    char *o = out;
    int in_place = o == s + lo_r * es;
    MPI_Datatype t = zt_mpi_type(dt);
    MPI_Op mop = zt_mpi_op(op, dt);
    for (size_t off = 0; off < max_len; off += C) {
        int half = (int)(m->chunks++ & 1);
        for (int k = 1; k < n; k++) {
            int q = (r + k) % n;
            size_t len = chunk_len(count, n, q, off, C);
            if (len)
                memcpy(stage_slot(m, n, r, half, q), s + (zt_mpi_blk_lo(count, n, q) + off) * es,
                       len * es);
        }
        stage_sync(c, what);
        size_t len = chunk_len(count, n, r, off, C);
        if (!len) continue;
        char *dst = o + off * es;
        if (!in_place) memcpy(dst, s + (lo_r + off) * es, len * es);
        for (int k = 1; k < n; k++)
            ZT_CHECK_MPI(MPI_Reduce_local(stage_slot(m, n, (r + k) % n, half, r), dst, (int)len,
                                          t, mop));
    }
}

void zt_mpi_stage_all_gather(const zt_comm *c, const void *own, void *recv, size_t count,
                             zt_dtype dt, const char *what) {
    zt_mpi_comm *m = c->impl;
    int n = c->size, r = c->rank;
    size_t es = zt_dtype_size(dt), C = (size_t)n * m->slot_bytes / es;
    size_t max_len = zt_mpi_blk_len(count, n, 0), lo_r = zt_mpi_blk_lo(count, n, r);
    const char *src = own;
    char *o = recv;
    int in_place = src == o + lo_r * es;
    for (size_t off = 0; off < max_len; off += C) {
        int half = (int)(m->chunks++ & 1);
        size_t len = chunk_len(count, n, r, off, C);
        if (len) {
            memcpy(stage_slot(m, n, r, half, 0), src + off * es, len * es);
            if (!in_place) memcpy(o + (lo_r + off) * es, src + off * es, len * es);
        }
        stage_sync(c, what);
        for (int k = 1; k < n; k++) {
            int q = (r + k) % n;
            size_t lq = chunk_len(count, n, q, off, C);
            if (lq) memcpy(o + (zt_mpi_blk_lo(count, n, q) + off) * es,
                           stage_slot(m, n, q, half, 0), lq * es);
        }
    }
}

// The size of the node group of comm's ranks that share this rank's node (collective).
static int node_size_of(MPI_Comm comm) {
    MPI_Comm node = MPI_COMM_NULL;
    ZT_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int node_size = 0;
    ZT_CHECK_MPI(MPI_Comm_size(node, &node_size));
    ZT_CHECK_MPI(MPI_Comm_free(&node));
    return node_size;
}

// The window of `bytes` per rank over comm (each rank's part may sit on its own NUMA node),
// its base in *base; fatal with the way around it when MPI cannot make one.
static MPI_Win allocate_window(MPI_Comm comm, size_t bytes, char **base) {
    MPI_Info info;
    MPI_Win win = MPI_WIN_NULL;
    ZT_CHECK_MPI(MPI_Info_create(&info));
    ZT_CHECK_MPI(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    int rc = MPI_Win_allocate_shared((MPI_Aint)bytes, 1, info, comm, base, &win);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
        zt_mpi_fatalf(__FILE__, __LINE__,
                      "MPI_Win_allocate_shared of the %zu-byte staging window failed: %s "
                      "(ZT_COMM_MPI_ALGO=mpi runs without it)", bytes, msg);
    }
    ZT_CHECK_MPI(MPI_Info_free(&info));
    ZT_CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    return win;
}

void zt_mpi_stage_init(zt_mpi_comm *m, int size, const zt_comm_mpi_settings *s) {
    m->win = MPI_WIN_NULL;
    if (size < 2 || s->stage_kib == 0) return;
    // If the communicator spans nodes, every rank sees a smaller node group: all agree.
    if (node_size_of(m->comm) != size) return;
    m->slot_bytes = (size_t)s->stage_kib << 10;
    m->stage_ag = s->algo == ZT_COMM_MPI_ALGO_STAGE_ALL;
    m->hdr_bytes = zt_mpi_timeout_s > 0 || zt_mpi_timeout_auto ? ZT_STAGE_HDR_BYTES : 0;
    size_t bytes = m->hdr_bytes + 2 * (size_t)size * m->slot_bytes;
    char *base = NULL;
    m->win = allocate_window(m->comm, bytes, &base);
    // TODO: the window's bytes are MPI's allocation, outside the ZT_MEM_COMM count
    // (2 * size * 256 KiB per rank and communicator, and 4 KiB more with a timeout on:
    // the planner leaves those out); only these tables are counted (zt_comm_mpi_footprint_of).
    m->part = zt_mem_alloc(ZT_MEM_COMM, (size_t)size * sizeof(char *));
    m->ag_counts = zt_mem_alloc(ZT_MEM_COMM, 2 * (size_t)size * sizeof(int));
    for (int q = 0; q < size; q++) {
        MPI_Aint qbytes = 0;
        int disp = 0;
        ZT_CHECK_MPI(MPI_Win_shared_query(m->win, q, &qbytes, &disp, &m->part[q]));
        ZT_MPI_ASSERTF((size_t)qbytes == bytes, "staging window of rank %d: %ld bytes, not %zu",
                       q, (long)qbytes, bytes);
    }
    memset(base, 0, bytes); // touch the pages now, not in the first step
    // One passive epoch for the window's whole life; stage_sync orders the accesses.
    ZT_CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, m->win));
    zt_mpi_heartbeat_register(m);
}

void zt_mpi_stage_free(zt_mpi_comm *m) {
    if (m->win == MPI_WIN_NULL) return;
    zt_mpi_heartbeat_unregister(m);
    ZT_CHECK_MPI(MPI_Win_unlock_all(m->win));
    ZT_CHECK_MPI(MPI_Win_free(&m->win));
    zt_mem_free(m->part);
    zt_mem_free(m->ag_counts);
    m->part = NULL;
    m->ag_counts = NULL;
}

zt_comm_mpi_footprint zt_comm_mpi_footprint_of(int size, int stage_kib, int node_local) {
    zt_comm_mpi_footprint f = {sizeof(zt_mpi_comm), 0};
    if (size < 2 || stage_kib == 0 || !node_local) return f;
    f.tables += (size_t)size * (sizeof(char *) + 2 * sizeof(int)); // part, ag_counts
    f.window = 2 * (size_t)size * ((size_t)stage_kib << 10);
    return f;
}
