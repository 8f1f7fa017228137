// AdamW with block-wise 8-bit state (Dettmers et al. 2021, bitsandbytes' AdamW8bit) over
// one contiguous range of the flat parameter buffer: the whole buffer (--zero 0) or this
// rank's ZeRO shard (--zero 1). docs/design.md §7.
//
// Per tensor, m and v are kept either
//   - in 8 bits: m as codes into the signed dynamic map, v as codes into the unsigned
//     one (kernels/quant8_math.h), one fp32 absmax per block of `block_size` values for
//     each; blocks start at the tensor's offset, so the last block of a tensor may be
//     partial and a block never holds two tensors' values; or
//   - in fp32, exactly as zt_adamw: tensors with fewer than `min_8bit_size` elements (as
//     bitsandbytes), and wte.weight when `fp32_embedding` is set.
// Each step, per block: dequantize m and v, run the fp32 AdamW element update
// (zt_adamw_update: the same weight decay, bias correction and gradient scaling as
// zt_adamw), then requantize with the block's new absmax (max |value| after the update,
// so no value is clipped). This is bitsandbytes' kOptimizerStatic8bit2StateBlockwise.
// An m below about 2.7e-7 of its block's absmax is stored as 0; v is never stored below
// 0.55e-7 of its block's absmax (the v map has no zero code: kernels/quant8_math.h), so an
// element with m != 0 never divides by a v of 0, where bitsandbytes' map gave updates of
// lr m / eps (issue 41; tests/test_adamw8bit.c bounds the update against fp32 AdamW's).
//
// Block boundaries follow tensors, and [lo, hi) and every tensor offset are multiples of
// the block size (docs/design.md §3), so a ZeRO shard updates its elements exactly as the
// whole-buffer optimizer does. Alignment padding between tensors is never read or written.
#ifndef ZT_ADAMW8BIT_H
#define ZT_ADAMW8BIT_H

#include <stddef.h>
#include <stdint.h>

#include "adamw.h"
#include "common.h"
#include "layout.h"
#include "quant8_math.h"

#define ZT_ADAMW8BIT_MAX_BLOCK ZT_Q8_MAX_BLOCK // largest block_size

typedef struct {
    // Values per absmax. 256: bitsandbytes' blockwise optimizers today (BLOCKSIZE_2STATE
    // in its CUDA kernels; optimizer.py sizes absmax as ceil(n / 256)); the paper and
    // earlier bitsandbytes releases used 2048. Must divide the layout's alignment (below).
    int block_size;
    // Tensors with fewer elements keep fp32 state: bitsandbytes' Optimizer2State default
    // min_8bit_size=4096 (its init_state also forces fp32 below 4096 whatever the
    // setting). We compare the tensor's global element count, not its tp-local one, so
    // the choice is a property of the model tensor and survives a change of tp.
    int64_t min_8bit_size;
    // Keep wte.weight's state in fp32: the paper's stable embedding layer uses 32-bit
    // state for embeddings (bitsandbytes.nn.StableEmbedding overrides optim_bits=32, as
    // the Hugging Face Trainer does for every nn.Embedding under Adam8bit). Off by
    // default, as in bitsandbytes.optim.AdamW8bit itself: for GPT-2 124M it would
    // cost 6 bytes x 38.6M values (232 MB) of the ~740 MB the 8-bit state saves.
    int fp32_embedding;
} zt_adamw8bit_options;

// block_size 256, min_8bit_size 4096, fp32_embedding 0.
zt_adamw8bit_options zt_adamw8bit_default_options(void);

// Checks options that a user sets, for a layout aligned to `align` elements (lay->align;
// 256 today). block_size must be a power of two in [64, 4096] (bitsandbytes' range of
// blockwise sizes) that divides `align`: tensors start on multiples of `align` and ZeRO
// shards on multiples of dp * align, so any such block starts on a tensor or shard
// boundary and never straddles one. With align 256 that allows 64, 128 and 256; the
// paper's 2048 needs a layout aligned to 2048 (up to 2047 more padding elements per
// tensor), which the check then accepts. min_8bit_size must be >= 0. Returns ZT_ERR with a
// message naming the option.
zt_status zt_adamw8bit_check_options(const zt_adamw8bit_options *opt, size_t align);

// Whether tensor `t` keeps 8-bit state under `opt`.
int zt_adamw8bit_is_8bit(const zt_tensor_desc *t, const zt_adamw8bit_options *opt);

// One tensor's part of [lo, hi) and where its state lives.
typedef struct {
    size_t a, b;      // flat element range [a, b), inside one tensor and inside [lo, hi)
    int tensor;       // index in the layout
    int is_8bit;      // 1: codes + absmax; 0: fp32 m32/v32
    size_t state;     // first element of this piece in m32/v32 (fp32) or qm/qv (8-bit)
    size_t block;     // first absmax of this piece (8-bit; blocks = ceil((b - a) / block))
} zt_adamw8bit_piece;

typedef struct {
    size_t lo, hi;                  // element range [lo, hi) of the flat buffer updated
    zt_adamw8bit_options opt;
    float map_m[ZT_Q8_CODES];       // (256) signed dynamic map, ascending
    float map_v[ZT_Q8_CODES];       // (256) unsigned dynamic map, ascending
    zt_adamw8bit_piece *pieces;     // (n_pieces) in flat order
    int n_pieces;
    size_t n32, n8, n_blocks;       // fp32 state values, 8-bit state values, blocks
    const zt_backend *be;           // where the state below lives and the update runs
    zt_dtype dtype;                 // the parameters' and gradients' type: ZT_F32 or ZT_BF16
    float *master;                  // (hi - lo) fp32 master weights under bf16, else NULL
    float *m32, *v32;               // (n32) moments of the fp32 pieces, piece after piece
    uint8_t *qm;                    // (n8) m codes into map_m
    uint8_t *qv;                    // (n8) v codes into map_v
    float *absmax_m, *absmax_v;     // (n_blocks) per-block scales
    int t;                          // steps taken (for bias correction)
} zt_adamw8bit;

// Bytes that zt_adamw8bit_init allocates (category optimizer) for [lo, hi) of `lay`:
// the piece table, fp32 m and v of the fp32 tensors, one code per value for m and for v,
// two fp32 absmax per block. Exact, so the planner can predict it. `opt` must pass
// zt_adamw8bit_check_options (asserted).
size_t zt_adamw8bit_state_bytes(const zt_layout *lay, size_t lo, size_t hi,
                                const zt_adamw8bit_options *opt);

// Allocates zeroed state for [lo, hi) on `be` (m = v = 0: codes of 0, absmax 0; the
// piece table in host memory), sized from the layout; nothing is allocated later.
// Returns ZT_ERR (nothing allocated) when the options fail zt_adamw8bit_check_options for lay->align. lo and hi must be multiples of
// the block size (asserted: docs/design.md §3 guarantees it). Free with zt_adamw8bit_free,
// which accepts a half-built or zeroed object.
// dtype ZT_BF16 adds fp32 master weights for [lo, hi) (as zt_adamw_init).
zt_status zt_adamw8bit_init(zt_adamw8bit *o, const zt_backend *be, const zt_layout *lay,
                            size_t lo, size_t hi, const zt_adamw8bit_options *opt,
                            zt_dtype dtype);
void zt_adamw8bit_free(zt_adamw8bit *o);

// One step on params[lo, hi) from grads[lo, hi) (device memory of the backend given to
// init, both indexed like the flat buffer), the
// gradient first multiplied by grad_scale (clipping); `lay` must be the layout given to
// init. Weight decay applies to the tensors the layout marks `decay`; padding is left
// alone. Tensors with fp32 state get bit-for-bit zt_adamw's result.
void zt_adamw8bit_step(zt_adamw8bit *o, void *params, const void *grads, const zt_layout *lay,
                       const zt_adamw_config *c, float lr, float grad_scale);

#endif
