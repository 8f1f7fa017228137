// The OpenMP wait policy. libgomp's default lets an idle thread spin before it sleeps; on a
// machine whose cores other processes also use, a thread then spins on a core while the one
// it waits for is not running, and every short parallel region costs a time slice. Measured
// on 2 shared cores (load 10, bench/RESULTS.md "OpenMP wait policy"): a 6-layer generate ran
// 1 token/s by default and 35-70 with PASSIVE, a training step 5.5-7.6 s against 0.7-1.5 s;
// on an idle machine a step takes the same time either way (bench/step.sh's notes).
#include "omp_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "launcher.h"

// Set with the pid before the re-exec: the exec'd process (same pid) knows the value is ours.
#define MARKER_ENV "ZT_OMP_POLICY_SET"

static int set_by_us(void) {
    const char *m = getenv(MARKER_ENV);
    return m && atol(m) == (long)getpid();
}

void zt_omp_policy_init(char **argv) {
    const char *v = getenv("OMP_WAIT_POLICY");
    if (v && *v) return; // the user's (an empty value is none: libgomp ignores it)
    char pid[32];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0 || setenv(MARKER_ENV, pid, 1) != 0) return;
    fflush(NULL);
    execv("/proc/self/exe", argv); // AT_EXECFN where /proc is not mounted
    const char *fn = (const char *)getauxval(AT_EXECFN);
    if (fn) execv(fn, argv);
    int err = errno;
    unsetenv("OMP_WAIT_POLICY");
    unsetenv(MARKER_ENV);
    if (zt_launcher_rank() == 0)
        fprintf(stderr, "zerotrain: warning: re-executing with OMP_WAIT_POLICY=PASSIVE failed "
                        "(%s): OpenMP threads spin while idle, slow where other processes share "
                        "the cores; set OMP_WAIT_POLICY=PASSIVE yourself\n", strerror(err));
}

void zt_omp_policy_unset_env(void) {
    if (!set_by_us()) return;
    unsetenv("OMP_WAIT_POLICY");
    unsetenv(MARKER_ENV);
}

const char *zt_omp_policy_describe(void) {
    static char buf[96];
    const char *v = getenv("OMP_WAIT_POLICY");
    if (!v || !*v) return "libgomp's default (spin, then sleep)";
    snprintf(buf, sizeof buf, "%s (%s)", v, set_by_us() ? "set by zerotrain" : "yours");
    return buf;
}
