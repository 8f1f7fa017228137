// The fit check of a run on GPUs: each GPU's ranks' device bytes against its free memory,
// and the host-side parts of a device plan (docs/design.md, "The planner on a device").
#include "planner.h"

#include <stdlib.h>
#include <string.h>

#include "grid_data.h"

double zt_plan_device_bytes(const zt_plan_bytes *b) {
    // bytes[] is the allocator's count, device memory on a GPU, except the MPI backend's
    // tables (comm_backend, in comm), which are host memory on every backend
    return b->tracked - b->comm_backend;
}

double zt_plan_host_bytes(const zt_plan_bytes *b, int with_staging) {
    return b->comm_backend + b->comm_window + b->end_transient + (with_staging ? b->staging : 0);
}

// The refusal of the GPU whose ranks are v[0..n) (sorted by rank), its need and free bytes.
static zt_status refuse(const zt_plan_bytes *all, const zt_indexed_id *v, int n, const int *devices,
                        double need, double free_b, double total) {
    int r = v[0].i, wr = r;
    for (int i = 1; i < n; i++)
        if (zt_plan_device_bytes(&all[v[i].i]) > zt_plan_device_bytes(&all[wr]))
            wr = v[i].i;
    char msg[2048], ranks[256], cats[512], a[32], b[32], c[32], d[32];
    size_t off = 0;
    ranks[0] = 0;
    for (int i = 0; i < n && off < sizeof ranks; i++)
        off += (size_t)snprintf(ranks + off, sizeof ranks - off, "%s%d", i ? ", " : "",
                                v[i].i);
    zt_plan_format_categories(&all[wr], 1, cats, sizeof cats);
    if (n == 1)
        snprintf(msg, sizeof msg, "rank %d needs %s of device memory (stage %d: %s) but its "
                 "GPU %d (%s) has %s free of %s",
                 r, zt_plan_format_bytes(need, a, sizeof a), all[r].pp_rank, cats, devices[r],
                 v[0].id, zt_plan_format_bytes(free_b, b, sizeof b),
                 zt_plan_format_bytes(total, c, sizeof c));
    else
        snprintf(msg, sizeof msg, "the %d ranks on GPU %d (%s: ranks %s) need %s of device "
                 "memory together, rank %d %s (stage %d: %s), but the GPU has %s free of %s",
                 n, devices[r], v[0].id, ranks, zt_plan_format_bytes(need, a, sizeof a), wr,
                 zt_plan_format_bytes(zt_plan_device_bytes(&all[wr]), d, sizeof d),
                 all[wr].pp_rank, cats, zt_plan_format_bytes(free_b, b, sizeof b),
                 zt_plan_format_bytes(total, c, sizeof c));
    return zt_errorf("%s. Lower --micro-batch (more --grad-accum keeps the batch), or raise "
                     "--zero (1, with more --dp), --pp or --tp%s; `zerotrain memory --backend "
                     "cuda` with the same flags plans every rank",
                     msg, n > 1 ? ", or give each rank a GPU of its own" : "");
}

// Sorted by identity (n log n, as grid_data.c's paths: a world of 10^5 ranks), each GPU's
// ranks are one run of equal identities, in rank order.
zt_status zt_plan_check_devices(const zt_plan_bytes *all, int world, const char *const *ids,
                                const int *devices, const zt_device_memory *mem,
                                int *bad_rank) {
    if (bad_rank) *bad_rank = -1;
    zt_indexed_id *v = malloc((size_t)(world > 0 ? world : 1) * sizeof *v);
    ZT_ASSERTF(v, "out of host memory");
    for (int r = 0; r < world; r++) v[r] = (zt_indexed_id){ids[r], r};
    qsort(v, (size_t)world, sizeof *v, zt_indexed_id_cmp);
    int bad = -1, bad_n = 0; // the failing GPU with the lowest first rank: v[bad..bad+bad_n)
    double bad_need = 0, bad_free = 0, bad_total = 0;
    for (int i = 0, j; i < world; i = j) {
        for (j = i + 1; j < world && strcmp(v[j].id, v[i].id) == 0; j++) {}
        if (!v[i].id[0]) continue; // no device: host memory, checked elsewhere
        // the GPU's ranks: their device bytes together; its free memory, the least any of
        // them read (they read after every rank opened, so each sees every sharer's fixed
        // buffers as used: added back, since the plans count them)
        double need = 0, held = 0, free_b = mem[v[i].i].free;
        for (int k = i; k < j; k++) {
            need += zt_plan_device_bytes(&all[v[k].i]);
            held += mem[v[k].i].held;
            if (mem[v[k].i].free < free_b) free_b = mem[v[k].i].free;
        }
        if (need <= free_b + held) continue;
        if (bad < 0 || v[i].i < v[bad].i)
            bad = i, bad_n = j - i, bad_need = need, bad_free = free_b + held,
            bad_total = mem[v[i].i].total;
    }
    zt_status s = ZT_OK;
    if (bad >= 0) {
        if (bad_rank) *bad_rank = v[bad].i;
        s = refuse(all, v + bad, bad_n, devices, bad_need, bad_free, bad_total);
    }
    free(v);
    return s;
}

zt_status zt_plan_check_host_parts(const zt_plan_bytes *all, int world, int sharing,
                                   int with_staging, double limit, const char *limit_what) {
    if (!(limit > 0)) return ZT_OK;
    if (sharing < 1 || sharing > world) sharing = world;
    for (int lo = 0; lo < world; lo += sharing) {
        double need = 0;
        for (int r = lo; r < lo + sharing && r < world; r++)
            need += zt_plan_host_bytes(&all[r], with_staging);
        if (need <= limit) continue;
        char a[32], b[32], c[32], d[32], e[32], f[32];
        const zt_plan_bytes *p = &all[lo];
        return zt_errorf("the host-side buffers of %s %d (ranks %d-%d) of this GPU run need %s "
                         "(rank %d: staging %s, MPI windows %s, MPI tables %s, at the end %s) "
                         "but %s is %s: run fewer ranks per machine or free host memory",
                         sharing == 1 ? "rank" : "the ranks of machine", lo / sharing, lo,
                         (lo + sharing < world ? lo + sharing : world) - 1,
                         zt_plan_format_bytes(need, a, sizeof a), lo,
                         zt_plan_format_bytes(with_staging ? p->staging : 0, b, sizeof b),
                         zt_plan_format_bytes(p->comm_window, c, sizeof c),
                         zt_plan_format_bytes(p->comm_backend, d, sizeof d),
                         zt_plan_format_bytes(p->end_transient, e, sizeof e), limit_what,
                         zt_plan_format_bytes(limit, f, sizeof f));
    }
    return ZT_OK;
}
