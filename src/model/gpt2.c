// GPT-2 forward and backward on one stage and one tp rank: embedding, transformer
// blocks, and a head that computes the loss (and its gradient) in chunks of tokens, so
// the logits of a whole micro-batch never exist at once (docs/design.md §5).
//
// Tensor parallel as in Megatron-LM: c_attn and c_fc are column-parallel (this rank's
// heads, this rank's share of the MLP width), c_proj row-parallel; the residual
// stream, the LayerNorms and the row-parallel biases are whole on every rank. One
// all-reduce after each row-parallel forward, one on the input gradient of each
// column-parallel backward; the embedding and the lm-head are split over the padded
// vocabulary. With sequence parallelism (Megatron-LM's, docs/design.md "Sequence
// parallelism") the residual stream and the LayerNorms hold this rank's 1/tp of the rows:
// an all-gather before each column-parallel product and a reduce-scatter after each
// row-parallel one replace the all-reduce, mirrored in the backward.
#include "gpt2.h"

#include <math.h>
#include <string.h>

#include "gpt2_ops.h"
#include "memory.h"
#include "rng.h"
#include "vocab_loss.h"

// A kernel call on the model's backend: K(layernorm_forward, out, ...).
#define K(fn, ...) m->be->ops->fn(m->be, __VA_ARGS__)

static int has_embed(const zt_gpt2 *m) { return m->layout.unit_first == ZT_UNIT_EMBED; }
static int has_head(const zt_gpt2 *m) { return m->layout.unit_last == zt_unit_count(&m->shape); }
static int first_layer(const zt_gpt2 *m) { return has_embed(m) ? 0 : m->layout.unit_first - 1; }
static int n_local_layers(const zt_gpt2 *m) {
    int last = has_head(m) ? m->shape.n_layer : m->layout.unit_last - 1;
    return last - first_layer(m);
}

// Sums a replicated (N, C) buffer's partial values (of dtype dt) over the tp group, in place.
static void tp_sum(const zt_gpt2 *m, void *x, size_t n, zt_dtype dt) {
    if (m->tp_comm && m->tp_comm->size > 1)
        zt_comm_all_reduce(m->tp_comm, x, x, n, dt, ZT_REDUCE_SUM, NULL);
}

static int is_bf16(const zt_gpt2 *m) { return m->dtype == ZT_BF16; }

const char *zt_recompute_mode_name(zt_recompute_mode mode) {
    switch (mode) {
    case ZT_RECOMPUTE_NONE: return "none";
    case ZT_RECOMPUTE_SELECTIVE: return "selective";
    case ZT_RECOMPUTE_FULL: return "full";
    }
    return "?";
}

static void *view(const zt_layout *lay, void *base, size_t elem, const char *name) {
    int i = zt_layout_find(lay, name);
    return i < 0 ? NULL : (char *)base + lay->t[i].offset * elem;
}

static void bind(zt_gpt2_tensors *v, const zt_layout *lay, void *base, size_t elem, int L) {
    v->wte = view(lay, base, elem, "wte.weight");
    v->wpe = view(lay, base, elem, "wpe.weight");
    v->lnfw = view(lay, base, elem, "ln_f.weight");
    v->lnfb = view(lay, base, elem, "ln_f.bias");
    char name[64];
    for (int l = 0; l < L; l++) {
        zt_block_tensors *b = &v->h[l];
#define V(field, suffix)                                   \
    do {                                                   \
        snprintf(name, sizeof name, "h.%d.%s", l, suffix); \
        b->field = view(lay, base, elem, name);            \
    } while (0)
        V(ln1w, "ln_1.weight");
        V(ln1b, "ln_1.bias");
        V(qkvw, "attn.c_attn.weight");
        V(qkvb, "attn.c_attn.bias");
        V(attprojw, "attn.c_proj.weight");
        V(attprojb, "attn.c_proj.bias");
        V(ln2w, "ln_2.weight");
        V(ln2b, "ln_2.bias");
        V(fcw, "mlp.c_fc.weight");
        V(fcb, "mlp.c_fc.bias");
        V(fcprojw, "mlp.c_proj.weight");
        V(fcprojb, "mlp.c_proj.bias");
#undef V
    }
}

int zt_gpt2_auto_loss_chunk(int padded_vocab, int N, size_t logit_size) {
    return zt_gpt2_loss_chunk_for_budget(padded_vocab, N, logit_size, ZT_LOSS_CHUNK_HOST_BYTES);
}

int zt_gpt2_loss_chunk_for_budget(int padded_vocab, int N, size_t logit_size,
                                  size_t budget_bytes) {
    // At most budget_bytes of logits per chunk, but at least 128 tokens so the lm-head
    // GEMM stays efficient. Chunks of equal size: no short last chunk, whose lm-head
    // GEMMs run slowly and whose wte-gradient GEMM streams all of wte's gradient for a
    // few tokens (N = 1024: 4 x 256 instead of 3 x 333 + 25, ~5% of the head's time).
    size_t cap = budget_bytes / ((size_t)padded_vocab * logit_size);
    if (cap < 128) cap = 128;
    if (cap >= (size_t)N) return N;
    size_t chunks = ((size_t)N + cap - 1) / cap;
    size_t c = ((size_t)N + chunks - 1) / chunks; // <= cap
    return (int)(c < 128 ? 128 : c);
}

// Hands out consecutive 64-byte aligned pieces of one block.
typedef struct {
    float *base;
    size_t used;
} carver;
static float *carve(carver *c, size_t n) {
    float *p = c->base ? c->base + c->used : NULL;
    c->used += zt_round_up(n, 16);
    return p;
}

// The stored activations but the statistics and the losses (LayerNorms' outputs, q, k, v,
// attention's output, c_fc's and GELU's) are of the model's dtype: under bf16 they are bf16
// (docs/design.md, "bf16": which tensor has which type, and why).
static zt_dtype in_dt(const zt_gpt2 *m) { return m->dtype; }
// So is the residual stream (encoded, res2, res3: the stage's input and output), as llm.c's
// floatX: its sums in fp32, rounded once per add.
static zt_dtype res_dt(const zt_gpt2 *m) { return m->dtype; }
static void *carve_in(carver *c, size_t n, const zt_gpt2 *m) {
    return carve(c, (n * zt_dtype_size(in_dt(m)) + sizeof(float) - 1) / sizeof(float));
}
// Element i of a product-input activation.
static void *in_at(const zt_gpt2 *m, void *base, size_t i) {
    return (char *)base + i * zt_dtype_size(in_dt(m));
}
// The activation gradients the products read are of the model's dtype: the residual stream's
// (dres, dhead: each LayerNorm backward adds into it in fp32 and rounds once), d(fch) (GELU's
// backward) and dqkv (attention's backward), the last two written rounded once into dout16;
// the products and bias gradients read them as they lie (no rounding pass). The gradients
// summed over tp (dln) or widened anyway by the blocked attention (datty) stay fp32
// (docs/design.md, "bf16").
static zt_dtype grad_dt(const zt_gpt2 *m) { return m->dtype; }
static void *fch_grad(const zt_gpt2 *m) { return is_bf16(m) ? m->a.dout16 : m->a.dfch; }
static void *qkv_grad(const zt_gpt2 *m) { return is_bf16(m) ? m->a.dout16 : m->a.dqkv; }

// ---------------------------------------------------------------- sequence parallelism

// Rows of the per-row tensors on this rank (the residual stream, the LayerNorms, the
// stage's input and output): N/tp with sequence parallelism, else N.
static size_t rows(const zt_gpt2 *m) {
    return zt_gpt2_rows(m->B, m->T, m->layout.tp, m->seq_parallel);
}

// Sequence parallelism's scratch in the workspace, shared by every layer and slot: the
// gathered LayerNorm output a column-parallel product reads, and one LayerNorm's weight
// and bias gradient before and after its sum over tp. Nothing without it.
static void carve_seq_parallel(zt_gpt2_acts *a, carver *ws, const zt_gpt2 *m) {
    size_t N = (size_t)m->B * m->T, C = (size_t)m->shape.n_embd, sp = m->seq_parallel ? 1 : 0;
    a->gathered = carve_in(ws, sp * N * C, m);
    a->ln_grad = carve_in(ws, sp * 2 * C, m);
    a->ln_grad_sum = carve(ws, sp * 2 * C);
}

// ---------------------------------------------------------------- recomputation

// Whether the recompute mode drops the tensors selective drops (`sel`) or those only full
// drops (!sel) from the blocks it recomputes.
static int mode_drops(const zt_gpt2 *m, int sel) {
    zt_recompute_mode mode = m->recompute.mode;
    return mode == ZT_RECOMPUTE_FULL || (sel && mode == ZT_RECOMPUTE_SELECTIVE);
}
// Whether block li (of this stage) recomputes rather than keeps those tensors.
static int drops(const zt_gpt2 *m, int li, int sel) {
    return li < m->n_recomputed && mode_drops(m, sel);
}
// Blocks that keep those tensors per layer: the ones after the recomputed blocks.
static size_t kept_layers(const zt_gpt2 *m, int sel) {
    return (size_t)(n_local_layers(m) - (mode_drops(m, sel) ? m->n_recomputed : 0));
}
// Layers of the recompute set holding those tensors (one, shared by the recomputed blocks).
static size_t recomp_layers(const zt_gpt2 *m, int sel) {
    return m->n_recomputed > 0 && mode_drops(m, sel);
}

// A block tensor set `b` of K layers from `c`: sel layers of the tensors selective
// recomputation drops (ln1, ln2, GELU's output), full layers of the others full drops, out
// layers of the block outputs res3.
static void carve_blocks(zt_block_acts *b, carver *c, const zt_gpt2 *m, size_t sel, size_t full,
                         size_t out) {
    size_t N = (size_t)m->B * m->T, C = (size_t)m->shape.n_embd, tp = (size_t)m->layout.tp;
    size_t Cl = C / tp, NH = (size_t)m->shape.n_head / tp, Nr = rows(m);
    b->ln1 = carve_in(c, sel * Nr * C, m);
    b->ln1_mean = carve(c, full * Nr);
    b->ln1_rstd = carve(c, full * Nr);
    b->qkv = carve_in(c, full * N * 3 * Cl, m);
    b->atty = carve_in(c, full * N * Cl, m);
    b->lse = carve(c, full * N * NH);
    b->res2 = carve_in(c, full * Nr * C, m);
    b->ln2 = carve_in(c, sel * Nr * C, m);
    b->ln2_mean = carve(c, full * Nr);
    b->ln2_rstd = carve(c, full * Nr);
    b->fch = carve_in(c, full * N * 4 * Cl, m);
    b->fch_gelu = carve_in(c, sel * N * 4 * Cl, m);
    b->res3 = carve_in(c, out * Nr * C, m);
}

// Carves one micro-batch's activations from `act`, the workspace from `ws` and the
// loss's logits from `lg` (NULL bases just count; ws NULL skips the workspace and the
// logits); the carvers end up holding the totals. The per-layer arrays of what a
// recomputed block drops (ln1, ln2, GELU's output under selective; all but res3 under full)
// have kept_layers() layers, and the workspace holds one layer of them for the recomputation.
static void carve_acts(zt_gpt2_acts *a, carver *act, carver *ws, carver *lg, const zt_gpt2 *m) {
    size_t N = (size_t)m->B * m->T, C = (size_t)m->shape.n_embd, tp = (size_t)m->layout.tp;
    size_t nl = (size_t)n_local_layers(m), Cl = C / tp; // this rank's heads' channels
    size_t Vl = (size_t)m->shape.padded_vocab / tp;
    size_t Nr = rows(m); // the per-row tensors' rows: N, or N/tp with sequence parallelism
    int head = has_head(m), bf16 = is_bf16(m);
    a->encoded = carve_in(act, Nr * C, m);
    carve_blocks(&a->layers, act, m, kept_layers(m, 1), kept_layers(m, 0), nl);
    a->lnf = carve_in(act, head ? Nr * C : 0, m);
    a->lnf_mean = carve(act, head ? Nr : 0);
    a->lnf_rstd = carve(act, head ? Nr : 0);
    a->losses = carve(act, head ? N : 0);
    a->dhead = carve_in(act, head ? Nr * C : 0, m);
    if (!ws) return; // re-carving one slot's activations only
    a->dres = carve_in(ws, Nr * C, m);
    a->dln = carve(ws, N * C);
    a->datty = carve(ws, N * Cl);
    int blocks16 = bf16 && nl > 0; // what only the blocks use (an embedding-only or
                                   // head-only stage has none)
    a->dqkv = carve(ws, bf16 ? 0 : N * 3 * Cl); // bf16: in dout16 (qkv_grad)
    // bf16: GELU's output gradient, and attention's `wide` scratch (backend_ops.h: qkv
    // widened, then the fp32 dqkv before its rounding)
    a->dfch = carve(ws, N * (blocks16 ? 6 : 4) * Cl);
    a->scratch = carve(ws, N * C);
    a->dout16 = carve_in(ws, blocks16 ? N * 4 * Cl : 0, m); // d(fch), then dqkv
    carve_seq_parallel(a, ws, m);
    a->ln_drop = carve_in(ws, m->n_wslots ? 2 * C : 0, m);
    a->attn_work = carve(ws, nl ? m->attn_work_n : 0);
    a->gemm_work = carve(ws, m->gemm_work_n);
    carve_blocks(&a->recomp, ws, m, recomp_layers(m, 1), recomp_layers(m, 0), 0);
    a->logits = carve_in(lg, head ? (size_t)m->loss_chunk * Vl : 0, m);
    a->ce_work = carve(lg, head ? 3 * (size_t)m->loss_chunk : 0);
    a->loss_acc = (double *)carve(ws, head ? 2 : 0); // one double, 64-byte aligned
}

// Blocks whose weight gradients wait in a W slot: the ones not recomputed.
static size_t wgrad_layers(const zt_gpt2 *m) {
    return (size_t)(n_local_layers(m) - m->n_recomputed);
}

// Carves one W slot's views from c (a NULL base just counts): zt_gpt2_wgrads.
static void carve_wgrads(zt_gpt2_wgrads *w, carver *c, const zt_gpt2 *m) {
    size_t N = (size_t)m->B * m->T, C = (size_t)m->shape.n_embd, Cl = C / (size_t)m->layout.tp;
    size_t L = wgrad_layers(m), Nr = rows(m);
    w->dmlp = carve_in(c, L * N * C, m);
    w->dfch = carve_in(c, L * N * 4 * Cl, m);
    w->dln2 = carve(c, L * Nr * C);
    w->dattn = carve_in(c, L * N * C, m);
    w->dqkv = carve_in(c, L * N * 3 * Cl, m);
    w->dln1 = carve(c, L * Nr * C);
    w->dembed = carve(c, has_embed(m) ? N * C : 0);
}

// Sequence parallelism at tp > 1 (at tp 1 there is nothing to split: off); every tp rank
// takes a contiguous 1/tp of the B*T rows, so tp must divide them.
static zt_status plan_seq_parallel(zt_gpt2 *m, int seq_parallel) {
    int tp = m->layout.tp;
    m->seq_parallel = seq_parallel && tp > 1;
    if (m->seq_parallel && ((size_t)m->B * m->T) % (size_t)tp)
        return zt_errorf("--sequence-parallel splits a micro-batch's %d x %d = %zu token rows "
                         "over --tp %d, which does not divide them: choose --micro-batch and "
                         "--seq whose product is a multiple of %d",
                         m->B, m->T, (size_t)m->B * m->T, tp, tp);
    return ZT_OK;
}

// Fills everything but the allocations: shape, layout, sizes, loss chunk.
static zt_status plan(zt_gpt2 *m, const zt_model_shape *s, int unit_first, int unit_last, int tp,
                      int tp_rank, size_t align, size_t pad_multiple, int B, int T, int loss_chunk,
                      int n_slots, size_t attn_work, zt_dtype dtype, size_t gemm_work_bytes,
                      const zt_act_options *opts) {
    memset(m, 0, sizeof *m);
    ZT_ASSERT(dtype == ZT_F32 || dtype == ZT_BF16);
    m->dtype = dtype;
    m->attn_work_n = attn_work;
    m->gemm_work_n = dtype == ZT_BF16 ? (gemm_work_bytes + sizeof(float) - 1) / sizeof(float) : 0;
    m->shape = *s;
    ZT_ASSERT(n_slots >= 1);
    m->n_slots = n_slots;
    ZT_TRY(zt_layout_init(&m->layout, s, unit_first, unit_last, tp, tp_rank, align));
    m->layout.numel = zt_round_up(m->layout.numel, pad_multiple);
    m->B = B;
    m->T = T;
    zt_act_options none = {0};
    if (!opts) opts = &none;
    ZT_TRY(plan_seq_parallel(m, opts->seq_parallel));
    m->loss_chunk = loss_chunk > 0 ? (int)zt_min_sz((size_t)loss_chunk, (size_t)B * T)
                                   : zt_gpt2_auto_loss_chunk(s->padded_vocab / tp, B * T,
                                                             zt_dtype_size(dtype));
    m->recompute = opts->recompute;
    ZT_ASSERT(m->recompute.layers >= 0);
    int nl = n_local_layers(m);
    if (m->recompute.mode != ZT_RECOMPUTE_NONE)
        m->n_recomputed = m->recompute.layers && m->recompute.layers < nl ? m->recompute.layers : nl;
    ZT_ASSERT(opts->w_slots >= 0);
    m->n_wslots = opts->w_slots;
    if (m->n_wslots) {
        carver w = {0};
        carve_wgrads(&m->w, &w, m);
        m->wslot_floats = w.used;
    }
    return ZT_OK;
}

zt_status zt_gpt2_footprint(size_t bytes[ZT_MEM_NCAT], const zt_model_shape *s, int unit_first,
                            int unit_last, int tp, int tp_rank, size_t align, size_t pad_multiple,
                            int B, int T, int loss_chunk, int n_slots, size_t attn_work,
                            zt_dtype dtype, size_t gemm_work_bytes,
                            const zt_act_options *opts) {
    zt_gpt2 m;
    ZT_TRY(plan(&m, s, unit_first, unit_last, tp, tp_rank, align, pad_multiple, B, T, loss_chunk,
                n_slots, attn_work, dtype, gemm_work_bytes, opts));
    carver act = {0}, ws = {0}, lg = {0};
    carve_acts(&m.a, &act, &ws, &lg, &m);
    memset(bytes, 0, ZT_MEM_NCAT * sizeof(size_t));
    bytes[ZT_MEM_PARAMS] = bytes[ZT_MEM_GRADS] = m.layout.numel * zt_dtype_size(dtype);
    bytes[ZT_MEM_ACTIVATIONS] = act.used * sizeof(float) * (size_t)n_slots +
                                m.wslot_floats * sizeof(float) * (size_t)m.n_wslots;
    bytes[ZT_MEM_WORKSPACE] = ws.used * sizeof(float);
    bytes[ZT_MEM_LOGITS] = lg.used * sizeof(float);
    zt_layout_free(&m.layout);
    return ZT_OK;
}

// The parameter and gradient buffers of m->layout and their views.
static void alloc_params(zt_gpt2 *m) {
    size_t n = m->layout.numel, elem = zt_dtype_size(m->dtype);
    if (!m->is_view) {
        m->params = zt_be_alloc(m->be, ZT_MEM_PARAMS, n * elem);
        m->grads = zt_be_alloc(m->be, ZT_MEM_GRADS, n * elem);
        m->zeroed = zt_gpt2_zeroed_new(m->shape.n_layer);
    }
    m->p.h = calloc((size_t)m->shape.n_layer, sizeof(zt_block_tensors));
    m->g.h = calloc((size_t)m->shape.n_layer, sizeof(zt_block_tensors));
    ZT_ASSERT(m->p.h && m->g.h);
    bind(&m->p, &m->layout, m->params, elem, m->shape.n_layer);
    bind(&m->g, &m->layout, m->grads, elem, m->shape.n_layer);
}

// The activations, workspace, logits and W slots of a planned model.
static void alloc_acts(zt_gpt2 *m) {
    carver act = {0}, ws = {0}, lg = {0};
    carve_acts(&m->a, &act, &ws, &lg, m);
    m->slot_floats = act.used;
    act.base = zt_be_alloc(m->be, ZT_MEM_ACTIVATIONS,
                           act.used * sizeof(float) * (size_t)m->n_slots);
    ws.base = zt_be_alloc(m->be, ZT_MEM_WORKSPACE, ws.used * sizeof(float));
    lg.base = zt_be_alloc(m->be, ZT_MEM_LOGITS, lg.used * sizeof(float));
    act.used = ws.used = lg.used = 0;
    carve_acts(&m->a, &act, &ws, &lg, m);
    m->act_block = act.base;
    m->ws_block = ws.base;
    m->logits_block = lg.base;
    if (m->n_wslots) {
        m->w_block = zt_be_alloc(m->be, ZT_MEM_ACTIVATIONS,
                                 m->wslot_floats * sizeof(float) * (size_t)m->n_wslots);
        zt_gpt2_use_wslot(m, 0);
    }
}

zt_status zt_gpt2_init(zt_gpt2 *m, const zt_backend *be, const zt_model_shape *s, int unit_first,
                       int unit_last, int tp, int tp_rank, size_t align, size_t pad_multiple, int B,
                       int T, int loss_chunk, int n_slots, const zt_comm *tp_comm, zt_dtype dtype,
                       const zt_act_options *opts) {
    ZT_ASSERT(dtype == ZT_F32 || be->caps->bf16);
    ZT_TRY(plan(m, s, unit_first, unit_last, tp, tp_rank, align, pad_multiple, B, T, loss_chunk,
                n_slots, zt_backend_attention_workspace(be, T), dtype,
                be->caps->gemm_mixed_workspace, opts));
    m->be = be;
    ZT_ASSERT(tp == 1 || (tp_comm && tp_comm->size == tp && tp_comm->rank == tp_rank));
    m->tp_comm = tp > 1 ? tp_comm : NULL;
    alloc_params(m);
    alloc_acts(m);
    return ZT_OK;
}

double zt_gpt2_take_loss(zt_gpt2 *m) {
    double s = 0.0;
    if (!has_head(m)) return s;
    m->be->ops->copy(m->be, &s, m->a.loss_acc, sizeof s, ZT_COPY_D2H);
    m->be->ops->memset(m->be, m->a.loss_acc, 0, sizeof s);
    return s;
}

void zt_gpt2_use_slot(zt_gpt2 *m, int slot) {
    ZT_ASSERT(slot >= 0 && slot < m->n_slots);
    carver act = {(float *)m->act_block + (size_t)slot * m->slot_floats, 0};
    carve_acts(&m->a, &act, NULL, NULL, m);
}

void zt_gpt2_use_wslot(zt_gpt2 *m, int slot) {
    ZT_ASSERT(slot >= 0 && slot < m->n_wslots);
    carver c = {(float *)m->w_block + (size_t)slot * m->wslot_floats, 0};
    carve_wgrads(&m->w, &c, m);
}

void zt_gpt2_free(zt_gpt2 *m) {
    if (m->be) {
        if (m->w_block) zt_be_free(m->be, m->w_block);
        if (!m->is_view) zt_be_free(m->be, m->params);
        if (!m->is_view) zt_be_free(m->be, m->grads);
        if (m->act_block) zt_be_free(m->be, m->act_block); // none: zt_gpt2_init_ranges
        if (m->ws_block) zt_be_free(m->be, m->ws_block);
        if (m->logits_block) zt_be_free(m->be, m->logits_block);
    }
    if (!m->is_view) zt_gpt2_zeroed_free(m->zeroed);
    free(m->p.h);
    free(m->g.h);
    zt_layout_free(&m->layout);
    memset(m, 0, sizeof *m);
}

// Computed on the host, in a view of the parameters (the parameters themselves on the CPU).
void zt_gpt2_init_random(zt_gpt2 *m, uint64_t seed) {
    const zt_layout *lay = &m->layout;
    float proj_std = 0.02f / sqrtf(2.0f * m->shape.n_layer);
    float *params = zt_gpt2_params_map(m, 0);
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        float *p = params + t->offset;
        const char *name = t->name;
        size_t len = strlen(name);
        int is_bias = len > 5 && strcmp(name + len - 5, ".bias") == 0;
        int is_ln = strstr(name, "ln_") != NULL;
        if (is_bias) {
            memset(p, 0, t->numel * sizeof(float));
            continue;
        }
        if (is_ln) {
            for (size_t k = 0; k < t->numel; k++) p[k] = 1.0f;
            continue;
        }
        float std = strstr(name, "c_proj.weight") ? proj_std : 0.02f;
        uint64_t key = zt_splitmix64(seed) ^ zt_hash_str(name);
        size_t real_rows_end = (size_t)m->shape.vocab * (size_t)t->shape[1];
#pragma omp parallel for
        for (size_t k = 0; k < t->numel; k++) {
            size_t g = zt_layout_global_index(lay, t, k);
            p[k] =
                (t->split == ZT_SPLIT_VOCAB && g >= real_rows_end) ? 0.0f : std * zt_normal(key, g);
        }
    }
    zt_gpt2_params_unmap(m, params, 1);
}

float *zt_gpt2_params_map(const zt_gpt2 *m, int read) {
    size_t n = m->layout.numel;
    if (!is_bf16(m)) return zt_be_map(m->be, m->params, n * sizeof(float), read);
    float *host = calloc(n ? n : 1, sizeof(float));
    ZT_ASSERTF(host, "out of host memory for a %zu-value parameter view", n);
    if (read) {
        const zt_bf16 *p = zt_be_map(m->be, m->params, n * sizeof(zt_bf16), 1);
#pragma omp parallel for
        for (size_t i = 0; i < n; i++) host[i] = zt_bf16_to_fp32(p[i]);
        zt_be_unmap(m->be, m->params, (void *)p, n * sizeof(zt_bf16), 0);
    }
    return host;
}

void zt_gpt2_params_unmap(const zt_gpt2 *m, float *host, int write) {
    size_t n = m->layout.numel;
    if (!is_bf16(m)) {
        zt_be_unmap(m->be, m->params, host, n * sizeof(float), write);
        return;
    }
    if (write) {
        zt_bf16 *p = zt_be_map(m->be, m->params, n * sizeof(zt_bf16), 0);
#pragma omp parallel for
        for (size_t i = 0; i < n; i++) p[i] = zt_bf16_from_fp32(host[i]);
        zt_be_unmap(m->be, m->params, p, n * sizeof(zt_bf16), 1);
    }
    free(host);
}

// This tp rank's per-layer sizes: Cl = C/tp channels of its heads, NHl = NH/tp heads, Nr
// rows of the per-row tensors (rows()).
typedef struct {
    int B, T, N, C, Cl, NHl, Nr;
    size_t NC, NCl, NrC;
} dims;
static dims dims_of(const zt_gpt2 *m) {
    dims d;
    int tp = m->layout.tp;
    d.B = m->B;
    d.T = m->T;
    d.N = d.B * d.T;
    d.C = m->shape.n_embd;
    d.Cl = d.C / tp;
    d.NHl = m->shape.n_head / tp;
    d.NC = (size_t)d.N * d.C;
    d.NCl = (size_t)d.N * d.Cl;
    d.Nr = (int)rows(m);
    d.NrC = (size_t)d.Nr * d.C;
    return d;
}

// A row-parallel layer's bias is whole on every rank: only rank 0 adds it before the sum.
static const void *row_bias(const zt_gpt2 *m, const void *b) {
    return m->layout.tp_rank == 0 ? b : NULL;
}

// A column-parallel product's input from this rank's LayerNorm output ln (Nr, C) of the
// product inputs' dtype: ln itself, or with sequence parallelism every rank's rows gathered
// into the shared scratch (N, C). The backward gathers again rather than keep N rows a layer.
static const void *gather_ln(const zt_gpt2 *m, const void *ln) {
    if (!m->seq_parallel) return ln;
    zt_comm_all_gather(m->tp_comm, ln, m->a.gathered, (size_t)m->B * m->T * m->shape.n_embd,
                       in_dt(m), NULL);
    return m->a.gathered;
}

// The gradient x (Nr, C, of grad_dt) of this rank's rows as all N rows for a row-parallel
// backward or the embedding's: x itself, or with sequence parallelism gathered into full (N,
// C: the fp32 scratch holds a bf16 gather in its first half).
static const void *gather_grad(const zt_gpt2 *m, float *full, const void *x) {
    if (!m->seq_parallel) return x;
    zt_comm_all_gather(m->tp_comm, x, full, (size_t)m->B * m->T * m->shape.n_embd, grad_dt(m),
                       NULL);
    return full;
}

// Sums full (N, C), each rank's partial value of a row-parallel output (or a column-parallel
// input's gradient), over tp and returns this rank's rows of the sum: all of them
// (all-reduce), or with sequence parallelism its 1/tp (reduce-scatter, in place).
static const float *reduce_rows(const zt_gpt2 *m, float *full) {
    size_t NC = (size_t)m->B * m->T * m->shape.n_embd;
    if (!m->seq_parallel) {
        tp_sum(m, full, NC, ZT_F32);
        return full;
    }
    float *mine = full + (size_t)m->layout.tp_rank * rows(m) * m->shape.n_embd;
    zt_comm_reduce_scatter(m->tp_comm, full, mine, NC, ZT_F32, ZT_REDUCE_SUM, NULL);
    return mine;
}


// Adds the fp32 gradient x (n) into a gradient g of the model's dtype.
static void add_grad(const zt_gpt2 *m, void *g, const float *x, int n) {
    if (is_bf16(m)) K(bias_backward_bf16, g, x, ZT_F32, 1, n); // g += x's row, rounded once
    else K(add, g, g, x, (size_t)n);
}

// LayerNorm backward over this rank's rows. With sequence parallelism those are 1/tp of the
// rows, so the weight and bias gradients are summed over tp before they are added: every
// replica adds the same values and stays bit-identical (docs/design.md, "Sequence
// parallelism"). That sum happens here, per micro-batch, so the gradient is final when
// zt_gpt2_backward announces it.
// dinp is of gt: the residual stream's gradient (grad_dt), or fp32 where it is dropped.
static void ln_backward(zt_gpt2 *m, void *dinp, zt_dtype gt, void *dw, void *db,
                        const float *dout, const void *inp, const void *w, const float *mean,
                        const float *rstd) {
    int Nr = (int)rows(m), C = m->shape.n_embd;
    if (!m->seq_parallel) {
        zt_gpt2_layernorm_backward(m, dinp, gt, dw, db, dout, inp, res_dt(m), w, mean, rstd, Nr,
                                   C);
        return;
    }
    zt_gpt2_acts *a = &m->a;
    size_t es = zt_dtype_size(m->dtype);
    K(memset, a->ln_grad, 0, 2 * (size_t)C * es);
    zt_gpt2_layernorm_backward(m, dinp, gt, a->ln_grad, (char *)a->ln_grad + (size_t)C * es,
                               dout, inp, res_dt(m), w, mean, rstd, Nr, C);
    if (is_bf16(m)) {
        K(bf16_to_fp32, a->ln_grad_sum, a->ln_grad, 2 * (size_t)C);
        zt_comm_all_reduce(m->tp_comm, a->ln_grad_sum, a->ln_grad_sum, 2 * (size_t)C, ZT_F32,
                           ZT_REDUCE_SUM, NULL);
    } else {
        zt_comm_all_reduce(m->tp_comm, a->ln_grad, a->ln_grad_sum, 2 * (size_t)C, ZT_F32,
                           ZT_REDUCE_SUM, NULL);
    }
    add_grad(m, dw, a->ln_grad_sum, C);
    add_grad(m, db, a->ln_grad_sum + C, C);
}

// Attention's output into atty of the activations' dtype, lse fp32. Under bf16 the bf16 ops
// read qkv directly; dfch (N x 6C/tp floats, free in the forward and, in the backward, from
// GELU's backward on) is their `wide` scratch (backend_ops.h).
static void attention_forward(zt_gpt2 *m, void *atty, float *lse, const void *qkv) {
    zt_gpt2_acts *a = &m->a;
    dims d = dims_of(m);
    if (in_dt(m) == ZT_F32)
        K(attention_forward, atty, lse, qkv, a->attn_work, d.B, d.T, d.Cl, d.NHl);
    else
        K(attention_forward_bf16, atty, ZT_BF16, lse, qkv, a->attn_work, a->dfch, d.B, d.T, d.Cl,
          d.NHl);
}

// dqkv (qkv_grad, written) from datty and the block's stored qkv and lse (and, under bf16, its
// attention output atty, from which a fused backward takes its row sums).
static void attention_backward(zt_gpt2 *m, const zt_block_acts *b) {
    zt_gpt2_acts *a = &m->a;
    dims d = dims_of(m);
    if (in_dt(m) == ZT_F32)
        K(attention_backward, a->dqkv, a->datty, b->qkv, b->lse, a->attn_work, d.B, d.T, d.Cl,
          d.NHl);
    else
        K(attention_backward_bf16, qkv_grad(m), grad_dt(m), a->datty, ZT_F32, b->atty, b->qkv,
          b->lse, a->attn_work, a->dfch, d.B, d.T, d.Cl, d.NHl);
}

// Block li's activations: its layers of the slot's arrays, or the recompute set for what the
// block drops (carve_acts).
static zt_block_acts block_acts(const zt_gpt2 *m, int li) {
    const zt_block_acts *a = &m->a.layers, *r = &m->a.recomp;
    dims d = dims_of(m);
    size_t N = (size_t)d.N, Nr = (size_t)d.Nr, NH = (size_t)d.NHl;
    int ds = drops(m, li, 1), df = drops(m, li, 0);
    // the layer's index in the arrays that hold only the blocks after the recomputed ones
    size_t s = (size_t)(li - (mode_drops(m, 1) ? m->n_recomputed : 0));
    size_t f = (size_t)(li - (mode_drops(m, 0) ? m->n_recomputed : 0));
    zt_block_acts b = {
        .ln1 = ds ? r->ln1 : in_at(m, a->ln1, s * d.NrC),
        .ln1_mean = df ? r->ln1_mean : a->ln1_mean + f * Nr,
        .ln1_rstd = df ? r->ln1_rstd : a->ln1_rstd + f * Nr,
        .qkv = df ? r->qkv : in_at(m, a->qkv, f * 3 * d.NCl),
        .atty = df ? r->atty : in_at(m, a->atty, f * d.NCl),
        .lse = df ? r->lse : a->lse + f * N * NH,
        .res2 = df ? r->res2 : in_at(m, a->res2, f * d.NrC),
        .ln2 = ds ? r->ln2 : in_at(m, a->ln2, s * d.NrC),
        .ln2_mean = df ? r->ln2_mean : a->ln2_mean + f * Nr,
        .ln2_rstd = df ? r->ln2_rstd : a->ln2_rstd + f * Nr,
        .fch = df ? r->fch : in_at(m, a->fch, f * 4 * d.NCl),
        .fch_gelu = ds ? r->fch_gelu : in_at(m, a->fch_gelu, s * 4 * d.NCl),
        .res3 = in_at(m, a->res3, (size_t)li * d.NrC),
    };
    return b;
}

// The block's forward up to GELU's output: every activation its backward reads. What a full
// recomputation re-runs.
static void block_forward_inner(zt_gpt2 *m, const zt_block_acts *b, const zt_block_tensors *w,
                                const void *x) {
    zt_gpt2_acts *a = &m->a;
    dims d = dims_of(m);
    int N = d.N, Nr = d.Nr, C = d.C, Cl = d.Cl;
    zt_dtype it = in_dt(m);
    zt_gpt2_layernorm_forward(m, b->ln1, it, b->ln1_mean, b->ln1_rstd, x, res_dt(m), w->ln1w,
                              w->ln1b, Nr, C);
    zt_gpt2_linear_forward(m, b->qkv, it, gather_ln(m, b->ln1), it, w->qkvw, w->qkvb, N, C,
                           3 * Cl, 0);
    attention_forward(m, b->atty, b->lse, b->qkv);
    zt_gpt2_linear_forward(m, a->scratch, ZT_F32, b->atty, it, w->attprojw, row_bias(m, w->attprojb), N,
                           Cl, C, 1);
    // this rank's rows of the projection's sum over tp, fp32 (bf16 partial sums would be
    // rounded before they are added); the add rounds the stream's sum with it once
    const float *attn_out = reduce_rows(m, a->scratch);
    // res2 = x + attention's output, and ln_2 of it, in one pass
    zt_gpt2_residual_layernorm_forward(m, b->res2, b->ln2, it, b->ln2_mean, b->ln2_rstd, x,
                                       attn_out, w->ln2w, w->ln2b, Nr, C);
    zt_gpt2_linear_gelu_forward(m, b->fch, b->fch_gelu, it, gather_ln(m, b->ln2), it, w->fcw,
                                w->fcb, N, C, 4 * Cl);
}

static void block_forward(zt_gpt2 *m, int li, const zt_block_tensors *w, const void *x) {
    zt_gpt2_acts *a = &m->a;
    dims d = dims_of(m);
    zt_block_acts b = block_acts(m, li);
    block_forward_inner(m, &b, w, x);
    zt_gpt2_linear_forward(m, a->scratch, ZT_F32, b.fch_gelu, in_dt(m), w->fcprojw,
                           row_bias(m, w->fcprojb), d.N, 4 * d.Cl, d.C, 1);
    zt_gpt2_residual_add(m, b.res3, b.res2, reduce_rows(m, a->scratch), d.NrC);
}

// Before block li's backward, what its forward dropped, by the same kernels on the same
// inputs (so the same values): under full the forward up to GELU again; under selective
// the LayerNorms' outputs (their statistics rewritten with the values kept) and GELU's.
static void recompute_block(zt_gpt2 *m, int li, const zt_block_acts *b,
                            const zt_block_tensors *w, const void *x) {
    dims d = dims_of(m);
    zt_dtype it = in_dt(m);
    if (drops(m, li, 0)) {
        block_forward_inner(m, b, w, x);
        return;
    }
    if (!drops(m, li, 1)) return;
    zt_gpt2_layernorm_forward(m, b->ln1, it, b->ln1_mean, b->ln1_rstd, x, res_dt(m), w->ln1w,
                              w->ln1b, d.Nr, d.C);
    zt_gpt2_layernorm_forward(m, b->ln2, it, b->ln2_mean, b->ln2_rstd, b->res2, res_dt(m),
                              w->ln2w, w->ln2b, d.Nr, d.C);
    zt_gpt2_gelu_forward(m, b->fch_gelu, it, b->fch, 4 * d.NCl);
}

// Tells the caller (zt_gpt2.grad_ready) that the gradient from `first`, a tensor view of
// m->grads, to the end of the buffer is final.
static void announce(zt_gpt2 *m, const void *first) {
    if (!m->grad_ready || m->quiet) return;
    size_t from = (size_t)((const char *)first - (const char *)m->grads) / zt_dtype_size(m->dtype);
    m->grad_ready(m->grad_ready_ctx, from);
}

// dres holds the gradient of the block's output and becomes that of its input x.
// Row-parallel biases see the whole (identical) dres on every tp rank (gathered first with
// sequence parallelism), so their gradients agree across the group without a reduction;
// so do the LayerNorms' without sequence parallelism, and ln_backward sums them with it.
static void block_backward(zt_gpt2 *m, int li, const zt_block_tensors *w, zt_block_tensors *g,
                           const void *x) {
    zt_gpt2_acts *a = &m->a;
    dims d = dims_of(m);
    int N = d.N, C = d.C, Cl = d.Cl;
    zt_dtype it = in_dt(m);
    zt_block_acts b = block_acts(m, li);
    recompute_block(m, li, &b, w, x);
    // MLP: res3 = res2 + c_proj(gelu(c_fc(ln_2(res2))))
    zt_dtype gd = grad_dt(m);
    const void *dy = gather_grad(m, a->scratch, a->dres);
    zt_gpt2_linear_backward_weight(m, g->fcprojw, g->fcprojb, dy, b.fch_gelu, it, N, 4 * Cl, C,
                                   1);
    zt_gpt2_linear_gelu_backward_input(m, fch_grad(m), a->dfch, dy, w->fcprojw, b.fch, N, 4 * Cl,
                                       C, 1);
    zt_gpt2_linear_backward(m, a->dln, g->fcw, g->fcb, fch_grad(m), gather_ln(m, b.ln2), it,
                            w->fcw, N, C, 4 * Cl, 0);
    // column-parallel: each rank holds part of d(ln_2 out)
    ln_backward(m, a->dres, gd, g->ln2w, g->ln2b, reduce_rows(m, a->dln), b.res2, w->ln2w,
                b.ln2_mean, b.ln2_rstd);
    announce(m, g->ln2w); // ln_2, c_fc, the MLP's c_proj: this block's tail of the layout
    // attention: res2 = x + c_proj(attn(c_attn(ln_1(x))))
    zt_gpt2_linear_backward(m, a->datty, g->attprojw, g->attprojb,
                            gather_grad(m, a->scratch, a->dres), b.atty, it, w->attprojw, N, Cl,
                            C, 1);
    attention_backward(m, &b);
    zt_gpt2_linear_backward(m, a->dln, g->qkvw, g->qkvb, qkv_grad(m), gather_ln(m, b.ln1), it,
                            w->qkvw, N, C, 3 * Cl, 0);
    ln_backward(m, a->dres, gd, g->ln1w, g->ln1b, reduce_rows(m, a->dln), x, w->ln1w,
                b.ln1_mean, b.ln1_rstd);
    announce(m, g->ln1w); // the whole block
}

// ---------------------------------------------------------------- the split backward

// Block li's W-slot views (a block that is not recomputed); all but dln2 and dln1 of grad_dt.
typedef struct {
    void *dmlp, *dfch;
    float *dln2;
    void *dattn, *dqkv;
    float *dln1;
} block_wgrads;
static block_wgrads wgrads_of(const zt_gpt2 *m, int li) {
    dims d = dims_of(m);
    size_t k = (size_t)(li - m->n_recomputed);
    const zt_gpt2_wgrads *w = &m->w;
    return (block_wgrads){in_at(m, w->dmlp, k * d.NC),
                          in_at(m, w->dfch, k * 4 * d.NCl),
                          w->dln2 + k * d.NrC,
                          in_at(m, w->dattn, k * d.NC),
                          in_at(m, w->dqkv, k * 3 * d.NCl),
                          w->dln1 + k * d.NrC};
}

// n elements of type dt from src into the W slot.
static void keep(zt_gpt2 *m, void *dst, const void *src, size_t n, zt_dtype dt) {
    K(copy, dst, src, n * zt_dtype_size(dt), ZT_COPY_D2D);
}

// A LayerNorm's input gradient only (added into dinp): its weight gradients go to a buffer
// that is dropped (the weight-gradient pass computes them again from the kept gradient).
static void ln_backward_input(zt_gpt2 *m, void *dinp, const float *dout, const void *inp,
                              const void *w, const float *mean, const float *rstd) {
    int C = m->shape.n_embd;
    size_t es = zt_dtype_size(m->dtype);
    K(memset, m->a.ln_drop, 0, 2 * (size_t)C * es);
    zt_gpt2_layernorm_backward(m, dinp, grad_dt(m), m->a.ln_drop,
                               (char *)m->a.ln_drop + (size_t)C * es, dout, inp, res_dt(m), w,
                               mean, rstd, (int)rows(m), C);
}

// block_backward's input-gradient half: dres becomes the gradient of x; what the weight half
// needs is kept in the W slot.
static void block_backward_input(zt_gpt2 *m, int li, const zt_block_tensors *w, const void *x) {
    zt_gpt2_acts *a = &m->a;
    dims d = dims_of(m);
    int N = d.N, C = d.C, Cl = d.Cl;
    zt_block_acts b = block_acts(m, li);
    block_wgrads k = wgrads_of(m, li);
    zt_dtype gd = grad_dt(m);
    const void *dy = gather_grad(m, a->scratch, a->dres);
    keep(m, k.dmlp, dy, d.NC, gd);
    zt_gpt2_linear_gelu_backward_input(m, fch_grad(m), a->dfch, dy, w->fcprojw, b.fch, N, 4 * Cl,
                                       C, 1);
    keep(m, k.dfch, fch_grad(m), 4 * d.NCl, gd);
    zt_gpt2_linear_backward_input(m, a->dln, fch_grad(m), w->fcw, N, C, 4 * Cl, 0);
    const float *dl = reduce_rows(m, a->dln);
    keep(m, k.dln2, dl, d.NrC, ZT_F32);
    ln_backward_input(m, a->dres, dl, b.res2, w->ln2w, b.ln2_mean, b.ln2_rstd);
    dy = gather_grad(m, a->scratch, a->dres);
    keep(m, k.dattn, dy, d.NC, gd);
    zt_gpt2_linear_backward_input(m, a->datty, dy, w->attprojw, N, Cl, C, 1);
    attention_backward(m, &b);
    keep(m, k.dqkv, qkv_grad(m), 3 * d.NCl, gd);
    zt_gpt2_linear_backward_input(m, a->dln, qkv_grad(m), w->qkvw, N, C, 3 * Cl, 0);
    dl = reduce_rows(m, a->dln);
    keep(m, k.dln1, dl, d.NrC, ZT_F32);
    ln_backward_input(m, a->dres, dl, x, w->ln1w, b.ln1_mean, b.ln1_rstd);
}

// block_backward's weight-gradient half, from the W slot and the block's activations, in
// block_backward's order, announcing the same tails.
static void block_backward_weight(zt_gpt2 *m, int li, const zt_block_tensors *w,
                                  zt_block_tensors *g, const void *x) {
    zt_gpt2_acts *a = &m->a;
    dims d = dims_of(m);
    int N = d.N, C = d.C, Cl = d.Cl;
    zt_dtype it = in_dt(m);
    zt_block_acts b = block_acts(m, li);
    block_wgrads k = wgrads_of(m, li);
    zt_gpt2_linear_backward_weight(m, g->fcprojw, g->fcprojb, k.dmlp, b.fch_gelu, it, N, 4 * Cl,
                                   C, 1);
    zt_gpt2_linear_backward_weight(m, g->fcw, g->fcb, k.dfch, gather_ln(m, b.ln2), it, N, C,
                                   4 * Cl, 0);
    // the input gradient lands in dln, unused here
    ln_backward(m, a->dln, ZT_F32, g->ln2w, g->ln2b, k.dln2, b.res2, w->ln2w, b.ln2_mean,
                b.ln2_rstd);
    announce(m, g->ln2w);
    zt_gpt2_linear_backward_weight(m, g->attprojw, g->attprojb, k.dattn, b.atty, it, N, Cl, C, 1);
    zt_gpt2_linear_backward_weight(m, g->qkvw, g->qkvb, k.dqkv, gather_ln(m, b.ln1), it, N, C,
                                   3 * Cl, 0);
    ln_backward(m, a->dln, ZT_F32, g->ln1w, g->ln1b, k.dln1, x, w->ln1w, b.ln1_mean,
                b.ln1_rstd);
    announce(m, g->ln1w);
}

// Block li's input: the previous block's output, or the stage input (the embedding
// output, or a copy of what the previous stage sent) kept in `encoded`.
static const void *block_input(const zt_gpt2 *m, int li) {
    if (li > 0) return in_at(m, m->a.layers.res3, (size_t)(li - 1) * rows(m) * m->shape.n_embd);
    return m->a.encoded;
}

const void *zt_gpt2_output(const zt_gpt2 *m) { return block_input(m, n_local_layers(m)); }

// This rank's slice of the padded vocabulary: rows [lo, lo + rows) of wte.
static int vocab_rows(const zt_gpt2 *m) { return m->shape.padded_vocab / m->layout.tp; }
static int vocab_lo(const zt_gpt2 *m) { return m->layout.tp_rank * vocab_rows(m); }

// The head over chunks of tokens: logits of this rank's vocabulary slice, the
// vocab-parallel loss and (with backward) the gradients of the lm-head slice and of
// ln_f's output, chunk by chunk.
static double head_forward(zt_gpt2 *m, const void *x, const int32_t *targets, int backward,
                           float loss_scale) {
    zt_gpt2_acts *a = &m->a;
    int N = m->B * m->T, Nr = (int)rows(m), C = m->shape.n_embd, Vl = vocab_rows(m);
    zt_dtype it = in_dt(m);
    zt_gpt2_layernorm_forward(m, a->lnf, it, a->lnf_mean, a->lnf_rstd, x, res_dt(m), m->p.lnfw,
                              m->p.lnfb, Nr, C);
    const char *lnf_all = gather_ln(m, a->lnf); // (N, C): the logits product's input
    for (int n0 = 0; n0 < N; n0 += m->loss_chunk) {
        int nc = (int)zt_min_sz((size_t)m->loss_chunk, (size_t)(N - n0));
        const void *lnf = lnf_all + (size_t)n0 * C * zt_dtype_size(it);
        zt_gpt2_weight_gemm(m, 0, 1, nc, Vl, C, lnf, it, C, m->p.wte, m->dtype, C, 0.0f, a->logits,
                            it, Vl);
        zt_vocab_parallel_ce(m->be, m->tp_comm, a->logits, a->losses + n0, a->logits, it,
                             targets + n0, loss_scale, nc, m->shape.vocab, m->shape.padded_vocab,
                             a->ce_work);
        if (!backward) continue;
        zt_gpt2_weight_gemm(m, 0, 0, nc, C, Vl, a->logits, it, Vl, m->p.wte, m->dtype, C, 0.0f,
                            a->dln + (size_t)n0 * C, ZT_F32, C);
        zt_gpt2_weight_gemm(m, 1, 0, Vl, C, nc, a->logits, it, Vl, lnf, it, C,
                            zt_gpt2_grad_beta(m, m->g.wte), m->g.wte, m->dtype, C);
    }
    double sum = 0.0;
    if (backward) m->be->ops->sum_into(m->be, a->loss_acc, a->losses, (size_t)N);
    else sum = m->be->ops->sum(m->be, a->losses, (size_t)N);
    if (backward) { // kept per micro-batch: GPipe runs the backward later
        m->be->ops->memset(m->be, a->dhead, 0, (size_t)Nr * C * zt_dtype_size(grad_dt(m)));
        // each vocabulary slice adds its part of d(ln_f out)
        ln_backward(m, a->dhead, grad_dt(m), m->g.lnfw, m->g.lnfb, reduce_rows(m, a->dln), x,
                    m->p.lnfw, a->lnf_mean, a->lnf_rstd);
    }
    return sum;
}

// Tells the caller (zt_gpt2.params_need) that `unit`'s weights are about to be read.
static void need_unit(zt_gpt2 *m, int unit) {
    if (!m->params_need) return;
    int head = zt_unit_head(&m->shape);
    size_t lo = m->layout.numel, hi = 0;
    for (int i = 0; i < m->layout.n; i++) {
        const zt_tensor_desc *d = &m->layout.t[i];
        if (d->unit != unit && !(unit == head && d->tied)) continue;
        lo = zt_min_sz(lo, d->offset);
        if (d->offset + d->numel > hi) hi = d->offset + d->numel;
    }
    if (lo < hi) m->params_need(m->params_need_ctx, lo, hi);
}

// The embedding's output into `encoded`, of the residual's dtype: all N rows of this rank's
// vocabulary slice (a token's row lives on one tp rank, the others add zeros; positions on
// rank 0: the sum is exact, as at tp = 1), summed over tp; with sequence parallelism only this
// rank's rows of the sum are kept (reduce-scatter). Under bf16 the sum over tp is bf16 too and
// still bit-identical to tp = 1: of each element's terms at most two are nonzero (the token's
// row, the position's), and a bf16 reduction adds them in fp32 and rounds once, as the one
// rank's encoder does (comm.h).
static void embed_forward(zt_gpt2 *m, const int32_t *tokens) {
    int N = m->B * m->T, C = m->shape.n_embd;
    void *all = m->seq_parallel ? (void *)m->a.scratch : m->a.encoded;
    zt_gpt2_encoder_forward(m, all, res_dt(m), tokens, m->p.wte,
                            m->layout.tp_rank == 0 ? m->p.wpe : NULL, vocab_lo(m), vocab_rows(m),
                            N, m->T, C);
    if (m->seq_parallel)
        zt_comm_reduce_scatter(m->tp_comm, all, m->a.encoded, (size_t)N * C, res_dt(m),
                               ZT_REDUCE_SUM, NULL);
    else
        tp_sum(m, all, (size_t)N * C, res_dt(m));
}

// The stage input (Nr, C) of the residual's dtype (the previous stage's output) into `encoded`.
static void take_input(zt_gpt2 *m, const void *input) {
    size_t bytes = rows(m) * m->shape.n_embd * zt_dtype_size(res_dt(m));
    K(copy, m->a.encoded, input, bytes, ZT_COPY_D2D);
}

double zt_gpt2_forward(zt_gpt2 *m, const int32_t *tokens, const void *input,
                       const int32_t *targets, int backward, float loss_scale) {
    int L0 = first_layer(m);
    if (has_embed(m)) {
        need_unit(m, ZT_UNIT_EMBED);
        embed_forward(m, tokens);
    } else {
        take_input(m, input);
    }
    int nl = n_local_layers(m);
    for (int li = 0; li < nl; li++) {
        need_unit(m, L0 + li + 1); // unit of block l is l + 1
        block_forward(m, li, &m->p.h[L0 + li], block_input(m, li));
    }
    if (!has_head(m)) return 0.0;
    need_unit(m, zt_unit_head(&m->shape));
    return head_forward(m, block_input(m, nl), targets, backward, loss_scale);
}

// Bytes of the residual stream's gradient on this rank (dres, dhead, a stage's dout, dinput).
static size_t res_grad_bytes(const zt_gpt2 *m) {
    return rows(m) * m->shape.n_embd * zt_dtype_size(grad_dt(m));
}

// The embedding's output gradient, all N rows in fp32 (every rank's vocabulary slice needs
// every row's): dres gathered, then widened into dln under bf16 (exact; free here).
static const float *embed_grad(zt_gpt2 *m) {
    const void *all = gather_grad(m, m->a.scratch, m->a.dres);
    if (!is_bf16(m)) return all;
    K(bf16_to_fp32, m->a.dln, all, (size_t)m->B * m->T * m->shape.n_embd);
    return m->a.dln;
}

void zt_gpt2_backward(zt_gpt2 *m, const int32_t *tokens, const void *dout, void *dinput) {
    int N = m->B * m->T, C = m->shape.n_embd, L0 = first_layer(m);
    K(copy, m->a.dres, has_head(m) ? m->a.dhead : dout, res_grad_bytes(m), ZT_COPY_D2D);
    for (int li = n_local_layers(m) - 1; li >= 0; li--)
        block_backward(m, li, &m->p.h[L0 + li], &m->g.h[L0 + li], block_input(m, li));
    if (has_embed(m))
        zt_gpt2_encoder_backward(m, m->g.wte, m->g.wpe, embed_grad(m), tokens, vocab_lo(m),
                                 vocab_rows(m), N, m->T, C);
    else if (dinput)
        K(copy, dinput, m->a.dres, res_grad_bytes(m), ZT_COPY_D2D);
}

void zt_gpt2_logits(const zt_gpt2 *m, float *out) {
    int N = m->B * m->T, C = m->shape.n_embd, Vl = vocab_rows(m);
    zt_gpt2_weight_gemm(m, 0, 1, N, Vl, C, gather_ln(m, m->a.lnf), in_dt(m), C, m->p.wte, m->dtype,
                        C, 0.0f, out, ZT_F32, Vl);
}

// A recomputed block's backward runs whole in the B pass (announcing nothing there: quiet).
static int recomputed(const zt_gpt2 *m, int li) { return li < m->n_recomputed; }

void zt_gpt2_backward_input(zt_gpt2 *m, const int32_t *tokens, const void *dout,
                            void *dinput) {
    (void)tokens;
    ZT_ASSERT(m->n_wslots > 0);
    int L0 = first_layer(m);
    K(copy, m->a.dres, has_head(m) ? m->a.dhead : dout, res_grad_bytes(m), ZT_COPY_D2D);
    m->quiet = 1;
    for (int li = n_local_layers(m) - 1; li >= 0; li--) {
        if (recomputed(m, li))
            block_backward(m, li, &m->p.h[L0 + li], &m->g.h[L0 + li], block_input(m, li));
        else block_backward_input(m, li, &m->p.h[L0 + li], block_input(m, li));
    }
    m->quiet = 0;
    if (has_embed(m))
        keep(m, m->w.dembed, embed_grad(m), (size_t)m->B * m->T * m->shape.n_embd, ZT_F32);
    else if (dinput)
        K(copy, dinput, m->a.dres, res_grad_bytes(m), ZT_COPY_D2D);
}

void zt_gpt2_backward_weight(zt_gpt2 *m, const int32_t *tokens) {
    ZT_ASSERT(m->n_wslots > 0);
    int N = m->B * m->T, C = m->shape.n_embd, L0 = first_layer(m);
    for (int li = n_local_layers(m) - 1; li >= 0; li--) {
        zt_block_tensors *g = &m->g.h[L0 + li];
        if (!recomputed(m, li)) {
            block_backward_weight(m, li, &m->p.h[L0 + li], g, block_input(m, li));
            continue;
        }
        announce(m, g->ln2w); // done in the B passes: final after the last one
        announce(m, g->ln1w);
    }
    if (has_embed(m))
        zt_gpt2_encoder_backward(m, m->g.wte, m->g.wpe, m->w.dembed, tokens, vocab_lo(m),
                                 vocab_rows(m), N, m->T, C);
}

// ---------------------------------------------------------------- interleaved chunks

zt_status zt_gpt2_init_ranges(zt_gpt2 *m, const zt_backend *be, const zt_model_shape *s,
                              int n_ranges, const int *firsts, const int *lasts, int tp,
                              int tp_rank, size_t align, size_t pad_multiple, zt_dtype dtype) {
    ZT_ASSERT(dtype == ZT_F32 || be->caps->bf16);
    memset(m, 0, sizeof *m);
    m->be = be;
    m->shape = *s;
    m->dtype = dtype;
    ZT_TRY(zt_layout_init_ranges(&m->layout, s, n_ranges, firsts, lasts, tp, tp_rank, align));
    m->layout.numel = zt_round_up(m->layout.numel, pad_multiple);
    alloc_params(m);
    return ZT_OK;
}

zt_status zt_gpt2_init_view(zt_gpt2 *v, const zt_gpt2 *owner, int unit_first, int unit_last,
                            int B, int T, int loss_chunk, int n_slots, const zt_comm *tp_comm,
                            const zt_act_options *opts) {
    const zt_backend *be = owner->be;
    const zt_layout *o = &owner->layout;
    ZT_TRY(plan(v, &owner->shape, unit_first, unit_last, o->tp, o->tp_rank, o->align, 1, B, T,
                loss_chunk, n_slots, zt_backend_attention_workspace(be, T), owner->dtype,
                be->caps->gemm_mixed_workspace, opts));
    for (int i = 0; i < v->layout.n; i++) { // the same tensors in owner's one buffer
        int j = zt_layout_find(o, v->layout.t[i].name);
        ZT_ASSERT(j >= 0 && o->t[j].numel == v->layout.t[i].numel);
        v->layout.t[i].offset = o->t[j].offset;
    }
    v->layout.numel = o->numel;
    v->layout.tied_numel = o->tied_numel;
    v->be = be;
    v->is_view = 1;
    ZT_ASSERT(o->tp == 1 || (tp_comm && tp_comm->size == o->tp && tp_comm->rank == o->tp_rank));
    v->tp_comm = o->tp > 1 ? tp_comm : NULL;
    v->params = owner->params;
    v->grads = owner->grads;
    v->zeroed = owner->zeroed;
    alloc_params(v);
    alloc_acts(v);
    return ZT_OK;
}
