// The MPI backend's settings (comm_mpi.h lists them): their one parser, for the ZT_COMM_*
// environment variables and the program's options alike, the settings in force, and the
// check that every rank has the same.
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

const char *const zt_comm_mpi_env_names[ZT_COMM_N_SETTINGS] = {
    "ZT_COMM_MPI_ALGO", "ZT_COMM_MPI_STAGE_KIB", "ZT_COMM_MPI_MAX_COUNT", "ZT_COMM_TIMEOUT_S",
    "ZT_COMM_TIMEOUT_FLOOR_S"};

// Setting k's text; empty counts as not given (the default).
static const char *text(const zt_comm_mpi_texts *t, zt_comm_setting k) {
    const char *v = t->value[k];
    return v && *v ? v : NULL;
}

// The settings the program's options gave (zt_comm_mpi_settings_use), or none: then the
// environment's.
static zt_comm_mpi_settings g_used;
static int g_have_used;

// The algorithm and the staging slot into s->algo, s->stage_kib; on a bad one, the staging
// defaults and 0 with the complaint (naming the setting as t names it) in `why`.
static int read_staging(const zt_comm_mpi_texts *t, zt_comm_mpi_settings *s, char *why) {
    const char *algo = text(t, ZT_COMM_SET_ALGO), *kib = text(t, ZT_COMM_SET_STAGE_KIB);
    s->algo = ZT_COMM_MPI_ALGO_STAGE;
    s->stage_kib = ZT_STAGE_SLOT_KIB;
    if (algo && !strcmp(algo, "stage-all")) s->algo = ZT_COMM_MPI_ALGO_STAGE_ALL;
    else if (algo && !strcmp(algo, "mpi")) s->algo = ZT_COMM_MPI_ALGO_MPI;
    else if (algo && strcmp(algo, "stage")) {
        snprintf(why, WHY_CAP, "%s=%s: use stage (the default), stage-all or mpi",
                 t->name[ZT_COMM_SET_ALGO], algo);
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
    snprintf(why, WHY_CAP, "%s=%s: give a whole number of KiB in 4..65536",
             t->name[ZT_COMM_SET_STAGE_KIB], kib);
    return 0;
}

// The most elements per MPI call into s->max_count; on a bad one, INT_MAX and 0.
static int read_max_count(const zt_comm_mpi_texts *t, zt_comm_mpi_settings *s, char *why) {
    const char *mc = text(t, ZT_COMM_SET_MAX_COUNT);
    s->max_count = INT_MAX;
    if (!mc) return 1;
    char *end = NULL;
    long long v = strtoll(mc, &end, 10);
    if (!*end && v >= 1 && v <= INT_MAX) {
        s->max_count = (size_t)v;
        return 1;
    }
    snprintf(why, WHY_CAP, "%s=%s: give the most elements one MPI call may "
             "carry, a whole number in 1..%d (the default; larger operations go in pieces)",
             t->name[ZT_COMM_SET_MAX_COUNT], mc, INT_MAX);
    return 0;
}

// The timeout and its floor into s->timeout_*; on a bad one, no timeout and 0.
static int read_timeout(const zt_comm_mpi_texts *t, zt_comm_mpi_settings *s, char *why) {
    const char *v = t->value[ZT_COMM_SET_TIMEOUT], *f = text(t, ZT_COMM_SET_TIMEOUT_FLOOR);
    s->timeout_s = 0;
    s->timeout_auto = !v || !*v || !strcmp(v, "auto");
    s->timeout_floor_s = ZT_WATCH_FLOOR_S;
    char *end = NULL;
    if (f) {
        double x = strtod(f, &end);
        if (!(!*end && x > 0 && x <= ZT_COMM_TIMEOUT_MAX_S)) { // also refuses nan
            snprintf(why, WHY_CAP, "%s=%s: give the default timeout's "
                     "floor in seconds, a number in (0, %.0f] (default %.0f)",
                     t->name[ZT_COMM_SET_TIMEOUT_FLOOR], f, ZT_COMM_TIMEOUT_MAX_S,
                     ZT_WATCH_FLOOR_S);
            s->timeout_auto = 0;
            return 0;
        }
        s->timeout_floor_s = x;
    }
    if (s->timeout_auto) return 1;
    double x = strtod(v, &end);
    if (!*end && x >= 0 && x <= ZT_COMM_TIMEOUT_MAX_S) {
        s->timeout_s = x;
        return 1;
    }
    snprintf(why, WHY_CAP, "%s=%s: give the seconds one operation may wait for "
             "another rank, a number in 0..%.0f (0 waits forever), or auto (the default: "
             "measured from the steps)", t->name[ZT_COMM_SET_TIMEOUT], v,
             ZT_COMM_TIMEOUT_MAX_S);
    return 0;
}

// Every section, so *out is complete; `why` keeps the first complaint. 1 when all were good.
static int read_all(const zt_comm_mpi_texts *t, zt_comm_mpi_settings *out, char *why) {
    char w[3][WHY_CAP];
    int ok[3] = {read_staging(t, out, w[0]), read_max_count(t, out, w[1]),
                 read_timeout(t, out, w[2])};
    for (int i = 0; i < 3; i++)
        if (!ok[i]) {
            memcpy(why, w[i], WHY_CAP);
            return 0;
        }
    return 1;
}

// The environment's texts, under the variables' names.
static zt_comm_mpi_texts env_texts(void) {
    zt_comm_mpi_texts t;
    for (int k = 0; k < ZT_COMM_N_SETTINGS; k++) {
        t.name[k] = zt_comm_mpi_env_names[k];
        t.value[k] = getenv(zt_comm_mpi_env_names[k]);
    }
    return t;
}

zt_status zt_comm_mpi_settings_parse(const zt_comm_mpi_texts *t, zt_comm_mpi_settings *out) {
    char why[WHY_CAP];
    return read_all(t, out, why) ? ZT_OK : zt_errorf("%s", why);
}

zt_status zt_comm_mpi_settings_from_env(zt_comm_mpi_settings *out) {
    zt_comm_mpi_texts t = env_texts();
    return zt_comm_mpi_settings_parse(&t, out);
}

void zt_mpi_settings_read(zt_comm_mpi_settings *out) {
    if (g_have_used) {
        *out = g_used;
        return;
    }
    char why[WHY_CAP];
    zt_comm_mpi_texts t = env_texts();
    read_all(&t, out, why);
}

void zt_comm_mpi_settings_use(const zt_comm_mpi_settings *s) {
    g_used = *s;
    g_have_used = 1;
    zt_mpi_timeout_restart(s);
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
