// The rank grid: rank ↔ (dp, pp, tp) arithmetic, layout checks, and the group
// communicators built by split (docs/design.md §1).
#include "grid.h"

#include <stdlib.h>
#include <string.h>

static void check_dims(int dp, int pp, int tp) {
    ZT_ASSERTF(dp >= 1 && pp >= 1 && tp >= 1, "grid dims dp %d pp %d tp %d must be >= 1", dp, pp,
               tp);
    ZT_ASSERTF((long long)dp * pp * tp <= 0x7fffffffLL, "grid dims dp %d pp %d tp %d overflow",
               dp, pp, tp);
}

void zt_grid_coords(int rank, int dp, int pp, int tp, int *dp_rank, int *pp_rank,
                    int *tp_rank) {
    check_dims(dp, pp, tp);
    ZT_ASSERTF(rank >= 0 && rank < dp * pp * tp, "rank %d outside a grid of %d ranks", rank,
               dp * pp * tp);
    *tp_rank = rank % tp;
    *dp_rank = rank / tp % dp;
    *pp_rank = rank / (tp * dp);
}

int zt_grid_rank(int dp_rank, int pp_rank, int tp_rank, int dp, int pp, int tp) {
    check_dims(dp, pp, tp);
    ZT_ASSERTF(dp_rank >= 0 && dp_rank < dp && pp_rank >= 0 && pp_rank < pp && tp_rank >= 0 &&
                   tp_rank < tp,
               "grid coordinates (dp %d, pp %d, tp %d) outside (%d, %d, %d)", dp_rank, pp_rank,
               tp_rank, dp, pp, tp);
    return (pp_rank * dp + dp_rank) * tp + tp_rank;
}

zt_status zt_grid_layout(int world, int want_dp, int pp, int tp, int *dp_out) {
    if (world < 1) return zt_errorf("world size %d: launch at least one rank", world);
    if (pp < 1) return zt_errorf("--pp %d: the number of pipeline stages must be at least 1", pp);
    if (tp < 1) return zt_errorf("--tp %d: the tensor-parallel degree must be at least 1", tp);
    if (want_dp < 0)
        return zt_errorf("--dp %d: give a data-parallel degree of at least 1, or 0 to derive it "
                         "from the world size",
                         want_dp);
    long long pt = (long long)pp * tp;
    if (want_dp > 0 && (long long)want_dp * pt != world) {
        if (world % pt == 0)
            return zt_errorf("dp*pp*tp = %d*%d*%d = %lld does not match the world size %d: "
                             "launch %lld ranks, or use --dp %lld (or leave --dp unset to "
                             "derive it)",
                             want_dp, pp, tp, (long long)want_dp * pt, world,
                             (long long)want_dp * pt, world / pt);
        return zt_errorf("dp*pp*tp = %d*%d*%d = %lld does not match the world size %d: "
                         "launch %lld ranks or change --dp/--pp/--tp",
                         want_dp, pp, tp, (long long)want_dp * pt, world,
                         (long long)want_dp * pt);
    }
    if (world % pt != 0)
        return zt_errorf("world size %d is not divisible by pp*tp = %d*%d = %lld: launch a "
                         "multiple of %lld ranks or change --pp/--tp",
                         world, pp, tp, pt, pt);
    *dp_out = (int)(world / pt);
    return ZT_OK;
}

void zt_grid_split_args(zt_grid_group group, int rank, int dp, int pp, int tp, int *color,
                        int *key) {
    int d, p, t;
    zt_grid_coords(rank, dp, pp, tp, &d, &p, &t);
    switch (group) {
    case ZT_GRID_GROUP_WORLD:
        *color = 0;
        *key = rank;
        return;
    case ZT_GRID_GROUP_TP:
        *color = p * dp + d;
        *key = t;
        return;
    case ZT_GRID_GROUP_DP:
        *color = p * tp + t;
        *key = d;
        return;
    case ZT_GRID_GROUP_PP:
        *color = d * tp + t;
        *key = p;
        return;
    case ZT_GRID_GROUP_EMBED:
        *color = p == 0 || p == pp - 1 ? d * tp + t : ZT_COMM_UNDEFINED;
        *key = p;
        return;
    default: break;
    }
    zt_fatal(__FILE__, __LINE__, "bad grid group %d", (int)group);
}

int zt_grid_members(zt_grid_group group, int rank, int dp, int pp, int tp, int *out, int cap) {
    int color, key, n = 0;
    zt_grid_split_args(group, rank, dp, pp, tp, &color, &key);
    ZT_ASSERTF(cap >= 1, "zt_grid_members: no room");
    if (color == ZT_COMM_UNDEFINED) {
        out[0] = rank;
        return 1;
    }
    // ranks with the same color, by key: keys are the coordinate along the group, 0..n-1
    int world = dp * pp * tp;
    for (int q = 0; q < world; q++) {
        int cq, kq;
        zt_grid_split_args(group, q, dp, pp, tp, &cq, &kq);
        if (cq != color) continue;
        ZT_ASSERTF(n < cap, "zt_grid_members: more than %d members", cap);
        int i = n++;
        while (i > 0) { // insertion by key (the keys of one group are distinct)
            int cp, kp;
            zt_grid_split_args(group, out[i - 1], dp, pp, tp, &cp, &kp);
            if (kp < kq) break;
            out[i] = out[i - 1];
            i--;
        }
        out[i] = q;
    }
    return n;
}

static void split_group(const zt_grid *g, const zt_comm *world, zt_grid_group group,
                        zt_comm *out) {
    int color, key;
    zt_grid_split_args(group, g->rank, g->dp, g->pp, g->tp, &color, &key);
    zt_comm_split(world, color, key, out);
}

zt_status zt_grid_init(zt_grid *g, const zt_comm *world, int dp, int pp, int tp) {
    ZT_ASSERT(g && world && world->ops);
    memset(g, 0, sizeof *g);
    ZT_TRY(zt_grid_layout(world->size, dp, pp, tp, &g->dp));
    g->world = world->size;
    g->pp = pp;
    g->tp = tp;
    g->rank = world->rank;
    zt_grid_coords(g->rank, g->dp, pp, tp, &g->dp_rank, &g->pp_rank, &g->tp_rank);

    // Every rank makes the same five splits in the same order (collectives on world).
    split_group(g, world, ZT_GRID_GROUP_WORLD, &g->world_comm);
    split_group(g, world, ZT_GRID_GROUP_TP, &g->tp_comm);
    split_group(g, world, ZT_GRID_GROUP_DP, &g->dp_comm);
    split_group(g, world, ZT_GRID_GROUP_PP, &g->pp_comm);
    split_group(g, world, ZT_GRID_GROUP_EMBED, &g->embed_comm);
    g->in_embed_group = g->pp_rank == 0 || g->pp_rank == pp - 1;
    g->tp_data = &g->tp_comm;
    g->dp_data = &g->dp_comm;
    g->pp_data = &g->pp_comm;
    g->embed_data = &g->embed_comm;

    // The key choice above makes these hold; a backend whose split broke it is a bug.
    ZT_ASSERT(g->world_comm.rank == g->rank && g->world_comm.size == g->world);
    ZT_ASSERT(g->tp_comm.rank == g->tp_rank && g->tp_comm.size == tp);
    ZT_ASSERT(g->dp_comm.rank == g->dp_rank && g->dp_comm.size == g->dp);
    ZT_ASSERT(g->pp_comm.rank == g->pp_rank && g->pp_comm.size == pp);
    ZT_ASSERT(g->embed_comm.size == (g->in_embed_group && pp > 1 ? 2 : 1));
    ZT_ASSERT(g->embed_comm.rank == (g->in_embed_group && g->pp_rank > 0 ? 1 : 0));
    return ZT_OK;
}

void zt_grid_free(zt_grid *g) {
    if (!g) return;
    // Reverse order of creation; zt_comm_free skips the ones never made. The device paths
    // first: a staged one borrows its group's communicator.
    zt_comm_free(&g->embed_dev);
    zt_comm_free(&g->pp_dev);
    zt_comm_free(&g->dp_dev);
    zt_comm_free(&g->tp_dev);
    zt_comm_free(&g->embed_comm);
    zt_comm_free(&g->pp_comm);
    zt_comm_free(&g->dp_comm);
    zt_comm_free(&g->tp_comm);
    zt_comm_free(&g->world_comm);
    free(g->device_ids);
    free(g->device_index);
    memset(g, 0, sizeof *g);
}
