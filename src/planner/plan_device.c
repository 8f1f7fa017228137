// The time model's devices (plan_device.h): the table, the calibration file, JSON files.
#include "plan_device.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

const char *zt_fig_source_name(zt_fig_source s) {
    static const char *const k[] = {"table", "measured", "file", "assumed"};
    return k[s];
}

const char *zt_plan_device_names(void) { return "h100, h200, a100, cpu"; }

// What a GPU's kernels reach of its peaks: assumed (docs/design.md "Step-time model"):
// large GEMMs about 70% of the tensor cores' peak, zerotrain's fp32 attention 40% of the
// fp32 peak, element-wise ops 70% of the memory bandwidth.
#define GPU_GEMM_EFF 0.70
#define GPU_ATTN_EFF 0.40
#define GPU_MEM_EFF 0.70

typedef struct {
    const char *name, *full;
    double fp32, bf16, hbm, bytes, nvlink, net;
} gpu_row;

// Vendor figures: dense peaks (no sparsity), HBM bandwidth and size, NVLink bandwidth per
// GPU and direction, and one InfiniBand NIC per GPU (DGX/HGX: NDR 400 Gb/s for H100 and
// H200, HDR 200 Gb/s for A100).
static const gpu_row k_gpus[] = {
    {"h100", "NVIDIA H100 SXM5 80GB", 67e12, 989e12, 3.35e12, 80e9, 450e9, 50e9},
    {"h200", "NVIDIA H200 SXM 141GB", 67e12, 989e12, 4.8e12, 141e9, 450e9, 50e9},
    {"a100", "NVIDIA A100 SXM4 80GB", 19.5e12, 312e12, 2.039e12, 80e9, 300e9, 25e9},
};

static void from_row(zt_plan_device *d, const gpu_row *g) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", g->full);
    snprintf(d->backend, sizeof d->backend, "cuda");
    for (int dt = 0; dt < 2; dt++) {
        d->peak_flops[dt] = dt ? g->bf16 : g->fp32;
        for (int p = 0; p < ZT_PHASE_COUNT; p++) d->rate[p][dt] = g->hbm * GPU_MEM_EFF;
        d->rate[ZT_PHASE_GEMM][dt] = d->peak_flops[dt] * GPU_GEMM_EFF;
        d->rate[ZT_PHASE_ATTENTION][dt] = g->fp32 * GPU_ATTN_EFF; // fp32 in every dtype
    }
    d->rate_src = ZT_FIG_ASSUMED; // peaks from the table, efficiencies assumed
    d->peak_src = ZT_FIG_TABLE;
    d->memory_bytes = g->bytes;
    d->memory_src = ZT_FIG_TABLE;
    d->intra = (zt_plan_link){g->nvlink, 5e-6};
    d->inter = (zt_plan_link){g->net, 10e-6};
    d->link_src = ZT_FIG_TABLE;
    snprintf(d->note, sizeof d->note,
             "vendor peaks; efficiencies assumed (GEMM %.0f%%, attention %.0f%% of fp32, "
             "memory %.0f%%); link latencies assumed",
             GPU_GEMM_EFF * 100, GPU_ATTN_EFF * 100, GPU_MEM_EFF * 100);
}

// ---------------------------------------------------------------- the JSON file

static const char *const k_rate_keys[ZT_PHASE_COUNT] = {
    "gemm", "attention", "loss", "elementwise", "optimizer", "grad_norm", "memory", "comm"};

static zt_status num(const cJSON *o, const char *key, double *out, const char *path) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
        return zt_errorf("%s: \"%s\" must be a positive number: write it (keys: "
                         "docs/design.md, \"Step-time model\")",
                         path, key);
    *out = v->valuedouble;
    return ZT_OK;
}

static zt_status parse(zt_plan_device *d, const cJSON *o, const char *path, zt_fig_source src) {
    memset(d, 0, sizeof *d);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(o, "backend");
    const cJSON *rates = cJSON_GetObjectItemCaseSensitive(o, "rates");
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(o, "note");
    if (!cJSON_IsString(name) || !cJSON_IsString(be) ||
        (strcmp(be->valuestring, "cpu") && strcmp(be->valuestring, "cuda")))
        return zt_errorf("%s: give \"name\" and \"backend\" (\"cpu\" or \"cuda\")", path);
    if (!cJSON_IsObject(rates))
        return zt_errorf("%s: give \"rates\": {\"gemm\": [fp32, bf16] flop/s, ...}", path);
    snprintf(d->name, sizeof d->name, "%s", name->valuestring);
    snprintf(d->backend, sizeof d->backend, "%s", be->valuestring);
    d->host = !strcmp(d->backend, "cpu");
    for (int p = 0; p < ZT_PHASE_COUNT; p++) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(rates, k_rate_keys[p]);
        if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 2 ||
            !cJSON_IsNumber(cJSON_GetArrayItem(r, 0)) ||
            !cJSON_IsNumber(cJSON_GetArrayItem(r, 1)) ||
            !(cJSON_GetArrayItem(r, 0)->valuedouble > 0) ||
            !(cJSON_GetArrayItem(r, 1)->valuedouble > 0))
            return zt_errorf("%s: rates.%s must be [fp32, bf16], two positive numbers", path,
                             k_rate_keys[p]);
        for (int dt = 0; dt < 2; dt++) d->rate[p][dt] = cJSON_GetArrayItem(r, dt)->valuedouble;
    }
    const cJSON *lat = cJSON_GetObjectItemCaseSensitive(o, "op_latency");
    if (lat && (!cJSON_IsArray(lat) || cJSON_GetArraySize(lat) != ZT_PHASE_COUNT))
        return zt_errorf("%s: op_latency must be %d numbers (seconds per call, by phase)", path,
                         ZT_PHASE_COUNT);
    for (int p = 0; lat && p < ZT_PHASE_COUNT; p++) {
        const cJSON *v = cJSON_GetArrayItem(lat, p);
        if (!cJSON_IsNumber(v) || v->valuedouble < 0)
            return zt_errorf("%s: op_latency[%d] must be a number >= 0", path, p);
        d->op_latency[p] = v->valuedouble;
    }
    ZT_TRY(num(o, "peak_fp32", &d->peak_flops[0], path));
    ZT_TRY(num(o, "peak_bf16", &d->peak_flops[1], path));
    ZT_TRY(num(o, "intra_bandwidth", &d->intra.bw, path));
    ZT_TRY(num(o, "intra_latency", &d->intra.latency, path));
    ZT_TRY(num(o, "inter_bandwidth", &d->inter.bw, path));
    ZT_TRY(num(o, "inter_latency", &d->inter.latency, path));
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(o, "memory_bytes");
    if (!d->host) ZT_TRY(num(o, "memory_bytes", &d->memory_bytes, path));
    else if (cJSON_IsNumber(mem)) d->memory_bytes = mem->valuedouble;
    d->rate_src = d->peak_src = d->memory_src = d->link_src = src;
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(o, "threads");
    if (cJSON_IsNumber(th) && th->valueint > 0) d->threads = th->valueint;
    const cJSON *cores = cJSON_GetObjectItemCaseSensitive(o, "cores");
    if (cJSON_IsNumber(cores) && cores->valuedouble > 0) d->cores = cores->valuedouble;
    const cJSON *jit = cJSON_GetObjectItemCaseSensitive(o, "jitter");
    if (cJSON_IsNumber(jit) && jit->valuedouble > 0) d->jitter = jit->valuedouble;
    const cJSON *spread = cJSON_GetObjectItemCaseSensitive(o, "spread");
    if (cJSON_IsNumber(spread) && spread->valuedouble > 0) d->spread = spread->valuedouble;
    if (cJSON_IsString(note)) snprintf(d->note, sizeof d->note, "%s", note->valuestring);
    return ZT_OK;
}

static zt_status load_file(zt_plan_device *d, const char *path, zt_fig_source src) {
    char *text = zt_read_file(path, NULL);
    if (!text) return zt_errorf("cannot read device file %s: %s", path, zt_file_error(errno));
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return zt_errorf("%s is not a JSON object: write the device's figures as one", path);
    }
    zt_status st = parse(d, o, path, src);
    cJSON_Delete(o);
    return st;
}

zt_status zt_plan_device_load(zt_plan_device *d, const char *name, const char *calibration) {
    for (size_t i = 0; i < sizeof k_gpus / sizeof *k_gpus; i++)
        if (!strcmp(name, k_gpus[i].name)) {
            from_row(d, &k_gpus[i]);
            return ZT_OK;
        }
    if (!strcmp(name, "cpu")) {
        FILE *f = fopen(calibration, "rb");
        if (!f)
            return zt_errorf("--device cpu needs this machine's measured costs, and %s does "
                             "not exist: run `zerotrain plan --calibrate` first",
                             calibration);
        fclose(f);
        ZT_TRY(load_file(d, calibration, ZT_FIG_MEASURED));
        d->link_src = ZT_FIG_ASSUMED; // the calibration's link is its copy bandwidth
        return ZT_OK;
    }
    if (!strchr(name, '/') && !strstr(name, ".json"))
        return zt_errorf("--device %s is not known: use one of %s, or a JSON file's path", name,
                         zt_plan_device_names());
    return load_file(d, name, ZT_FIG_FILE);
}

void zt_plan_device_write_json(const zt_plan_device *d, FILE *f) {
    fprintf(f, "{\"name\":\"%s\",\"backend\":\"%s\",\"rates\":{", d->name, d->backend);
    for (int p = 0; p < ZT_PHASE_COUNT; p++)
        fprintf(f, "%s\"%s\":[%.6g,%.6g]", p ? "," : "", k_rate_keys[p], d->rate[p][0],
                d->rate[p][1]);
    fprintf(f, "},\"op_latency\":[");
    for (int p = 0; p < ZT_PHASE_COUNT; p++)
        fprintf(f, "%s%.6g", p ? "," : "", d->op_latency[p]);
    fprintf(f, "],\"peak_fp32\":%.6g,\"peak_bf16\":%.6g,\"memory_bytes\":%.6g,"
               "\"intra_bandwidth\":%.6g,\"intra_latency\":%.6g,\"inter_bandwidth\":%.6g,"
               "\"inter_latency\":%.6g,\"threads\":%d,\"cores\":%.4g,\"jitter\":%.4g,"
               "\"spread\":%.4g,\"note\":\"%s\"",
            d->peak_flops[0], d->peak_flops[1], d->memory_bytes, d->intra.bw, d->intra.latency,
            d->inter.bw, d->inter.latency, d->threads, d->cores, d->jitter, d->spread, d->note);
    fprintf(f, ",\"sources\":{\"rates\":\"%s\",\"peaks\":\"%s\",\"memory\":\"%s\","
               "\"links\":\"%s\"}}",
            zt_fig_source_name(d->rate_src), zt_fig_source_name(d->peak_src),
            zt_fig_source_name(d->memory_src), zt_fig_source_name(d->link_src));
}

zt_status zt_plan_device_write(const zt_plan_device *d, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return zt_errorf("cannot write %s: %s", path, strerror(errno));
    zt_plan_device_write_json(d, f);
    fputc('\n', f);
    if (fclose(f) != 0) return zt_errorf("cannot write %s: %s", path, strerror(errno));
    return ZT_OK;
}

void zt_plan_device_describe(const zt_plan_device *d, FILE *f) {
    fprintf(f, "device: %s (--backend %s)\n", d->name, d->backend);
    fprintf(f, "  op rates %s: GEMM %.3g / %.3g TFLOP/s (fp32 / bf16), attention %.3g TFLOP/s, "
               "element-wise %.3g GB/s\n",
            zt_fig_source_name(d->rate_src), d->rate[ZT_PHASE_GEMM][0] / 1e12,
            d->rate[ZT_PHASE_GEMM][1] / 1e12, d->rate[ZT_PHASE_ATTENTION][0] / 1e12,
            d->rate[ZT_PHASE_ELEMENTWISE][0] / 1e9);
    if (d->op_latency[ZT_PHASE_GEMM] > 0 || d->op_latency[ZT_PHASE_ELEMENTWISE] > 0)
        fprintf(f, "  per call %s: GEMM %.3g us, attention %.3g us, element-wise %.3g us\n",
                zt_fig_source_name(d->rate_src), d->op_latency[ZT_PHASE_GEMM] * 1e6,
                d->op_latency[ZT_PHASE_ATTENTION] * 1e6, d->op_latency[ZT_PHASE_ELEMENTWISE] * 1e6);
    if (d->host && d->cores > 0)
        fprintf(f, "  cores %s: %.2g (what ranks running the step at once reached, other "
                   "work included); jitter %.3g s^1/2 (how the same work's time wanders); "
                   "spread %.0f%% (plans closer than this are a tie)\n",
                zt_fig_source_name(d->rate_src), d->cores, d->jitter, 100.0 * d->spread);
    fprintf(f, "  peaks %s: %.3g / %.3g TFLOP/s (the MFU's denominator)\n",
            zt_fig_source_name(d->peak_src), d->peak_flops[0] / 1e12, d->peak_flops[1] / 1e12);
    fprintf(f, "  links %s: within a machine %.3g GB/s + %.3g us, across %.3g GB/s + %.3g us\n",
            zt_fig_source_name(d->link_src), d->intra.bw / 1e9, d->intra.latency * 1e6,
            d->inter.bw / 1e9, d->inter.latency * 1e6);
    if (d->note[0]) fprintf(f, "  (%s)\n", d->note);
}
