// `zerotrain export CKPT --out DIR`: a checkpoint of any layout as one Hugging Face directory.
#include "export_cli.h"

#include <string.h>

#include "ckpt.h"
#include "hf_export.h"

void zt_export_usage(FILE *f) {
    fprintf(f, "usage: zerotrain export CKPT --out DIR\n"
               "  merges a checkpoint written in any layout (a --ckpt-dir, whose latest or newest\n"
               "  complete step is taken, or one step-N directory) into one Hugging Face GPT-2\n"
               "  directory: model.safetensors, config.json (and GPT-2's tokenizer files for its\n"
               "  vocabulary). One process, no mpirun.\n");
}

// `zerotrain export CKPT --out DIR`.
int zt_export_main(int argc, char **argv) {
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
