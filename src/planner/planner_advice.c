// The fits-check and its advice (planner.h): a run predicted not to fit is refused before
// anything is allocated, with the smallest changes that fit, each planned before it is
// offered.
#include "planner.h"

#include <limits.h>
#include <omp.h>
#include <string.h>

#include "gpt2.h"

// The advice does not plan layouts beyond this many ranks.
#define MAX_ADVICE_WORLD 65536

// A planned variant: the largest need (per rank or per machine) and the worst rank.
typedef struct {
    double need;
    int first_rank;       // the group with that need
    zt_plan_bytes worst;  // its largest rank
    int world;
    char partition[1024]; // zt_partition_format of the variant
} variant;

// Plans `s` (cache: NULL, or one valid for s's sizes). Fails when the variant cannot be
// built (a partition that does not fit its pp, ...).
static zt_status plan_variant(const zt_plan_spec *s, zt_plan_cache *cache, int sharing,
                              variant *v) {
    zt_plan_cache own;
    if (!cache) zt_plan_cache_init(&own, s);
    zt_partition p = {0};
    zt_status st = zt_plan_partition_cached(s, cache ? cache : &own, &p);
    zt_plan_bytes *all = NULL;
    v->world = s->dp * s->pp * s->tp;
    if (st == ZT_OK) {
        all = malloc((size_t)v->world * sizeof *all);
        ZT_ASSERT(all);
        st = zt_plan_all(s, &p, all);
    }
    if (st == ZT_OK) {
        v->need = zt_plan_max_need(s, all, sharing, &v->first_rank);
        int n = sharing < 1 ? 1 : sharing;
        v->worst = all[v->first_rank];
        for (int r = v->first_rank; r < v->first_rank + n && r < v->world; r++)
            if (all[r].peak > v->worst.peak) v->worst = all[r];
        zt_partition_format(&p, &s->shape, v->partition, sizeof v->partition);
    }
    free(all);
    zt_partition_free(&p);
    if (!cache) zt_plan_cache_free(&own);
    return st;
}

// The advice's search stops trying changes at this deadline (omp_get_wtime seconds; 0 =
// none): planning a deep model for every stage count and dp took minutes (issue 16), and a
// refusal must come at once. What was found by then is advised.
#define ADVICE_BUDGET_S 0.5
static double advice_deadline;

static int fits(const zt_plan_spec *s, zt_plan_cache *cache, double limit, int sharing,
                variant *v) {
    if (advice_deadline > 0 && omp_get_wtime() > advice_deadline) return 0;
    if ((double)s->dp * s->pp * s->tp > MAX_ADVICE_WORLD) return 0;
    return plan_variant(s, cache, sharing, v) == ZT_OK && v->need <= limit;
}

static void add_advice_noted(zt_plan_advice *adv, int *n, int max, const char *change,
                             const char *note, const variant *v) {
    if (*n >= max) return;
    snprintf(adv[*n].change, sizeof adv[*n].change, "%s", change);
    snprintf(adv[*n].note, sizeof adv[*n].note, "%s", note);
    adv[*n].need = v->need;
    adv[*n].world = v->world;
    (*n)++;
}
static void add_advice(zt_plan_advice *adv, int *n, int max, const char *change,
                       const variant *v) {
    add_advice_noted(adv, n, max, change, "", v);
}

// Each search changes one thing of `s`, in growing steps, and keeps the first step that
// fits. `prefix` ("" or an earlier change, for combinations) starts the text.
static void try_dp(const zt_plan_spec *s, double limit, int sharing, const char *prefix,
                   zt_plan_advice *adv, int *n, int max) {
    for (int d = s->zero ? 2 * s->dp : s->dp; (double)d * s->pp * s->tp <= MAX_ADVICE_WORLD;
         d *= 2) {
        zt_plan_spec t = *s;
        t.zero = 1;
        t.dp = d;
        variant v;
        if (!fits(&t, NULL, limit, sharing, &v)) continue;
        char c[160];
        if (d == s->dp) snprintf(c, sizeof c, "%s--zero 1", prefix);
        else snprintf(c, sizeof c, "%s--zero 1 --dp %d", prefix, d);
        add_advice(adv, n, max, c, &v);
        return;
    }
}

static void try_pp(const zt_plan_spec *s, double limit, int sharing, const char *prefix,
                   zt_plan_advice *adv, int *n, int max) {
    zt_plan_cache cache;
    zt_plan_cache_init(&cache, s);
    int named = strspn(s->partition, "0123456789:,") != strlen(s->partition);
    // every stage count up to 8, then steps of 1/4: each try plans a partition, so
    // trying every count of a deep model took minutes (issue 16); the advice stays within
    // 25% of the fewest stages that fit
    for (int p = s->pp + 1; p <= zt_unit_count(&s->shape); p += p < 8 ? 1 : p / 4) {
        if ((double)s->dp * p * s->tp > MAX_ADVICE_WORLD) break;
        // interleaved: pp must divide the micro-batches, and each chunk needs a unit
        if (s->virtual_stages > 1 &&
            (s->grad_accum % p || p * s->virtual_stages > zt_unit_count(&s->shape)))
            continue;
        zt_plan_spec t = *s;
        t.pp = p;
        variant v;
        char c[160];
        // the same partition method first (unit ranges fix pp: they cannot carry over)
        if (named && fits(&t, &cache, limit, sharing, &v)) {
            snprintf(c, sizeof c, "%s--pp %d", prefix, p);
            add_advice(adv, n, max, c, &v);
            break;
        }
        snprintf(t.partition, sizeof t.partition, "memory");
        if (!zt_partition_needs_costs(s->partition) && fits(&t, &cache, limit, sharing, &v)) {
            snprintf(c, sizeof c, "%s--pp %d --partition memory", prefix, p);
            add_advice(adv, n, max, c, &v);
            break;
        }
    }
    zt_plan_cache_free(&cache);
}

static void try_micro_batch(const zt_plan_spec *s, double limit, int sharing,
                            const char *prefix, zt_plan_advice *adv, int *n, int max) {
    // divisors of B, largest first: grad-accum grows by the same factor, so the global
    // batch stays the same
    for (int b = s->micro_batch - 1; b >= 1; b--) {
        if (s->micro_batch % b || (long long)s->grad_accum * (s->micro_batch / b) > INT_MAX)
            continue;
        zt_plan_spec t = *s;
        t.micro_batch = b;
        t.grad_accum = s->grad_accum * (s->micro_batch / b);
        variant v;
        if (!fits(&t, NULL, limit, sharing, &v)) continue;
        char c[160];
        snprintf(c, sizeof c, "%s--micro-batch %d --grad-accum %d", prefix, b, t.grad_accum);
        add_advice(adv, n, max, c, &v);
        return;
    }
}

// Extra compute of a full recomputation of r blocks on a stage of `blocks`, as a share of the
// stage's step: per token a block's forward costs 24C^2 + 4TC FLOPs in products (c_attn 6C^2,
// attention's two products 4TC, c_proj 2C^2, c_fc and the MLP's c_proj 8C^2 each), the step
// three forwards, and the recomputation re-runs all but the MLP's c_proj (16C^2 + 4TC).
static double recompute_share(const zt_plan_spec *s, int r, int blocks) {
    double C = s->shape.n_embd, T = s->seq;
    double forward = 24.0 * C * C + 4.0 * T * C, again = 16.0 * C * C + 4.0 * T * C;
    return blocks > 0 ? r * again / (3.0 * blocks * forward) : 0.0;
}

// The blocks of the variant's largest rank's stage.
static int worst_blocks(const zt_plan_spec *s, const variant *v) {
    int lo = v->worst.unit_first < 1 ? 1 : v->worst.unit_first;
    int hi = v->worst.unit_last > s->shape.n_layer + 1 ? s->shape.n_layer + 1 : v->worst.unit_last;
    return hi > lo ? hi - lo : 0;
}

// Selective recomputation, else full recomputation of the fewest blocks per stage that fit
// (a stage recomputes its first N: memory falls as N grows, so the smallest N is searched).
static void try_recompute(const zt_plan_spec *s, double limit, int sharing, const char *prefix,
                          zt_plan_advice *adv, int *n, int max) {
    if (s->recompute.mode == ZT_RECOMPUTE_FULL && s->recompute.layers == 0) return;
    zt_plan_spec t = *s;
    variant v;
    char c[160];
    if (s->recompute.mode == ZT_RECOMPUTE_NONE) {
        t.recompute = (zt_recompute){ZT_RECOMPUTE_SELECTIVE, 0};
        if (fits(&t, NULL, limit, sharing, &v)) {
            snprintf(c, sizeof c, "%s--recompute selective", prefix);
            add_advice_noted(adv, n, max, c, "LayerNorm and GELU outputs again: no extra products",
                             &v);
            return;
        }
    }
    t.recompute = (zt_recompute){ZT_RECOMPUTE_FULL, 0};
    if (!fits(&t, NULL, limit, sharing, &v)) return;
    int lo = 1, hi = worst_blocks(s, &v); // fits with every block recomputed
    variant best = v;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        t.recompute.layers = mid;
        if (fits(&t, NULL, limit, sharing, &v)) {
            hi = mid;
            best = v;
        } else {
            lo = mid + 1;
        }
    }
    int blocks = worst_blocks(s, &best);
    if (hi >= blocks) snprintf(c, sizeof c, "%s--recompute full", prefix);
    else snprintf(c, sizeof c, "%s--recompute full --recompute-layers %d", prefix, hi);
    char note[96];
    snprintf(note, sizeof note, "about %.0f%% more compute",
             100.0 * recompute_share(s, hi < blocks ? hi : blocks, blocks));
    add_advice_noted(adv, n, max, c, note, &best);
}

static void try_singles(const zt_plan_spec *s, double limit, int sharing, zt_plan_advice *adv,
                        int *n, int max) {
    variant v;
    try_dp(s, limit, sharing, "", adv, n, max);
    if (!s->is_8bit) {
        zt_plan_spec t = *s;
        t.is_8bit = 1;
        if (fits(&t, NULL, limit, sharing, &v)) add_advice(adv, n, max, "--optim adamw8bit", &v);
    }
    if (s->tp > 1 && !s->seq_parallel && ((size_t)s->micro_batch * s->seq) % (size_t)s->tp == 0) {
        zt_plan_spec t = *s; // 1/tp of the per-row activations (docs/design.md)
        t.seq_parallel = 1;
        if (fits(&t, NULL, limit, sharing, &v)) add_advice(adv, n, max, "--sequence-parallel", &v);
    }
    try_pp(s, limit, sharing, "", adv, n, max);
    try_micro_batch(s, limit, sharing, "", adv, n, max);
    try_recompute(s, limit, sharing, "", adv, n, max);
    if (s->schedule == ZT_SCHED_GPIPE) {
        zt_plan_spec t = *s;
        t.schedule = ZT_SCHED_1F1B;
        if (fits(&t, NULL, limit, sharing, &v)) add_advice(adv, n, max, "--schedule 1f1b", &v);
    }
    // the loss's logits chunk, halved until it fits
    long long BT = (long long)s->micro_batch * s->seq;
    int N = BT < INT_MAX ? (int)BT : INT_MAX;
    int chunk = s->loss_chunk > 0 ? (s->loss_chunk < N ? s->loss_chunk : N)
                                  : zt_gpt2_auto_loss_chunk(s->shape.padded_vocab / s->tp, N,
                                                            (size_t)s->param_bytes);
    for (int c = chunk / 2; c >= 1; c /= 2) {
        zt_plan_spec t = *s;
        t.loss_chunk = c;
        if (!fits(&t, NULL, limit, sharing, &v)) continue;
        char txt[160];
        snprintf(txt, sizeof txt, "--loss-chunk %d", c);
        add_advice(adv, n, max, txt, &v);
        break;
    }
}

static int advise(const zt_plan_spec *s, double limit, int sharing, zt_plan_advice *adv,
                  int max);

int zt_plan_advise(const zt_plan_spec *s, double limit, int sharing, zt_plan_advice *adv,
                   int max) {
    advice_deadline = omp_get_wtime() + ADVICE_BUDGET_S;
    int n = advise(s, limit, sharing, adv, max);
    advice_deadline = 0;
    return n;
}

static int advise(const zt_plan_spec *s, double limit, int sharing, zt_plan_advice *adv,
                  int max) {
    int n = 0;
    try_singles(s, limit, sharing, adv, &n, max);
    if (n > 0) return n;
    // no single change fits: the 8-bit optimizer (and 1F1B) with one more change
    zt_plan_spec t = *s;
    char prefix[64] = "";
    if (!t.is_8bit) {
        t.is_8bit = 1;
        strcat(prefix, "--optim adamw8bit ");
    }
    if (t.schedule == ZT_SCHED_GPIPE) {
        t.schedule = ZT_SCHED_1F1B;
        strcat(prefix, "--schedule 1f1b ");
    }
    if (!prefix[0]) return 0;
    try_dp(&t, limit, sharing, prefix, adv, &n, max);
    try_pp(&t, limit, sharing, prefix, adv, &n, max);
    try_micro_batch(&t, limit, sharing, prefix, adv, &n, max);
    try_recompute(&t, limit, sharing, prefix, adv, &n, max);
    return n;
}

// "parameters 1.00 GiB, gradients 1.00 GiB, ..." of one rank into buf, with its MPI windows
// and end-of-run buffers; device_only gives its device bytes alone (no comm_backend tables,
// windows or end-of-run buffers: host memory).
void zt_plan_format_categories(const zt_plan_bytes *b, int device_only, char *buf,
                               size_t size) {
    static const char *const words[ZT_MEM_NCAT] = {"parameters",  "gradients", "optimizer",
                                                   "activations", "workspace", "comm",
                                                   "logits"};
    size_t off = 0;
    char x[32];
    buf[0] = 0;
    for (int k = 0; k < ZT_MEM_NCAT && off < size; k++) {
        double v = b->bytes[k] - (device_only && k == ZT_MEM_COMM ? b->comm_backend : 0.0);
        off += (size_t)snprintf(buf + off, size - off, "%s%s %s", k ? ", " : "", words[k],
                                zt_plan_format_bytes(v, x, sizeof x));
    }
    if (device_only) return; // the rest is host memory
    if (b->comm_window > 0 && off < size)
        off += (size_t)snprintf(buf + off, size - off, ", MPI staging windows %s",
                                zt_plan_format_bytes(b->comm_window, x, sizeof x));
    if (b->end_transient > 0 && off < size)
        snprintf(buf + off, size - off, ", at the end of the run %s",
                 zt_plan_format_bytes(b->end_transient, x, sizeof x));
}

zt_status zt_plan_check_fits(const zt_plan_spec *s, double limit, int sharing,
                             const char *limit_what) {
    if (!(limit > 0)) return ZT_OK;
    int W = s->dp * s->pp * s->tp;
    if (sharing < 1) sharing = 1;
    if (sharing > W) sharing = W;
    variant v;
    ZT_TRY(plan_variant(s, NULL, sharing, &v));
    if (v.need <= limit) return ZT_OK;
    char msg[2048], cats[512], a[32], b[32], c[32];
    zt_plan_format_categories(&v.worst, 0, cats, sizeof cats);
    size_t off;
    if (sharing == 1)
        off = (size_t)snprintf(msg, sizeof msg,
                               "this run needs %s on rank %d (stage %d: %s) but %s allows %s "
                               "per rank",
                               zt_plan_format_bytes(v.need, a, sizeof a), v.worst.rank,
                               v.worst.pp_rank, cats, limit_what,
                               zt_plan_format_bytes(limit, b, sizeof b));
    else
        off = (size_t)snprintf(msg, sizeof msg,
                               "the %d ranks on one machine (ranks %d-%d) need %s together, "
                               "rank %d %s (stage %d: %s), but %s is %s",
                               sharing, v.first_rank, v.first_rank + sharing - 1,
                               zt_plan_format_bytes(v.need, a, sizeof a), v.worst.rank,
                               zt_plan_format_bytes(v.worst.peak, c, sizeof c),
                               v.worst.pp_rank, cats, limit_what,
                               zt_plan_format_bytes(limit, b, sizeof b));
    zt_plan_advice adv[8];
    int n = zt_plan_advise(s, limit, sharing, adv, 8);
    if (n == 0) {
        snprintf(msg + off, sizeof msg - off,
                 ". No change the planner tries fits (more dp with --zero 1, --optim "
                 "adamw8bit, more --pp, a smaller --micro-batch, --recompute, --loss-chunk): "
                 "use a smaller "
                 "model, a shorter --seq, or machines with more memory");
        return zt_errorf("%s", msg);
    }
    off += (size_t)snprintf(msg + off, sizeof msg - off, ". Changes that fit (each planned):");
    for (int i = 0; i < n && off < sizeof msg; i++) {
        char ranks[48] = "";
        if (adv[i].world != W) snprintf(ranks, sizeof ranks, "%d ranks, ", adv[i].world);
        off += (size_t)snprintf(msg + off, sizeof msg - off, "%s %s (%sneeds %s %s%s%s)",
                                i ? ";" : "", adv[i].change, ranks,
                                zt_plan_format_bytes(adv[i].need, a, sizeof a),
                                sharing == 1 ? "per rank" : "per machine",
                                adv[i].note[0] ? "; " : "", adv[i].note);
    }
    return zt_errorf("%s", msg);
}
