// How the OpenMP threads wait between parallel regions: passive (sleep) unless the user chose
// (docs/design.md, "Threads").
#ifndef ZT_OMP_POLICY_H
#define ZT_OMP_POLICY_H

// Call first in main(), before MPI_Init and any parallel region, with main's argv. Where
// OMP_WAIT_POLICY is not set, sets it to PASSIVE and re-executes the same binary with the
// same argv (libgomp reads the variable once, when it loads: setting it later changes
// nothing). An empty value counts as not set. Where it is set (the user's, or ours after the
// re-exec), nothing. If the exec
// fails, the variable is taken back and the process runs on with the default policy.
void zt_omp_policy_init(char **argv);

// "PASSIVE (set by zerotrain)", or the user's value with "(yours)", for banners and logs.
const char *zt_omp_policy_describe(void);

// Takes back OMP_WAIT_POLICY where this process set it (a user's value stays).
void zt_omp_policy_unset_env(void);

#endif
