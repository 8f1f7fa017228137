// The vocab-parallel cross entropy (src/model/vocab_loss.c) on 2-4 MPI ranks, each holding one
// slice of the padded vocabulary, against a double-precision serial cross entropy of the
// whole row. Run by tests/sh/vocab_loss_mpi.sh.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi.h"
#include "layout.h"
#include "rng.h"
#include "test.h"
#include "vocab_loss.h"

// One case on the world communicator. Rows of logits offset + spread * N(0, 1) over the
// real columns (the same on every rank: a function of (row, column)), one row with a
// +1e4 spike, and 1e30 in the padding columns, which must take no probability and get
// a zero gradient. Targets walk through every real column range, so every rank holding
// real tokens owns some targets. Returns the number of failed checks on this rank.
static int check_case(const zt_comm *tp, const char *name, int V, float offset, float spread,
                      double atol_loss, double atol_grad) {
    const int n = 37;
    const float scale = 1.0f / 64;
    int size = tp->size, rank = tp->rank, Vp = zt_padded_vocab(V, size), Vl = Vp / size;
    int lo = rank * Vl, fails = 0;
    float *x = malloc((size_t)n * Vl * sizeof(float)), *dx = malloc((size_t)n * Vl * sizeof(float));
    float *losses = malloc(n * sizeof(float)), *work = malloc(3 * n * sizeof(float));
    int32_t *targets = malloc(n * sizeof(int32_t));
    double *row = malloc((size_t)Vp * sizeof(double));
    for (int r = 0; r < n; r++) {
        targets[r] = (int32_t)(((long)r * 7919) % V); // spread over [0, V)
        for (int i = 0; i < Vl; i++) {
            int g = lo + i;
            x[(size_t)r * Vl + i] = g < V ? offset + spread * zt_normal(99, (uint64_t)r * Vp + g)
                                          : 1e30f;
        }
        if (r == 3 && (V - 1) / Vl == rank) x[(size_t)r * Vl + (V - 1 - lo)] += 1e4f; // spike
    }
    zt_vocab_parallel_ce(zt_test_cpu(), tp, dx, losses, x, ZT_F32, targets, scale, n, V, Vp,
                         work);
    double worst_loss = 0, worst_grad = 0;
    for (int r = 0; r < n; r++) {
        // the whole real row, rebuilt the way every rank built its slice
        double m = -INFINITY, s = 0;
        for (int g = 0; g < V; g++) {
            row[g] = offset + spread * zt_normal(99, (uint64_t)r * Vp + g);
            if (r == 3 && g == V - 1) row[g] = (double)(float)((float)row[g] + 1e4f);
            row[g] = (double)(float)row[g];
            m = row[g] > m ? row[g] : m;
        }
        for (int g = 0; g < V; g++) s += exp(row[g] - m);
        double lse = m + log(s), loss = lse - row[targets[r]];
        // the spike row's loss is ~1e4: float holds it to a relative 2^-24 per rounding
        // (lse and the difference), so 4 ulp relative on top of atol
        double err = fabs(losses[r] - loss) - 2.4e-7 * fabs(loss);
        worst_loss = fmax(worst_loss, err);
        if (!(err <= atol_loss)) fails++;
        for (int i = 0; i < Vl; i++) {
            int g = lo + i;
            double want = g < V ? scale * (exp(row[g] - lse) - (g == targets[r])) : 0.0;
            float got = dx[(size_t)r * Vl + i];
            if (g >= V && got != 0.0f) fails++; // padding: exactly zero
            worst_grad = fmax(worst_grad, fabs(got - want));
            if (!(fabs(got - want) <= atol_grad)) fails++;
        }
    }
    // every rank reports the same losses, bit for bit
    float *all = malloc((size_t)n * size * sizeof(float));
    zt_comm_all_gather(tp, losses, all, (size_t)n * size, ZT_F32, NULL);
    for (int k = 1; k < size; k++)
        if (memcmp(all, all + (size_t)k * n, n * sizeof(float)) != 0) fails++;
    if (rank == 0)
        printf("  %s: %d ranks, V %d (Vp %d): worst loss diff beyond 4 ulp %.2e (atol %.0e), grad diff "
               "%.2e (atol %.0e)\n", name, size, V, Vp, worst_loss, atol_loss, worst_grad,
               atol_grad);
    if (fails) fprintf(stderr, "  %s: rank %d: %d checks failed\n", name, rank, fails);
    free(all);
    free(x);
    free(dx);
    free(losses);
    free(work);
    free(targets);
    free(row);
    return fails;
}

ZT_TEST(vocab_loss_mpi) {
    if (!getenv("OMPI_COMM_WORLD_SIZE")) {
        printf("  not launched by mpirun: skipped (tests/sh/vocab_loss_mpi.sh runs it)\n");
        return ZT_SKIP;
    }
    zt_comm world;
    zt_comm_mpi_init_world(&world, NULL, NULL);
    int fails = 0;
    // Tolerances as in the serial kernel test (test_kernels.c, kernel_crossentropy), for
    // a row of up to 500 terms: O(1) logits give a loss error of a few ulp of lse (~3)
    // plus the float sum of 500 exps (relative ~500 * 6e-8 worst case, ~1e-6 typical),
    // so 1e-5; the gradient scale * softmax carries the same relative error on values
    // below scale: 2e-7. Logits near 1e4: lse is known to half an ulp of 1e4 (4.9e-4),
    // so the loss to ~1e-3 and the softmax to a relative 1e-3.
    fails += check_case(&world, "logits ~ N(0, 2), 500 tokens", 500, 0.0f, 2.0f, 1e-5, 2e-7);
    fails += check_case(&world, "logits ~ 1e4 + N(0, 1)", 500, 1e4f, 1.0f, 2e-3, 2e-5);
    // 300 tokens: on 4 ranks slice 3 (384..511) is padding only; the spike row's
    // softmax is one-hot
    fails += check_case(&world, "300 tokens, a slice of padding only", 300, 0.0f, 2.0f, 1e-5,
                        2e-7);
    int32_t mine = fails, any = 0;
    zt_comm_all_reduce(&world, &mine, &any, 1, ZT_I32, ZT_REDUCE_SUM, NULL);
    zt_comm_free(&world);
    zt_comm_mpi_finalize();
    return any ? ZT_FAIL : ZT_PASS;
}
