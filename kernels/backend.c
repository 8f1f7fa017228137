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

// One test per entry of the list: an op added there is checked here with no word more.
const char *zt_backend_missing_op(const zt_backend_i *ops, int bf16) {
#define ZT_OP(ret, name, group, ...) \
    if (!ops->name && (group == ZT_OPS_ALL || bf16)) return #name;
#include "backend_ops.h"
#undef ZT_OP
    return NULL;
}

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
    // a missing op is a bug found when the backend opens, never a NULL call mid-run
    const char *missing = zt_backend_missing_op(be->ops, be->caps->bf16);
    ZT_ASSERTF(!missing, "the %s backend lacks the op %s (kernels/backend_ops.h)", name,
               missing ? missing : "");
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
