// The launcher's variables (launcher.h), read once: MPI_Init may add its own (a singleton
// sets OMPI_COMM_WORLD_RANK=0 in every process srun started without a PMI).
#include "launcher.h"

#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int rank, size, tasks, local_size; // local_size: -1 when no launcher says
    int local_rank;                    // -1 when no launcher says
    const char *size_var, *tasks_var, *local_rank_var;
} launch;

extern char **environ;

// The first of `vars` that is set and starts with a digit, or -1.
static int first_count(const char *const *vars, size_t n, const char **which) {
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);
        if (v && isdigit((unsigned char)v[0])) {
            if (which) *which = vars[i];
            return atoi(v);
        }
    }
    return -1;
}
#define FIRST(vars, which) first_count(vars, sizeof vars / sizeof vars[0], which)

static void read_env(launch *l) {
    static const char *const rank[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                       "SLURM_PROCID"};
    static const char *const size[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                       "SLURM_STEP_NUM_TASKS"};
    static const char *const tasks[] = {"SLURM_NTASKS", "SLURM_NPROCS", "PMI_SIZE",
                                        "OMPI_COMM_WORLD_SIZE"};
    // Slurm may write "4(x2)": atoi takes the first count
    static const char *const local[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                        "SLURM_NTASKS_PER_NODE"};
    l->rank = FIRST(rank, NULL);
    if (l->rank < 0) l->rank = 0;
    l->size = FIRST(size, &l->size_var);
    if (l->size < 1) l->size = 1, l->size_var = NULL;
    l->tasks = 1;
    l->tasks_var = NULL;
    for (size_t i = 0; i < sizeof tasks / sizeof tasks[0] && l->tasks == 1; i++) {
        const char *which = NULL;
        int n = first_count(tasks + i, 1, &which);
        if (n > 1) l->tasks = n, l->tasks_var = which;
    }
    l->local_size = FIRST(local, NULL);
    l->local_rank = zt_launcher_local_rank_in(environ, &l->local_rank_var);
}

// The value of `name` in env, or NULL.
static const char *env_get(char *const *env, const char *name) {
    size_t n = strlen(name);
    for (; env && *env; env++)
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=') return *env + n + 1;
    return NULL;
}

int zt_launcher_local_rank_in(char *const *env, const char **var) {
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                        "SLURM_LOCALID"};
    if (var) *var = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = env_get(env, names[i]);
        if (v && isdigit((unsigned char)v[0])) {
            if (var) *var = names[i];
            return atoi(v);
        }
    }
    return -1;
}

static const launch *get(void) {
    static launch l;
    static int have;
    if (!have) read_env(&l), have = 1;
    return &l;
}

void zt_launcher_capture(void) { (void)get(); }
int zt_launcher_rank(void) { return get()->rank; }

int zt_launcher_size(const char **var) {
    if (var) *var = get()->size_var;
    return get()->size;
}

int zt_launcher_tasks(const char **var) {
    *var = get()->tasks_var;
    return get()->tasks;
}

int zt_launcher_local_size(int world) {
    int n = get()->local_size;
    return n >= 1 && n <= world ? n : world;
}

int zt_launcher_local_rank(const char **var) {
    if (var) *var = get()->local_rank_var;
    return get()->local_rank;
}

// ---------------------------------------------------------------- the launcher's watch

static pid_t g_parent;       // the launcher, as this process was started by it (0: unwatched)
static char g_gone_msg[256]; // composed before the thread starts

// the job is over: stop at once, as a kill would (checkpoints are crash-safe). The line
// reaches whoever kept this rank's stderr (a file); a closed pipe ends the process too.
static void stop_gone(void) {
    ssize_t r = write(STDERR_FILENO, g_gone_msg, strlen(g_gone_msg));
    (void)r;
    _exit(1);
}

// Polls every 100 ms (a system call each: nothing next to a step). Not prctl's
// PR_SET_PDEATHSIG: it fires when the parent *thread* that forked this process ends, which
// in a launcher with threads (orted, mpirun) is not the launcher's end.
static void *watch(void *arg) {
    (void)arg;
    const struct timespec tick = {0, 100 * 1000 * 1000};
    while (getppid() == g_parent) nanosleep(&tick, NULL);
    stop_gone();
    return NULL;
}

void zt_launcher_check(void) {
    if (g_parent > 1 && getppid() != g_parent) stop_gone();
}

void zt_launcher_watch(void) {
    static int started;
    if (started || !get()->size_var) return; // no launcher set a size: nothing to watch
    pid_t parent = getppid();
    if (parent <= 1) return; // already init's (or a container's first process)
    g_parent = parent;
    snprintf(g_gone_msg, sizeof g_gone_msg,
             "zerotrain: rank %d stops: its launcher (process %ld) is gone, the job was killed "
             "(kill -9 of mpirun?); the checkpoints already written are intact\n",
             get()->rank, (long)g_parent);
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int e = pthread_create(&t, &a, watch, NULL); // (default stack: the libraries' static TLS)
    pthread_attr_destroy(&a);
    started = e == 0;
    if (e != 0)
        fprintf(stderr, "zerotrain: warning: (rank %d) cannot start the launcher's watch: %s; "
                        "if mpirun is killed, this rank stops at its next step\n",
                get()->rank, strerror(e));
}
