// Tests of `zerotrain plan`'s work source (src/planner/plan_cost.c): the ops a stage's
// micro-batch issues, recorded on the recording backend, are the ops the CPU backend runs
// for the same passes, phase by phase: the same number of calls and the same flops to the
// bit (the --profile decorator counts the real run), for the whole model and for pipeline
// stages, fp32 and bf16, with recomputation and with the backward split in two (ZB-H1).
#include <math.h>
#include <string.h>

#include "adamw.h"
#include "adamw8bit.h"
#include "backend_profile.h"
#include "gpt2.h"
#include "grad_norm.h"
#include "layout.h"
#include "plan_cost.h"
#include "partition.h"
#include "plan_step_ops.h"
#include "planner.h"
#include "test.h"

// The real passes of units [first, last) under the --profile decorator: per-phase calls and
// flops of the forward (with backward) and the backward (or its two halves).
static void real_passes(const zt_plan_spec *s, int first, int last, int split, zt_profile *f,
                        zt_profile *b, zt_profile *w) {
    const zt_backend *cpu = zt_test_cpu();
    zt_profile acc = {0};
    zt_backend prof;
    zt_backend_profile_state st;
    zt_backend_profile_init(&prof, &st, cpu, &acc);
    zt_dtype dt = s->param_bytes == 2 ? ZT_BF16 : ZT_F32;
    zt_gpt2 m;
    ZT_ASSERT(zt_gpt2_init(&m, &prof, &s->shape, first, last, 1, 0, ZT_ALIGN_ELEMS,
                           ZT_ALIGN_ELEMS, s->micro_batch, s->seq, s->loss_chunk, 1, NULL, dt,
                           &(zt_act_options){s->recompute, 0, split}) == ZT_OK);
    zt_gpt2_init_random(&m, 7);
    size_t BT = (size_t)s->micro_batch * s->seq, NC = BT * (size_t)s->shape.n_embd;
    int32_t *tok = prof.ops->alloc(&prof, ZT_MEM_WORKSPACE, 2 * BT * sizeof(int32_t));
    float *io = prof.ops->alloc(&prof, ZT_MEM_COMM, 3 * NC * sizeof(float));
    for (size_t i = 0; i < 2 * BT; i++) tok[i] = (int32_t)(i % (size_t)s->shape.vocab);
    int head = last == s->shape.n_layer + 2, embed = first == 0;
    zt_profile z = acc;
    zt_gpt2_forward(&m, tok, embed ? NULL : io, tok + BT, 1, 1.0f);
    zt_profile_diff(f, &acc, &z);
    z = acc;
    if (split) {
        zt_gpt2_backward_input(&m, tok, head ? NULL : io + NC, embed ? NULL : io + 2 * NC);
        zt_profile_diff(b, &acc, &z);
        z = acc;
        zt_gpt2_backward_weight(&m, tok);
        zt_profile_diff(w, &acc, &z);
    } else {
        zt_gpt2_backward(&m, tok, head ? NULL : io + NC, embed ? NULL : io + 2 * NC);
        zt_profile_diff(b, &acc, &z);
        memset(w, 0, sizeof *w);
    }
    prof.ops->free(&prof, tok);
    prof.ops->free(&prof, io);
    zt_gpt2_free(&m);
}

static int same(const char *what, const zt_profile *real, const zt_record *rec) {
    for (int p = 0; p < ZT_PHASE_COMM; p++) {
        if (real->calls[p] != rec->calls[p] || real->flops[p] != rec->flops[p]) {
            fprintf(stderr, "%s, phase %s: real %ld calls %.17g flops, recorded %ld calls %.17g "
                            "flops\n",
                    what, zt_phase_name((zt_phase)p), real->calls[p], real->flops[p],
                    rec->calls[p], rec->flops[p]);
            return 0;
        }
    }
    return 1;
}

ZT_TEST(plan_record_matches_profile) {
    zt_model_shape shape = {.n_layer = 3, .n_head = 2, .n_embd = 32, .vocab = 67,
                            .padded_vocab = 128, .n_ctx = 16};
    int units = zt_unit_count(&shape);
    // (first, last) of the whole model, a first stage, a middle one and a last one
    const int stages[4][2] = {{0, units}, {0, 2}, {2, 3}, {3, units}};
    int checked = 0;
    for (int dt = 4; dt >= 2; dt -= 2)
        for (int rc = 0; rc < 3; rc++)
            for (int split = 0; split <= 1; split++)
                for (int k = 0; k < 4; k++) {
                    if (dt == 2 && !zt_test_cpu()->caps->bf16) continue;
                    zt_plan_spec s = {.shape = shape, .dp = 1, .pp = 1, .tp = 1,
                                      .micro_batch = 2, .seq = 8, .param_bytes = dt,
                                      .backend = zt_test_cpu()->caps};
                    s.recompute = (zt_recompute){(zt_recompute_mode)rc, 0};
                    zt_profile f, b, w;
                    real_passes(&s, stages[k][0], stages[k][1], split, &f, &b, &w);
                    zt_plan_stage_work rec;
                    CHECK(zt_plan_stage_work_of(&s, stages[k][0], stages[k][1], split, &rec) ==
                          ZT_OK);
                    char what[96];
                    snprintf(what, sizeof what, "units %d-%d, %s, recompute %d, split %d",
                             stages[k][0], stages[k][1], dt == 2 ? "bf16" : "fp32", rc, split);
                    CHECK(same(what, &f, &rec.f.ops));
                    CHECK(same(what, &b, &rec.b.ops));
                    CHECK(same(what, &w, &rec.w.ops));
                    CHECK(rec.f.ops.flops[ZT_PHASE_GEMM] > 0); // every stage has products
                    checked++;
                }
    printf("  %d stages x dtypes x recomputation x split: recorded = run, every phase\n", checked);
    CHECK(checked >= 24);
    return ZT_PASS;
}

// One whole training step (src/planner/plan_step_ops.c, what `zerotrain plan --ops-json`
// records for bench/gpu_model.py): the recorder's count of every op equals the calls the CPU
// backend receives for the same step under the --profile decorator, op by op, calls and
// flops to the bit (and its per-op times add up to its phase times); fp32 and bf16, AdamW and
// 8-bit AdamW, one and two micro-batches.
static int same_ops(const char *what, const zt_op_record *real, const zt_op_record *rec) {
    int ok = 1;
    for (int op = 0; op < ZT_OPID_COUNT; op++)
        if (real->calls[op] != rec->calls[op] || real->flops[op] != rec->flops[op]) {
            fprintf(stderr, "%s, op %s: real %ld calls %.17g flops, recorded %ld calls %.17g "
                            "flops\n",
                    what, zt_op_name(op), real->calls[op], real->flops[op], rec->calls[op],
                    rec->flops[op]);
            ok = 0;
        }
    return ok;
}

static void real_step(const zt_plan_spec *s, zt_op_record *out, int *tensors) {
    zt_profile acc = {0};
    zt_backend prof;
    zt_backend_profile_state ps;
    zt_backend_profile_init(&prof, &ps, zt_test_cpu(), &acc);
    zt_plan_step st;
    ZT_ASSERT(zt_plan_step_init(&st, s, &prof) == ZT_OK);
    zt_gpt2_init_random(&st.model, 7);
    size_t BT = (size_t)s->micro_batch * s->seq;
    for (size_t i = 0; i < 2 * BT; i++) st.tokens[i] = (int32_t)(i % (size_t)s->shape.vocab);
    memset(out, 0, sizeof *out);
    zt_profile before = acc;
    ps.by_op = out; // the step's calls only, as the recorder counts them
    zt_plan_step_run(&st);
    ps.by_op = NULL;
    // --profile's op table and its phase table time the same calls: the totals agree to the
    // sums' rounding (a few hundred doubles added in two orders, far below 1e-9 of the total)
    double by_op = 0, by_phase = 0;
    for (int op = 0; op < ZT_OPID_COUNT; op++) by_op += out->wall[op];
    for (int ph = 0; ph < ZT_PHASE_COUNT; ph++) by_phase += acc.wall[ph] - before.wall[ph];
    ZT_ASSERT(by_op > 0 && fabs(by_op - by_phase) <= 1e-9 * by_phase);
    *tensors = st.model.layout.n;
    zt_plan_step_free(&st);
}

ZT_TEST(plan_step_ops_match_profile) {
    zt_model_shape shape = {.n_layer = 2, .n_head = 2, .n_embd = 32, .vocab = 67,
                            .padded_vocab = 128, .n_ctx = 16};
    int checked = 0;
    for (int dt = 4; dt >= 2; dt -= 2)
        for (int opt8 = 0; opt8 <= 1; opt8++)
            for (int accum = 1; accum <= 2; accum++) {
                if (dt == 2 && !zt_test_cpu()->caps->bf16) continue;
                zt_plan_spec s = {.shape = shape, .dp = 1, .pp = 1, .tp = 1, .micro_batch = 2,
                                  .seq = 8, .grad_accum = accum, .param_bytes = dt,
                                  .is_8bit = opt8, .backend = zt_test_cpu()->caps};
                s.opt8 = zt_adamw8bit_default_options();
                zt_op_record *real = calloc(1, sizeof *real), *rec = calloc(1, sizeof *rec);
                zt_op_shapes *shapes = calloc(1, sizeof *shapes);
                ZT_ASSERT(real && rec && shapes);
                int tensors = 0;
                real_step(&s, real, &tensors);
                size_t numel = 0;
                CHECK(zt_plan_step_ops(&s, rec, shapes, &numel) == ZT_OK);
                char what[96];
                snprintf(what, sizeof what, "%s, %s, %d micro-batches", dt == 2 ? "bf16" : "fp32",
                         opt8 ? "adamw8bit" : "adamw", accum);
                CHECK(same_ops(what, real, rec));
                // AdamW's step is one call per tensor (optim/adamw.c): the record says so
                if (!opt8)
                    CHECK(rec->calls[dt == 2 ? ZT_OPID_adamw_bf16 : ZT_OPID_adamw] == tensors);
                // every call is in the shape list, each shape under its own op
                long in_shapes = 0, calls = 0;
                for (int i = 0; i < shapes->n; i++) in_shapes += shapes->s[i].calls;
                for (int op = 0; op < ZT_OPID_COUNT; op++) calls += rec->calls[op];
                CHECK(in_shapes == calls && calls > 0 && numel > 0);
                free(real);
                free(rec);
                free(shapes);
                checked++;
            }
    printf("  %d dtypes x optimizers x micro-batches: recorded = run, every op\n", checked);
    CHECK(checked >= 4);
    return ZT_PASS;
}

// The optimizer's step as the time model prices it (zt_plan_optimizer_work on the rank's
// layout, zt_plan_rank_layout): the calls and flops the CPU backend receives when the
// trainer's own step runs on that rank's shard under the --profile decorator, phase by phase;
// AdamW one call per tensor piece of the shard. Pipeline ranks 0 and 1 of 2, dp ranks 0 and 1
// of 2 under ZeRO-1, fp32 and bf16, AdamW and 8-bit AdamW.
static void real_optimizer(const zt_plan_spec *s, const zt_layout *lay, size_t lo, size_t hi,
                           int count_tied, zt_profile *out) {
    zt_profile acc = {0};
    zt_backend prof;
    zt_backend_profile_state ps;
    zt_backend_profile_init(&prof, &ps, zt_test_cpu(), &acc);
    zt_dtype dt = s->param_bytes == 2 ? ZT_BF16 : ZT_F32;
    size_t bytes = lay->numel * zt_dtype_size(dt);
    void *params = zt_be_alloc(&prof, ZT_MEM_PARAMS, bytes);
    void *grads = zt_be_alloc(&prof, ZT_MEM_GRADS, bytes);
    prof.ops->memset(&prof, params, 0, bytes);
    prof.ops->memset(&prof, grads, 0, bytes);
    zt_adamw opt = {0};
    zt_adamw8bit opt8 = {0};
    if (s->is_8bit) ZT_ASSERT(zt_adamw8bit_init(&opt8, &prof, lay, lo, hi, &s->opt8, dt) == ZT_OK);
    else zt_adamw_init(&opt, &prof, lo, hi, dt);
    const zt_adamw_config *c = &zt_plan_adamw_config;
    zt_profile before = acc;
    double sq[2];
    zt_grad_sumsq(&prof, sq, grads, dt, lay, lo, hi, 1, count_tied);
    if (s->is_8bit) zt_adamw8bit_step(&opt8, params, grads, lay, c, c->lr, 1.0f);
    else zt_adamw_step(&opt, params, grads, lay, c, c->lr, 1.0f);
    zt_profile_diff(out, &acc, &before);
    if (s->is_8bit) zt_adamw8bit_free(&opt8);
    else zt_adamw_free(&opt);
    zt_be_free(&prof, grads);
    zt_be_free(&prof, params);
}

// Tensors of lay with elements in [lo, hi).
static int tensors_in(const zt_layout *lay, size_t lo, size_t hi) {
    int n = 0;
    for (int i = 0; i < lay->n; i++)
        n += lay->t[i].offset < hi && lay->t[i].offset + lay->t[i].numel > lo;
    return n;
}

ZT_TEST(plan_optimizer_matches_trainer) {
    zt_model_shape shape = {.n_layer = 3, .n_head = 2, .n_embd = 32, .vocab = 67,
                            .padded_vocab = 128, .n_ctx = 16};
    zt_partition p;
    ZT_ASSERT(zt_partition_build(&p, "uniform", &shape, 2, NULL) == ZT_OK);
    int checked = 0;
    for (int dt = 4; dt >= 2; dt -= 2)
        for (int opt8 = 0; opt8 <= 1; opt8++)
            for (int k = 0; k < 2; k++)
                for (int r = 0; r < 2; r++) {
                    if (dt == 2 && !zt_test_cpu()->caps->bf16) continue;
                    zt_plan_spec s = {.shape = shape, .dp = 2, .pp = 2, .tp = 1, .zero = 1,
                                      .virtual_stages = 1, .micro_batch = 2, .seq = 8,
                                      .param_bytes = dt, .is_8bit = opt8,
                                      .backend = zt_test_cpu()->caps};
                    s.opt8 = zt_adamw8bit_default_options();
                    zt_layout lay;
                    CHECK(zt_plan_rank_layout(&s, &p, k, 0, &lay) == ZT_OK);
                    size_t lo = 0, hi = 0;
                    zt_plan_shard(&s, lay.numel, r, &lo, &hi);
                    zt_profile real;
                    real_optimizer(&s, &lay, lo, hi, k == 0, &real);
                    zt_record rec;
                    CHECK(zt_plan_optimizer_work(&s, &lay, lo, hi, k == 0, &rec) == ZT_OK);
                    char what[96];
                    snprintf(what, sizeof what, "pp rank %d, dp rank %d, %s, %s", k, r,
                             dt == 2 ? "bf16" : "fp32", opt8 ? "adamw8bit" : "adamw");
                    CHECK(same(what, &real, &rec));
                    if (!opt8) CHECK(rec.calls[ZT_PHASE_OPTIMIZER] == tensors_in(&lay, lo, hi));
                    CHECK(rec.calls[ZT_PHASE_OPTIMIZER] > 1);
                    zt_layout_free(&lay);
                    checked++;
                }
    zt_partition_free(&p);
    printf("  %d ranks x dtypes x optimizers: recorded = run, a call per tensor piece\n",
           checked);
    CHECK(checked >= 8);
    return ZT_PASS;
}
