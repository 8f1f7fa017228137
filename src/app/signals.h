// Fatal signals a user can cause, turned into one clear message: SIGTERM/SIGINT (the job
// was stopped) and SIGBUS (an input file mapped in memory was truncated during the run).
#ifndef ZT_SIGNALS_H
#define ZT_SIGNALS_H

#include "config.h"

// Installs the handlers; the SIGBUS message names cfg's input files. Call after MPI_Init
// (Open MPI installs its own handlers there). The handlers print and _exit: SIGBUS with
// 1, SIGTERM/SIGINT with 128 + the signal number, as a shell reports a killed process.
void zt_signals_install(const zt_config *cfg);

#endif
