// Tests of the rank grid (exhaustive over small layouts, no MPI) and of the size-1 self
// communicator.
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm.h"
#include "grid.h"
#include "grid_data.h"
#include "launcher.h"
#include "test.h"

#define MAX_WORLD 64

// Every (dp, pp, tp) with dp*pp*tp <= 64 and every rank: coordinates are in range, the
// inverse gives the rank back, the formula of docs/design.md §1 holds (tp fastest, then dp,
// then pp), and no two ranks share coordinates.
ZT_TEST(grid_coords_roundtrip) {
    int layouts = 0;
    for (int dp = 1; dp <= MAX_WORLD; dp++)
        for (int pp = 1; dp * pp <= MAX_WORLD; pp++)
            for (int tp = 1; dp * pp * tp <= MAX_WORLD; tp++) {
                int world = dp * pp * tp;
                unsigned char seen[MAX_WORLD] = {0};
                for (int r = 0; r < world; r++) {
                    int d = -1, p = -1, t = -1;
                    zt_grid_coords(r, dp, pp, tp, &d, &p, &t);
                    CHECK(d >= 0 && d < dp && p >= 0 && p < pp && t >= 0 && t < tp);
                    CHECK_EQ_INT(zt_grid_rank(d, p, t, dp, pp, tp), r);
                    CHECK_EQ_INT((p * dp + d) * tp + t, r);
                    int code = (p * dp + d) * tp + t; // a coordinate triple's own index
                    CHECK(!seen[code]);
                    seen[code] = 1;
                    // The next rank moves tp first, then dp, then pp.
                    if (r + 1 < world) {
                        int d2, p2, t2;
                        zt_grid_coords(r + 1, dp, pp, tp, &d2, &p2, &t2);
                        if (t + 1 < tp) CHECK(t2 == t + 1 && d2 == d && p2 == p);
                        else if (d + 1 < dp) CHECK(t2 == 0 && d2 == d + 1 && p2 == p);
                        else CHECK(t2 == 0 && d2 == 0 && p2 == p + 1);
                    }
                }
                layouts++;
            }
    printf("  %d layouts checked\n", layouts);
    return ZT_PASS;
}

// Simulates MPI_Comm_split (members ordered by key, ties by rank) on the split arguments
// of every group for every layout up to 64 ranks: each group has the members docs/design.md §1
// says, and the rank inside it equals the coordinate.
ZT_TEST(grid_split_groups) {
    for (int dp = 1; dp <= MAX_WORLD; dp++)
        for (int pp = 1; dp * pp <= MAX_WORLD; pp++)
            for (int tp = 1; dp * pp * tp <= MAX_WORLD; tp++) {
                int world = dp * pp * tp;
                for (int g = 0; g < ZT_GRID_GROUP_COUNT; g++) {
                    int color[MAX_WORLD], key[MAX_WORLD];
                    for (int r = 0; r < world; r++)
                        zt_grid_split_args((zt_grid_group)g, r, dp, pp, tp, &color[r], &key[r]);
                    for (int r = 0; r < world; r++) {
                        int d, p, t;
                        zt_grid_coords(r, dp, pp, tp, &d, &p, &t);
                        int in_embed = p == 0 || p == pp - 1;
                        if (g == ZT_GRID_GROUP_EMBED && !in_embed) {
                            CHECK_EQ_INT(color[r], ZT_COMM_UNDEFINED);
                            continue;
                        }
                        CHECK(color[r] >= 0);
                        // Rank in the simulated split, and the group's size.
                        int new_rank = 0, size = 0;
                        for (int q = 0; q < world; q++) {
                            if (color[q] != color[r]) continue;
                            size++;
                            if (key[q] < key[r] || (key[q] == key[r] && q < r)) new_rank++;
                            int d2, p2, t2;
                            zt_grid_coords(q, dp, pp, tp, &d2, &p2, &t2);
                            switch (g) { // members share the group's fixed coordinates
                            case ZT_GRID_GROUP_TP: CHECK(p2 == p && d2 == d); break;
                            case ZT_GRID_GROUP_DP: CHECK(p2 == p && t2 == t); break;
                            case ZT_GRID_GROUP_PP: CHECK(d2 == d && t2 == t); break;
                            case ZT_GRID_GROUP_EMBED:
                                CHECK(d2 == d && t2 == t && (p2 == 0 || p2 == pp - 1));
                                break;
                            default: break;
                            }
                        }
                        switch (g) {
                        case ZT_GRID_GROUP_WORLD:
                            CHECK_EQ_INT(size, world);
                            CHECK_EQ_INT(new_rank, r);
                            break;
                        case ZT_GRID_GROUP_TP:
                            CHECK_EQ_INT(size, tp);
                            CHECK_EQ_INT(new_rank, t);
                            break;
                        case ZT_GRID_GROUP_DP:
                            CHECK_EQ_INT(size, dp);
                            CHECK_EQ_INT(new_rank, d);
                            break;
                        case ZT_GRID_GROUP_PP:
                            CHECK_EQ_INT(size, pp);
                            CHECK_EQ_INT(new_rank, p);
                            break;
                        case ZT_GRID_GROUP_EMBED:
                            CHECK_EQ_INT(size, pp > 1 ? 2 : 1);
                            CHECK_EQ_INT(new_rank, p == 0 ? 0 : 1);
                            break;
                        }
                    }
                }
            }
    return ZT_PASS;
}

// A bad layout returns ZT_ERR with a message that names the numbers and the fix.
static int layout_error(int world, int dp, int pp, int tp, const char *const *want) {
    int out = -1;
    if (zt_grid_layout(world, dp, pp, tp, &out) != ZT_ERR) {
        fprintf(stderr, "  layout world %d dp %d pp %d tp %d: expected an error\n", world, dp,
                pp, tp);
        return 0;
    }
    const char *msg = zt_error_message();
    printf("  world %d dp %d pp %d tp %d: %s\n", world, dp, pp, tp, msg);
    for (; *want; want++)
        if (!strstr(msg, *want)) {
            fprintf(stderr, "  message lacks \"%s\"\n", *want);
            return 0;
        }
    return out == -1; // dp_out untouched on error
}

ZT_TEST(grid_layout_errors) {
    CHECK(layout_error(6, 0, 2, 2, (const char *const[]){"world size 6", "pp*tp", "= 4",
                                                         "multiple of 4", "--pp/--tp", NULL}));
    CHECK(layout_error(8, 0, 3, 1, (const char *const[]){"world size 8", "= 3", NULL}));
    CHECK(layout_error(8, 3, 2, 2, (const char *const[]){"3*2*2 = 12", "world size 8",
                                                         "launch 12 ranks", "--dp 2", NULL}));
    CHECK(layout_error(6, 2, 2, 2, (const char *const[]){"2*2*2 = 8", "world size 6",
                                                         "launch 8 ranks", NULL}));
    CHECK(layout_error(4, 0, 0, 1, (const char *const[]){"--pp 0", "at least 1", NULL}));
    CHECK(layout_error(4, 0, 1, -2, (const char *const[]){"--tp -2", "at least 1", NULL}));
    CHECK(layout_error(4, -1, 1, 1, (const char *const[]){"--dp -1", NULL}));
    CHECK(layout_error(0, 0, 1, 1, (const char *const[]){"world size 0", NULL}));

    // Good layouts derive dp or accept the one given.
    int dp = 0;
    CHECK(zt_grid_layout(16, 0, 4, 2, &dp) == ZT_OK);
    CHECK_EQ_INT(dp, 2);
    CHECK(zt_grid_layout(16, 2, 4, 2, &dp) == ZT_OK);
    CHECK_EQ_INT(dp, 2);
    CHECK(zt_grid_layout(1, 0, 1, 1, &dp) == ZT_OK);
    CHECK_EQ_INT(dp, 1);
    CHECK(zt_grid_layout(7, 0, 7, 1, &dp) == ZT_OK);
    CHECK_EQ_INT(dp, 1);
    return ZT_PASS;
}

// ---- the self communicator ----

#define GUARD 32

// n floats with GUARD bytes of 0xA5 on both sides, to catch writes past the end.
static float *guarded(size_t n) {
    unsigned char *b = malloc(n * sizeof(float) + 2 * GUARD);
    memset(b, 0xA5, n * sizeof(float) + 2 * GUARD);
    return (float *)(b + GUARD);
}
static int guards_ok(const float *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p - GUARD;
    for (size_t i = 0; i < GUARD; i++)
        if (b[i] != 0xA5 || b[GUARD + n * sizeof(float) + i] != 0xA5) return 0;
    return 1;
}
static void guarded_free(float *p) { free((unsigned char *)p - GUARD); }

ZT_TEST(comm_self_ops) {
    zt_comm c = {0};
    zt_comm_self_init(&c);
    CHECK_EQ_INT(c.rank, 0);
    CHECK_EQ_INT(c.size, 1);
    CHECK(strcmp(c.ops->name, "self") == 0);
    const size_t ns[] = {0, 1, 7, 1000003};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        size_t n = ns[k];
        float *a = guarded(n), *b = guarded(n), *ref = guarded(n);
        for (size_t i = 0; i < n; i++) ref[i] = a[i] = (float)((int)(i % 61) - 30) * 0.5f;
        for (int op = 0; op < ZT_REDUCE_COUNT; op++) {
            // out of place: a copy; in place: nothing changes
            zt_comm_all_reduce(&c, a, b, n, ZT_F32, (zt_reduce_op)op, NULL);
            CHECK(memcmp(b, ref, n * sizeof(float)) == 0);
            memset(b, 0, n * sizeof(float));
            zt_comm_all_reduce(&c, a, a, n, ZT_F32, (zt_reduce_op)op, NULL);
            CHECK(memcmp(a, ref, n * sizeof(float)) == 0);
            zt_comm_reduce_scatter(&c, a, b, n, ZT_F32, (zt_reduce_op)op, NULL);
            CHECK(memcmp(b, ref, n * sizeof(float)) == 0);
            memset(b, 0, n * sizeof(float));
            zt_comm_reduce_scatter(&c, a, a, n, ZT_F32, (zt_reduce_op)op, NULL);
            CHECK(memcmp(a, ref, n * sizeof(float)) == 0);
        }
        zt_comm_all_gather(&c, a, b, n, ZT_F32, NULL);
        CHECK(memcmp(b, ref, n * sizeof(float)) == 0);
        zt_comm_all_gather(&c, a, a, n, ZT_F32, NULL);
        CHECK(memcmp(a, ref, n * sizeof(float)) == 0);
        zt_comm_broadcast(&c, a, n, ZT_F32, 0, NULL);
        CHECK(memcmp(a, ref, n * sizeof(float)) == 0);
        CHECK(guards_ok(a, n) && guards_ok(b, n));
        guarded_free(a);
        guarded_free(b);
        guarded_free(ref);
    }
    // Other dtypes copy their own element size.
    int64_t i64[3] = {1, -(1LL << 40), 3}, o64[3] = {0};
    zt_comm_all_reduce(&c, i64, o64, 3, ZT_I64, ZT_REDUCE_SUM, NULL);
    CHECK(memcmp(i64, o64, sizeof i64) == 0);
    uint8_t u8[5] = {1, 2, 3, 250, 255}, o8[6] = {0};
    zt_comm_all_gather(&c, u8, o8, 5, ZT_U8, NULL);
    CHECK(memcmp(u8, o8, 5) == 0 && o8[5] == 0);
    uint16_t b16[3] = {0x3f80, 0xff80, 0x7fc1}, ob16[4] = {0}; // bf16: 1, -Inf, a NaN, as bits
    zt_comm_reduce_scatter(&c, b16, ob16, 3, ZT_BF16, ZT_REDUCE_SUM, NULL);
    CHECK(memcmp(b16, ob16, sizeof b16) == 0 && ob16[3] == 0);
    zt_comm_barrier(&c, NULL);

    // Nonblocking: done at issue; test says so and clears the request, wait then returns.
    {
        float x[5] = {1, 2, 3, 4, 5}, y[5] = {0};
        zt_comm_req r[4] = {{0}};
        zt_comm_iall_reduce(&c, x, y, 5, ZT_F32, ZT_REDUCE_SUM, NULL, &r[0]);
        CHECK(r[0].c == &c && memcmp(x, y, sizeof x) == 0);
        memset(y, 0, sizeof y);
        zt_comm_ireduce(&c, x, y, 5, ZT_F32, ZT_REDUCE_SUM, 0, NULL, &r[1]);
        CHECK(memcmp(x, y, sizeof x) == 0);
        zt_comm_ireduce_scatter(&c, x, x, 5, ZT_F32, ZT_REDUCE_MAX, NULL, &r[2]);
        zt_comm_iall_gather(&c, x, x, 5, ZT_F32, NULL, &r[3]);
        CHECK(zt_comm_test(&r[0]) == 1 && r[0].c == NULL);
        for (int i = 0; i < 4; i++) zt_comm_wait(&r[i]);
        CHECK(r[3].c == NULL && zt_comm_test(&r[3]) == 1);
        CHECK(x[0] == 1 && x[4] == 5);
    }

    // split: whatever the color, a new size-1 communicator.
    zt_comm s = {0}, u = {0};
    zt_comm_split(&c, 3, 9, &s);
    zt_comm_split(&c, ZT_COMM_UNDEFINED, 0, &u);
    CHECK(s.ops == c.ops && s.size == 1 && s.rank == 0);
    CHECK(u.ops == c.ops && u.size == 1 && u.rank == 0);
    zt_comm_free(&s);
    zt_comm_free(&u);
    CHECK(s.ops == NULL);
    zt_comm_free(&s); // a freed (zero-filled) communicator is accepted again
    zt_comm_free(&c);
    return ZT_PASS;
}

// On one rank the grid is one point: every group is that rank.
ZT_TEST(comm_self_grid) {
    zt_comm world;
    zt_comm_self_init(&world);
    zt_grid g;
    CHECK(zt_grid_init(&g, &world, 0, 1, 1) == ZT_OK);
    CHECK(g.world == 1 && g.dp == 1 && g.pp == 1 && g.tp == 1 && g.rank == 0);
    CHECK(g.dp_rank == 0 && g.pp_rank == 0 && g.tp_rank == 0 && g.in_embed_group == 1);
    const zt_comm *cs[] = {&g.world_comm, &g.tp_comm, &g.dp_comm, &g.pp_comm, &g.embed_comm};
    for (int i = 0; i < 5; i++) CHECK(cs[i]->ops && cs[i]->size == 1 && cs[i]->rank == 0);
    zt_grid_free(&g);
    CHECK(g.world_comm.ops == NULL);

    // A bad layout fails before any split and leaves a grid zt_grid_free accepts.
    CHECK(zt_grid_init(&g, &world, 0, 2, 1) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "world size 1") != NULL);
    zt_grid_free(&g);
    CHECK(zt_grid_init(&g, &world, 2, 1, 1) == ZT_ERR);
    zt_grid_free(&g);
    zt_comm_free(&world);
    return ZT_PASS;
}

// Runs fn in a child process with stderr captured: returns 1 if the child died of SIGABRT
// (a fatal check) and its message contains `want`.
static int dies_with(void (*fn)(void), const char *want) {
    int fd[2];
    if (pipe(fd) != 0) return 0;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        signal(SIGABRT, SIG_DFL);
        fn();
        _exit(0); // not reached when the check fires
    }
    close(fd[1]);
    char msg[1024] = {0};
    size_t len = 0;
    ssize_t k;
    while (len + 1 < sizeof msg && (k = read(fd[0], msg + len, sizeof msg - 1 - len)) > 0)
        len += (size_t)k;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("  child: %s", msg);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(msg, want) != NULL;
}

static void self_send(void) {
    zt_comm c;
    zt_comm_self_init(&c);
    float x = 1;
    zt_comm_send(&c, &x, 1, ZT_F32, 0, 0, NULL);
}
static void self_recv(void) {
    zt_comm c;
    zt_comm_self_init(&c);
    float x = 1;
    zt_comm_recv(&c, &x, 1, ZT_F32, 0, 0, NULL);
}
static void self_send_backend(void) { // past the wrapper: the backend's own backstop
    zt_comm c;
    zt_comm_self_init(&c);
    float x = 1;
    c.ops->send(&c, &x, 1, ZT_F32, 0, 0, NULL);
}
static void self_overlap(void) { // neither the in-place form nor disjoint
    zt_comm c;
    zt_comm_self_init(&c);
    float x[8] = {0};
    zt_comm_all_reduce(&c, x, x + 1, 4, ZT_F32, ZT_REDUCE_SUM, NULL);
}
static void self_stream(void) {
    zt_comm c;
    zt_comm_self_init(&c);
    float x[2] = {0};
    zt_comm_all_reduce(&c, x, x, 2, ZT_F32, ZT_REDUCE_SUM, (void *)x);
}
static void none_comm(void) {
    zt_comm c = {0};
    zt_comm_barrier(&c, NULL);
}

ZT_TEST(comm_self_fatal) {
    CHECK(dies_with(self_send, "send: peer 0 is not another rank"));
    CHECK(dies_with(self_recv, "recv: peer 0 is not another rank"));
    CHECK(dies_with(self_send_backend, "size-1 communicator"));
    CHECK(dies_with(self_overlap, "overlap"));
    CHECK(dies_with(self_stream, "stream must be NULL"));
    CHECK(dies_with(none_comm, "never initialized"));
    return ZT_PASS;
}

// ---- device selection and the tensor path of each group (grid_data.h), no MPI, no GPU ----

// zt_grid_members agrees with the split arguments exhaustively: the members share the rank's
// color, are ordered by key, and every rank with that color is one.
ZT_TEST(grid_members) {
    int out[MAX_WORLD];
    for (int world = 1; world <= 16; world++)
        for (int pp = 1; pp <= world; pp++)
            for (int tp = 1; pp * tp <= world; tp++) {
                if (world % (pp * tp)) continue;
                int dp = world / (pp * tp);
                for (int g = 0; g < ZT_GRID_GROUP_COUNT; g++)
                    for (int r = 0; r < world; r++) {
                        int n = zt_grid_members((zt_grid_group)g, r, dp, pp, tp, out, MAX_WORLD);
                        int color, key, want = 0, found = 0;
                        zt_grid_split_args((zt_grid_group)g, r, dp, pp, tp, &color, &key);
                        if (color == ZT_COMM_UNDEFINED) {
                            CHECK_EQ_INT(n, 1);
                            CHECK_EQ_INT(out[0], r);
                            continue;
                        }
                        for (int q = 0; q < world; q++) {
                            int cq, kq;
                            zt_grid_split_args((zt_grid_group)g, q, dp, pp, tp, &cq, &kq);
                            want += cq == color;
                        }
                        CHECK_EQ_INT(n, want);
                        for (int i = 0; i < n; i++) {
                            int cq, kq, cp, kp;
                            zt_grid_split_args((zt_grid_group)g, out[i], dp, pp, tp, &cq, &kq);
                            CHECK_EQ_INT(cq, color);
                            if (i > 0) {
                                zt_grid_split_args((zt_grid_group)g, out[i - 1], dp, pp, tp,
                                                   &cp, &kp);
                                CHECK(kp < kq);
                            }
                            found += out[i] == r;
                        }
                        CHECK_EQ_INT(found, 1);
                    }
            }
    // the design card's layout: dp 2 x pp 2 x tp 2, rank 5 = (dp 0, pp 1, tp 1)
    int n = zt_grid_members(ZT_GRID_GROUP_DP, 5, 2, 2, 2, out, MAX_WORLD);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(out[0], 5);
    CHECK_EQ_INT(out[1], 7);
    n = zt_grid_members(ZT_GRID_GROUP_EMBED, 7, 2, 2, 2, out, MAX_WORLD);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(out[0], 3);
    CHECK_EQ_INT(out[1], 7);
    return ZT_PASS;
}

// The first member (in group order) with no device or an earlier member on its device, by
// definition: every pair, as zt_grid_data_path did before it sorted.
static zt_data_path data_path_by_pairs(const char *const *ids, int n, int *a, int *b) {
    if (n == 1) return ZT_DATA_ONE;
    for (int i = 0; i < n; i++) {
        if (!ids[i][0]) return *a = *b = i, ZT_DATA_STAGED;
        for (int j = 0; j < i; j++)
            if (strcmp(ids[i], ids[j]) == 0) return *a = j, *b = i, ZT_DATA_STAGED;
    }
    return ZT_DATA_NCCL;
}

// The sorted choice equals the pairwise definition on random groups drawn from few devices
// (many shares), many devices (few) and with hosts without one ("").
ZT_TEST(grid_data_path_matches_pairs) {
    static const char *pool[] = {"", "h1/0:01", "h1/0:02", "h1/0:03", "h2/0:01", "h2/0:02",
                                 "h3/0:01", "h3/0:02", "h4/0:01", "h4/0:02", "h5/0:01"};
    const char *ids[64];
    uint64_t x = 12345;
    for (int trial = 0; trial < 20000; trial++) {
        int n = 1 + trial % 12, spread = 1 + trial % 11, a1 = -1, b1 = -1, a2 = -1, b2 = -1;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            int k = (int)((x >> 33) % (uint64_t)spread);
            ids[i] = pool[trial % 3 ? 1 + k % 10 : k]; // one trial in three may draw ""
        }
        zt_data_path p1 = zt_grid_data_path(ids, n, &a1, &b1);
        zt_data_path p2 = data_path_by_pairs(ids, n, &a2, &b2);
        if (p1 != p2 || (p1 == ZT_DATA_STAGED && (a1 != a2 || b1 != b2))) {
            printf("  trial %d (n %d): path %d (%d, %d), by pairs %d (%d, %d)\n", trial, n, p1,
                   a1, b1, p2, a2, b2);
            return ZT_FAIL;
        }
    }
    return ZT_PASS;
}

// NCCL only when every member has a device of its own; the first pair that shares is named.
ZT_TEST(grid_data_path) {
    int a = -1, b = -1;
    const char *own[] = {"n1/0000:01:00.0", "n1/0000:02:00.0", "n2/0000:01:00.0"};
    CHECK_EQ_INT(zt_grid_data_path(own, 3, &a, &b), ZT_DATA_NCCL); // same bus, other host
    const char *shared[] = {"n1/0000:01:00.0", "n1/0000:02:00.0", "n1/0000:02:00.0",
                            "n1/0000:01:00.0"};
    CHECK_EQ_INT(zt_grid_data_path(shared, 4, &a, &b), ZT_DATA_STAGED);
    CHECK_EQ_INT(a, 1);
    CHECK_EQ_INT(b, 2);
    const char *host[] = {"n1/0000:01:00.0", ""};
    CHECK_EQ_INT(zt_grid_data_path(host, 2, &a, &b), ZT_DATA_STAGED);
    CHECK_EQ_INT(a, 1);
    CHECK_EQ_INT(b, 1);
    CHECK_EQ_INT(zt_grid_data_path(own, 1, NULL, NULL), ZT_DATA_ONE);
    CHECK_EQ_INT(zt_grid_data_path(host + 1, 1, NULL, NULL), ZT_DATA_ONE);
    // --tensor-path staged: every group of two or more, whatever its devices
    CHECK_EQ_INT(zt_grid_group_path(own, 3, 1, &a, &b), ZT_DATA_STAGED);
    CHECK_EQ_INT(zt_grid_group_path(own, 3, 0, &a, &b), ZT_DATA_NCCL);
    CHECK_EQ_INT(zt_grid_group_path(own, 1, 1, NULL, NULL), ZT_DATA_ONE);
    CHECK_EQ_INT(zt_grid_stage_bytes(ZT_DATA_STAGED), ZT_COMM_STAGE_BYTES_DEFAULT);
    CHECK_EQ_INT(zt_grid_stage_bytes(ZT_DATA_ONE), ZT_GRID_STAGE_BYTES_ONE);
    CHECK_EQ_INT(zt_grid_stage_bytes(ZT_DATA_NCCL), 0);
    return ZT_PASS;
}

#define CHECK_STR(got, want)                                                           \
    do {                                                                               \
        if (strcmp((got), (want)) != 0) {                                              \
            fprintf(stderr, "%s:%d: got\n  \"%s\"\nwant\n  \"%s\"\n", __FILE__, __LINE__, \
                    (got), (want));                                                    \
            return ZT_FAIL;                                                            \
        }                                                                              \
    } while (0)

// The start-up report on layouts of one machine with two GPUs and 4 or 8 ranks (each rank's
// GPU picked as the backend picks it: local rank mod 2), and on 2 machines of 2 GPUs.
ZT_TEST(grid_data_report) {
    char dev[1024], paths[1024];
    const char *gpu[] = {"n1/0000:01:00.0", "n1/0000:02:00.0", "n2/0000:01:00.0",
                         "n2/0000:02:00.0"};
    int devices[8];
    const char *ids[8];
    // 4 ranks, dp 2 x tp 2 on one machine of 2 GPUs: the tp pairs (0,1), (2,3) each have
    // both GPUs, the dp pairs (0,2), (1,3) share one
    for (int r = 0; r < 4; r++) {
        int d;
        CHECK(zt_backend_pick_device(-1, r, 2, &d) == ZT_OK);
        devices[r] = d, ids[r] = gpu[d];
    }
    zt_grid_data_report(2, 1, 2, devices, ids, 0, dev, sizeof dev, paths, sizeof paths);
    CHECK_STR(dev, "GPU 0 (n1/0000:01:00.0): ranks 0, 2 (shared); "
                   "GPU 1 (n1/0000:02:00.0): ranks 1, 3 (shared)");
    CHECK_STR(paths, "tp: NCCL; dp: MPI with host staging (ranks 0 and 2 share GPU 0); "
                     "pp: one rank, nothing to move");
    // 8 ranks, pp 2 x tp 2 x dp 2 on one machine of 2 GPUs
    for (int r = 0; r < 8; r++) devices[r] = r % 2, ids[r] = gpu[r % 2];
    zt_grid_data_report(2, 2, 2, devices, ids, 0, dev, sizeof dev, paths, sizeof paths);
    CHECK_STR(paths, "tp: NCCL; dp: MPI with host staging (ranks 0 and 2 share GPU 0); "
                     "pp: MPI with host staging (ranks 0 and 4 share GPU 0); "
                     "embed: MPI with host staging (ranks 0 and 4 share GPU 0)");
    // 4 ranks on 2 machines of 2 GPUs, one each: NCCL everywhere (same bus ids, other hosts)
    for (int r = 0; r < 4; r++) devices[r] = r % 2, ids[r] = gpu[r];
    zt_grid_data_report(2, 2, 1, devices, ids, 0, dev, sizeof dev, paths, sizeof paths);
    CHECK_STR(dev, "GPU 0 (n1/0000:01:00.0): rank 0; GPU 1 (n1/0000:02:00.0): rank 1; "
                   "GPU 0 (n2/0000:01:00.0): rank 2; GPU 1 (n2/0000:02:00.0): rank 3");
    CHECK_STR(paths, "tp: one rank, nothing to move; dp: NCCL; pp: NCCL; embed: NCCL");
    // the same with --tensor-path staged: every group of two staged, groups of one as ever
    zt_grid_data_report(2, 2, 1, devices, ids, 1, dev, sizeof dev, paths, sizeof paths);
    CHECK_STR(paths, "tp: one rank, nothing to move; "
                     "dp: MPI with host staging (--tensor-path staged); "
                     "pp: MPI with host staging (--tensor-path staged); "
                     "embed: MPI with host staging (--tensor-path staged)");
    // mixed: 4 ranks dp 4, ranks 0, 1 on machine 1's two GPUs, ranks 2, 3 sharing machine
    // 2's GPU 0 (pp 1, so the dp groups are one group: staged); with tp 2 the two tp groups
    // differ
    devices[0] = 0, ids[0] = gpu[0];
    devices[1] = 1, ids[1] = gpu[1];
    devices[2] = 0, ids[2] = gpu[2];
    devices[3] = 0, ids[3] = gpu[2];
    zt_grid_data_report(2, 1, 2, devices, ids, 0, dev, sizeof dev, paths, sizeof paths);
    CHECK_STR(paths, "tp: NCCL in 1 group, MPI with host staging in 1 (ranks 2 and 3 share "
                     "GPU 0); dp: NCCL; pp: one rank, nothing to move");
    // a short buffer cuts the report, NUL-terminated
    char tiny[12];
    zt_grid_data_report(2, 1, 2, devices, ids, 0, dev, sizeof dev, tiny, sizeof tiny);
    CHECK_EQ_INT(strlen(tiny), sizeof tiny - 1);
    return ZT_PASS;
}

// Each rank's GPU: --device N as given, else the local rank mod the count; the errors.
ZT_TEST(backend_pick_device) {
    int d = -7;
    for (int count = 1; count <= 8; count++)
        for (int lr = 0; lr < 20; lr++) {
            CHECK(zt_backend_pick_device(-1, lr, count, &d) == ZT_OK);
            CHECK_EQ_INT(d, lr % count);
        }
    CHECK(zt_backend_pick_device(-1, -1, 4, &d) == ZT_OK); // local rank unknown: GPU 0
    CHECK_EQ_INT(d, 0);
    CHECK(zt_backend_pick_device(3, 5, 4, &d) == ZT_OK); // --device 3 on every rank
    CHECK_EQ_INT(d, 3);
    // CUDA_VISIBLE_DEVICES=<one GPU per rank>: every rank sees one, picks 0, its own
    CHECK(zt_backend_pick_device(-1, 3, 1, &d) == ZT_OK);
    CHECK_EQ_INT(d, 0);
    d = -7;
    CHECK(zt_backend_pick_device(4, 0, 4, &d) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "--device 4 does not exist") != NULL);
    CHECK(zt_backend_pick_device(-2, 0, 4, &d) == ZT_ERR);
    CHECK(zt_backend_pick_device(-1, 0, 0, &d) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "no GPU") != NULL);
    CHECK_EQ_INT(d, -7); // untouched on error
    CHECK(zt_backend_check("cpu", &(zt_backend_options){.device = -2}) == ZT_ERR);
    CHECK(zt_backend_check("cpu", &(zt_backend_options){.device = -1}) == ZT_OK);
    return ZT_PASS;
}

// The node-local rank from fake environments: Open MPI's first (mpirun inside a Slurm
// batch script, whose SLURM_LOCALID is the script's), then Hydra's, then srun's.
ZT_TEST(launcher_local_rank) {
    const char *var = "x";
    char *none[] = {"PATH=/bin", "OMPI_COMM_WORLD_LOCAL_RANKX=3", NULL};
    CHECK_EQ_INT(zt_launcher_local_rank_in(none, &var), -1);
    CHECK(var == NULL);
    char *ompi[] = {"SLURM_LOCALID=0", "OMPI_COMM_WORLD_LOCAL_RANK=3", NULL};
    CHECK_EQ_INT(zt_launcher_local_rank_in(ompi, &var), 3);
    CHECK(strcmp(var, "OMPI_COMM_WORLD_LOCAL_RANK") == 0);
    char *hydra[] = {"MPI_LOCALRANKID=2", "SLURM_LOCALID=0", NULL};
    CHECK_EQ_INT(zt_launcher_local_rank_in(hydra, &var), 2);
    CHECK(strcmp(var, "MPI_LOCALRANKID") == 0);
    char *srun[] = {"SLURM_LOCALID=5", NULL};
    CHECK_EQ_INT(zt_launcher_local_rank_in(srun, &var), 5);
    CHECK(strcmp(var, "SLURM_LOCALID") == 0);
    char *bad[] = {"OMPI_COMM_WORLD_LOCAL_RANK=", "SLURM_LOCALID=x", "MPI_LOCALRANKID=1", NULL};
    CHECK_EQ_INT(zt_launcher_local_rank_in(bad, &var), 1); // unset-like values are skipped
    CHECK_EQ_INT(zt_launcher_local_rank_in(NULL, NULL), -1);
    return ZT_PASS;
}
