// The position-dependent min-max partition (the `memory` method's balancer) against
// brute force over every partition.
#include <stdlib.h>

#include "partition.h"
#include "test.h"

typedef struct {
    double unit[16]; // per-unit cost
    double scale[16]; // per-stage factor: the same units cost an early stage more
} costs;

static double cost_fn(void *ctx, int stage, int first, int last) {
    const costs *c = ctx;
    double s = 0;
    for (int u = first; u < last; u++) s += c->unit[u];
    return s * c->scale[stage];
}

// Smallest largest stage cost over every partition of units [first, n) into stages
// [stage, k), by enumeration.
static double brute(const costs *c, int n, int k, int stage, int first) {
    if (stage == k - 1) return cost_fn((void *)c, stage, first, n);
    double best = INFINITY;
    for (int end = first + 1; end <= n - (k - 1 - stage); end++) {
        double here = cost_fn((void *)c, stage, first, end);
        double rest = brute(c, n, k, stage + 1, end);
        double v = here > rest ? here : rest;
        if (v < best) best = v;
    }
    return best;
}

// Smallest sum of squared stage costs over the partitions of [first, n) into stages
// [stage, k) whose every stage costs at most cap (INFINITY if none): the evenness
// tie-break among the min-max optima.
static double brute_sq(const costs *c, int n, int k, int stage, int first, double cap) {
    if (stage == k - 1) {
        double v = cost_fn((void *)c, stage, first, n);
        return v <= cap ? v * v : INFINITY;
    }
    double best = INFINITY;
    for (int end = first + 1; end <= n - (k - 1 - stage); end++) {
        double here = cost_fn((void *)c, stage, first, end);
        if (here > cap) continue;
        double rest = brute_sq(c, n, k, stage + 1, end, cap);
        if (here * here + rest < best) best = here * here + rest;
    }
    return best;
}

ZT_TEST(partition_staged_optimal) {
    srand(7);
    for (int trial = 0; trial < 300; trial++) {
        costs c;
        int n = 1 + rand() % 12, k = 1 + rand() % n;
        for (int u = 0; u < n; u++) c.unit[u] = rand() % 100;
        for (int s = 0; s < k; s++) c.scale[s] = 1.0 + (k - s) * (rand() % 4) / 4.0;
        zt_partition p;
        CHECK(zt_partition_build_staged(&p, n, k, cost_fn, &c) == ZT_OK);
        CHECK_EQ_INT(p.n_stages, k);
        CHECK_EQ_INT(p.first[0], 0);
        CHECK_EQ_INT(p.first[k], n);
        double worst = 0, sumsq = 0;
        for (int s = 0; s < k; s++) {
            CHECK(p.first[s] < p.first[s + 1]);
            double v = cost_fn(&c, s, p.first[s], p.first[s + 1]);
            worst = v > worst ? v : worst;
            sumsq += v * v;
        }
        double opt = brute(&c, n, k, 0, 0);
        CHECK_NEAR(worst, opt, 0, 0); // sums of multiples of 1/4: exact
        CHECK_NEAR(sumsq, brute_sq(&c, n, k, 0, 0, opt), 0, 0); // the most even optimum
        zt_partition_free(&p);
    }
    zt_partition p;
    CHECK(zt_partition_build_staged(&p, 3, 4, cost_fn, NULL) == ZT_ERR);
    return ZT_PASS;
}
