// The option table, and what reads it by name: lookup, "did you mean", the ranks' comparison.
#include "config_options.h"

#include "backend.h" // the backends by name, and what each supports

#include <limits.h>
#include <string.h>

#define FIELD(f) offsetof(zt_config, f), sizeof(((zt_config *)0)->f)

// The enum options' names, in the order --help and the messages list them.
static const zt_enum_name k_optims[] = {
    {"adamw", ZT_OPTIM_ADAMW}, {"adamw8bit", ZT_OPTIM_ADAMW8BIT}, {NULL, 0}};
static const zt_enum_name k_lr_schedules[] = {
    {"constant", ZT_LR_CONSTANT}, {"cosine", ZT_LR_COSINE}, {NULL, 0}};
static const zt_enum_name k_schedules[] = {
    {"1f1b", ZT_SCHED_1F1B}, {"gpipe", ZT_SCHED_GPIPE}, {"zb-h1", ZT_SCHED_ZB_H1},
    {"interleaved", ZT_SCHED_INTERLEAVED}, {NULL, 0}};
static const zt_enum_name k_recomputes[] = {{"none", ZT_RECOMPUTE_NONE},
                                            {"selective", ZT_RECOMPUTE_SELECTIVE},
                                            {"full", ZT_RECOMPUTE_FULL},
                                            {NULL, 0}};
static const zt_enum_name k_dtypes[] = {{"fp32", ZT_F32}, {"bf16", ZT_BF16}, {NULL, 0}};
static const zt_enum_name k_on_off[] = {{"on", 1}, {"off", 0}, {NULL, 0}};
static const zt_enum_name k_tensor_paths[] = {
    {"auto", ZT_TENSOR_PATH_AUTO}, {"staged", ZT_TENSOR_PATH_STAGED}, {NULL, 0}};
static const zt_enum_name k_cuda_attentions[] = {
    {"blocked", ZT_CUDA_ATTENTION_BLOCKED}, {"rows", ZT_CUDA_ATTENTION_ROWS},
    {"flash", ZT_CUDA_ATTENTION_FLASH}, {"auto", ZT_CUDA_ATTENTION_AUTO}, {NULL, 0}};
static const zt_enum_name k_bf16_gemms[] = {{"auto", ZT_BF16_GEMM_AUTO},
                                            {"onednn-matmul", ZT_BF16_GEMM_DNNL_MATMUL},
                                            {"onednn", ZT_BF16_GEMM_DNNL},
                                            {"fallback", ZT_BF16_GEMM_FALLBACK},
                                            {NULL, 0}};

// Every option, once. The shape keys default to 0, which the preset always replaces.
const opt_desc zt_opts[] = {
    {"model", OPT_STR, FIELD(model), "tiny", "NAME", NULL, NULL, 0, "model",
     "preset for the shape keys not given explicitly"},
    {"n-layer", OPT_INT, FIELD(n_layer), "0", "N", NULL, NULL, 1, "model",
     "transformer blocks (L)"},
    {"n-head", OPT_INT, FIELD(n_head), "0", "N", NULL, NULL, 1, "model", "attention heads (NH)"},
    {"n-embd", OPT_INT, FIELD(n_embd), "0", "N", NULL, NULL, 1, "model", "channels (C)"},
    {"vocab", OPT_INT, FIELD(vocab), "0", "N", NULL, NULL, 1, "model",
     "vocabulary size (V)"},
    {"n-ctx", OPT_INT, FIELD(n_ctx), "0", "N", NULL, NULL, 1, "model",
     "learned positions (longest --seq)"},

    {"micro-batch", OPT_INT, FIELD(micro_batch), "8", "N", NULL, NULL, 0, "batch",
     "sequences per micro-batch (B)"},
    {"seq", OPT_INT, FIELD(seq), "128", "N", NULL, NULL, 0, "batch", "tokens per sequence (T)"},
    {"grad-accum", OPT_INT, FIELD(grad_accum), "1", "N", NULL, NULL, 0, "batch",
     "micro-batches per step per dp rank"},
    {"steps", OPT_INT, FIELD(steps), "200", "N", NULL, NULL, 0, "batch", "optimizer steps"},

    {"optim", OPT_ENUM, FIELD(optim), "adamw", "NAME", NULL, k_optims, 0, "optimizer",
     "optimizer"},
    {"optim-block", OPT_INT, FIELD(optim_block), "256", "N", NULL, NULL, 0, "optimizer",
     "adamw8bit: values per quantization block (bitsandbytes: 256; a power of two, 64-256)"},
    {"optim-min-8bit", OPT_INT, FIELD(optim_min_8bit), "4096", "N", NULL, NULL, 0, "optimizer",
     "adamw8bit: tensors with fewer values keep fp32 state (bitsandbytes: 4096)"},
    {"optim-fp32-embedding", OPT_BOOL, FIELD(optim_fp32_embedding), "false", "", NULL, NULL, 0,
     "optimizer", "adamw8bit: keep the token embedding's state in fp32"},
    {"lr", OPT_FLOAT, FIELD(lr), "6e-4", "X", NULL, NULL, 0, "optimizer", "peak learning rate"},
    {"lr-final-frac", OPT_FLOAT, FIELD(lr_final_frac), "0.1", "X", NULL, NULL, 0, "optimizer",
     "final learning rate as a fraction of --lr"},
    {"lr-schedule", OPT_ENUM, FIELD(lr_schedule), "cosine", "NAME", NULL, k_lr_schedules, 0,
     "optimizer", "decay after warmup"},
    {"warmup", OPT_INT, FIELD(warmup), "20", "N", NULL, NULL, 0, "optimizer",
     "linear warmup steps"},
    {"weight-decay", OPT_FLOAT, FIELD(weight_decay), "0.1", "X", NULL, NULL, 0, "optimizer",
     "AdamW decoupled weight decay (matrices only)"},
    {"beta1", OPT_FLOAT, FIELD(beta1), "0.9", "X", NULL, NULL, 0, "optimizer",
     "AdamW first-moment decay"},
    {"beta2", OPT_FLOAT, FIELD(beta2), "0.95", "X", NULL, NULL, 0, "optimizer",
     "AdamW second-moment decay"},
    {"eps", OPT_FLOAT, FIELD(eps), "1e-8", "X", NULL, NULL, 0, "optimizer", "AdamW epsilon"},
    {"grad-clip", OPT_FLOAT, FIELD(grad_clip), "1.0", "X", NULL, NULL, 0, "optimizer",
     "clip the global gradient norm to this (0 = off)"},
    {"seed", OPT_U64, FIELD(seed), "1337", "N", NULL, NULL, 0, "optimizer",
     "random seed (initialization, shuffling)"},

    {"data", OPT_STR, FIELD(data), "", "PATH", NULL, NULL, 0, "data",
     "training tokens (llm.c .bin format): a file, or shards as a comma-separated list or a "
     "quoted glob ('dir/*_train_*.bin', in name order), one epoch over all; if not set, the "
     "embedded default text, with its validation split"},
    {"val-data", OPT_STR, FIELD(val_data), "", "PATH", NULL, NULL, 0, "data",
     "validation tokens, a file or shards as --data (if not set: with --data, no validation; "
     "without, the default text's validation split)"},
    {"val-every", OPT_INT, FIELD(val_every), "50", "N", NULL, NULL, 0, "data",
     "validate every N steps (0 = never)"},
    {"val-batches", OPT_INT, FIELD(val_batches), "0", "N", NULL, NULL, 0, "data",
     "global batches per validation (the same samples whatever the layout; 0 = as many whole "
     "global batches as the validation data holds, at most 8, at least 1)"},
    {"sample-every", OPT_INT, FIELD(sample_every), "0", "N", NULL, NULL, 0, "data",
     "every N steps and at the end, print a sampled continuation of the training data's "
     "first token (temperature 1, --seed; 0 = never)"},
    {"sample-len", OPT_INT, FIELD(sample_len), "64", "N", NULL, NULL, 0, "data",
     "tokens per --sample-every sample"},
    {"shuffle", OPT_BOOL, FIELD(shuffle), "false", "", NULL, NULL, 0, "data",
     "shuffle the training sequences (--shuffle=false: off)"},
    {"init-from", OPT_STR, FIELD(init_from), "", "PATH", NULL, NULL, 0, "data",
     "start from a Hugging Face GPT-2 directory or model.safetensors, or an llm.c fp32 file; "
     "the model shape comes from the file"},
    {"log", OPT_STR, FIELD(log), "", "PATH", NULL, NULL, 0, "data",
     "write metrics as JSON lines: first the run's configuration, then one record per step"},
    {"tensorboard", OPT_STR, FIELD(tensorboard), "", "DIR", NULL, NULL, 0, "data",
     "write TensorBoard event files to DIR (rank 0, flushed every step): loss, lr, grad norm, "
     "tokens/s, TFLOP/s, MFU with --peak-tflops, step time and memory by category per step; "
     "validation loss (view: tensorboard --logdir DIR)"},
    {"trace", OPT_STR, FIELD(trace), "", "PATH", NULL, NULL, 0, "data",
     "write the last step's pipeline timeline as JSON lines: each action's start and end on "
     "every rank (scripts/plot_schedule.py draws it; times from one machine's clock)"},
    {"log-every", OPT_INT, FIELD(log_every), "1", "N", NULL, NULL, 0, "data",
     "print the step line every N steps, and the first and last (--log records every step)"},
    {"save", OPT_STR, FIELD(save), "", "DIR", NULL, NULL, 0, "data",
     "at the end, write the weights as a Hugging Face GPT-2 directory (model.safetensors + "
     "config.json, and GPT-2's tokenizer files when the vocabulary is 50257)"},
    {"save-dtype", OPT_ENUM, FIELD(save_dtype), "", "NAME", NULL, k_dtypes, 0, "data",
     "--save's tensor type (if not set, the run's --param-dtype: fp32 runs write fp32, bf16 "
     "runs bf16; bf16 rounds each weight to nearest even)"},
    {"ckpt-dir", OPT_STR, FIELD(ckpt_dir), "", "DIR", NULL, NULL, 0, "checkpoints",
     "write sharded checkpoints DIR/step-N (docs/checkpoints.md)"},
    {"ckpt-every", OPT_INT, FIELD(ckpt_every), "0", "N", NULL, NULL, 0, "checkpoints",
     "checkpoint every N steps (and after the last; 0 = only after the last)"},
    {"ckpt-keep", OPT_INT, FIELD(ckpt_keep), "0", "K", NULL, NULL, 0, "checkpoints",
     "keep the K newest checkpoints (0 = all)"},
    {"resume", OPT_STR, FIELD(resume), "", "DIR", NULL, NULL, 0, "checkpoints",
     "continue from the latest complete checkpoint in DIR (or a step-N directory), in any "
     "layout"},

    {"zero", OPT_INT, FIELD(zero), "0", "N", NULL, NULL, 0, "parallel",
     "1 = shard optimizer state over dp (ZeRO-1)"},
    {"dp", OPT_INT, FIELD(dp), "0", "N", NULL, NULL, 0, "parallel",
     "data-parallel degree (0 = world size / (pp*tp))"},
    {"pp", OPT_INT, FIELD(pp), "1", "N", NULL, NULL, 0, "parallel", "pipeline stages"},
    {"tp", OPT_INT, FIELD(tp), "1", "N", NULL, NULL, 0, "parallel", "tensor-parallel degree"},
    {"sequence-parallel", OPT_BOOL, FIELD(sequence_parallel), "false", "", NULL, NULL, 0,
     "parallel",
     "with --tp > 1: LayerNorms, residual stream and pipeline transfers hold 1/tp of the "
     "micro-batch's token rows (Megatron-LM's sequence parallelism: less activation memory, "
     "all-gathers and reduce-scatters instead of all-reduces); needs tp to divide "
     "micro-batch x seq; no effect at tp 1"},
    {"schedule", OPT_ENUM, FIELD(schedule), "1f1b", "NAME", NULL, k_schedules, 0, "parallel",
     "pipeline schedule"},
    {"virtual-stages", OPT_INT, FIELD(virtual_stages), "1", "V", NULL, NULL, 0, "parallel",
     "--schedule interleaved: chunks of layers per pipeline rank (rank r holds chunks r, "
     "r+pp, ...; the partition splits the model into pp x V chunks); 1 otherwise"},
    {"partition", OPT_STR, FIELD(partition), "uniform", "SPEC", NULL, NULL, 0, "parallel",
     "uniform | parameters | memory | type:... | 0:11,11:24,..."},
    {"overlap-comm", OPT_ENUM, FIELD(overlap_comm), "off", "MODE", NULL, k_on_off, 0,
     "parallel",
     "on: communication beside computation (nonblocking): the dp gradient reduction in "
     "buckets while the step's last backward runs, the --zero 1 parameter all-gather while "
     "the next forward runs, pipeline sends and receives that do not hold the stage; off: "
     "each blocking (bench/RESULTS.md, \"Overlapped communication\")"},
    {"bucket-mib", OPT_INT, FIELD(bucket_mib), "4", "N", NULL, NULL, 0, "parallel",
     "--overlap-comm on: MiB of final gradient a bucket waits for before it starts, and the "
     "least MiB of whole tensors in a parameter-gather bucket (0: a gradient bucket at each "
     "half block, a gather bucket per tensor)"},
    {"loss-chunk", OPT_INT, FIELD(loss_chunk), "0", "N", NULL, NULL, 0, "parallel",
     "tokens per chunk of the loss (0 = automatic)"},
    {"threads", OPT_INT, FIELD(threads), "0", "N", NULL, NULL, 0, "parallel",
     "OpenMP threads per rank (0 = runtime default)"},
    {"peak-tflops", OPT_FLOAT, FIELD(peak_tflops), "0", "X", NULL, NULL, 0, "parallel",
     "one rank's peak TFLOP/s: the progress line then shows the model FLOPs utilization "
     "(0 = only the achieved TFLOP/s)"},
    {"backend", OPT_STR, FIELD(backend), "cpu", "NAME", zt_backend_names, NULL, 0, "parallel",
     "where tensors live and kernels run: cpu, or cuda (one GPU; a binary built with "
     "`make cuda`: build/zerotrain-cuda)"},
    {"tensor-path", OPT_ENUM, FIELD(tensor_path), "auto", "MODE", NULL, k_tensor_paths, 0,
     "parallel",
     "how tensors move between ranks: auto (--backend cuda: NCCL where the ranks of a group "
     "have GPUs of their own, MPI with host staging where they share one; cpu: MPI) or staged "
     "(every group through MPI with host staging, on either backend)"},
    {"device", OPT_INT, FIELD(device), "-1", "N", NULL, NULL, 0, "parallel",
     "--backend cuda: the GPU this rank uses (-1 = its rank on the machine mod the GPU count, "
     "so ranks beyond the count share GPUs; CUDA_VISIBLE_DEVICES numbers them)"},
    {"tf32", OPT_BOOL, FIELD(tf32), "false", "", NULL, NULL, 0, "parallel",
     "--backend cuda: allow TF32 tensor cores in fp32 matrix products (faster, ~1e-3 "
     "relative error; off: exact fp32 as on the CPU)"},
    {"bf16-gemm", OPT_ENUM, FIELD(bf16_gemm), "auto", "PATH", NULL, k_bf16_gemms, 0, "parallel",
     "--backend cpu, --param-dtype bf16: where the bf16 matrix products run: oneDNN's matmul "
     "primitive (onednn-matmul; CPUs with AVX512-BF16 or AMX-BF16: auto picks it there), "
     "oneDNN's bf16 GEMM API (onednn) or the fallback (bf16 widened to fp32, then OpenBLAS's "
     "sgemm)"},
    {"profile", OPT_BOOL, FIELD(profile), "false", "", NULL, NULL, 0, "parallel",
     "time every kernel and transfer by phase (gemm, attention, loss, element-wise, "
     "optimizer, grad norm, memory, comm): a table at the end, \"phases\" in the --log"},
    // The runtime knobs: each takes its default from an environment variable where one is
    // set (config.c, k_env_defaults), so the log records what a run took.
    {"cuda-attention", OPT_ENUM, FIELD(cuda_attention), "auto", "NAME", NULL,
     k_cuda_attentions, 0, "parallel",
     "--backend cuda: the attention kernels: blocked (cuBLAS products over blocks of queries), "
     "rows (one thread block per query row, no scratch; the first kernels), flash "
     "(--param-dtype bf16: fused kernels on bf16 tensor cores for head sizes a multiple of 16 "
     "up to 128; an fp32 model or another head size runs blocked) or auto (flash where it "
     "applies, else blocked) [env ZT_CUDA_ATTENTION]"},
    {"comm-algo", OPT_STR, FIELD(comm_algo), "stage", "NAME", NULL, NULL, 0, "parallel",
     "MPI collectives of ranks that share a machine: stage (large reduce-scatters through a "
     "shared-memory window), stage-all (all-gathers too) or mpi (MPI's own everywhere) "
     "[env ZT_COMM_MPI_ALGO]"},
    {"comm-stage-kib", OPT_STR, FIELD(comm_stage_kib), "256", "N", NULL, NULL, 0, "parallel",
     "KiB of one slot of the staging window, 4..65536 [env ZT_COMM_MPI_STAGE_KIB]"},
    {"comm-max-count", OPT_STR, FIELD(comm_max_count), "2147483647", "N", NULL, NULL, 0,
     "parallel",
     "the most elements one MPI call carries; larger operations go in pieces "
     "[env ZT_COMM_MPI_MAX_COUNT]"},
    {"comm-timeout", OPT_STR, FIELD(comm_timeout), "auto", "S", NULL, NULL, 0, "parallel",
     "end the job when an operation waits more than S seconds for another rank (0: never; "
     "auto: a watchdog whose deadline is 10 steps, at least --comm-timeout-floor) "
     "[env ZT_COMM_TIMEOUT_S]"},
    {"comm-timeout-floor", OPT_STR, FIELD(comm_timeout_floor), "300", "S", NULL, NULL, 0,
     "parallel", "the auto timeout's least deadline, seconds [env ZT_COMM_TIMEOUT_FLOOR_S]"},

    {"recompute", OPT_ENUM, FIELD(recompute), "none", "NAME", NULL, k_recomputes, 0, "memory",
     "recompute in the backward: selective (LayerNorm and GELU outputs) or full (each "
     "block's forward again; only its input kept)"},
    {"recompute-layers", OPT_INT, FIELD(recompute_layers), "0", "N", NULL, NULL, 0, "memory",
     "--recompute: only each stage's first N blocks (0 = every block)"},
    {"param-dtype", OPT_ENUM, FIELD(param_dtype), "fp32", "NAME", NULL, k_dtypes, 0, "memory",
     "parameters and gradients: bf16 keeps fp32 master weights in the optimizer (sharded by "
     "--zero 1), fp32 activations and bf16 products with fp32 sums (--backend cpu)"},
    {"mem-limit", OPT_STR, FIELD(mem_limit), "", "BYTES", NULL, NULL, 0, "memory",
     "memory one rank may use, e.g. 16G or 512M (binary units); a run predicted to need more "
     "stops before allocating (if not set, train checks the machine's available memory)"},
    {"ranks-per-node", OPT_INT, FIELD(ranks_per_node), "0", "N", NULL, NULL, 0, "memory",
     "`zerotrain memory`: consecutive ranks sharing one machine (0 = all; sizes the MPI "
     "staging windows)"},
    {"gpus-per-node", OPT_INT, FIELD(gpus_per_node), "0", "N", NULL, NULL, 0, "memory",
     "`zerotrain memory --backend cuda`: GPUs of one machine, which its ranks take in turn (0 = "
     "one per rank: NCCL everywhere); groups whose ranks share one stage through pinned host "
     "buffers, which the plan counts"},
};
_Static_assert(sizeof zt_opts / sizeof zt_opts[0] == ZT_N_OPTS,
               "ZT_N_OPTS (config_options.h) must count the options of zt_opts");

// ---------------------------------------------------------------- lookup

const opt_desc *zt_opt_find(const char *name, size_t len) {
    for (int i = 0; i < ZT_N_OPTS; i++)
        if (strlen(zt_opts[i].name) == len && strncmp(zt_opts[i].name, name, len) == 0)
            return &zt_opts[i];
    return NULL;
}

int zt_config_is_option(const char *name, size_t len) { return zt_opt_find(name, len) != NULL; }

const char *zt_opt_enum_name(const opt_desc *o, int value) {
    for (const zt_enum_name *e = o->names; e->name; e++)
        if (e->value == value) return e->name;
    return NULL;
}

const char *zt_config_enum_name(const char *option, int value) {
    const opt_desc *o = zt_opt_find(option, strlen(option));
    ZT_ASSERTF(o && o->type == OPT_ENUM, "--%s is not an enum option", option);
    const char *name = zt_opt_enum_name(o, value);
    ZT_ASSERTF(name || (value == ZT_NOT_GIVEN && !o->def[0]), "--%s has no value %d", option,
               value);
    return name;
}

void zt_opt_list_names(const opt_desc *o, const char *sep, char *out, size_t size) {
    out[0] = '\0';
    for (int i = 0;; i++) {
        const char *name = o->type == OPT_ENUM ? o->names[i].name : o->choices[i];
        if (!name) break;
        size_t n = strlen(out);
        snprintf(out + n, size - n, "%s%s", i ? sep : "", name);
    }
}

// Levenshtein distance, for "did you mean". Inputs longer than 63 are not worth a
// suggestion and return a large distance.
static int edit_distance(const char *a, size_t na, const char *b) {
    size_t nb = strlen(b);
    if (na > 63 || nb > 63) return INT_MAX;
    int row[64];
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

// The distance must also be below the typed length, so "--q" is not "corrected" to "--dp".
const char *zt_opt_suggest(const char *name, size_t len, int with_config) {
    const char *best = NULL;
    int best_d = 4;
    for (int i = 0; i <= ZT_N_OPTS; i++) {
        const char *cand = i < ZT_N_OPTS ? zt_opts[i].name : with_config ? "config" : NULL;
        if (!cand) break;
        int d = edit_distance(name, len, cand);
        if (d < best_d && d < (int)len) {
            best_d = d;
            best = cand;
        }
    }
    return best;
}

// ---------------------------------------------------------------- comparing

const char *zt_config_first_difference(const zt_config *a, const zt_config *b) {
    for (int i = 0; i < ZT_N_OPTS; i++) {
        const opt_desc *o = &zt_opts[i];
        // a path may differ between machines (a node-local copy); what it holds is checked
        // where it is read (a data file's length, a checkpoint's manifest)
        if (!strcmp(o->meta, "PATH") || !strcmp(o->meta, "DIR")) continue;
        const char *x = (const char *)a + o->offset, *y = (const char *)b + o->offset;
        // strings up to their end (parse leaves the bytes after it unspecified)
        if (o->type == OPT_STR ? strncmp(x, y, o->size) != 0 : memcmp(x, y, o->size) != 0)
            return o->name;
    }
    return NULL;
}
