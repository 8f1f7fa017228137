// The rank grid: world = dp × pp × tp, the rank ↔ (dp, pp, tp) arithmetic as pure
// functions, and the communicators of every group (docs/design.md §1), made only by split.
//
//     rank = (pp_rank * dp + dp_rank) * tp + tp_rank
//
// tp varies fastest (the ranks of one tp group are neighbours, so on one node), then dp,
// then pp.
#ifndef ZT_GRID_H
#define ZT_GRID_H

#include "comm.h"
#include "common.h"

// rank -> coordinates. Fatal (a bug) unless dp, pp, tp >= 1 and 0 <= rank < dp*pp*tp.
void zt_grid_coords(int rank, int dp, int pp, int tp, int *dp_rank, int *pp_rank,
                    int *tp_rank);
// coordinates -> rank, the inverse. Fatal unless every coordinate is in range.
int zt_grid_rank(int dp_rank, int pp_rank, int tp_rank, int dp, int pp, int tp);

// Checks a layout the user asked for and derives dp. want_dp = 0 derives dp = world/(pp*tp).
// On success sets *dp_out. On a bad layout returns ZT_ERR with one message (zt_errorf)
// naming the numbers and the fix; every rank computes the same answer, so every rank can
// stop before any collective, and rank 0 prints it.
zt_status zt_grid_layout(int world, int want_dp, int pp, int tp, int *dp_out);

// The groups of docs/design.md §1.
typedef enum {
    ZT_GRID_GROUP_WORLD = 0, // everyone
    ZT_GRID_GROUP_TP,        // same (pp, dp)
    ZT_GRID_GROUP_DP,        // same (pp, tp)
    ZT_GRID_GROUP_PP,        // same (dp, tp)
    ZT_GRID_GROUP_EMBED,     // first and last pp stage, same (dp, tp)
    ZT_GRID_GROUP_COUNT
} zt_grid_group;

// The split arguments that make `group` for `rank`: ranks with equal color form the group,
// and key = the rank's coordinate along the group (tp_rank, dp_rank, pp_rank; the world
// rank for world; pp_rank for embed, so the first stage is embed rank 0), so the rank in
// the new communicator equals the coordinate. color is ZT_COMM_UNDEFINED for a rank
// outside the embed group (a middle stage). Pure; fatal on out-of-range input.
void zt_grid_split_args(zt_grid_group group, int rank, int dp, int pp, int tp, int *color,
                        int *key);

typedef struct {
    int world, dp, pp, tp;          // world = dp * pp * tp
    int rank;                       // in world
    int dp_rank, pp_rank, tp_rank;  // this rank's coordinates
    zt_comm world_comm;             // everyone, ordered by world rank
    zt_comm tp_comm;                // rank in it = tp_rank, size tp
    zt_comm dp_comm;                // rank in it = dp_rank, size dp
    zt_comm pp_comm;                // rank in it = pp_rank, size pp
    zt_comm embed_comm;             // first stage = rank 0, last = rank 1 (size 2 when
                                    // pp > 1, 1 when pp == 1); size 1 off the group
    int in_embed_group;             // first or last stage (always when pp == 1)
    // The tensor path of each group (docs/design.md §6: control and data travel apart). The
    // communicators above carry control (scalars, agreements, checks) in host memory;
    // tensors in the backend's memory go through these. On the CPU they are the same
    // MPI communicators; a GPU backend points them at NCCL (or staged MPI) instead.
    const zt_comm *tp_data, *dp_data, *pp_data, *embed_data;
    // A device backend's tensor paths (grid_data.h: NCCL, or MPI with host staging), the
    // ones above point at; zero-filled on a host backend.
    zt_comm tp_dev, dp_dev, pp_dev, embed_dev;
    // What grid_data.h chose, for the start-up report ("" on a host backend): which GPU
    // each rank uses, and each group's path.
    char devices_report[1024], paths_report[1024];
    // Every rank's device as the grid gathered it (zt_backend_i.device), indexed by world
    // rank, kept for the fit check (which ranks share a GPU): device_ids holds world
    // identities of ZT_GRID_DEVICE_ID bytes each (grid_data.h), device_index the indices.
    // NULL where zt_grid_open_data gathered nothing (a host backend without staging).
    char *device_ids;  // (world, ZT_GRID_DEVICE_ID)
    int *device_index; // (world)
} zt_grid;

// Checks the layout (zt_grid_layout on world->size; dp = 0 derives it) and returns its
// ZT_ERR before any collective; then builds every communicator by splitting `world`
// (collective: every rank of `world` calls it with the same dp, pp, tp). `world` stays the
// caller's. Free with zt_grid_free, which also accepts a grid that failed half-way or a
// zero-filled one.
zt_status zt_grid_init(zt_grid *g, const zt_comm *world, int dp, int pp, int tp);
// The world ranks of `rank`'s group `group`, in the group's rank order, into out[0..cap);
// returns how many (fatal above cap). A rank outside the embed group: itself alone. Pure.
int zt_grid_members(zt_grid_group group, int rank, int dp, int pp, int tp, int *out, int cap);
void zt_grid_free(zt_grid *g);

#endif
