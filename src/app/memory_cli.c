// `zerotrain memory`: the bytes every rank of a layout would need, planned in one process.
#include "memory_cli.h"

#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "grid.h"
#include "plan_spec.h"

// Plans with a million ranks take a few seconds and 200 MB; beyond that, refuse.
#define ZT_MEMORY_MAX_WORLD (1 << 20)

void zt_memory_usage(FILE *f) {
    fprintf(f, "usage: zerotrain memory [--dp N] [--pp N] [--tp N] [--json] [--mem-limit BYTES] "
               "[train flags ...]\n"
               "  the bytes every rank of that layout would need, by category, without\n"
               "  allocating (one process, no mpirun; --dp, --pp, --tp default to 1);\n"
               "  --mem-limit checks a budget per rank and advises changes that fit;\n"
               "  --backend cuda plans device memory, with --ranks-per-node and\n"
               "  --gpus-per-node saying which ranks share a GPU (their groups stage\n"
               "  through pinned host buffers; default: a GPU per rank, NCCL);\n"
               "  --json prints the plan as JSON. The train flags:\n\n");
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

int zt_memory_main(int argc, char **argv) {
    if (memory_plan(argc, argv) == ZT_OK) return 0;
    zt_error_report(1);
    return 1;
}
