// The launcher's variables (launcher.h).
#include "launcher.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>

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

int zt_launcher_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                       "SLURM_PROCID"};
    int r = FIRST(vars, NULL);
    return r >= 0 ? r : 0;
}

int zt_launcher_size(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
    int n = FIRST(vars, NULL);
    return n >= 1 ? n : 1;
}

int zt_launcher_tasks(const char **var) {
    static const char *const vars[] = {"SLURM_NTASKS", "SLURM_NPROCS", "PMI_SIZE",
                                       "OMPI_COMM_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *which = NULL;
        int n = first_count(vars + i, 1, &which);
        if (n > 1) {
            *var = which;
            return n;
        }
    }
    *var = NULL;
    return 1;
}

int zt_launcher_local_size(int world) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "SLURM_NTASKS_PER_NODE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        int n = first_count(vars + i, 1, NULL);
        if (n >= 1 && n <= world) return n;
    }
    return world;
}
