// `zerotrain plan` (plan_cli.h): its own flags, the question from the train flags, the
// ranked answer as text or JSON, and --calibrate.
#include "plan_cli.h"

#include <errno.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "host_memory.h"
#include "plan_calibrate.h"
#include "plan_ops_cli.h"
#include "plan_search.h"
#include "plan_spec.h"

void zt_plan_usage(FILE *f) {
    fprintf(f,
            "usage: zerotrain plan --world N --device NAME|FILE --global-batch B [--top K]\n"
            "                      [--json] [--mem-limit BYTES] [--gpus-per-node G] [train flags]\n"
            "       zerotrain plan --calibrate [--calibration FILE] [--calibrate-steps N]\n"
            "                      [--model ... --seq T --micro-batch B --threads N]\n"
            "       zerotrain plan --ops-json FILE --device NAME|FILE [train flags]\n"
            "  the fastest layouts of N ranks that fit, predicted: every dp x pp x tp (tp within\n"
            "  a machine of G ranks), micro-batch and --grad-accum giving B sequences a step,\n"
            "  --zero, --optim, --param-dtype, --recompute, --sequence-parallel, --schedule,\n"
            "  --partition, --overlap-comm; a train flag given fixes its dimension. Each with\n"
            "  its step time by part, per-rank peak bytes, MFU and the flags that run it\n"
            "  (docs/design.md, \"Step-time model\"). --device: h100, h200, a100 (vendor peaks),\n"
            "  cpu (this machine as --calibrate measured it), or a JSON file of the same\n"
            "  figures. Memory per rank: --mem-limit, else the device's (cpu: this machine's\n"
            "  available memory, shared by its ranks). --top K: the K fastest (default 10).\n"
            "  --calibrate measures this machine's op rates at the model flags' shapes and\n"
            "  stores them in --calibration (default $XDG_CACHE_HOME/zerotrain/cpu.json, else\n"
            "  ~/.cache/zerotrain/cpu.json), where --device cpu reads them.\n"
            "  --ops-json FILE (with --device): one step's ops at the train flags' shapes on\n"
            "  the device's backend, per op and call shape, written to FILE as JSON (one\n"
            "  rank, the whole model; bench/gpu_model.py prices them). Nothing else runs.\n"
            "  The train flags:\n\n");
    zt_config_print_help(f);
}

typedef struct {
    int world, top, json, calibrate, steps;
    long global_batch;
    char device[512], calibration[512], ops_json[512];
} plan_args;

static zt_status positive(const char *flag, const char *v, long *out) {
    char *end = NULL;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || x < 1 || x > (1L << 30))
        return zt_errorf("%s needs a whole number from 1 to 2^30 (got %s)", flag,
                         v ? v : "nothing");
    *out = x;
    return ZT_OK;
}

static void default_calibration(char *out, size_t size) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0]) snprintf(out, size, "%s/zerotrain/cpu.json", xdg);
    else snprintf(out, size, "%s/.cache/zerotrain/cpu.json", home ? home : ".");
}

// The command's own flags out of argv; the rest (train's) into rest[0..*n).
static zt_status split_args(int argc, char **argv, plan_args *a, char **rest, int *n) {
    memset(a, 0, sizeof *a);
    a->top = 10;
    a->steps = 5;
    default_calibration(a->calibration, sizeof a->calibration);
    *n = 0;
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x = 0;
        int *into = !strcmp(f, "--world") ? &a->world : !strcmp(f, "--top") ? &a->top
                    : !strcmp(f, "--calibrate-steps") ? &a->steps : NULL;
        if (!strcmp(f, "--json")) a->json = 1;
        else if (!strcmp(f, "--calibrate")) a->calibrate = 1;
        else if (into) {
            ZT_TRY(positive(f, v, &x));
            *into = (int)x;
            i++;
        } else if (!strcmp(f, "--global-batch")) {
            ZT_TRY(positive(f, v, &a->global_batch));
            i++;
        }
        else if (!strcmp(f, "--device") || !strcmp(f, "--calibration") ||
                 !strcmp(f, "--ops-json")) {
            if (!v || !v[0]) return zt_errorf("%s needs a value", f);
            snprintf(!strcmp(f, "--device") ? a->device
                     : !strcmp(f, "--ops-json") ? a->ops_json : a->calibration,
                     sizeof a->device, "%s", v);
            i++;
        } else rest[(*n)++] = argv[i];
    }
    return ZT_OK;
}

// Whether train flag `name` (with "--") is among the given ones (as "--name" or "--name=").
static int given(char **rest, int n, const char *name) {
    size_t len = strlen(name);
    for (int i = 0; i < n; i++)
        if (!strncmp(rest[i], name, len) && (rest[i][len] == 0 || rest[i][len] == '='))
            return 1;
    return 0;
}

static void fixed_of(char **rest, int n, zt_plan_fixed *f) {
    f->dp = given(rest, n, "--dp");
    f->pp = given(rest, n, "--pp");
    f->tp = given(rest, n, "--tp");
    f->zero = given(rest, n, "--zero");
    f->optim = given(rest, n, "--optim");
    f->dtype = given(rest, n, "--param-dtype");
    f->recompute = given(rest, n, "--recompute");
    f->seq_parallel = given(rest, n, "--sequence-parallel");
    f->schedule = given(rest, n, "--schedule");
    f->virtual_stages = given(rest, n, "--virtual-stages");
    f->micro_batch = given(rest, n, "--micro-batch");
    f->partition = given(rest, n, "--partition");
    f->overlap = given(rest, n, "--overlap-comm");
}

// The model's and the machine's flags every answer shares: "--model gpt2-xl --seq 1024 ...".
static void common_flags(const zt_config *c, const zt_plan_device *d, int rpn, int threads,
                         char *buf, size_t size) {
    int n = snprintf(buf, size, "--model %s", c->model);
    const char *keys[] = {"n-layer", "n-head", "n-embd", "vocab", "n-ctx"};
    int vals[] = {c->n_layer, c->n_head, c->n_embd, c->vocab, c->n_ctx};
    for (int k = 0; k < 5; k++)
        if ((c->shape_given >> (k + 1)) & 1u)
            n += snprintf(buf + n, size - (size_t)n, " --%s %d", keys[k], vals[k]);
    n += snprintf(buf + n, size - (size_t)n, " --seq %d", c->seq);
    if (c->loss_chunk) n += snprintf(buf + n, size - (size_t)n, " --loss-chunk %d", c->loss_chunk);
    if (d->host) snprintf(buf + n, size - (size_t)n, " --threads %d", threads);
    else
        snprintf(buf + n, size - (size_t)n,
                 " --backend cuda --ranks-per-node %d --gpus-per-node %d", rpn, rpn);
}

// ---------------------------------------------------------------- output

static void print_text(const zt_plan_question *q, const zt_plan_device *d, const zt_config *c,
                       const char *common, const zt_plan_answer *a, int n, int top) {
    char b1[32], b2[32], flags[640];
    printf("zerotrain plan: %s (%d layers, %d channels), --seq %d, %ld sequences a step on %d "
           "ranks%s\n",
           c->model, c->n_layer, c->n_embd, c->seq, q->global_batch, q->world,
           q->ranks_per_node > 0 ? "" : " (one machine)");
    zt_plan_device_describe(d, stdout);
    printf("memory: %s %s; %d layouts fit; the %d fastest by predicted tokens/s:\n",
           zt_plan_format_bytes(q->limit, b1, sizeof b1),
           q->sharing > 1 ? "for the machine's ranks together" : "per rank", n,
           n < top ? n : top);
    printf("%3s %11s %9s %9s %8s %8s %8s %8s %8s %8s %11s %6s\n", "#", "tokens/s", "step ms",
           "compute", "tp", "pp", "dp", "embed", "bubble", "optim", "peak/rank", "MFU");
    for (int i = 0; i < n && i < top; i++) {
        const zt_plan_time *t = &a[i].time;
        printf("%3d %11.0f %9.2f %9.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %11s %5.1f%%\n", i + 1,
               t->tokens_per_s, t->step_s * 1e3, t->compute_s * 1e3, t->tp_s * 1e3,
               t->pp_s * 1e3, t->dp_s * 1e3, t->embed_s * 1e3, t->bubble_s * 1e3,
               t->optimizer_s * 1e3, zt_plan_format_bytes(a[i].rank_peak, b2, sizeof b2),
               t->mfu * 100);
        zt_plan_layout_flags(&a[i].spec, a[i].overlap, flags, sizeof flags);
        printf("    zerotrain %s %s\n", common, flags);
    }
    printf("(times in ms, rank 0's step by part: compute = its kernels; tp, pp, dp, embed = its "
           "exposed communication by group; bubble = its pipeline idle and waits. Work: each "
           "op's flops and traffic recorded from the model's own calls; rates: %s; links: %s; "
           "peak bytes: the memory planner, exact)\n",
           zt_fig_source_name(d->rate_src), zt_fig_source_name(d->link_src));
}

static void print_json(const zt_plan_question *q, const zt_plan_device *d, const char *common,
                       const zt_plan_answer *a, int n, int top) {
    char flags[640], all[1400];
    printf("{\"world\":%d,\"ranks_per_node\":%d,\"global_batch\":%ld,\"limit_bytes\":%.0f,"
           "\"limit_per\":\"%s\",\"fit\":%d,\"device\":",
           q->world, q->ranks_per_node, q->global_batch, q->limit,
           q->sharing > 1 ? "machine" : "rank", n);
    zt_plan_device_write_json(d, stdout);
    printf(",\"work\":\"recorded\",\"plans\":[");
    for (int i = 0; i < n && i < top; i++) {
        const zt_plan_time *t = &a[i].time;
        zt_plan_layout_flags(&a[i].spec, a[i].overlap, flags, sizeof flags);
        snprintf(all, sizeof all, "%s %s", common, flags);
        printf("%s{\"rank\":%d,\"tokens_per_s\":%.6g,\"step_s\":%.6g,\"compute_s\":%.6g,"
               "\"tp_s\":%.6g,\"pp_s\":%.6g,\"dp_s\":%.6g,\"embed_s\":%.6g,\"bubble_s\":%.6g,"
               "\"optimizer_s\":%.6g,\"model_flops\":%.6g,\"mfu\":%.6g,\"peak_bytes\":%.0f,"
               "\"need_bytes\":%.0f,\"flags\":",
               i ? "," : "", i + 1, t->tokens_per_s, t->step_s, t->compute_s, t->tp_s, t->pp_s,
               t->dp_s, t->embed_s, t->bubble_s, t->optimizer_s, t->model_flops, t->mfu,
               a[i].rank_peak, a[i].need);
        zt_json_string(stdout, all);
        printf("}");
    }
    printf("]}\n");
}

// ---------------------------------------------------------------- the commands

static zt_status calibrate(const plan_args *a, const zt_config *cfg) {
    zt_plan_spec s;
    ZT_TRY(zt_plan_spec_from_config(&s, cfg, 1));
    zt_plan_device d;
    fprintf(stderr, "zerotrain plan --calibrate: %d thread%s; other work on this machine "
                    "slows the measurement (load: /proc/loadavg)\n",
            s.threads, s.threads == 1 ? "" : "s");
    ZT_TRY(zt_plan_calibrate(&s, a->steps, stderr, &d));
    // the file's folder, one level (the cache folder usually exists)
    char dir[512];
    snprintf(dir, sizeof dir, "%s", a->calibration);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        char *up = strrchr(dir, '/');
        if (up) {
            *up = 0;
            mkdir(dir, 0755);
            *up = '/';
        }
        mkdir(dir, 0755);
    }
    ZT_TRY(zt_plan_device_write(&d, a->calibration));
    zt_plan_device_describe(&d, stdout);
    printf("stored in %s (zerotrain plan --device cpu reads it)\n", a->calibration);
    return ZT_OK;
}

static zt_status ops_json(const plan_args *a, zt_config *cfg) {
    if (!a->device[0])
        return zt_errorf("--ops-json needs --device NAME (h100, h200, a100, cpu or a file): "
                         "the backend and memory the step is recorded for");
    zt_plan_device d;
    ZT_TRY(zt_plan_device_load(&d, a->device, a->calibration));
    snprintf(cfg->backend, sizeof cfg->backend, "%s", d.backend);
    ZT_TRY(zt_plan_ops_json(cfg, &d, a->ops_json));
    printf("one step's ops written to %s\n", a->ops_json);
    return ZT_OK;
}

static zt_status plan(int argc, char **argv) {
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    ZT_ASSERT(rest);
    plan_args a;
    int n = 0;
    zt_status st = split_args(argc, argv, &a, rest, &n);
    zt_config cfg;
    if (st == ZT_OK) st = zt_config_parse(&cfg, n, rest);
    // the search derives --grad-accum; --pp stands in for it where interleaved's check reads it
    if (st == ZT_OK && cfg.schedule == ZT_SCHED_INTERLEAVED && !given(rest, n, "--grad-accum"))
        cfg.grad_accum = cfg.pp;
    if (st == ZT_OK) st = zt_config_validate(&cfg);
    zt_plan_question q = {0};
    if (st == ZT_OK) fixed_of(rest, n, &q.fixed);
    // --ops-json records one step of the --grad-accum given
    if (st == ZT_OK && given(rest, n, "--grad-accum") && !a.ops_json[0])
        st = zt_errorf("plan derives --grad-accum from --global-batch: leave --grad-accum out");
    free(rest);
    ZT_TRY(st);
    if (a.calibrate) return calibrate(&a, &cfg);
    if (a.ops_json[0]) return ops_json(&a, &cfg);
    if (!a.world || !a.device[0] || !a.global_batch)
        return zt_errorf("plan needs --world N, --device NAME and --global-batch B (zerotrain "
                         "plan --help)");
    zt_plan_device d;
    ZT_TRY(zt_plan_device_load(&d, a.device, a.calibration));
    snprintf(cfg.backend, sizeof cfg.backend, "%s", d.backend);
    if (cfg.dp < 1) cfg.dp = 1;
    if (d.host && !cfg.threads) cfg.threads = d.threads ? d.threads : omp_get_max_threads();
    q.ranks_per_node = d.host ? 0 : cfg.gpus_per_node > 0 ? cfg.gpus_per_node : 8;
    cfg.ranks_per_node = cfg.gpus_per_node = q.ranks_per_node;
    ZT_TRY(zt_plan_spec_from_config(&q.base, &cfg, cfg.dp));
    q.overlap = cfg.overlap_comm;
    q.world = a.world;
    q.global_batch = a.global_batch;
    double limit = zt_config_mem_limit(&cfg);
    q.sharing = d.host && limit <= 0 ? a.world : 1;
    q.limit = limit > 0 ? limit : d.host ? zt_host_available_bytes() : d.memory_bytes;
    zt_plan_answer *ans = NULL;
    int count = 0;
    ZT_TRY(zt_plan_search(&q, &d, a.top, &ans, &count));
    char common[512];
    common_flags(&cfg, &d, q.ranks_per_node, q.base.threads, common, sizeof common);
    if (a.json) print_json(&q, &d, common, ans, count, a.top);
    else print_text(&q, &d, &cfg, common, ans, count, a.top);
    free(ans);
    return ZT_OK;
}

int zt_plan_main(int argc, char **argv) {
    if (plan(argc, argv) == ZT_OK) return 0;
    zt_error_report(1);
    return 1;
}
