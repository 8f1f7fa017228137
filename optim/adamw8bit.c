// AdamW with block-wise 8-bit state over a range of the flat buffer (see adamw8bit.h).
#include "adamw8bit.h"

#include <string.h>

#include "adamw_math.h"
#include "memory.h"
#include "quant8_math.h"

zt_adamw8bit_options zt_adamw8bit_default_options(void) {
    zt_adamw8bit_options o = {.block_size = 256, .min_8bit_size = 4096, .fp32_embedding = 0};
    return o;
}

zt_status zt_adamw8bit_check_options(const zt_adamw8bit_options *opt, size_t align) {
    int b = opt->block_size;
    if (b < 64 || b > ZT_ADAMW8BIT_MAX_BLOCK || (b & (b - 1)) != 0)
        return zt_errorf("adamw8bit block_size %d is not a power of two from 64 to %d", b,
                         ZT_ADAMW8BIT_MAX_BLOCK);
    if (align % (size_t)b != 0)
        return zt_errorf("adamw8bit block_size %d does not divide the tensor alignment of %zu "
                         "elements, so a block could straddle two tensors or two ZeRO shards; "
                         "use a block size that divides %zu",
                         b, align, align);
    if (opt->min_8bit_size < 0)
        return zt_errorf("adamw8bit min_8bit_size %lld is negative; use 0 to keep every "
                         "tensor's state in 8 bits",
                         (long long)opt->min_8bit_size);
    return ZT_OK;
}

int zt_adamw8bit_is_8bit(const zt_tensor_desc *t, const zt_adamw8bit_options *opt) {
    int64_t global = t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
    if (global < opt->min_8bit_size) return 0;
    if (opt->fp32_embedding && strcmp(t->name, "wte.weight") == 0) return 0;
    return 1;
}

typedef struct {
    int n_pieces;
    size_t n32, n8, n_blocks;
} sizes;

// Walks the tensors that meet [lo, hi) in flat order; fills `out` (when not NULL) with
// one piece per tensor and returns the totals. init and state_bytes both call it, so the
// prediction and the allocation cannot drift apart.
static sizes plan(const zt_layout *lay, size_t lo, size_t hi, const zt_adamw8bit_options *opt,
                  zt_adamw8bit_piece *out) {
    ZT_ASSERT(zt_adamw8bit_check_options(opt, lay->align) == ZT_OK);
    size_t B = (size_t)opt->block_size;
    // docs/design.md §3: shards and tensors start on block boundaries (a layout or shard bug
    // otherwise, never user input: check_options already tied the block to the alignment)
    ZT_ASSERTF(lo <= hi && hi <= lay->numel && lo % B == 0 && hi % B == 0,
               "adamw8bit range [%zu, %zu) of a %zu-element buffer is not aligned to the "
               "block size %zu",
               lo, hi, lay->numel, B);
    sizes s = {0, 0, 0, 0};
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        size_t a = t->offset > lo ? t->offset : lo;
        size_t b = zt_min_sz(t->offset + t->numel, hi);
        if (a >= b) continue;
        ZT_ASSERTF(t->offset % B == 0, "tensor %s starts at %zu, not a multiple of the block %zu",
                   t->name, t->offset, B);
        int q = zt_adamw8bit_is_8bit(t, opt);
        if (out) {
            zt_adamw8bit_piece *p = &out[s.n_pieces];
            p->a = a;
            p->b = b;
            p->tensor = i;
            p->is_8bit = q;
            p->state = q ? s.n8 : s.n32;
            p->block = q ? s.n_blocks : 0;
        }
        if (q) {
            s.n8 += b - a;
            s.n_blocks += (b - a + B - 1) / B; // the tensor's last block may be partial
        } else {
            s.n32 += b - a;
        }
        s.n_pieces++;
    }
    return s;
}

static size_t bytes_of(sizes s) {
    return (size_t)s.n_pieces * sizeof(zt_adamw8bit_piece) + 2 * s.n32 * sizeof(float) +
           2 * s.n8 * sizeof(uint8_t) + 2 * s.n_blocks * sizeof(float);
}

size_t zt_adamw8bit_state_bytes(const zt_layout *lay, size_t lo, size_t hi,
                                const zt_adamw8bit_options *opt) {
    return bytes_of(plan(lay, lo, hi, opt, NULL));
}

zt_status zt_adamw8bit_init(zt_adamw8bit *o, const zt_backend *be, const zt_layout *lay,
                            size_t lo, size_t hi, const zt_adamw8bit_options *opt,
                            zt_dtype dtype) {
    memset(o, 0, sizeof *o);
    ZT_TRY(zt_adamw8bit_check_options(opt, lay->align));
    o->be = be;
    o->lo = lo;
    o->hi = hi;
    o->dtype = dtype;
    o->master = zt_master_alloc(be, dtype, hi - lo);
    o->opt = *opt;
    sizes s = plan(lay, lo, hi, opt, NULL);
    o->pieces = zt_mem_alloc(ZT_MEM_OPTIMIZER, (size_t)s.n_pieces * sizeof *o->pieces);
    sizes again = plan(lay, lo, hi, opt, o->pieces);
    ZT_ASSERT(again.n_pieces == s.n_pieces);
    o->n_pieces = s.n_pieces;
    o->n32 = s.n32;
    o->n8 = s.n8;
    o->n_blocks = s.n_blocks;
    o->m32 = zt_be_alloc(be, ZT_MEM_OPTIMIZER, s.n32 * sizeof(float));
    o->v32 = zt_be_alloc(be, ZT_MEM_OPTIMIZER, s.n32 * sizeof(float));
    o->qm = zt_be_alloc(be, ZT_MEM_OPTIMIZER, s.n8 * sizeof(uint8_t));
    o->qv = zt_be_alloc(be, ZT_MEM_OPTIMIZER, s.n8 * sizeof(uint8_t));
    o->absmax_m = zt_be_alloc(be, ZT_MEM_OPTIMIZER, s.n_blocks * sizeof(float));
    o->absmax_v = zt_be_alloc(be, ZT_MEM_OPTIMIZER, s.n_blocks * sizeof(float));
    zt_q8_make_map(o->map_m, 1);
    zt_q8_make_map(o->map_v, 0);
    // m = v = 0: absmax 0 (zero-filled) and the code of 0 (127 in the signed map, whose
    // code 0 is -0.99; in the unsigned one code 0, the floor, which is 0 under absmax 0)
    if (s.n8) {
        be->ops->memset(be, o->qm, zt_q8_quantize(o->map_m, 0.0f, 0.0f), s.n8);
        be->ops->memset(be, o->qv, zt_q8_quantize(o->map_v, 0.0f, 0.0f), s.n8);
    }
    o->t = 0;
    return ZT_OK;
}

void zt_adamw8bit_free(zt_adamw8bit *o) {
    zt_mem_free(o->pieces);
    if (o->be) {
        zt_be_free(o->be, o->master);
        zt_be_free(o->be, o->m32);
        zt_be_free(o->be, o->v32);
        zt_be_free(o->be, o->qm);
        zt_be_free(o->be, o->qv);
        zt_be_free(o->be, o->absmax_m);
        zt_be_free(o->be, o->absmax_v);
    }
    o->pieces = NULL;
    o->master = o->m32 = o->v32 = o->absmax_m = o->absmax_v = NULL;
    o->qm = o->qv = NULL;
    o->n_pieces = 0;
    o->n32 = o->n8 = o->n_blocks = 0;
}

// One piece's update under bf16: the fp32 masters, rounded into params.
static void step_piece_bf16(const zt_adamw8bit *o, const zt_adamw8bit_piece *p, zt_bf16 *params,
                            const zt_bf16 *grads, float wd, const zt_adamw_hparams *h) {
    const zt_backend *be = o->be;
    float *master = o->master + (p->a - o->lo);
    size_t n = p->b - p->a;
    if (!p->is_8bit)
        be->ops->adamw_bf16(be, master, params + p->a, o->m32 + p->state, o->v32 + p->state,
                            grads + p->a, n, wd, h);
    else
        be->ops->adamw8bit_bf16(be, master, params + p->a, grads + p->a, o->qm + p->state,
                                o->qv + p->state, o->absmax_m + p->block,
                                o->absmax_v + p->block, n, o->opt.block_size, o->map_m,
                                o->map_v, wd, h);
}

void zt_adamw8bit_step(zt_adamw8bit *o, void *params, const void *grads, const zt_layout *lay,
                       const zt_adamw_config *c, float lr, float grad_scale) {
    o->t++;
    // the same constants zt_adamw_step uses, so fp32 pieces match zt_adamw bit for bit
    zt_adamw_hparams h = zt_adamw_hparams_at(c, o->t, lr, grad_scale);
    const zt_backend *be = o->be;
    for (int k = 0; k < o->n_pieces; k++) {
        const zt_adamw8bit_piece *p = &o->pieces[k];
        ZT_ASSERT(p->tensor < lay->n);
        const zt_tensor_desc *t = &lay->t[p->tensor];
        ZT_ASSERTF(p->a >= t->offset && p->b <= t->offset + t->numel,
                   "adamw8bit step given a different layout than init (%s)", t->name);
        float wd = t->decay ? c->weight_decay : 0.0f;
        size_t n = p->b - p->a;
        float *pf = params;
        const float *gf = grads;
        if (o->dtype == ZT_BF16)
            step_piece_bf16(o, p, params, grads, wd, &h);
        else if (!p->is_8bit)
            be->ops->adamw(be, pf + p->a, o->m32 + p->state, o->v32 + p->state, gf + p->a, n, wd,
                           &h);
        else
            be->ops->adamw8bit(be, pf + p->a, gf + p->a, o->qm + p->state, o->qv + p->state,
                               o->absmax_m + p->block, o->absmax_v + p->block, n,
                               o->opt.block_size, o->map_m, o->map_v, wd, &h);
    }
}
