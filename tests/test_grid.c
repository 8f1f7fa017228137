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
