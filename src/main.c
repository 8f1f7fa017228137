// zerotrain's command line: `train` (the default command), `memory`, `prepare`, `help`.
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "config.h"
#include "data.h"
#include "ckpt.h"
#include "grid.h"
#include "hf_import.h"
#include "planner.h"
#include "train.h"

// Plans with a million ranks take a few seconds and 200 MB; beyond that, refuse.
#define ZT_MEMORY_MAX_WORLD (1 << 20)

static void usage(FILE *f) {
    fprintf(f,
            "zerotrain: trains GPT-2 across MPI ranks: data parallel with ZeRO-1, pipeline stages\n"
            "\n"
            "usage:\n"
            "  [mpirun -np N] zerotrain [train] [--flag value ...]   train (the default command)\n"
            "  zerotrain memory --dp N [--pp N] [--tp N] [--json] [--flag value ...]\n"
            "                                 the bytes every rank of that layout would need,\n"
            "                                 by category, without allocating (one process, no\n"
            "                                 mpirun); takes the train flags; --mem-limit checks\n"
            "                                 a budget per rank and advises\n"
            "  zerotrain prepare --text FILE --out TRAIN.bin [--val-out VAL.bin] [--val-frac F]\n"
            "                                 byte-level tokens of a text file (vocab 256)\n"
            "  zerotrain export CKPT --out DIR\n"
            "                                 merges a sharded checkpoint (any layout) into one\n"
            "                                 Hugging Face directory\n"
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
    if (cfg.dp < 1)
        return zt_errorf("zerotrain memory plans a whole layout in one process: give the data-"
                         "parallel degree with --dp (and --pp, --tp when not 1), e.g. --dp 8 "
                         "--pp 2");
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
    if (cfg->resume[0]) {
        ZT_TRY(zt_ckpt_read_shape(cfg->resume, &s));
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
    if (zt_ckpt_export(ckpt, out) == ZT_OK) return 0;
    zt_error_report(1);
    return 1;
}

static int train(int argc, char **argv, const char *argv0) {
    zt_comm world;
    zt_comm_mpi_init_world(&world, NULL, NULL);
    zt_set_fatal_hook(zt_comm_mpi_abort);
    zt_config cfg;
    // A config file may be missing on some nodes only: agree before going on.
    zt_status s = zt_comm_agree(&world, zt_config_parse(&cfg, argc, argv));
    // --param-dtype bf16 is for `zerotrain memory` until the GPU backend exists
    if (s == ZT_OK) s = zt_config_check_trainable(&cfg);
    if (s == ZT_OK) s = zt_comm_agree(&world, adopt_file_shape(&cfg));
    if (s == ZT_OK) s = zt_train(&cfg, &world, argv0);
    zt_error_report(s != ZT_OK && world.rank == 0);
    zt_comm_free(&world);
    zt_comm_mpi_finalize();
    return s == ZT_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *cmd = "train";
    int first = 1;
    if (argc > 1 && argv[1][0] != '-') {
        cmd = argv[1];
        first = 2;
    }
    for (int i = first; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) cmd = "help";
    if (strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "prepare") == 0) return prepare(argc - first, argv + first);
    if (strcmp(cmd, "memory") == 0) return memory(argc - first, argv + first);
    if (strcmp(cmd, "export") == 0) return export_cmd(argc - first, argv + first);
    if (strcmp(cmd, "train") == 0) return train(argc - first, argv + first, argv[0]);
    fprintf(stderr, "zerotrain: unknown command '%s' (commands: train, memory, prepare, export, help)\n",
            cmd);
    return 1;
}
