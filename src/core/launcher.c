// The launcher's variables (launcher.h), read once: MPI_Init may add its own (a singleton
// sets OMPI_COMM_WORLD_RANK=0 in every process srun started without a PMI).
#include "launcher.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct {
    int rank, size, tasks, local_size; // local_size: -1 when no launcher says
    const char *size_var, *tasks_var;
} launch;

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
