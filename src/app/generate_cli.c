// `zerotrain generate`: reads the options, the model (a checkpoint or a seed) and the
// prompt, then decodes on one rank or over --tp ranks, rank 0 streaming each new token.
#include "generate_cli.h"

#include <errno.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpe.h"
#include "comm_mpi.h"
#include "backend.h"
#include "config.h"
#include "generate.h"
#include "grid.h"
#include "hf_import.h"
#include "partition.h"


void zt_generate_usage(FILE *f) {
    char vocab[1024];
    zt_bpe_default_vocab(vocab, sizeof vocab);
    fprintf(f,
            "usage: [mpirun -np N] zerotrain generate [--init-from PATH] [--prompt TEXT | "
            "--prompt-ids 1,2,3]\n"
            "                         [--max-new N] [--temperature T] [--top-k K] [--top-p P]\n"
            "                         [--seed S] [--tp N] [--pp N [--partition SPEC]] [--ids]\n"
            "                         [--vocab-file FILE] [train's model flags]\n"
            "\n"
            "Continues a prompt with a KV cache, streaming each new token to stdout.\n"
            "  --init-from PATH   a Hugging Face GPT-2 directory (e.g. --save's), a .safetensors\n"
            "                     file or an llm.c fp32 file; without it, random weights from\n"
            "                     --seed with the model flags (--model, --n-layer, ...)\n"
            "  --prompt TEXT      text: GPT-2 BPE when the vocabulary is 50257, bytes when 256\n"
            "  --prompt-ids LIST  token ids, comma-separated (default: <|endoftext|> for GPT-2)\n"
            "  --max-new N        new tokens at most (default 64); also stops at <|endoftext|>\n"
            "                     (50256, vocabulary 50257) and when n_ctx positions are full\n"
            "  --temperature T    0 = greedy (argmax, ties to the lowest id); default 1\n"
            "  --top-k K          sample among the K most likely (default 0 = all)\n"
            "  --top-p P          then among the most likely whose probability reaches P\n"
            "                     (default 1 = all)\n"
            "  --seed S           the sampler's seed (and the random weights' without --init-from)\n"
            "  --tp N             tensor parallel over N ranks: mpirun -np N (the tokens are the\n"
            "                     same as on one rank)\n"
            "  --pp N             the blocks in N pipeline stages, split as train's --partition\n"
            "                     says (default uniform): mpirun -np N*tp (the same tokens too)\n"
            "  --ids              print token ids instead of text\n"
            "  --param-dtype bf16 decode in bf16 (the weights rounded to bf16, products on bf16\n"
            "                     operands with fp32 sums), as a bf16 run computes; default fp32\n"
            "  --bf16-gemm PATH   those products through oneDNN (onednn) or widened to fp32\n"
            "                     (fallback); default auto, as train's --bf16-gemm\n"
            "  --vocab-file FILE  GPT-2's tokenizer file, gpt2.tiktoken (default %s);\n"
            "                     --vocab N is the model's vocabulary size, as in train\n"
            "  --backend cuda     on GPU 0 (build/zerotrain-cuda; one rank, no --tp or --pp yet)\n"
            "A summary (tokens, tokens/s) goes to stderr.\n",
            vocab);
}

typedef struct {
    const char *prompt, *prompt_ids, *vocab;
    int max_new, ids;
    zt_sampler smp;
} gen_opts;

static zt_status parse_int(const char *flag, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return zt_errorf("%s %s: expected a whole number from %ld to %ld", flag, v, lo, hi);
    *out = x;
    return ZT_OK;
}
static zt_status parse_float(const char *flag, const char *v, double lo, double hi, float *out) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi))
        return zt_errorf("%s %s: expected a number from %g to %g", flag, v, lo, hi);
    *out = (float)x;
    return ZT_OK;
}

// Train's options that generation uses: the model and where its weights come from, the
// seed, the ranks, threads and backend. Any other train flag (--lr, --steps, ...) would be
// accepted and ignored: refused instead. (A --config file may hold training keys: a file
// shared with the training run, so those are not checked.)
static zt_status used_by_generate(const char *arg) {
    static const char *const used[] = {"model", "n-layer", "n-head",  "n-embd",  "vocab",
                                       "n-ctx", "init-from", "seed", "tp",      "dp",
                                       "pp",    "threads", "backend", "tf32",    "config",
                                       "partition", "param-dtype", "bf16-gemm"};
    if (strncmp(arg, "--", 2) != 0) return ZT_OK; // a value, or what train's parser refuses
    size_t n = strcspn(arg + 2, "=");
    for (size_t k = 0; k < sizeof used / sizeof *used; k++)
        if (strlen(used[k]) == n && strncmp(arg + 2, used[k], n) == 0) return ZT_OK;
    return zt_errorf("%.*s is a training option; generate does not use it: leave it out "
                     "(zerotrain generate --help lists generate's options)",
                     (int)(n + 2), arg);
}

// Takes generate's own options out of argv; the rest (rest, *n_rest) are train's flags.
static zt_status parse_opts(gen_opts *o, int argc, char **argv, char **rest, int *n_rest) {
    memset(o, 0, sizeof *o);
    o->max_new = 64;
    o->smp = (zt_sampler){1.0f, 0, 1.0f, 0};
    *n_rest = 0;
    static const char *const with_value[] = {"--prompt", "--prompt-ids", "--max-new",
                                             "--temperature", "--top-k", "--top-p", "--vocab-file"};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--ids") == 0) {
            o->ids = 1;
            continue;
        }
        // --vocab is train's vocabulary size, a number; the tokenizer's file is --vocab-file
        if (strcmp(a, "--vocab") == 0 && i + 1 < argc &&
            (!argv[i + 1][0] || strspn(argv[i + 1], "0123456789") != strlen(argv[i + 1])))
            return zt_errorf("--vocab %s: --vocab is the model's vocabulary size, a whole number "
                             "as in train; GPT-2's tokenizer file is --vocab-file FILE",
                             argv[i + 1]);
        int mine = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            mine |= strcmp(a, with_value[k]) == 0;
        if (!mine) {
            ZT_TRY(used_by_generate(a));
            rest[(*n_rest)++] = argv[i];
            continue;
        }
        if (i + 1 >= argc) return zt_errorf("%s needs a value", a);
        const char *v = argv[++i];
        long x;
        if (strcmp(a, "--prompt") == 0) o->prompt = v;
        else if (strcmp(a, "--prompt-ids") == 0) o->prompt_ids = v;
        else if (strcmp(a, "--vocab-file") == 0) o->vocab = v;
        else if (strcmp(a, "--max-new") == 0) {
            ZT_TRY(parse_int(a, v, 0, ZT_MAX_CTX, &x));
            o->max_new = (int)x;
        } else if (strcmp(a, "--top-k") == 0) {
            ZT_TRY(parse_int(a, v, 0, 1 << 24, &x));
            o->smp.top_k = (int)x;
        } else if (strcmp(a, "--temperature") == 0) {
            ZT_TRY(parse_float(a, v, 0.0, 1e6, &o->smp.temperature));
        } else if (strcmp(a, "--top-p") == 0) {
            ZT_TRY(parse_float(a, v, 0.0, 1.0, &o->smp.top_p));
            if (!(o->smp.top_p > 0.0f)) return zt_errorf("--top-p %s: must be above 0", v);
        }
    }
    if (o->prompt && o->prompt_ids)
        return zt_errorf("give --prompt TEXT or --prompt-ids LIST, not both");
    return ZT_OK;
}

// The model shape from --init-from, checked against any shape flag given (as train does).
static zt_status read_config(zt_config *cfg, int argc, char **argv) {
    ZT_TRY(zt_config_parse(cfg, argc, argv));
    if (cfg->resume[0])
        return zt_errorf("generate takes --init-from PATH (a --save directory, a Hugging Face "
                         "directory or an llm.c file), not --resume; `zerotrain export CKPT "
                         "--out DIR` turns a checkpoint into a directory");
    if (cfg->init_from[0]) {
        zt_model_shape s;
        int head_known = 1;
        ZT_TRY(zt_init_read_shape(cfg->init_from, &s, &head_known));
        ZT_TRY(zt_config_adopt_shape(cfg, &s, head_known, cfg->init_from));
    }
    cfg->seq = cfg->n_ctx; // train's batch options do not apply
    cfg->micro_batch = 1;
    ZT_TRY(zt_config_validate(cfg));
    // generate keeps the grid's MPI tensor paths, which take host memory (train opens the
    // device paths, grid_data.h): a device backend generates on one rank
    const zt_backend_caps *caps = zt_backend_caps_of(cfg->backend);
    if (caps && (!caps->multi_rank || caps->device_memory) && cfg->tp > 1)
        return zt_errorf("generate --backend %s runs on one rank for now (--tp %d given): "
                         "use --backend cpu for --tp", cfg->backend, cfg->tp);
    if (caps && !caps->bf16 && cfg->param_dtype == ZT_BF16)
        return zt_errorf("--param-dtype bf16: the %s backend has no bf16 kernels yet; use "
                         "--backend cpu or --param-dtype fp32", cfg->backend);
    if (caps && (!caps->multi_rank || caps->device_memory) && cfg->pp > 1)
        return zt_errorf("generate --backend %s runs on one rank for now (--pp %d given): "
                         "use --backend cpu for --pp", cfg->backend, cfg->pp);
    if (cfg->dp != 0 && cfg->dp != 1)
        return zt_errorf("generate splits the model over --pp stages and --tp ranks, not over "
                         "data (--dp %d given): leave --dp out", cfg->dp);
    if (cfg->n_head % cfg->tp != 0)
        return zt_errorf("--tp %d does not divide n_head %d: each tp rank takes whole heads",
                         cfg->tp, cfg->n_head);
    return ZT_OK;
}

// The prompt's ids: --prompt-ids, or --prompt encoded by the vocabulary's tokenizer, or
// <|endoftext|> alone for GPT-2. *bpe is loaded when the vocabulary is GPT-2's and text goes
// in or out. The caller frees ids and *bpe.
static zt_status read_prompt(const gen_opts *o, const zt_config *cfg, zt_bpe_ids *ids,
                             zt_bpe **bpe) {
    *bpe = NULL;
    int V = cfg->vocab;
    if (o->vocab && V != ZT_GPT2_VOCAB)
        return zt_errorf("--vocab-file %s names GPT-2's tokenizer file, but this model's "
                         "vocabulary is %d ids, not GPT-2's %d: leave --vocab-file out",
                         o->vocab, V, ZT_GPT2_VOCAB);
    if (V == ZT_GPT2_VOCAB && (o->prompt || !o->ids)) {
        char def[1024];
        zt_bpe_default_vocab(def, sizeof def);
        ZT_TRY(zt_bpe_load(bpe, o->vocab ? o->vocab : def));
    }
    if (o->prompt_ids) {
        const char *p = o->prompt_ids;
        for (int k = 1;; k++) {
            char *end;
            errno = 0;
            long x = strtol(p, &end, 10);
            if (end == p || errno)
                return zt_errorf("--prompt-ids %s: item %d is not a number (give ids like 1,2,3)",
                                 o->prompt_ids, k);
            if (x < 0 || x >= V)
                return zt_errorf("--prompt-ids: token %ld (item %d) is outside the model's "
                                 "vocabulary of %d ids (0 to %d)", x, k, V, V - 1);
            if (ids->n == ids->cap) {
                ids->cap = ids->cap ? 2 * ids->cap : 64;
                ids->ids = realloc(ids->ids, ids->cap * sizeof *ids->ids);
                ZT_ASSERT(ids->ids);
            }
            ids->ids[ids->n++] = (int32_t)x;
            while (*end == ' ') end++;
            if (*end == 0) break;
            if (*end != ',')
                return zt_errorf("--prompt-ids %s: expected a comma after item %d", o->prompt_ids,
                                 k);
            p = end + 1;
        }
    } else if (o->prompt) {
        size_t n = strlen(o->prompt);
        if (V == ZT_GPT2_VOCAB) {
            zt_bpe_encode(*bpe, o->prompt, n, ZT_BPE_INVALID_KEEP, ids);
        } else if (V == ZT_BYTES_VOCAB) {
            ids->cap = n ? n : 1;
            ids->ids = malloc(ids->cap * sizeof *ids->ids);
            ZT_ASSERT(ids->ids);
            for (size_t i = 0; i < n; i++) ids->ids[ids->n++] = (unsigned char)o->prompt[i];
        } else {
            return zt_errorf("--prompt takes text for a vocabulary of %d (GPT-2 BPE) or %d "
                             "(bytes); this model's is %d: give --prompt-ids",
                             ZT_GPT2_VOCAB, ZT_BYTES_VOCAB, V);
        }
    } else if (V == ZT_GPT2_VOCAB) {
        ids->cap = 1;
        ids->ids = malloc(sizeof *ids->ids);
        ZT_ASSERT(ids->ids);
        ids->ids[ids->n++] = ZT_BPE_GPT2_EOT;
    }
    if (ids->n == 0)
        return zt_errorf("the prompt is empty: give --prompt TEXT or --prompt-ids LIST");
    if (ids->n >= (size_t)cfg->n_ctx)
        return zt_errorf("the prompt is %zu tokens; the model has n_ctx = %d positions, so a "
                         "prompt may hold at most %d (one position is left for a new token)",
                         ids->n, cfg->n_ctx, cfg->n_ctx - 1);
    return ZT_OK;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// One new token to stdout: its text (GPT-2 bytes, or the byte itself), or its id.
static void emit(const gen_opts *o, const zt_bpe *bpe, int V, int32_t tok, int first) {
    zt_token_print(stdout, o->ids ? NULL : bpe, o->ids ? 0 : V, tok, first);
    fflush(stdout);
}

static zt_status run(const gen_opts *o, const zt_config *cfg, const zt_grid *g,
                     const zt_partition *part, const zt_backend *be) {
    zt_bpe_ids prompt = {0};
    zt_bpe *bpe = NULL;
    zt_decoder d;
    memset(&d, 0, sizeof d);
    float *logits = NULL;
    int32_t *idx = NULL;
    double *prob = NULL;
    zt_status s = zt_comm_agree(&g->world_comm, read_prompt(o, cfg, &prompt, &bpe));
    zt_model_shape shape = zt_config_shape(cfg);
    if (s == ZT_OK) {
        s = zt_decoder_init(&d, be, &shape, part->first[g->pp_rank], part->first[g->pp_rank + 1],
                            g->tp, g->tp_rank, g->tp_data, g->pp_data, cfg->param_dtype);
        if (s == ZT_OK && cfg->init_from[0]) s = zt_init_load(&d.model, cfg->init_from);
        else if (s == ZT_OK) zt_gpt2_init_random(&d.model, cfg->seed);
        s = zt_comm_agree(&g->world_comm, s);
    }
    if (s == ZT_OK) {
        int V = shape.vocab, eot = V == ZT_GPT2_VOCAB ? ZT_BPE_GPT2_EOT : -1;
        logits = malloc((size_t)shape.padded_vocab * sizeof *logits);
        idx = malloc((size_t)V * sizeof *idx);
        prob = malloc((size_t)V * sizeof *prob);
        ZT_ASSERT(logits && idx && prob);
        zt_sampler smp = o->smp;
        smp.seed = cfg->seed;
        double t0 = now_s();
        zt_decoder_feed(&d, prompt.ids, (int)prompt.n, logits); // n < n_ctx: read_prompt
        double t1 = now_s();
        int n_new = 0;
        for (int i = 0; i < o->max_new; i++) {
            int32_t tok = zt_sample(&smp, logits, V, (uint64_t)d.pos, idx, prob);
            // every rank holds the same gathered row and draws the same token: check it
            if (g->world > 1) {
                int32_t mine[2] = {tok, -tok}, all[2];
                zt_comm_all_reduce(&g->world_comm, mine, all, 2, ZT_I32, ZT_REDUCE_MAX, NULL);
                ZT_ASSERTF(all[0] == -all[1], "ranks sampled different tokens (%d .. %d)",
                           -all[1], all[0]);
            }
            if (g->rank == 0) emit(o, bpe, V, tok, i == 0);
            n_new++;
            // the token now fills position d.pos; feed it only if another can follow it
            if (tok == eot || i + 1 == o->max_new || d.pos + 1 >= shape.n_ctx) break;
            zt_decoder_step(&d, tok, logits);
        }
        double t2 = now_s();
        if (g->rank == 0) {
            putchar('\n');
            fflush(stdout);
            // the first new token comes with the prompt's logits: the rate counts the
            // decoder steps after it
            double dec = t2 - t1;
            fprintf(stderr, "generate: prompt %zu tokens in %.3f s; %d new tokens in %.3f s "
                            "(%.1f tokens/s, batch 1, pp %d, tp %d, %d threads per rank)\n",
                    prompt.n, t1 - t0, n_new, dec, n_new > 1 && dec > 0 ? (n_new - 1) / dec : 0.0,
                    g->pp, g->tp, omp_get_max_threads());
        }
    }
    free(logits);
    free(idx);
    free(prob);
    zt_decoder_free(&d);
    zt_bpe_free(bpe);
    zt_bpe_ids_free(&prompt);
    return s;
}

int zt_generate_main(int argc, char **argv) {
    zt_comm world;
    zt_comm_mpi_init_world(&world, NULL, NULL);
    zt_set_fatal_hook(zt_comm_mpi_abort);
    gen_opts o;
    zt_config cfg;
    zt_grid g;
    memset(&g, 0, sizeof g);
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    ZT_ASSERT(rest);
    int n_rest = 0;
    zt_status s = parse_opts(&o, argc, argv, rest, &n_rest);
    if (s == ZT_OK) s = read_config(&cfg, n_rest, rest);
    zt_comm_mpi_settings cs; // the MPI backend's, from the options
    if (s == ZT_OK) s = zt_config_comm_settings(&cfg, &cs);
    s = zt_comm_agree(&world, s);
    if (s == ZT_OK) zt_comm_mpi_settings_use(&cs);
    if (s == ZT_OK && world.size != cfg.pp * cfg.tp)
        s = zt_errorf("generate runs one process per (stage, tp rank), but this job has %d for "
                      "--pp %d --tp %d: launch mpirun -np %d", world.size, cfg.pp, cfg.tp,
                      cfg.pp * cfg.tp);
    zt_partition part = {0};
    if (s == ZT_OK && zt_partition_needs_costs(cfg.partition))
        s = zt_errorf("--partition memory balances training's memory per stage; generate takes "
                      "uniform, parameters or unit ranges");
    if (s == ZT_OK) {
        zt_model_shape shape = zt_config_shape(&cfg);
        s = zt_partition_build(&part, cfg.partition, &shape, cfg.pp, NULL);
    }
    zt_backend be = {0};
    zt_backend_options bo = {
        .device = 0, .threads = cfg.threads, .tf32 = cfg.tf32, .bf16_gemm = cfg.bf16_gemm,
        .attention = cfg.cuda_attention};
    if (s == ZT_OK) s = zt_backend_open(&be, cfg.backend, &bo);
    if (s == ZT_OK) s = zt_grid_init(&g, &world, 1, cfg.pp, cfg.tp);
    if (s == ZT_OK) s = run(&o, &cfg, &g, &part, &be);
    zt_error_report(s != ZT_OK && world.rank == 0);
    zt_partition_free(&part);
    free(rest);
    zt_grid_free(&g);
    zt_backend_close(&be); // after the decoder's memory
    zt_comm_free(&world);
    zt_comm_mpi_finalize();
    return s == ZT_OK ? 0 : 1;
}
