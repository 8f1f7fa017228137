// The recorded work of a stage's micro-batch and of the optimizer (plan_cost.h).
#include "plan_cost.h"

#include <string.h>

#include "adamw.h"
#include "adamw8bit.h"
#include "gpt2.h"
#include "grad_norm.h"
#include "layout.h"

// A pass: the recorder's counts reset, the pass run, the counts kept.
typedef struct {
    zt_backend be;
    zt_backend_record_state st;
    zt_record rec;
    zt_comm tp;
    zt_comm_record tp_rec;
} recorder;

static void take(recorder *r, zt_plan_pass *out) {
    out->ops = r->rec;
    out->tp = r->tp_rec;
    memset(&r->rec, 0, sizeof r->rec);
    memset(&r->tp_rec, 0, sizeof r->tp_rec);
}

static zt_status record_stage(const zt_plan_spec *s, int first, int last, int split,
                              zt_plan_stage_work *out) {
    memset(out, 0, sizeof *out);
    recorder *r = calloc(1, sizeof *r);
    ZT_ASSERT(r);
    zt_backend_record_init(&r->be, &r->st, s->backend, &r->rec);
    zt_comm_record_init(&r->tp, 0, s->tp, &r->tp_rec);
    zt_dtype dtype = s->param_bytes == 2 ? ZT_BF16 : ZT_F32;
    zt_act_options opts = {s->recompute, s->seq_parallel, split ? 1 : 0};
    zt_gpt2 m;
    zt_status st = zt_gpt2_init(&m, &r->be, &s->shape, first, last, s->tp, 0, ZT_ALIGN_ELEMS,
                                (size_t)s->dp * ZT_ALIGN_ELEMS, s->micro_batch, s->seq,
                                s->loss_chunk, 1, &r->tp, dtype, &opts);
    if (st == ZT_OK) {
        int L = s->shape.n_layer, head = last == L + 2, embed = first == 0;
        size_t BT = (size_t)s->micro_batch * s->seq;
        size_t NrC = zt_gpt2_rows(s->micro_batch, s->seq, s->tp, s->seq_parallel) *
                     (size_t)s->shape.n_embd;
        // the passes' inputs: recorded ranges like the model's own (never read)
        int32_t *tokens = r->be.ops->alloc(&r->be, ZT_MEM_WORKSPACE, 2 * BT * sizeof(int32_t));
        float *io = r->be.ops->alloc(&r->be, ZT_MEM_COMM, 3 * NrC * sizeof(float));
        memset(&r->rec, 0, sizeof r->rec); // init's zero-fills are not a pass's work
        memset(&r->tp_rec, 0, sizeof r->tp_rec);
        zt_gpt2_forward(&m, tokens, embed ? NULL : io, tokens + BT, 1, 1.0f);
        take(r, &out->f);
        const float *dout = head ? NULL : io + NrC;
        float *dinput = embed ? NULL : io + 2 * NrC;
        if (split) {
            zt_gpt2_backward_input(&m, tokens, dout, dinput);
            take(r, &out->b);
            zt_gpt2_backward_weight(&m, tokens);
            take(r, &out->w);
        } else {
            zt_gpt2_backward(&m, tokens, dout, dinput);
            take(r, &out->b);
        }
        out->split = split;
        out->act_bytes = (double)NrC * zt_dtype_size(dtype);
        out->numel = zt_round_up(m.layout.numel, (size_t)s->dp * ZT_ALIGN_ELEMS);
        zt_gpt2_free(&m);
    }
    zt_backend_record_free(&r->st);
    free(r);
    return st;
}

// ---------------------------------------------------------------- the memo

typedef struct {
    zt_model_shape shape;
    const zt_backend_caps *backend;
    int micro_batch, seq, dp, tp, seq_parallel, mode, layers, param_bytes, loss_chunk, split,
        first, last;
} work_key;

#define MEMO_SIZE 4096 // entries; a full memo starts again empty

static struct {
    work_key key[MEMO_SIZE];
    zt_plan_stage_work work[MEMO_SIZE];
    char used[MEMO_SIZE];
    int count;
} memo;

static uint64_t hash_key(const work_key *k) {
    const unsigned char *b = (const unsigned char *)k;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof *k; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

zt_status zt_plan_stage_work_of(const zt_plan_spec *s, int first, int last, int split,
                                zt_plan_stage_work *out) {
    work_key k;
    memset(&k, 0, sizeof k); // the padding too: the key is hashed and compared as bytes
    k.shape = s->shape;
    k.backend = s->backend;
    k.micro_batch = s->micro_batch, k.seq = s->seq, k.dp = s->dp, k.tp = s->tp;
    k.seq_parallel = s->seq_parallel, k.mode = s->recompute.mode;
    k.layers = s->recompute.layers, k.param_bytes = s->param_bytes;
    k.loss_chunk = s->loss_chunk, k.split = split, k.first = first, k.last = last;
    size_t i = hash_key(&k) % MEMO_SIZE;
    while (memo.used[i] && memcmp(&memo.key[i], &k, sizeof k)) i = (i + 1) % MEMO_SIZE;
    if (memo.used[i]) {
        *out = memo.work[i];
        return ZT_OK;
    }
    ZT_TRY(record_stage(s, first, last, split, out));
    if (memo.count >= MEMO_SIZE / 2) { // keep probing short
        memset(memo.used, 0, sizeof memo.used);
        memo.count = 0;
        i = hash_key(&k) % MEMO_SIZE;
    }
    memo.key[i] = k;
    memo.work[i] = *out;
    memo.used[i] = 1;
    memo.count++;
    return ZT_OK;
}

const zt_adamw_config zt_plan_adamw_config = {6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};

zt_status zt_plan_optimizer_work(const zt_plan_spec *s, const zt_layout *lay, size_t lo,
                                 size_t hi, int count_tied, zt_record *out) {
    zt_backend be;
    zt_backend_record_state st;
    zt_backend_record_init(&be, &st, s->backend, out);
    zt_dtype dt = s->param_bytes == 2 ? ZT_BF16 : ZT_F32;
    size_t bytes = lay->numel * zt_dtype_size(dt);
    void *params = zt_be_alloc(&be, ZT_MEM_PARAMS, bytes);
    void *grads = zt_be_alloc(&be, ZT_MEM_GRADS, bytes);
    zt_adamw opt = {0};
    zt_adamw8bit opt8 = {0};
    zt_status status = ZT_OK;
    if (s->is_8bit) status = zt_adamw8bit_init(&opt8, &be, lay, lo, hi, &s->opt8, dt);
    else zt_adamw_init(&opt, &be, lo, hi, dt);
    memset(out, 0, sizeof *out); // the state's zero-fills are not the step's work
    if (status == ZT_OK) {
        double sumsq[2];
        zt_grad_sumsq(&be, sumsq, grads, dt, lay, lo, hi, 1, count_tied);
        const zt_adamw_config *c = &zt_plan_adamw_config;
        if (s->is_8bit) zt_adamw8bit_step(&opt8, params, grads, lay, c, c->lr, 1.0f);
        else zt_adamw_step(&opt, params, grads, lay, c, c->lr, 1.0f);
    }
    if (s->is_8bit) zt_adamw8bit_free(&opt8);
    else zt_adamw_free(&opt);
    zt_be_free(&be, grads);
    zt_be_free(&be, params);
    zt_backend_record_free(&st);
    return status;
}
