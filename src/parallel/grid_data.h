// The tensor path of each group on a device backend (docs/design.md, "Backends"): NCCL where
// every member of the group has a GPU of its own, MPI with host staging where some share one
// (NCCL refuses two ranks of one communicator on one GPU: "Duplicate GPU detected").
#ifndef ZT_GRID_DATA_H
#define ZT_GRID_DATA_H

#include "backend.h"
#include "comm_staged.h"
#include "grid.h"

// ZT_DATA_ONE: a group of one rank, nothing to move: a staged communicator of one rank,
// whose operations in place (all the trainer issues) copy nothing.
typedef enum { ZT_DATA_NCCL = 0, ZT_DATA_STAGED, ZT_DATA_ONE } zt_data_path;

// Bytes of each staging buffer of a group of one rank (only an operation out of place uses
// them, in pieces).
#define ZT_GRID_STAGE_BYTES_ONE ((size_t)64 << 10)

// Bytes of one rank's device record as the grid gathers it (index and identity).
#define ZT_GRID_DEVICE_ID 120

// A device identity and its index in a list (a group's member, a world rank); the order of
// identity, then index, groups ranks by GPU in n log n (qsort with zt_indexed_id_cmp).
typedef struct {
    const char *id;
    int i;
} zt_indexed_id;
int zt_indexed_id_cmp(const void *x, const void *y);

// The path of a group whose members' device identities (zt_backend_i.device's id) are
// ids[0..n): ONE for n == 1; NCCL when they are all different and none is empty (a backend
// without a device: host memory, staged). Otherwise staged, *b (may be NULL) the first member
// in group order without a device (*a == *b) or with an earlier member on its device (*a: the
// first on that device). Pure; n log n.
zt_data_path zt_grid_data_path(const char *const *ids, int n, int *a, int *b);

// The path the grid takes for a group: zt_grid_data_path's, or with `stage_all`
// (--tensor-path staged) MPI with host staging for every group of two or more ranks, their
// devices aside (*a = *b = 0 then). Pure.
zt_data_path zt_grid_group_path(const char *const *ids, int n, int stage_all, int *a, int *b);

// Bytes of each of the two staging buffers a group on path p allocates (ZT_DATA_NCCL: none).
size_t zt_grid_stage_bytes(zt_data_path p);

// The start-up report of a world of dp x pp x tp ranks whose rank r runs on device index
// devices[r], identity ids[r] (pure): into `devices`, which ranks use which GPU, e.g.
//     GPU 0 (node1/0000:01:00.0): ranks 0, 2 (shared); GPU 1 (node1/0000:02:00.0): ranks 1, 3
// and into `paths` each group kind's path over all its groups (zt_grid_group_path with
// stage_all), e.g.
//     tp: NCCL; dp: MPI with host staging (ranks 0 and 2 share GPU 0); pp: ...
// (a kind whose groups differ says how many take each; embed only with pp > 1).
void zt_grid_data_report(int dp, int pp, int tp, const int *devices, const char *const *ids,
                         int stage_all, char *devices_out, size_t devices_size, char *paths,
                         size_t paths_size);

// The copies of backend `be` as comm_staged.h takes them (be is borrowed: it must outlive
// every communicator made with *out).
void zt_grid_staging_of(const zt_backend *be, zt_comm_staging *out);

// Points the grid's tensor paths (tp_data, ...) at device paths when `be` keeps tensors in
// device memory (caps.device_memory), or when `stage_all` (--tensor-path staged) asks for
// host staging of every group on any backend (with the CPU as the device: how the tests run
// the staging). Otherwise nothing changes: the paths stay the grid's MPI communicators.
// Gathers every rank's device (be->ops->device) over the world, then makes each group NCCL
// (comm_nccl.h, on be's stream; split from one world NCCL communicator where every rank has
// its own GPU) or staged over the group's MPI communicator (zt_grid_group_path), and writes
// the reports. Every rank must pass the same stage_all (the run's options agree).
// Collective over the grid's world when it makes device paths; ZT_ERR agreed on every rank
// when NCCL refuses a group (its message). zt_grid_free frees what it made; `be` must
// outlive the grid.
zt_status zt_grid_open_data(zt_grid *g, const zt_backend *be, int stage_all);

#endif
