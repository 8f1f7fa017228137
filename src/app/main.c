// zerotrain's command line: `train` (the default command), `memory`, `prepare`, `generate`,
// `export`, `blas`, `help`.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_core.h"
#include "ckpt.h"
#include "comm.h"
#include "config.h"
#include "generate_cli.h"
#include "grid.h"
#include "hf_export.h"
#include "hf_import.h"
#include "outputs.h"
#include "planner.h"
#include "prepare_cli.h"
#include "signals.h"
#include "train.h"

// Plans with a million ranks take a few seconds and 200 MB; beyond that, refuse.
#define ZT_MEMORY_MAX_WORLD (1 << 20)

static void usage(FILE *f) {
    fprintf(f,
            "zerotrain: trains GPT-2 across MPI ranks: data parallel with ZeRO-1, pipeline stages\n"
            "\n"
            "usage:\n"
            "  [mpirun -np N] zerotrain [train] [--flag value ...]   train (the default command)\n"
            "  zerotrain memory [--dp N] [--pp N] [--tp N] [--json] [--flag value ...]\n"
            "                                 the bytes every rank of that layout would need,\n"
            "                                 by category, without allocating (one process, no\n"
            "                                 mpirun); takes the train flags; --mem-limit checks\n"
            "                                 a budget per rank and advises\n"
            "  zerotrain prepare --text FILE --out TRAIN.bin [--val-out VAL.bin] [--val-frac F]\n"
            "                    [--tokenizer bytes|gpt2] [--vocab FILE] [--invalid-utf8 keep|replace]\n"
            "                                 token files from text: bytes (vocab 256, the\n"
            "                                 default) or GPT-2 BPE (vocab 50257); prepare --help\n"
            "                                 says more\n"
            "  [mpirun -np N] zerotrain generate [--init-from PATH] [--prompt TEXT] [--tp N] ...\n"
            "                                 continues a prompt with a KV cache (greedy or\n"
            "                                 sampled), on one rank or --tp ranks; generate\n"
            "                                 --help says more\n"
            "  zerotrain blas                 the BLAS kernels this machine runs (exit 1 if they\n"
            "                                 are below what the CPU offers)\n"
            "  zerotrain export CKPT --out DIR\n"
            "                                 merges a sharded checkpoint (any layout) into one\n"
            "                                 Hugging Face directory (with GPT-2's tokenizer\n"
            "                                 files when the vocabulary is 50257)\n"
            "  zerotrain help                 this text\n"
            "\n"
            "train ");
    zt_config_print_help(f);
}

// `zerotrain memory`: plans the layout the flags describe, in this one process.
static zt_status memory_plan(int argc, char **argv) {
    int json = 0, n = 0;
    // --json is this command's own flag; the rest are train's options
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    ZT_ASSERT(rest);
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = 1;
        else rest[n++] = argv[i];
    }
    zt_config cfg;
    zt_status s = zt_config_parse(&cfg, n, rest);
    free(rest);
    ZT_TRY(s);
    ZT_TRY(zt_config_validate(&cfg));
    if (cfg.dp < 1) cfg.dp = 1; // as --pp and --tp default to 1
    if ((double)cfg.dp * cfg.pp * cfg.tp > ZT_MEMORY_MAX_WORLD)
        return zt_errorf("dp*pp*tp = %d*%d*%d is more than %d ranks: plan a smaller layout",
                         cfg.dp, cfg.pp, cfg.tp, ZT_MEMORY_MAX_WORLD);
    int dp = 0;
    ZT_TRY(zt_grid_layout(cfg.dp * cfg.pp * cfg.tp, cfg.dp, cfg.pp, cfg.tp, &dp));
    zt_plan_spec spec;
    ZT_TRY(zt_plan_spec_from_config(&spec, &cfg, dp));
    char what[64];
    snprintf(what, sizeof what, "--mem-limit %s", cfg.mem_limit);
    return zt_plan_report(stdout, &spec, json, zt_config_mem_limit(&cfg), what);
}

static int memory(int argc, char **argv) {
    if (memory_plan(argc, argv) == ZT_OK) return 0;
    zt_error_report(1);
    return 1;
}

// --resume and --init-from carry the model shape: take it from the file (flags that
// contradict it are an error).
static zt_status adopt_file_shape(zt_config *cfg) {
    zt_model_shape s;
    int head_known = 1;
    if (cfg->resume[0] && cfg->init_from[0])
        return zt_errorf("give --resume %s (a checkpoint: weights, optimizer state and data "
                         "position) or --init-from %s (weights only), not both",
                         cfg->resume, cfg->init_from);
    if (cfg->resume[0]) {
        ZT_TRY(zt_ckpt_peek(cfg->resume, &s, NULL));
        return zt_config_adopt_shape(cfg, &s, 1, cfg->resume);
    }
    if (!cfg->init_from[0]) return ZT_OK;
    ZT_TRY(zt_init_read_shape(cfg->init_from, &s, &head_known));
    return zt_config_adopt_shape(cfg, &s, head_known, cfg->init_from);
}

// `zerotrain export CKPT --out DIR`.
static int export_cmd(int argc, char **argv) {
    const char *ckpt = NULL, *out = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
        else if (argv[i][0] != '-' && !ckpt) ckpt = argv[i];
        else {
            fprintf(stderr, "zerotrain export: unexpected argument '%s' (usage: zerotrain export "
                            "CKPT --out DIR)\n", argv[i]);
            return 1;
        }
    }
    if (!ckpt || !out) {
        fprintf(stderr, "zerotrain export: usage: zerotrain export CKPT --out DIR\n");
        return 1;
    }
    // before the merge, which reads every shard
    if (zt_hf_export_check_dir(out) != ZT_OK) {
        zt_error_report(1);
        return 1;
    }
    if (zt_ckpt_export(ckpt, out) == ZT_OK) return 0;
    zt_error_report(1);
    return 1;
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

static int train(int argc, char **argv, const char *argv0) {
    zt_comm world;
    zt_comm_mpi_init_world(&world, NULL, NULL);
    zt_set_fatal_hook(zt_comm_mpi_abort);
    // a launcher asked for several tasks but this process sees a world of one: each task
    // would train alone (srun without --mpi, or an MPI library the launcher cannot reach)
    static const char *const k_task_vars[] = {"SLURM_NTASKS", "SLURM_NPROCS", "PMI_SIZE",
                                              "OMPI_COMM_WORLD_SIZE"};
    for (size_t i = 0; world.size == 1 && i < sizeof k_task_vars / sizeof *k_task_vars; i++) {
        const char *v = getenv(k_task_vars[i]);
        if (v && atoi(v) > 1) {
            fprintf(stderr, "zerotrain: warning: %s=%s but this job's MPI world has 1 rank: "
                            "it was not launched through MPI (use mpirun, or srun --mpi=pmix), "
                            "so every task trains alone\n", k_task_vars[i], v);
            break;
        }
    }
    zt_config cfg;
    // A config file may be missing on some nodes only: agree before going on.
    zt_status s = zt_comm_agree(&world, zt_config_parse(&cfg, argc, argv));
    if (s == ZT_OK) s = zt_comm_agree(&world, same_options_on_every_rank(&cfg, &world));
    if (s == ZT_OK) s = zt_comm_mpi_check_env(); // the same environment on every rank
    // --param-dtype bf16 is for `zerotrain memory` until the GPU backend exists
    if (s == ZT_OK) s = zt_config_check_trainable(&cfg);
    // OMP_NUM_THREADS beyond what a rank can start crashed or ended in libgomp's words
    if (s == ZT_OK && cfg.threads == 0 && omp_get_max_threads() > ZT_MAX_THREADS)
        s = zt_errorf("OMP_NUM_THREADS asks for %d OpenMP threads per rank, more than %d: set "
                      "it (or --threads) to at most one thread per core", omp_get_max_threads(),
                      ZT_MAX_THREADS);
    // outputs before any work; rank 0 writes them, every rank hears its answer
    if (s == ZT_OK)
        s = zt_comm_agree(&world, world.rank == 0 ? zt_outputs_check(&cfg) : ZT_OK);
    if (s == ZT_OK) zt_signals_install(&cfg);
    if (s == ZT_OK) s = zt_comm_agree(&world, adopt_file_shape(&cfg));
    if (s == ZT_OK) s = zt_train(&cfg, &world, argv0);
    zt_error_report(s != ZT_OK && world.rank == 0);
    zt_comm_free(&world);
    zt_comm_mpi_finalize();
    return s == ZT_OK ? 0 : 1;
}

// `zerotrain blas`: the kernels the products run on, after zt_blas_init's fix.
static int blas(void) {
    char line[512];
    zt_blas_describe(line, sizeof line);
    printf("blas: %s\n", line);
    zt_blas_write_json(stdout);
    printf("\n");
    return zt_blas_info_get()->generic ? 1 : 0;
}

// The ranks a launcher started (Open MPI, MPICH/Hydra, Slurm) and this process's rank
// among them, from the environment (before, and without, MPI_Init); 1 and 0 when none.
static int env_int(const char *const *vars, int n, int dflt) {
    for (int i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return dflt;
}
static int launched_ranks(void) {
    // SLURM_STEP_NUM_TASKS, not SLURM_NTASKS: a batch script itself is one process
    static const char *const v[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
    return env_int(v, 3, 1);
}
static int launched_rank(void) {
    static const char *const v[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    return env_int(v, 3, 0);
}

int main(int argc, char **argv) {
    // Before anything else (MPI_Init, the first product): may re-execute this binary with
    // OPENBLAS_CORETYPE set, where OpenBLAS fell back to generic kernels.
    zt_blas_init(argv);
    const char *cmd = "train";
    int first = 1;
    if (argc > 1 && argv[1][0] != '-') {
        cmd = argv[1];
        first = 2;
    }
    int help = strcmp(cmd, "help") == 0;
    for (int i = first; i < argc; i++)
        help |= strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
    // `prepare --help` and `memory --help`: their own usage first
    if (help && strcmp(cmd, "prepare") == 0) {
        zt_prepare_usage(stdout);
        return 0;
    }
    if (help && strcmp(cmd, "generate") == 0) {
        zt_generate_usage(stdout);
        return 0;
    }
    if (help && strcmp(cmd, "memory") == 0) {
        printf("usage: zerotrain memory [--dp N] [--pp N] [--tp N] [--json] [--mem-limit BYTES] "
               "[train flags ...]\n"
               "  the bytes every rank of that layout would need, by category, without\n"
               "  allocating (one process, no mpirun; --dp, --pp, --tp default to 1);\n"
               "  --mem-limit checks a budget per rank and advises changes that fit;\n"
               "  --json prints the plan as JSON. The train flags:\n\n");
        zt_config_print_help(stdout);
        return 0;
    }
    if (help && strcmp(cmd, "export") == 0) {
        printf("usage: zerotrain export CKPT --out DIR\n"
               "  merges a checkpoint written in any layout (a --ckpt-dir, whose latest or newest\n"
               "  complete step is taken, or one step-N directory) into one Hugging Face GPT-2\n"
               "  directory: model.safetensors, config.json (and GPT-2's tokenizer files for its\n"
               "  vocabulary). One process, no mpirun.\n");
        return 0;
    }
    if (help && strcmp(cmd, "blas") == 0) {
        printf("usage: zerotrain blas\n"
               "  prints the BLAS library and the kernels (core) its products run on, as JSON;\n"
               "  exits 1 when they are the library's generic ones on a CPU that has better.\n");
        return 0;
    }
    if (help) {
        usage(stdout);
        return 0;
    }
    // the one-process commands: under a launcher of several ranks each would run the
    // whole command at once on the same outputs (`blas` stays allowed: each rank reports
    // its own kernels, which is how a launch's ranks are checked)
    static const char *const k_one_process[] = {"prepare", "memory", "export"};
    for (size_t i = 0; i < sizeof k_one_process / sizeof *k_one_process; i++)
        if (strcmp(cmd, k_one_process[i]) == 0 && launched_ranks() > 1) {
            if (launched_rank() == 0)
                fprintf(stderr, "zerotrain: error: `zerotrain %s` runs in one process, but "
                                "this launch started %d: run it without mpirun or srun\n",
                        cmd, launched_ranks());
            return 1;
        }
    if (strcmp(cmd, "blas") == 0) return blas();
    if (strcmp(cmd, "prepare") == 0) return zt_prepare_main(argc - first, argv + first);
    if (strcmp(cmd, "memory") == 0) return memory(argc - first, argv + first);
    if (strcmp(cmd, "export") == 0) return export_cmd(argc - first, argv + first);
    if (strcmp(cmd, "generate") == 0) return zt_generate_main(argc - first, argv + first);
    if (strcmp(cmd, "train") == 0) return train(argc - first, argv + first, argv[0]);
    fprintf(stderr, "zerotrain: unknown command '%s' (commands: train, memory, prepare, export, "
                    "generate, blas, help)\n",
            cmd);
    return 1;
}
