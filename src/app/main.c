// zerotrain's command line: `train` (the default command), `eval`, `memory`, `plan`,
// `prepare`, `generate`, `export`, `blas`, `help`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "config.h"
#include "eval_cli.h"
#include "export_cli.h"
#include "generate_cli.h"
#include "launch_cli.h"
#include "launcher.h"
#include "memory_cli.h"
#include "plan_cli.h"
#include "prepare_cli.h"
#include "train_cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "zerotrain: trains GPT-2 across MPI ranks: data parallel with ZeRO-1, pipeline stages\n"
            "\n"
            "usage:\n"
            "  [mpirun -np N] zerotrain [train] [--flag value ...]   train (the default command)\n"
            "  [mpirun -np N] zerotrain eval [--resume CKPT | --init-from PATH] [--val-data FILE]\n"
            "                    [--val-batches N] [--pp N] [--tp N] [--json] [--flag value ...]\n"
            "                                 the loss and perplexity of a model over validation\n"
            "                                 tokens, without training (training's validation\n"
            "                                 pass; any layout); eval --help says more\n"
            "  zerotrain memory [--dp N] [--pp N] [--tp N] [--json] [--flag value ...]\n"
            "                                 the bytes every rank of that layout would need,\n"
            "                                 by category, without allocating (one process, no\n"
            "                                 mpirun); takes the train flags; --mem-limit checks\n"
            "                                 a budget per rank and advises\n"
            "  zerotrain plan --world N --device NAME --global-batch B [--json] [--flag value ...]\n"
            "                                 the fastest layouts of N ranks that fit, predicted\n"
            "                                 (plan --calibrate measures this machine); plan\n"
            "                                 --help says more\n"
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
            "  zerotrain export CKPT --out DIR [--dtype fp32|bf16]\n"
            "                                 merges a sharded checkpoint (any layout) into one\n"
            "                                 Hugging Face directory (with GPT-2's tokenizer\n"
            "                                 files when the vocabulary is 50257); fp32 unless\n"
            "                                 --dtype bf16\n"
            "  zerotrain launch -np N [COMMAND] [flags ...]\n"
            "                                 runs a command on N ranks of this machine through\n"
            "                                 mpirun, adding what a small machine or root needs\n"
            "  zerotrain help                 this text\n"
            "\n"
            "train ");
    zt_config_print_help(f);
}

// `zerotrain blas`: the library and kernels the CPU's products run on, after the start-up fix
// (zt_backends_start); `slow`: they are below what the CPU offers.
static int blas(int slow) {
    zt_backend cpu;
    if (zt_backend_open(&cpu, "cpu", &(zt_backend_options){0}) != ZT_OK) {
        zt_error_report(1);
        return 1;
    }
    char line[512];
    cpu.ops->describe(&cpu, line, sizeof line);
    printf("blas: %s\n", line);
    cpu.ops->write_json(&cpu, stdout);
    printf("\n");
    zt_backend_close(&cpu);
    return slow;
}

int main(int argc, char **argv) {
    // Before anything else (MPI_Init, the first product): may re-execute this binary with
    // OPENBLAS_CORETYPE set, where OpenBLAS fell back to generic kernels.
    zt_launcher_capture(); // before MPI_Init adds variables of its own
    int slow = zt_backends_start(argv);
    zt_launcher_watch(); // after the re-exec: a rank whose mpirun is killed stops at once
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
    if (help && strcmp(cmd, "eval") == 0) {
        zt_eval_usage(stdout);
        return 0;
    }
    if (help && strcmp(cmd, "memory") == 0) {
        zt_memory_usage(stdout);
        return 0;
    }
    if (help && strcmp(cmd, "plan") == 0) {
        zt_plan_usage(stdout);
        return 0;
    }
    if (help && strcmp(cmd, "export") == 0) {
        zt_export_usage(stdout);
        return 0;
    }
    if (help && strcmp(cmd, "launch") == 0) {
        zt_launch_usage(stdout);
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
    static const char *const k_one_process[] = {"prepare", "memory", "export", "plan"};
    for (size_t i = 0; i < sizeof k_one_process / sizeof *k_one_process; i++)
        if (strcmp(cmd, k_one_process[i]) == 0 && zt_launcher_size(NULL) > 1) {
            if (zt_launcher_rank() == 0)
                fprintf(stderr, "zerotrain: error: `zerotrain %s` runs in one process, but "
                                "this launch started %d: run it without mpirun or srun\n",
                        cmd, zt_launcher_size(NULL));
            return 1;
        }
    if (strcmp(cmd, "blas") == 0) return blas(slow);
    if (strcmp(cmd, "prepare") == 0) return zt_prepare_main(argc - first, argv + first);
    if (strcmp(cmd, "memory") == 0) return zt_memory_main(argc - first, argv + first);
    if (strcmp(cmd, "plan") == 0) return zt_plan_main(argc - first, argv + first);
    if (strcmp(cmd, "export") == 0) return zt_export_main(argc - first, argv + first);
    if (strcmp(cmd, "launch") == 0) return zt_launch_main(argc - first, argv + first);
    if (strcmp(cmd, "generate") == 0) return zt_generate_main(argc - first, argv + first);
    if (strcmp(cmd, "train") == 0) return zt_train_main(argc - first, argv + first, argv[0]);
    if (strcmp(cmd, "eval") == 0) return zt_eval_main(argc - first, argv + first, argv[0]);
    fprintf(stderr, "zerotrain: error: unknown command '%s' (commands: train, eval, memory, plan, "
                    "prepare, export, launch, generate, blas, help)\n",
            cmd);
    return 1;
}
