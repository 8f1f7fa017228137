// The run configuration: one table of options drives defaults, `--flags`, the JSON
// config file (same keys as the flags, without "--") and `--help`.
#ifndef ZT_CONFIG_H
#define ZT_CONFIG_H

#include <stdint.h>

#include "backend.h"
#include "comm_mpi.h"
#include "common.h"
#include "dtype.h"
#include "gpt2.h"
#include "layout.h"
#include "schedule.h"

#define ZT_PATH_MAX 512

// Upper bounds zt_config_validate enforces (see there for why).
#define ZT_MAX_LAYERS 256
#define ZT_MAX_EMBD (1 << 16)
#define ZT_MAX_CTX (1 << 20)
#define ZT_MAX_GRAD_ACCUM (1 << 16)
#define ZT_MAX_THREADS 1024

// The values of the enum options: the option table (config_options.c) maps each name a
// flag, the config file or the log writes to one of these, once, at parsing.
typedef enum { ZT_OPTIM_ADAMW, ZT_OPTIM_ADAMW8BIT } zt_optim_kind;
typedef enum { ZT_LR_CONSTANT, ZT_LR_COSINE } zt_lr_schedule;
typedef enum { ZT_TENSOR_PATH_AUTO, ZT_TENSOR_PATH_STAGED } zt_tensor_path;
// An enum option not given (only --save-dtype may be): the log writes null.
#define ZT_NOT_GIVEN (-1)

typedef struct {
    // model (a preset fills the shape keys not given explicitly)
    char model[32];           // tiny | gpt2 | gpt2-medium | gpt2-large | gpt2-xl
    int n_layer, n_head, n_embd, vocab, n_ctx;
    // batch
    int micro_batch;          // sequences per micro-batch (B)
    int seq;                  // tokens per sequence (T)
    int grad_accum;           // micro-batches per step per dp rank
    int steps;
    // optimizer and schedule
    zt_optim_kind optim;      // adamw | adamw8bit
    int optim_block;          // adamw8bit: values per absmax block
    int optim_min_8bit;       // adamw8bit: tensors smaller than this keep fp32 state
    int optim_fp32_embedding; // adamw8bit: keep wte's state in fp32
    float lr, lr_final_frac;
    zt_lr_schedule lr_schedule; // constant | cosine
    int warmup;
    float weight_decay, beta1, beta2, eps, grad_clip;
    uint64_t seed;
    // data
    char data[ZT_PATH_MAX], val_data[ZT_PATH_MAX];
    int val_every, val_batches;
    int sample_every, sample_len; // --sample-every: a short sample every N steps (0 = never)
    int shuffle;
    char init_from[ZT_PATH_MAX]; // Hugging Face directory / .safetensors, or llm.c fp32 file
    char log[ZT_PATH_MAX];       // JSON lines
    char tensorboard[ZT_PATH_MAX]; // directory for TensorBoard event files
    char trace[ZT_PATH_MAX];     // the last step's pipeline timeline, JSON lines
    char save[ZT_PATH_MAX];      // final weights as a Hugging Face directory
    int save_dtype;              // --save's tensors: ZT_F32 | ZT_BF16 | ZT_NOT_GIVEN (the
                                 // --param-dtype): zt_config_save_dtype
    char config[ZT_PATH_MAX];    // the --config file read ("" = none; not an option key)
    // checkpoints (src/checkpoint/ckpt.h, docs/checkpoints.md)
    char ckpt_dir[ZT_PATH_MAX];  // sharded checkpoints go to DIR/step-N
    int ckpt_every;              // steps between checkpoints (0 = only after the last)
    int ckpt_keep;               // newest checkpoints kept (0 = all)
    char resume[ZT_PATH_MAX];    // continue from this checkpoint directory
    // parallel layout
    int zero;                 // 0 | 1
    int dp, pp, tp;           // dp 0 = derived from the world size
    zt_schedule_kind schedule; // 1f1b | gpipe
    int virtual_stages;        // --virtual-stages: chunks per pipeline rank (interleaved), else 1
    char partition[256];
    int overlap_comm;         // on (1) | off (0): the dp gradient reduction overlapped with the
                              // backward, the ZeRO-1 gather with the next forward, pipeline
                              // transfers nonblocking (grad_reduce.h, param_gather.h,
                              // pipe_comm.h)
    int bucket_mib;           // --overlap-comm on: MiB per gradient (and gather) bucket
    int sequence_parallel;    // rows split over tp outside the tp products (tp > 1; at tp 1
                              // nothing to split: accepted, no effect)
    int loss_chunk;           // tokens per chunk of the loss (0 = automatic)
    zt_recompute_mode recompute; // none | selective | full (src/model/gpt2.h)
    int recompute_layers;     // recompute only each stage's first N blocks (0 = every block)
    int threads;              // OpenMP threads per rank (0 = runtime default)
    float peak_tflops;        // one rank's peak fp32 TFLOP/s, for the MFU (0 = not shown)
    char backend[8];          // cpu | cuda (kernels/backend.h)
    zt_tensor_path tensor_path; // auto | staged: every group's tensors through MPI with
                              // host staging (src/parallel/grid_data.h)
    int device;               // --backend cuda: the GPU (-1 = by the rank on its machine)
    int tf32;                 // --backend cuda: TF32 tensor cores in fp32 GEMMs
    zt_bf16_gemm_path bf16_gemm; // --backend cpu: auto | onednn | fallback (backend.h)
    int profile;              // time each op by phase (src/core/profile.h)
    // the MPI backend's settings, as texts its one parser reads (comm_mpi.h; defaults: the
    // ZT_COMM_* variables, then the built-in values)
    char comm_algo[16];       // stage | stage-all | mpi
    char comm_stage_kib[16];  // KiB of one staging slot
    char comm_max_count[16];  // most elements per MPI call
    char comm_timeout[24];    // auto | seconds (0: none)
    char comm_timeout_floor[24]; // the auto timeout's floor, seconds
    zt_cuda_attention cuda_attention; // --backend cuda: blocked | rows | flash (backend.h)
    int log_every;            // the step line on stdout every N steps (and the first, last)
    // memory planning (src/planner/planner.h)
    zt_dtype param_dtype;     // fp32 (ZT_F32) | bf16 (ZT_BF16: bf16 parameters and gradients,
                              // fp32 master weights in the optimizer: docs/design.md, "bf16")
    char mem_limit[32];       // bytes one rank may use, "16G", "512M", ... ("" = none)
    int ranks_per_node;       // ranks sharing one machine, for `memory` (0 = all)
    int gpus_per_node;        // GPUs of one machine, for `memory` (0 = one per rank)
    unsigned shape_given;     // bits: --model, --n-layer, --n-head, --n-embd, --vocab, --n-ctx
                              // given explicitly (flag or file), set by zt_config_parse
} zt_config;

// Fills `cfg` from defaults, then the file named by --config (if any), then the flags
// in argv[0..argc) (argv holds flags only, no program or command name). A flag given
// twice takes the last value. On error returns ZT_ERR with a message naming the key
// or flag and what to do (unknown key, malformed JSON, wrong type, value out of range).
// `--help` is not handled here (see zt_config_print_help).
zt_status zt_config_parse(zt_config *cfg, int argc, char **argv);

// The name of `value` of the enum option `option` (without "--"): "cosine" for
// ("lr-schedule", ZT_LR_COSINE); NULL for ZT_NOT_GIVEN. A name that is no enum option, or a
// value it does not have, is a bug (fatal).
const char *zt_config_enum_name(const char *option, int value);

// Whether name[0..len) (without "--") is an option of the table.
int zt_config_is_option(const char *name, size_t len);

// Resets every option whose name (without "--") is not in the NULL-terminated `keep` to its
// default: a command that uses some options only (eval) ignores the others that a --config
// file shared with training holds.
void zt_config_keep_only(zt_config *cfg, const char *const *keep);

// Checks the values against each other (n_embd % n_head, seq <= n_ctx, ...).
zt_status zt_config_validate(const zt_config *cfg);

// The name of the first option (without "--") whose value differs between a and b, or
// NULL when every option is the same (the ranks of one run must agree: train checks).
// Paths (--data, --save, ...) are not compared: machines may hold their own copies.
const char *zt_config_first_difference(const zt_config *a, const zt_config *b);

// What training itself cannot run yet, on top of zt_config_validate: --backend cuda in a
// binary built without CUDA, --tf32 without it, --param-dtype bf16 on a backend without
// bf16 kernels or with --sample-every.
// ZT_ERR with a message naming the flag.
zt_status zt_config_check_trainable(const zt_config *cfg);
// The MPI backend's settings the options give (--comm-*; comm_mpi.h), through its parser:
// ZT_ERR with its message for a bad one, named as it came: the ZT_COMM_* variable (the
// option's default) or the flag. Depends on cfg alone (and the environment's names), so
// ranks that agree on their options agree on this.
zt_status zt_config_comm_settings(const zt_config *cfg, zt_comm_mpi_settings *out);

// --mem-limit in bytes (0 when not given). The syntax was checked by zt_config_validate:
// a number (fractions allowed) with an optional binary suffix K, M, G or T (16G = 16 GiB),
// optionally followed by "iB" or "B".
double zt_config_mem_limit(const zt_config *cfg);

// Parses a byte count written as --mem-limit takes it into *bytes; ZT_ERR (naming `what`)
// on anything else.
zt_status zt_config_parse_bytes(const char *text, const char *what, double *bytes);

// Takes the model shape from a file (`what` names it in messages): a shape key given
// explicitly that differs, or an explicit --model whose preset differs, is an error
// naming both values. With head_known 0 (the file does not say), n_head stays as given
// or becomes n_embd / 64 (GPT-2's head size).
zt_status zt_config_adopt_shape(zt_config *cfg, const zt_model_shape *file, int head_known,
                                const char *what);

// The model shape the config describes, with Vp padded for `tp`.
zt_model_shape zt_config_shape(const zt_config *cfg);

// The dtype --save writes: --save-dtype's, or the model's parameter dtype when not given.
zt_dtype zt_config_save_dtype(const zt_config *cfg);

// Writes every option as one JSON object, {"model":"tiny",...,"seed":1337,...}: keys are the
// flag names, values the resolved ones (the preset's shape filled in); a string option not
// given is null. With the nulls left out it is a --config file giving the same options.
void zt_config_write_json(FILE *f, const zt_config *cfg);

// Prints every option with its default and help to `f`.
void zt_config_print_help(FILE *f);

#endif
