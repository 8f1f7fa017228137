// `zerotrain export CKPT --out DIR [--dtype fp32|bf16]`: a checkpoint of any layout as one
// Hugging Face directory.
#include "export_cli.h"

#include <string.h>

#include "ckpt.h"
#include "hf_export.h"
#include "outputs.h"

#define EXPORT_USAGE "zerotrain export CKPT --out DIR [--dtype fp32|bf16]"

void zt_export_usage(FILE *f) {
    fprintf(f, "usage: " EXPORT_USAGE "\n"
               "  merges a checkpoint written in any layout (a --ckpt-dir, whose latest or newest\n"
               "  complete step is taken, or one step-N directory) into one Hugging Face GPT-2\n"
               "  directory: model.safetensors, config.json (and GPT-2's tokenizer files for its\n"
               "  vocabulary). One process, no mpirun.\n"
               "  --dtype: the tensors' type in model.safetensors (default fp32: a checkpoint\n"
               "  holds fp32 master weights, also of a --param-dtype bf16 run; bf16 rounds each\n"
               "  value to nearest even and halves the file)\n");
}

// --dtype's value: fp32 or bf16; anything else is refused with one line naming the flag.
static int parse_dtype(const char *v, zt_dtype *dtype) {
    if (strcmp(v, "fp32") == 0) *dtype = ZT_F32;
    else if (strcmp(v, "bf16") == 0) *dtype = ZT_BF16;
    else {
        fprintf(stderr, "zerotrain: error: --dtype '%s' is not known: use one of fp32, bf16\n", v);
        return 0;
    }
    return 1;
}

int zt_export_main(int argc, char **argv) {
    const char *ckpt = NULL, *out = NULL;
    zt_dtype dtype = ZT_F32;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
        else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
            if (!parse_dtype(argv[++i], &dtype)) return 1;
        } else if (argv[i][0] != '-' && !ckpt) ckpt = argv[i];
        else {
            fprintf(stderr, "zerotrain: error: unexpected argument '%s' (usage: " EXPORT_USAGE
                            ")\n", argv[i]);
            return 1;
        }
    }
    if (!ckpt || !out) {
        fprintf(stderr, "zerotrain: error: usage: " EXPORT_USAGE "\n");
        return 1;
    }
    // before the merge, which reads every shard
    if (zt_outputs_check_export(ckpt, out) != ZT_OK) {
        zt_error_report(1);
        return 1;
    }
    if (zt_ckpt_export(ckpt, out, dtype) == ZT_OK) return 0;
    zt_error_report(1);
    return 1;
}
