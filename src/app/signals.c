// SIGTERM/SIGINT and SIGBUS as messages rather than a silent death or "Bus error".
#include "signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

// Composed before any signal can arrive: a handler may only write(2) and _exit.
static char g_bus_msg[4 * ZT_PATH_MAX + 512];
static char g_term_msg[128], g_int_msg[128];

static int g_once; // the first handler speaks; a second signal (another thread) waits

static void on_signal(int sig) {
    if (__atomic_exchange_n(&g_once, 1, __ATOMIC_SEQ_CST))
        for (;;) pause(); // the first handler's _exit ends the process
    const char *m = sig == SIGBUS ? g_bus_msg : sig == SIGTERM ? g_term_msg : g_int_msg;
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
    snprintf(g_term_msg, sizeof g_term_msg,
             "zerotrain: stopped by SIGTERM (rank %d); nothing was saved\n", rank);
    snprintf(g_int_msg, sizeof g_int_msg,
             "zerotrain: stopped by SIGINT (rank %d); nothing was saved\n", rank);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}
