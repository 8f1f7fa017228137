// The device tensor paths of the grid's groups (grid_data.h): the choice between NCCL and
// MPI with host staging, its report, and the communicators it makes.
#include "grid_data.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_nccl.h"

int zt_indexed_id_cmp(const void *x, const void *y) {
    const zt_indexed_id *p = x, *q = y;
    int c = strcmp(p->id, q->id);
    return c ? c : (p->i > q->i) - (p->i < q->i);
}

// Sorted by identity, so a group of 10^5 ranks costs n log n comparisons, not n^2 / 2. The
// answer is the first member (in group order) with no device or with an earlier member on
// its device: a = that earlier member (the first on the device), b = it.
zt_data_path zt_grid_data_path(const char *const *ids, int n, int *a, int *b) {
    if (n == 1) return ZT_DATA_ONE;
    zt_indexed_id *v = malloc((size_t)n * sizeof *v);
    ZT_ASSERTF(v, "out of host memory");
    int first = n, pa = n; // the first member to stage for, and its earlier one
    for (int i = 0; i < n; i++) {
        v[i] = (zt_indexed_id){ids[i], i};
        if (!ids[i][0] && i < first) first = pa = i; // no device: host memory, NCCL cannot
    }
    qsort(v, (size_t)n, sizeof *v, zt_indexed_id_cmp);
    for (int k = 1; k < n; k++)
        if (strcmp(v[k].id, v[k - 1].id) == 0 && (k == 1 || strcmp(v[k].id, v[k - 2].id) != 0) &&
            v[k].i < first)
            first = v[k].i, pa = v[k - 1].i; // a device's second member, after its first
    free(v);
    if (first == n) return ZT_DATA_NCCL;
    if (a) *a = pa;
    if (b) *b = first;
    return ZT_DATA_STAGED;
}

zt_data_path zt_grid_group_path(const char *const *ids, int n, int stage_all, int *a, int *b) {
    if (!stage_all || n == 1) return zt_grid_data_path(ids, n, a, b);
    if (a) *a = 0;
    if (b) *b = 0;
    return ZT_DATA_STAGED;
}

size_t zt_grid_stage_bytes(zt_data_path p) {
    return p == ZT_DATA_STAGED ? ZT_COMM_STAGE_BYTES_DEFAULT
           : p == ZT_DATA_ONE  ? ZT_GRID_STAGE_BYTES_ONE
                               : 0;
}

// snprintf appending at *len, never past size (a cut report stays NUL-terminated).
static void add(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t size, size_t *len, const char *fmt, ...) {
    if (*len >= size) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n > 0) *len += (size_t)n < size - *len ? (size_t)n : size - *len - 1;
}

static void report_devices(int world, const int *devices, const char *const *ids, char *out,
                           size_t size) {
    size_t len = 0;
    out[0] = 0;
    for (int r = 0; r < world; r++) {
        int first = 1, n = 0;
        for (int q = 0; q < r && first; q++) first = strcmp(ids[q], ids[r]) != 0;
        if (!first) continue; // listed with the first rank on this device
        for (int q = r; q < world; q++) n += strcmp(ids[q], ids[r]) == 0;
        if (ids[r][0])
            add(out, size, &len, "%sGPU %d (%s): rank%s", r ? "; " : "", devices[r], ids[r],
                n > 1 ? "s" : "");
        else add(out, size, &len, "%shost memory: rank%s", r ? "; " : "", n > 1 ? "s" : "");
        for (int q = r, k = 0; q < world; q++)
            if (strcmp(ids[q], ids[r]) == 0) add(out, size, &len, "%s %d", k++ ? "," : "", q);
        if (n > 1 && ids[r][0]) add(out, size, &len, " (shared)");
    }
}

void zt_grid_data_report(int dp, int pp, int tp, const int *devices, const char *const *ids,
                         int stage_all, char *devices_out, size_t devices_size, char *paths,
                         size_t paths_size) {
    static const struct {
        zt_grid_group group;
        const char *name;
    } kinds[] = {{ZT_GRID_GROUP_TP, "tp"},
                 {ZT_GRID_GROUP_DP, "dp"},
                 {ZT_GRID_GROUP_PP, "pp"},
                 {ZT_GRID_GROUP_EMBED, "embed"}};
    int world = dp * pp * tp;
    report_devices(world, devices, ids, devices_out, devices_size);
    int *members = malloc((size_t)world * sizeof *members);
    const char **mids = malloc((size_t)world * sizeof *mids);
    ZT_ASSERTF(members && mids, "out of host memory");
    size_t len = 0;
    paths[0] = 0;
    for (int k = 0; k < 4; k++) {
        if (kinds[k].group == ZT_GRID_GROUP_EMBED && pp == 1) continue;
        int n_nccl = 0, n_staged = 0, n_one = 0, wa = -1, wb = -1; // wa, wb: the first
                                                                    // staged group's pair
        for (int r = 0; r < world; r++) {
            int n = zt_grid_members(kinds[k].group, r, dp, pp, tp, members, world);
            if (members[0] != r) continue; // each group once, by its first member
            if (kinds[k].group == ZT_GRID_GROUP_EMBED && n == 1) continue; // a middle stage
            for (int i = 0; i < n; i++) mids[i] = ids[members[i]];
            int a, b;
            zt_data_path p = zt_grid_group_path(mids, n, stage_all, &a, &b);
            if (p == ZT_DATA_ONE) n_one++;
            else if (p == ZT_DATA_NCCL) n_nccl++;
            else if (n_staged++ == 0) wa = members[a], wb = members[b];
        }
        add(paths, paths_size, &len, "%s%s: ", len ? "; " : "", kinds[k].name);
        if (n_nccl + n_staged == 0) {
            add(paths, paths_size, &len, "one rank, nothing to move");
            continue;
        }
        if (n_staged == 0) {
            add(paths, paths_size, &len, "NCCL");
            continue;
        }
        if (n_nccl) add(paths, paths_size, &len, "NCCL in %d group%s, ", n_nccl,
                        n_nccl == 1 ? "" : "s");
        add(paths, paths_size, &len, "MPI with host staging");
        if (n_nccl) add(paths, paths_size, &len, " in %d", n_staged);
        if (stage_all) add(paths, paths_size, &len, " (--tensor-path staged)");
        else if (!ids[wa][0]) add(paths, paths_size, &len, " (host memory)");
        else add(paths, paths_size, &len, " (ranks %d and %d share GPU %d)", wa, wb, devices[wa]);
    }
    free(members);
    free(mids);
}

// ---- the communicators ----

static void *st_host_alloc(void *ctx, size_t bytes) {
    const zt_backend *be = ctx;
    return be->ops->host_alloc(be, ZT_MEM_COMM, bytes);
}
static void st_host_free(void *ctx, void *p) {
    const zt_backend *be = ctx;
    be->ops->host_free(be, p);
}
static void st_to_host(void *ctx, void *host, const void *dev, size_t bytes) {
    const zt_backend *be = ctx;
    be->ops->copy(be, host, dev, bytes, ZT_COPY_D2H);
}
static void st_to_device(void *ctx, void *dev, const void *host, size_t bytes) {
    const zt_backend *be = ctx;
    be->ops->copy(be, dev, host, bytes, ZT_COPY_H2D);
}

void zt_grid_staging_of(const zt_backend *be, zt_comm_staging *out) {
    *out = (zt_comm_staging){(void *)be, st_host_alloc, st_host_free, st_to_host,
                             st_to_device};
}

typedef struct {
    char id[ZT_GRID_DEVICE_ID];
    int32_t device;
    int32_t pad;
} device_record; // gathered as bytes: 128 per rank

zt_status zt_grid_open_data(zt_grid *g, const zt_backend *be, int stage_all) {
    // every rank decides alike, before any collective: a host backend's path without
    // stage_all is then exactly what it was, not one call more
    if (!be->caps->device_memory && !stage_all) return ZT_OK;
    zt_status s = ZT_OK;

    // every rank's device, over the control path
    device_record mine;
    memset(&mine, 0, sizeof mine);
    mine.device = be->ops->device(be, mine.id, sizeof mine.id);
    device_record *all = calloc((size_t)g->world, sizeof *all);
    const char **ids = calloc((size_t)g->world, sizeof *ids);
    int *devices = calloc((size_t)g->world, sizeof *devices);
    int *members = calloc((size_t)g->world, sizeof *members);
    ZT_ASSERTF(all && ids && devices && members, "out of host memory");
    zt_comm_all_gather(&g->world_comm, &mine, all, (size_t)g->world * sizeof mine, ZT_U8, NULL);
    for (int r = 0; r < g->world; r++) {
        all[r].id[sizeof all[r].id - 1] = 0;
        ids[r] = all[r].id;
        devices[r] = all[r].device;
    }
    // kept for the fit check (src/app/train_checks.c: the ranks on each GPU)
    size_t nw = (unsigned)g->world; // > 0: a grid's world
    g->device_ids = calloc(nw, ZT_GRID_DEVICE_ID);
    g->device_index = calloc(nw, sizeof *g->device_index);
    ZT_ASSERTF(g->device_ids && g->device_index, "out of host memory");
    for (int r = 0; r < g->world; r++) {
        memcpy(g->device_ids + (size_t)r * ZT_GRID_DEVICE_ID, all[r].id, ZT_GRID_DEVICE_ID);
        g->device_index[r] = all[r].device;
    }
    zt_grid_data_report(g->dp, g->pp, g->tp, devices, ids, stage_all, g->devices_report,
                        sizeof g->devices_report, g->paths_report, sizeof g->paths_report);

    // Where every rank has a GPU of its own, one NCCL communicator over the world is made
    // (one bootstrap) and each group split from it (ncclCommSplit, every rank taking part,
    // a group's first world rank its color); else each NCCL group joins on its own.
    zt_comm world_dev;
    memset(&world_dev, 0, sizeof world_dev);
    if (zt_grid_group_path(ids, g->world, stage_all, NULL, NULL) == ZT_DATA_NCCL)
        s = zt_comm_nccl_init(&world_dev, &g->world_comm, be->ops->stream(be));
    if (s != ZT_OK) { // agreed on every rank by the init: the groups would be refused alike
        free(all), free(ids), free(devices), free(members);
        return s;
    }

    // Each kind in the same order on every rank; a group's members all decide alike (they
    // see the same identities), so the NCCL or staging set-up is collective over the group.
    // A group NCCL refuses leaves its path unset; the others still take part in theirs.
    zt_comm_staging st;
    zt_grid_staging_of(be, &st);
    struct {
        zt_grid_group group;
        zt_comm *ctrl, *dev;
        const zt_comm **data;
    } k[] = {{ZT_GRID_GROUP_TP, &g->tp_comm, &g->tp_dev, &g->tp_data},
             {ZT_GRID_GROUP_DP, &g->dp_comm, &g->dp_dev, &g->dp_data},
             {ZT_GRID_GROUP_PP, &g->pp_comm, &g->pp_dev, &g->pp_data},
             {ZT_GRID_GROUP_EMBED, &g->embed_comm, &g->embed_dev, &g->embed_data}};
    for (int i = 0; i < 4; i++) {
        int n = zt_grid_members(k[i].group, g->rank, g->dp, g->pp, g->tp, members, g->world);
        ZT_ASSERT(n == k[i].ctrl->size);
        const char **mids = calloc((size_t)n, sizeof *mids);
        ZT_ASSERTF(mids, "out of host memory");
        for (int j = 0; j < n; j++) mids[j] = ids[members[j]];
        zt_data_path path = zt_grid_group_path(mids, n, stage_all, NULL, NULL);
        free(mids);
        if (world_dev.ops)
            zt_comm_nccl_split(&world_dev, path == ZT_DATA_NCCL ? members[0] : ZT_COMM_UNDEFINED,
                               k[i].ctrl->rank, k[i].dev);
        if (path != ZT_DATA_NCCL) {
            zt_comm_staged_init(k[i].dev, k[i].ctrl, &st, zt_grid_stage_bytes(path));
        } else if (!world_dev.ops) {
            zt_status r = zt_comm_nccl_init(k[i].dev, k[i].ctrl, be->ops->stream(be));
            if (r != ZT_OK && s == ZT_OK) s = r;
            if (r != ZT_OK) continue;
        }
        *k[i].data = k[i].dev;
    }
    zt_comm_free(&world_dev); // the groups' communicators outlive it
    free(all), free(ids), free(devices), free(members);
    return zt_comm_agree(&g->world_comm, s);
}
