// `zerotrain train` (the default command): the world, the options every rank must share, the
// checks before any work, then the trainer (train.h).
#include "train_cli.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "comm_mpi.h"
#include "config.h"
#include "hf_import.h"
#include "launcher.h"
#include "outputs.h"
#include "signals.h"
#include "train.h"

// --resume and --init-from carry the model shape: take it from the file (flags that
// contradict it are an error). *start: the step a --resume begins at (0 otherwise).
static zt_status adopt_file_shape(zt_config *cfg, int *start) {
    zt_model_shape s;
    int head_known = 1;
    *start = 0;
    if (cfg->resume[0] && cfg->init_from[0])
        return zt_errorf("give --resume %s (a checkpoint: weights, optimizer state and data "
                         "position) or --init-from %s (weights only), not both",
                         cfg->resume, cfg->init_from);
    if (cfg->resume[0]) {
        ZT_TRY(zt_ckpt_peek(cfg->resume, &s, start));
        return zt_config_adopt_shape(cfg, &s, 1, cfg->resume);
    }
    if (!cfg->init_from[0]) return ZT_OK;
    ZT_TRY(zt_init_read_shape(cfg->init_from, &s, &head_known));
    return zt_config_adopt_shape(cfg, &s, head_known, cfg->init_from);
}

// Every rank must run the same options: with MPMD launches or a --config file that differs
// between machines, ranks disagreed on --steps (a hang), --n-embd (a crash in a
// collective) or --lr (each shard trained with its own). Rank 0's options are the reference.
static zt_status same_options_on_every_rank(const zt_config *cfg, const zt_comm *world) {
    if (world->size == 1) return ZT_OK;
    zt_config *ref = malloc(sizeof *ref);
    ZT_ASSERT(ref);
    memcpy(ref, cfg, sizeof *ref);
    zt_comm_broadcast(world, ref, sizeof *ref, ZT_U8, 0, NULL);
    const char *differs = zt_config_first_difference(cfg, ref);
    free(ref);
    if (!differs) return ZT_OK;
    return zt_errorf("rank %d was given another --%s than rank 0: every rank must get the same "
                     "options (check the command line and the --config file on every machine)",
                     world->rank, differs);
}

// A world of one rank where the launcher started several processes (srun without a PMI that
// this MPI can use): each would run the same model alone, and all would exit 0. Refused,
// printed by the launch's first process; 0 then. A job that asked for several tasks but
// started this one process (a batch script running zerotrain itself) is warned.
static int launched_through_mpi(void) {
    const char *var = NULL;
    int started = zt_launcher_size(&var);
    if (started > 1) {
        if (zt_launcher_rank() == 0)
            fprintf(stderr, "zerotrain: error: this launch started %d processes (%s=%d) but MPI "
                            "sees a world of 1 rank in each: every one would train alone. Launch "
                            "through MPI: mpirun -np %d, or srun --mpi=pmix (`srun --mpi=list` "
                            "shows the plugins this Slurm has)\n", started, var, started, started);
        return 0;
    }
    int tasks = zt_launcher_tasks(&var);
    if (tasks > 1)
        fprintf(stderr, "zerotrain: warning: %s=%s but this job's MPI world has 1 rank: "
                        "it was not launched through MPI (use mpirun, or srun --mpi=pmix), "
                        "so the other tasks stay idle\n", var, getenv(var));
    return 1;
}

int zt_run_init_world(zt_comm *world) {
    zt_comm_mpi_init_world(world, NULL, NULL);
    zt_set_fatal_hook(zt_comm_mpi_abort);
    if (world->size > 1 || launched_through_mpi()) return 1;
    zt_comm_free(world);
    zt_comm_mpi_finalize();
    return 0;
}

zt_status zt_run_options(const zt_comm *world, zt_config *cfg, int argc, char **argv,
                         const char *const *only, int *start) {
    int training = only == NULL;
    // A config file may be missing on some nodes only: agree before going on.
    zt_status s = zt_comm_agree(world, zt_config_parse(cfg, argc, argv));
    // eval: the training options of a --config file shared with training are not its own
    if (s == ZT_OK && only) zt_config_keep_only(cfg, only);
    if (s == ZT_OK) s = zt_comm_agree(world, same_options_on_every_rank(cfg, world));
    // the MPI backend's settings from the options (their defaults: the environment)
    zt_comm_mpi_settings cs;
    if (s == ZT_OK) s = zt_config_comm_settings(cfg, &cs);
    if (s == ZT_OK) zt_comm_mpi_settings_use(&cs);
    // what the backend cannot train (--param-dtype bf16 on CUDA, for one)
    if (s == ZT_OK) s = zt_config_check_trainable(cfg);
    // OMP_NUM_THREADS beyond what a rank can start crashed or ended in libgomp's words
    if (s == ZT_OK && cfg->threads == 0 && omp_get_max_threads() > ZT_MAX_THREADS)
        s = zt_errorf("OMP_NUM_THREADS asks for %d OpenMP threads per rank, more than %d: set "
                      "it (or --threads) to at most one thread per core", omp_get_max_threads(),
                      ZT_MAX_THREADS);
    // outputs before any work; rank 0 writes them, every rank hears its answer
    if (s == ZT_OK && training)
        s = zt_comm_agree(world, world->rank == 0 ? zt_outputs_check(cfg) : ZT_OK);
    if (s == ZT_OK && training) zt_signals_install(cfg);
    *start = 0;
    if (s == ZT_OK) s = zt_comm_agree(world, adopt_file_shape(cfg, start));
    return s;
}

int zt_run_end(zt_comm *world, zt_status s) {
    zt_error_report(s != ZT_OK && world->rank == 0);
    zt_comm_free(world);
    zt_comm_mpi_finalize();
    return s != ZT_OK;
}

int zt_train_main(int argc, char **argv, const char *argv0) {
    zt_comm world;
    zt_config cfg;
    int start = 0, preempted = 0;
    if (!zt_run_init_world(&world)) return 1;
    zt_status s = zt_run_options(&world, &cfg, argc, argv, NULL, &start);
    // a checkpoint already at --steps: the rerun of a finished (or killed-after-its-last-save)
    // run ends cleanly instead of training zero steps
    if (s == ZT_OK && cfg.resume[0] && start == cfg.steps)
        s = zt_comm_agree(&world, world.rank == 0 ? zt_train_complete(&cfg, start) : ZT_OK);
    else if (s == ZT_OK)
        s = zt_train(&cfg, &world, argv0, start, &preempted);
    int failed = zt_run_end(&world, s);
    return failed ? 1 : preempted ? ZT_EXIT_PREEMPTED : 0;
}
