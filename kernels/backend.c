// The backends by name: which exist, what each supports, and opening one with options
// (docs/design.md, "Backends"). Nothing above kernels/ names an implementation.
#include "backend.h"

#include <string.h>

#include "backend_impl.h"

static const zt_backend_entry *const k_entries[] = {&zt_backend_cpu_entry,
                                                    &zt_backend_cuda_entry};
#define N_ENTRIES (sizeof k_entries / sizeof k_entries[0])

const char *const zt_backend_names[] = {"cpu", "cuda", NULL};

static const zt_backend_entry *entry_of(const char *name) {
    for (size_t i = 0; name && i < N_ENTRIES; i++)
        if (strcmp(k_entries[i]->caps.name, name) == 0) return k_entries[i];
    return NULL;
}

const zt_backend_caps *zt_backend_caps_of(const char *name) {
    const zt_backend_entry *e = entry_of(name);
    return e ? &e->caps : NULL;
}

// Every backend fills every slot: a missing op is a bug found when the backend opens, never
// a NULL call in the middle of a run.
#define HAS(op) ZT_ASSERTF(o->op != NULL, "the %s backend lacks the op " #op, o->name)
static void check_ops(const zt_backend_i *o) {
    HAS(describe);
    HAS(write_json);
    HAS(alloc);
    HAS(free);
    HAS(memset);
    HAS(copy);
    HAS(map);
    HAS(unmap);
    HAS(sync);
    HAS(stream);
    HAS(device);
    HAS(memory_info);
    HAS(host_alloc);
    HAS(host_free);
    HAS(gemm);
    HAS(encoder_forward);
    HAS(encoder_backward);
    HAS(layernorm_forward);
    HAS(residual_layernorm_forward);
    HAS(layernorm_backward);
    HAS(matmul_forward);
    HAS(matmul_backward);
    HAS(matmul_in_out_forward);
    HAS(matmul_in_out_backward);
    HAS(gelu_forward);
    HAS(matmul_gelu_forward);
    HAS(gelu_backward);
    HAS(add);
    HAS(attention_forward);
    HAS(attention_backward);
    HAS(attention_decode);
    HAS(ce_slice_stats);
    HAS(ce_slice_sumexp);
    HAS(ce_slice_finish);
    HAS(sum);
    HAS(sumsq);
    HAS(adamw);
    HAS(adamw8bit);
}

static void check_bf16_ops(const zt_backend_i *o) {
    HAS(gemm_mixed);
    HAS(bias_forward_bf16);
    HAS(bias_backward_bf16);
    HAS(encoder_forward_bf16);
    HAS(encoder_backward_bf16);
    HAS(layernorm_forward_bf16);
    HAS(gelu_forward_bf16);
    HAS(layernorm_backward_bf16);
    HAS(sumsq_bf16);
    HAS(adamw_bf16);
    HAS(adamw8bit_bf16);
    HAS(bf16_from_fp32);
    HAS(bf16_to_fp32);
}
#undef HAS

zt_status zt_backend_check(const char *name, const zt_backend_options *opt) {
    const zt_backend_entry *e = entry_of(name);
    if (!e) return zt_errorf("--backend %s is not known: use cpu or cuda", name ? name : "");
    if (!e->caps.built)
        return zt_errorf("--backend %s: this binary was built without it: build with `make %s` "
                         "and run build/zerotrain-%s (or use --backend cpu)", name, name, name);
    if (opt->tf32 && !e->caps.tf32)
        return zt_errorf("--tf32 applies to --backend cuda only (the %s backend's products are "
                         "fp32)", name);
    if (opt->bf16_gemm != ZT_BF16_GEMM_AUTO && !e->caps.bf16_gemm)
        return zt_errorf("--bf16-gemm applies to --backend cpu only (the %s backend has one bf16 "
                         "GEMM): leave it out or give --bf16-gemm auto", name);
    if (opt->device < -1)
        return zt_errorf("--device %d: give a GPU index (0, 1, ...) or -1 to pick one from the "
                         "rank's place on its machine", opt->device);
    if (opt->threads < 0) return zt_errorf("--threads must be at least 0 (got %d)", opt->threads);
    return ZT_OK;
}

zt_status zt_backend_pick_device(int want, int local_rank, int count, int *device) {
    if (count < 1) return zt_errorf("no GPU is visible to this process (CUDA_VISIBLE_DEVICES?)");
    if (want < -1)
        return zt_errorf("--device %d: give a GPU index or -1 (by the rank on its machine)", want);
    if (want >= count)
        return zt_errorf("--device %d does not exist: this process sees %d GPU%s (0..%d; "
                         "CUDA_VISIBLE_DEVICES renumbers the GPUs it keeps from 0)",
                         want, count, count == 1 ? "" : "s", count - 1);
    *device = want >= 0 ? want : local_rank < 0 ? 0 : local_rank % count;
    return ZT_OK;
}

zt_status zt_backend_open(zt_backend *be, const char *name, const zt_backend_options *opt) {
    memset(be, 0, sizeof *be);
    ZT_TRY(zt_backend_check(name, opt));
    ZT_TRY(entry_of(name)->open(be, opt));
    check_ops(be->ops);
    if (be->caps->bf16) check_bf16_ops(be->ops);
    return ZT_OK;
}

void zt_backend_close(zt_backend *be) {
    const zt_backend_entry *e = be && be->caps ? entry_of(be->caps->name) : NULL;
    if (e) e->close(be);
    if (be) memset(be, 0, sizeof *be);
}

size_t zt_backend_attention_workspace(const zt_backend *be, int T) {
    return be->caps->attention_workspace ? be->caps->attention_workspace(be->threads, T) : 0;
}

int zt_backends_start(char **argv) {
    int slow = 0;
    for (size_t i = 0; i < N_ENTRIES; i++)
        if (k_entries[i]->caps.built && k_entries[i]->start) slow |= k_entries[i]->start(argv);
    return slow;
}

void zt_backends_unset_env(void) {
    for (size_t i = 0; i < N_ENTRIES; i++)
        if (k_entries[i]->caps.built && k_entries[i]->unset_env) k_entries[i]->unset_env();
}
