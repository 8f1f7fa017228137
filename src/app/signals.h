// Signals a user or a scheduler sends, turned into one clear message or a clean stop:
// SIGTERM/SIGINT (the job was stopped), SIGTERM/SIGUSR1 with a --ckpt-dir (preemption: save,
// then stop) and SIGBUS (an input file mapped in memory was truncated during the run).
#ifndef ZT_SIGNALS_H
#define ZT_SIGNALS_H

#include "config.h"

// The exit status of a run that a preemption signal stopped after saving a checkpoint
// (EX_TEMPFAIL: try again; a scheduler's requeue resumes it).
#define ZT_EXIT_PREEMPTED 75

// Installs the handlers; the SIGBUS message names cfg's input files. Call after MPI_Init
// (Open MPI installs its own handlers there). The handlers print and _exit: SIGBUS with
// 1, SIGTERM/SIGINT with 128 + the signal number, as a shell reports a killed process.
// With a --ckpt-dir, the first SIGTERM or SIGUSR1 (what SLURM and Kubernetes send before
// they kill; `sbatch --signal`) only asks the run to stop: zt_signals_stop_requested()
// turns 1, and the trainer saves a checkpoint at the end of the step and exits with
// ZT_EXIT_PREEMPTED. A second one stops at once.
void zt_signals_install(const zt_config *cfg);

// 1 once a preemption signal asked this process to stop at the next step boundary.
int zt_signals_stop_requested(void);

#endif
