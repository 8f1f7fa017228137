// The report of `zerotrain memory` (planner.h): every rank's plan grouped, the optimizer
// split, the ZeRO paper's formula for this run and for a published configuration, and the
// fit against a limit, as text or JSON.
#include "planner.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "host_memory.h"

// ---------------------------------------------------------------- the ZeRO formula

double zt_plan_zero_formula(int stage, double psi, double p, double g, double k, double nd) {
    switch (stage) {
    case 0: return (p + g + k) * psi;
    case 1: return (p + g) * psi + k * psi / nd;
    case 2: return p * psi + (g + k) * psi / nd;
    case 3: return (p + g + k) * psi / nd;
    default: ZT_ASSERTF(0, "ZeRO stage %d", stage);
    }
}

// ---------------------------------------------------------------- the report

// The published configuration the report quotes: the ZeRO paper's Figure 1, 7.5B
// parameters on 64 data-parallel ranks, mixed-precision Adam (K = 12): 120 GB baseline,
// 31.4 GB Pos, 16.6 GB Pos+g, 1.9 GB Pos+g+p (GB = 1e9 bytes).
#define PAPER_PSI 7.5e9
#define PAPER_ND 64.0
static const double k_paper_gb[4] = {120.0, 31.4, 16.6, 1.9};
static const char *const k_zero_names[4] = {"baseline", "Pos", "Pos+g", "Pos+g+p"};

// Whether two ranks' plans are alike (the same numbers; which rank they are aside).
static int alike(const zt_plan_bytes *a, const zt_plan_bytes *b) {
    if (a->pp_rank != b->pp_rank || a->n_slots != b->n_slots || a->numel != b->numel)
        return 0;
    for (int k = 0; k < ZT_MEM_NCAT; k++)
        if (a->bytes[k] != b->bytes[k]) return 0;
    return a->opt_master == b->opt_master && a->opt_m == b->opt_m && a->opt_v == b->opt_v &&
           a->opt_absmax == b->opt_absmax && a->opt_table == b->opt_table &&
           a->comm_backend == b->comm_backend && a->comm_window == b->comm_window &&
           a->staging == b->staging && a->end_transient == b->end_transient;
}

// "0-3,5,7-9" of the set bits of `on` (n entries), truncated with "..." to fit.
static void format_set(const char *on, int n, char *buf, size_t size) {
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        if (!on[i]) continue;
        int j = i;
        while (j + 1 < n && on[j + 1]) j++;
        char item[32];
        if (j > i) snprintf(item, sizeof item, "%s%d-%d", off ? "," : "", i, j);
        else snprintf(item, sizeof item, "%s%d", off ? "," : "", i);
        if (off + strlen(item) + 4 >= size) {
            snprintf(buf + off, size - off, ",...");
            return;
        }
        off += (size_t)snprintf(buf + off, size - off, "%s", item);
        i = j;
    }
}

typedef struct {
    zt_plan_bytes max;   // every field the largest over the members
    zt_plan_bytes first; // the first member
    int count;
    double spread;       // largest difference in peak between members
    char label[160];
} group;

// Groups the ranks: alike ranks share a group; with more than 16 groups (8-bit shards
// that differ by a few blocks on many dp ranks), one group per stage and tp rank holding
// the largest value of each field. Returns the count; *out is the caller's to free.
static int make_groups(const zt_plan_spec *s, const zt_plan_bytes *all, group **out) {
    int W = s->dp * s->pp * s->tp, cap = 16, n = 0;
    int *of = malloc((size_t)W * sizeof *of);
    group *g = calloc((size_t)(cap > s->pp * s->tp ? cap : s->pp * s->tp), sizeof *g);
    ZT_ASSERT(of && g);
    for (int r = 0; r < W && n <= cap; r++) {
        int k = 0;
        while (k < n && !alike(&g[k].first, &all[r])) k++;
        if (k == n && n++ < cap) g[k].first = all[r];
        of[r] = k;
    }
    int by_stage = n > cap;
    if (by_stage) {
        n = s->pp * s->tp;
        for (int r = 0; r < W; r++) of[r] = all[r].pp_rank * s->tp + all[r].tp_rank;
        for (int k = 0; k < n; k++) g[k].count = 0;
    }
    for (int r = 0; r < W; r++) {
        group *x = &g[of[r]];
        const zt_plan_bytes *b = &all[r];
        if (x->count++ == 0) {
            x->first = x->max = *b;
            continue;
        }
        zt_plan_bytes *m = &x->max;
        for (int k = 0; k < ZT_MEM_NCAT; k++) m->bytes[k] = fmax(m->bytes[k], b->bytes[k]);
        m->opt_master = fmax(m->opt_master, b->opt_master);
        m->opt_m = fmax(m->opt_m, b->opt_m);
        m->opt_v = fmax(m->opt_v, b->opt_v);
        m->opt_absmax = fmax(m->opt_absmax, b->opt_absmax);
        m->opt_table = fmax(m->opt_table, b->opt_table);
        m->comm_backend = fmax(m->comm_backend, b->comm_backend);
        m->comm_window = fmax(m->comm_window, b->comm_window);
        m->staging = fmax(m->staging, b->staging);
        m->end_transient = fmax(m->end_transient, b->end_transient);
        m->tracked = fmax(m->tracked, b->tracked);
        x->spread = fmax(x->spread, fabs(b->peak - x->first.peak));
        m->peak = fmax(m->peak, b->peak);
    }
    // labels: "stage 0, dp 0-3, tp 0-1" when the members are such a product, else ranks
    char *dps = malloc((size_t)s->dp), *tps = malloc((size_t)s->tp), *rs = malloc((size_t)W);
    ZT_ASSERT(dps && tps && rs);
    for (int k = 0; k < n; k++) {
        memset(dps, 0, (size_t)s->dp);
        memset(tps, 0, (size_t)s->tp);
        memset(rs, 0, (size_t)W);
        int nd = 0, nt = 0;
        for (int r = 0; r < W; r++) {
            if (of[r] != k) continue;
            rs[r] = 1;
            nd += !dps[all[r].dp_rank];
            nt += !tps[all[r].tp_rank];
            dps[all[r].dp_rank] = tps[all[r].tp_rank] = 1;
        }
        char a[48], b[48];
        if (nd * nt == g[k].count) {
            format_set(dps, s->dp, a, sizeof a);
            format_set(tps, s->tp, b, sizeof b);
            snprintf(g[k].label, sizeof g[k].label, "stage %d, dp %s%s%s", g[k].first.pp_rank,
                     a, s->tp > 1 ? ", tp " : "", s->tp > 1 ? b : "");
        } else {
            format_set(rs, W, a, sizeof a);
            snprintf(g[k].label, sizeof g[k].label, "stage %d, ranks %s", g[k].first.pp_rank, a);
        }
        if (by_stage) {
            size_t len = strlen(g[k].label);
            snprintf(g[k].label + len, sizeof g[k].label - len, " (max)");
        }
    }
    free(dps);
    free(tps);
    free(rs);
    free(of);
    *out = g;
    return n;
}

// Nominal optimizer bytes per element of the shard: fp32 m and v (8), or 8-bit codes
// plus two fp32 absmax per block (2 + 8/block); plus the fp32 master copy for 16-bit
// parameters.
static double nominal_k(const zt_plan_spec *s) {
    double k = s->is_8bit ? 2.0 + 8.0 / s->opt8.block_size : 8.0;
    return k + (s->param_bytes < 4 ? 4.0 : 0.0);
}

// "124.44M", "174.60B" parameters.
static const char *format_count(double n, char *buf, size_t size) {
    if (n >= 1e9) snprintf(buf, size, "%.2fB", n / 1e9);
    else snprintf(buf, size, "%.2fM", n / 1e6);
    return buf;
}

static void text_report(FILE *f, const zt_plan_spec *s, const zt_partition *p,
                        const zt_plan_bytes *all, double limit, const char *limit_what) {
    int W = s->dp * s->pp * s->tp;
    char part[1024], x[32], y[32];
    zt_partition_format(p, &s->shape, part, sizeof part);
    const zt_model_shape *m = &s->shape;
    double psi = (double)zt_model_param_count(m);
    char cnt[32];
    fprintf(f, "zerotrain memory: GPT-2 %d layers, %d heads, %d channels, vocab %d (padded %d), "
               "n_ctx %d: %s parameters\n",
            m->n_layer, m->n_head, m->n_embd, m->vocab, m->padded_vocab, m->n_ctx,
            format_count(psi, cnt, sizeof cnt));
    char recompute[64] = "";
    if (s->recompute.mode != ZT_RECOMPUTE_NONE && s->recompute.layers)
        snprintf(recompute, sizeof recompute, ", --recompute %s of each stage's first %d blocks",
                 zt_recompute_mode_name(s->recompute.mode), s->recompute.layers);
    else if (s->recompute.mode != ZT_RECOMPUTE_NONE)
        snprintf(recompute, sizeof recompute, ", --recompute %s",
                 zt_recompute_mode_name(s->recompute.mode));
    fprintf(f, "layout: %d ranks = dp %d x pp %d x tp %d; --zero %d, %s, %s parameters; "
               "micro-batch %d x %d tokens, grad-accum %d, %s%s%s\n",
            W, s->dp, s->pp, s->tp, s->zero, s->is_8bit ? "adamw8bit" : "adamw",
            s->param_bytes == 4 ? "fp32" : "bf16 (fp32 master)", s->micro_batch, s->seq,
            s->grad_accum, zt_schedule_kind_name(s->schedule),
            s->seq_parallel && s->tp > 1 ? ", sequence parallel" : "", recompute);
    fprintf(f, "partition %s: %s\n", s->partition, part);
    fprintf(f, "%d OpenMP threads per rank (--threads, else OMP_NUM_THREADS: the attention "
               "workspace grows with them)\n",
            s->threads);
    if (s->stage_all)
        fprintf(f, "tensor paths: every group through MPI with host staging (--tensor-path "
                   "staged)\n");
    else if (s->backend->device_memory && s->gpus_per_node > 0)
        fprintf(f, "tensor paths: %d GPUs per machine, taken in turn by its ranks: NCCL where a "
                   "group's ranks have GPUs of their own, MPI with host staging where they "
                   "share one (--gpus-per-node)\n", s->gpus_per_node);
    else if (s->backend->device_memory)
        fprintf(f, "tensor paths: NCCL, each rank a GPU of its own (--gpus-per-node 0; give "
                   "the machines' GPU count where ranks share them)\n");
    group *g = NULL;
    int n = make_groups(s, all, &g);
    double top = 0.0;
    for (int r = 0; r < W; r++) top = fmax(top, all[r].peak);
    double unit = top >= 10.0 * 1073741824.0 ? 1073741824.0 : 1048576.0;
    const char *uname = unit > 1048576.0 ? "GiB" : "MiB";
    fprintf(f, "\npredicted bytes per rank in %s, allocated before step 1 (ranks alike share "
               "a row):\n",
            uname);
    fprintf(f, "%-30s %5s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "ranks", "slots",
            "params", "grads", "optimizer", "activ.", "workspace", "comm", "logits", "windows",
            "staging", "end", "peak");
    for (int k = 0; k < n; k++) {
        const zt_plan_bytes *b = &g[k].max;
        fprintf(f, "%-30s %5d", g[k].label, b->n_slots);
        for (int c = 0; c < ZT_MEM_NCAT; c++) fprintf(f, " %9.1f", b->bytes[c] / unit);
        fprintf(f, " %9.1f %9.1f %9.1f %9.1f\n", b->comm_window / unit, b->staging / unit,
                b->end_transient / unit, b->peak / unit);
    }
    fprintf(f, "(windows: the MPI backend's shared-memory staging windows, outside the "
               "allocator's count; staging: the host buffers of groups staged through MPI, %s; "
               "end: buffers the run mallocs at its end%s)\n",
            s->backend->device_memory ? "pinned host memory outside the device's count"
                                      : "in comm",
            s->save ? ", the --save export included" : "");
    fprintf(f, "\noptimizer state in %s:\n%-30s %9s %9s %9s %9s %9s\n", uname, "ranks",
            "master", "m", "v", "absmax", "table");
    for (int k = 0; k < n; k++) {
        const zt_plan_bytes *b = &g[k].max;
        fprintf(f, "%-30s %9.1f %9.1f %9.1f %9.1f %9.3f\n", g[k].label, b->opt_master / unit,
                b->opt_m / unit, b->opt_v / unit, b->opt_absmax / unit, b->opt_table / unit);
    }
    int worst = 0;
    double sum = 0.0;
    for (int r = 0; r < W; r++) {
        sum += all[r].peak;
        if (all[r].peak > all[worst].peak) worst = r;
    }
    const zt_plan_bytes *w = &all[worst];
    fprintf(f, "\nlargest rank: %d (stage %d, dp %d, tp %d) %s; all %d ranks together %s\n",
            worst, w->pp_rank, w->dp_rank, w->tp_rank,
            zt_plan_format_bytes(w->peak, x, sizeof x), W, zt_plan_format_bytes(sum, y, sizeof y));
    if (s->ranks_per_node > 0 && s->ranks_per_node < W) {
        int at = 0;
        double need = zt_plan_max_need(s, all, s->ranks_per_node, &at);
        fprintf(f, "per machine of %d ranks: the largest (ranks %d-%d) needs %s\n",
                s->ranks_per_node, at, at + s->ranks_per_node - 1,
                zt_plan_format_bytes(need, x, sizeof x));
    }
    // the ZeRO paper's model-state formula
    double nd = s->zero ? s->dp : 1.0, pb = s->param_bytes, K = nominal_k(s);
    double state = w->bytes[ZT_MEM_PARAMS] + w->bytes[ZT_MEM_GRADS] + w->bytes[ZT_MEM_OPTIMIZER];
    fprintf(f, "\nmodel state against the ZeRO paper's formula (Rajbhandari et al. 2019: psi "
               "parameters, p and g bytes per parameter and gradient, K optimizer bytes per "
               "parameter, Nd = dp ranks sharing the optimizer):\n");
    fprintf(f, "  this run, largest rank: psi = %zu elements (its padded flat buffer), p = g = "
               "%.0f, K = %g, Nd = %.0f: (p+g)psi + K psi/Nd = %s; planned params + grads + "
               "optimizer = %s\n",
            w->numel, pb, K, nd,
            zt_plan_format_bytes(zt_plan_zero_formula(1, (double)w->numel, pb, pb, K, nd), x,
                                 sizeof x),
            zt_plan_format_bytes(state, y, sizeof y));
    fprintf(f, "  the paper's mixed-precision Adam (p = g = 2, K = 12) for this model whole "
               "(psi = %s) on Nd = %d:",
            format_count(psi, cnt, sizeof cnt), s->dp);
    for (int z = 0; z < 4; z++)
        fprintf(f, " %s %.3g GB%s", k_zero_names[z],
                zt_plan_zero_formula(z, psi, 2, 2, 12, s->dp) / 1e9, z < 3 ? "," : "\n");
    fprintf(f, "  published (the paper's Figure 1): psi = 7.5B on Nd = 64:");
    for (int z = 0; z < 4; z++)
        fprintf(f, " %s %.1f GB (formula %.1f)%s", k_zero_names[z], k_paper_gb[z],
                zt_plan_zero_formula(z, PAPER_PSI, 2, 2, 12, PAPER_ND) / 1e9, z < 3 ? "," : "\n");
    double avail = zt_host_available_bytes();
    if (avail > 0)
        fprintf(f, "this machine has %s available\n", zt_plan_format_bytes(avail, x, sizeof x));
    if (limit > 0) {
        if (w->peak <= limit) {
            fprintf(f, "%s: every rank fits (the largest needs %s of %s)\n", limit_what,
                    zt_plan_format_bytes(w->peak, x, sizeof x),
                    zt_plan_format_bytes(limit, y, sizeof y));
        } else {
            int over = 0;
            for (int r = 0; r < W; r++) over += all[r].peak > limit;
            fprintf(f, "%s: %d of %d ranks do not fit (the largest needs %s of %s)\n",
                    limit_what, over, W, zt_plan_format_bytes(w->peak, x, sizeof x),
                    zt_plan_format_bytes(limit, y, sizeof y));
            zt_plan_advice adv[8];
            int na = zt_plan_advise(s, limit, 1, adv, 8);
            if (na == 0) fprintf(f, "  no change the planner tries fits\n");
            for (int i = 0; i < na; i++)
                fprintf(f, "  fits with %s: %d ranks, the largest needs %s%s%s\n", adv[i].change,
                        adv[i].world, zt_plan_format_bytes(adv[i].need, x, sizeof x),
                        adv[i].note[0] ? "; " : "", adv[i].note);
        }
    }
    free(g);
}

static cJSON *bytes_json(const zt_plan_bytes *b) {
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < ZT_MEM_NCAT; k++)
        cJSON_AddNumberToObject(o, zt_mem_category_name((zt_mem_category)k), b->bytes[k]);
    return o;
}

static void json_report(FILE *f, const zt_plan_spec *s, const zt_partition *p,
                        const zt_plan_bytes *all, double limit) {
    int W = s->dp * s->pp * s->tp;
    const zt_model_shape *m = &s->shape;
    cJSON *root = cJSON_CreateObject();
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddNumberToObject(model, "n_layer", m->n_layer);
    cJSON_AddNumberToObject(model, "n_head", m->n_head);
    cJSON_AddNumberToObject(model, "n_embd", m->n_embd);
    cJSON_AddNumberToObject(model, "vocab", m->vocab);
    cJSON_AddNumberToObject(model, "padded_vocab", m->padded_vocab);
    cJSON_AddNumberToObject(model, "n_ctx", m->n_ctx);
    cJSON_AddNumberToObject(model, "parameters", (double)zt_model_param_count(m));
    cJSON *lay = cJSON_AddObjectToObject(root, "layout");
    cJSON_AddNumberToObject(lay, "world", W);
    cJSON_AddNumberToObject(lay, "dp", s->dp);
    cJSON_AddNumberToObject(lay, "pp", s->pp);
    cJSON_AddNumberToObject(lay, "tp", s->tp);
    cJSON_AddNumberToObject(lay, "zero", s->zero);
    cJSON_AddBoolToObject(lay, "sequence_parallel", s->seq_parallel && s->tp > 1);
    cJSON_AddStringToObject(lay, "recompute", zt_recompute_mode_name(s->recompute.mode));
    cJSON_AddNumberToObject(lay, "recompute_layers", s->recompute.layers);
    cJSON_AddStringToObject(lay, "optim", s->is_8bit ? "adamw8bit" : "adamw");
    cJSON_AddStringToObject(lay, "param_dtype", s->param_bytes == 4 ? "fp32" : "bf16");
    cJSON_AddNumberToObject(lay, "micro_batch", s->micro_batch);
    cJSON_AddNumberToObject(lay, "seq", s->seq);
    cJSON_AddNumberToObject(lay, "grad_accum", s->grad_accum);
    cJSON_AddNumberToObject(lay, "loss_chunk", s->loss_chunk);
    cJSON_AddStringToObject(lay, "schedule", zt_schedule_kind_name(s->schedule));
    cJSON_AddNumberToObject(lay, "virtual_stages", zt_plan_partition_stages(s) / s->pp);
    cJSON_AddStringToObject(lay, "partition", s->partition);
    cJSON_AddNumberToObject(lay, "ranks_per_node", s->ranks_per_node);
    cJSON_AddNumberToObject(lay, "gpus_per_node", s->gpus_per_node);
    cJSON_AddStringToObject(lay, "tensor_path", s->stage_all ? "staged" : "auto");
    cJSON_AddStringToObject(lay, "backend", s->backend->name);
    cJSON_AddNumberToObject(lay, "stage_kib", s->stage_kib);
    cJSON_AddNumberToObject(lay, "threads", s->threads);
    cJSON *stages = cJSON_AddArrayToObject(root, "stages");
    for (int k = 0; k < p->n_stages; k++) { // interleaved: each chunk (virtual stage)
        cJSON *st = cJSON_CreateObject();
        cJSON_AddNumberToObject(st, "stage", k);
        cJSON_AddNumberToObject(st, "unit_first", p->first[k]);
        cJSON_AddNumberToObject(st, "unit_last", p->first[k + 1]);
        cJSON_AddNumberToObject(st, "slots", zt_plan_stage_slots(s, k));
        cJSON_AddItemToArray(stages, st);
    }
    cJSON *ranks = cJSON_AddArrayToObject(root, "ranks");
    double top = 0.0;
    int worst = 0;
    for (int r = 0; r < W; r++) {
        const zt_plan_bytes *b = &all[r];
        if (b->peak > top) top = b->peak, worst = r;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "rank", b->rank);
        cJSON_AddNumberToObject(o, "dp_rank", b->dp_rank);
        cJSON_AddNumberToObject(o, "pp_rank", b->pp_rank);
        cJSON_AddNumberToObject(o, "tp_rank", b->tp_rank);
        cJSON_AddNumberToObject(o, "slots", b->n_slots);
        cJSON_AddNumberToObject(o, "numel", (double)b->numel);
        cJSON_AddNumberToObject(o, "shard_lo", (double)b->shard_lo);
        cJSON_AddNumberToObject(o, "shard_hi", (double)b->shard_hi);
        cJSON_AddItemToObject(o, "bytes", bytes_json(b));
        cJSON *opt = cJSON_AddObjectToObject(o, "optimizer_split");
        cJSON_AddNumberToObject(opt, "master", b->opt_master);
        cJSON_AddNumberToObject(opt, "m", b->opt_m);
        cJSON_AddNumberToObject(opt, "v", b->opt_v);
        cJSON_AddNumberToObject(opt, "absmax", b->opt_absmax);
        cJSON_AddNumberToObject(opt, "table", b->opt_table);
        cJSON_AddNumberToObject(o, "comm_backend", b->comm_backend);
        cJSON_AddNumberToObject(o, "comm_window", b->comm_window);
        cJSON_AddNumberToObject(o, "staging", b->staging);
        cJSON_AddNumberToObject(o, "end_transient", b->end_transient);
        cJSON_AddNumberToObject(o, "tracked", b->tracked);
        cJSON_AddNumberToObject(o, "peak", b->peak);
        cJSON_AddItemToArray(ranks, o);
    }
    cJSON_AddNumberToObject(root, "max_peak", top);
    cJSON_AddNumberToObject(root, "max_peak_rank", worst);
    // the ZeRO paper's formula: this run's largest rank, this model whole, the paper's
    const zt_plan_bytes *w = &all[worst];
    double nd = s->zero ? s->dp : 1.0, pb = s->param_bytes, K = nominal_k(s);
    double psi = (double)zt_model_param_count(m);
    cJSON *zf = cJSON_AddObjectToObject(root, "zero_formula");
    cJSON *run = cJSON_AddObjectToObject(zf, "this_run");
    cJSON_AddNumberToObject(run, "psi", (double)w->numel);
    cJSON_AddNumberToObject(run, "p", pb);
    cJSON_AddNumberToObject(run, "g", pb);
    cJSON_AddNumberToObject(run, "K", K);
    cJSON_AddNumberToObject(run, "Nd", nd);
    cJSON_AddNumberToObject(run, "formula",
                            zt_plan_zero_formula(1, (double)w->numel, pb, pb, K, nd));
    cJSON_AddNumberToObject(run, "planned", w->bytes[ZT_MEM_PARAMS] + w->bytes[ZT_MEM_GRADS] +
                                                w->bytes[ZT_MEM_OPTIMIZER]);
    cJSON *paper = cJSON_AddObjectToObject(zf, "mixed_precision_adam_this_model");
    cJSON_AddNumberToObject(paper, "psi", psi);
    cJSON_AddNumberToObject(paper, "Nd", s->dp);
    for (int z = 0; z < 4; z++)
        cJSON_AddNumberToObject(paper, k_zero_names[z],
                                zt_plan_zero_formula(z, psi, 2, 2, 12, s->dp));
    cJSON *pub = cJSON_AddObjectToObject(zf, "published_7.5B_Nd64");
    for (int z = 0; z < 4; z++) {
        cJSON *e = cJSON_AddObjectToObject(pub, k_zero_names[z]);
        cJSON_AddNumberToObject(e, "paper_GB", k_paper_gb[z]);
        cJSON_AddNumberToObject(e, "formula_GB",
                                zt_plan_zero_formula(z, PAPER_PSI, 2, 2, 12, PAPER_ND) / 1e9);
    }
    if (limit > 0) {
        cJSON_AddNumberToObject(root, "limit", limit);
        cJSON_AddBoolToObject(root, "fits", top <= limit);
        cJSON *adv = cJSON_AddArrayToObject(root, "advice");
        if (top > limit) {
            zt_plan_advice a[8];
            int na = zt_plan_advise(s, limit, 1, a, 8);
            for (int i = 0; i < na; i++) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "change", a[i].change);
                if (a[i].note[0]) cJSON_AddStringToObject(e, "note", a[i].note);
                cJSON_AddNumberToObject(e, "world", a[i].world);
                cJSON_AddNumberToObject(e, "need", a[i].need);
                cJSON_AddItemToArray(adv, e);
            }
        }
    }
    char *text = cJSON_PrintUnformatted(root);
    ZT_ASSERT(text);
    fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(root);
}

zt_status zt_plan_report(FILE *f, const zt_plan_spec *s, int json, double limit,
                         const char *limit_what) {
    zt_partition p = {0};
    ZT_TRY(zt_plan_partition(s, &p));
    int W = s->dp * s->pp * s->tp;
    zt_plan_bytes *all = malloc((size_t)W * sizeof *all);
    ZT_ASSERT(all);
    zt_status st = zt_plan_all(s, &p, all);
    if (st == ZT_OK) {
        if (json) json_report(f, s, &p, all, limit);
        else text_report(f, s, &p, all, limit, limit_what);
    }
    free(all);
    zt_partition_free(&p);
    return st;
}
