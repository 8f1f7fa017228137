// The step-time model (plan_time.h).
#include "plan_time.h"

#include <math.h>
#include <string.h>

#include "comm_record.h"
#include "grid.h"
#include "plan_cost.h"
#include "schedule.h"

// ---------------------------------------------------------------- collectives

typedef enum { RING_ALL_REDUCE, RING_HALF } ring_kind; // half: a reduce-scatter or all-gather

// A ring over n ranks moving `bytes` (the whole buffer): an all-reduce is a reduce-scatter
// and an all-gather, each n-1 steps of bytes/n (NCCL's ring; docs/design.md).
static double ring(ring_kind k, double bytes, int n, const zt_plan_link *l) {
    if (n <= 1 || bytes <= 0) return 0.0;
    double halves = k == RING_ALL_REDUCE ? 2.0 : 1.0;
    return halves * ((n - 1.0) / n * bytes / l->bw + (n - 1.0) * l->latency);
}

static const zt_plan_link *link_of(const zt_plan_device *d, int rpn, int lo, int hi) {
    return rpn <= 0 || lo / rpn == hi / rpn ? &d->intra : &d->inter;
}

// A pass's tp collectives, as the model issued them: the bytes once, every call's latency.
static double tp_time(const zt_comm_record *r, int tp, const zt_plan_link *l) {
    double t = 0.0;
    for (int k = 0; k < ZT_RECORD_KIND_COUNT; k++) {
        if (!r->calls[k] || tp <= 1) continue;
        ring_kind rk = k == ZT_RECORD_ALL_REDUCE ? RING_ALL_REDUCE : RING_HALF;
        double halves = rk == RING_ALL_REDUCE ? 2.0 : 1.0;
        t += ring(rk, r->bytes[k], tp, l) + (r->calls[k] - 1) * halves * (tp - 1.0) * l->latency;
    }
    return t;
}

// What n ranks in lockstep wait at a synchronization after a stretch of work t each, on a
// CPU whose time wanders (plan_device.h's jitter: each rank's stretch varies by
// jitter x sqrt(t)): the expected maximum of n such times less their mean, sigma x E[max of
// n standard normals] (1/sqrt(pi) for 2; sqrt(2 ln n) beyond, its large-n form). 0 on a
// device whose time does not wander (the GPUs of the table).
static double straggle(const zt_plan_device *d, int n, double t) {
    if (n <= 1 || d->jitter <= 0 || t <= 0) return 0.0;
    double z = n == 2 ? 1.0 / sqrt(M_PI) : sqrt(2.0 * log((double)n));
    return z * d->jitter * sqrt(t);
}

static long tp_calls(const zt_comm_record *r) {
    long n = 0;
    for (int k = 0; k < ZT_RECORD_KIND_COUNT; k++) n += r->calls[k];
    return n;
}

// A pass of `t` seconds cut by its c blocking tp collectives into c stretches: each waits
// for the slowest of the group, straggle(t / c), c times.
static double tp_straggle(const zt_plan_device *d, int tp, const zt_comm_record *r, double t) {
    long c = tp_calls(r);
    return c > 0 ? c * straggle(d, tp, t / c) : 0.0;
}

// ---------------------------------------------------------------- passes

// How much slower a CPU's kernels run when the ranks' threads outnumber its cores.
static double contention(const zt_plan_spec *s, const zt_plan_device *d) {
    if (!d->host || d->cores <= 0) return 1.0;
    double threads = (double)s->dp * s->pp * s->tp * (d->threads > 0 ? d->threads : 1);
    return fmax(1.0, threads / d->cores);
}

static double ops_time(const zt_record *r, const zt_plan_device *d, int dt) {
    double t = 0.0;
    for (int p = 0; p < ZT_PHASE_COUNT; p++) {
        int by_flops = p == ZT_PHASE_GEMM || p == ZT_PHASE_ATTENTION;
        double units = by_flops ? r->flops[p] : r->bytes[p];
        if (units > 0) t += units / d->rate[p][dt];
        t += r->calls[p] * d->op_latency[p];
    }
    return t;
}

static double model_flops_of(const zt_record *r) {
    return r->flops[ZT_PHASE_GEMM] + r->flops[ZT_PHASE_ATTENTION];
}

// One stage's priced passes.
typedef struct {
    double f, b, w;          // compute seconds of one micro-batch's passes
    double tf, tb, tw;       // their tp collectives
    double send_f, send_b;   // its transfers to the next / previous stage
    double numel;            // its flat buffer (elements)
    double flops;            // model flops of one micro-batch (no recomputation)
} stage_price;

// Virtual stage v (a stage; under interleaved chunk v / pp of rank v mod pp): its units'
// passes, their tp collectives and its transfers on the ring (rank r sends to r+1 mod pp
// and back; the first virtual stage receives nothing, the last sends nothing).
static zt_status price_stage(const zt_plan_spec *s, const zt_plan_device *d, int rpn,
                             const zt_partition *p, int v, int split, stage_price *o) {
    zt_plan_stage_work w;
    ZT_TRY(zt_plan_stage_work_of(s, p->first[v], p->first[v + 1], split, &w));
    int k = v % s->pp, n_virtual = zt_plan_partition_stages(s);
    int dt = s->param_bytes == 2;
    int r0 = zt_grid_rank(0, k, 0, s->dp, s->pp, s->tp);
    const zt_plan_link *tl = link_of(d, rpn, r0, r0 + s->tp - 1);
    memset(o, 0, sizeof *o);
    double slow = contention(s, d);
    o->f = slow * ops_time(&w.f.ops, d, dt);
    o->b = slow * ops_time(&w.b.ops, d, dt);
    o->w = slow * ops_time(&w.w.ops, d, dt);
    o->tf = tp_time(&w.f.tp, s->tp, tl) + tp_straggle(d, s->tp, &w.f.tp, o->f);
    o->tb = tp_time(&w.b.tp, s->tp, tl) + tp_straggle(d, s->tp, &w.b.tp, o->b);
    o->tw = tp_time(&w.w.tp, s->tp, tl) + tp_straggle(d, s->tp, &w.w.tp, o->w);
    if (s->pp > 1) {
        int next = zt_grid_rank(0, (k + 1) % s->pp, 0, s->dp, s->pp, s->tp);
        int prev = zt_grid_rank(0, (k + s->pp - 1) % s->pp, 0, s->dp, s->pp, s->tp);
        const zt_plan_link *nl = link_of(d, rpn, r0, next), *pl = link_of(d, rpn, prev, r0);
        // a transfer pairs two stages, each after one pass: the later one is waited for
        if (v + 1 < n_virtual)
            o->send_f = w.act_bytes / nl->bw + nl->latency + straggle(d, 2, o->f);
        if (v > 0) o->send_b = w.act_bytes / pl->bw + pl->latency + straggle(d, 2, o->b);
    }
    o->numel = (double)w.numel;
    // model flops: the same passes without recomputation
    if (s->recompute.mode != ZT_RECOMPUTE_NONE) {
        zt_plan_spec plain = *s;
        plain.recompute = (zt_recompute){ZT_RECOMPUTE_NONE, 0};
        ZT_TRY(zt_plan_stage_work_of(&plain, p->first[k], p->first[k + 1], split, &w));
    }
    o->flops = model_flops_of(&w.f.ops) + model_flops_of(&w.b.ops) + model_flops_of(&w.w.ops);
    return ZT_OK;
}

// ---------------------------------------------------------------- the pipeline

// The span of the step's passes (seconds) and rank 0's busy time, from the schedule's
// simulator with costs in ticks (a thousandth of the largest pass), one per virtual stage
// (sp: pp * V of them; V 1 but under interleaved).
static zt_status pipeline(const zt_plan_spec *s, const stage_price *sp, int overlap,
                          double *span, double *busy0) {
    int P = s->pp, m = s->grad_accum, NV = zt_plan_partition_stages(s), V = NV / P;
    ZT_ASSERT(P >= 1);
    size_t np = (size_t)NV;
    double big = 0.0;
    double *F = calloc(np * 3, sizeof *F), *B = F + NV, *W = F + 2 * NV;
    ZT_ASSERT(F);
    for (int k = 0; k < NV; k++) {
        F[k] = sp[k].f + sp[k].tf + sp[k].send_f;
        B[k] = sp[k].b + sp[k].tb + sp[k].send_b;
        W[k] = sp[k].w + sp[k].tw;
        big = fmax(big, fmax(F[k], fmax(B[k], W[k])));
    }
    if (P == 1) {
        *span = *busy0 = m * (F[0] + B[0] + W[0]);
        free(F);
        return ZT_OK;
    }
    double unit = big / 1000.0;
    zt_sched_costs *c = calloc(np, sizeof *c);
    zt_sim_stage *per = calloc((size_t)P, sizeof *per);
    ZT_ASSERT(c && per);
    int split = s->schedule == ZT_SCHED_ZB_H1;
    for (int k = 0; k < NV; k++) {
        c[k].f = (int)fmax(1.0, round(F[k] / unit));
        c[k].w = split ? (int)fmax(1.0, round(W[k] / unit)) : 1; // combined: b + w
        c[k].b = (int)fmax(1.0, round(B[k] / unit) - (split ? 0 : 1));
    }
    long ticks = 0;
    // the interleaved ring's sends are nonblocking whatever --overlap-comm says (pipe_ring.h)
    zt_sim_transport tr = overlap || V > 1 ? ZT_SIM_NONBLOCKING : ZT_SIM_RENDEZVOUS;
    zt_status st = zt_schedule_simulate_virtual(s->schedule, P, m, V, c, tr, &ticks, per);
    *span = ticks * unit;
    *busy0 = per[0].busy * unit;
    free(c);
    free(per);
    free(F);
    return st;
}

// ---------------------------------------------------------------- after the passes

// A stage's work after its last backward: the dp reduction and gather (their exposed
// part, and the wait for the group's slowest rank after `span`), the tied embedding's
// all-reduce, the optimizer (its recorded step: opt).
static void after_passes(const zt_plan_spec *s, const zt_plan_device *d, int rpn, int k,
                         const stage_price *sp, const zt_record *opt, double span,
                         int overlap, double *dp_s, double *embed_s, double *opt_s) {
    int dt = s->param_bytes == 2;
    int lo = zt_grid_rank(0, k, 0, s->dp, s->pp, s->tp);
    int hi = zt_grid_rank(s->dp - 1, k, 0, s->dp, s->pp, s->tp);
    const zt_plan_link *l = link_of(d, rpn, lo, hi);
    double G = sp->numel * s->param_bytes;
    double reduce = s->zero ? ring(RING_HALF, G, s->dp, l) : ring(RING_ALL_REDUCE, G, s->dp, l);
    double gather = s->zero ? ring(RING_HALF, G, s->dp, l) : 0.0;
    if (overlap) { // the reduction beside the last backward, the gather beside the forward
        reduce = fmax(0.0, reduce - sp->b);
        gather = fmax(0.0, gather - sp->f);
    }
    // the dp group meets once after its passes: it waits for its slowest rank
    *dp_s = reduce + gather + straggle(d, s->dp, span);
    *embed_s = 0.0;
    if (s->pp > 1 && (k == 0 || k == s->pp - 1)) {
        double wte = (double)s->shape.padded_vocab / s->tp * s->shape.n_embd * s->param_bytes;
        int first = zt_grid_rank(0, 0, 0, s->dp, s->pp, s->tp);
        int last = zt_grid_rank(0, s->pp - 1, 0, s->dp, s->pp, s->tp);
        *embed_s = ring(RING_ALL_REDUCE, wte, 2, link_of(d, rpn, first, last));
    }
    *opt_s = contention(s, d) * ops_time(opt, d, dt);
}

// Rank k's optimizer step on dp rank 0's shard (plan_cost.h), recorded.
static zt_status optimizer_of(const zt_plan_spec *s, const zt_partition *p, int k,
                              zt_record *out) {
    zt_layout lay;
    ZT_TRY(zt_plan_rank_layout(s, p, k, 0, &lay));
    size_t lo = 0, hi = 0;
    zt_plan_shard(s, lay.numel, 0, &lo, &hi);
    zt_status st = zt_plan_optimizer_work(s, &lay, lo, hi, k == 0, out);
    zt_layout_free(&lay);
    return st;
}

zt_status zt_plan_time_of(const zt_plan_spec *s, const zt_partition *p, const zt_plan_device *d,
                          int ranks_per_node, int overlap, zt_plan_time *out) {
    memset(out, 0, sizeof *out);
    int P = s->pp, m = s->grad_accum, split = s->schedule == ZT_SCHED_ZB_H1;
    int NV = zt_plan_partition_stages(s); // virtual stages: pp * V
    stage_price *sp = calloc((size_t)(NV + P), sizeof *sp), *rank = sp + NV;
    ZT_ASSERT(sp);
    zt_status st = ZT_OK;
    // (stages alike are recorded once: zt_plan_stage_work_of keeps its answers)
    for (int v = 0; v < NV && st == ZT_OK; v++)
        st = price_stage(s, d, ranks_per_node, p, v, split, &sp[v]);
    for (int v = 0; v < NV && st == ZT_OK; v++) { // a rank's chunks, summed
        stage_price *r = &rank[v % P];
        r->f += sp[v].f, r->b += sp[v].b, r->w += sp[v].w;
        r->tf += sp[v].tf, r->tb += sp[v].tb, r->tw += sp[v].tw;
        r->send_f += sp[v].send_f, r->send_b += sp[v].send_b;
        r->numel += sp[v].numel, r->flops += sp[v].flops;
    }
    double span = 0.0, busy0 = 0.0, post_max = 0.0, dp0 = 0, emb0 = 0, opt0 = 0;
    zt_record *work = calloc((size_t)P, sizeof *work); // each rank's optimizer step
    ZT_ASSERT(work);
    for (int k = 0; k < P && st == ZT_OK; k++) st = optimizer_of(s, p, k, &work[k]);
    if (st == ZT_OK) st = pipeline(s, sp, overlap, &span, &busy0);
    if (st == ZT_OK) {
        for (int k = 0; k < P; k++) {
            double dps, emb, opt;
            after_passes(s, d, ranks_per_node, k, &rank[k], &work[k], span, overlap, &dps, &emb,
                         &opt);
            post_max = fmax(post_max, dps + emb + opt);
            if (k == 0) dp0 = dps, emb0 = emb, opt0 = opt;
            out->model_flops += rank[k].flops * s->tp * m * s->dp;
        }
        out->step_s = span + post_max;
        out->compute_s = m * (rank[0].f + rank[0].b + rank[0].w);
        out->tp_s = m * (rank[0].tf + rank[0].tb + rank[0].tw);
        out->pp_s = m * (rank[0].send_f + rank[0].send_b);
        out->dp_s = dp0;
        out->embed_s = emb0;
        out->optimizer_s = opt0;
        out->bubble_s = fmax(0.0, out->step_s - out->compute_s - out->tp_s - out->pp_s - dp0 -
                                      emb0 - opt0);
        double tokens = (double)s->micro_batch * s->seq * m * s->dp;
        out->tokens_per_s = tokens / out->step_s;
        int world = s->dp * s->pp * s->tp;
        out->mfu = out->model_flops / (out->step_s * world * d->peak_flops[s->param_bytes == 2]);
    }
    free(work);
    free(sp);
    return st;
}
