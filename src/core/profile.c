// Phase accounting for `--profile` (profile.h).
#include "profile.h"

#include <time.h>

static const char *const phase_names[ZT_PHASE_COUNT] = {
    "gemm", "attention", "loss", "elementwise", "optimizer", "grad_norm", "memory", "comm"};

const char *zt_phase_name(zt_phase p) {
    return p >= 0 && p < ZT_PHASE_COUNT ? phase_names[p] : "?";
}

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void zt_profile_begin(zt_profile_mark *m) {
    m->wall = clock_s(CLOCK_MONOTONIC);
    m->cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

double zt_profile_end(zt_profile *p, const zt_profile_mark *m, zt_phase phase, double flops) {
    double wall = clock_s(CLOCK_MONOTONIC) - m->wall;
    p->wall[phase] += wall;
    p->cpu[phase] += clock_s(CLOCK_PROCESS_CPUTIME_ID) - m->cpu;
    p->flops[phase] += flops;
    p->calls[phase]++;
    return wall;
}

void zt_profile_diff(zt_profile *out, const zt_profile *after, const zt_profile *before) {
    for (int i = 0; i < ZT_PHASE_COUNT; i++) {
        out->wall[i] = after->wall[i] - before->wall[i];
        out->cpu[i] = after->cpu[i] - before->cpu[i];
        out->flops[i] = after->flops[i] - before->flops[i];
        out->calls[i] = after->calls[i] - before->calls[i];
    }
}

void zt_profile_add(zt_profile *acc, const zt_profile *d) {
    for (int i = 0; i < ZT_PHASE_COUNT; i++) {
        acc->wall[i] += d->wall[i];
        acc->cpu[i] += d->cpu[i];
        acc->flops[i] += d->flops[i];
        acc->calls[i] += d->calls[i];
    }
}

static double timed_s(const zt_profile *d) {
    double s = 0;
    for (int i = 0; i < ZT_PHASE_COUNT; i++) s += d->wall[i];
    return s;
}

void zt_profile_write_json(FILE *f, const zt_profile *d, double step_s) {
    fputc('{', f);
    for (int i = 0; i < ZT_PHASE_COUNT; i++)
        fprintf(f, "\"%s\":%.3f,", phase_names[i], 1e3 * d->wall[i]);
    fprintf(f, "\"other\":%.3f},\"phase_gflop\":{", 1e3 * (step_s - timed_s(d)));
    const char *sep = "";
    for (int i = 0; i < ZT_PHASE_COUNT; i++)
        if (d->flops[i] > 0) {
            fprintf(f, "%s\"%s\":%.3f", sep, phase_names[i], d->flops[i] / 1e9);
            sep = ",";
        }
    fputc('}', f);
}

void zt_profile_print(FILE *f, const zt_profile *d, int steps, double step_s, int threads) {
    if (steps < 1 || step_s <= 0) return;
    fprintf(f, "profile: %d steps, %.1f ms per step, %d threads\n", steps, 1e3 * step_s, threads);
    fprintf(f, "  %-12s %9s %7s %9s %8s %9s\n", "phase", "ms/step", "share", "GFLOP/s", "busy",
            "calls");
    for (int i = 0; i < ZT_PHASE_COUNT; i++) {
        double w = d->wall[i] / steps;
        char gf[16] = "-", busy[16] = "-";
        if (d->flops[i] > 0 && d->wall[i] > 0)
            snprintf(gf, sizeof gf, "%.0f", d->flops[i] / d->wall[i] / 1e9);
        if (d->wall[i] > 0)
            snprintf(busy, sizeof busy, "%.0f%%", 100.0 * d->cpu[i] / (d->wall[i] * threads));
        fprintf(f, "  %-12s %9.1f %6.1f%% %9s %8s %9ld\n", phase_names[i], 1e3 * w,
                100.0 * w / step_s, gf, busy, d->calls[i] / steps);
    }
    double other = step_s - timed_s(d) / steps;
    fprintf(f, "  %-12s %9.1f %6.1f%%\n", "other", 1e3 * other, 100.0 * other / step_s);
}
