// Tests of pipeline partitions: the coverage invariants of every method, every error of
// explicit unit ranges, and the balancer against brute force over all partitions.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "partition.h"
#include "test.h"

static zt_model_shape shape(int n_layer, int n_embd) {
    zt_model_shape s = {.vocab = 50257, .padded_vocab = zt_padded_vocab(50257, 1),
                        .n_ctx = 1024, .n_layer = n_layer, .n_head = 12, .n_embd = n_embd};
    return s;
}

static zt_model_shape gpt2_124m(void) { return shape(12, 768); }

// first[0] = 0, strictly increasing, first[n] = L + 2.
static int covers(const zt_partition *p, const zt_model_shape *s, int n_stages) {
    if (p->n_stages != n_stages || !p->first) return 0;
    if (p->first[0] != 0 || p->first[n_stages] != zt_unit_count(s)) return 0;
    for (int i = 0; i < n_stages; i++)
        if (p->first[i] >= p->first[i + 1]) return 0;
    return 1;
}

static double stage_sum(const double *cost, int a, int b) {
    double acc = 0; // ascending, as the balancer sums
    for (int u = a; u < b; u++) acc += cost[u];
    return acc;
}

static double max_stage(const double *cost, const int *first, int k) {
    double m = 0;
    for (int i = 0; i < k; i++) {
        double v = stage_sum(cost, first[i], first[i + 1]);
        if (v > m) m = v;
    }
    return m;
}

static int blocks_in(const zt_partition *p, const zt_model_shape *s, int i) {
    int a = p->first[i], b = p->first[i + 1];
    return (b - a) - (a == ZT_UNIT_EMBED) - (b == zt_unit_count(s));
}

// Expects the build to fail with a message containing `want`.
static int fails_with(const char *spec, const zt_model_shape *s, int pp, const double *cost,
                      const char *want) {
    zt_partition p;
    zt_status st = zt_partition_build(&p, spec, s, pp, cost);
    const char *msg = zt_error_message();
    printf("  %-28s pp %-2d -> %s\n", spec, pp, st == ZT_OK ? "(built)" : msg);
    if (st == ZT_OK || p.first != NULL || p.n_stages != 0) {
        zt_partition_free(&p);
        fprintf(stderr, "  '%s' pp %d should have failed with \"%s\"\n", spec, pp, want);
        return 0;
    }
    if (!strstr(msg, want)) {
        fprintf(stderr, "  '%s' pp %d: message \"%s\" lacks \"%s\"\n", spec, pp, msg, want);
        return 0;
    }
    return 1;
}

static uint64_t lcg(uint64_t *x) {
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

// Every pp from 1 to 14 on 12 layers: pp <= 12 covers all units with the embed on stage 0,
// the head on the last stage, block counts that differ by at most one and never shrink
// from one stage to the next (the later stages take the extras); pp 13 and 14 fail
// because a stage would get no block.
ZT_TEST(partition_uniform) {
    zt_model_shape s = gpt2_124m();
    for (int pp = 1; pp <= 14; pp++) {
        zt_partition p;
        if (pp > 12) {
            CHECK(fails_with("uniform", &s, pp, NULL,
                             "at least one of the 12 blocks on every stage, so --pp 1"));
            continue;
        }
        CHECK(zt_partition_build(&p, "uniform", &s, pp, NULL) == ZT_OK);
        CHECK(covers(&p, &s, pp));
        int total = 0, lo = 1 << 30, hi = 0;
        for (int i = 0; i < pp; i++) {
            int nb = blocks_in(&p, &s, i);
            CHECK(nb >= 1);
            if (i > 0) CHECK(nb >= blocks_in(&p, &s, i - 1));
            total += nb;
            lo = nb < lo ? nb : lo;
            hi = nb > hi ? nb : hi;
        }
        CHECK_EQ_INT(total, 12);
        CHECK(hi - lo <= 1);
        CHECK_EQ_INT(zt_partition_stage_of(&p, ZT_UNIT_EMBED), 0);
        CHECK_EQ_INT(zt_partition_stage_of(&p, zt_unit_head(&s)), pp - 1);
        for (int u = 0; u < zt_unit_count(&s); u++) {
            int st = zt_partition_stage_of(&p, u);
            CHECK(p.first[st] <= u && u < p.first[st + 1]);
        }
        zt_partition_free(&p);
        zt_partition_free(&p); // free twice is harmless
    }
    // 5 blocks over 2 stages: the second takes the extra one.
    zt_model_shape s5 = shape(5, 64);
    zt_partition p;
    CHECK(zt_partition_build(&p, "uniform", &s5, 2, NULL) == ZT_OK);
    CHECK_EQ_INT(p.first[1], 3);
    zt_partition_free(&p);
    return ZT_PASS;
}

ZT_TEST(partition_format) {
    zt_model_shape s = gpt2_124m();
    zt_partition p;
    char buf[256];
    CHECK(zt_partition_build(&p, "uniform", &s, 4, NULL) == ZT_OK);
    zt_partition_format(&p, &s, buf, sizeof buf);
    printf("  %s\n", buf);
    CHECK(strcmp(buf, "stage 0: embed + blocks 0-2 | stage 1: blocks 3-5 | "
                      "stage 2: blocks 6-8 | stage 3: blocks 9-11 + head") == 0);
    // Truncation stays inside the buffer and terminates it.
    char small[12];
    memset(small, 'x', sizeof small);
    zt_partition_format(&p, &s, small, sizeof small);
    CHECK_EQ_INT(strlen(small), sizeof small - 1);
    CHECK(strncmp(small, "stage 0: em", sizeof small - 1) == 0);
    zt_partition_format(&p, &s, small, 0); // writes nothing
    zt_partition_free(&p);

    CHECK(zt_partition_build(&p, "uniform", &s, 1, NULL) == ZT_OK);
    zt_partition_format(&p, &s, buf, sizeof buf);
    CHECK(strcmp(buf, "stage 0: embed + blocks 0-11 + head") == 0);
    zt_partition_free(&p);

    CHECK(zt_partition_build(&p, "0:2,2:3,3:13,13:14", &s, 4, NULL) == ZT_OK);
    zt_partition_format(&p, &s, buf, sizeof buf);
    printf("  %s\n", buf);
    CHECK(strcmp(buf, "stage 0: embed + block 0 | stage 1: block 1 | stage 2: blocks 2-11 | "
                      "stage 3: head") == 0);
    zt_partition_free(&p);
    return ZT_PASS;
}

// Explicit ranges that give the embed and the head stages of their own.
ZT_TEST(partition_ranges) {
    zt_model_shape s = gpt2_124m();
    zt_partition p;
    CHECK(zt_partition_build(&p, "0:1,1:7,7:13,13:14", &s, 4, NULL) == ZT_OK);
    CHECK(covers(&p, &s, 4));
    int want[5] = {0, 1, 7, 13, 14};
    for (int i = 0; i <= 4; i++) CHECK_EQ_INT(p.first[i], want[i]);
    char buf[256];
    zt_partition_format(&p, &s, buf, sizeof buf);
    CHECK(strcmp(buf, "stage 0: embed | stage 1: blocks 0-5 | stage 2: blocks 6-11 | "
                      "stage 3: head") == 0);
    zt_partition_free(&p);
    // One range covering everything, and one unit per stage.
    CHECK(zt_partition_build(&p, "0:14", &s, 1, NULL) == ZT_OK);
    CHECK(covers(&p, &s, 1));
    zt_partition_free(&p);
    CHECK(zt_partition_build(&p, "0:1,1:2,2:3,3:4,4:5,5:6,6:7,7:8,8:9,9:10,10:11,11:12,12:13,"
                                 "13:14",
                             &s, 14, NULL) == ZT_OK);
    CHECK(covers(&p, &s, 14));
    zt_partition_free(&p);
    return ZT_PASS;
}

// Every way a range list can be wrong, each alone, with the numbers in the message.
ZT_TEST(partition_range_errors) {
    zt_model_shape s = gpt2_124m();
    // A gap between stages.
    CHECK(fails_with("0:1,1:5,7:13,13:14", &s, 4, NULL,
                     "units 5..6 (blocks 4-5) are not in any stage: stage 1 ends at 5 but "
                     "stage 2 starts at 7"));
    // A one-unit gap, and a first range that does not start at 0.
    CHECK(fails_with("0:1,1:6,7:13,13:14", &s, 4, NULL, "unit 6 (block 5) is not in any stage"));
    CHECK(fails_with("1:7,7:13,13:14", &s, 3, NULL,
                     "unit 0 (embed) is not in any stage: the first range starts at 0"));
    // The last range stops short.
    CHECK(fails_with("0:1,1:7,7:12", &s, 3, NULL,
                     "units 12..13 (block 11 + head) are not in any stage: the last range "
                     "must end at 14"));
    // An overlap.
    CHECK(fails_with("0:1,1:8,7:13,13:14", &s, 4, NULL,
                     "unit 7 (block 6) is in both stage 1 (1:8) and stage 2 (7:13)"));
    // Past the last unit (also with a huge number, which must not overflow).
    CHECK(fails_with("0:1,1:7,7:13,13:15", &s, 4, NULL,
                     "range 13:15 of stage 3 goes past the last unit 13: a 12-layer model "
                     "has 14 units (0 = embed, 1..12 = blocks 0-11, 13 = head)"));
    CHECK(fails_with("0:1,1:7,7:13,13:99999999999999999999", &s, 4, NULL,
                     "range 13:99999999999999999999 of stage 3 goes past the last unit 13"));
    // Empty and backwards ranges.
    CHECK(fails_with("0:1,1:7,7:7,7:14", &s, 4, NULL, "range 7:7 of stage 2 is empty"));
    CHECK(fails_with("0:1,7:1,1:14", &s, 3, NULL, "range 7:1 of stage 1 is empty"));
    // The count of ranges against --pp.
    CHECK(fails_with("0:1,1:7,7:13,13:14", &s, 3, NULL,
                     "lists 4 unit ranges but --pp is 3: give one range per stage"));
    CHECK(fails_with("0:14", &s, 2, NULL, "lists 1 unit range but --pp is 2"));
    // Garbage syntax.
    const char *bad[] = {"0:1,,1:14", "0:1,1:14,", ":1,1:14", "0:,1:14", "0:1:2,2:14",
                         "0:1,1", "0::1,1:14", ",0:14"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(fails_with(bad[i], &s, 2, NULL, "is not a unit range"));
    // Not ranges, not a method.
    CHECK(fails_with("0:1;1:14", &s, 2, NULL, "is not known: use uniform, parameters"));
    CHECK(fails_with("balanced", &s, 2, NULL, "--partition 'balanced' is not known"));
    CHECK(fails_with("", &s, 2, NULL, "is not known"));
    return ZT_PASS;
}

// More stages than units fails for every method with the numbers and the fix.
ZT_TEST(partition_too_many_stages) {
    zt_model_shape s = gpt2_124m();
    double cost[14];
    for (int u = 0; u < 14; u++) cost[u] = 1;
    const char *specs[] = {"uniform", "parameters", "memory", "type:transformer:1",
                           "0:1,1:14"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        CHECK(fails_with(specs[i], &s, 20, cost,
                         "--pp 20 needs at least 20 units but a 12-layer model has 14 "
                         "(embed, 12 blocks, head): lower --pp"));
        CHECK(fails_with(specs[i], &s, 15, cost, "--pp 15 needs at least 15 units"));
    }
    CHECK(fails_with("uniform", &s, 0, NULL, "at least 1 stage"));
    // 14 stages is the most: every balancing method then gives one unit per stage.
    zt_partition p;
    CHECK(zt_partition_build(&p, "parameters", &s, 14, NULL) == ZT_OK);
    for (int i = 0; i <= 14; i++) CHECK_EQ_INT(p.first[i], i);
    zt_partition_free(&p);
    return ZT_PASS;
}

// The per-unit parameter counts are those of the layout's table for that unit alone.
ZT_TEST(partition_unit_params) {
    zt_model_shape shapes[2] = {gpt2_124m(), shape(3, 64)};
    for (int k = 0; k < 2; k++) {
        const zt_model_shape *s = &shapes[k];
        double total = 0;
        for (int u = 0; u < zt_unit_count(s); u++) {
            zt_layout lay;
            CHECK(zt_layout_init(&lay, s, u, u + 1, 1, 0, 1) == ZT_OK);
            size_t n = 0;
            for (int i = 0; i < lay.n; i++) n += lay.t[i].numel;
            zt_layout_free(&lay);
            CHECK_EQ_INT((long long)zt_partition_unit_params(s, u), (long long)n);
            total += zt_partition_unit_params(s, u);
        }
        // The whole model plus the last stage's copy of wte (padded vocabulary).
        double C = s->n_embd, Vp = s->padded_vocab;
        double model = (double)zt_model_param_count(s) + (Vp - s->vocab) * C;
        CHECK_EQ_INT((long long)total, (long long)(model + Vp * C));
    }
    return ZT_PASS;
}

// gpt2 shapes at pp 4: balancing parameters leaves the first and last stages fewer blocks
// than uniform (they carry the word embedding) and a largest stage no larger.
ZT_TEST(partition_parameters) {
    zt_model_shape shapes[3] = {gpt2_124m(), shape(24, 1024), shape(36, 1280)};
    for (int k = 0; k < 3; k++) {
        const zt_model_shape *s = &shapes[k];
        int n = zt_unit_count(s);
        double *cost = malloc((size_t)n * sizeof *cost);
        CHECK(cost);
        for (int u = 0; u < n; u++) cost[u] = zt_partition_unit_params(s, u);
        zt_partition par, uni;
        CHECK(zt_partition_build(&par, "parameters", s, 4, NULL) == ZT_OK);
        CHECK(zt_partition_build(&uni, "uniform", s, 4, NULL) == ZT_OK);
        CHECK(covers(&par, s, 4));
        char buf[256];
        zt_partition_format(&par, s, buf, sizeof buf);
        double mp = max_stage(cost, par.first, 4), mu = max_stage(cost, uni.first, 4);
        printf("  L=%d C=%d: %s (max %.1fM vs uniform %.1fM)\n", s->n_layer, s->n_embd, buf,
               mp / 1e6, mu / 1e6);
        CHECK(blocks_in(&par, s, 0) < blocks_in(&uni, s, 0));
        CHECK(blocks_in(&par, s, 3) < blocks_in(&uni, s, 3));
        CHECK(mp <= mu);
        if (k == 0) { // gpt2 124M: embed and head alone, six blocks on each middle stage
            int want[5] = {0, 1, 7, 13, 14};
            for (int i = 0; i <= 4; i++) CHECK_EQ_INT(par.first[i], want[i]);
        }
        zt_partition_free(&par);
        zt_partition_free(&uni);
        free(cost);
    }
    return ZT_PASS;
}

// Brute force over every partition of n units into k stages (boundaries as a bit set of
// the n-1 cut points): the smallest largest stage sum, and the partition the documented
// tie-break picks (smallest sum of squares, then smallest boundaries). Returns the best max.
static double brute(const double *cost, int n, int k, int *best_first, double *best_ss) {
    double best = INFINITY, bss = INFINITY;
    int first[32];
    for (uint32_t mask = 0; mask < (1u << (n - 1)); mask++) {
        if (__builtin_popcount(mask) != k - 1) continue;
        int m = 0;
        first[m++] = 0;
        for (int c = 1; c < n; c++)
            if (mask >> (c - 1) & 1) first[m++] = c;
        first[m] = n;
        double mx = max_stage(cost, first, k), ss = 0;
        for (int i = 0; i < k; i++) {
            double v = stage_sum(cost, first[i], first[i + 1]);
            ss += v * v;
        }
        int better = mx < best || (mx == best && ss < bss);
        if (!better && mx == best && ss == bss) // lexicographically smaller boundaries
            for (int i = 1; i < k; i++)
                if (first[i] != best_first[i]) {
                    better = first[i] < best_first[i];
                    break;
                }
        if (better) {
            best = mx;
            bss = ss;
            memcpy(best_first, first, (size_t)(k + 1) * sizeof *first);
        }
    }
    *best_ss = bss;
    return best;
}

// The balancer is optimal: for every n <= 12 and k <= n, on random integer costs (exact
// in double, many ties: the whole tie-break must match brute force) and random real
// costs (the bottleneck must match bit for bit, as both sum a stage in the same order).
ZT_TEST(partition_balance_optimal) {
    uint64_t x = 12345;
    int cases = 0;
    for (int n = 1; n <= 12; n++)
        for (int k = 1; k <= n; k++)
            for (int rep = 0; rep < 20; rep++) {
                double cost[12];
                int ours[13], theirs[13];
                double ss;
                int integer = rep % 2 == 0;
                for (int u = 0; u < n; u++)
                    cost[u] = integer ? (double)(lcg(&x) % (rep < 10 ? 4 : 50))
                                      : (double)lcg(&x) / 2147483648.0 * 1e8;
                zt_partition_balance(cost, n, k, ours);
                double want = brute(cost, n, k, theirs, &ss);
                CHECK_EQ_INT(ours[0], 0);
                CHECK_EQ_INT(ours[k], n);
                for (int i = 0; i < k; i++) CHECK(ours[i] < ours[i + 1]);
                double got = max_stage(cost, ours, k);
                if (got != want) {
                    fprintf(stderr, "  n=%d k=%d: max %.17g, brute force %.17g\n", n, k, got,
                            want);
                    return ZT_FAIL;
                }
                if (integer)
                    for (int i = 0; i <= k; i++) CHECK_EQ_INT(ours[i], theirs[i]);
                cases++;
            }
    printf("  %d cases match brute force\n", cases);
    // All-equal costs: the later stages take the extra unit, as uniform does.
    double ones[7] = {1, 1, 1, 1, 1, 1, 1};
    int f[4];
    zt_partition_balance(ones, 7, 3, f);
    CHECK(f[1] == 2 && f[2] == 4);
    return ZT_PASS;
}

// Per-type weights: unnamed types weigh 0, a bare type name weighs 1.
ZT_TEST(partition_type_weights) {
    zt_model_shape s = gpt2_124m();
    zt_partition p;
    // Blocks only: 12 blocks over 4 stages, 3 each, embed and head free.
    CHECK(zt_partition_build(&p, "type:transformer", &s, 4, NULL) == ZT_OK);
    CHECK(covers(&p, &s, 4));
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(blocks_in(&p, &s, i), 3);
    zt_partition_free(&p);
    // Embed and head weigh 3 blocks each: 18 over 3 stages = embed + 3 | 6 | 3 + head.
    CHECK(zt_partition_build(&p, "type:embed:3|transformer:1|head:3", &s, 3, NULL) == ZT_OK);
    int want[4] = {0, 4, 10, 14};
    for (int i = 0; i <= 3; i++) CHECK_EQ_INT(p.first[i], want[i]);
    zt_partition_free(&p);
    // Order does not matter, fractional weights are fine.
    CHECK(zt_partition_build(&p, "type:head:1.5|embed:1.5|transformer:0.5", &s, 3, NULL) ==
          ZT_OK);
    for (int i = 0; i <= 3; i++) CHECK_EQ_INT(p.first[i], want[i]);
    zt_partition_free(&p);
    // Errors.
    CHECK(fails_with("type:embed:2|attention:1", &s, 2, NULL, "unit type 'attention' is not known"));
    CHECK(fails_with("type:embed:x", &s, 2, NULL, "the weight 'x' of type embed"));
    CHECK(fails_with("type:embed:-1", &s, 2, NULL, "is not a non-negative number"));
    CHECK(fails_with("type:embed:", &s, 2, NULL, "is not a non-negative number"));
    CHECK(fails_with("type:embed:1||head:1", &s, 2, NULL, "empty type entry"));
    CHECK(fails_with("type:", &s, 2, NULL, "empty type entry"));
    CHECK(fails_with("type:head:1|head:2", &s, 2, NULL, "names type head twice"));
    CHECK(fails_with("type:embed:0|transformer:0", &s, 2, NULL, "every unit weight 0"));
    return ZT_PASS;
}

// Memory: balances the caller's per-unit cost; without one it says the planner is needed.
ZT_TEST(partition_memory) {
    zt_model_shape s = shape(6, 64); // 8 units
    double cost[8] = {5, 1, 1, 1, 1, 1, 1, 9}; // head heavy (the logits)
    zt_partition p;
    CHECK(zt_partition_build(&p, "memory", &s, 3, cost) == ZT_OK);
    CHECK(covers(&p, &s, 3));
    // The best bottleneck is 9 (the head alone); under it the most even split of the rest
    // is 5 | 6 (ties with 6 | 5, and the smaller boundary wins).
    int want[4] = {0, 1, 7, 8};
    for (int i = 0; i <= 3; i++) CHECK_EQ_INT(p.first[i], want[i]);
    CHECK(max_stage(cost, p.first, 3) == 9);
    zt_partition_free(&p);
    CHECK(fails_with("memory", &s, 3, NULL, "the memory planner supplies"));
    return ZT_PASS;
}

// A layout over several unit ranges (an interleaved rank's chunks): the tensors of the
// ranges' own layouts, each once, with the same shapes; wte first when a range holds the
// embed or the head unit, blocks in range order, ln_f last; offsets aligned and increasing.
ZT_TEST(layout_ranges) {
    zt_model_shape s = shape(6, 96);
    const int cases[][2][3] = {// {firsts, lasts} of up to 3 ranges (0: unused)
                               {{0, 3, 6}, {1, 4, 7}},  // rank 0 of p = 3, V = 3: embed alone
                               {{2, 5, 0}, {3, 6, 0}},  // a middle rank: blocks only
                               {{1, 5, 0}, {3, 8, 0}}}; // the last rank: ln_f and tied wte
    const int n_ranges[] = {3, 2, 2};
    for (int k = 0; k < 3; k++) {
        zt_layout all;
        CHECK(zt_layout_init_ranges(&all, &s, n_ranges[k], cases[k][0], cases[k][1], 1, 0,
                                    ZT_ALIGN_ELEMS) == ZT_OK);
        int n = 0;
        size_t end = 0;
        for (int r = 0; r < n_ranges[k]; r++) {
            zt_layout one;
            CHECK(zt_layout_init(&one, &s, cases[k][0][r], cases[k][1][r], 1, 0, ZT_ALIGN_ELEMS) ==
                  ZT_OK);
            for (int i = 0; i < one.n; i++) {
                int j = zt_layout_find(&all, one.t[i].name);
                CHECK(j >= 0);
                CHECK(all.t[j].numel == one.t[i].numel && all.t[j].unit == one.t[i].unit);
                n++; // (one range at most holds wte here)
            }
            zt_layout_free(&one);
        }
        CHECK_EQ_INT(all.n, n);
        for (int i = 0; i < all.n; i++) {
            CHECK(all.t[i].offset % ZT_ALIGN_ELEMS == 0 && all.t[i].offset >= end);
            end = all.t[i].offset + all.t[i].numel;
            if (i > 0 && !all.t[i].tied && all.t[i].unit != zt_unit_head(&s))
                CHECK(all.t[i].unit >= all.t[i - 1].unit || all.t[i - 1].tied);
        }
        int tied = zt_layout_find(&all, "wte.weight");
        CHECK(k == 1 ? tied < 0 : tied == 0 && all.tied_numel > 0);
        if (k == 2) CHECK(strcmp(all.t[all.n - 1].name, "ln_f.bias") == 0);
        CHECK(all.numel >= end);
        zt_layout_free(&all);
    }
    return ZT_PASS;
}
