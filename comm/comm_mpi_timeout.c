// The MPI backend's collective timeout: a rank that stopped or hangs ends the job instead of
// leaving the others waiting forever. Two modes: polling (ZT_COMM_TIMEOUT_S=S) and the default
// watchdog over the blocking calls; both name the rank that did not arrive.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm_mpi_impl.h"

// The default timeout: the longer of a floor and this many times the longest step seen.
#define ZT_WATCH_STEPS 10

double zt_mpi_timeout_s; // --comm-timeout (ZT_COMM_TIMEOUT_S) in force; 0 = off
int zt_mpi_timeout_auto; // ZT_COMM_TIMEOUT_S unset or "auto": the watchdog
static double g_watch_floor_s; // ZT_COMM_TIMEOUT_FLOOR_S

// The header of each rank's part of a staging window (comm_mpi_stage.c), with a timeout on:
// word 0 its count of collectives entered on that communicator, word 1 its heartbeat.
static uint64_t *entered_slot(const zt_mpi_comm *m, int q) { return (uint64_t *)m->part[q]; }
static int64_t *heartbeat_slot(const zt_mpi_comm *m, int q) { return (int64_t *)m->part[q] + 1; }

// ---- the collective timeout (ZT_COMM_TIMEOUT_S): polling ----
//
// Why: a blocking MPI call waits forever for a rank that stopped (SIGSTOP, a hung node),
// and Open MPI busy-polls while it waits, so every other rank spins a core until someone
// kills the job. With ZT_COMM_TIMEOUT_S=S every operation of this backend is issued
// nonblocking (MPI_Iallreduce, MPI_Ibarrier, MPI_Isend, ...) and completed by
// zt_mpi_wait_timed: MPI_Testall polled with a sleep that grows to 1 ms, so a waiting rank
// sleeps instead of spinning, and once it has waited S seconds the rank prints one line
// naming the rank it waited for and ends the job (MPI_Abort).
//
// Off by default, and then the blocking calls run exactly as they always did: Open MPI's
// nonblocking collectives (coll/libnbc) are slower than its tuned blocking ones and advance
// only when polled, so a sleeping poll adds up to a millisecond per round. Every rank must
// agree (a nonblocking collective never matches a blocking one): zt_mpi_settings_agree
// checks it.
//
// Who did not arrive: point-to-point knows its peer. A collective knows only that it is
// not complete; on a communicator with a staging window (every rank on this node) each
// rank writes into the header of its part of the window the count of collectives it has
// entered on that communicator and a heartbeat (below), and a waiting rank reads the
// others' there (plain loads: a stopped process's memory is still mapped) and names those
// behind its own count or with a stale heartbeat (stopped inside the collective). Otherwise
// the message lists the group and says one of them did not arrive.

// Every waiting rank reaches the deadline at about the same time, and each printed its line
// (2-3 lines for one stopped rank): rank 0 speaks at the deadline, the others only after a
// grace that grows with their rank, by when the job has ended through the first (mpirun ends
// every rank once one exits with an error). One line then, from the lowest waiting rank.
static double speak_grace_s(void) {
    int r = zt_log_rank();
    return r == 0 ? 0.0 : 10.0 + 2.0 * (r < 30 ? r : 30);
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Whether member q of a communicator with a staging window has not arrived in the collective
// this rank waits in: its count of collectives entered is behind this rank's, or it entered
// and then stopped (its heartbeat, written twice a second by a live process, is 2 s old).
static int member_stalled(const zt_mpi_comm *m, int q) {
    if (m->win == MPI_WIN_NULL || !m->hdr_bytes) return 0;
    int64_t hb = __atomic_load_n(heartbeat_slot(m, q), __ATOMIC_ACQUIRE);
    return __atomic_load_n(entered_slot(m, q), __ATOMIC_ACQUIRE) < m->entered ||
           (hb > 0 && mono_ns() - hb > 2000000000);
}

void zt_mpi_coll_enter(const zt_comm *c) {
    zt_mpi_comm *m = c->impl;
    m->entered++;
    // the header is the communicator's own: its window was made with or without one
    if (m->hdr_bytes)
        __atomic_store_n(entered_slot(m, c->rank), m->entered, __ATOMIC_RELEASE);
}

// Appends " r" (the world rank of rank q of c) to buf.
static void append_world_rank(char *buf, size_t cap, const zt_comm *c, int q) {
    MPI_Group g = MPI_GROUP_NULL, w = MPI_GROUP_NULL;
    int wr = q;
    if (MPI_Comm_group(zt_mpi_handle(c), &g) == MPI_SUCCESS &&
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
            if (q != c->rank && (c->size == 2 || member_stalled(m, q)))
                append_world_rank(missing, sizeof missing, c, q);
        }
    }
    fflush(stdout);
    if (missing[0])
        fprintf(stderr, "zerotrain: error: (rank %d) waited %.1f s in %s%s%s: rank %s did not "
                "arrive (stopped or hung); ending the job (--comm-timeout %g)\n",
                zt_log_rank(), waited, what, collective ? " on the communicator of ranks " : "",
                group, missing, zt_mpi_timeout_s);
    else
        fprintf(stderr, "zerotrain: error: (rank %d) waited %.1f s in %s%s%s: a rank of that "
                "group did not arrive (stopped or hung); ending the job (--comm-timeout %g)\n",
                zt_log_rank(), waited, what, collective ? " on the communicator of ranks " : "",
                group, zt_mpi_timeout_s);
    fflush(stderr);
    zt_comm_mpi_abort(1);
    abort();
}

// Ranks in step finish a collective within microseconds, so the first 50 us poll without
// sleeping (no lost latency per chunk of the staged collectives); then the sleep doubles
// from 1 us to 1 ms.
void zt_mpi_wait_timed(const zt_comm *c, const char *what, int n, MPI_Request *req,
                       MPI_Status *st, const int *peers) {
    double t0 = mono_s(), t = t0;
    long sleep_ns = 0;
    for (;;) {
        int done = 0;
        ZT_CHECK_MPI(MPI_Testall(n, req, &done, st));
        if (done) return;
        t = mono_s();
        if (t - t0 >= zt_mpi_timeout_s + speak_grace_s())
            timeout_fail(c, what, n, req, peers, t - t0);
        if (t - t0 < 50e-6) continue;
        sleep_ns = sleep_ns == 0 ? 1000 : sleep_ns * 2 > 1000000 ? 1000000 : sleep_ns * 2;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
    }
}

// ---- the default timeout: a watchdog over the blocking calls ----
//
// Why not the polling above by default: its nonblocking collectives cost (Open MPI's
// libnbc, advanced only when polled; bench/RESULTS.md, "Collective timeout"). The
// watchdog costs two clock reads per operation: each blocking call records when it began
// (zt_mpi_watch_begin) and that it ended; a thread looks twice a second and, once one call
// has waited past the deadline, prints the line naming who did not arrive (from the members'
// world ranks kept in each communicator: no MPI call from this thread, FUNNELED) and ends
// this process; mpirun then ends the job. The waiting ranks spin meanwhile (Open MPI's
// blocking wait), as without a timeout.
//
// The deadline: the longer of the floor (ZT_COMM_TIMEOUT_FLOOR_S, 300 s) and ZT_WATCH_STEPS x
// the longest step the trainer has seen (a step with its validation, sample and checkpoint:
// one call waits at most about one step of another rank's work). Armed from the start (the
// floor alone until a step is measured), so the start-up's agreements, a resume's loading,
// the final checks and --save have it too: a rank stopped there held the job forever. The
// floor must cover the longest one-sided work (rank 0's export, a slow file system's load).

static struct {
    int on;                       // the thread runs (a timeout in force, world > 1)
    int64_t deadline_ns;          // 0: disarmed
    double longest_s;             // the longest step seen, for the message
    int64_t since_ns;             // when the current blocking call began; 0: none
    const zt_comm *comm;          // that call's communicator, name and peer (-1: collective)
    const char *what;
    int peer;
} g_watch;

// Heartbeats: the watchdog thread writes the time (CLOCK_MONOTONIC, one clock for the whole
// machine) every tick into word 1 of its header in every staging window (registered by the
// window's creation), so a waiting rank tells a stopped or frozen member (its heartbeat stale)
// from one merely busy or waiting too. The lock keeps a window from being freed under it.
#define ZT_WATCH_MAX_WINDOWS 64
static pthread_mutex_t g_hb_mu = PTHREAD_MUTEX_INITIALIZER;
static zt_mpi_comm *g_hb[ZT_WATCH_MAX_WINDOWS];
static int g_hb_n;

static void hb_beat_all(int64_t now) {
    pthread_mutex_lock(&g_hb_mu);
    for (int i = 0; i < g_hb_n; i++)
        __atomic_store_n(heartbeat_slot(g_hb[i], g_hb[i]->rank), now, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_hb_mu);
}

void zt_mpi_heartbeat_register(zt_mpi_comm *m) {
    if (!g_watch.on || !m->hdr_bytes) return;
    __atomic_store_n(heartbeat_slot(m, m->rank), mono_ns(), __ATOMIC_RELEASE);
    pthread_mutex_lock(&g_hb_mu);
    if (g_hb_n < ZT_WATCH_MAX_WINDOWS) g_hb[g_hb_n++] = m;
    pthread_mutex_unlock(&g_hb_mu);
}

void zt_mpi_heartbeat_unregister(zt_mpi_comm *m) {
    pthread_mutex_lock(&g_hb_mu);
    for (int i = 0; i < g_hb_n; i++)
        if (g_hb[i] == m) g_hb[i--] = g_hb[--g_hb_n];
    pthread_mutex_unlock(&g_hb_mu);
}

void zt_mpi_watch_begin(const zt_comm *c, const char *what, int peer) {
    if (!g_watch.on) return;
    g_watch.comm = c;
    g_watch.what = what;
    g_watch.peer = peer;
    __atomic_store_n(&g_watch.since_ns, mono_ns(), __ATOMIC_RELEASE);
}
void zt_mpi_watch_end(void) {
    if (g_watch.on) __atomic_store_n(&g_watch.since_ns, 0, __ATOMIC_RELEASE);
}

// Appends the world rank of member q of m (through its progression) to buf.
static void append_member(char *buf, size_t cap, const zt_mpi_comm *m, int q) {
    size_t len = strlen(buf);
    if (len < cap) snprintf(buf + len, cap - len, "%s%d", len ? "," : "",
                            m->world_first + q * m->world_stride);
}

// Whether member q of c has not arrived where this rank waits: the peer of a point-to-point
// call; in a collective the other of two, or one the staging window's headers show stalled.
static int behind(const zt_comm *c, int q) {
    if (g_watch.peer >= 0) return q == g_watch.peer;
    if (q == c->rank) return 0;
    return c->size == 2 || member_stalled(c->impl, q);
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
                     "%.0f s: the longer of --comm-timeout-floor %g and %d x the longest "
                     "step so far, %.2f s; --comm-timeout S sets one, 0 waits forever)\n",
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
        if (dl > 0 && since > 0 && now - since - lost > dl + (int64_t)(speak_grace_s() * 1e9))
            watch_fire((double)(now - since - lost) * 1e-9);
    }
    return NULL;
}

// The thread runs under either timeout: its heartbeats name a rank stopped inside a
// collective in the polling mode's message too; only the default timeout arms its deadline.
static void watch_start(int world_size) {
    if ((!zt_mpi_timeout_auto && zt_mpi_timeout_s <= 0) || world_size < 2 || g_watch.on) return;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    g_watch.on = pthread_create(&t, &a, watch_thread, NULL) == 0;
    pthread_attr_destroy(&a);
    if (!g_watch.on && zt_mpi_timeout_auto)
        fprintf(stderr, "zerotrain: warning: (rank %d) cannot start the collective timeout's "
                        "watchdog: a stopped rank would hang the job (ZT_COMM_TIMEOUT_S=S "
                        "times out by polling instead)\n", zt_log_rank());
}

static int g_world_size; // for a restart

void zt_mpi_timeout_start(const zt_comm_mpi_settings *s, int world_size) {
    zt_mpi_timeout_s = s->timeout_s;
    zt_mpi_timeout_auto = s->timeout_auto;
    g_watch_floor_s = s->timeout_floor_s;
    g_world_size = world_size;
    watch_start(world_size);
    zt_comm_mpi_watch(0); // armed from the first collective (the floor until a step is timed)
}

void zt_mpi_timeout_restart(const zt_comm_mpi_settings *s) {
    zt_comm_mpi_unwatch();
    zt_mpi_timeout_start(s, g_world_size);
}

void zt_comm_mpi_watch(double longest_s) {
    // a running watchdog is not a timeout in force: after a restart away from auto it stays,
    // never armed again
    if (!g_watch.on || !zt_mpi_timeout_auto) return;
    g_watch.longest_s = longest_s > g_watch.longest_s ? longest_s : g_watch.longest_s;
    double d = ZT_WATCH_STEPS * g_watch.longest_s;
    if (d < g_watch_floor_s) d = g_watch_floor_s;
    __atomic_store_n(&g_watch.deadline_ns, (int64_t)(d * 1e9), __ATOMIC_RELEASE);
}

void zt_comm_mpi_unwatch(void) { __atomic_store_n(&g_watch.deadline_ns, 0, __ATOMIC_RELEASE); }

double zt_comm_mpi_stall_limit_s(void) {
    if (zt_mpi_timeout_s > 0) return zt_mpi_timeout_s;
    if (!g_watch.on) return 0;
    return (double)__atomic_load_n(&g_watch.deadline_ns, __ATOMIC_ACQUIRE) * 1e-9;
}
