// What the launcher (Open MPI, PMIx, MPICH/Hydra, Slurm) told this process in its environment,
// readable before and without MPI_Init: the one reader of those variables.
#ifndef ZT_LAUNCHER_H
#define ZT_LAUNCHER_H

// Reads the variables, once: call first in main(), before MPI_Init may add its own. The
// functions below call it too, so a program without that call (a test) still works.
void zt_launcher_capture(void);

// This process's rank in the launch; 0 when no launcher set one.
int zt_launcher_rank(void);

// The processes this launch step started; 1 when none. Slurm's step count, not the job's
// (SLURM_NTASKS): a batch script itself is one process of its job. *var (may be NULL): the
// variable that said so.
int zt_launcher_size(const char **var);

// The tasks the job asked for, from any launcher's variable, and that variable's name in
// *var (e.g. SLURM_NTASKS=4 seen by a process launched without MPI); 1 and NULL when none
// asks for more than one.
int zt_launcher_tasks(const char **var);

// Consecutive ranks per machine, 1..world; `world` when the launcher does not say. Slurm may
// write "4(x2)": the first count.
int zt_launcher_local_size(int world);

// This process's rank among the launch's processes on its machine (0-based), from the first
// of OMPI_COMM_WORLD_LOCAL_RANK (Open MPI's mpirun; first, so mpirun inside a Slurm batch
// script beats the script's own SLURM_LOCALID), MPI_LOCALRANKID (MPICH's Hydra),
// SLURM_LOCALID (srun) that is set and starts with a digit; -1 when none is. *var (may be
// NULL): the variable that said so, NULL when none. Each rank picks its GPU by it.
int zt_launcher_local_rank(const char **var);
// The same, read from `env` ("NAME=value" strings, NULL-terminated, as environ) instead of
// this process's captured environment: pure, for tests.
int zt_launcher_local_rank_in(char *const *env, const char **var);

// Under a launcher (mpirun, orted, srun's slurmstepd: the process that started this one),
// starts a thread that ends this process within a fraction of a second once that parent is
// gone (kill -9 of mpirun): getppid() changes when the parent dies and the process is
// reparented. The ranks otherwise trained on for about a second (Open MPI's own
// lost-connection abort), committing checkpoints nobody asked for, heard by no one.
// Nothing without a launcher (a run under nohup outlives its shell, as it should) or when
// the parent is already init. Call once, after any re-exec (zt_backends_start).
void zt_launcher_watch(void);

// The same test at a step boundary, so a step never starts after the launcher is gone: the
// watch's 100 ms tick spans two or more short steps (a system call; nothing when unwatched).
void zt_launcher_check(void);

#endif
