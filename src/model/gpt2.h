// GPT-2 on one stage of the pipeline and one tp rank: parameter and gradient views
// into the flat buffers, activations, forward and backward.
#ifndef ZT_GPT2_H
#define ZT_GPT2_H

#include <stdint.h>

#include "backend.h"
#include "comm.h"
#include "dtype.h"
#include "layout.h"
#include "memory.h"

// Views of one transformer block's tensors (into params or grads), of the model's dtype:
// float under fp32, zt_bf16 under bf16. Shapes are this tp rank's: C channels, C3 = 3C/tp,
// C4 = 4C/tp, Cp = C/tp.
typedef struct {
    void *ln1w, *ln1b;        // (C), (C)
    void *qkvw, *qkvb;        // (C3, C), (C3)
    void *attprojw;           // (Cp, C) stored (in, out): row-parallel
    void *attprojb;           // (C)
    void *ln2w, *ln2b;        // (C), (C)
    void *fcw, *fcb;          // (C4, C), (C4)
    void *fcprojw;            // (C4, C) stored (in, out): row-parallel
    void *fcprojb;            // (C)
} zt_block_tensors;

// Views of the whole stage's tensors, of the model's dtype (float or zt_bf16).
typedef struct {
    void *wte;                // (Vp/tp, C) tied: embedding and lm-head
    void *wpe;                // (maxT, C)
    zt_block_tensors *h;      // (L) entries, NULL pointers for blocks on other stages
    void *lnfw, *lnfb;        // (C), (C)
} zt_gpt2_tensors;

// Activation recomputation (docs/design.md, "Activation recomputation"): which activations a
// block's forward keeps for its backward. selective drops the LayerNorms' outputs and GELU's
// (cheap to recompute, large to keep); full keeps only the block's input and re-runs the
// block's forward at the start of its backward. The same kernels run on the same inputs, so
// the results are bit-identical to none; only time and memory change.
typedef enum { ZT_RECOMPUTE_NONE = 0, ZT_RECOMPUTE_SELECTIVE, ZT_RECOMPUTE_FULL } zt_recompute_mode;
typedef struct {
    zt_recompute_mode mode;
    int layers; // only the stage's first `layers` blocks are recomputed; 0: every block
} zt_recompute;

// How a stage keeps its activations (docs/design.md, "Activation recomputation", "Sequence
// parallelism"); zero: every activation kept, whole rows.
typedef struct {
    zt_recompute recompute;
    int seq_parallel; // Megatron-LM's sequence parallelism (tp > 1): per-row tensors 1/tp
    int w_slots;      // micro-batches whose weight-gradient pass may wait after their input-
                      // gradient pass (a split backward: zt_gpt2_backward_input / _weight;
                      // the schedule's zt_schedule_peak_w_pending); 0: never split
} zt_act_options;

// "none" | "selective" | "full" (static string).
const char *zt_recompute_mode_name(zt_recompute_mode mode);

// A block's activations, each of K layers: the slot's per-layer arrays (K: the blocks that
// keep the tensor), the workspace's one-layer recompute set, or one block's views into either.
// Nr rows: see zt_gpt2_acts.
typedef struct {
    void *ln1;                      // (K, Nr, C)
    float *ln1_mean, *ln1_rstd;     // (K, Nr), (K, Nr)
    void *qkv;                      // (K, N, 3C)
    void *atty;                     // (K, N, C)
    float *lse;                     // (K, B, NH, T) attention log-sum-exp
    void *res2;                     // (K, Nr, C) residual after attention
    void *ln2;                      // (K, Nr, C)
    float *ln2_mean, *ln2_rstd;     // (K, Nr), (K, Nr)
    void *fch;                      // (K, N, 4C) c_fc's output, GELU's input
    void *fch_gelu;                 // (K, N, 4C)
    void *res3;                     // (K, Nr, C) block outputs
} zt_block_acts;

// Activations of one micro-batch of B sequences of T tokens (N = B*T) on this stage. fp32,
// except those typed void * (the residual stream encoded, res2, res3; ln1, qkv, atty, ln2, fch,
// fch_gelu, lnf, gathered, logits; the gradients dres, dhead, dout16), of the model's dtype:
// bf16 under bf16
// (docs/design.md, "bf16", which tensor has which type).
// The per-layer arrays hold the blocks that keep them: of a recomputed block's dropped
// tensors only the blocks after the recomputed ones (zt_gpt2.n_recomputed), res3 always all.
//
// With sequence parallelism (zt_gpt2.seq_parallel) the per-row tensors outside the column-
// and row-parallel products hold only this tp rank's Nr = N/tp rows: encoded, ln1, ln2, lnf,
// their statistics, res2, res3, dhead, dres (shapes below say Nr; Nr = N without it). The
// products' inputs are gathered into `gathered` and their outputs reduce-scattered through
// `scratch` (docs/design.md, "Sequence parallelism").
// One micro-batch's activation gradients, kept by its input-gradient pass for its weight-
// gradient pass (zt_gpt2_backward_input / _weight): one W slot's views, of the types the
// backward gives them (docs/design.md "bf16": fp32, or the model's dtype where marked), per
// block that
// is not recomputed (block li at li - n_recomputed: a recomputed block's shared activations
// do not outlive the next block's recomputation, so its backward runs whole in the B pass).
typedef struct {
    void *dmlp;    // (Lw, N, C) gradient of the MLP c_proj's output, all N rows (model dtype)
    void *dfch;    // (Lw, N, 4C/tp) gradient of c_fc's output, after GELU's backward (model's)
    float *dln2;   // (Lw, Nr, C) gradient of ln_2's output, this rank's rows summed over tp
    void *dattn;   // (Lw, N, C) gradient of attention c_proj's output, all N rows (model's)
    void *dqkv;    // (Lw, N, 3C/tp) (model dtype)
    float *dln1;   // (Lw, Nr, C)
    float *dembed; // (N, C) gradient of the embedding's output, all N rows (first stage)
} zt_gpt2_wgrads;

typedef struct {
    void *encoded;                  // (Nr, C) embedding output (first stage), or stage input
    zt_block_acts layers;           // the blocks' per-layer arrays
    void *lnf;                      // (Nr, C)
    float *lnf_mean, *lnf_rstd;     // (Nr), (Nr)
    float *losses;                  // (N) per-token loss (last stage)
    void *dhead;                    // (Nr, C) gradient of the head's input (last stage), of
                                    // the model's dtype
    // gradients and scratch, reused across layers
    void *dres;                     // (Nr, C) running residual-stream gradient, of the
                                    // model's dtype
    float *dln;                     // (N, C) a column-parallel input's gradient
    float *datty;                   // (N, C)
    float *dqkv;                    // (N, 3C/tp) fp32 model only (bf16: dqkv in dout16)
    float *dfch;                    // (N, 4C/tp) d(fch) (fp32) or d(GELU output) (bf16, whose
                                    // d(fch) is in dout16); bf16: (N, 6C/tp) with blocks, also
                                    // attention's `wide` scratch
    float *scratch;                 // (N, C) projection outputs before the residual add,
                                    // which reads this rank's rows of their sum over tp
    void *dout16;                   // (N, 4C/tp) bf16: c_fc's and c_attn's output
                                    // gradients, d(fch) and dqkv, as GELU's and attention's
                                    // backward write them (bf16 with blocks, else 0)
    zt_block_acts recomp;           // one layer of what recomputed blocks drop (sizes 0: none)
    void *gathered;                 // (N, C) of the model's dtype: a LayerNorm output
                                    // gathered over tp (sequence parallel only, else 0)
    void *ln_grad;                  // (2C) of the model's dtype: one LayerNorm's weight and
                                    // bias gradient of this rank's rows (sequence parallel)
    float *ln_grad_sum;             // (2C) it summed over tp (sequence parallel)
    void *ln_drop;                  // (2C) of the model's dtype: the LayerNorm weight gradients
                                    // an input-gradient pass computes and drops (w_slots > 0)
    void *logits;                   // (loss_chunk, Vp/tp) one chunk of logits, then its grads,
                                    // of the model's dtype (the loss's statistics fp32)
    float *ce_work;                 // (3 * loss_chunk) the loss's per-row max, sums, targets
    double *loss_acc;               // (1) the training forwards' loss sum (last stage)
    float *attn_work;               // (attn_work_n) the backend's attention scratch
    void *gemm_work;                // the backend's gemm_mixed scratch (bf16 only)
} zt_gpt2_acts;

// The weight gradients a product adds into whole that nothing has added to since
// zt_gpt2_zero_grads: the first product into one writes it (beta 0) rather than reading back
// the zeros it would add to (docs/design.md, "Zeroed gradients"). Shared by an interleaved
// rank's chunk views, whose gradients are its owner's.
typedef struct {
    int n, cap;
    const void **grad; // (cap) the zeroed ones, n of them, in no order
} zt_gpt2_zeroed;

typedef struct {
    const zt_backend *be;     // where every buffer below lives and the kernels run
    zt_model_shape shape;
    zt_layout layout;
    int B, T, loss_chunk;
    zt_recompute recompute;
    int n_recomputed;         // this stage's first n_recomputed blocks are recomputed
    size_t attn_work_n; // floats of attention scratch the backend needs for T
    size_t gemm_work_n; // floats of gemm_mixed scratch (bf16 only)
    const zt_comm *tp_comm;   // this stage's tp group's tensor path (NULL when tp = 1)
    int seq_parallel;         // 1: rows split over tp outside the products (tp > 1 only)
    // ZT_F32, or ZT_BF16: parameters and gradients bf16 (the optimizer keeps fp32
    // masters), the activations zt_gpt2_acts types void * bf16, products with bf16 operands
    // (docs/design.md, "bf16")
    zt_dtype dtype;
    void *params;             // (layout.numel) flat of dtype, device memory
    void *grads;              // (layout.numel) flat, same layout and dtype, device memory
    zt_gpt2_tensors p, g;     // views into params and grads
    zt_gpt2_zeroed *zeroed;   // host memory, owned unless is_view
    zt_gpt2_acts a;
    int n_slots;              // micro-batches whose activations can be held at once
    size_t slot_floats;       // floats of one slot's activations
    void *act_block;          // one allocation holding every slot's activations
    void *ws_block;           // one allocation holding the backward scratch
    void *logits_block;       // the loss's chunk of logits (last stage), ZT_MEM_LOGITS
    int n_wslots;             // zt_act_options.w_slots
    size_t wslot_floats;      // floats of one W slot
    void *w_block;            // every W slot, ZT_MEM_ACTIVATIONS (NULL: no split backward)
    zt_gpt2_wgrads w;         // the W slot in use (zt_gpt2_use_wslot)
    int quiet;                // inside an input-gradient pass: no grad_ready announcements
    int is_view;              // a chunk view (zt_gpt2_init_view): params and grads are
                              // another model's, not freed with this one
    // Hooks, set once by the caller (NULL: none); the callee knows which calls concern it
    // (the trainer's: the step's last backward, its first forward; src/parallel/dp_sync.h).
    // grad_ready: called by zt_gpt2_backward (or zt_gpt2_backward_weight; never by
    // zt_gpt2_backward_input) each time a tail of this backward's gradient is
    // done, grads [from, layout.numel) (the blocks run last to first and each block's tensors
    // are laid out attention then MLP, so the buffer fills from its end: after each half of
    // each block). `from` never grows within a backward. The embedding's region (and wte on
    // the last stage) is never announced: the caller knows it is done when the backward
    // returns. Also a place to poll communication.
    void (*grad_ready)(void *ctx, size_t from);
    void *grad_ready_ctx;
    // params_need: called by zt_gpt2_forward just before it first reads a unit's weights,
    // params [lo, hi) (the span of the unit's tensors; the head's includes the tied wte), so
    // that a parameter gather still in flight can be waited for piece by piece.
    void (*params_need)(void *ctx, size_t lo, size_t hi);
    void *params_need_ctx;
} zt_gpt2;

// Builds the layout for units [unit_first, unit_last) on this tp rank and allocates
// parameters, gradients (zeroed) and activations for micro-batches of B x T, all on
// backend `be` (every pointer in zt_gpt2 is its device memory).
// The flat buffers are padded to a multiple of `pad_multiple` elements (dp * block,
// so ZeRO shards are equal and block-aligned). loss_chunk: tokens per chunk of the loss
// (0 = automatic). n_slots activation sets are allocated, one per micro-batch the
// pipeline schedule keeps in flight (1 without a pipeline); slot 0 is in use until
// zt_gpt2_use_slot picks another. Weights are zero until zt_gpt2_init_random or a
// checkpoint fills them. With tp > 1, tp_comm is the stage's tp group (rank tp_rank
// of size tp): forward and backward issue its all-reduces. Free with zt_gpt2_free.
// dtype: ZT_F32, or ZT_BF16 on a backend whose caps.bf16 is 1. opts: how the activations
// are kept (recomputation, sequence parallelism; NULL: all kept, whole rows); sequence
// parallelism (ignored at tp 1) needs tp to divide B*T (ZT_ERR otherwise), and the stage's
// inputs and outputs are then this rank's rows only.
zt_status zt_gpt2_init(zt_gpt2 *m, const zt_backend *be, const zt_model_shape *s, int unit_first,
                       int unit_last, int tp, int tp_rank, size_t align, size_t pad_multiple,
                       int B, int T, int loss_chunk, int n_slots, const zt_comm *tp_comm,
                       zt_dtype dtype, const zt_act_options *opts);

// An interleaved pipeline rank's model (docs/design.md, "Pipeline"): the parameters and
// gradients of n_ranges unit ranges (its chunks) as one flat buffer each
// (zt_layout_init_ranges), padded to `pad_multiple` as zt_gpt2_init pads, and their views;
// no activations: its chunks compute through views (zt_gpt2_init_view). Free with
// zt_gpt2_free after the views.
zt_status zt_gpt2_init_ranges(zt_gpt2 *m, const zt_backend *be, const zt_model_shape *s,
                              int n_ranges, const int *firsts, const int *lasts, int tp,
                              int tp_rank, size_t align, size_t pad_multiple, zt_dtype dtype);
// A view computing units [unit_first, unit_last) (one of owner's ranges) over owner's
// parameters and gradients, with activations of its own (n_slots and opts as zt_gpt2_init;
// tp_comm owner's tp group). Its layout is the chunk's tensors at owner's offsets (numel
// owner's), so its gradient announcements and parameter requests name owner's buffer. The
// hooks are the caller's to set. Free with zt_gpt2_free, before owner.
zt_status zt_gpt2_init_view(zt_gpt2 *view, const zt_gpt2 *owner, int unit_first, int unit_last,
                            int B, int T, int loss_chunk, int n_slots, const zt_comm *tp_comm,
                            const zt_act_options *opts);

// Points the activations (m->a, not the shared backward scratch) at slot `slot`: the
// forward and backward of one micro-batch must use the same slot.
void zt_gpt2_use_slot(zt_gpt2 *m, int slot);
void zt_gpt2_free(zt_gpt2 *m);

// (src/model/gpt2_zeroed.c) Zeroes the gradients for a step's first micro-batch and marks
// the product-written ones zeroed (zt_gpt2_zeroed): the tied wte (the lm-head's weight
// gradient) and, under bf16, the blocks' four weight matrices (gemm_mixed's; fp32's fused
// backward ops only add). _new makes the list for a model of n_layer blocks; _free takes
// NULL too.
void zt_gpt2_zero_grads(zt_gpt2 *m);
zt_gpt2_zeroed *zt_gpt2_zeroed_new(int n_layer);
void zt_gpt2_zeroed_free(zt_gpt2_zeroed *z);
// The beta of a product adding into gradient g: 0 while g is still zeroed, and from then on
// it is not; else 1. An op that adds into g otherwise takes it too (and writes onto the
// zeros).
float zt_gpt2_grad_beta(const zt_gpt2 *m, const void *g);

// The bytes zt_gpt2_init with the same arguments would allocate, per memory category,
// computed without allocating (so a run that cannot fit is refused before it starts).
// attn_work: the floats of attention scratch the backend asks for, gemm_work_bytes its
// gemm_mixed scratch (zt_backend_caps; used under bf16 only).
zt_status zt_gpt2_footprint(size_t bytes[ZT_MEM_NCAT], const zt_model_shape *s, int unit_first,
                            int unit_last, int tp, int tp_rank, size_t align, size_t pad_multiple,
                            int B, int T, int loss_chunk, int n_slots, size_t attn_work,
                            zt_dtype dtype, size_t gemm_work_bytes,
                            const zt_act_options *opts);

// Token rows of one micro-batch of N = B*T that this tp rank's stage input, output and
// per-row activations hold: N/tp with sequence parallelism at tp > 1, else N.
static inline size_t zt_gpt2_rows(int B, int T, int tp, int seq_parallel) {
    size_t N = (size_t)B * T;
    return seq_parallel && tp > 1 ? N / (size_t)tp : N;
}

// The residual stream's dtype (docs/design.md, "bf16"): the model's, bf16 under bf16. What a
// stage's input and output and their gradients hold, so what the pipeline sends both ways.
static inline zt_dtype zt_gpt2_stream_dtype(const zt_gpt2 *m) { return m->dtype; }

// Bytes of one parameter (or gradient) element of the model.
static inline size_t zt_gpt2_elem_size(const zt_gpt2 *m) { return zt_dtype_size(m->dtype); }

// The parameters as one fp32 host array (layout.numel floats), whatever the dtype: for host
// code outside the step (initialization, loaders, checks, export). With `read` it holds the
// parameters (bf16 widened, exact), without it zeros. Unmap with `write` stores it back
// (rounded to nearest even under bf16) and releases it. Under fp32 this is the backend's
// map; under bf16 a host copy.
float *zt_gpt2_params_map(const zt_gpt2 *m, int read);
void zt_gpt2_params_unmap(const zt_gpt2 *m, float *host, int write);

// The automatic loss chunk for a vocabulary and a micro-batch of N tokens: at most
// ZT_LOSS_CHUNK_HOST_BYTES of logits (a CPU's memory; a GPU's run picks its own budget) of
// logit_size bytes each (the model's dtype: fp32 4, bf16 2; docs/design.md, "bf16").
int zt_gpt2_auto_loss_chunk(int padded_vocab, int N, size_t logit_size);
// The same with at most budget_bytes of logits per chunk (at least 128 tokens, chunks of
// equal size; N when the whole micro-batch fits).
int zt_gpt2_loss_chunk_for_budget(int padded_vocab, int N, size_t logit_size,
                                  size_t budget_bytes);
#define ZT_LOSS_CHUNK_HOST_BYTES ((size_t)64 << 20)

// GPT-2 initialization from a seed: normal(0, 0.02) for matrices and embeddings,
// 0.02/sqrt(2L) for residual projections, zero biases, unit LayerNorm weights, zero
// padded vocabulary rows. Each value depends only on (seed, name, global index).
void zt_gpt2_init_random(zt_gpt2 *m, uint64_t seed);

// Forward of this stage's units over tokens (B, T) (used when the stage has the
// embedding; else `input` (Nr, C) is the previous stage's output, Nr = zt_gpt2_rows, of
// zt_gpt2_stream_dtype; all device memory) and,
// on the last stage, the loss against targets. With `backward`, the head also computes its
// gradient (scaled by `loss_scale`, e.g. 1/tokens in the global batch) as it goes.
// Returns the sum of the per-token losses of the micro-batch on the last stage, else 0;
// with `backward`, 0: that sum is added on the device to the loss zt_gpt2_take_loss reads
// (a GPU then need not wait for it every micro-batch).
double zt_gpt2_forward(zt_gpt2 *m, const int32_t *tokens, const void *input,
                       const int32_t *targets, int backward, float loss_scale);

// The sum of the per-token losses of the forwards with `backward` since the last call (0 on
// a stage without the head); starts the next sum at 0. One copy: call it once a step.
double zt_gpt2_take_loss(zt_gpt2 *m);

// Backward of the blocks and the embedding, after zt_gpt2_forward(..., backward=1).
// On a stage without the head, `dout` (Nr, C) is the gradient of its output. Gradients
// are added into m->grads. If `dinput` is non-NULL (a stage without the embedding), the
// gradient of the stage's input (Nr, C) is written there. dout and dinput are of
// zt_gpt2_stream_dtype.
void zt_gpt2_backward(zt_gpt2 *m, const int32_t *tokens, const void *dout, void *dinput);

// The backward split in two (zero-bubble schedules, docs/design.md "Pipeline"), needs
// zt_act_options.w_slots > 0. The input-gradient pass (B) takes the same arguments as
// zt_gpt2_backward and writes the same dinput, and keeps in the W slot in use
// (zt_gpt2_use_wslot) what the weight-gradient pass needs; it computes no weight gradient
// except a recomputed block's (its whole backward: its activations do not outlive the pass)
// and announces nothing. The weight-gradient pass (W) of the same micro-batch, later, with
// its activation slot and W slot in use again (and the same tokens on the first stage), adds
// the weight gradients the combined backward would, bit for bit, and announces the tails as
// it does (zt_gpt2.grad_ready). The head's weight gradients stay in the forward.
void zt_gpt2_backward_input(zt_gpt2 *m, const int32_t *tokens, const void *dout,
                            void *dinput);
void zt_gpt2_backward_weight(zt_gpt2 *m, const int32_t *tokens);
// Points the W-slot views (m->w) at slot `slot` of [0, n_wslots).
void zt_gpt2_use_wslot(zt_gpt2 *m, int slot);

// The output of this stage's last unit (Nr, C) (for the next stage), of zt_gpt2_stream_dtype.
const void *zt_gpt2_output(const zt_gpt2 *m);

// Logits (N, Vp/tp) of the last forward (last stage): this tp rank's vocabulary slice
// (all N rows; with sequence parallelism collective over tp, which gathers ln_f's rows).
void zt_gpt2_logits(const zt_gpt2 *m, float *out);

#endif
