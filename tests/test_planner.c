// Tests of the memory planner (src/planner/planner.c): its bytes equal what the runtime
// allocates, category by category and to the byte, for layouts across dp/pp/tp, both
// ZeRO modes, both optimizers and every schedule (the objects the trainer builds are
// built here and measured with zt_mem_current); the `memory` partition's cached cost
// equals the exact one; a run that does not fit is refused with advice that fits when
// planned again (and is the smallest of its kind); a GPT-3 175B shape on 1024 ranks plans
// without overflow and matches the ZeRO paper's formula within padding; 16-bit
// parameters; the MPI staging windows per machine; --mem-limit's syntax. With
// --sample-every the trainer's decoder is counted too.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "adamw.h"
#include "adamw8bit.h"
#include "comm.h"
#include "config.h"
#include "generate.h"
#include "gpt2.h"
#include "grid_data.h"
#include "launch_math.h"
#include "memory.h"
#include "planner.h"
#include "test.h"


typedef struct {
    int dp, pp, tp, zero, is_8bit;
    zt_schedule_kind sched;
    const char *partition;
    int loss_chunk;
    int threads; // OpenMP threads of the rank (0: the planner leaves the count as it is)
    int sample;  // --sample-every: the trainer's decoder over the stage's model
    int seq_parallel; // --sequence-parallel
    zt_recompute recompute;
} layout_case;

// The model of the reference tests: 3 blocks, 4 heads, 64 channels, vocabulary 300.
// Its biases and LayerNorms (< 4096 values) keep fp32 state under adamw8bit and its
// matrices 8-bit state, so both kinds of piece are planned.
static zt_plan_spec tiny_spec(const layout_case *c) {
    zt_plan_spec s;
    memset(&s, 0, sizeof s);
    s.shape = (zt_model_shape){.vocab = 300, .padded_vocab = zt_padded_vocab(300, c->tp),
                               .n_ctx = 32, .n_layer = 3, .n_head = 4, .n_embd = 64};
    s.dp = c->dp;
    s.pp = c->pp;
    s.tp = c->tp;
    s.zero = c->zero;
    s.micro_batch = 2;
    s.seq = 16;
    s.grad_accum = 3;
    s.loss_chunk = c->loss_chunk;
    s.schedule = c->sched;
    snprintf(s.partition, sizeof s.partition, "%s", c->partition);
    s.is_8bit = c->is_8bit;
    s.opt8 = zt_adamw8bit_default_options();
    s.param_bytes = 4;
    s.stage_kib = 256;
    s.threads = c->threads;
    s.backend = zt_backend_caps_of("cpu");
    s.sample = c->sample;
    s.seq_parallel = c->seq_parallel;
    s.recompute = c->recompute;
    return s;
}

static const layout_case k_layouts[] = {
    {1, 1, 1, 0, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 0, {0}},
    {2, 1, 1, 1, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 0, {0}},
    {2, 1, 1, 1, 1, ZT_SCHED_1F1B, "uniform", 8, 0, 0, 0, {0}},
    {1, 2, 1, 0, 1, ZT_SCHED_GPIPE, "uniform", 0, 0, 0, 0, {0}},
    {2, 2, 1, 1, 0, ZT_SCHED_1F1B, "memory", 0, 0, 0, 0, {0}},
    {2, 3, 1, 1, 1, ZT_SCHED_1F1B, "parameters", 0, 0, 0, 0, {0}},
    {1, 1, 2, 0, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 0, {0}},
    {2, 2, 2, 1, 1, ZT_SCHED_GPIPE, "uniform", 0, 0, 0, 0, {0}},
    {2, 2, 2, 0, 0, ZT_SCHED_1F1B, "memory", 8, 0, 0, 0, {0}},
    {1, 3, 2, 1, 1, ZT_SCHED_1F1B, "0:2,2:3,3:5", 0, 0, 0, 0, {0}},
    {1, 2, 1, 0, 0, ZT_SCHED_1F1B, "uniform", 0, 3, 0, 0, {0}}, // the attention workspace per thread
    {1, 1, 1, 0, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 1, 0, {0}}, // --sample-every
    {2, 1, 2, 1, 1, ZT_SCHED_1F1B, "uniform", 0, 0, 1, 0, {0}},
    {1, 3, 2, 1, 0, ZT_SCHED_1F1B, "0:1,1:4,4:5", 0, 0, 1, 0, {0}}, // embed-only and head-only stages
    // recomputation: the per-layer arrays shrink, the workspace gains one layer
    {2, 2, 2, 1, 1, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 0, {ZT_RECOMPUTE_FULL, 0}},
    {1, 2, 1, 0, 0, ZT_SCHED_GPIPE, "uniform", 0, 0, 0, 0, {ZT_RECOMPUTE_SELECTIVE, 0}},
    {1, 1, 2, 0, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 1, 0, {ZT_RECOMPUTE_FULL, 2}},
    {1, 3, 2, 1, 0, ZT_SCHED_1F1B, "0:1,1:4,4:5", 0, 0, 0, 0, {ZT_RECOMPUTE_SELECTIVE, 1}},
    // sequence parallelism, alone and with recomputation
    {1, 2, 2, 0, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 1, {0}},
    {2, 2, 2, 1, 1, ZT_SCHED_GPIPE, "uniform", 8, 0, 1, 1, {0}},
    {2, 2, 2, 1, 1, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 1, {ZT_RECOMPUTE_FULL, 1}},
    {1, 1, 2, 0, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 1, {ZT_RECOMPUTE_SELECTIVE, 0}},
    // ZB-H1: every stage holds min(p, m) micro-batches and as many W slots of activation
    // gradients; embed-only and head-only stages; with recomputation, sequence parallelism
    {2, 2, 1, 1, 0, ZT_SCHED_ZB_H1, "uniform", 0, 0, 0, 0, {0}},
    {1, 3, 2, 1, 1, ZT_SCHED_ZB_H1, "0:1,1:4,4:5", 0, 0, 0, 0, {0}},
    {2, 2, 2, 1, 1, ZT_SCHED_ZB_H1, "uniform", 0, 0, 0, 1, {ZT_RECOMPUTE_FULL, 1}},
    {1, 2, 2, 0, 0, ZT_SCHED_ZB_H1, "memory", 0, 0, 0, 1, {ZT_RECOMPUTE_SELECTIVE, 0}},
};
#define N_LAYOUTS ((int)(sizeof k_layouts / sizeof k_layouts[0]))

// Builds what the trainer builds for one rank (its stage's model on its tp rank, the
// optimizer on its shard, train.c's token and pipeline buffers), measures each category
// with zt_mem_current, and compares with the plan, to the byte. The MPI backend's part
// of comm is not built here (no communicators in this process) and is left out.
static int check_rank(const zt_plan_spec *s, const zt_plan_bytes *want) {
    size_t before[ZT_MEM_NCAT];
    for (int k = 0; k < ZT_MEM_NCAT; k++) before[k] = zt_mem_current((zt_mem_category)k);
    // a stand-in tp group: zt_gpt2_init only records it; nothing collective runs here
    zt_comm tpc;
    memset(&tpc, 0, sizeof tpc);
    tpc.size = s->tp;
    tpc.rank = want->tp_rank;
    zt_gpt2 m;
    int threads = omp_get_max_threads(); // the rank runs with the planned thread count
    if (s->threads > 0) omp_set_num_threads(s->threads);
    zt_status st = zt_gpt2_init(&m, zt_test_cpu(), &s->shape, want->unit_first, want->unit_last, s->tp,
                                want->tp_rank, ZT_ALIGN_ELEMS, (size_t)s->dp * ZT_ALIGN_ELEMS,
                                s->micro_batch, s->seq, s->loss_chunk, want->n_slots, &tpc,
                                s->param_bytes == 2 ? ZT_BF16 : ZT_F32,
                                &(zt_act_options){s->recompute, s->seq_parallel,
                                                  zt_plan_stage_w_slots(s, want->n_slots)});
    omp_set_num_threads(threads);
    CHECK(st == ZT_OK);
    CHECK_EQ_INT(m.layout.numel, want->numel);
    size_t lo, hi;
    zt_plan_shard(s, m.layout.numel, want->dp_rank, &lo, &hi);
    CHECK_EQ_INT(lo, want->shard_lo);
    CHECK_EQ_INT(hi, want->shard_hi);
    zt_adamw o32;
    zt_adamw8bit o8;
    memset(&o32, 0, sizeof o32);
    memset(&o8, 0, sizeof o8);
    if (s->is_8bit) CHECK(zt_adamw8bit_init(&o8, zt_test_cpu(), &m.layout, lo, hi, &s->opt8, m.dtype) == ZT_OK);
    else zt_adamw_init(&o32, zt_test_cpu(), lo, hi, m.dtype);
    // train.c's setup: token ids of every slot (inputs, targets), the pipeline buffers
    size_t BT = (size_t)s->micro_batch * s->seq;
    size_t NC = zt_gpt2_rows(s->micro_batch, s->seq, s->tp, s->seq_parallel) * s->shape.n_embd;
    size_t slots = (size_t)want->n_slots;
    void *bufs[5] = {
        zt_mem_alloc(ZT_MEM_WORKSPACE, slots * BT * sizeof(int32_t)),
        zt_mem_alloc(ZT_MEM_WORKSPACE, slots * BT * sizeof(int32_t)),
        zt_mem_alloc(ZT_MEM_COMM, slots * NC * sizeof(float)),
        zt_mem_alloc(ZT_MEM_COMM, slots * NC * sizeof(float)),
        zt_mem_alloc(ZT_MEM_COMM, NC * sizeof(float)),
    };
    zt_decoder dec;
    memset(&dec, 0, sizeof dec);
    if (s->sample) // the pipeline path is not used while allocating
        CHECK(zt_decoder_init_over(&dec, &m, s->tp > 1 ? &tpc : NULL, NULL) == ZT_OK);
    for (int k = 0; k < ZT_MEM_NCAT; k++) {
        double got = (double)(zt_mem_current((zt_mem_category)k) - before[k]);
        double planned = want->bytes[k] - (k == ZT_MEM_COMM ? want->comm_backend : 0.0);
        if (got != planned) {
            fprintf(stderr, "rank %d (stage %d, dp %d, tp %d) %s: allocated %.0f, planned %.0f\n",
                    want->rank, want->pp_rank, want->dp_rank, want->tp_rank,
                    zt_mem_category_name((zt_mem_category)k), got, planned);
            return ZT_FAIL;
        }
    }
    CHECK(want->opt_master + want->opt_m + want->opt_v + want->opt_absmax + want->opt_table ==
          want->bytes[ZT_MEM_OPTIMIZER]);
    for (int i = 0; i < 5; i++) zt_mem_free(bufs[i]);
    zt_decoder_free(&dec);
    zt_adamw_free(&o32);
    zt_adamw8bit_free(&o8);
    zt_gpt2_free(&m);
    for (int k = 0; k < ZT_MEM_NCAT; k++)
        CHECK_EQ_INT(zt_mem_current((zt_mem_category)k), before[k]);
    return ZT_PASS;
}

static int same_plan(const zt_plan_bytes *a, const zt_plan_bytes *b) {
    for (int k = 0; k < ZT_MEM_NCAT; k++)
        if (a->bytes[k] != b->bytes[k]) return 0;
    return a->rank == b->rank && a->numel == b->numel && a->shard_lo == b->shard_lo &&
           a->shard_hi == b->shard_hi && a->comm_window == b->comm_window &&
           a->staging == b->staging &&
           a->end_transient == b->end_transient && a->peak == b->peak && a->n_slots == b->n_slots;
}

ZT_TEST(planner_equals_allocation) {
    for (int c = 0; c < N_LAYOUTS; c++) {
        zt_plan_spec s = tiny_spec(&k_layouts[c]);
        zt_partition p;
        CHECK(zt_plan_partition(&s, &p) == ZT_OK);
        int W = s.dp * s.pp * s.tp;
        zt_plan_bytes *all = calloc((size_t)W, sizeof *all);
        CHECK(all && zt_plan_all(&s, &p, all) == ZT_OK);
        for (int r = 0; r < W; r++) {
            int d = all[r].dp_rank, pr = all[r].pp_rank, t = all[r].tp_rank;
            CHECK_EQ_INT(all[r].rank, r);
            CHECK_EQ_INT((pr * s.dp + d) * s.tp + t, r);
            // one rank alone plans the same as the whole layout
            zt_plan_bytes one;
            CHECK(zt_plan_rank(&s, &p, d, pr, t, &one) == ZT_OK);
            CHECK(same_plan(&one, &all[r]));
            CHECK_EQ_INT(all[r].n_slots, zt_plan_stage_slots(&s, pr));
            if (check_rank(&s, &all[r]) != ZT_PASS) {
                fprintf(stderr, "layout %d: dp %d pp %d tp %d zero %d %s %s %s\n", c, s.dp, s.pp,
                        s.tp, s.zero, s.is_8bit ? "adamw8bit" : "adamw",
                        zt_schedule_kind_name(s.schedule), s.partition);
                return ZT_FAIL;
            }
        }
        printf("  layout %d (dp %d pp %d tp %d zero %d %s %s %s): %d ranks equal their "
               "allocations\n",
               c, s.dp, s.pp, s.tp, s.zero, s.is_8bit ? "adamw8bit" : "adamw",
               zt_schedule_kind_name(s.schedule), s.partition, W);
        free(all);
        zt_partition_free(&p);
    }
    return ZT_PASS;
}

// Every (stage, first, last) cost from one cache against the exact cost; returns the number
// that differ (printing the first). Stages last first: they reuse keys other stages filled.
static int cache_mismatches(const zt_plan_spec *s) {
    zt_plan_cache c;
    zt_plan_cache_init(&c, s);
    int U = zt_unit_count(&s->shape), bad = 0;
    for (int stage = s->pp - 1; stage >= 0; stage--)
        for (int first = 0; first < U; first++)
            for (int last = first + 1; last <= U; last++) {
                int slots = zt_plan_stage_slots(s, stage);
                double want, got = zt_plan_stage_cost_cached(s, &c, first, last, slots);
                ZT_ASSERT(zt_plan_stage_cost(s, first, last, slots, &want) == ZT_OK);
                if (got != want && bad++ == 0)
                    fprintf(stderr, "stage %d units [%d, %d): cached %.0f, exact %.0f\n", stage,
                            first, last, got, want);
            }
    zt_plan_cache_free(&c);
    return bad;
}

// The `memory` partition's cost comes from a cache keyed by (embed, head, blocks): it
// must equal the exact plan of every unit range on every stage.
ZT_TEST(planner_stage_cost_cache_is_exact) {
    for (int c = 0; c < N_LAYOUTS; c++) {
        zt_plan_spec s = tiny_spec(&k_layouts[c]);
        CHECK_EQ_INT(cache_mismatches(&s), 0);
    }
    // a deeper model with 1F1B slots that differ per stage
    layout_case lc = {2, 4, 1, 1, 1, ZT_SCHED_1F1B, "memory", 0, 0, 0, 0, {0}};
    zt_plan_spec s = tiny_spec(&lc);
    s.shape.n_layer = 9;
    CHECK_EQ_INT(cache_mismatches(&s), 0);
    // and the memory partition of it is the exact min-max of those costs: no stage of
    // the uniform partition's plan beats its largest stage
    zt_partition pm, pu;
    CHECK(zt_plan_partition(&s, &pm) == ZT_OK);
    snprintf(s.partition, sizeof s.partition, "uniform");
    CHECK(zt_plan_partition(&s, &pu) == ZT_OK);
    double worst_m = 0, worst_u = 0;
    for (int st = 0; st < s.pp; st++) {
        zt_plan_bytes bm, bu;
        CHECK(zt_plan_rank(&s, &pm, 0, st, 0, &bm) == ZT_OK);
        CHECK(zt_plan_rank(&s, &pu, 0, st, 0, &bu) == ZT_OK);
        worst_m = fmax(worst_m, bm.tracked - bm.comm_backend);
        worst_u = fmax(worst_u, bu.tracked - bu.comm_backend);
    }
    printf("  largest stage: memory partition %.0f bytes, uniform %.0f\n", worst_m, worst_u);
    CHECK(worst_m <= worst_u);
    zt_partition_free(&pm);
    zt_partition_free(&pu);
    return ZT_PASS;
}

// ---------------------------------------------------------------- fits and advice

// A mid-size model where model state and activations both matter: 6 blocks of 256
// channels, vocabulary 4096, 8 x 64 tokens per micro-batch, 2 dp ranks, ZeRO off.
static zt_plan_spec mid_spec(void) {
    layout_case lc = {2, 1, 1, 0, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 0, {0}};
    zt_plan_spec s = tiny_spec(&lc);
    s.shape = (zt_model_shape){.vocab = 4096, .padded_vocab = 4096, .n_ctx = 64, .n_layer = 6,
                               .n_head = 4, .n_embd = 256};
    s.micro_batch = 8;
    s.seq = 64;
    s.grad_accum = 2;
    return s;
}

static double max_peak(const zt_plan_spec *s) {
    zt_partition p;
    if (zt_plan_partition(s, &p) != ZT_OK) return INFINITY;
    int W = s->dp * s->pp * s->tp;
    zt_plan_bytes *all = calloc((size_t)W, sizeof *all);
    ZT_ASSERT(all);
    double top = INFINITY;
    if (zt_plan_all(s, &p, all) == ZT_OK) {
        top = 0;
        for (int r = 0; r < W; r++) top = fmax(top, all[r].peak);
    }
    free(all);
    zt_partition_free(&p);
    return top;
}

// Applies an advice text ("--zero 1 --dp 4", "--pp 3 --partition memory", ...) to s.
static int apply_change(zt_plan_spec *s, const char *change) {
    char *buf = strdup(change), *save = NULL;
    ZT_ASSERT(buf);
    int ok = 1;
    for (char *flag = strtok_r(buf, " ", &save); flag && ok; flag = strtok_r(NULL, " ", &save)) {
        char *v = strtok_r(NULL, " ", &save);
        if (!v) ok = 0;
        else if (!strcmp(flag, "--zero")) s->zero = atoi(v);
        else if (!strcmp(flag, "--dp")) s->dp = atoi(v);
        else if (!strcmp(flag, "--pp")) s->pp = atoi(v);
        else if (!strcmp(flag, "--partition")) snprintf(s->partition, sizeof s->partition, "%s", v);
        else if (!strcmp(flag, "--optim")) s->is_8bit = !strcmp(v, "adamw8bit");
        else if (!strcmp(flag, "--micro-batch")) s->micro_batch = atoi(v);
        else if (!strcmp(flag, "--grad-accum")) s->grad_accum = atoi(v);
        else if (!strcmp(flag, "--schedule"))
            s->schedule = strcmp(v, "gpipe") ? ZT_SCHED_1F1B : ZT_SCHED_GPIPE;
        else if (!strcmp(flag, "--loss-chunk")) s->loss_chunk = atoi(v);
        else if (!strcmp(flag, "--recompute"))
            s->recompute.mode = !strcmp(v, "full") ? ZT_RECOMPUTE_FULL : ZT_RECOMPUTE_SELECTIVE;
        else if (!strcmp(flag, "--recompute-layers")) s->recompute.layers = atoi(v);
        else ok = 0;
    }
    free(buf);
    return ok;
}

// Every advice fits when planned, is named in the message, and is the smallest step of
// its kind (the step before it does not fit).
static int check_advice(const zt_plan_spec *s, double limit, int min_count) {
    zt_plan_advice adv[8];
    int n = zt_plan_advise(s, limit, 1, adv, 8);
    CHECK(n >= min_count);
    CHECK(zt_plan_check_fits(s, limit, 1, "--mem-limit X") == ZT_ERR);
    const char *msg = zt_error_message();
    printf("  message: %s\n", msg);
    CHECK(strstr(msg, "Changes that fit"));
    CHECK(strstr(msg, "optimizer") && strstr(msg, "activations"));
    for (int i = 0; i < n; i++) {
        zt_plan_spec t = *s;
        CHECK(apply_change(&t, adv[i].change));
        double need = max_peak(&t);
        printf("  advice %-40s planned again: %.0f bytes (limit %.0f)\n", adv[i].change, need,
               limit);
        CHECK(need <= limit);
        CHECK(need == adv[i].need);
        CHECK(strstr(msg, adv[i].change));
        if (t.dp != s->dp && t.dp / 2 >= s->dp) { // half as many dp ranks does not fit
            zt_plan_spec h = t;
            h.dp = t.dp / 2;
            CHECK(max_peak(&h) > limit);
        }
        if (t.pp - 1 > s->pp) {
            zt_plan_spec h = t;
            h.pp = t.pp - 1;
            CHECK(max_peak(&h) > limit);
            snprintf(h.partition, sizeof h.partition, "memory");
            CHECK(max_peak(&h) > limit);
        }
        if (t.micro_batch != s->micro_batch) // every larger divisor does not fit
            for (int b = t.micro_batch + 1; b < s->micro_batch; b++) {
                if (s->micro_batch % b) continue;
                zt_plan_spec h = *s;
                h.micro_batch = b;
                h.grad_accum = s->grad_accum * (s->micro_batch / b);
                CHECK(max_peak(&h) > limit);
            }
        if (t.recompute.layers > 1) { // one block fewer does not fit
            zt_plan_spec h = t;
            h.recompute.layers--;
            CHECK(max_peak(&h) > limit);
        }
    }
    return ZT_PASS;
}

ZT_TEST(planner_refuses_with_advice_that_fits) {
    zt_plan_spec s = mid_spec();
    double need = max_peak(&s);
    CHECK(need > 0 && isfinite(need));
    // fits: no error; no limit: no check
    CHECK(zt_plan_check_fits(&s, need, 1, "--mem-limit X") == ZT_OK);
    CHECK(zt_plan_check_fits(&s, 0, 1, "--mem-limit X") == ZT_OK);
    // a little short: model-state changes fit (ZeRO-1 with more dp, 8-bit, more stages)
    printf("need %.0f bytes per rank\n", need);
    if (check_advice(&s, need * 0.9, 3) != ZT_PASS) return ZT_FAIL;
    {
        zt_plan_advice adv[8];
        int n = zt_plan_advise(&s, need * 0.9, 1, adv, 8), has_zero = 0, has_8bit = 0;
        for (int i = 0; i < n; i++) {
            has_zero |= strncmp(adv[i].change, "--zero 1", 8) == 0;
            has_8bit |= strcmp(adv[i].change, "--optim adamw8bit") == 0;
        }
        CHECK(has_zero && has_8bit);
    }
    // activations dominate (one rank, B 16 x T 256): recomputation, selective or full with the
    // fewest blocks, is among the advice, with its cost
    {
        zt_plan_spec a = mid_spec();
        a.dp = 1;
        a.micro_batch = 16;
        a.seq = 256;
        a.shape.n_ctx = 256;
        zt_plan_spec sel = a;
        sel.recompute.mode = ZT_RECOMPUTE_SELECTIVE;
        zt_plan_spec full = a;
        full.recompute.mode = ZT_RECOMPUTE_FULL;
        double sel_need = max_peak(&sel), full_need = max_peak(&full);
        CHECK(full_need < sel_need && sel_need < max_peak(&a));
        for (int k = 0; k < 2; k++) { // selective fits the first limit, only full the second
            double limit = k == 0 ? sel_need : full_need;
            if (check_advice(&a, limit, 1) != ZT_PASS) return ZT_FAIL;
            zt_plan_advice adv[8];
            int n = zt_plan_advise(&a, limit, 1, adv, 8), found = 0;
            const char *want = k == 0 ? "--recompute selective" : "--recompute full";
            for (int i = 0; i < n; i++)
                found |= strncmp(adv[i].change, want, strlen(want)) == 0 && adv[i].note[0];
            CHECK(found);
        }
    }
    // already ZeRO-1: more dp ranks (the smallest count that fits)
    {
        zt_plan_spec z = mid_spec();
        z.zero = 1;
        double zneed = max_peak(&z);
        if (check_advice(&z, zneed * 0.97, 1) != ZT_PASS) return ZT_FAIL;
        zt_plan_advice adv[8];
        int n = zt_plan_advise(&z, zneed * 0.97, 1, adv, 8), has_dp = 0;
        for (int i = 0; i < n; i++) has_dp |= strncmp(adv[i].change, "--zero 1 --dp ", 14) == 0;
        CHECK(has_dp);
    }
    // GPipe keeping every micro-batch, with much less room: a smaller micro-batch or 1F1B
    s.schedule = ZT_SCHED_GPIPE;
    s.grad_accum = 8;
    need = max_peak(&s);
    if (check_advice(&s, need * 0.6, 1) != ZT_PASS) return ZT_FAIL;
    // nothing fits 1 KiB
    CHECK(zt_plan_check_fits(&s, 1024, 1, "--mem-limit 1K") == ZT_ERR);
    CHECK(strstr(zt_error_message(), "No change the planner tries fits"));
    // the ranks of one machine share its memory: 2 ranks need twice one rank
    zt_plan_spec m = mid_spec();
    double one = max_peak(&m);
    CHECK(zt_plan_check_fits(&m, 1.5 * one, 2, "this machine's available memory") == ZT_ERR);
    printf("  machine: %s\n", zt_error_message());
    CHECK(strstr(zt_error_message(), "the 2 ranks on one machine"));
    CHECK(zt_plan_check_fits(&m, 2.0 * one, 2, "this machine's available memory") == ZT_OK);
    return ZT_PASS;
}

// ---------------------------------------------------------------- scale and formulas

// GPT-3 175B (96 layers, 96 heads, 12288 channels, n_ctx 2048, vocabulary 50257) on 1024
// ranks. Its model state against the ZeRO paper: Pos = (2+2)psi + 12 psi/Nd for 16-bit
// parameters with fp32 master, m and v; the planner's psi is the padded flat buffer, a
// little more than the real parameter count.
ZT_TEST(planner_gpt3_175b_on_1024_ranks) {
    layout_case lc = {1024, 1, 1, 1, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 0, {0}};
    zt_plan_spec s = tiny_spec(&lc);
    s.shape = (zt_model_shape){.vocab = 50257, .padded_vocab = zt_padded_vocab(50257, 1),
                               .n_ctx = 2048, .n_layer = 96, .n_head = 96, .n_embd = 12288};
    s.micro_batch = 1;
    s.seq = 2048;
    s.grad_accum = 8;
    s.param_bytes = 2;
    s.ranks_per_node = 8;
    double psi = (double)zt_model_param_count(&s.shape);
    printf("psi = %.6g parameters\n", psi);
    CHECK(psi > 174e9 && psi < 176e9);
    for (int zero = 0; zero <= 1; zero++) {
        s.zero = zero;
        zt_partition p;
        CHECK(zt_plan_partition(&s, &p) == ZT_OK);
        zt_plan_bytes *all = calloc(1024, sizeof *all);
        CHECK(all && zt_plan_all(&s, &p, all) == ZT_OK);
        double numel = (double)all[0].numel;
        CHECK(numel >= psi && (numel - psi) / psi < 1e-3); // alignment padding only
        for (int r = 0; r < 1024; r++) {
            CHECK(all[r].bytes[ZT_MEM_PARAMS] == 2.0 * numel);
            CHECK(all[r].bytes[ZT_MEM_GRADS] == 2.0 * numel);
            CHECK(all[r].bytes[ZT_MEM_OPTIMIZER] == 12.0 * numel / (zero ? 1024 : 1));
            CHECK(all[r].bytes[ZT_MEM_ACTIVATIONS] > 5e10 && isfinite(all[r].peak));
        }
        double state = all[0].bytes[ZT_MEM_PARAMS] + all[0].bytes[ZT_MEM_GRADS] +
                       all[0].bytes[ZT_MEM_OPTIMIZER];
        double formula = zt_plan_zero_formula(zero, psi, 2, 2, 12, 1024);
        printf("  zero %d: model state %.4g bytes per rank, the paper's %s %.4g (ratio %.6f)\n",
               zero, state, zero ? "Pos" : "baseline", formula, state / formula);
        CHECK(fabs(state / formula - 1.0) < 1e-3);
        free(all);
        zt_partition_free(&p);
    }
    // a 3-D layout of the same 1024 ranks, 8-bit optimizer, the memory partition: every
    // rank plans, and one replica's parameters add up to the model within padding, plus
    // the last stage's copy of the tied embedding and the tensors every tp rank holds
    // whole (wpe, the LayerNorms, the row-parallel biases) tp - 1 more times
    s.dp = 16;
    s.pp = 8;
    s.tp = 8;
    s.zero = 1;
    s.is_8bit = 1;
    s.shape.padded_vocab = zt_padded_vocab(50257, 8);
    snprintf(s.partition, sizeof s.partition, "memory");
    zt_partition p;
    CHECK(zt_plan_partition(&s, &p) == ZT_OK);
    zt_plan_bytes *all = calloc(1024, sizeof *all);
    CHECK(all && zt_plan_all(&s, &p, all) == ZT_OK);
    double replica = 0.0, top = 0.0;
    for (int r = 0; r < 1024; r++) {
        CHECK(isfinite(all[r].peak) && all[r].peak > 0);
        top = fmax(top, all[r].peak);
        if (all[r].dp_rank == 0) replica += all[r].bytes[ZT_MEM_PARAMS] / 2.0;
    }
    double C = s.shape.n_embd, tied = (double)s.shape.padded_vocab * C;
    double whole = (s.shape.n_ctx * C + s.shape.n_layer * 6 * C + 2 * C) * (s.tp - 1);
    double want = psi + tied + whole;
    printf("  dp 16 x pp 8 x tp 8: one replica holds %.6g parameters (model + tied copy + "
           "tp-replicated %.6g); largest rank %.3g bytes\n",
           replica, want, top);
    CHECK(replica >= want && (replica - want) / psi < 1e-3);
    free(all);
    zt_partition_free(&p);
    return ZT_PASS;
}

// The paper's Figure 1: 7.5B parameters on 64 ranks, K = 12: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB.
ZT_TEST(planner_zero_formula_matches_paper) {
    const double gb[4] = {120.0, 31.4, 16.6, 1.9};
    for (int z = 0; z < 4; z++) {
        double v = zt_plan_zero_formula(z, 7.5e9, 2, 2, 12, 64) / 1e9;
        printf("  stage %d: %.3f GB (paper %.1f)\n", z, v, gb[z]);
        CHECK(fabs(v - gb[z]) < 0.05);
    }
    return ZT_PASS;
}

// The workspace's bf16 output gradients of c_fc, then c_attn, under bf16 (zt_gpt2_acts.dout16):
// all N rows of the wider one, 4C/tp values, 2 bytes each, carved in 64-byte pieces.
static size_t dout16_bytes(const zt_plan_spec *s) {
    size_t N = (size_t)s->micro_batch * s->seq, C = (size_t)s->shape.n_embd;
    return zt_round_up(N * (4 * C / (size_t)s->tp) * 2, 64);
}

// The workspace's activation gradients under bf16 against fp32's (zt_gpt2_acts): dres is bf16
// (the stage's rows of C values, 2 bytes each instead of 4), dqkv is not carved (the bf16
// dqkv lies in dout16) and dfch holds 6C/tp fp32 values a row instead of 4C/tp (it is also
// attention's widening scratch); each carved in 64-byte pieces.
static double grad_buffers_delta(const zt_plan_spec *s) {
    size_t N = (size_t)s->micro_batch * s->seq, Cl = (size_t)s->shape.n_embd / (size_t)s->tp;
    size_t NrC = zt_gpt2_rows(s->micro_batch, s->seq, s->tp, s->seq_parallel) *
                 (size_t)s->shape.n_embd;
    return (double)zt_round_up(NrC * 2, 64) - (double)zt_round_up(NrC * 4, 64) +
           (double)zt_round_up(N * 6 * Cl * 4, 64) - (double)zt_round_up(N * 4 * Cl * 4, 64) -
           (double)zt_round_up(N * 3 * Cl * 4, 64);
}

// 16-bit parameters: params, grads, activations, logits and the pipeline buffers halve;
// the optimizer adds the fp32 master copy of the shard.
ZT_TEST(planner_bf16_parameters) {
    layout_case lc = {2, 2, 1, 1, 1, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 0, {0}};
    zt_plan_spec s = tiny_spec(&lc), h = s;
    h.param_bytes = 2;
    zt_partition p;
    CHECK(zt_plan_partition(&s, &p) == ZT_OK);
    for (int st = 0; st < 2; st++)
        for (int d = 0; d < 2; d++) {
            zt_plan_bytes a, b;
            CHECK(zt_plan_rank(&s, &p, d, st, 0, &a) == ZT_OK);
            CHECK(zt_plan_rank(&h, &p, d, st, 0, &b) == ZT_OK);
            CHECK(b.bytes[ZT_MEM_PARAMS] * 2 == a.bytes[ZT_MEM_PARAMS]);
            CHECK(b.bytes[ZT_MEM_GRADS] * 2 == a.bytes[ZT_MEM_GRADS]);
            // the bf16 activations halve, the rest stay fp32; the logits halve, the loss's
            // per-row statistics beside them stay fp32 (none on the first stage); the
            // pipeline's buffers halve (the stream and its gradient are bf16); the workspace
            // adds the backend's gemm_mixed scratch, the bf16 output gradients of c_fc and
            // c_attn (dout16_bytes) and the activation gradients' change (grad_buffers_delta)
            CHECK(b.bytes[ZT_MEM_ACTIVATIONS] < a.bytes[ZT_MEM_ACTIVATIONS]);
            CHECK(2 * b.bytes[ZT_MEM_ACTIVATIONS] > a.bytes[ZT_MEM_ACTIVATIONS]);
            if (st == 0) CHECK(b.bytes[ZT_MEM_LOGITS] == 0 && a.bytes[ZT_MEM_LOGITS] == 0);
            else CHECK(b.bytes[ZT_MEM_LOGITS] < a.bytes[ZT_MEM_LOGITS] &&
                       2 * b.bytes[ZT_MEM_LOGITS] > a.bytes[ZT_MEM_LOGITS]);
            size_t gw = zt_round_up(s.backend->gemm_mixed_workspace, 64);
            CHECK(b.bytes[ZT_MEM_WORKSPACE] == a.bytes[ZT_MEM_WORKSPACE] + (double)gw +
                                                   (double)dout16_bytes(&s) +
                                                   grad_buffers_delta(&s));
            double NC = (double)zt_gpt2_rows(s.micro_batch, s.seq, s.tp, s.seq_parallel) *
                        s.shape.n_embd;
            // recv_in and recv_dout (a slot each) and dinput, at 2 bytes a value instead of 4
            CHECK(b.bytes[ZT_MEM_COMM] == a.bytes[ZT_MEM_COMM] - 2.0 * (2.0 * b.n_slots + 1) * NC);
            CHECK(b.opt_master == 4.0 * (double)(a.shard_hi - a.shard_lo));
            CHECK(b.bytes[ZT_MEM_OPTIMIZER] == a.bytes[ZT_MEM_OPTIMIZER] + b.opt_master);
        }
    zt_partition_free(&p);
    return ZT_PASS;
}

// The MPI backend maps a staging window for each communicator of >= 2 ranks that all sit
// on one machine: 2 x size x 256 KiB per rank. Rank 1 of dp 4 x pp 2 (stage 0, dp 1)
// belongs to the worlds (8 ranks), the dp group 0-3, the pp and embed groups {1, 5}.
ZT_TEST(planner_staging_windows_per_machine) {
    layout_case lc = {4, 2, 1, 1, 0, ZT_SCHED_1F1B, "uniform", 0, 0, 0, 0, {0}};
    zt_plan_spec s = tiny_spec(&lc);
    zt_partition p;
    CHECK(zt_plan_partition(&s, &p) == ZT_OK);
    zt_plan_bytes b;
    const double slot = 256.0 * 1024;
    s.ranks_per_node = 0; // all 8 on one machine: worlds (8, twice), dp (4), pp (2), embed (2)
    CHECK(zt_plan_rank(&s, &p, 1, 0, 0, &b) == ZT_OK);
    CHECK(b.comm_window == 2 * slot * (8 + 8 + 4 + 2 + 2));
    s.ranks_per_node = 4; // the dp group is one machine's; worlds, pp and embed span two
    CHECK(zt_plan_rank(&s, &p, 1, 0, 0, &b) == ZT_OK);
    CHECK(b.comm_window == 2 * slot * 4);
    s.ranks_per_node = 2; // nothing of 2+ ranks stays on one machine
    CHECK(zt_plan_rank(&s, &p, 1, 0, 0, &b) == ZT_OK);
    CHECK(b.comm_window == 0);
    s.ranks_per_node = 0;
    s.stage_kib = 0; // ZT_COMM_MPI_ALGO=mpi
    CHECK(zt_plan_rank(&s, &p, 1, 0, 0, &b) == ZT_OK);
    CHECK(b.comm_window == 0);
    zt_partition_free(&p);
    return ZT_PASS;
}

ZT_TEST(planner_mem_limit_syntax) {
    double b = 0;
    CHECK(zt_config_parse_bytes("16G", "--mem-limit", &b) == ZT_OK && b == 16.0 * (1 << 30));
    CHECK(zt_config_parse_bytes("512M", "--mem-limit", &b) == ZT_OK && b == 512.0 * (1 << 20));
    CHECK(zt_config_parse_bytes("1.5GiB", "--mem-limit", &b) == ZT_OK && b == 1.5 * (1 << 30));
    CHECK(zt_config_parse_bytes("2t", "--mem-limit", &b) == ZT_OK && b == 2.0 * 1099511627776.0);
    CHECK(zt_config_parse_bytes("4096", "--mem-limit", &b) == ZT_OK && b == 4096);
    CHECK(zt_config_parse_bytes("100B", "--mem-limit", &b) == ZT_OK && b == 100);
    const char *bad[] = {"", "G", "16Q", "-1G", "0", "0x10", "inf", "nan", "16 G", "16GB2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(zt_config_parse_bytes(bad[i], "--mem-limit", &b) == ZT_ERR);
        CHECK(strstr(zt_error_message(), "--mem-limit"));
    }
    // the config: validate refuses a bad value; the CPU trains bf16 parameters, CUDA not yet
    zt_config c;
    char *argv[] = {"--mem-limit", "12X", "--param-dtype", "bf16"};
    CHECK(zt_config_parse(&c, 4, argv) == ZT_OK);
    CHECK(zt_config_validate(&c) == ZT_ERR && strstr(zt_error_message(), "12X"));
    snprintf(c.mem_limit, sizeof c.mem_limit, "3G");
    CHECK(zt_config_validate(&c) == ZT_OK);
    CHECK(zt_config_mem_limit(&c) == 3.0 * (1 << 30));
    CHECK(zt_config_check_trainable(&c) == ZT_OK);
    if (zt_backend_caps_of("cuda")->built) { // a CUDA build: its backend has no bf16 yet
        snprintf(c.backend, sizeof c.backend, "cuda");
        CHECK(zt_config_check_trainable(&c) == ZT_ERR);
        CHECK(strstr(zt_error_message(), "--param-dtype bf16"));
        c.param_dtype = ZT_F32;
        CHECK(zt_config_check_trainable(&c) == ZT_OK);
    }
    return ZT_PASS;
}

// A bf16 plan counts the backend's gemm_mixed scratch (the model carves it from its
// workspace, beside the bf16 output gradients): on the CPU its 32 MiB, on CUDA cuBLASLt's
// workspace and the tiles (64 MiB), in a binary built with CUDA or without (the registry
// entries state the same caps).
ZT_TEST(planner_bf16_counts_gemm_workspace) {
    const char *backends[] = {"cpu", "cuda"};
    for (int b = 0; b < 2; b++) {
        zt_plan_spec s = tiny_spec(&k_layouts[0]);
        s.backend = zt_backend_caps_of(backends[b]);
        CHECK(s.backend->bf16 && s.backend->gemm_mixed_workspace > 0);
        zt_partition p;
        CHECK(zt_plan_partition(&s, &p) == ZT_OK);
        zt_plan_bytes f32, bf16;
        CHECK(zt_plan_rank(&s, &p, 0, 0, 0, &f32) == ZT_OK);
        s.param_bytes = 2;
        CHECK(zt_plan_rank(&s, &p, 0, 0, 0, &bf16) == ZT_OK);
        double extra = bf16.bytes[ZT_MEM_WORKSPACE] - f32.bytes[ZT_MEM_WORKSPACE];
        printf("  %s: bf16 workspace %.0f bytes over fp32's (gemm_mixed: %zu, output "
               "gradients: %zu, activation gradients: %.0f)\n",
               backends[b], extra, s.backend->gemm_mixed_workspace, dout16_bytes(&s),
               grad_buffers_delta(&s));
        CHECK(extra == (double)(s.backend->gemm_mixed_workspace + dout16_bytes(&s)) +
                           grad_buffers_delta(&s));
        zt_partition_free(&p);
    }
    return ZT_PASS;
}

// The CUDA backend allocates its own buffers when it opens (cuBLAS's workspace, the sums'
// scratch, the column sums' partials, the embedding backward's sort keys: launch_math.h) and
// states their sum in its caps, in a
// binary built with CUDA or without; every rank's plan counts them as workspace, fp32 or
// bf16. Written out here from the sizes the backend documents, so a change to them shows.
ZT_TEST(planner_cuda_counts_fixed_workspace) {
    const zt_backend_caps *cuda = zt_backend_caps_of("cuda");
    const double colsum = 2.0 * 64 * 4096 * 4, enc = 2.0 * (1 << 20) * 8; // two key buffers
    const double fixed = 32.0 * 1048576 + (2 + 2 * 256) * 8.0 + colsum + enc;
    printf("  cuda caps.fixed_workspace %zu bytes (cuBLAS 32 MiB + sums 4112 B + column sums "
           "%.0f B + embedding sort keys %.0f B = %.0f)\n",
           cuda->fixed_workspace, colsum, enc, fixed);
    CHECK((double)cuda->fixed_workspace == fixed);
    CHECK(cuda->fixed_workspace == ZT_CUDA_FIXED_WORKSPACE);
    CHECK_EQ_INT(zt_backend_caps_of("cpu")->fixed_workspace, 0);
    zt_backend_caps none = *cuda; // the same backend without its own buffers
    none.fixed_workspace = 0;
    for (int pb = 4; pb >= 2; pb -= 2) {
        zt_plan_spec s = tiny_spec(&k_layouts[7]); // dp 2 x pp 2 x tp 2
        s.param_bytes = pb;
        zt_partition p;
        CHECK(zt_plan_partition(&s, &p) == ZT_OK);
        int W = s.dp * s.pp * s.tp;
        zt_plan_bytes *a = calloc((size_t)W, sizeof *a), *b = calloc((size_t)W, sizeof *b);
        CHECK(a && b);
        s.backend = cuda;
        CHECK(zt_plan_all(&s, &p, a) == ZT_OK);
        s.backend = &none;
        CHECK(zt_plan_all(&s, &p, b) == ZT_OK);
        for (int r = 0; r < W; r++) {
            CHECK(a[r].bytes[ZT_MEM_WORKSPACE] - b[r].bytes[ZT_MEM_WORKSPACE] == fixed);
            CHECK(a[r].tracked - b[r].tracked == fixed);
            CHECK(a[r].peak - b[r].peak == fixed);
        }
        free(a);
        free(b);
        zt_partition_free(&p);
    }
    return ZT_PASS;
}

// The host staging buffers of the grid's staged groups (comm_staged.c: two buffers of
// ZT_COMM_STAGE_BYTES_DEFAULT per group, of ZT_GRID_STAGE_BYTES_ONE for a group of one), for
// the path the grid picks per group: none on the CPU's plain MPI paths; with --tensor-path
// staged every group, in comm (the CPU's allocator counts host memory); on CUDA by which
// ranks share a GPU, beside the device count and in the peak. dp 2 x pp 2 x tp 2: every
// group has two ranks; rank r is (stage r / 4, dp (r / 2) % 2, tp r % 2).
ZT_TEST(planner_counts_host_staging) {
    const double two = 2.0 * ZT_COMM_STAGE_BYTES_DEFAULT, one = 2.0 * ZT_GRID_STAGE_BYTES_ONE;
    CHECK(zt_comm_staged_host_bytes(ZT_COMM_STAGE_BYTES_DEFAULT) == (size_t)two);
    struct {
        const char *backend;
        int stage_all, gpus, ranks_per_node;
        double want; // staging of every rank
    } cases[] = {
        {"cpu", 0, 0, 0, 0.0},         // plain MPI: nothing staged
        {"cpu", 1, 0, 0, 4 * two},     // --tensor-path staged: tp, dp, pp, embed
        {"cuda", 0, 0, 0, 0.0},        // a GPU per rank: NCCL everywhere
        {"cuda", 0, 8, 0, 0.0},        // 8 GPUs for 8 ranks: the same
        {"cuda", 0, 4, 0, 2 * two},    // GPU r % 4: pp and embed {r, r+4} share one
        {"cuda", 0, 1, 0, 4 * two},    // one GPU: every group shares it
        {"cuda", 0, 2, 4, 1 * two},    // 2 machines of 2 GPUs: dp {r, r+2} shares one
        {"cuda", 1, 0, 0, 4 * two},    // --tensor-path staged on GPUs of their own
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        zt_plan_spec s = tiny_spec(&k_layouts[7]), base;
        s.backend = zt_backend_caps_of(cases[c].backend);
        s.ranks_per_node = cases[c].ranks_per_node;
        base = s;
        s.stage_all = cases[c].stage_all;
        s.gpus_per_node = cases[c].gpus;
        zt_partition p;
        CHECK(zt_plan_partition(&s, &p) == ZT_OK);
        zt_plan_bytes *a = calloc(8, sizeof *a), *b = calloc(8, sizeof *b);
        CHECK(a && b && zt_plan_all(&s, &p, a) == ZT_OK && zt_plan_all(&base, &p, b) == ZT_OK);
        int dev = s.backend->device_memory;
        for (int r = 0; r < 8; r++) {
            if (a[r].staging != cases[c].want)
                fprintf(stderr, "case %zu rank %d: staging %.0f, want %.0f\n", c, r,
                        a[r].staging, cases[c].want);
            CHECK(a[r].staging == cases[c].want);
            double in_comm = dev ? 0.0 : a[r].staging;
            CHECK(a[r].bytes[ZT_MEM_COMM] - b[r].bytes[ZT_MEM_COMM] == in_comm);
            CHECK(a[r].peak - b[r].peak == a[r].staging);
            zt_plan_bytes alone;
            CHECK(zt_plan_rank(&s, &p, a[r].dp_rank, a[r].pp_rank, a[r].tp_rank, &alone) ==
                  ZT_OK);
            CHECK(same_plan(&alone, &a[r]));
        }
        printf("  %s%s, %d GPUs per machine, %d ranks per machine: %.0f MiB staging per rank\n",
               cases[c].backend, cases[c].stage_all ? " staged" : "", cases[c].gpus,
               cases[c].ranks_per_node, cases[c].want / 1048576);
        free(a);
        free(b);
        zt_partition_free(&p);
    }
    // one rank on a GPU: four groups of one, each a staged communicator that copies nothing
    // but holds its two small buffers
    zt_plan_spec s = tiny_spec(&k_layouts[0]);
    s.backend = zt_backend_caps_of("cuda");
    zt_partition p;
    CHECK(zt_plan_partition(&s, &p) == ZT_OK);
    zt_plan_bytes b;
    CHECK(zt_plan_rank(&s, &p, 0, 0, 0, &b) == ZT_OK);
    CHECK(b.staging == 4 * one);
    zt_partition_free(&p);
    return ZT_PASS;
}

// ---------------------------------------------------------------- the fit check on GPUs

// zt_plan_check_devices, pure: four ranks of a CUDA plan, the GPUs they share told by the
// device identities (as the grid gathers them), the free bytes as each rank read them.
ZT_TEST(planner_device_fit) {
    zt_plan_spec s = mid_spec();
    s.backend = zt_backend_caps_of("cuda");
    s.dp = 4;
    zt_partition p;
    CHECK(zt_plan_partition(&s, &p) == ZT_OK);
    zt_plan_bytes all[4];
    CHECK(zt_plan_all(&s, &p, all) == ZT_OK);
    zt_partition_free(&p);
    double d = zt_plan_device_bytes(&all[0]), held = (double)s.backend->fixed_workspace;
    for (int r = 0; r < 4; r++) {
        CHECK(zt_plan_device_bytes(&all[r]) == d); // zero 0: dp ranks alike
        // device + host parts = the peak (staging is outside bytes[] on a GPU)
        CHECK(fabs(zt_plan_device_bytes(&all[r]) + zt_plan_host_bytes(&all[r], 1) -
                   all[r].peak) < 0.5);
    }
    CHECK(held > 0 && d > held);
    int devices[4] = {0, 0, 1, 1}, bad = 7;
    const char *shared[4] = {"n/0", "n/0", "n/1", "n/1"};
    // each rank reads its GPU after every rank opened: both backends' buffers already used
    zt_device_memory mem[4];
    for (int r = 0; r < 4; r++) mem[r] = (zt_device_memory){2 * d - 2 * held, 80e9, held};
    // exactly fits: what the backends hold is counted once (in the plans), not twice
    CHECK(zt_plan_check_devices(all, 4, shared, devices, mem, &bad) == ZT_OK);
    CHECK_EQ_INT(bad, -1);
    // one byte short, read by the second rank of GPU 1: that GPU, its ranks and the fix
    mem[3].free -= 1;
    CHECK(zt_plan_check_devices(all, 4, shared, devices, mem, &bad) == ZT_ERR);
    const char *msg = zt_error_message();
    printf("  %s\n", msg);
    CHECK_EQ_INT(bad, 2);
    CHECK(strstr(msg, "the 2 ranks on GPU 1 (n/1: ranks 2, 3)"));
    CHECK(strstr(msg, "--micro-batch") && strstr(msg, "--zero") && strstr(msg, "--pp") &&
          strstr(msg, "--tp"));
    char need[32];
    CHECK(strstr(msg, zt_plan_format_bytes(2 * d, need, sizeof need)));
    // the same free bytes on a GPU per rank (the planner's --gpus-per-node default) fit
    // easily: the sharing comes from the identities, not from a guess
    const char *own[4] = {"n/0", "n/1", "n/2", "n/3"};
    int own_dev[4] = {0, 1, 2, 3};
    CHECK(zt_plan_check_devices(all, 4, own, own_dev, mem, &bad) == ZT_OK);
    // a GPU of its own, too small: the single-rank message names rank and GPU
    mem[2].free = d - held - 1;
    CHECK(zt_plan_check_devices(all, 4, own, own_dev, mem, &bad) == ZT_ERR);
    printf("  %s\n", zt_error_message());
    CHECK_EQ_INT(bad, 2);
    CHECK(strstr(zt_error_message(), "rank 2 needs") &&
          strstr(zt_error_message(), "GPU 2 (n/2)"));
    // two GPUs short, interleaved and named against their sort order: the lowest rank's
    const char *mixed[4] = {"z/0", "a/1", "z/0", "a/1"};
    int mixed_dev[4] = {0, 1, 0, 1};
    for (int r = 0; r < 4; r++) mem[r] = (zt_device_memory){2 * d - 2 * held - 1, 80e9, held};
    CHECK(zt_plan_check_devices(all, 4, mixed, mixed_dev, mem, &bad) == ZT_ERR);
    CHECK_EQ_INT(bad, 0);
    CHECK(strstr(zt_error_message(), "GPU 0 (z/0: ranks 0, 2)"));
    // ranks without a device (host memory) are not the GPU check's
    const char *none[4] = {"", "", "", ""};
    CHECK(zt_plan_check_devices(all, 4, none, own_dev, mem, &bad) == ZT_OK);
    // the host-side parts, per machine of two ranks
    double h = zt_plan_host_bytes(&all[0], 1) + zt_plan_host_bytes(&all[1], 1);
    CHECK(h > 0);
    CHECK(zt_plan_check_host_parts(all, 4, 2, 1, h, "the machine") == ZT_OK);
    CHECK(zt_plan_check_host_parts(all, 4, 2, 1, h - 1, "the machine") == ZT_ERR);
    printf("  %s\n", zt_error_message());
    CHECK(strstr(zt_error_message(), "ranks 0-1") && strstr(zt_error_message(), "the machine"));
    CHECK(zt_plan_check_host_parts(all, 4, 2, 1, 0, "nothing") == ZT_OK);
    return ZT_PASS;
}
