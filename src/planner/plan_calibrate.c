// The CPU's calibration (plan_calibrate.h).
#include "plan_calibrate.h"

#include <math.h>
#include <omp.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>

#include "adamw.h"
#include "backend_profile.h"
#include "grad_norm.h"
#include "gpt2.h"
#include "layout.h"
#include "plan_cost.h"

// Each pass is timed in this many rounds and its fastest round kept: on a shared machine a
// figure moves 20-30% from minute to minute, and other users' work only ever slows a round,
// so the fastest is the machine's own speed and repeats best (docs/design.md, "Step-time
// model").
#define ZT_CAL_ROUNDS 5

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double fastest(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = fmin(m, v[i]);
    return m;
}

// How much the same work's time wanders on this machine (other users' load): the steps'
// standard deviation over the square root of their mean (seconds^1/2), so that a stretch of
// work t wanders by jitter x sqrt(t) (independent slices of time adding up); 0 for fewer
// than 2 steps.
static double jitter_of(const double *walls, int n) {
    if (n < 2) return 0.0;
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < n; i++) mean += walls[i] / n;
    for (int i = 0; i < n; i++) var += (walls[i] - mean) * (walls[i] - mean) / (n - 1);
    return sqrt(var) / sqrt(mean);
}

// One micro-batch's forward and backward `steps` times on the profiled backend: each
// phase's median seconds into secs[]; returns the steps' jitter (jitter_of).
static double time_passes(const zt_plan_spec *s, const zt_backend *be, zt_profile *acc,
                          int steps, FILE *progress, const char *what, double *secs) {
    zt_dtype dt = s->param_bytes == 2 ? ZT_BF16 : ZT_F32;
    int units = zt_unit_count(&s->shape);
    zt_gpt2 m;
    ZT_ASSERT(zt_gpt2_init(&m, be, &s->shape, 0, units, 1, 0, ZT_ALIGN_ELEMS, ZT_ALIGN_ELEMS,
                           s->micro_batch, s->seq, s->loss_chunk, 1, NULL, dt,
                           &(zt_act_options){s->recompute, 0, 0}) == ZT_OK);
    zt_gpt2_init_random(&m, 1);
    size_t BT = (size_t)s->micro_batch * s->seq;
    int32_t *tok = be->ops->alloc(be, ZT_MEM_WORKSPACE, 2 * BT * sizeof(int32_t));
    int32_t *h = be->ops->map(be, tok, 2 * BT * sizeof(int32_t), 0);
    for (size_t i = 0; i < 2 * BT; i++) h[i] = (int32_t)((i * 7919u) % (unsigned)s->shape.vocab);
    be->ops->unmap(be, tok, h, 2 * BT * sizeof(int32_t), 1);
    double *per = calloc((size_t)steps * (ZT_PHASE_COUNT + 1), sizeof *per);
    ZT_ASSERT(per);
    double *walls = per + (size_t)steps * ZT_PHASE_COUNT;
    for (int i = -1; i < steps; i++) { // step -1 warms the caches and the threads
        zt_profile before = *acc;
        double t0 = now_s();
        zt_gpt2_forward(&m, tok, NULL, tok + BT, 1, 1.0f);
        zt_gpt2_backward(&m, tok, NULL, NULL);
        be->ops->sync(be);
        zt_profile d;
        zt_profile_diff(&d, acc, &before);
        if (progress)
            fprintf(progress, "calibrating %s: step %d of %d, %.3f s\n", what, i + 2, steps + 1,
                    now_s() - t0);
        for (int p = 0; i >= 0 && p < ZT_PHASE_COUNT; p++)
            per[(size_t)p * steps + i] = d.wall[p];
        if (i >= 0) walls[i] = now_s() - t0;
    }
    for (int p = 0; p < ZT_PHASE_COUNT; p++) secs[p] = median(per + (size_t)p * steps, steps);
    double jitter = jitter_of(walls, steps);
    free(per);
    be->ops->free(be, tok);
    zt_gpt2_free(&m);
    return jitter;
}

// One decayed tensor of n elements: the optimizer's calibration runs the trainer's calls on
// it and prices them with the same calls recorded (zt_plan_optimizer_work).
static zt_layout one_tensor(zt_tensor_desc *t, size_t n) {
    memset(t, 0, sizeof *t);
    t->numel = n;
    t->decay = 1;
    return (zt_layout){.t = t, .n = 1, .align = ZT_ALIGN_ELEMS, .numel = n};
}

// The optimizer's and the gradient norm's seconds on lay (fp32 AdamW over all of it, as the
// trainer calls them), `steps` times, the median of each.
static void time_optimizer(const zt_backend *be, zt_profile *acc, int steps,
                           const zt_layout *lay, double *opt_s, double *norm_s) {
    size_t n = lay->numel;
    float *params = zt_be_alloc(be, ZT_MEM_PARAMS, n * sizeof(float));
    float *grads = zt_be_alloc(be, ZT_MEM_GRADS, n * sizeof(float));
    be->ops->memset(be, params, 0, n * sizeof(float));
    be->ops->memset(be, grads, 0, n * sizeof(float));
    zt_adamw opt;
    zt_adamw_init(&opt, be, 0, n, ZT_F32);
    const zt_adamw_config c = {1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
    double *o = calloc(2 * (size_t)steps, sizeof *o), *g = o + steps;
    ZT_ASSERT(o);
    for (int i = -1; i < steps; i++) {
        zt_profile before = *acc, d;
        double sq[2];
        zt_grad_sumsq(be, sq, grads, ZT_F32, lay, 0, n, 1, 1);
        zt_adamw_step(&opt, params, grads, lay, &c, c.lr, 1.0f);
        zt_profile_diff(&d, acc, &before);
        if (i >= 0) o[i] = d.wall[ZT_PHASE_OPTIMIZER], g[i] = d.wall[ZT_PHASE_GRAD_NORM];
    }
    *opt_s = median(o, steps);
    *norm_s = median(g, steps);
    free(o);
    zt_adamw_free(&opt);
    zt_be_free(be, grads);
    zt_be_free(be, params);
}

// Bytes per second of one large copy (the shared-memory links' stand-in).
static double copy_bandwidth(void) {
    size_t n = (size_t)64 << 20;
    char *a = malloc(n), *b = malloc(n);
    ZT_ASSERT(a && b);
    memset(a, 1, n);
    memset(b, 2, n);
    double best = 0.0;
    for (int i = 0; i < 5; i++) {
        double t0 = now_s();
        memcpy(b, a, n);
        double t = now_s() - t0;
        best = fmax(best, (double)n / t);
    }
    free(a);
    free(b);
    return best;
}

// A fixed arithmetic loop (no memory traffic), for the cores measurement.
static double spin_work(long n) {
    volatile double x = 1.0;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
    return x;
}

// The cores concurrent threads reach now: `n` threads each doing the work one thread does
// alone take longer in proportion to what they share (other users' processes included).
static double measure_cores(int n) {
    long work = 20000000;
    double t0 = now_s();
    spin_work(work);
    double one = now_s() - t0;
    t0 = now_s();
#pragma omp parallel num_threads(n)
    spin_work(work);
    double all = now_s() - t0;
    return fmin((double)n, n * one / all);
}

static double sum_of(const double *v) {
    double t = 0.0;
    for (int p = 0; p < ZT_PHASE_COUNT; p++) t += v[p];
    return t;
}

// The cores n ranks reach now with the model's own step (1 thread each), once: the step
// alone, then n processes running it at once (n - 1 forked copies beside this one: ranks as
// MPI starts them), cores = n x alone / together. Other users' load and the memory bus the
// ranks share are in it, as they will be in a run.
static double rank_cores_once(const zt_plan_spec *s, const zt_backend *be, zt_profile *acc,
                              int steps, int n) {
    double secs[ZT_PHASE_COUNT];
    time_passes(s, be, acc, steps, NULL, "", secs);
    double alone = sum_of(secs);
    fflush(NULL);
    pid_t *kids = calloc((size_t)n, sizeof *kids);
    ZT_ASSERT(kids);
    for (int i = 1; i < n; i++) {
        kids[i] = fork();
        ZT_ASSERT(kids[i] >= 0);
        if (kids[i] == 0) { // a copy that keeps the others company a step longer
            time_passes(s, be, acc, steps + 1, NULL, "", secs);
            _exit(0);
        }
    }
    time_passes(s, be, acc, steps, NULL, "", secs);
    double together = sum_of(secs);
    for (int i = 1; i < n; i++) waitpid(kids[i], NULL, 0);
    free(kids);
    return fmin((double)n, n * alone / together);
}

// The cores n ranks reach now: the median of ZT_CAL_ROUNDS measurements. With more threads
// per rank (OpenMP's pool does not survive fork), the spinning threads' figure.
static double measure_rank_cores(const zt_plan_spec *s, const zt_backend *be, zt_profile *acc,
                                 int steps, int n, FILE *progress) {
    if (n <= 1) return 1.0;
    if (s->threads != 1) return measure_cores(n * s->threads) / s->threads;
    if (progress)
        fprintf(progress, "calibrating cores: the step alone, then %d at once (%d rounds)\n", n,
                ZT_CAL_ROUNDS);
    double cores[ZT_CAL_ROUNDS];
    for (int r = 0; r < ZT_CAL_ROUNDS; r++) cores[r] = rank_cores_once(s, be, acc, steps, n);
    return median(cores, ZT_CAL_ROUNDS);
}

// Half a round trip between two threads that take turns through one shared flag, yielding
// while they wait (as MPI's ranks do on an oversubscribed machine): a message's latency
// between two ranks of this machine, the scheduler's delays included. The mean of `n`.
static double measure_latency(int n) {
    volatile int turn = 0;
    double *t = calloc((size_t)n, sizeof *t);
    ZT_ASSERT(t);
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
        for (int i = 0; i < n; i++) {
            double t0 = now_s();
            if (me == 0) {
                __atomic_store_n(&turn, 1, __ATOMIC_RELEASE);
                while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 0) sched_yield();
                t[i] = (now_s() - t0) / 2.0;
            } else {
                while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 1) sched_yield();
                __atomic_store_n(&turn, 0, __ATOMIC_RELEASE);
            }
        }
    }
    double sum = 0.0; // the mean: a message now and then waits a scheduler's time slice
    for (int i = 0; i < n; i++) sum += t[i];
    free(t);
    return sum / n;
}

// The recorded work of the timed passes.
static zt_record work_of(const zt_plan_spec *s) {
    zt_plan_stage_work w;
    ZT_ASSERT(zt_plan_stage_work_of(s, 0, zt_unit_count(&s->shape), 0, &w) == ZT_OK);
    zt_record r = w.f.ops;
    for (int p = 0; p < ZT_PHASE_COUNT; p++) {
        r.flops[p] += w.b.ops.flops[p];
        r.bytes[p] += w.b.ops.bytes[p];
        r.calls[p] += w.b.ops.calls[p];
    }
    return r;
}

static double units_of(const zt_record *r, int p) {
    return p == ZT_PHASE_GEMM || p == ZT_PHASE_ATTENTION ? r->flops[p] : r->bytes[p];
}

// Each phase's rate and per-call time from two micro-batch sizes: the same calls, twice the
// work, so the difference of the times is the work's and the rest the calls'. Where noise
// makes that fit meaningless (a rate or a per-call time below 0), the larger size's
// average rate with no per-call time.
static void fit(const zt_record *w1, const double *t1, const zt_record *w2, const double *t2,
                zt_plan_device *d, int dt) {
    for (int p = 0; p < ZT_PHASE_COUNT; p++) {
        double u1 = units_of(w1, p), u2 = units_of(w2, p);
        if (u2 <= 0 || t2[p] <= 0) continue;
        double rate = (u2 - u1) / (t2[p] - t1[p]);
        double per_call = w2->calls[p] ? (t2[p] - u2 / rate) / w2->calls[p] : 0.0;
        if (!(rate > 0) || !(per_call >= 0) || t2[p] <= t1[p]) rate = u2 / t2[p], per_call = 0;
        d->rate[p][dt] = rate;
        if (dt == 0) d->op_latency[p] = per_call;
    }
}

// One dtype's two micro-batch sizes, ZT_CAL_ROUNDS rounds of each, alternating which
// goes first (a drift of the machine's load then lands on both sizes alike): each phase's
// fastest round into t1 (small) and t2 (big). Returns the rounds' spread: (the
// slowest less the fastest) over the median of the big size's whole pass.
static double time_sizes(const zt_plan_spec *small, const zt_plan_spec *big, const zt_backend *be,
                         zt_profile *acc, int steps, FILE *progress, const char *dtype,
                         double *t1, double *t2, double *jitter) {
    double r1[ZT_PHASE_COUNT][ZT_CAL_ROUNDS], r2[ZT_PHASE_COUNT][ZT_CAL_ROUNDS];
    double total[ZT_CAL_ROUNDS], jit[ZT_CAL_ROUNDS], secs[ZT_PHASE_COUNT];
    for (int r = 0; r < ZT_CAL_ROUNDS; r++) {
        for (int k = 0; k < 2; k++) {
            int is_big = (r + k) % 2;
            const zt_plan_spec *s = is_big ? big : small;
            char what[96];
            snprintf(what, sizeof what, "%s, micro-batch %d, round %d of %d", dtype,
                     s->micro_batch, r + 1, ZT_CAL_ROUNDS);
            double j = time_passes(s, be, acc, steps, progress, what, secs);
            for (int p = 0; p < ZT_PHASE_COUNT; p++) (is_big ? r2 : r1)[p][r] = secs[p];
            if (is_big) total[r] = sum_of(secs), jit[r] = j;
        }
    }
    for (int p = 0; p < ZT_PHASE_COUNT; p++) {
        t1[p] = fastest(r1[p], ZT_CAL_ROUNDS);
        t2[p] = fastest(r2[p], ZT_CAL_ROUNDS);
    }
    *jitter = median(jit, ZT_CAL_ROUNDS);
    double lo = total[0], hi = total[0];
    for (int r = 1; r < ZT_CAL_ROUNDS; r++) lo = fmin(lo, total[r]), hi = fmax(hi, total[r]);
    return (hi - lo) / median(total, ZT_CAL_ROUNDS);
}

zt_status zt_plan_calibrate(const zt_plan_spec *s, int steps, FILE *progress, zt_plan_device *d) {
    memset(d, 0, sizeof *d);
    zt_backend cpu, prof;
    ZT_TRY(zt_backend_open(&cpu, "cpu", &(zt_backend_options){.threads = s->threads,
                                                              .local_rank = -1}));
    zt_profile acc = {0};
    zt_backend_profile_state st;
    zt_backend_profile_init(&prof, &st, &cpu, &acc);
    snprintf(d->name, sizeof d->name, "this machine's CPU, %d thread%s per rank", s->threads,
             s->threads == 1 ? "" : "s");
    snprintf(d->backend, sizeof d->backend, "cpu");
    d->host = 1;
    d->threads = s->threads;
    for (int p = 0; p < ZT_PHASE_COUNT; p++) d->rate[p][0] = d->rate[p][1] = 1e9; // unused
    double t1[ZT_PHASE_COUNT], t2[ZT_PHASE_COUNT];
    for (int dt = 0; dt < 2; dt++) {
        zt_plan_spec big = *s, small;
        big.param_bytes = dt ? 2 : 4;
        big.recompute = (zt_recompute){ZT_RECOMPUTE_NONE, 0};
        small = big;
        small.micro_batch = big.micro_batch > 1 ? big.micro_batch / 2 : 1;
        if (small.micro_batch == big.micro_batch) big.micro_batch *= 2;
        if (dt && !cpu.caps->bf16) break;
        double jitter;
        double spread = time_sizes(&small, &big, &prof, &acc, steps, progress,
                                   dt ? "bf16" : "fp32", t1, t2, &jitter);
        if (dt == 0) d->jitter = jitter, d->spread = spread;
        zt_record w1 = work_of(&small), w2 = work_of(&big);
        fit(&w1, t1, &w2, t2, d, dt);
    }
    if (!cpu.caps->bf16)
        for (int p = 0; p < ZT_PHASE_COUNT; p++) d->rate[p][1] = d->rate[p][0];
    zt_tensor_desc t;
    zt_layout lay = one_tensor(&t, (size_t)1 << 22);
    double opt = 0, norm = 0;
    time_optimizer(&prof, &acc, steps, &lay, &opt, &norm);
    zt_record ow;
    zt_plan_spec o = *s;
    o.param_bytes = 4;
    o.is_8bit = 0;
    ZT_ASSERT(zt_plan_optimizer_work(&o, &lay, 0, lay.numel, 1, &ow) == ZT_OK);
    d->rate[ZT_PHASE_OPTIMIZER][0] = d->rate[ZT_PHASE_OPTIMIZER][1] =
        ow.bytes[ZT_PHASE_OPTIMIZER] / opt;
    d->rate[ZT_PHASE_GRAD_NORM][0] = d->rate[ZT_PHASE_GRAD_NORM][1] =
        ow.bytes[ZT_PHASE_GRAD_NORM] / norm;
    d->peak_flops[0] = d->rate[ZT_PHASE_GEMM][0];
    d->peak_flops[1] = d->rate[ZT_PHASE_GEMM][1];
    double bw = copy_bandwidth();
    // MPI's shared memory copies a message in and out: half the copy bandwidth (assumed)
    double lat = measure_latency(2000);
    // at least the threads the rates were measured on: their slowdown is in the rates
    zt_plan_spec one = *s;
    one.param_bytes = 4;
    one.recompute = (zt_recompute){ZT_RECOMPUTE_NONE, 0};
    int ranks = omp_get_num_procs() / (s->threads > 0 ? s->threads : 1);
    d->cores = s->threads * fmax(1.0, measure_rank_cores(&one, &prof, &acc, steps,
                                                         ranks, progress));
    d->intra = d->inter = (zt_plan_link){bw / 2.0, lat};
    d->rate_src = d->peak_src = ZT_FIG_MEASURED;
    d->link_src = ZT_FIG_ASSUMED; // the bandwidth (the latency is measured: the note says)
    d->memory_src = ZT_FIG_MEASURED;
    char load[32] = "unknown";
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%31s", load) != 1) snprintf(load, sizeof load, "unknown");
        fclose(lf);
    }
    time_t now = time(NULL);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    snprintf(d->note, sizeof d->note,
             "measured %s at --micro-batch %d --seq %d, %d layers of %d channels (load %s); "
             "each figure the fastest of %d rounds, the step's spread over them %.0f%%; "
             "peak = the measured GEMM rate; link: half the copy bandwidth (%.2g GB/s: MPI's "
             "shared memory copies in and out, assumed), latency a thread ping-pong's",
             when, s->micro_batch, s->seq, s->shape.n_layer, s->shape.n_embd, load,
             ZT_CAL_ROUNDS, 100.0 * d->spread, bw / 1e9);
    zt_backend_close(&cpu);
    return ZT_OK;
}
