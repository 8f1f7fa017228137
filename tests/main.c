// The test runner: `zt_tests --list`, `zt_tests NAME...`, or no argument for all.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "blas_core.h"
#include "test.h"
#include "test_table.h"

// The largest |diff| / (atol + rtol*|ref|) of the running test's comparisons (-1: none), printed
// after them: how close a passing test came to its bound (scripts/gpu_checks.sh collects it).
static double g_worst_ratio = -1;

void zt_test_note_ratio(double ratio) {
    if (!(ratio <= g_worst_ratio)) g_worst_ratio = ratio; // NaN sticks
}

int zt_check_close(const char *what, const float *got, const float *ref, size_t n, double atol,
                   double rtol) {
    double worst = 0, maxdiff = 0;
    size_t wi = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        double lim = atol + rtol * fabs((double)ref[i]);
        if (d > maxdiff) maxdiff = d;
        if (!(d <= lim)) bad++;
        double r = d / lim;
        if (!(r <= worst)) { worst = r; wi = i; }
    }
    zt_test_note_ratio(worst);
    printf("  %-28s n=%-8zu max|diff|=%.3g worst at [%zu]: %.9g vs %.9g %s\n", what, n, maxdiff,
           wi, n ? got[wi] : 0.0, n ? ref[wi] : 0.0, bad ? "FAIL" : "ok");
    return bad != 0;
}

// Opened as production opens it (zt_backend_open, which checks its table), with OpenMP's
// default threads; then threads 0, so the kernels size their scratch by
// omp_get_max_threads() when called: tests change the thread count between calls.
const zt_backend *zt_test_cpu(void) {
    static zt_backend cpu;
    if (!cpu.ops) {
        if (zt_backend_open(&cpu, "cpu", &(zt_backend_options){0}) != ZT_OK) {
            zt_error_report(1);
            exit(1);
        }
        cpu.threads = 0;
    }
    return &cpu;
}

int main(int argc, char **argv) {
    zt_blas_init(argv); // the kernels users get (may re-execute: kernels/cpu/blas_core.h)
    int n = (int)(sizeof zt_test_table / sizeof zt_test_table[0]);
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < n; i++) printf("%s\n", zt_test_table[i].name);
        return 0;
    }
    int failed = 0, ran = 0;
    for (int i = 0; i < n; i++) {
        int want = argc == 1;
        for (int a = 1; a < argc; a++) want |= strcmp(argv[a], zt_test_table[i].name) == 0;
        if (!want) continue;
        ran++;
        g_worst_ratio = -1;
        int r = zt_test_table[i].fn();
        if (g_worst_ratio >= 0) printf("  worst error/bound %.3g\n", g_worst_ratio);
        printf("%s %s\n", r == ZT_PASS ? "PASS" : r == ZT_SKIP ? "SKIP" : "FAIL",
               zt_test_table[i].name);
        if (r != ZT_PASS && r != ZT_SKIP) failed++;
        if (argc == 2 && r == ZT_SKIP) return ZT_SKIP;
    }
    if (ran == 0) {
        fprintf(stderr, "no test matches\n");
        return 2;
    }
    return failed ? 1 : 0;
}
