// zerotrain's command line: `train` (the default command), `memory`, `prepare`, `help`.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_core.h"
#include "comm.h"
#include "config.h"
#include "data.h"
#include "grid.h"
#include "outputs.h"
#include "planner.h"
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
            "                                 byte-level tokens of a text file (vocab 256)\n"
            "  zerotrain blas                 the BLAS kernels this machine runs (exit 1 if they\n"
            "                                 are below what the CPU offers)\n"
            "  zerotrain help                 this text\n"
            "\n"
            "train ");
    zt_config_print_help(f);
}

static int prepare(int argc, char **argv) {
    const char *text = NULL, *out = NULL, *val_out = NULL;
    double val_frac = 0.1;
    static const char *const known[] = {"--text", "--out", "--val-out", "--val-frac"};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) ok |= strcmp(a, known[k]) == 0;
        if (!ok) {
            fprintf(stderr, "zerotrain prepare: unknown option %s (options: --text, --out, "
                            "--val-out, --val-frac)\n", a);
            return 1;
        }
        if (!v) {
            fprintf(stderr, "zerotrain prepare: %s needs a value\n", a);
            return 1;
        }
        if (strcmp(a, "--text") == 0) text = v;
        else if (strcmp(a, "--out") == 0) out = v;
        else if (strcmp(a, "--val-out") == 0) val_out = v;
        else if (strcmp(a, "--val-frac") == 0) {
            char *end;
            val_frac = strtod(v, &end);
            if (*end || end == v || !(val_frac > 0.0 && val_frac < 1.0)) {
                fprintf(stderr, "zerotrain prepare: --val-frac %s must be a number between 0 "
                                "and 1 (exclusive)\n", v);
                return 1;
            }
        }
        i++;
    }
    if (!text || !out) {
        fprintf(stderr, "zerotrain prepare: --text FILE and --out FILE are required\n");
        return 1;
    }
    if (zt_prepare_text(text, out, val_out, val_frac) != ZT_OK) {
        zt_error_report(1);
        return 1;
    }
    printf("wrote %s%s%s\n", out, val_out ? " and " : "", val_out ? val_out : "");
    return 0;
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
        printf("usage: zerotrain prepare --text FILE --out TRAIN.bin [--val-out VAL.bin] "
               "[--val-frac F]\n"
               "  byte-level tokens (vocab 256) of a text file, in the llm.c token format;\n"
               "  --val-out takes the last --val-frac of the text (default 0.1) as validation\n");
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
    if (help) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "blas") == 0) return blas();
    if (strcmp(cmd, "prepare") == 0) return prepare(argc - first, argv + first);
    if (strcmp(cmd, "memory") == 0) return memory(argc - first, argv + first);
    if (strcmp(cmd, "train") == 0) return train(argc - first, argv + first, argv[0]);
    fprintf(stderr, "zerotrain: unknown command '%s' (commands: train, memory, prepare, blas, help)\n",
            cmd);
    return 1;
}
