// The MPI backend's settings: the ZT_COMM_* environment variables (comm_mpi.h lists them),
// read in this one place, and the check that every rank has the same.
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi_impl.h"

// KiB of one staging slot (comm_mpi_stage.c), unless ZT_COMM_MPI_STAGE_KIB says otherwise:
// the chunks stay in the caches and each costs one barrier; bench/RESULTS.md has the sweep.
#define ZT_STAGE_SLOT_KIB 256
// Largest ZT_COMM_TIMEOUT_S (about 11.6 days: "forever" for any run).
#define ZT_COMM_TIMEOUT_MAX_S 1e6
// The default timeout's floor (comm_mpi_timeout.c).
#define ZT_WATCH_FLOOR_S 300.0

// The longest message one section's complaint takes.
#define WHY_CAP 320

// A variable's value; set but empty counts as unset (the default).
static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

// ZT_COMM_MPI_ALGO and ZT_COMM_MPI_STAGE_KIB into s->algo, s->stage_kib; on a bad one, the
// staging defaults and 0 with the complaint in `why`.
static int read_staging(zt_comm_mpi_settings *s, char *why) {
    const char *algo = env("ZT_COMM_MPI_ALGO"), *kib = env("ZT_COMM_MPI_STAGE_KIB");
    s->algo = ZT_COMM_MPI_ALGO_STAGE;
    s->stage_kib = ZT_STAGE_SLOT_KIB;
    if (algo && !strcmp(algo, "stage-all")) s->algo = ZT_COMM_MPI_ALGO_STAGE_ALL;
    else if (algo && !strcmp(algo, "mpi")) s->algo = ZT_COMM_MPI_ALGO_MPI;
    else if (algo && strcmp(algo, "stage")) {
        snprintf(why, WHY_CAP, "ZT_COMM_MPI_ALGO=%s: use stage (the default), stage-all or mpi",
                 algo);
        return 0;
    }
    if (s->algo == ZT_COMM_MPI_ALGO_MPI) { // no window: its slot size is not read
        s->stage_kib = 0;
        return 1;
    }
    if (!kib) return 1;
    char *end = NULL;
    long v = strtol(kib, &end, 10);
    if (!*end && v >= 4 && v <= 65536) {
        s->stage_kib = (int)v;
        return 1;
    }
    s->algo = ZT_COMM_MPI_ALGO_STAGE;
    snprintf(why, WHY_CAP, "ZT_COMM_MPI_STAGE_KIB=%s: give a whole number of KiB in 4..65536",
             kib);
    return 0;
}

// ZT_COMM_MPI_MAX_COUNT into s->max_count; on a bad one, INT_MAX and 0.
static int read_max_count(zt_comm_mpi_settings *s, char *why) {
    const char *mc = env("ZT_COMM_MPI_MAX_COUNT");
    s->max_count = INT_MAX;
    if (!mc) return 1;
    char *end = NULL;
    long long v = strtoll(mc, &end, 10);
    if (!*end && v >= 1 && v <= INT_MAX) {
        s->max_count = (size_t)v;
        return 1;
    }
    snprintf(why, WHY_CAP, "ZT_COMM_MPI_MAX_COUNT=%s: give the most elements one MPI call may "
             "carry, a whole number in 1..%d (the default; larger operations go in pieces)",
             mc, INT_MAX);
    return 0;
}

// ZT_COMM_TIMEOUT_FLOOR_S and ZT_COMM_TIMEOUT_S into s->timeout_*; on a bad one, no timeout
// and 0.
static int read_timeout(zt_comm_mpi_settings *s, char *why) {
    const char *v = getenv("ZT_COMM_TIMEOUT_S"), *f = env("ZT_COMM_TIMEOUT_FLOOR_S");
    s->timeout_s = 0;
    s->timeout_auto = !v || !*v || !strcmp(v, "auto");
    s->timeout_floor_s = ZT_WATCH_FLOOR_S;
    char *end = NULL;
    if (f) {
        double t = strtod(f, &end);
        if (!(!*end && t > 0 && t <= ZT_COMM_TIMEOUT_MAX_S)) { // also refuses nan
            snprintf(why, WHY_CAP, "ZT_COMM_TIMEOUT_FLOOR_S=%s: give the default timeout's "
                     "floor in seconds, a number in (0, %.0f] (default %.0f)", f,
                     ZT_COMM_TIMEOUT_MAX_S, ZT_WATCH_FLOOR_S);
            s->timeout_auto = 0;
            return 0;
        }
        s->timeout_floor_s = t;
    }
    if (s->timeout_auto) return 1;
    double t = strtod(v, &end);
    if (!*end && t >= 0 && t <= ZT_COMM_TIMEOUT_MAX_S) {
        s->timeout_s = t;
        return 1;
    }
    snprintf(why, WHY_CAP, "ZT_COMM_TIMEOUT_S=%s: give the seconds one operation may wait for "
             "another rank, a number in 0..%.0f (0 waits forever), or auto (the default: "
             "measured from the steps)", v, ZT_COMM_TIMEOUT_MAX_S);
    return 0;
}

// Every section, so *out is complete; `why` keeps the first complaint. 1 when all were good.
static int read_all(zt_comm_mpi_settings *out, char *why) {
    char w[3][WHY_CAP];
    int ok[3] = {read_staging(out, w[0]), read_max_count(out, w[1]), read_timeout(out, w[2])};
    for (int i = 0; i < 3; i++)
        if (!ok[i]) {
            memcpy(why, w[i], WHY_CAP);
            return 0;
        }
    return 1;
}

zt_status zt_comm_mpi_settings_from_env(zt_comm_mpi_settings *out) {
    char why[WHY_CAP];
    return read_all(out, why) ? ZT_OK : zt_errorf("%s", why);
}

void zt_mpi_settings_read(zt_comm_mpi_settings *out) {
    char why[WHY_CAP];
    read_all(out, why);
}

zt_status zt_comm_mpi_check_env(void) {
    zt_comm_mpi_settings s;
    return zt_comm_mpi_settings_from_env(&s);
}

int zt_comm_mpi_stage_kib(void) {
    zt_comm_mpi_settings s;
    zt_mpi_settings_read(&s);
    return s.stage_kib;
}

void zt_mpi_settings_agree(MPI_Comm comm, const zt_comm_mpi_settings *s) {
    // one MAX over each value and its negation: max(x) == -max(-x) = min(x) iff all agree
    double v = s->stage_kib * 2 + (s->algo == ZT_COMM_MPI_ALGO_STAGE_ALL);
    double t = zt_mpi_timeout_auto ? -1 : zt_mpi_timeout_s, n = (double)s->max_count;
    double mine[6] = {v, -v, t, -t, n, -n}, all[6];
    ZT_CHECK_MPI(MPI_Allreduce(mine, all, 6, MPI_DOUBLE, MPI_MAX, comm));
    ZT_MPI_ASSERTF(all[0] == -all[1] && all[2] == -all[3] && all[4] == -all[5],
                   "ZT_COMM_MPI_ALGO / ZT_COMM_MPI_STAGE_KIB / ZT_COMM_MPI_MAX_COUNT / "
                   "ZT_COMM_TIMEOUT_S differ between the ranks (pass them to every rank: "
                   "mpirun -x)");
}
