// The MPI communicator backend over host memory, and the job's MPI lifetime: init,
// finalize, and the abort that ends every rank when one fails.
//
// Every MPI call goes through ZT_CHECK_MPI: MPI_COMM_WORLD (and so every communicator made
// from it) returns errors instead of aborting inside the library, and the check turns a
// failure into one line "zerotrain: fatal (rank R) file:line: MPI_X(...) failed: <MPI's
// message>" followed by MPI_Abort, so the other ranks do not wait forever in a collective.
//
// A large reduce_scatter (and the reduce-scatter half of a large all_reduce) on a
// communicator whose ranks share one node goes through a small shared-memory staging
// window instead of MPI's own collective (see "node-local collectives" below;
// bench/RESULTS.md has the measurements). Read from the environment when a communicator is
// made (every rank must see the same values):
//   ZT_COMM_MPI_ALGO=stage        the default: staged reduce-scatter; all-gather by MPI
//                    stage-all    all-gather staged too (faster only on a quiet machine
//                                 whose buffers sit on 4 KiB pages)
//                    mpi          MPI's collectives everywhere, no window
//   ZT_COMM_MPI_STAGE_KIB=N       bytes of one staging slot, in KiB (default 256)
//   ZT_COMM_TIMEOUT_S=S           end the job when one operation waits more than S seconds
//                                 for another rank, polling nonblocking calls; 0: wait
//                                 forever; unset or "auto" (the default): a watchdog over
//                                 the blocking calls, its deadline measured (see "the
//                                 collective timeout" and "the default timeout" below)
//   ZT_COMM_TIMEOUT_FLOOR_S=F     the default timeout's floor (300 s)
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "bf16_math.h"
#include "comm.h"
#include "memory.h"

// KiB of one staging slot (see "node-local collectives"), unless ZT_COMM_MPI_STAGE_KIB
// says otherwise: the chunks stay in the caches and each costs one barrier;
// bench/RESULTS.md has the sweep.
#define ZT_STAGE_SLOT_KIB 256
// Collectives of fewer bytes (the whole buffer) use MPI's own: at 16-32 KiB the two take
// the same time, from 64 KiB the staging path is faster (bench/RESULTS.md).
#define ZT_STAGE_MIN_BYTES ((size_t)64 << 10)
// Bytes at the front of each rank's part of the staging window, before its slots, when the
// collective timeout is on: its count of collectives entered (the record of who arrived).
// A whole page, so each part stays a multiple of the page size (MPI rounds a part up to it).
#define ZT_STAGE_HDR_BYTES 4096
// Largest ZT_COMM_TIMEOUT_S (about 11.6 days: "forever" for any run).
#define ZT_COMM_TIMEOUT_MAX_S 1e6
// The default timeout: the longer of a floor and this many times the longest step seen.
#define ZT_WATCH_FLOOR_S 300.0
#define ZT_WATCH_STEPS 10

typedef struct {
    MPI_Comm comm;
    // The node-local staging window, or MPI_WIN_NULL (size 1, ranks on several nodes, or
    // ZT_COMM_MPI_ALGO=mpi). Each rank's part: 2 halves x size slots x slot_bytes.
    MPI_Win win;
    char **part;          // (size) every rank's part of the window, mapped in this process
    int *ag_counts;       // (2 * size) all_reduce's MPI_Allgatherv counts, then displacements
    int stage_ag;         // all_gather staged too (ZT_COMM_MPI_ALGO=stage-all)
    size_t slot_bytes;
    size_t hdr_bytes;     // ZT_STAGE_HDR_BYTES with the timeout on, else 0 (no header)
    unsigned long chunks; // chunks staged so far; its parity picks the half (same on all ranks)
    uint64_t entered;     // collectives this rank entered on comm, with the timeout on
    // The world ranks of the members, first + q * stride (grid groups are such progressions;
    // stride 0: not one): the watchdog names them without calling MPI from its thread.
    int world_first, world_stride;
    int rank;             // this rank in comm
} zt_mpi_comm;

static int g_init_here;                 // MPI was initialized by zt_comm_mpi_init_world
static size_t g_max_count = INT_MAX;    // elements per MPI call (zt_comm_mpi_set_max_count)
static double g_timeout_s;              // ZT_COMM_TIMEOUT_S at zt_comm_mpi_init_world; 0 = off
static int g_timeout_auto;              // ZT_COMM_TIMEOUT_S unset or "auto": the watchdog
static double g_watch_floor_s = ZT_WATCH_FLOOR_S; // ZT_COMM_TIMEOUT_FLOOR_S

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

// A broken MPI call is a bug-tier failure (docs/design.md, coding rules: two tiers of errors).
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

size_t zt_comm_mpi_state_bytes(void) { return sizeof(zt_mpi_comm); }

void zt_comm_mpi_set_max_count(size_t count) {
    g_max_count = count == 0 || count > INT_MAX ? (size_t)INT_MAX : count;
}

// ---- helpers ----

static MPI_Comm mpi_comm(const zt_comm *c) { return ((const zt_mpi_comm *)c->impl)->comm; }

// bf16 moves as 2-byte elements (MPI has no bf16 type) and reduces through user ops (below).
static MPI_Datatype mpi_type(zt_dtype dt) {
    switch (dt) {
    case ZT_F32: return MPI_FLOAT;
    case ZT_F64: return MPI_DOUBLE;
    case ZT_I32: return MPI_INT32_T;
    case ZT_I64: return MPI_INT64_T;
    case ZT_U8: return MPI_UINT8_T;
    case ZT_BF16: return MPI_UINT16_T;
    default: break;
    }
    mpi_fatalf(__FILE__, __LINE__, "bad dtype %d", (int)dt);
}

// ---- bf16 reductions ----
// Each pairwise step widens both operands (exact), adds in fp32 and rounds the sum once to
// bf16 (nearest even, bf16_math.h), as NCCL's bf16 reduction does; MAX compares the widened
// values. Built-in ops would treat the bits as integers, so these are user ops (commutative,
// which they are; not associative, so the result depends on the order MPI combines the
// ranks in: fixed for a given communicator size and count, so repeated runs agree). The
// staging window's reduce (MPI_Reduce_local) uses them too, in its fixed rank order.
static MPI_Op g_bf16_sum = MPI_OP_NULL, g_bf16_max = MPI_OP_NULL;

static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    const zt_bf16 *a = in;
    zt_bf16 *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = zt_bf16_from_fp32(zt_bf16_to_fp32(a[i]) + zt_bf16_to_fp32(b[i]));
}
static void bf16_max(void *in, void *inout, int *len, MPI_Datatype *dt) {
    const zt_bf16 *a = in;
    zt_bf16 *b = inout;
    for (int i = 0; i < *len; i++)
        if (zt_bf16_to_fp32(a[i]) > zt_bf16_to_fp32(b[i])) b[i] = a[i];
}

// Once MPI is initialized; freed by zt_comm_mpi_finalize.
static void bf16_ops_create(void) {
    if (g_bf16_sum != MPI_OP_NULL) return;
    ZT_CHECK_MPI(MPI_Op_create(bf16_sum, 1, &g_bf16_sum));
    ZT_CHECK_MPI(MPI_Op_create(bf16_max, 1, &g_bf16_max));
}
static void bf16_ops_free(void) {
    if (g_bf16_sum == MPI_OP_NULL) return;
    ZT_CHECK_MPI(MPI_Op_free(&g_bf16_sum));
    ZT_CHECK_MPI(MPI_Op_free(&g_bf16_max));
}

static MPI_Op mpi_op(zt_reduce_op op, zt_dtype dt) {
    switch (op) {
    case ZT_REDUCE_SUM: return dt == ZT_BF16 ? g_bf16_sum : MPI_SUM;
    case ZT_REDUCE_MAX: return dt == ZT_BF16 ? g_bf16_max : MPI_MAX;
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

// ---- the collective timeout (ZT_COMM_TIMEOUT_S) ----
//
// Why: a blocking MPI call waits forever for a rank that stopped (SIGSTOP, a hung node),
// and Open MPI busy-polls while it waits, so every other rank spins a core until someone
// kills the job. With ZT_COMM_TIMEOUT_S=S every operation of this backend is issued
// nonblocking (MPI_Iallreduce, MPI_Ibarrier, MPI_Isend, ...) and completed by wait_timed:
// MPI_Testall polled with a sleep that grows to 1 ms, so a waiting rank sleeps instead of
// spinning, and once it has waited S seconds the rank prints one line naming the rank it
// waited for and ends the job (MPI_Abort).
//
// Off by default, and then the blocking calls run exactly as they always did: Open MPI's
// nonblocking collectives (coll/libnbc) are slower than its tuned blocking ones and advance
// only when polled, so a sleeping poll adds up to a millisecond per round. Every rank must
// agree (a nonblocking collective never matches a blocking one): stage_init checks it.
//
// Who did not arrive: point-to-point knows its peer. A collective knows only that it is
// not complete; on a communicator with a staging window (every rank on this node) each
// rank writes the count of collectives it has entered on that communicator into the header
// of its part of the window, and a waiting rank reads the others' counts there (plain loads:
// a stopped process's memory is still mapped) and names those behind its own. Otherwise
// the message lists the group and says one of them did not arrive.

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// This rank's count of entered collectives, in its header of the staging window.
static uint64_t *entered_slot(const zt_mpi_comm *m, int q) { return (uint64_t *)m->part[q]; }

// Called before each collective MPI call with the timeout on: the same calls on every rank,
// so the counts compare.
static void coll_enter(const zt_comm *c) {
    zt_mpi_comm *m = c->impl;
    m->entered++;
    if (m->win != MPI_WIN_NULL)
        __atomic_store_n(entered_slot(m, c->rank), m->entered, __ATOMIC_RELEASE);
}

// Appends " r" (the world rank of rank q of c) to buf.
static void append_world_rank(char *buf, size_t cap, const zt_comm *c, int q) {
    MPI_Group g = MPI_GROUP_NULL, w = MPI_GROUP_NULL;
    int wr = q;
    if (MPI_Comm_group(mpi_comm(c), &g) == MPI_SUCCESS &&
        MPI_Comm_group(MPI_COMM_WORLD, &w) == MPI_SUCCESS)
        MPI_Group_translate_ranks(g, 1, &q, w, &wr);
    if (g != MPI_GROUP_NULL) MPI_Group_free(&g);
    if (w != MPI_GROUP_NULL) MPI_Group_free(&w);
    size_t len = strlen(buf);
    if (len < cap) snprintf(buf + len, cap - len, "%s%d", len ? "," : "", wr);
}

// The deadline passed: one line naming who did not arrive, then the whole job ends.
// peers[i] is the peer of req[i] for point-to-point, -1 for a collective.
static void timeout_fail(const zt_comm *c, const char *what, int n, MPI_Request *req,
                         const int *peers, double waited) __attribute__((noreturn));
static void timeout_fail(const zt_comm *c, const char *what, int n, MPI_Request *req,
                         const int *peers, double waited) {
    const zt_mpi_comm *m = c->impl;
    char missing[256] = "", group[256] = "";
    int collective = 0;
    for (int i = 0; i < n; i++) {
        int done = 0;
        if (peers[i] < 0) collective = 1;
        else if (MPI_Test(&req[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
            append_world_rank(missing, sizeof missing, c, peers[i]);
    }
    for (int i = 0; i < n && !collective && !missing[0]; i++) // completed meanwhile: name all
        append_world_rank(missing, sizeof missing, c, peers[i]);
    if (collective) {
        for (int q = 0; q < c->size; q++) {
            append_world_rank(group, sizeof group, c, q);
            // of two ranks the other one is the missing one, window or not
            if (q != c->rank && (c->size == 2 || (m->win != MPI_WIN_NULL &&
                __atomic_load_n(entered_slot(m, q), __ATOMIC_ACQUIRE) < m->entered)))
                append_world_rank(missing, sizeof missing, c, q);
        }
    }
    fflush(stdout);
    if (missing[0])
        fprintf(stderr, "zerotrain: error: (rank %d) waited %.1f s in %s%s%s: rank %s did not "
                "arrive (stopped or hung); ending the job (ZT_COMM_TIMEOUT_S=%g)\n",
                zt_log_rank(), waited, what, collective ? " on the communicator of ranks " : "",
                group, missing, g_timeout_s);
    else
        fprintf(stderr, "zerotrain: error: (rank %d) waited %.1f s in %s%s%s: a rank of that "
                "group did not arrive (stopped or hung); ending the job (ZT_COMM_TIMEOUT_S=%g)\n",
                zt_log_rank(), waited, what, collective ? " on the communicator of ranks " : "",
                group, g_timeout_s);
    fflush(stderr);
    zt_comm_mpi_abort(1);
    abort();
}

// Completes req[0..n) (statuses into st, or MPI_STATUSES_IGNORE) within the timeout,
// sleeping between polls; past it, timeout_fail. Ranks in step finish a collective within
// microseconds, so the first 50 us poll without sleeping (no lost latency per chunk of the
// staged collectives); then the sleep doubles from 1 us to 1 ms.
static void wait_timed(const zt_comm *c, const char *what, int n, MPI_Request *req,
                       MPI_Status *st, const int *peers) {
    double t0 = mono_s(), t = t0;
    long sleep_ns = 0;
    for (;;) {
        int done = 0;
        ZT_CHECK_MPI(MPI_Testall(n, req, &done, st));
        if (done) return;
        t = mono_s();
        if (t - t0 >= g_timeout_s) timeout_fail(c, what, n, req, peers, t - t0);
        if (t - t0 < 50e-6) continue;
        sleep_ns = sleep_ns == 0 ? 1000 : sleep_ns * 2 > 1000000 ? 1000000 : sleep_ns * 2;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
    }
}

// One collective MPI call: `blocking(args)` when the timeout is off (exactly the call made
// without the timeout), else `nonblocking(args, &req)` completed by wait_timed.
#define ZT_COLL(c, what, blocking, nonblocking, ...)                                  \
    do {                                                                              \
        if (g_timeout_s > 0) {                                                        \
            MPI_Request zt_rq_;                                                       \
            static const int zt_coll_peer_ = -1;                                      \
            coll_enter(c);                                                            \
            ZT_CHECK_MPI(nonblocking(__VA_ARGS__, &zt_rq_));                          \
            wait_timed(c, what, 1, &zt_rq_, MPI_STATUSES_IGNORE, &zt_coll_peer_);     \
        } else {                                                                      \
            if (g_timeout_auto) coll_enter(c); /* the record the watchdog reads */    \
            watch_begin(c, what, -1);                                                 \
            ZT_CHECK_MPI(blocking(__VA_ARGS__));                                      \
            watch_end();                                                              \
        }                                                                             \
    } while (0)

// The timeout from the environment: *out = S for a fixed one, 0 for off or the default;
// *dflt = 1 for the default (unset, empty or "auto"), with its floor in *floor_s. ZT_ERR on
// a bad value.
static zt_status parse_timeout(double *out, int *dflt, double *floor_s) {
    const char *v = getenv("ZT_COMM_TIMEOUT_S"), *f = getenv("ZT_COMM_TIMEOUT_FLOOR_S");
    *out = 0;
    *dflt = !v || !*v || !strcmp(v, "auto");
    *floor_s = ZT_WATCH_FLOOR_S;
    char *end = NULL;
    if (f && *f) {
        double t = strtod(f, &end);
        if (!(!*end && t > 0 && t <= ZT_COMM_TIMEOUT_MAX_S))
            return zt_errorf("ZT_COMM_TIMEOUT_FLOOR_S=%s: give the default timeout's floor in "
                             "seconds, a number in (0, %.0f] (default %.0f)", f,
                             ZT_COMM_TIMEOUT_MAX_S, ZT_WATCH_FLOOR_S);
        *floor_s = t;
    }
    if (*dflt) return ZT_OK;
    double t = strtod(v, &end);
    if (!(!*end && t >= 0 && t <= ZT_COMM_TIMEOUT_MAX_S)) // also refuses nan
        return zt_errorf("ZT_COMM_TIMEOUT_S=%s: give the seconds one operation may wait for "
                         "another rank, a number in 0..%.0f (0 waits forever), or auto (the "
                         "default: measured from the steps)", v, ZT_COMM_TIMEOUT_MAX_S);
    *out = t;
    return ZT_OK;
}

// ---- the default timeout: a watchdog over the blocking calls ----
//
// Why not the collective timeout above by default: its nonblocking collectives cost (Open
// MPI's libnbc, advanced only when polled; bench/RESULTS.md, "Collective timeout"). The
// watchdog costs two clock reads per operation: each blocking call records when it began
// (watch_begin) and that it ended; a thread looks twice a second and, once one call has
// waited past the deadline, prints the line naming who did not arrive (from the members'
// world ranks kept in each communicator: no MPI call from this thread, FUNNELED) and ends
// this process; mpirun then ends the job. The waiting ranks spin meanwhile (Open MPI's
// blocking wait), as without a timeout.
//
// The deadline: the longer of the floor (ZT_COMM_TIMEOUT_FLOOR_S, 300 s) and ZT_WATCH_STEPS x
// the longest step the trainer has seen (a step with its validation, sample and checkpoint:
// one call waits at most about one step of another rank's work). Armed by the trainer
// around its steps only (zt_comm_mpi_watch): the set-up, a resume's loading and the final
// export are one-sided work of unmeasured length.

static struct {
    int on;                       // the thread runs (the default timeout, world > 1)
    int64_t deadline_ns;          // 0: disarmed
    double longest_s;             // the longest step seen, for the message
    int64_t since_ns;             // when the current blocking call began; 0: none
    const zt_comm *comm;          // that call's communicator, name and peer (-1: collective)
    const char *what;
    int peer;
} g_watch;

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Heartbeats: the watchdog thread writes the time (CLOCK_MONOTONIC, one clock for the whole
// machine) every tick into word 1 of its header in every staging window (registered here
// by stage_init), so a waiting rank tells a stopped or frozen member (its heartbeat stale)
// from one merely busy or waiting too. The lock keeps a window from being freed under it.
#define ZT_WATCH_MAX_WINDOWS 64
static pthread_mutex_t g_hb_mu = PTHREAD_MUTEX_INITIALIZER;
static zt_mpi_comm *g_hb[ZT_WATCH_MAX_WINDOWS];
static int g_hb_n;

static int64_t *heartbeat_slot(const zt_mpi_comm *m, int q) { return (int64_t *)m->part[q] + 1; }

static void hb_beat_all(int64_t now) {
    pthread_mutex_lock(&g_hb_mu);
    for (int i = 0; i < g_hb_n; i++)
        __atomic_store_n(heartbeat_slot(g_hb[i], g_hb[i]->rank), now, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_hb_mu);
}

static void hb_register(zt_mpi_comm *m) {
    if (!g_watch.on || !m->hdr_bytes) return;
    __atomic_store_n(heartbeat_slot(m, m->rank), mono_ns(), __ATOMIC_RELEASE);
    pthread_mutex_lock(&g_hb_mu);
    if (g_hb_n < ZT_WATCH_MAX_WINDOWS) g_hb[g_hb_n++] = m;
    pthread_mutex_unlock(&g_hb_mu);
}

static void hb_unregister(zt_mpi_comm *m) {
    pthread_mutex_lock(&g_hb_mu);
    for (int i = 0; i < g_hb_n; i++)
        if (g_hb[i] == m) g_hb[i--] = g_hb[--g_hb_n];
    pthread_mutex_unlock(&g_hb_mu);
}

static void watch_begin(const zt_comm *c, const char *what, int peer) {
    if (!g_watch.on) return;
    g_watch.comm = c;
    g_watch.what = what;
    g_watch.peer = peer;
    __atomic_store_n(&g_watch.since_ns, mono_ns(), __ATOMIC_RELEASE);
}
static void watch_end(void) {
    if (g_watch.on) __atomic_store_n(&g_watch.since_ns, 0, __ATOMIC_RELEASE);
}

// Appends the world rank of member q of m (through its progression) to buf.
static void append_member(char *buf, size_t cap, const zt_mpi_comm *m, int q) {
    size_t len = strlen(buf);
    if (len < cap) snprintf(buf + len, cap - len, "%s%d", len ? "," : "",
                            m->world_first + q * m->world_stride);
}

// Whether member q of c has not arrived where this rank waits: the peer of a point-to-point
// call; in a collective the other of two, or, through the staging window's headers (plain
// loads: a stopped process's memory stays mapped), one whose count of collectives entered is
// behind this rank's or whose heartbeat is 2 s old (stopped inside the collective).
static int behind(const zt_comm *c, int q) {
    const zt_mpi_comm *m = c->impl;
    if (g_watch.peer >= 0) return q == g_watch.peer;
    if (q == c->rank) return 0;
    if (c->size == 2) return 1;
    if (m->win == MPI_WIN_NULL || !m->hdr_bytes) return 0;
    int64_t hb = __atomic_load_n(heartbeat_slot(m, q), __ATOMIC_ACQUIRE);
    return __atomic_load_n(entered_slot(m, q), __ATOMIC_ACQUIRE) < m->entered ||
           (hb > 0 && mono_ns() - hb > 2000000000);
}

// The deadline passed: the line, then this process ends (mpirun ends the others).
static void watch_fire(double waited) {
    const zt_comm *c = g_watch.comm;
    const zt_mpi_comm *m = c->impl;
    char group[256] = "", missing[128] = "", where[320];
    if (m->world_stride > 0)
        for (int q = 0; q < c->size; q++) {
            append_member(group, sizeof group, m, q);
            if (behind(c, q)) append_member(missing, sizeof missing, m, q);
        }
    if (g_watch.peer >= 0 || !group[0]) snprintf(where, sizeof where, "%s", g_watch.what);
    else snprintf(where, sizeof where, "%s on the communicator of ranks %s", g_watch.what, group);
    // one write(2), no stdio: the main thread may hold a stream's lock where it is stuck
    char line[1024];
    int n = snprintf(line, sizeof line, "zerotrain: error: (rank %d) waited %.0f s in %s: %s%s "
                     "did not arrive (stopped or hung); ending the job (the default timeout, "
                     "%.0f s: the longer of ZT_COMM_TIMEOUT_FLOOR_S=%g and %d x the longest "
                     "step so far, %.2f s; ZT_COMM_TIMEOUT_S=S sets one, 0 waits forever)\n",
                     zt_log_rank(), waited, where, missing[0] ? "rank " : "a rank of that group",
                     missing, (double)g_watch.deadline_ns * 1e-9, g_watch_floor_s,
                     ZT_WATCH_STEPS, g_watch.longest_s);
    ssize_t w = write(STDERR_FILENO, line, n > 0 && n < (int)sizeof line ? (size_t)n : sizeof line - 1);
    (void)w;
    _exit(1);
}

// Time this process did not run (stopped itself, or the machine suspended) is not waiting:
// a tick that took a second longer than asked adds its excess to `lost`, which the wait of
// the same call leaves out. (A stopped rank, continued by mpirun's teardown, said it had
// waited all along for a rank that was waiting for it.)
static void *watch_thread(void *arg) {
    (void)arg;
    const int64_t tick_ns = 500 * 1000 * 1000;
    const struct timespec tick = {0, tick_ns};
    int64_t last = mono_ns(), lost = 0, seen = 0;
    for (;;) {
        nanosleep(&tick, NULL);
        int64_t now = mono_ns(), dl = __atomic_load_n(&g_watch.deadline_ns, __ATOMIC_ACQUIRE);
        int64_t since = __atomic_load_n(&g_watch.since_ns, __ATOMIC_ACQUIRE);
        hb_beat_all(now);
        if (since != seen) seen = since, lost = 0;
        if (now - last > tick_ns + 1000000000) lost += now - last - tick_ns;
        last = now;
        if (dl > 0 && since > 0 && now - since - lost > dl)
            watch_fire((double)(now - since - lost) * 1e-9);
    }
    return NULL;
}

static void watch_start(int world_size) {
    if (!g_timeout_auto || world_size < 2 || g_watch.on) return;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    g_watch.on = pthread_create(&t, &a, watch_thread, NULL) == 0;
    pthread_attr_destroy(&a);
    if (!g_watch.on)
        fprintf(stderr, "zerotrain: warning: (rank %d) cannot start the collective timeout's "
                        "watchdog: a stopped rank would hang the job (ZT_COMM_TIMEOUT_S=S "
                        "times out by polling instead)\n", zt_log_rank());
}

void zt_comm_mpi_watch(double longest_s) {
    if (!g_watch.on) return;
    g_watch.longest_s = longest_s > g_watch.longest_s ? longest_s : g_watch.longest_s;
    double d = ZT_WATCH_STEPS * g_watch.longest_s;
    if (d < g_watch_floor_s) d = g_watch_floor_s;
    __atomic_store_n(&g_watch.deadline_ns, (int64_t)(d * 1e9), __ATOMIC_RELEASE);
}

void zt_comm_mpi_unwatch(void) { __atomic_store_n(&g_watch.deadline_ns, 0, __ATOMIC_RELEASE); }

double zt_comm_mpi_stall_limit_s(void) {
    if (g_timeout_s > 0) return g_timeout_s;
    if (!g_watch.on) return 0;
    return (double)__atomic_load_n(&g_watch.deadline_ns, __ATOMIC_ACQUIRE) * 1e-9;
}

// ---- node-local collectives through a shared-memory staging window ----
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

static size_t blk_lo(size_t count, int n, int q) {
    size_t b = count / (size_t)n, rem = count % (size_t)n;
    return b * (size_t)q + ((size_t)q < rem ? (size_t)q : rem);
}
static size_t blk_len(size_t count, int n, int q) {
    return count / (size_t)n + ((size_t)q < count % (size_t)n);
}
// Elements of block q's chunk at offset `off` (chunks of C elements; 0 past its end).
static size_t chunk_len(size_t count, int n, int q, size_t off, size_t C) {
    size_t len = blk_len(count, n, q);
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

static int use_stage(const zt_comm *c, size_t bytes) {
    const zt_mpi_comm *m = c->impl;
    return m->win != MPI_WIN_NULL && bytes >= ZT_STAGE_MIN_BYTES;
}

// Block rank of op over ranks of send's block rank, written to `out` (which is either
// send + lo(rank), in place, or disjoint from send).
static void stage_reduce_scatter(const zt_comm *c, const void *send, void *out, size_t count,
                                 zt_dtype dt, zt_reduce_op op, const char *what) {
    zt_mpi_comm *m = c->impl;
    int n = c->size, r = c->rank;
    size_t es = zt_dtype_size(dt), C = m->slot_bytes / es;
    size_t max_len = blk_len(count, n, 0), lo_r = blk_lo(count, n, r);
    const char *s = send;
    char *o = out;
    int in_place = o == s + lo_r * es;
    MPI_Datatype t = mpi_type(dt);
    MPI_Op mop = mpi_op(op, dt);
    for (size_t off = 0; off < max_len; off += C) {
        int half = (int)(m->chunks++ & 1);
        for (int k = 1; k < n; k++) {
            int q = (r + k) % n;
            size_t len = chunk_len(count, n, q, off, C);
            if (len)
                memcpy(stage_slot(m, n, r, half, q), s + (blk_lo(count, n, q) + off) * es,
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

// recv[lo(q) ..] = rank q's block for every q; this rank's block is read from `own`
// (either recv + lo(rank), in place, or disjoint from recv).
static void stage_all_gather(const zt_comm *c, const void *own, void *recv, size_t count,
                             zt_dtype dt, const char *what) {
    zt_mpi_comm *m = c->impl;
    int n = c->size, r = c->rank;
    size_t es = zt_dtype_size(dt), C = (size_t)n * m->slot_bytes / es;
    size_t max_len = blk_len(count, n, 0), lo_r = blk_lo(count, n, r);
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
            if (lq) memcpy(o + (blk_lo(count, n, q) + off) * es, stage_slot(m, n, q, half, 0),
                           lq * es);
        }
    }
}

// The staging slot in KiB from the environment (0 for ZT_COMM_MPI_ALGO=mpi), and whether
// all_gather is staged too; ZT_ERR naming the variable on a bad value.
static zt_status parse_env(int *kib_out, int *stage_ag) {
    const char *algo = getenv("ZT_COMM_MPI_ALGO"), *kib = getenv("ZT_COMM_MPI_STAGE_KIB");
    if (algo && !*algo) algo = NULL; // set but empty: the default
    if (kib && !*kib) kib = NULL;
    if (algo && strcmp(algo, "stage") && strcmp(algo, "stage-all") && strcmp(algo, "mpi"))
        return zt_errorf("ZT_COMM_MPI_ALGO=%s: use stage (the default), stage-all or mpi", algo);
    *stage_ag = algo && !strcmp(algo, "stage-all");
    *kib_out = ZT_STAGE_SLOT_KIB;
    if (algo && !strcmp(algo, "mpi")) *kib_out = 0;
    else if (kib) {
        char *end = NULL;
        long v = strtol(kib, &end, 10);
        if (!(*kib && !*end && v >= 4 && v <= 65536))
            return zt_errorf("ZT_COMM_MPI_STAGE_KIB=%s: give a whole number of KiB in 4..65536",
                             kib);
        *kib_out = (int)v;
    }
    return ZT_OK;
}

zt_status zt_comm_mpi_check_env(void) {
    int kib, ag, dflt;
    double t, f;
    zt_status s = parse_env(&kib, &ag);
    return s == ZT_OK ? parse_timeout(&t, &dflt, &f) : s;
}

// Read when a communicator is made. A bad value takes the defaults here (the world's
// duplicate is made before main can report anything) and main refuses it right after
// (zt_comm_mpi_check_env), once, as a user error rather than a fatal check on every rank.
static int stage_kib_from_env(int *stage_ag) {
    int kib = 0;
    if (parse_env(&kib, stage_ag) != ZT_OK) {
        *stage_ag = 0;
        kib = ZT_STAGE_SLOT_KIB;
    }
    return kib;
}

int zt_comm_mpi_stage_kib(void) {
    int stage_ag;
    return stage_kib_from_env(&stage_ag);
}

// Collective over m->comm (from mpi_wrap): the staging window when every rank of the
// communicator is on this node, else none.
static void stage_init(zt_mpi_comm *m, int size) {
    m->win = MPI_WIN_NULL;
    if (size < 2) return;
    // The ranks must agree, or some would wait in a window creation the others skip (or in
    // a blocking collective that never matches the others' nonblocking one).
    int stage_ag = 0, kib = stage_kib_from_env(&stage_ag);
    double v = kib * 2 + stage_ag, t = g_timeout_auto ? -1 : g_timeout_s;
    double mine[4] = {v, -v, t, -t}, all[4];
    ZT_CHECK_MPI(MPI_Allreduce(mine, all, 4, MPI_DOUBLE, MPI_MAX, m->comm));
    ZT_MPI_ASSERTF(all[0] == -all[1] && all[2] == -all[3],
                   "ZT_COMM_MPI_ALGO / ZT_COMM_MPI_STAGE_KIB / ZT_COMM_TIMEOUT_S differ between "
                   "the ranks (pass them to every rank: mpirun -x)");
    if (kib == 0) return;
    MPI_Comm node = MPI_COMM_NULL;
    ZT_CHECK_MPI(MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int node_size = 0;
    ZT_CHECK_MPI(MPI_Comm_size(node, &node_size));
    ZT_CHECK_MPI(MPI_Comm_free(&node));
    // If the communicator spans nodes, every rank sees a smaller node group: all agree.
    if (node_size != size) return;
    m->slot_bytes = (size_t)kib << 10;
    m->stage_ag = stage_ag;
    m->hdr_bytes = g_timeout_s > 0 || g_timeout_auto ? ZT_STAGE_HDR_BYTES : 0;
    size_t bytes = m->hdr_bytes + 2 * (size_t)size * m->slot_bytes;
    MPI_Info info;
    ZT_CHECK_MPI(MPI_Info_create(&info));
    // each rank's part may sit on its own NUMA node
    ZT_CHECK_MPI(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    char *base = NULL;
    int rc = MPI_Win_allocate_shared((MPI_Aint)bytes, 1, info, m->comm, &base, &m->win);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
        mpi_fatalf(__FILE__, __LINE__,
                   "MPI_Win_allocate_shared of the %zu-byte staging window failed: %s "
                   "(ZT_COMM_MPI_ALGO=mpi runs without it)", bytes, msg);
    }
    ZT_CHECK_MPI(MPI_Info_free(&info));
    ZT_CHECK_MPI(MPI_Win_set_errhandler(m->win, MPI_ERRORS_RETURN));
    // TODO: the window's bytes are MPI's allocation, outside the ZT_MEM_COMM count
    // (2 * size * 256 KiB per rank and communicator, and 4 KiB more with a timeout on:
    // the planner leaves those out); only this pointer table is counted.
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
    hb_register(m);
}

static void stage_free(zt_mpi_comm *m) {
    if (m->win == MPI_WIN_NULL) return;
    hb_unregister(m);
    ZT_CHECK_MPI(MPI_Win_unlock_all(m->win));
    ZT_CHECK_MPI(MPI_Win_free(&m->win));
    zt_mem_free(m->part);
    zt_mem_free(m->ag_counts);
    m->part = NULL;
    m->ag_counts = NULL;
}

// ---- the operations ----

static void mpi_all_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, zt_reduce_op op, void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    if (use_stage(c, count * es)) {
        // reduce-scatter into this rank's block of recv, then all-gather it in place
        zt_mpi_comm *m = c->impl;
        int n = c->size;
        char *mine = (char *)recv + blk_lo(count, n, c->rank) * es;
        stage_reduce_scatter(c, send, mine, count, dt, op, "all_reduce");
        if (m->stage_ag || count > INT_MAX) { // Allgatherv's displacements are ints
            stage_all_gather(c, mine, recv, count, dt, "all_reduce");
            return;
        }
        int *counts = m->ag_counts, *displs = m->ag_counts + n;
        for (int q = 0; q < n; q++) {
            counts[q] = (int)blk_len(count, n, q);
            displs[q] = (int)blk_lo(count, n, q);
        }
        ZT_COLL(c, "all_reduce", MPI_Allgatherv, MPI_Iallgatherv, MPI_IN_PLACE, 0,
                MPI_DATATYPE_NULL, recv, counts, displs, mpi_type(dt), mpi_comm(c));
        return;
    }
    int in_place = send == recv;
    for (size_t i = 0; i < n_pieces(count); i++) {
        size_t off = i * g_max_count * es;
        const void *s = in_place ? MPI_IN_PLACE : (const char *)send + off;
        ZT_COLL(c, "all_reduce", MPI_Allreduce, MPI_Iallreduce, s, (char *)recv + off,
                piece_len(count, i), mpi_type(dt), mpi_op(op, dt), mpi_comm(c));
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
    if (use_stage(c, count * es)) {
        stage_reduce_scatter(c, send, recv, count, dt, op, "reduce_scatter");
        return;
    }
    int n = block_count("reduce_scatter", block);
    char *own = (char *)send + (size_t)c->rank * block * es;
    if ((char *)recv == own) {
        // MPI_IN_PLACE reduces the whole buffer and leaves the result at its front; our
        // rule (comm.h) wants it at the rank's own block.
        char *base = (char *)send;
        ZT_COLL(c, "reduce_scatter", MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                MPI_IN_PLACE, base, n, mpi_type(dt), mpi_op(op, dt), mpi_comm(c));
        if (own != base && block) memmove(own, base, block * es);
    } else {
        ZT_COLL(c, "reduce_scatter", MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                send, recv, n, mpi_type(dt), mpi_op(op, dt), mpi_comm(c));
    }
}

static void mpi_all_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    if (use_stage(c, count * es) && ((const zt_mpi_comm *)c->impl)->stage_ag) {
        stage_all_gather(c, send, recv, count, dt, "all_gather");
        return;
    }
    int n = block_count("all_gather", block);
    if ((const char *)send == (const char *)recv + (size_t)c->rank * block * es) {
        // MPI_IN_PLACE takes this rank's block from recv at rank*block: our rule exactly.
        ZT_COLL(c, "all_gather", MPI_Allgather, MPI_Iallgather, MPI_IN_PLACE, 0,
                MPI_DATATYPE_NULL, recv, n, mpi_type(dt), mpi_comm(c));
    } else {
        ZT_COLL(c, "all_gather", MPI_Allgather, MPI_Iallgather, send, n, mpi_type(dt), recv, n,
                mpi_type(dt), mpi_comm(c));
    }
}

static void mpi_broadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                          void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    for (size_t i = 0; i < n_pieces(count); i++)
        ZT_COLL(c, "broadcast", MPI_Bcast, MPI_Ibcast, (char *)buf + i * g_max_count * es,
                piece_len(count, i), mpi_type(dt), root, mpi_comm(c));
}

static void mpi_send(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                     int tag, void *stream) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt);
    for (size_t i = 0; i < n_pieces(count); i++) {
        const char *p = (const char *)buf + i * g_max_count * es;
        if (g_timeout_s > 0) {
            MPI_Request rq;
            ZT_CHECK_MPI(MPI_Isend(p, piece_len(count, i), mpi_type(dt), peer, tag, mpi_comm(c),
                                   &rq));
            wait_timed(c, "send", 1, &rq, MPI_STATUSES_IGNORE, &peer);
        } else {
            watch_begin(c, "send", peer);
            ZT_CHECK_MPI(MPI_Send(p, piece_len(count, i), mpi_type(dt), peer, tag, mpi_comm(c)));
            watch_end();
        }
    }
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
        char *p = (char *)buf + i * g_max_count * es;
        if (g_timeout_s > 0) {
            MPI_Request rq;
            ZT_CHECK_MPI(MPI_Irecv(p, n, mpi_type(dt), peer, tag, mpi_comm(c), &rq));
            wait_timed(c, "recv", 1, &rq, &st, &peer);
        } else {
            watch_begin(c, "recv", peer);
            ZT_CHECK_MPI(MPI_Recv(p, n, mpi_type(dt), peer, tag, mpi_comm(c), &st));
            watch_end();
        }
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
        if (g_timeout_s > 0) wait_timed(c, "send_recv", 2, req, st, (const int[]){src, dst});
        else {
            // (the receive is what waits on the other rank: its source is named)
            watch_begin(c, "send_recv", src);
            ZT_CHECK_MPI(MPI_Waitall(2, req, st));
            watch_end();
        }
        if (i < nr) check_received(&st[0], dt, rn, src);
    }
}

static void mpi_barrier(const zt_comm *c, void *stream) {
    mpi_check_stream(stream);
    ZT_COLL(c, "barrier", MPI_Barrier, MPI_Ibarrier, mpi_comm(c));
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
    stage_free(m); // collective, like the communicator's creation
    if (m->comm != MPI_COMM_NULL) ZT_CHECK_MPI(MPI_Comm_free(&m->comm));
    zt_mem_free(m);
    c->impl = NULL;
}

// ---- nonblocking collectives ----
//
// MPI's own (Open MPI: libnbc), never the staging window: a staged chunk needs every rank at
// a barrier, which a rank busy computing is not. They progress only inside MPI calls, so the
// caller polls (zt_comm_test). Both timeout modes cover them: each counts as entered at issue
// (the staging window's record), and the wait is the blocking call that the watchdog
// watches, or with ZT_COMM_TIMEOUT_S a polled wait_timed. (A rank named as not arrived is one
// whose count of entered collectives is behind: with several buckets in flight a rank merely
// slower to issue the last ones can be named beside the stuck one.)
//
// The in-place reduce_scatter moves the rank's block from the front to its place (as the
// blocking one does) once the operation completes: the request remembers the move.
//
// isend/irecv are MPI_Isend/MPI_Irecv, one call each. Point-to-point is not a collective: it
// counts as nothing entered; its wait names the peer, as the blocking send and recv do, and
// a receive checks its count at completion.

typedef struct {
    MPI_Request rq;
    char *move_dst;      // in-place reduce_scatter: where the block goes at completion
    const char *move_src;
    size_t move_bytes;
    const char *what;    // the operation's name, for the timeout's message
    int peer;            // point-to-point: the other rank (named by a timeout); -1 collective
    int recv_n;          // irecv: the elements expected (checked at completion), else -1
    zt_dtype recv_dt;
} mpi_req;
_Static_assert(sizeof(mpi_req) <= sizeof(((zt_comm_req *)0)->impl),
               "zt_comm_req.impl (comm.h) must hold the MPI backend's request");

// peer: -1 for a collective (counted as entered), else the point-to-point peer.
static mpi_req *req_start_peer(const zt_comm *c, zt_comm_req *r, const char *what, int peer) {
    mpi_req *q = (mpi_req *)r->impl;
    memset(q, 0, sizeof *q);
    q->rq = MPI_REQUEST_NULL;
    q->what = what;
    q->peer = peer;
    q->recv_n = -1;
    if (peer < 0 && (g_timeout_s > 0 || g_timeout_auto)) coll_enter(c);
    return q;
}
static mpi_req *req_start(const zt_comm *c, zt_comm_req *r, const char *what) {
    return req_start_peer(c, r, what, -1);
}

static void req_done(mpi_req *q, const MPI_Status *st) {
    if (q->move_bytes && q->move_dst != q->move_src) memmove(q->move_dst, q->move_src, q->move_bytes);
    q->move_bytes = 0;
    if (q->recv_n >= 0) check_received(st, q->recv_dt, q->recv_n, q->peer);
}

static void mpi_iall_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *r) {
    mpi_check_stream(stream);
    int n = block_count("iall_reduce", count);
    mpi_req *q = req_start(c, r, "iall_reduce");
    ZT_CHECK_MPI(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, n, mpi_type(dt),
                                mpi_op(op, dt), mpi_comm(c), &q->rq));
}

static void mpi_ireduce(const zt_comm *c, const void *send, void *recv, size_t count,
                        zt_dtype dt, zt_reduce_op op, int root, void *stream, zt_comm_req *r) {
    mpi_check_stream(stream);
    int n = block_count("ireduce", count);
    mpi_req *q = req_start(c, r, "ireduce");
    // MPI_IN_PLACE is the root's to give; elsewhere recv is not significant
    const void *s = c->rank == root && send == recv ? MPI_IN_PLACE : send;
    ZT_CHECK_MPI(MPI_Ireduce(s, recv, n, mpi_type(dt), mpi_op(op, dt), root, mpi_comm(c),
                             &q->rq));
}

static void mpi_ireduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                                zt_dtype dt, zt_reduce_op op, void *stream, zt_comm_req *r) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    int n = block_count("ireduce_scatter", block);
    mpi_req *q = req_start(c, r, "ireduce_scatter");
    char *own = (char *)send + (size_t)c->rank * block * es;
    if ((char *)recv == own) { // in place: the result comes at the front (see mpi_reduce_scatter)
        q->move_dst = own;
        q->move_src = send;
        q->move_bytes = block * es;
        ZT_CHECK_MPI(MPI_Ireduce_scatter_block(MPI_IN_PLACE, (void *)send, n, mpi_type(dt),
                                               mpi_op(op, dt), mpi_comm(c), &q->rq));
    } else {
        ZT_CHECK_MPI(MPI_Ireduce_scatter_block(send, recv, n, mpi_type(dt), mpi_op(op, dt),
                                               mpi_comm(c), &q->rq));
    }
}

static void mpi_iall_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                            zt_dtype dt, void *stream, zt_comm_req *r) {
    mpi_check_stream(stream);
    size_t es = zt_dtype_size(dt), block = count / (size_t)c->size;
    int n = block_count("iall_gather", block);
    mpi_req *q = req_start(c, r, "iall_gather");
    if ((const char *)send == (const char *)recv + (size_t)c->rank * block * es)
        ZT_CHECK_MPI(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, mpi_type(dt),
                                    mpi_comm(c), &q->rq));
    else
        ZT_CHECK_MPI(MPI_Iallgather(send, n, mpi_type(dt), recv, n, mpi_type(dt), mpi_comm(c),
                                    &q->rq));
}

static void mpi_ibroadcast(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int root,
                           void *stream, zt_comm_req *r) {
    mpi_check_stream(stream);
    int n = block_count("ibroadcast", count);
    mpi_req *q = req_start(c, r, "ibroadcast");
    ZT_CHECK_MPI(MPI_Ibcast(buf, n, mpi_type(dt), root, mpi_comm(c), &q->rq));
}

// One MPI call each, so a message must fit one (the blocking forms split larger ones).
static void mpi_isend(const zt_comm *c, const void *buf, size_t count, zt_dtype dt, int peer,
                      int tag, void *stream, zt_comm_req *r) {
    mpi_check_stream(stream);
    int n = block_count("isend", count);
    mpi_req *q = req_start_peer(c, r, "send", peer);
    ZT_CHECK_MPI(MPI_Isend(buf, n, mpi_type(dt), peer, tag, mpi_comm(c), &q->rq));
}

static void mpi_irecv(const zt_comm *c, void *buf, size_t count, zt_dtype dt, int peer, int tag,
                      void *stream, zt_comm_req *r) {
    mpi_check_stream(stream);
    int n = block_count("irecv", count);
    mpi_req *q = req_start_peer(c, r, "recv", peer);
    q->recv_n = n;
    q->recv_dt = dt;
    ZT_CHECK_MPI(MPI_Irecv(buf, n, mpi_type(dt), peer, tag, mpi_comm(c), &q->rq));
}

static int mpi_test(const zt_comm *c, zt_comm_req *r) {
    mpi_req *q = (mpi_req *)r->impl;
    int done = 0;
    MPI_Status st;
    ZT_CHECK_MPI(MPI_Test(&q->rq, &done, &st));
    if (done) req_done(q, &st);
    return done;
}

static void mpi_wait(const zt_comm *c, zt_comm_req *r) {
    mpi_req *q = (mpi_req *)r->impl;
    MPI_Status st;
    if (g_timeout_s > 0) {
        wait_timed(c, q->what, 1, &q->rq, &st, &q->peer);
    } else {
        watch_begin(c, q->what, q->peer);
        ZT_CHECK_MPI(MPI_Wait(&q->rq, &st));
        watch_end();
    }
    req_done(q, &st);
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
    .iall_reduce = mpi_iall_reduce,
    .ireduce = mpi_ireduce,
    .ireduce_scatter = mpi_ireduce_scatter,
    .iall_gather = mpi_iall_gather,
    .ibroadcast = mpi_ibroadcast,
    .isend = mpi_isend,
    .irecv = mpi_irecv,
    .test = mpi_test,
    .wait = mpi_wait,
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
    m->rank = out->rank;
    world_progression(comm, out->size, m);
    stage_init(m, out->size);
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
    bf16_ops_create();
    // A bad value runs without the timeout here; main refuses it (zt_comm_mpi_check_env).
    if (parse_timeout(&g_timeout_s, &g_timeout_auto, &g_watch_floor_s) != ZT_OK)
        g_timeout_s = 0, g_timeout_auto = 0;
    int rank = 0, size = 1;
    ZT_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    ZT_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    zt_set_log_rank(rank);
    watch_start(size);
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
    bf16_ops_free();
    ZT_CHECK_MPI(MPI_Finalize());
}
