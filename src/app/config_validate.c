// The checks of a parsed config: ranges and combinations, what training can run, byte counts.
#include "config_options.h"

#include "backend.h" // the backends by name, and what each supports

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// Written as !(x >= lo) where a float is involved, so NaN fails too.
#define NEED(cond, ...)                                  \
    do {                                                 \
        if (!(cond)) return zt_errorf(__VA_ARGS__);      \
    } while (0)

// The model's shape: positive, bounded, heads dividing the channels.
static zt_status check_shape(const zt_config *c) {
    NEED(c->n_layer >= 1, "--n-layer must be at least 1 (got %d)", c->n_layer);
    NEED(c->n_head >= 1, "--n-head must be at least 1 (got %d)", c->n_head);
    NEED(c->n_embd >= 1, "--n-embd must be at least 1 (got %d)", c->n_embd);
    NEED(c->vocab >= 1, "--vocab must be at least 1 (got %d)", c->vocab);
    NEED(c->n_ctx >= 1, "--n-ctx must be at least 1 (got %d)", c->n_ctx);
    // Upper bounds far above any trained GPT (GPT-3 175B: 96 layers, 12288 channels,
    // 2048 positions) keep every size in exact 64-bit and double arithmetic and bound the
    // planner's and the schedule's work (a partition is O(pp * layers^2)).
    NEED(c->n_layer <= ZT_MAX_LAYERS, "--n-layer %d exceeds %d: zerotrain supports at most "
         "%d transformer blocks", c->n_layer, ZT_MAX_LAYERS, ZT_MAX_LAYERS);
    NEED(c->n_embd <= ZT_MAX_EMBD, "--n-embd %d exceeds %d: zerotrain supports at most %d "
         "channels", c->n_embd, ZT_MAX_EMBD, ZT_MAX_EMBD);
    NEED(c->n_ctx <= ZT_MAX_CTX, "--n-ctx %d exceeds %d: zerotrain supports at most %d "
         "positions", c->n_ctx, ZT_MAX_CTX, ZT_MAX_CTX);
    NEED(c->n_embd % c->n_head == 0,
         "n_embd %d is not divisible by n_head %d: choose --n-embd a multiple of --n-head",
         c->n_embd, c->n_head);
    // llm.c token files hold uint16 tokens, which any larger vocabulary also accepts (a
    // 250k multilingual head trains on them); the bound only keeps Vp * C in range
    NEED(c->vocab <= (1 << 24), "--vocab %d exceeds 16777216 (2^24); use a smaller vocabulary",
         c->vocab);
    return ZT_OK;
}

// Tokens per micro-batch and step, and the number of steps.
static zt_status check_batch(const zt_config *c) {
    NEED(c->micro_batch >= 1, "--micro-batch must be at least 1 (got %d)", c->micro_batch);
    NEED(c->seq >= 1, "--seq must be at least 1 (got %d)", c->seq);
    // the kernels index a micro-batch's tokens with int
    NEED((long long)c->micro_batch * c->seq <= 0x7fffffff,
         "--micro-batch %d x --seq %d = %lld tokens per micro-batch exceeds 2^31 - 1: lower "
         "--micro-batch and raise --grad-accum", c->micro_batch, c->seq,
         (long long)c->micro_batch * c->seq);
    NEED(c->seq <= c->n_ctx, "--seq %d exceeds the model's n_ctx %d: lower --seq or raise --n-ctx",
         c->seq, c->n_ctx);
    NEED(c->grad_accum >= 1, "--grad-accum must be at least 1 (got %d)", c->grad_accum);
    NEED(c->grad_accum <= ZT_MAX_GRAD_ACCUM, "--grad-accum %d exceeds %d: raise --micro-batch "
         "instead", c->grad_accum, ZT_MAX_GRAD_ACCUM);
    NEED(c->steps >= 1, "--steps must be at least 1 (got %d)", c->steps);
    return ZT_OK;
}

static zt_status check_checkpoints(const zt_config *c) {
    NEED(c->ckpt_every >= 0 && c->ckpt_keep >= 0,
         "--ckpt-every (%d) and --ckpt-keep (%d) must be 0 or more", c->ckpt_every, c->ckpt_keep);
    NEED(c->ckpt_dir[0] || (c->ckpt_every == 0 && c->ckpt_keep == 0),
         "--ckpt-every and --ckpt-keep need --ckpt-dir DIR (where the checkpoints go)");
    return ZT_OK;
}

// AdamW (8-bit or not) and the learning-rate schedule.
static zt_status check_optimizer(const zt_config *c) {
    // the block must divide the tensor alignment (a block never straddles two tensors or
    // two ZeRO shards): the same words as --help
    NEED(c->optim_block >= 64 && c->optim_block <= 256 &&
             (c->optim_block & (c->optim_block - 1)) == 0,
         "--optim-block %d: use a power of two, 64-256 (64, 128 or 256)", c->optim_block);
    NEED(c->lr > 0 && isfinite(c->lr), "--lr must be positive and finite (got %g)", c->lr);
    NEED(c->lr_final_frac >= 0 && c->lr_final_frac <= 1,
         "--lr-final-frac must be in [0, 1] (got %g): it is the final learning rate as a "
         "fraction of --lr",
         c->lr_final_frac);
    NEED(c->warmup >= 0, "--warmup must be at least 0 (got %d)", c->warmup);
    NEED(c->optim_min_8bit >= 0,
         "--optim-min-8bit must be at least 0 (got %d): tensors of fewer elements keep fp32 "
         "state; 0 keeps every tensor's state in 8 bits", c->optim_min_8bit);
    NEED(c->weight_decay >= 0 && isfinite(c->weight_decay),
         "--weight-decay must be at least 0 and finite (got %g)", c->weight_decay);
    NEED(c->beta1 >= 0 && c->beta1 < 1, "--beta1 must be in [0, 1) (got %g)", c->beta1);
    NEED(c->beta2 >= 0 && c->beta2 < 1, "--beta2 must be in [0, 1) (got %g)", c->beta2);
    NEED(c->eps > 0 && isfinite(c->eps), "--eps must be positive and finite (got %g)", c->eps);
    NEED(c->grad_clip >= 0 && isfinite(c->grad_clip),
         "--grad-clip must be at least 0 and finite (got %g; 0 turns clipping off)",
         c->grad_clip);
    return ZT_OK;
}

// Validation, sampling and the progress line during training.
static zt_status check_evaluation(const zt_config *c) {
    NEED(c->val_every >= 0, "--val-every must be at least 0 (got %d; 0 = never)", c->val_every);
    NEED(c->val_batches >= 0, "--val-batches must be 0 (automatic) or more (got %d)", c->val_batches);
    NEED(c->sample_every >= 0, "--sample-every must be at least 0 (got %d; 0 = never)",
         c->sample_every);
    NEED(c->sample_len >= 1, "--sample-len must be at least 1 (got %d)", c->sample_len);
    NEED(c->log_every >= 1, "--log-every must be at least 1 (got %d; 1 = every step)",
         c->log_every);
    return ZT_OK;
}

// The parallel layout and the ranks' threads.
static zt_status check_parallel(const zt_config *c) {
    NEED(c->zero == 0 || c->zero == 1, "--zero must be 0 or 1 (got %d)", c->zero);
    NEED(c->bucket_mib >= 0 && c->bucket_mib <= 4096,
         "--bucket-mib must be 0..4096 (got %d): MiB of gradient per overlapped bucket",
         c->bucket_mib);
    NEED(c->dp >= 0, "--dp must be at least 0 (got %d; 0 = derived from the world size)",
         c->dp);
    NEED(c->pp >= 1, "--pp must be at least 1 (got %d)", c->pp);
    NEED(c->tp >= 1, "--tp must be at least 1 (got %d)", c->tp);
    NEED(c->recompute_layers >= 0,
         "--recompute-layers must be at least 0 (got %d; 0 = every block of the stage)",
         c->recompute_layers);
    NEED(c->recompute_layers == 0 || c->recompute != ZT_RECOMPUTE_NONE,
         "--recompute-layers %d needs --recompute selective or full (it says how many blocks "
         "of each stage recompute)", c->recompute_layers);
    NEED(c->loss_chunk >= 0, "--loss-chunk must be at least 0 (got %d; 0 = automatic)",
         c->loss_chunk);
    NEED(c->threads >= 0, "--threads must be at least 0 (got %d; 0 = runtime default)",
         c->threads);
    NEED(c->threads <= ZT_MAX_THREADS, "--threads %d exceeds %d OpenMP threads per rank: use "
         "at most one thread per core", c->threads, ZT_MAX_THREADS);
    NEED(c->peak_tflops >= 0 && isfinite(c->peak_tflops),
         "--peak-tflops must be at least 0 and finite (got %g; 0 = no MFU)", c->peak_tflops);
    return ZT_OK;
}

// Memory planning: --ranks-per-node, --gpus-per-node and the syntax of --mem-limit.
static zt_status check_memory(const zt_config *c) {
    NEED(c->ranks_per_node >= 0, "--ranks-per-node must be at least 0 (got %d; 0 = all ranks "
         "on one machine)", c->ranks_per_node);
    NEED(c->gpus_per_node >= 0, "--gpus-per-node must be at least 0 (got %d; 0 = one GPU per "
         "rank)", c->gpus_per_node);
    if (c->mem_limit[0]) {
        double bytes;
        ZT_TRY(zt_config_parse_bytes(c->mem_limit, "--mem-limit", &bytes));
    }
    return ZT_OK;
}

// Whether `o`'s field holds one of its values (enums: a program that set the field itself
// may not have; strings: --backend, checked against the backends' names).
static int known_value(const zt_config *c, const opt_desc *o) {
    const char *v = (const char *)c + o->offset;
    if (o->type == OPT_ENUM)
        return zt_opt_enum_name(o, *(const int *)v) ||
               (!o->def[0] && *(const int *)v == ZT_NOT_GIVEN);
    if (!v[0] && !o->def[0]) return 1; // not set: its help says what it then means
    for (const char *const *ch = o->choices; *ch; ch++)
        if (strcmp(v, *ch) == 0) return 1;
    return 0;
}

static zt_status check_choices(const zt_config *c) {
    // options with a fixed set of values, from the table
    for (int i = 0; i < ZT_N_OPTS; i++) {
        const opt_desc *o = &zt_opts[i];
        if (!o->choices && !o->names) continue;
        if (known_value(c, o)) continue;
        char list[128], value[32];
        zt_opt_list_names(o, ", ", list, sizeof list);
        const char *field = (const char *)c + o->offset;
        if (o->type == OPT_ENUM) snprintf(value, sizeof value, "%d", *(const int *)field);
        else snprintf(value, sizeof value, "%s", field);
        return zt_errorf("--%s '%s' is not known: use one of %s", o->name, value, list);
    }
    return ZT_OK;
}

// --schedule interleaved and --virtual-stages (docs/design.md, "Pipeline").
static zt_status check_interleaved(const zt_config *c) {
    int V = c->virtual_stages, chunks = c->pp * V, units = c->n_layer + 2;
    NEED(V >= 1, "--virtual-stages must be at least 1 (got %d)", V);
    int inter = c->schedule == ZT_SCHED_INTERLEAVED;
    NEED(inter || V == 1, "--virtual-stages %d needs --schedule interleaved (only the "
         "interleaved schedule gives a rank several chunks of layers): add --schedule "
         "interleaved, or leave --virtual-stages out", V);
    if (!inter) return ZT_OK;
    NEED(V >= 2, "--schedule interleaved needs --virtual-stages 2 or more (chunks of layers per "
         "pipeline rank; got %d): add --virtual-stages 2, or use --schedule 1f1b", V);
    NEED(c->pp >= 2, "--schedule interleaved needs --pp 2 or more (got --pp %d): add --pp, or "
         "use --schedule 1f1b", c->pp);
    NEED(c->grad_accum % c->pp == 0, "--schedule interleaved runs the micro-batches in groups "
         "of --pp (Megatron's order): --grad-accum %d is not a multiple of --pp %d; use "
         "--grad-accum %d", c->grad_accum, c->pp, (c->grad_accum / c->pp + 1) * c->pp);
    NEED(chunks <= units, "--pp %d x --virtual-stages %d = %d chunks, but the model has only %d "
         "units to split (the embedding, %d block%s, the head): lower --virtual-stages or "
         "--pp, or use more --n-layer", c->pp, V, chunks, units, c->n_layer,
         c->n_layer == 1 ? "" : "s");
    NEED(c->sample_every == 0, "--sample-every decodes through each rank's contiguous layers, "
         "and under --schedule interleaved a rank's layers are not contiguous: leave "
         "--sample-every out (sample the saved model with `zerotrain generate`)");
    return ZT_OK;
}

static zt_status check_partition(const zt_config *c) {
    // --partition: a method name, per-type weights, or unit ranges. Only the syntax is
    // checked here; the ranges are checked against the model when stages are built.
    const char *p = c->partition;
    int named = !strcmp(p, "uniform") || !strcmp(p, "parameters") || !strcmp(p, "memory") ||
                !strncmp(p, "type:", 5);
    int ranges = p[0] != 0 && strspn(p, "0123456789:,") == strlen(p) && strchr(p, ':');
    NEED(named || ranges,
         "--partition '%s' is not known: use uniform, parameters, memory, "
         "type:embed:2|transformer:1 style weights, or unit ranges like 0:7,7:14", p);
    return ZT_OK;
}

zt_status zt_config_validate(const zt_config *c) {
    // in this order: the first problem found is the one reported
    ZT_TRY(check_shape(c));
    ZT_TRY(check_batch(c));
    ZT_TRY(check_checkpoints(c));
    ZT_TRY(check_optimizer(c));
    ZT_TRY(check_evaluation(c));
    ZT_TRY(check_parallel(c));
    ZT_TRY(check_memory(c));
    ZT_TRY(check_choices(c));
    ZT_TRY(check_interleaved(c));
    return check_partition(c);
}

#undef NEED

zt_status zt_config_check_trainable(const zt_config *c) {
    if (c->cuda_attention != ZT_CUDA_ATTENTION_AUTO && strcmp(c->backend, "cuda") != 0)
        return zt_errorf("--cuda-attention %s applies to --backend cuda only (this run's "
                         "backend is %s): leave it out, or unset ZT_CUDA_ATTENTION",
                         zt_config_enum_name("cuda-attention", c->cuda_attention), c->backend);
    ZT_TRY(zt_backend_check(c->backend, &(zt_backend_options){.device = c->device,
                                                               .threads = c->threads,
                                                               .tf32 = c->tf32,
                                                               .bf16_gemm = c->bf16_gemm}));
    if (c->param_dtype != ZT_BF16) return ZT_OK;
    if (!zt_backend_caps_of(c->backend)->bf16)
        return zt_errorf("--param-dtype bf16: the %s backend has no bf16 kernels yet; train bf16 "
                         "with --backend cpu, or use --param-dtype fp32 here", c->backend);
    return ZT_OK;
}

zt_status zt_config_comm_settings(const zt_config *c, zt_comm_mpi_settings *out) {
    static const char *const flags[ZT_COMM_N_SETTINGS] = {
        "--comm-algo", "--comm-stage-kib", "--comm-max-count", "--comm-timeout",
        "--comm-timeout-floor"};
    zt_comm_mpi_texts t = {{0},
                           {c->comm_algo, c->comm_stage_kib, c->comm_max_count, c->comm_timeout,
                            c->comm_timeout_floor}};
    // a text is named as it came: the variable where it still holds the environment's value
    // (the option's default), else the flag (or the --config key)
    for (int k = 0; k < ZT_COMM_N_SETTINGS; k++) {
        const char *env = getenv(zt_comm_mpi_env_names[k]);
        t.name[k] = env && !strcmp(env, t.value[k]) ? zt_comm_mpi_env_names[k] : flags[k];
    }
    return zt_comm_mpi_settings_parse(&t, out);
}

zt_status zt_config_parse_bytes(const char *text, const char *what, double *bytes) {
    const char *s = text;
    char *end = NULL;
    // strtod would accept "inf", "nan" and hex: only plain decimals here
    int ok = (isdigit((unsigned char)*s) || *s == '.') && !strpbrk(s, "xX");
    double v = ok ? strtod(s, &end) : 0.0;
    if (!ok || end == s)
        return zt_errorf("%s '%s' is not a byte count: write e.g. %s 16G (K, M, G, T: binary "
                         "units) or a number of bytes",
                         what, text, what);
    double unit = 1.0;
    const char *u = end;
    switch (toupper((unsigned char)*u)) {
    case 'K': unit = 1024.0; u++; break;
    case 'M': unit = 1048576.0; u++; break;
    case 'G': unit = 1073741824.0; u++; break;
    case 'T': unit = 1099511627776.0; u++; break;
    default: break;
    }
    if (unit > 1.0 && (u[0] == 'i' || u[0] == 'I') && (u[1] == 'B' || u[1] == 'b')) u += 2;
    else if (u[0] == 'B' || u[0] == 'b') u++;
    if (*u)
        return zt_errorf("%s '%s' has '%s' after the number: write e.g. %s 16G or %s 512M",
                         what, text, u, what, what);
    if (!(v > 0) || !isfinite(v * unit))
        return zt_errorf("%s '%s' must be a positive byte count, e.g. %s 16G", what, text, what);
    *bytes = v * unit;
    return ZT_OK;
}

double zt_config_mem_limit(const zt_config *c) {
    double bytes = 0.0;
    if (c->mem_limit[0] && zt_config_parse_bytes(c->mem_limit, "--mem-limit", &bytes) != ZT_OK)
        return 0.0; // zt_config_validate refused it already
    return bytes;
}
