// The search over layouts (plan_search.h).
#include "plan_search.h"

#include <math.h>
#include <string.h>

#include "gpt2.h"
#include "layout.h"
#include "partition.h"
#include "schedule.h"

// " --virtual-stages V" under interleaved, else "".
static const char *virtual_flag(const zt_plan_spec *s) {
    static const char *const v[] = {"", "", " --virtual-stages 2", " --virtual-stages 3",
                                     " --virtual-stages 4"};
    ZT_ASSERT(s->virtual_stages <= ZT_PLAN_MAX_VIRTUAL);
    return s->schedule == ZT_SCHED_INTERLEAVED && s->virtual_stages > 1 ? v[s->virtual_stages]
                                                                         : "";
}

void zt_plan_layout_flags(const zt_plan_spec *s, int overlap, char *buf, size_t size) {
    snprintf(buf, size,
             "--dp %d --pp %d --tp %d --zero %d --optim %s --param-dtype %s --recompute %s%s "
             "--schedule %s%s --partition %s --micro-batch %d --grad-accum %d --overlap-comm %s",
             s->dp, s->pp, s->tp, s->zero, s->is_8bit ? "adamw8bit" : "adamw",
             s->param_bytes == 2 ? "bf16" : "fp32", zt_recompute_mode_name(s->recompute.mode),
             s->seq_parallel ? " --sequence-parallel" : "", zt_schedule_kind_name(s->schedule),
             virtual_flag(s), s->partition, s->micro_batch, s->grad_accum, overlap ? "on" : "off");
}

// ---------------------------------------------------------------- memory

// The largest need of a group of `sharing` ranks, from each stage's first rank (every rank
// of a stage plans alike but for a few 8-bit blocks and rank 0's end-of-run buffers; a
// middle stage of as many blocks as an earlier one, alike but for its communicators' MPI
// windows, takes that one's figure). The answers shown are planned exactly (exact_need).
static zt_status stage_need(const zt_plan_spec *s, const zt_partition *p, int sharing,
                            double *need, double *peak) {
    *need = *peak = 0.0;
    double sum = 0.0, *peaks = calloc((size_t)s->pp, sizeof *peaks);
    ZT_ASSERT(peaks);
    zt_status st = ZT_OK;
    for (int k = 0; k < s->pp && st == ZT_OK; k++) {
        int blocks = p->first[k + 1] - p->first[k], same = 0;
        // (under interleaved a rank holds several chunks: every stage is planned)
        for (int j = 1; j < k && k < s->pp - 1 && !same && s->virtual_stages <= 1; j++)
            if (p->first[j + 1] - p->first[j] == blocks) same = j;
        zt_plan_bytes b;
        if (same) peaks[k] = peaks[same];
        else if ((st = zt_plan_rank(s, p, 0, k, 0, &b)) == ZT_OK) peaks[k] = b.peak;
        *peak = fmax(*peak, peaks[k]);
        sum += peaks[k] * s->dp * s->tp;
    }
    free(peaks);
    ZT_TRY(st);
    *need = sharing > 1 ? sum : *peak;
    return ZT_OK;
}

// Every rank's plan: the exact figures `zerotrain memory` prints.
static zt_status exact_need(const zt_plan_spec *s, int sharing, double *need, double *peak) {
    zt_partition p;
    ZT_TRY(zt_plan_partition(s, &p));
    size_t W = (size_t)s->dp * s->pp * s->tp;
    zt_plan_bytes *all = calloc(W, sizeof *all);
    ZT_ASSERT(all);
    zt_status st = zt_plan_all(s, &p, all);
    if (st == ZT_OK) {
        *need = zt_plan_max_need(s, all, sharing, NULL);
        *peak = zt_plan_max_need(s, all, 1, NULL);
    }
    free(all);
    zt_partition_free(&p);
    return st;
}

// ---------------------------------------------------------------- the rungs

// The memory savings, cheapest first: a layout takes the first rung that fits.
typedef struct {
    int zero, is_8bit;
    zt_recompute_mode recompute;
} rung;

static const rung k_rungs[] = {
    {0, 0, ZT_RECOMPUTE_NONE},      {1, 0, ZT_RECOMPUTE_NONE},
    {1, 1, ZT_RECOMPUTE_NONE},      {1, 0, ZT_RECOMPUTE_SELECTIVE},
    {1, 1, ZT_RECOMPUTE_SELECTIVE}, {1, 0, ZT_RECOMPUTE_FULL},
    {1, 1, ZT_RECOMPUTE_FULL},
};
#define N_RUNGS ((int)(sizeof k_rungs / sizeof *k_rungs))

// Whether rung r applies to s under the fixed dimensions (zero needs dp > 1).
static int rung_allowed(const zt_plan_question *q, const zt_plan_spec *s, const rung *r) {
    const zt_plan_fixed *f = &q->fixed;
    int zero = s->dp > 1 ? r->zero : 0;
    if (s->dp == 1 && r->zero) return 0; // the same as the rung with zero 0
    if (f->zero && zero != q->base.zero) return 0;
    if (f->optim && r->is_8bit != q->base.is_8bit) return 0;
    if (f->recompute && r->recompute != q->base.recompute.mode) return 0;
    return 1;
}

// ---------------------------------------------------------------- the search

// The `memory` partition's stage costs, kept across the layouts that share the sizes they
// depend on (zt_plan_cache: the micro-batch, dp and tp here; the rung, the dtype, sequence
// parallelism and whether the schedule keeps W slots by index).
typedef struct {
    zt_plan_cache c;
    int valid, micro_batch, dp, tp;
} part_cache;

typedef struct {
    part_cache pc[N_RUNGS][2][2][2];
    zt_plan_answer *a;
    int n, cap;
    double smallest;        // the least need seen (any rung; a bound where it did not fit)
    zt_plan_spec smallest_spec;
    int any_layout;         // some layout divided the global batch
    int no_interleaved;     // an interleaved layout was left out: its pipeline is NCCL's
} results;

static void push(results *r, const zt_plan_answer *a) {
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->a = realloc(r->a, (size_t)r->cap * sizeof *r->a);
        ZT_ASSERT(r->a);
    }
    r->a[r->n++] = *a;
}

// The stage-cost cache of s's sizes (created or replaced as needed).
static zt_plan_cache *cache_of(results *r, const zt_plan_spec *s, int rung) {
    part_cache *pc = &r->pc[rung][s->param_bytes == 2][s->seq_parallel]
                          [s->schedule == ZT_SCHED_ZB_H1];
    if (!pc->valid || pc->micro_batch != s->micro_batch || pc->dp != s->dp || pc->tp != s->tp) {
        if (pc->valid) zt_plan_cache_free(&pc->c);
        zt_plan_cache_init(&pc->c, s);
        pc->valid = 1, pc->micro_batch = s->micro_batch, pc->dp = s->dp, pc->tp = s->tp;
    }
    return &pc->c;
}

// A lower bound of stage_need from the cached stage costs (each rank's tracked bytes without
// its communicators' tables, MPI windows, staging and end-of-run buffers): a layout above the
// limit by it is refused without planning its ranks.
static double need_bound(const zt_plan_spec *s, const zt_partition *p, zt_plan_cache *c,
                         int sharing) {
    double most = 0.0, sum = 0.0;
    if (s->virtual_stages > 1) return 0.0; // a rank's chunks share one buffer: planned exactly
    for (int k = 0; k < s->pp; k++) {
        double b = zt_plan_stage_cost_cached(s, c, p->first[k], p->first[k + 1],
                                             zt_plan_stage_slots(s, k));
        most = fmax(most, b);
        sum += b * s->dp * s->tp;
    }
    return sharing > 1 ? sum : most;
}

static void results_free_caches(results *r) {
    part_cache *pc = &r->pc[0][0][0][0];
    for (size_t i = 0; i < sizeof r->pc / sizeof *pc; i++)
        if (pc[i].valid) zt_plan_cache_free(&pc[i].c);
}

// One layout without its memory rung, partition and overlap: the first rung that fits
// (uniform, then the `memory` partition), timed with and without --overlap-comm (unless
// fixed).
static void try_layout(const zt_plan_question *q, const zt_plan_device *d, zt_plan_spec s,
                       results *r) {
    static const char *const parts[] = {"uniform", "memory"};
    r->any_layout = 1;
    for (int i = 0; i < N_RUNGS; i++) {
        if (!rung_allowed(q, &s, &k_rungs[i])) continue;
        s.zero = k_rungs[i].zero;
        s.is_8bit = k_rungs[i].is_8bit;
        s.recompute = (zt_recompute){k_rungs[i].recompute, 0};
        zt_plan_cache *c = cache_of(r, &s, i);
        for (int pa = 0; pa < 2; pa++) { // uniform, then the memory partition where it fits
            if (q->fixed.partition ? pa > 0 : s.pp == 1 && pa > 0) break;
            if (!q->fixed.partition) snprintf(s.partition, sizeof s.partition, "%s", parts[pa]);
            // more stages than units: no layout (a refused layout's message is replaced
            // by the next one's); under interleaved the `memory` partition may still give
            // the embedding and the head chunks of their own
            zt_partition p;
            if (zt_plan_partition_cached(&s, c, &p) != ZT_OK) {
                if (s.virtual_stages > 1) continue;
                return;
            }
            double need = need_bound(&s, &p, c, q->sharing), peak = 0;
            zt_status st = ZT_OK;
            if (need <= q->limit) st = stage_need(&s, &p, q->sharing, &need, &peak);
            if (st == ZT_OK && need < r->smallest) {
                r->smallest = need;
                r->smallest_spec = s;
            }
            if (st == ZT_OK && need <= q->limit) {
                for (int ov = 0; ov <= 1; ov++) {
                    if (q->fixed.overlap && ov != q->overlap) continue;
                    zt_plan_answer a = {.spec = s, .overlap = ov, .need = need, .rank_peak = peak};
                    if (zt_plan_time_of(&s, &p, d, q->ranks_per_node, ov, &a.time) == ZT_OK)
                        push(r, &a);
                }
                zt_partition_free(&p);
                return;
            }
            zt_partition_free(&p);
        }
    }
}

static int cmp_speed(const void *x, const void *y) {
    const zt_plan_answer *a = x, *b = y;
    return a->time.tokens_per_s < b->time.tokens_per_s
               ? 1
               : a->time.tokens_per_s > b->time.tokens_per_s ? -1 : 0;
}

// The tp degrees the shape splits (zt_layout_init accepts) within a machine.
static int tp_ok(const zt_plan_question *q, int tp) {
    if (q->ranks_per_node > 0 && (tp > q->ranks_per_node || q->ranks_per_node % tp)) return 0;
    zt_layout lay;
    if (zt_layout_init(&lay, &q->base.shape, 0, zt_unit_count(&q->base.shape), tp, 0,
                       ZT_ALIGN_ELEMS) != ZT_OK)
        return 0;
    zt_layout_free(&lay);
    return 1;
}

// Interleaved with s's V: --grad-accum a multiple of pp (Megatron's order), every chunk a
// unit at least, and a run that can execute it (zt_plan_interleaved_runs).
static int interleaved_ok(const zt_plan_spec *s, results *r) {
    if (s->pp < 2 || s->grad_accum % s->pp || s->pp * s->virtual_stages > zt_unit_count(&s->shape))
        return 0;
    if (zt_plan_interleaved_runs(s)) return 1;
    r->no_interleaved = 1;
    return 0;
}

// The precisions of one layout: the parameter dtype and sequence parallelism.
static void try_precisions(const zt_plan_question *q, const zt_plan_device *d, zt_plan_spec s,
                           long tokens, results *r) {
    const zt_plan_fixed *f = &q->fixed;
    for (int dt = 4; dt >= 2; dt -= 2) {
        if ((f->dtype && dt != q->base.param_bytes) || (dt == 2 && !s.backend->bf16)) continue;
        s.param_bytes = dt;
        for (int sp = 0; sp <= 1; sp++) {
            if (f->seq_parallel ? sp != q->base.seq_parallel : sp && s.tp == 1) continue;
            if (sp && s.tp > 1 && tokens % s.tp) continue;
            s.seq_parallel = sp;
            try_layout(q, d, s, r);
        }
    }
}

// The inner dimensions of one grid: micro-batch, schedule (and V), dtype, sp.
static void try_grid(const zt_plan_question *q, const zt_plan_device *d, int dp, int pp, int tp,
                     results *r) {
    const zt_plan_fixed *f = &q->fixed;
    if (q->global_batch % dp) return;
    long per_dp = q->global_batch / dp;
    static const zt_schedule_kind kinds[] = ZT_PLAN_SCHEDULES;
    zt_plan_spec s = q->base;
    s.dp = dp, s.pp = pp, s.tp = tp;
    for (long mb = 1; mb <= per_dp && mb <= 64; mb++) {
        if (per_dp % mb || (f->micro_batch && mb != q->base.micro_batch)) continue;
        long tokens = mb * (long)s.seq;
        if (s.backend->max_tokens && tokens > s.backend->max_tokens) continue;
        s.micro_batch = (int)mb;
        s.grad_accum = (int)(per_dp / mb);
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            if (f->schedule ? kinds[k] != q->base.schedule : pp == 1 && k > 0) continue;
            s.schedule = kinds[k];
            int interleaved = kinds[k] == ZT_SCHED_INTERLEAVED;
            for (int V = interleaved ? 2 : 1; V <= (interleaved ? ZT_PLAN_MAX_VIRTUAL : 1); V++) {
                if (f->virtual_stages && interleaved && V != q->base.virtual_stages) continue;
                s.virtual_stages = V;
                if (interleaved && !interleaved_ok(&s, r)) continue;
                try_precisions(q, d, s, tokens, r);
            }
        }
    }
}

// The least memory grid (dp, pp, tp) can need: every choice at its smallest (each one
// lowers every rank's bytes or keeps them): micro-batch 1, bf16 where the backend has it,
// sequence parallelism under tp, 1F1B (the fewest slots), the last memory rung the fixed
// flags allow, the `memory` partition (it minimizes the largest stage); the fixed
// dimensions as given. Planned on every rank; INFINITY where the grid is no layout.
static double floor_need(const zt_plan_question *q, int dp, int pp, int tp, zt_plan_spec *out) {
    const zt_plan_fixed *f = &q->fixed;
    zt_plan_spec s = q->base;
    if (q->global_batch % dp) return INFINITY;
    long per_dp = q->global_batch / dp;
    s.dp = dp, s.pp = pp, s.tp = tp;
    s.micro_batch = f->micro_batch ? q->base.micro_batch : 1;
    if (per_dp % s.micro_batch) return INFINITY;
    s.grad_accum = (int)(per_dp / s.micro_batch);
    if (!f->dtype && s.backend->bf16) s.param_bytes = 2;
    if (!f->seq_parallel) s.seq_parallel = tp > 1 && ((long)s.micro_batch * s.seq) % tp == 0;
    if (!f->schedule) s.schedule = ZT_SCHED_1F1B, s.virtual_stages = 1;
    if (!f->partition)
        snprintf(s.partition, sizeof s.partition, "%s", pp > 1 ? "memory" : "uniform");
    int last = -1;
    for (int i = 0; i < N_RUNGS; i++)
        if (rung_allowed(q, &s, &k_rungs[i])) last = i;
    if (last < 0) return INFINITY;
    s.zero = dp > 1 ? k_rungs[last].zero : 0;
    s.is_8bit = k_rungs[last].is_8bit;
    s.recompute = (zt_recompute){k_rungs[last].recompute, 0};
    double need = INFINITY, peak = 0;
    if (exact_need(&s, q->sharing, &need, &peak) != ZT_OK) return INFINITY;
    *out = s;
    return need;
}

// ZT_ERR naming the least need of any layout where even that exceeds the limit: the search
// need not weigh a layout.
static zt_status check_floor(const zt_plan_question *q) {
    double least = INFINITY;
    zt_plan_spec best = q->base;
    for (int tp = 1; tp <= q->world; tp++) {
        if (q->world % tp || (q->fixed.tp && tp != q->base.tp) || !tp_ok(q, tp)) continue;
        for (int pp = 1; pp <= q->world / tp; pp++) {
            int dp = q->world / tp / pp;
            if ((q->world / tp) % pp || (q->fixed.pp && pp != q->base.pp) ||
                (q->fixed.dp && dp != q->base.dp))
                continue;
            zt_plan_spec s;
            double need = floor_need(q, dp, pp, tp, &s);
            if (need < least) least = need, best = s;
        }
    }
    if (!isfinite(least) || least <= q->limit) return ZT_OK;
    char need[32], lim[32], flags[512];
    zt_plan_layout_flags(&best, 0, flags, sizeof flags);
    return zt_errorf("no layout of %d ranks fits %s %s: the smallest need of any layout is %s "
                     "(%s): give more memory per %s, more ranks (--world) or a smaller model, "
                     "--seq or --global-batch",
                     q->world, zt_plan_format_bytes(q->limit, lim, sizeof lim),
                     q->sharing > 1 ? "per machine" : "per rank",
                     zt_plan_format_bytes(least, need, sizeof need), flags,
                     q->sharing > 1 ? "machine" : "rank");
}

static const char *gib(double b, char *buf, size_t n) { return zt_plan_format_bytes(b, buf, n); }

zt_status zt_plan_search(const zt_plan_question *q, const zt_plan_device *d, int exact,
                         zt_plan_answer **out, int *n) {
    ZT_TRY(check_floor(q));
    results r = {.smallest = INFINITY};
    const zt_plan_fixed *f = &q->fixed;
    for (int tp = 1; tp <= q->world; tp++) {
        if (q->world % tp || (f->tp && tp != q->base.tp) || !tp_ok(q, tp)) continue;
        for (int pp = 1; pp <= q->world / tp; pp++) {
            if ((q->world / tp) % pp || (f->pp && pp != q->base.pp)) continue;
            int dp = q->world / tp / pp;
            if (f->dp && dp != q->base.dp) continue;
            try_grid(q, d, dp, pp, tp, &r);
        }
    }
    results_free_caches(&r);
    if (!r.any_layout && r.no_interleaved) {
        free(r.a);
        return zt_errorf("--schedule interleaved cannot run here: every layout's pipeline "
                         "goes through NCCL between GPUs of their own, whose point-to-point "
                         "holds its stream until matched (docs/design.md, \"Pipeline\"): "
                         "leave --schedule out, or run interleaved on the CPU or with ranks "
                         "sharing a GPU");
    }
    if (!r.any_layout) {
        free(r.a);
        return zt_errorf("no layout of %d ranks divides the global batch of %ld sequences "
                         "(with the flags given): give a --global-batch that a dp degree "
                         "divides, or fewer fixed flags",
                         q->world, q->global_batch);
    }
    if (r.n == 0) {
        char need[32], lim[32], flags[512];
        double peak = 0.0; // the smallest, planned on every rank (what `memory` prints)
        if (isfinite(r.smallest))
            ZT_TRY(exact_need(&r.smallest_spec, q->sharing, &r.smallest, &peak));
        zt_plan_layout_flags(&r.smallest_spec, 0, flags, sizeof flags);
        free(r.a);
        return zt_errorf("no layout of %d ranks fits %s %s: the smallest need of any layout "
                         "is %s (%s): give more memory per %s, more ranks (--world) or a "
                         "smaller model, --seq or --global-batch",
                         q->world, gib(q->limit, lim, sizeof lim),
                         q->sharing > 1 ? "per machine" : "per rank",
                         gib(r.smallest, need, sizeof need), flags,
                         q->sharing > 1 ? "machine" : "rank");
    }
    qsort(r.a, (size_t)r.n, sizeof *r.a, cmp_speed);
    // the shown answers' bytes from every rank's plan; one that then does not fit goes
    for (int i = 0; i < r.n && i < exact;) {
        zt_plan_answer *a = &r.a[i];
        if (exact_need(&a->spec, q->sharing, &a->need, &a->rank_peak) == ZT_OK &&
            a->need <= q->limit) {
            i++;
            continue;
        }
        memmove(a, a + 1, (size_t)(r.n - i - 1) * sizeof *a);
        r.n--;
    }
    *out = r.a;
    *n = r.n;
    return ZT_OK;
}
