// `zerotrain eval`: the validation loss and perplexity of a model (a checkpoint, a Hugging
// Face or llm.c file, or random weights from a seed), in any layout, without training it:
// training's own validation pass (zt_evaluate, train.c), so the number equals the val loss a
// training run logs for the same weights.
#include "eval_cli.h"

#include <math.h>
#include <string.h>

#include "train.h"
#include "train_cli.h"

// The options eval uses: the model, where its weights come from, the batches it reads, the
// layout and the machine. The rest are training's, refused on the command line (accepted
// and ignored they would mislead: `--steps 0`, `--lr 0`); a --config file shared with
// training may hold them (reset to their defaults there).
static const char *const k_eval_options[] = {
    "model",     "n-layer",   "n-head",     "n-embd",      "vocab",  "n-ctx",
    "micro-batch", "seq",     "grad-accum", "seed",        "data",   "val-data",
    "val-batches", "init-from", "resume",   "dp",          "pp",     "tp",
    "partition", "loss-chunk", "threads",   "backend",     "tf32",   "mem-limit",
    "param-dtype", "tensor-path", "bf16-gemm", "cuda-attention", "comm-algo",
    "comm-stage-kib", "comm-max-count", "comm-timeout", "comm-timeout-floor", NULL};

void zt_eval_usage(FILE *f) {
    fprintf(f,
            "usage: [mpirun -np N] zerotrain eval [--resume CKPT | --init-from PATH] "
            "[--val-data FILE | --data FILE]\n"
            "                     [--val-batches N] [--micro-batch N] [--grad-accum N] [--seq N]\n"
            "                     [--pp N] [--tp N] [--dp N] [--json] [model flags]\n"
            "\n"
            "The loss (mean cross-entropy per token, in nats) and perplexity of a model over\n"
            "--val-batches global batches (micro-batch x grad-accum x dp sequences of --seq\n"
            "tokens) of a token file, through training's own validation pass: the number a\n"
            "training run logs as val_loss for the same weights and the same global batch.\n"
            "  --resume CKPT      the weights of a checkpoint (any layout; its optimizer state is\n"
            "                     not read)\n"
            "  --init-from PATH   a Hugging Face GPT-2 directory or .safetensors, or an llm.c fp32\n"
            "                     file; without either, random weights from --seed and the model\n"
            "                     flags\n"
            "  --val-data FILE    the tokens (else --data, else the embedded default text's\n"
            "                     validation split, as training validates on)\n"
            "  --val-batches N    global batches to read (default 8)\n"
            "  --pp, --tp, --dp   the layout, under mpirun -np dp*pp*tp (the loss is the one rank's\n"
            "                     to float-reassociation accuracy)\n"
            "  --json             print the result as one JSON object instead of the line\n"
            "  --param-dtype bf16 the forward in bf16 (bf16 weights, products on bf16 operands),\n"
            "                     as a bf16 run validates; default fp32\n"
            "Also: --micro-batch, --grad-accum, --seq, --partition, --loss-chunk, --threads,\n"
            "--backend, --tf32, --bf16-gemm, --mem-limit, --config (train --help describes them).\n"
            "Training options (--steps, --lr, ...) are refused.\n");
}

// Takes --json out of argv (into *json); the rest (rest, *n) are train's flags, refused
// where eval does not use them.
static zt_status eval_flags(int argc, char **argv, char **rest, int *n, int *json) {
    *n = 0;
    *json = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            *json = 1;
            continue;
        }
        rest[(*n)++] = argv[i];
        if (strncmp(a, "--", 2) != 0) continue; // a value, or what train's parser refuses
        size_t len = strcspn(a + 2, "=");
        int used = len == 6 && strncmp(a + 2, "config", 6) == 0;
        for (const char *const *k = k_eval_options; *k && !used; k++)
            used = strlen(*k) == len && strncmp(a + 2, *k, len) == 0;
        if (!used && zt_config_is_option(a + 2, len))
            return zt_errorf("%.*s is a training option; eval does not use it: leave it out "
                             "(zerotrain eval --help lists eval's options)", (int)(len + 2), a);
    }
    return ZT_OK;
}

// Rank 0: the result, as one line or (--json) one JSON object.
static void print_result(const zt_config *cfg, const zt_eval_result *r, int json) {
    double tokens = (double)r->sequences * cfg->seq;
    const char *weights = cfg->resume[0] ? cfg->resume : cfg->init_from;
    if (json) {
        printf("{\"loss\":%.9g,\"perplexity\":%.9g,\"sequences\":%llu,\"tokens\":%.0f,"
               "\"val_batches\":%d,\"seq\":%d,\"data\":", r->loss, exp(r->loss),
               (unsigned long long)r->sequences, tokens, r->val_batches, cfg->seq);
        zt_json_string(stdout, r->data);
        printf(",\"weights\":");
        if (weights[0]) zt_json_string(stdout, weights);
        else printf("null");
        printf(",\"step\":%d,\"seed\":%llu,\"world\":%d,\"dp\":%d,\"pp\":%d,\"tp\":%d}\n",
               r->step, (unsigned long long)cfg->seed, r->dp * r->pp * r->tp, r->dp, r->pp,
               r->tp);
        return;
    }
    char from[ZT_PATH_MAX + 64];
    if (cfg->resume[0]) snprintf(from, sizeof from, "%s (step %d)", cfg->resume, r->step);
    else if (weights[0]) snprintf(from, sizeof from, "%s", weights);
    else snprintf(from, sizeof from, "random (--seed %llu)", (unsigned long long)cfg->seed);
    printf("eval: loss %.6f | perplexity %.4f | %.0f tokens (%llu sequences of %d) of %s | "
           "weights %s | dp %d x pp %d x tp %d\n", r->loss, exp(r->loss), tokens,
           (unsigned long long)r->sequences, cfg->seq, r->data, from, r->dp, r->pp, r->tp);
}

int zt_eval_main(int argc, char **argv, const char *argv0) {
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    ZT_ASSERT(rest);
    int n = 0, json = 0, start = 0;
    zt_comm world;
    zt_config cfg;
    zt_eval_result r;
    if (!zt_run_init_world(&world)) return 1;
    zt_status s = zt_comm_agree(&world, eval_flags(argc, argv, rest, &n, &json));
    if (s == ZT_OK) s = zt_run_options(&world, &cfg, n, rest, k_eval_options, &start);
    if (s == ZT_OK) s = zt_evaluate(&cfg, &world, argv0, &r);
    if (s == ZT_OK && world.rank == 0) print_result(&cfg, &r, json);
    fflush(stdout);
    free(rest);
    return zt_run_end(&world, s);
}
