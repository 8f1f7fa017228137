// `zerotrain launch` (launch_cli.h): mpirun as a first run on one machine needs it. Open MPI
// refuses more ranks than cores without --oversubscribe and root without --allow-run-as-root,
// and N ranks each starting one OpenMP thread per core fight over the cores
// (docs/machine.md, "Threads"): the launch adds what is needed, prints the command, runs it
// and passes on the stop signals and the exit status (run_mpirun).
#include "launch_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "launcher.h"

void zt_launch_usage(FILE *f) {
    fprintf(f, "usage: zerotrain launch -np N [COMMAND] [flags ...]\n"
               "  runs `zerotrain COMMAND flags ...` on N ranks of this machine through mpirun,\n"
               "  adding --oversubscribe where N exceeds the cores, --allow-run-as-root as root,\n"
               "  and OMP_NUM_THREADS = cores / N (at least 1) unless a value that fits is set;\n"
               "  prints the mpirun command first. For several machines, call mpirun (or srun)\n"
               "  yourself.\n");
}

static int usable_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int launch_fail(const char *msg, const char *arg) {
    fprintf(stderr, "zerotrain: error: ");
    fprintf(stderr, msg, arg);
    fprintf(stderr, "\n");
    return 1;
}

// The launch stays mpirun's parent (it exec'ed it before): a SIGTERM or SIGINT to mpirun
// makes it kill the ranks and exit 1 even when they saved and exited 75, so the preemption's
// status was lost. mpirun runs in a process group of its own (a signal to the launch's group,
// as schedulers and container runtimes send, reaches the launch alone), and the launch turns
// the first SIGTERM or SIGINT into SIGUSR1 to mpirun, which forwards it to every rank: save
// and stop, exit 75 (src/app/signals.c); a second one into SIGTERM (stop at once). SIGUSR1
// and SIGUSR2 pass as they are. README, "Preemption".
static volatile sig_atomic_t g_mpirun_pid, g_stops;

static void forward_signal(int sig) {
    pid_t child = (pid_t)g_mpirun_pid;
    if (child <= 0) return;
    if (sig == SIGTERM || sig == SIGINT) sig = g_stops++ == 0 ? SIGUSR1 : SIGTERM;
    kill(child, sig);
}

// Runs mpirun with `args` as a child in its own process group and waits for it, forwarding
// the stop signals; its exit status (128 + the signal that ended it), or 1 when it could not
// start.
static int run_mpirun(char **args) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    static const int sigs[] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0) return launch_fail("cannot run mpirun: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) return launch_fail("cannot run mpirun: %s", strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGUSR1, SIG_DFL);
        signal(SIGUSR2, SIG_DFL);
        execvp("mpirun", args);
        int err = errno; // through the pipe: the parent says it, once
        ssize_t w = write(ready[1], &err, sizeof err);
        (void)w;
        _exit(127);
    }
    g_mpirun_pid = pid;
    setpgid(pid, pid); // (both sides: whichever runs first)
    close(ready[1]);
    int err = 0;
    ssize_t got = read(ready[0], &err, sizeof err);
    close(ready[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got == (ssize_t)sizeof err)
        return launch_fail("cannot run mpirun: %s; install Open MPI (make setup) or call your "
                           "MPI's launcher yourself", strerror(err));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether `command` runs as one process (main.c's commands other than train, eval and
// generate): on N ranks each would do the same work N times over.
static int one_process_command(const char *command) {
    static const char *const one[] = {"memory", "prepare", "export", "blas", "help", "launch"};
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        if (strcmp(command, one[i]) == 0) return 1;
    return 0;
}

int zt_launch_main(int argc, char **argv) {
    if (zt_launcher_size(NULL) > 1)
        return launch_fail("%s", "already one of several launched processes: run the command "
                                 "without `launch` under mpirun or srun");
    if (argc < 2 || (strcmp(argv[0], "-np") && strcmp(argv[0], "--np")))
        return launch_fail("%s", "give the number of ranks first: zerotrain launch -np N ...");
    char *end;
    long np = strtol(argv[1], &end, 10);
    if (*end || end == argv[1] || np < 1 || np > 4096)
        return launch_fail("-np %s: give a whole number of ranks from 1 to 4096", argv[1]);
    if (np > 1 && argc > 2 && one_process_command(argv[2]))
        return launch_fail("`%s` runs as one process, not on ranks (`memory` plans any layout "
                           "itself: give it --dp, --pp, --tp); run it without launch",
                           argv[2]);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return launch_fail("cannot find this program's path: %s", strerror(errno));
    exe[n] = 0;
    int cores = usable_cores();
    long fit = cores / np > 1 ? cores / np : 1;
    // The user's OMP_NUM_THREADS where the ranks' threads fit the cores; else one pool per
    // core at most: threads that spin on a shared core slow a step many times (docs/machine.md)
    const char *user = getenv("OMP_NUM_THREADS");
    long want = user ? strtol(user, &end, 10) : 0;
    int keep = user && *end == 0 && want >= 1 && want * np <= (cores > np ? cores : np);
    if (user && !keep)
        fprintf(stderr, "zerotrain: warning: OMP_NUM_THREADS=%s x %ld ranks would exceed the %d "
                        "cores: each rank runs %ld (--threads N in the command sets it for "
                        "zerotrain itself)\n", user, np, cores, fit);
    char threads[16];
    snprintf(threads, sizeof threads, "%ld", fit);
    if (!keep) setenv("OMP_NUM_THREADS", threads, 1);
    char **args = calloc((size_t)argc + 14, sizeof *args);
    if (!args) return launch_fail("%s", "out of memory");
    int k = 0;
    args[k++] = "mpirun";
    // mpirun's own process group reading a terminal would be stopped (SIGTTIN); the ranks
    // read no terminal (a --config /dev/stdin is a pipe or a file)
    if (isatty(STDIN_FILENO)) {
        args[k++] = "--stdin";
        args[k++] = "none";
    }
    if (np > cores) args[k++] = "--oversubscribe";
    if (geteuid() == 0) args[k++] = "--allow-run-as-root";
    args[k++] = "-x";
    args[k++] = "OMP_NUM_THREADS";
    args[k++] = "-np";
    args[k++] = argv[1];
    args[k++] = exe;
    for (int i = 2; i < argc; i++) args[k++] = argv[i];
    fprintf(stderr, "zerotrain launch: OMP_NUM_THREADS=%s", getenv("OMP_NUM_THREADS"));
    for (int i = 0; i < k; i++) fprintf(stderr, " %s", args[i]);
    fprintf(stderr, "  (%ld ranks on %d cores)\n", np, cores);
    fflush(NULL);
    zt_backends_unset_env(); // the ranks pick their own BLAS core and wait policy, and say so
    int rc = run_mpirun(args);
    free(args);
    return rc;
}
