// The MPI backend's own interface: the job's MPI lifetime (init, finalize, the abort that ends
// every rank), its settings (the ZT_COMM_* environment variables), the collective timeout's
// arming, and what a communicator costs, for the memory planner. Its operations are comm.h's.
// docs/design.md, "Backends".
#ifndef ZT_COMM_MPI_H
#define ZT_COMM_MPI_H

#include <stddef.h>

#include "comm.h"

// ---- settings ----
//
// The program's options --comm-algo, --comm-stage-kib, --comm-max-count, --comm-timeout and
// --comm-timeout-floor give the same settings, these variables their defaults.
// Every rank must see the same values (checked when a communicator is made: a rank that
// differed would wait in a window creation the others skip, or in a blocking collective that
// never matches the others' nonblocking one; mpirun -x passes them on).
//   ZT_COMM_MPI_ALGO=stage        the default: large reduce-scatters (and the reduce-scatter
//                                 half of a large all-reduce) on a communicator whose ranks
//                                 share one node go through a shared-memory staging window;
//                                 all-gather by MPI (comm_mpi_stage.c says why)
//                    stage-all    all-gather staged too (faster only on a quiet machine
//                                 whose buffers sit on 4 KiB pages)
//                    mpi          MPI's collectives everywhere, no window
//   ZT_COMM_MPI_STAGE_KIB=N       bytes of one staging slot, in KiB (default 256)
//   ZT_COMM_MPI_MAX_COUNT=N       the most elements one MPI call carries (default INT_MAX):
//                                 all_reduce, broadcast, send, recv and send_recv go in
//                                 pieces of at most N (lower it for an MPI library or network
//                                 that mishandles very large messages)
//   ZT_COMM_TIMEOUT_S=S           end the job when one operation waits more than S seconds
//                                 for another rank, polling nonblocking calls; 0: wait
//                                 forever; unset or "auto" (the default): a watchdog over
//                                 the blocking calls, its deadline measured
//                                 (comm_mpi_timeout.c)
//   ZT_COMM_TIMEOUT_FLOOR_S=F     the default timeout's floor (300 s)
// The timeout is read by zt_comm_mpi_init_world (one watchdog per process) and replaced by
// zt_comm_mpi_settings_use; the rest is taken whenever a communicator is made (its staging
// window, with or without the timeout's header, and its pieces are its own: the world
// communicator keeps the environment's).

typedef enum {
    ZT_COMM_MPI_ALGO_STAGE = 0, // "stage"
    ZT_COMM_MPI_ALGO_STAGE_ALL, // "stage-all"
    ZT_COMM_MPI_ALGO_MPI,       // "mpi"
} zt_comm_mpi_algo;

typedef struct {
    zt_comm_mpi_algo algo;  // ZT_COMM_MPI_ALGO
    int stage_kib;          // ZT_COMM_MPI_STAGE_KIB; 0 with algo mpi (no window)
    size_t max_count;       // ZT_COMM_MPI_MAX_COUNT, 1..INT_MAX
    int timeout_auto;       // ZT_COMM_TIMEOUT_S unset, empty or "auto": the watchdog
    double timeout_s;       // ZT_COMM_TIMEOUT_S=S > 0: polling; 0: off (or auto)
    double timeout_floor_s; // ZT_COMM_TIMEOUT_FLOOR_S: the watchdog's floor
} zt_comm_mpi_settings;

// The settings as texts, each under the name a message gives it: the variables above, or the
// program's options (--comm-algo, --comm-stage-kib, --comm-max-count, --comm-timeout,
// --comm-timeout-floor, whose defaults are these variables). NULL or empty: the default.
typedef enum {
    ZT_COMM_SET_ALGO,
    ZT_COMM_SET_STAGE_KIB,
    ZT_COMM_SET_MAX_COUNT,
    ZT_COMM_SET_TIMEOUT,
    ZT_COMM_SET_TIMEOUT_FLOOR,
    ZT_COMM_N_SETTINGS
} zt_comm_setting;
extern const char *const zt_comm_mpi_env_names[ZT_COMM_N_SETTINGS]; // "ZT_COMM_MPI_ALGO", ...
typedef struct {
    const char *name[ZT_COMM_N_SETTINGS];
    const char *value[ZT_COMM_N_SETTINGS];
} zt_comm_mpi_texts;
// The one parser of the settings: ZT_ERR with one message naming the first bad one (as
// t->name has it) and its allowed values; *out is complete either way, a bad staging
// setting giving the staging defaults, a bad max count its default, a bad timeout none.
zt_status zt_comm_mpi_settings_parse(const zt_comm_mpi_texts *t, zt_comm_mpi_settings *out);
// zt_comm_mpi_settings_parse of the environment's variables.
zt_status zt_comm_mpi_settings_from_env(zt_comm_mpi_settings *out);
// The settings from now on, in place of the environment's: every communicator made after
// takes them, and the timeout follows them (the watchdog starts or stands down). Every rank
// must give the same (checked when a communicator is made). Call between operations.
void zt_comm_mpi_settings_use(const zt_comm_mpi_settings *s);

// ---- lifetime ----

// Initializes MPI (MPI_Init_thread, FUNNELED: only the main thread calls MPI, OpenMP
// regions never do) unless it already is, sets MPI_ERRORS_RETURN on MPI_COMM_WORLD so
// every MPI failure reaches one check that prints file, line, rank and MPI's message and
// then calls MPI_Abort, sets the log rank (zt_set_log_rank) to the world rank, reads the
// timeout's settings from the environment (a bad value runs without one: the program's
// options, whose defaults they are, refuse it by name) and makes `out` a duplicate of MPI_COMM_WORLD (free it with
// zt_comm_free before finalizing). argc/argv may be NULL. Failure is fatal.
void zt_comm_mpi_init_world(zt_comm *out, int *argc, char ***argv);
// MPI_Finalize, if zt_comm_mpi_init_world initialized MPI and it is not yet finalized.
// Every rank must call it (it is collective); free all communicators first.
void zt_comm_mpi_finalize(void);
// Ends the whole job: MPI_Abort(MPI_COMM_WORLD, code) when MPI is initialized and not
// finalized (never returns then); otherwise returns at once, so the caller goes on with
// its own exit. The program's fatal path (zt_fatal) should call it before abort(), so a
// failed check on one rank ends every rank instead of leaving them in a collective.
// (Without it a rank still dies by SIGABRT and mpirun ends the job, with a less clear
// report.) Under FUNNELED, strictly only the main thread may call MPI; a fatal check inside
// an OpenMP region calling it is tolerated by Open MPI and is the lesser evil to a hang.
void zt_comm_mpi_abort(int code);

// ---- the collective timeout (comm_mpi_timeout.c) ----

// The default timeout (ZT_COMM_TIMEOUT_S unset): arms it, or raises its deadline, for what
// follows: no healthy call waits longer than about one step of another rank's work, so the
// deadline is the longer of ZT_COMM_TIMEOUT_FLOOR_S (300 s) and 10 x `longest_s`, the
// longest step seen so far (a step with its validation, sample and checkpoint; 0 before the
// first). Armed with the floor alone from zt_comm_mpi_init_world on, and through the end
// (the final checks and export); unwatch disarms it.
// No-ops with ZT_COMM_TIMEOUT_S set, on one rank, and before zt_comm_mpi_init_world.
void zt_comm_mpi_watch(double longest_s);
void zt_comm_mpi_unwatch(void);
// The seconds one operation may wait now, for other paths that time out alike (the NCCL
// watchdog): ZT_COMM_TIMEOUT_S when set, else the default timeout's armed deadline; 0 when
// none applies (off, disarmed, one rank). Any thread may ask.
double zt_comm_mpi_stall_limit_s(void);

// ---- the memory planner ----

// What one communicator of `size` ranks costs this backend with a staging slot of
// `stage_kib` KiB (0: no window), `node_local` when every member shares a machine:
typedef struct {
    size_t tables; // through zt_mem_alloc (category comm): its state, and the window's tables
    size_t window; // the staging window's slots: MPI's memory, outside the allocator's count
                   // (TODO: the header page a timeout adds is left out)
} zt_comm_mpi_footprint;
zt_comm_mpi_footprint zt_comm_mpi_footprint_of(int size, int stage_kib, int node_local);

#endif
