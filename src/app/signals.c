// SIGTERM/SIGINT and SIGBUS as messages rather than a silent death or "Bus error"; with a
// --ckpt-dir, SIGTERM/SIGUSR1 as a request to save and stop (signals.h).
#include "signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

// Composed before any signal can arrive: a handler may only write(2) and _exit.
static char g_bus_msg[4 * ZT_PATH_MAX + 512];
static char g_term_msg[256], g_int_msg[128], g_usr1_msg[256];

static int g_once;      // the first handler speaks; a second signal (another thread) waits
static int g_graceful;  // a --ckpt-dir to save into: SIGTERM/SIGUSR1 ask for a stop first
static int g_stop;      // that request, read at every step boundary

int zt_signals_stop_requested(void) { return __atomic_load_n(&g_stop, __ATOMIC_SEQ_CST); }

static void on_signal(int sig) {
    int preempt = sig == SIGTERM || sig == SIGUSR1;
    if (preempt && g_graceful && !__atomic_exchange_n(&g_stop, 1, __ATOMIC_SEQ_CST))
        return; // the trainer saves and stops at the end of the step
    if (__atomic_exchange_n(&g_once, 1, __ATOMIC_SEQ_CST))
        for (;;) pause(); // the first handler's _exit ends the process
    const char *m = sig == SIGBUS    ? g_bus_msg
                    : sig == SIGTERM ? g_term_msg
                    : sig == SIGUSR1 ? g_usr1_msg
                                     : g_int_msg;
    ssize_t r = write(STDERR_FILENO, m, strlen(m));
    (void)r;
    _exit(sig == SIGBUS ? 1 : 128 + sig);
}

void zt_signals_install(const zt_config *c) {
    int rank = zt_log_rank();
    snprintf(g_bus_msg, sizeof g_bus_msg,
             "zerotrain: error: (rank %d) an input file read through a memory map became "
             "shorter during the run (SIGBUS): --data %s%s%s%s%s; do not truncate or rewrite "
             "input files while a run reads them\n",
             rank, c->data[0] ? c->data : "(the embedded default)",
             c->val_data[0] ? ", --val-data " : "", c->val_data,
             c->init_from[0] ? ", --init-from " : "", c->init_from);
    g_graceful = c->ckpt_dir[0] != 0;
    static const char *const names[] = {"SIGTERM", "SIGUSR1"};
    char *msgs[] = {g_term_msg, g_usr1_msg};
    for (int i = 0; i < 2; i++)
        if (g_graceful)
            snprintf(msgs[i], sizeof g_term_msg, "zerotrain: stopped at once by a second %s "
                     "(rank %d); the checkpoints already in %.120s are intact\n", names[i], rank,
                     c->ckpt_dir);
        else
            snprintf(msgs[i], sizeof g_term_msg, "zerotrain: stopped by %s (rank %d); nothing "
                     "was saved\n", names[i], rank);
    snprintf(g_int_msg, sizeof g_int_msg,
             "zerotrain: stopped by SIGINT (rank %d); nothing was saved\n", rank);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; // a request to stop returns: interrupted system calls go on
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    // without a --ckpt-dir it stops at once with its message (`zerotrain launch` turns a
    // SIGTERM or SIGINT into SIGUSR1 through mpirun; its default action said nothing)
    sigaction(SIGUSR1, &sa, NULL);
}
