// The step's pipeline figures (docs/design.md, "Pipeline"): each stage's measured idle time
// and the schedule simulator's prediction from the step's measured action costs, for the
// log; and the --trace timeline of the run's last step (measured and simulated).
#include "trainer.h"

#include <math.h>
#include <string.h>

// What each rank measured in the step, as the gather carries it.
enum { FIG_STAGE, FIG_IDLE, FIG_FWD, FIG_BWD, FIG_WGT, FIG_N };

static int at_least_1(long us) { return us > 1 ? (int)us : 1; }

// Each stage's costs in microseconds (>= 1): the mean forward, backward (or input-gradient
// pass) and weight-gradient pass of its ranks. Measured split (ZB-H1): b and w as measured.
// Measured whole: a combined backward costs b + w in the simulator, so b = backward - 1,
// w = 1; or, with `split`, the backward halved (a matrix product's two halves cost the same
// flops) for simulating a split schedule from a run that did not split.
static void stage_costs(const double *fig, int world, int pp, int split, zt_sched_costs *c) {
    for (int s = 0; s < pp; s++) {
        double f = 0.0, b = 0.0, w = 0.0;
        int n = 0;
        for (int r = 0; r < world; r++)
            if ((int)fig[r * FIG_N + FIG_STAGE] == s) {
                f += fig[r * FIG_N + FIG_FWD];
                b += fig[r * FIG_N + FIG_BWD];
                w += fig[r * FIG_N + FIG_WGT];
                n++;
            }
        long fu = lround(1e6 * f / n), bu = lround(1e6 * b / n), wu = lround(1e6 * w / n);
        c[s].f = at_least_1(fu);
        if (wu > 0) {
            c[s].b = at_least_1(bu);
            c[s].w = at_least_1(wu);
        } else {
            c[s].b = at_least_1(split ? bu / 2 : bu - 1);
            c[s].w = at_least_1(split ? bu - bu / 2 : 1);
        }
    }
}

// Appends `"key":[v0,v1,...]` (ms) to json.
static void put_array(char *json, size_t cap, const char *key, const double *v, int n) {
    size_t len = strlen(json);
    len += (size_t)snprintf(json + len, cap - len, ",\"%s\":[", key);
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(json + len, cap - len, "%s%.3f", i ? "," : "", v[i]);
    if (len < cap) snprintf(json + len, cap - len, "]");
}

static zt_sim_transport transport_of(const zt_trainer *t) {
    return t->chunks || t->pc.async ? ZT_SIM_NONBLOCKING : ZT_SIM_RENDEZVOUS; // ring: always
}

// Simulates `kind` on every stage with costs c (µs) and writes its compute actions to the
// trace as `"source":name` records (ms). Nothing on a simulation error (printed).
static void trace_simulated(zt_trainer *t, zt_schedule_kind kind, const zt_sched_costs *c,
                            const char *name) {
    int pp = t->grid.pp, m = t->cfg->grad_accum, total = 0;
    zt_schedule *s = calloc((size_t)pp, sizeof *s);
    ZT_ASSERT(s);
    zt_status rc = ZT_OK;
    for (int i = 0; i < pp && rc == ZT_OK; i++) {
        rc = zt_schedule_build_chunks(&s[i], kind, pp, i, m,
                                      kind == t->sched.kind ? t->n_chunks : 1);
        total += s[i].n_actions;
    }
    zt_sim_event *ev = calloc((size_t)total + 1, sizeof *ev);
    ZT_ASSERT(ev);
    long ticks = 0;
    int n = 0;
    if (rc == ZT_OK)
        rc = zt_schedule_simulate_lists(s, pp, c, transport_of(t), &ticks, NULL, ev, &n);
    if (rc != ZT_OK) fprintf(stderr, "trace: %s\n", zt_error_message());
    for (int e = 0; rc == ZT_OK && e < n; e++) {
        const zt_sched_action *a = &s[ev[e].stage].actions[ev[e].action];
        fprintf(t->trace,
                "{\"source\":\"%s\",\"stage\":%d,\"op\":\"%s\",\"micro\":%d,\"chunk\":%d,"
                "\"start_ms\":%.3f,"
                "\"end_ms\":%.3f}\n",
                name, ev[e].stage, zt_sched_op_name(a->op), a->micro, a->chunk,
                ev[e].start / 1000.0, ev[e].end / 1000.0);
    }
    free(ev);
    for (int i = 0; i < pp; i++) zt_schedule_free(&s[i]);
    free(s);
}

// The last step's actions of every rank into rank 0's --trace file, times from the earliest
// schedule start of any rank (one machine's monotonic clock), then the simulator's timelines
// from the measured costs: this schedule's, and ZB-H1's (each backward split evenly where the
// run did not split it).
static void write_trace(zt_trainer *t, const double *fig) {
    const zt_grid *g = &t->grid;
    // at most 7 actions per micro-batch and chunk (schedule.c)
    int m = t->cfg->grad_accum, cap = 7 * m * t->n_chunks;
    int K = 4 + 2 * cap;                      // pp, dp and tp rank, count; (start, end) each
    double *all = calloc((size_t)g->world * K, sizeof(double));
    ZT_ASSERT(all && t->sched.n_actions <= cap);
    double *mine = all + (size_t)g->rank * K;
    mine[0] = g->pp_rank;
    mine[1] = g->dp_rank;
    mine[2] = g->tp_rank;
    mine[3] = t->sched.n_actions;
    memcpy(mine + 4, t->action_t, 2 * (size_t)t->sched.n_actions * sizeof(double));
    zt_comm_all_gather(&g->world_comm, mine, all, (size_t)g->world * K, ZT_F64, NULL);
    if (t->trace) {
        double t0 = INFINITY;
        for (int r = 0; r < g->world; r++) t0 = fmin(t0, all[(size_t)r * K + 4]);
        fprintf(t->trace,
                "{\"trace\":\"pipeline\",\"schedule\":\"%s\",\"pp\":%d,\"dp\":%d,\"tp\":%d,"
                "\"micro_batches\":%d,\"transport\":\"%s\"}\n",
                zt_schedule_kind_name(t->sched.kind), g->pp, g->dp, g->tp, m,
                transport_of(t) == ZT_SIM_NONBLOCKING ? "nonblocking" : "blocking");
        for (int r = 0; r < g->world; r++) {
            const double *x = all + (size_t)r * K;
            zt_schedule s;
            ZT_ASSERT(zt_schedule_build_chunks(&s, t->sched.kind, g->pp, (int)x[0], m,
                                               t->n_chunks) == ZT_OK &&
                      s.n_actions == (int)x[3]);
            for (int i = 0; i < s.n_actions; i++)
                fprintf(t->trace,
                        "{\"source\":\"run\",\"rank\":%d,\"stage\":%d,\"dp\":%d,\"tp\":%d,"
                        "\"op\":\"%s\",\"micro\":%d,\"chunk\":%d,\"start_ms\":%.3f,"
                        "\"end_ms\":%.3f}\n",
                        r, (int)x[0], (int)x[1], (int)x[2], zt_sched_op_name(s.actions[i].op),
                        s.actions[i].micro, s.actions[i].chunk, 1000.0 * (x[4 + 2 * i] - t0),
                        1000.0 * (x[5 + 2 * i] - t0));
            zt_schedule_free(&s);
        }
        zt_sched_costs *c = calloc((size_t)g->pp, sizeof *c);
        ZT_ASSERT(c);
        stage_costs(fig, g->world, g->pp, 0, c);
        trace_simulated(t, t->sched.kind, c, "sim");
        stage_costs(fig, g->world, g->pp, 1, c);
        for (int s = 0; s < g->pp; s++) { // a stage's action there computes all its chunks
            c[s].f *= t->n_chunks;
            c[s].b *= t->n_chunks;
            c[s].w *= t->n_chunks;
        }
        trace_simulated(t, ZT_SCHED_ZB_H1, c, "sim-zb-h1");
        free(c);
        fflush(t->trace);
    }
    free(all);
}

// Rank 0: each stage's measured idle (the mean of its ranks') and the simulator's prediction
// from the gathered costs, as log fields.
static void idle_fields(zt_trainer *t, const double *fig, char *json, size_t cap) {
    const zt_grid *g = &t->grid;
    size_t p = (size_t)g->pp;
    double *idle = calloc(p, sizeof(double)), *pred = calloc(p, sizeof(double));
    int *n = calloc(p, sizeof(int));
    zt_sched_costs *c = calloc(p, sizeof *c);
    zt_sim_stage *per = calloc(p, sizeof *per);
    ZT_ASSERT(idle && pred && n && c && per);
    for (int r = 0; r < g->world; r++) {
        int s = (int)fig[r * FIG_N + FIG_STAGE];
        idle[s] += 1000.0 * fig[r * FIG_N + FIG_IDLE];
        n[s]++;
    }
    for (int s = 0; s < g->pp; s++) idle[s] /= n[s];
    stage_costs(fig, g->world, g->pp, 0, c);
    long ticks = 0;
    if (zt_schedule_simulate(t->sched.kind, g->pp, t->cfg->grad_accum, t->n_chunks, c, 0,
                             transport_of(t),
                             &ticks, per) == ZT_OK)
        for (int s = 0; s < g->pp; s++) pred[s] = per[s].idle / 1000.0;
    put_array(json, cap, "pp_idle_ms", idle, g->pp);
    put_array(json, cap, "pp_idle_pred_ms", pred, g->pp);
    free(idle);
    free(pred);
    free(n);
    free(c);
    free(per);
}

void zt_trainer_pipeline_figures(zt_trainer *t, int step, char *json, size_t cap) {
    const zt_grid *g = &t->grid;
    json[0] = 0;
    int m = t->cfg->grad_accum, last = step + 1 == t->cfg->steps;
    if (g->pp == 1 && !(last && t->cfg->trace[0])) return;
    double *fig = calloc((size_t)g->world * FIG_N, sizeof(double));
    ZT_ASSERT(fig);
    double *mine = fig + (size_t)g->rank * FIG_N;
    mine[FIG_STAGE] = g->pp_rank;
    mine[FIG_IDLE] = t->sched_s - t->compute_s; // the waits and the transfers
    int n = m * t->n_chunks; // each action's mean: the simulator's costs are per chunk
    mine[FIG_FWD] = t->fwd_s / n;
    mine[FIG_BWD] = t->bwd_s / n;
    mine[FIG_WGT] = t->wgt_s / n;
    zt_comm_all_gather(&g->world_comm, mine, fig, (size_t)g->world * FIG_N, ZT_F64, NULL);
    if (last && t->cfg->trace[0]) write_trace(t, fig);
    if (g->rank == 0 && g->pp > 1) idle_fields(t, fig, json, cap);
    free(fig);
}
