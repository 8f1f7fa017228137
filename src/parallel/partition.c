// Pipeline partitions: parses --partition, balances unit costs exactly, describes the
// result (docs/design.md §4).
#include "partition.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- text helpers

// A bounded string being appended to: never overruns, always NUL-terminated.
typedef struct {
    char *buf;
    size_t size, len;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...) {
    if (b->size == 0 || b->len >= b->size - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->buf + b->len, b->size - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    b->len += (size_t)n;
    if (b->len > b->size - 1) b->len = b->size - 1;
}

// Names the units [a, b): "embed + blocks 0-2", "block 5", "blocks 9-11 + head".
static void sb_units(strbuf *sb, const zt_model_shape *s, int a, int b) {
    int head = zt_unit_head(s);
    const char *sep = "";
    if (a == ZT_UNIT_EMBED) {
        sb_printf(sb, "embed");
        sep = " + ";
    }
    int lo = a > 1 ? a : 1, hi = b < head ? b : head; // block units [lo, hi)
    if (hi - lo == 1) sb_printf(sb, "%sblock %d", sep, lo - 1);
    else if (hi - lo > 1) sb_printf(sb, "%sblocks %d-%d", sep, lo - 1, hi - 2);
    if (hi > lo) sep = " + ";
    if (b == head + 1) sb_printf(sb, "%shead", sep);
}

// "units 5..6 (blocks 4-5)" or "unit 0 (embed)": units [a, b), inclusive in the text
// because that is how people say it.
static void sb_unit_span(strbuf *sb, const zt_model_shape *s, int a, int b) {
    if (b - a == 1) sb_printf(sb, "unit %d (", a);
    else sb_printf(sb, "units %d..%d (", a, b - 1);
    sb_units(sb, s, a, b);
    sb_printf(sb, ")");
}

// "a 12-layer model has 14 units (0 = embed, 1..12 = blocks 0-11, 13 = head)"
static void sb_model_units(strbuf *sb, const zt_model_shape *s) {
    int L = s->n_layer;
    sb_printf(sb, "a %d-layer model has %d units (0 = embed, ", L, zt_unit_count(s));
    if (L == 1) sb_printf(sb, "1 = block 0");
    else sb_printf(sb, "1..%d = blocks 0-%d", L, L - 1);
    sb_printf(sb, ", %d = head)", zt_unit_head(s));
}

// ---------------------------------------------------------------- unit costs

double zt_partition_unit_params(const zt_model_shape *s, int unit) {
    ZT_ASSERT(unit >= 0 && unit < zt_unit_count(s));
    double C = s->n_embd, Vp = s->padded_vocab, T = s->n_ctx;
    if (unit == ZT_UNIT_EMBED) return Vp * C + T * C;
    if (unit == zt_unit_head(s)) return 2 * C + Vp * C;
    return 12 * C * C + 13 * C;
}

// ---------------------------------------------------------------- the balancer

// seg[i*W + j] = cost[i] + ... + cost[j-1] (W = n + 1), always summed in this order, so a
// stage sum has one value wherever it is compared (no prefix-sum differences).
static double *segment_sums(const double *cost, int n) {
    size_t W = (size_t)n + 1;
    double *seg = malloc(W * W * sizeof *seg);
    ZT_ASSERT(seg);
    for (int i = 0; i < n; i++) {
        double acc = 0;
        seg[i * W + i] = 0;
        for (int j = i + 1; j <= n; j++) {
            acc += cost[j - 1];
            seg[i * W + j] = acc;
        }
    }
    return seg;
}

// Phase 1, the bottleneck: g_m(i) = the smallest possible largest stage sum when m stages
// cover units [i, n); g_1(i) = seg(i, n), g_m(i) = min over i < j <= n-m+1 of
// max(seg(i, j), g_{m-1}(j)). Returns g_k(0).
static double bottleneck(const double *seg, int n, int k) {
    size_t W = (size_t)n + 1;
    double *prev = calloc(W, sizeof *prev), *cur = calloc(W, sizeof *cur);
    ZT_ASSERT(prev && cur);
    for (int i = 0; i < n; i++) prev[i] = seg[i * W + n];
    for (int m = 2; m <= k; m++) {
        for (int i = 0; i <= n - m; i++) {
            double best = INFINITY;
            for (int j = i + 1; j <= n - m + 1; j++) {
                double v = seg[i * W + j] > prev[j] ? seg[i * W + j] : prev[j];
                if (v < best) best = v;
            }
            cur[i] = best;
        }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    double B = prev[0];
    free(prev);
    free(cur);
    return B;
}

// Phase 2, the tie-break: among partitions whose every stage sum is <= B, the one with the
// smallest sum of squared stage sums, then the smallest boundaries. f_m(i) = that smallest
// sum of squares for m stages over [i, n) (INFINITY if none fits under B); nxt_m(i) = the
// end of the first of those m stages. Scanning j upwards and replacing only on a clearly
// smaller value keeps the smallest j. Writes the boundaries to first[0..k].
static void tie_break(const double *seg, int n, int k, double B, int *first) {
    size_t W = (size_t)n + 1;
    double *f = calloc((size_t)k * W, sizeof *f); // (k, n+1)
    int *nxt = calloc((size_t)k * W, sizeof *nxt); // (k, n+1)
    ZT_ASSERT(f && nxt);
#define F(m, i) f[(size_t)((m) - 1) * W + (size_t)(i)]
#define NXT(m, i) nxt[(size_t)((m) - 1) * W + (size_t)(i)]
    for (int i = 0; i < n; i++) {
        double sg = seg[i * W + n];
        F(1, i) = sg <= B ? sg * sg : INFINITY;
        NXT(1, i) = n;
    }
    for (int m = 2; m <= k; m++) {
        for (int i = 0; i <= n - m; i++) {
            double best = INFINITY;
            int bj = -1;
            for (int j = i + 1; j <= n - m + 1; j++) {
                double sg = seg[i * W + j];
                if (sg > B || F(m - 1, j) == INFINITY) continue;
                double v = sg * sg + F(m - 1, j);
                if (bj < 0 || v < best - 1e-12 * best) {
                    best = v;
                    bj = j;
                }
            }
            F(m, i) = best;
            NXT(m, i) = bj;
        }
    }
    ZT_ASSERTF(F(k, 0) < INFINITY, "balance: no partition under the bottleneck %g", B);
    first[0] = 0;
    int i = 0;
    for (int m = k; m >= 2; m--) {
        i = NXT(m, i);
        ZT_ASSERT(i > first[k - m] && i < n);
        first[k - m + 1] = i;
    }
    first[k] = n;
#undef F
#undef NXT
    free(f);
    free(nxt);
}

void zt_partition_balance(const double *cost, int n, int k, int *first) {
    ZT_ASSERT(cost && first);
    ZT_ASSERTF(k >= 1 && k <= n, "balance: %d stages over %d units", k, n);
    for (int u = 0; u < n; u++)
        ZT_ASSERTF(isfinite(cost[u]) && cost[u] >= 0, "balance: cost[%d] = %g", u, cost[u]);
    double *seg = segment_sums(cost, n);
    tie_break(seg, n, k, bottleneck(seg, n, k), first);
    free(seg);
}

// ---------------------------------------------------------------- spec parsers

static void partition_alloc(zt_partition *p, int n_stages) {
    p->n_stages = n_stages;
    p->first = calloc((size_t)n_stages + 1, sizeof *p->first);
    ZT_ASSERT(p->first);
}

static zt_status build_uniform(zt_partition *p, const zt_model_shape *s, int k) {
    int L = s->n_layer;
    if (k > L)
        return zt_errorf("--partition uniform puts at least one of the %d blocks on every "
                         "stage, so --pp %d is too many: lower --pp to %d or less, or use "
                         "--partition parameters or unit ranges, which can give the embed "
                         "and the head stages of their own",
                         L, k, L);
    partition_alloc(p, k);
    int base = L / k, extra = L % k, unit = 1; // unit 1 = block 0; embed rides on stage 0
    for (int i = 0; i < k; i++) {
        p->first[i] = i == 0 ? 0 : unit;
        unit += base + (i >= k - extra); // the last `extra` stages take one more block
    }
    ZT_ASSERT(unit == L + 1);
    p->first[k] = zt_unit_count(s); // head rides on the last stage
    return ZT_OK;
}

static zt_status build_balanced(zt_partition *p, const double *cost, int n, int k) {
    partition_alloc(p, k);
    zt_partition_balance(cost, n, k, p->first);
    return ZT_OK;
}

// "type:embed:2|transformer:1": weights per unit type; unnamed types weigh 0, a type
// without ":weight" weighs 1.
static zt_status build_type(zt_partition *p, const char *spec, const zt_model_shape *s,
                            int k) {
    static const char *const names[3] = {"embed", "transformer", "head"};
    double w[3] = {0, 0, 0};
    int seen[3] = {0, 0, 0};
    const char *hint = "write per-type weights like type:embed:2|transformer:1 "
                       "(types: embed, transformer, head; a type not named weighs 0)";
    const char *q = spec + 5; // after "type:"
    for (;;) {
        size_t len = strcspn(q, "|");
        char item[128];
        if (len == 0)
            return zt_errorf("--partition '%s' has an empty type entry: %s", spec, hint);
        if (len >= sizeof item)
            return zt_errorf("--partition '%s': the entry '%.40s...' is too long: %s", spec, q,
                             hint);
        memcpy(item, q, len);
        item[len] = 0;
        char *colon = strchr(item, ':');
        if (colon) *colon = 0;
        int t = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(item, names[i]) == 0) t = i;
        if (t < 0)
            return zt_errorf("--partition '%s': unit type '%s' is not known: %s", spec, item,
                             hint);
        if (seen[t])
            return zt_errorf("--partition '%s' names type %s twice: %s", spec, item, hint);
        seen[t] = 1;
        w[t] = 1;
        if (colon) {
            const char *num = colon + 1;
            char *end = NULL;
            double v = *num ? strtod(num, &end) : NAN;
            if (!*num || *end || !isfinite(v) || v < 0)
                return zt_errorf("--partition '%s': the weight '%s' of type %s is not a "
                                 "non-negative number: %s",
                                 spec, num, item, hint);
            // weights are relative: a bound keeps stage sums (and their squares, in the
            // balancing) finite and exact enough
            if (v > 1e6)
                return zt_errorf("--partition '%s': the weight '%s' of type %s exceeds 1e6 "
                                 "(weights are relative: %s)", spec, num, item, hint);
            w[t] = v;
        }
        if (q[len] == 0) break;
        q += len + 1;
    }
    if (w[0] == 0 && w[1] == 0 && w[2] == 0)
        return zt_errorf("--partition '%s' gives every unit weight 0, so nothing is "
                         "balanced: give at least one type a positive weight, e.g. "
                         "type:transformer:1",
                         spec);
    int n = zt_unit_count(s);
    double *cost = malloc((size_t)n * sizeof *cost);
    ZT_ASSERT(cost);
    for (int u = 0; u < n; u++)
        cost[u] = u == ZT_UNIT_EMBED ? w[0] : u == zt_unit_head(s) ? w[2] : w[1];
    zt_status st = build_balanced(p, cost, n, k);
    free(cost);
    return st;
}

typedef struct {
    int a, b;
    const char *text; // the range as written, for messages
    int len;
} unit_range;

// Reads a decimal number; values past INT_MAX/2 saturate there (they are "past the last
// unit" anyway). Returns the number of digits read.
static int read_uint(const char *q, int *out) {
    long v = 0;
    int d = 0;
    while (q[d] >= '0' && q[d] <= '9') {
        if (v < INT_MAX / 2) v = v * 10 + (q[d] - '0');
        d++;
    }
    *out = v < INT_MAX / 2 ? (int)v : INT_MAX / 2;
    return d;
}

// "0:1,1:7,7:13,13:14": half-open unit ranges, one per stage.
static zt_status build_ranges(zt_partition *p, const char *spec, const zt_model_shape *s,
                              int k) {
    int n = zt_unit_count(s);
    int count = 1;
    for (const char *c = spec; *c; c++) count += *c == ',';
    unit_range *r = malloc((size_t)count * sizeof *r);
    ZT_ASSERT(r);
    char model[160];
    strbuf mb = {model, sizeof model, 0};
    sb_model_units(&mb, s);
    char msg[512];
    strbuf sb = {msg, sizeof msg, 0};
    msg[0] = 0;

    const char *q = spec;
    for (int i = 0; i < count; i++) {
        size_t len = strcspn(q, ",");
        int da = read_uint(q, &r[i].a);
        int db = q[da] == ':' ? read_uint(q + da + 1, &r[i].b) : 0;
        r[i].text = q;
        r[i].len = (int)len;
        if (da == 0 || db == 0 || (size_t)(da + 1 + db) != len) {
            free(r);
            return zt_errorf("--partition '%s': '%.*s' is not a unit range: write half-open "
                             "ranges first:end separated by commas, one per stage, e.g. "
                             "0:1,1:7,7:13,13:14",
                             spec, (int)len, q);
        }
        q += len + 1;
    }
    if (count != k) {
        free(r);
        return zt_errorf("--partition '%s' lists %d unit range%s but --pp is %d: give one "
                         "range per stage",
                         spec, count, count == 1 ? "" : "s", k);
    }
    for (int i = 0; i < count && !msg[0]; i++) {
        int a = r[i].a, b = r[i].b, end = i == 0 ? 0 : r[i - 1].b;
        if (a >= b) {
            sb_printf(&sb, "range %.*s of stage %d is empty: every stage needs at least one "
                           "unit, written first:end with first < end",
                      r[i].len, r[i].text, i);
        } else if (b > n) {
            sb_printf(&sb, "range %.*s of stage %d goes past the last unit %d: %s, so "
                           "ranges end at %d or before",
                      r[i].len, r[i].text, i, n - 1, model, n);
        } else if (a > end) {
            sb_unit_span(&sb, s, end, a);
            if (i == 0) sb_printf(&sb, " %s not in any stage: the first range starts at 0",
                                  a - end == 1 ? "is" : "are");
            else sb_printf(&sb, " %s not in any stage: stage %d ends at %d but stage %d "
                                "starts at %d",
                           a - end == 1 ? "is" : "are", i - 1, end, i, a);
        } else if (a < end) {
            sb_unit_span(&sb, s, a, end);
            sb_printf(&sb, " %s in both stage %d (%d:%d) and stage %d (%d:%d): each unit "
                           "belongs to one stage",
                      end - a == 1 ? "is" : "are", i - 1, r[i - 1].a, end, i, a, b);
        }
    }
    if (!msg[0] && r[count - 1].b < n) {
        int end = r[count - 1].b;
        sb_unit_span(&sb, s, end, n);
        sb_printf(&sb, " %s not in any stage: the last range must end at %d, because %s",
                  n - end == 1 ? "is" : "are", n, model);
    }
    if (msg[0]) {
        free(r);
        return zt_errorf("--partition '%s': %s", spec, msg);
    }
    partition_alloc(p, k);
    for (int i = 0; i < k; i++) p->first[i] = r[i].a;
    p->first[k] = n;
    free(r);
    return ZT_OK;
}

// ---------------------------------------------------------------- public

int zt_partition_needs_costs(const char *spec) { return strcmp(spec, "memory") == 0; }

zt_status zt_partition_build(zt_partition *p, const char *spec, const zt_model_shape *s,
                             int n_stages, const double *unit_cost) {
    ZT_ASSERT(p && spec && s && s->n_layer >= 1);
    memset(p, 0, sizeof *p);
    int n = zt_unit_count(s), L = s->n_layer;
    if (n_stages < 1) return zt_errorf("--pp %d: the pipeline needs at least 1 stage", n_stages);
    if (n_stages > n)
        return zt_errorf("--pp %d needs at least %d units but a %d-layer model has %d "
                         "(embed, %d block%s, head): lower --pp to %d or less",
                         n_stages, n_stages, L, n, L, L == 1 ? "" : "s", n);
    zt_status st;
    if (strcmp(spec, "uniform") == 0) {
        st = build_uniform(p, s, n_stages);
    } else if (strcmp(spec, "parameters") == 0) {
        double *cost = malloc((size_t)n * sizeof *cost);
        ZT_ASSERT(cost);
        for (int u = 0; u < n; u++) cost[u] = zt_partition_unit_params(s, u);
        st = build_balanced(p, cost, n, n_stages);
        free(cost);
    } else if (strncmp(spec, "type:", 5) == 0) {
        st = build_type(p, spec, s, n_stages);
    } else if (zt_partition_needs_costs(spec)) {
        if (!unit_cost)
            return zt_errorf("--partition memory balances each unit's predicted memory, "
                             "which the memory planner supplies, and no prediction was "
                             "given here: build the partition through the planner, or use "
                             "--partition parameters, uniform or unit ranges");
        st = build_balanced(p, unit_cost, n, n_stages);
    } else if (spec[0] && strchr(spec, ':') && strspn(spec, "0123456789:,") == strlen(spec)) {
        st = build_ranges(p, spec, s, n_stages);
    } else {
        return zt_errorf("--partition '%s' is not known: use uniform, parameters, memory, "
                         "type:embed:2|transformer:1 style weights, or unit ranges like "
                         "0:7,7:14",
                         spec);
    }
    if (st != ZT_OK) {
        zt_partition_free(p);
        return st;
    }
    // The invariants every method promises.
    ZT_ASSERT(p->n_stages == n_stages && p->first[0] == 0 && p->first[n_stages] == n);
    for (int i = 0; i < n_stages; i++) ZT_ASSERT(p->first[i] < p->first[i + 1]);
    return ZT_OK;
}

void zt_partition_free(zt_partition *p) {
    if (!p) return;
    free(p->first);
    p->first = NULL;
    p->n_stages = 0;
}

int zt_partition_stage_of(const zt_partition *p, int unit) {
    ZT_ASSERT(p->n_stages >= 1 && unit >= 0 && unit < p->first[p->n_stages]);
    int i = 0;
    while (unit >= p->first[i + 1]) i++;
    return i;
}

void zt_partition_format(const zt_partition *p, const zt_model_shape *s, char *buf,
                         size_t size) {
    if (size == 0) return;
    buf[0] = 0;
    strbuf sb = {buf, size, 0};
    for (int i = 0; i < p->n_stages; i++) {
        sb_printf(&sb, "%sstage %d: ", i ? " | " : "", i);
        sb_units(&sb, s, p->first[i], p->first[i + 1]);
    }
}

zt_status zt_partition_build_staged(zt_partition *p, int n_units, int n_stages,
                                    zt_stage_cost_fn cost, void *ctx) {
    memset(p, 0, sizeof *p);
    if (n_stages < 1 || n_stages > n_units)
        return zt_errorf("--pp %d needs between 1 and %d stages (one unit each at least)",
                         n_stages, n_units);
    size_t W = (size_t)n_units + 1;
    // Pass 1, best[s*W + j]: the smallest possible largest cost of stages 0..s covering
    // units [0, j). Pass 2, among the partitions whose every stage costs at most the
    // optimum best[last] (relative 1e-12), the most even: the smallest sum of squared
    // stage costs, sq[s*W + j]; from[s*W + j] is where stage s starts in it (ties: the
    // earliest start). Without pass 2 the stages off the bottleneck can be far from even.
    double *best = malloc((size_t)n_stages * W * sizeof *best);
    double *sq = malloc((size_t)n_stages * W * sizeof *sq);
    int *from = malloc((size_t)n_stages * W * sizeof *from);
    ZT_ASSERT(best && sq && from);
    for (int j = 1; j <= n_units; j++) best[j] = cost(ctx, 0, 0, j);
    for (int s = 1; s < n_stages; s++)
        for (int j = s + 1; j <= n_units - (n_stages - 1 - s); j++) {
            double b = INFINITY;
            for (int i = s; i < j; i++) {
                double prev = best[(size_t)(s - 1) * W + i], c = cost(ctx, s, i, j);
                double v = prev > c ? prev : c;
                if (v < b) b = v;
            }
            best[(size_t)s * W + j] = b;
        }
    double cap = best[(size_t)(n_stages - 1) * W + n_units];
    cap += fabs(cap) * 1e-12;
    for (int j = 1; j <= n_units; j++) {
        double c = cost(ctx, 0, 0, j);
        sq[j] = c <= cap ? c * c : INFINITY;
        from[j] = 0;
    }
    for (int s = 1; s < n_stages; s++)
        for (int j = s + 1; j <= n_units - (n_stages - 1 - s); j++) {
            double b = INFINITY;
            int arg = s;
            for (int i = s; i < j; i++) {
                double prev = sq[(size_t)(s - 1) * W + i], c = cost(ctx, s, i, j);
                if (prev == INFINITY || c > cap) continue;
                if (prev + c * c < b) b = prev + c * c, arg = i;
            }
            sq[(size_t)s * W + j] = b;
            from[(size_t)s * W + j] = arg;
        }
    partition_alloc(p, n_stages);
    p->first[n_stages] = n_units;
    for (int s = n_stages - 1; s >= 0; s--) p->first[s] = from[(size_t)s * W + p->first[s + 1]];
    free(best);
    free(sq);
    free(from);
    return ZT_OK;
}
