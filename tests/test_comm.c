// Tests of the MPI communicator, run under mpirun by tests/sh/comm_mpi.sh: every operation
// on every dtype against a serial computation, exactly (tolerance 0: the inputs are small
// integers times powers of two, so every sum is exact in any order, bf16's too), on the
// world, on the grid's groups and on an arbitrary split; and bf16's rounding, where a sum is
// not exact. Outside mpirun the tests say SKIP.
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16_math.h"
#include "comm_mpi.h"
#include "comm_staged.h"
#include "grid.h"
#include "grid_data.h"
#include "memory.h"
#include "test.h"

#define GUARD 64 // bytes of 0xA5 around every output buffer, to catch writes past its end

typedef struct {
    const char *label; // which communicator
    int fails;
    long checks;
} ctx_t;

static void failf(ctx_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(ctx_t *x, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    // One write per line, so the ranks' lines do not interleave mid-line.
    fprintf(stderr, "  [rank %d] %s: %s\n", zt_log_rank(), x->label, msg);
    x->fails++;
}

// ---- buffers and values ----

typedef struct {
    unsigned char *base;
    void *p;
    size_t bytes;
} gbuf;

static gbuf gb_new(size_t n, zt_dtype dt) {
    gbuf b;
    b.bytes = n * zt_dtype_size(dt);
    b.base = malloc(b.bytes + 2 * GUARD);
    ZT_ASSERT(b.base);
    memset(b.base, 0xA5, b.bytes + 2 * GUARD); // the payload starts as garbage too
    b.p = b.base + GUARD;
    return b;
}
static void gb_free(gbuf *b) { free(b->base); }
static void gb_check_guards(ctx_t *x, const gbuf *b, const char *what) {
    x->checks++;
    for (size_t i = 0; i < GUARD; i++)
        if (b->base[i] != 0xA5 || b->base[GUARD + b->bytes + i] != 0xA5) {
            failf(x, "%s: wrote outside its buffer", what);
            return;
        }
}
static void *at(void *p, size_t i, zt_dtype dt) { return (char *)p + i * zt_dtype_size(dt); }

// Rank r's input element i: a small integer in [-30, 30] depending on r, i and salt,
// scaled by a power of two for floats (sums stay exact), shifted past 32 bits for I64.
static void fill(void *buf, zt_dtype dt, size_t n, int r, int salt) {
    for (size_t i = 0; i < n; i++) {
        int64_t v = (int64_t)((i * 7u + (size_t)r * 13u + (size_t)salt * 5u) % 61u) - 30;
        switch (dt) {
        case ZT_F32: ((float *)buf)[i] = (float)v * 0.5f; break;
        case ZT_F64: ((double *)buf)[i] = (double)v * 0.25; break;
        case ZT_I32: ((int32_t *)buf)[i] = (int32_t)v * 1000 + r; break;
        case ZT_I64: ((int64_t *)buf)[i] = v * ((int64_t)1 << 33) + r; break;
        case ZT_U8: ((uint8_t *)buf)[i] = (uint8_t)(v + 30 + r); break; // sums wrap mod 256
        // halves up to 15: sums over 4 ranks are multiples of 0.5 below 64, 7 significant bits
        case ZT_BF16: ((zt_bf16 *)buf)[i] = zt_bf16_from_fp32((float)v * 0.5f); break;
        default: ZT_ASSERT(0);
        }
    }
}

#define REDUCE_INTO(T)                                               \
    do {                                                             \
        T *a = acc;                                                  \
        const T *b = x;                                              \
        for (size_t i = 0; i < n; i++)                               \
            a[i] = op == ZT_REDUCE_SUM ? (T)(a[i] + b[i]) : (a[i] > b[i] ? a[i] : b[i]); \
    } while (0)

// bf16 in its arithmetic (comm.h): widened, added or compared in fp32, the sum rounded.
static zt_bf16 bf16_reduce(zt_bf16 a, zt_bf16 b, zt_reduce_op op) {
    float x = zt_bf16_to_fp32(a), y = zt_bf16_to_fp32(b);
    return op == ZT_REDUCE_SUM ? zt_bf16_from_fp32(x + y) : x >= y ? a : b;
}

// acc = acc op x, serially, in the dtype's own arithmetic.
static void reduce_into(void *acc, const void *x, size_t n, zt_dtype dt, zt_reduce_op op) {
    switch (dt) {
    case ZT_BF16:
        for (size_t i = 0; i < n; i++)
            ((zt_bf16 *)acc)[i] = bf16_reduce(((zt_bf16 *)acc)[i], ((const zt_bf16 *)x)[i], op);
        break;
    case ZT_F32: REDUCE_INTO(float); break;
    case ZT_F64: REDUCE_INTO(double); break;
    case ZT_I32: REDUCE_INTO(int32_t); break;
    case ZT_I64: REDUCE_INTO(int64_t); break;
    case ZT_U8: REDUCE_INTO(uint8_t); break;
    default: ZT_ASSERT(0);
    }
}

// The reduction over ranks 0..size-1 of fill(., r, salt), computed serially.
static void expect_reduced(void *out, size_t n, zt_dtype dt, zt_reduce_op op, int size,
                           int salt) {
    fill(out, dt, n, 0, salt);
    gbuf tmp = gb_new(n, dt);
    for (int r = 1; r < size; r++) {
        fill(tmp.p, dt, n, r, salt);
        reduce_into(out, tmp.p, n, dt, op);
    }
    gb_free(&tmp);
}

static double as_double(const void *p, size_t i, zt_dtype dt) {
    switch (dt) {
    case ZT_F32: return ((const float *)p)[i];
    case ZT_F64: return ((const double *)p)[i];
    case ZT_I32: return ((const int32_t *)p)[i];
    case ZT_I64: return (double)((const int64_t *)p)[i];
    case ZT_U8: return ((const uint8_t *)p)[i];
    case ZT_BF16: return zt_bf16_to_fp32(((const zt_bf16 *)p)[i]);
    default: return 0;
    }
}

// Bit-exact comparison (tolerance 0); on a mismatch reports how many elements differ,
// the first one and the largest difference.
static void expect_equal(ctx_t *x, const char *what, const void *got, const void *want,
                         size_t n, zt_dtype dt) {
    x->checks++;
    size_t es = zt_dtype_size(dt);
    if (n == 0 || memcmp(got, want, n * es) == 0) return;
    size_t bad = 0, first = 0;
    double maxdiff = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) == 0) continue;
        if (bad++ == 0) first = i;
        double d = as_double(got, i, dt) - as_double(want, i, dt);
        if (d < 0) d = -d;
        if (d > maxdiff) maxdiff = d;
    }
    failf(x, "%s (%s, n=%zu): %zu elements differ, first [%zu] got %.17g want %.17g, "
          "max|diff| %.3g",
          what, zt_dtype_name(dt), n, bad, first, as_double(got, first, dt),
          as_double(want, first, dt), maxdiff);
}

// ---- one check per operation; every rank issues the same collectives whatever fails ----

static const char *op_name(zt_reduce_op op) { return op == ZT_REDUCE_SUM ? "sum" : "max"; }

static void check_all_reduce(ctx_t *x, const zt_comm *c, zt_dtype dt, zt_reduce_op op,
                             size_t n, int salt) {
    char what[64];
    gbuf want = gb_new(n, dt), send = gb_new(n, dt), recv = gb_new(n, dt), in = gb_new(n, dt);
    expect_reduced(want.p, n, dt, op, c->size, salt);

    fill(send.p, dt, n, c->rank, salt);
    zt_comm_all_reduce(c, send.p, recv.p, n, dt, op, NULL);
    snprintf(what, sizeof what, "all_reduce %s", op_name(op));
    expect_equal(x, what, recv.p, want.p, n, dt);
    gb_check_guards(x, &recv, what);
    fill(in.p, dt, n, c->rank, salt);
    expect_equal(x, "all_reduce leaves send alone", send.p, in.p, n, dt);

    fill(in.p, dt, n, c->rank, salt);
    zt_comm_all_reduce(c, in.p, in.p, n, dt, op, NULL);
    snprintf(what, sizeof what, "all_reduce %s in place", op_name(op));
    expect_equal(x, what, in.p, want.p, n, dt);
    gb_check_guards(x, &in, what);
    gb_free(&want), gb_free(&send), gb_free(&recv), gb_free(&in);
}

// count = block * size.
static void check_reduce_scatter(ctx_t *x, const zt_comm *c, zt_dtype dt, zt_reduce_op op,
                                 size_t block, int salt) {
    char what[64];
    size_t count = block * (size_t)c->size;
    gbuf want = gb_new(count, dt), send = gb_new(count, dt), recv = gb_new(block, dt);
    gbuf in = gb_new(count, dt);
    expect_reduced(want.p, count, dt, op, c->size, salt);
    void *mine = at(want.p, (size_t)c->rank * block, dt);

    fill(send.p, dt, count, c->rank, salt);
    zt_comm_reduce_scatter(c, send.p, recv.p, count, dt, op, NULL);
    snprintf(what, sizeof what, "reduce_scatter %s", op_name(op));
    expect_equal(x, what, recv.p, mine, block, dt);
    gb_check_guards(x, &recv, what);
    fill(in.p, dt, count, c->rank, salt);
    expect_equal(x, "reduce_scatter leaves send alone", send.p, in.p, count, dt);

    // In place: the result lands on the rank's own block (comm.h).
    fill(in.p, dt, count, c->rank, salt);
    void *own = at(in.p, (size_t)c->rank * block, dt);
    zt_comm_reduce_scatter(c, in.p, own, count, dt, op, NULL);
    snprintf(what, sizeof what, "reduce_scatter %s in place", op_name(op));
    expect_equal(x, what, own, mine, block, dt);
    gb_check_guards(x, &in, what);
    gb_free(&want), gb_free(&send), gb_free(&recv), gb_free(&in);
}

static void check_all_gather(ctx_t *x, const zt_comm *c, zt_dtype dt, size_t block, int salt) {
    size_t count = block * (size_t)c->size;
    gbuf want = gb_new(count, dt), send = gb_new(block, dt), recv = gb_new(count, dt);
    gbuf in = gb_new(count, dt);
    for (int r = 0; r < c->size; r++) fill(at(want.p, (size_t)r * block, dt), dt, block, r, salt);

    fill(send.p, dt, block, c->rank, salt);
    zt_comm_all_gather(c, send.p, recv.p, count, dt, NULL);
    expect_equal(x, "all_gather", recv.p, want.p, count, dt);
    gb_check_guards(x, &recv, "all_gather");

    // In place: only the rank's own block is set beforehand; the rest is garbage (0xA5).
    void *own = at(in.p, (size_t)c->rank * block, dt);
    fill(own, dt, block, c->rank, salt);
    zt_comm_all_gather(c, own, in.p, count, dt, NULL);
    expect_equal(x, "all_gather in place", in.p, want.p, count, dt);
    gb_check_guards(x, &in, "all_gather in place");
    gb_free(&want), gb_free(&send), gb_free(&recv), gb_free(&in);
}

static void check_broadcast(ctx_t *x, const zt_comm *c, zt_dtype dt, size_t n, int root,
                            int salt) {
    char what[64];
    gbuf want = gb_new(n, dt), buf = gb_new(n, dt);
    fill(want.p, dt, n, root, salt);
    fill(buf.p, dt, n, c->rank, salt); // non-roots start with their own (wrong) values
    zt_comm_broadcast(c, buf.p, n, dt, root, NULL);
    snprintf(what, sizeof what, "broadcast from root %d", root);
    expect_equal(x, what, buf.p, want.p, n, dt);
    gb_check_guards(x, &buf, what);
    gb_free(&want), gb_free(&buf);
}

// A ring with blocking send/recv (rank 0 sends first, the others receive first, so the
// chain cannot deadlock), then send_recv both ways round. Rank r sends n + r elements, so
// neighbours exchange different lengths.
static void check_point_to_point(ctx_t *x, const zt_comm *c, zt_dtype dt, size_t n, int salt) {
    if (c->size < 2) return; // no peer: send/recv to self is fatal by design
    int me = c->rank, next = (me + 1) % c->size, prev = (me + c->size - 1) % c->size;
    size_t n_me = n + (size_t)me, n_prev = n + (size_t)prev, n_next = n + (size_t)next;
    gbuf mine = gb_new(n_me, dt), want = gb_new(n_prev, dt), got = gb_new(n_prev, dt);
    fill(mine.p, dt, n_me, me, salt);
    fill(want.p, dt, n_prev, prev, salt);
    if (me == 0) {
        zt_comm_send(c, mine.p, n_me, dt, next, 7, NULL);
        zt_comm_recv(c, got.p, n_prev, dt, prev, 7, NULL);
    } else {
        zt_comm_recv(c, got.p, n_prev, dt, prev, 7, NULL);
        zt_comm_send(c, mine.p, n_me, dt, next, 7, NULL);
    }
    expect_equal(x, "ring send/recv", got.p, want.p, n_prev, dt);
    gb_check_guards(x, &got, "ring send/recv");

    memset(got.p, 0xA5, got.bytes);
    zt_comm_send_recv(c, mine.p, n_me, next, got.p, n_prev, prev, dt, 11, NULL);
    expect_equal(x, "send_recv forward", got.p, want.p, n_prev, dt);
    gb_check_guards(x, &got, "send_recv forward");

    gbuf want2 = gb_new(n_next, dt), got2 = gb_new(n_next, dt);
    fill(want2.p, dt, n_next, next, salt);
    zt_comm_send_recv(c, mine.p, n_me, prev, got2.p, n_next, next, dt, 12, NULL);
    expect_equal(x, "send_recv backward", got2.p, want2.p, n_next, dt);
    gb_check_guards(x, &got2, "send_recv backward");
    gb_free(&mine), gb_free(&want), gb_free(&got), gb_free(&want2), gb_free(&got2);
}

// isend/irecv where the backend has them: every rank posts two sends to each neighbour
// before any receive (with blocking sends that would wait on each other), then the receives
// in the order sent, completes them in reverse; the two messages of a pair must arrive in
// order, each exact.
static void check_async_point_to_point(ctx_t *x, const zt_comm *c, zt_dtype dt, size_t n,
                                       int salt) {
    if (c->size < 2 || !zt_comm_has_async_p2p(c)) return;
    int me = c->rank, nb[2] = {(me + 1) % c->size, (me + c->size - 1) % c->size};
    enum { N_MSG = 4 }; // [2 * side + k]: message k to / from neighbour side
    gbuf mine[N_MSG], got[N_MSG], want = gb_new(n + 1, dt);
    zt_comm_req req[2 * N_MSG];
    memset(req, 0, sizeof req);
    for (int i = 0; i < N_MSG; i++) {
        mine[i] = gb_new(n + 1, dt), got[i] = gb_new(n + 1, dt);
        fill(mine[i].p, dt, n + 1, me, salt + i);
        zt_comm_isend(c, mine[i].p, n + (size_t)(i & 1), dt, nb[i / 2], 5, NULL, &req[i]);
    }
    // message k from neighbour nb[1 - side] is the one it sent as its own [2 * side + k]
    // (towards this rank: its next is this rank's prev); with 2 ranks both are the one peer,
    // whose four messages then arrive in the order posted
    for (int i = 0; i < N_MSG; i++)
        zt_comm_irecv(c, got[i].p, n + (size_t)(i & 1), dt, nb[1 - i / 2], 5, NULL,
                      &req[N_MSG + i]);
    for (int i = 2 * N_MSG - 1; i >= 0; i--) zt_comm_wait(&req[i]);
    for (int i = 0; i < N_MSG; i++) {
        fill(want.p, dt, n + 1, nb[1 - i / 2], salt + i);
        expect_equal(x, "isend/irecv", got[i].p, want.p, n + (size_t)(i & 1), dt);
        gb_check_guards(x, &got[i], "isend/irecv");
        gb_free(&mine[i]), gb_free(&got[i]);
    }
    gb_free(&want);
}

// An isend met by a blocking recv (the interleaved ring's pattern, src/parallel/pipe_ring.h):
// every rank sends to its next rank without blocking, receives from its previous one, then
// completes the send; exact, and the staged path's pieces of both sides must match.
static void check_isend_to_recv(ctx_t *x, const zt_comm *c, zt_dtype dt, size_t n, int salt) {
    if (c->size < 2 || !zt_comm_has_async_p2p(c)) return;
    int next = (c->rank + 1) % c->size, prev = (c->rank + c->size - 1) % c->size;
    gbuf mine = gb_new(n, dt), got = gb_new(n, dt), want = gb_new(n, dt);
    zt_comm_req req = {0};
    fill(mine.p, dt, n, c->rank, salt);
    zt_comm_isend(c, mine.p, n, dt, next, 3, NULL, &req);
    zt_comm_recv(c, got.p, n, dt, prev, 3, NULL);
    zt_comm_wait(&req);
    fill(want.p, dt, n, prev, salt);
    expect_equal(x, "isend to a blocking recv", got.p, want.p, n, dt);
    gb_check_guards(x, &got, "isend to a blocking recv");
    gb_free(&mine), gb_free(&got), gb_free(&want);
}

// The nonblocking collectives, all in flight at once (issued in one order, completed by
// polling in another, then by wait), each checked exactly against the blocking result:
// all_reduce, reduce to every root in place and not, reduce_scatter in place and not,
// all_gather in place and not. count = block * size.
static void check_nonblocking(ctx_t *x, const zt_comm *c, zt_dtype dt, zt_reduce_op op,
                              size_t block, int salt) {
    enum { AR, AR_IN, RED, RED_IN, RS, RS_IN, AG, AG_IN, BC, N_OPS };
    size_t count = block * (size_t)c->size;
    int root = (salt + 1) % c->size;
    gbuf want = gb_new(count, dt), gath = gb_new(count, dt);
    gbuf send[N_OPS], recv[N_OPS];
    for (int i = 0; i < N_OPS; i++) {
        send[i] = gb_new(count, dt);
        recv[i] = gb_new(count, dt);
        fill(send[i].p, dt, count, c->rank, salt);
    }
    expect_reduced(want.p, count, dt, op, c->size, salt);
    for (int r = 0; r < c->size; r++) fill(at(gath.p, (size_t)r * block, dt), dt, block, r, salt);
    size_t own = (size_t)c->rank * block;
    zt_comm_req req[N_OPS];
    memset(req, 0, sizeof req);
    zt_comm_iall_reduce(c, send[AR].p, recv[AR].p, count, dt, op, NULL, &req[AR]);
    zt_comm_iall_reduce(c, send[AR_IN].p, send[AR_IN].p, count, dt, op, NULL, &req[AR_IN]);
    zt_comm_ireduce(c, send[RED].p, recv[RED].p, count, dt, op, root, NULL, &req[RED]);
    zt_comm_ireduce(c, send[RED_IN].p, send[RED_IN].p, count, dt, op, root, NULL, &req[RED_IN]);
    zt_comm_ireduce_scatter(c, send[RS].p, recv[RS].p, count, dt, op, NULL, &req[RS]);
    zt_comm_ireduce_scatter(c, send[RS_IN].p, at(send[RS_IN].p, own, dt), count, dt, op, NULL,
                            &req[RS_IN]);
    zt_comm_iall_gather(c, send[AG].p, recv[AG].p, count, dt, NULL, &req[AG]);
    memset(send[AG_IN].p, 0xA5, send[AG_IN].bytes); // only the own block is set
    fill(at(send[AG_IN].p, own, dt), dt, block, c->rank, salt);
    zt_comm_iall_gather(c, at(send[AG_IN].p, own, dt), send[AG_IN].p, count, dt, NULL,
                        &req[AG_IN]);
    gbuf bc_want = gb_new(count, dt);
    fill(bc_want.p, dt, count, root, salt);
    zt_comm_ibroadcast(c, send[BC].p, count, dt, root, NULL, &req[BC]);
    // poll from the last one issued (completion order is free), then wait for the rest
    for (int round = 0; round < 64; round++)
        for (int i = N_OPS - 1; i >= 0; i--) zt_comm_test(&req[i]);
    for (int i = 0; i < N_OPS; i++) {
        zt_comm_wait(&req[i]);
        if (req[i].c) failf(x, "op %d: still in flight after zt_comm_wait", i);
    }
    char what[80];
    snprintf(what, sizeof what, "iall_reduce %s", op_name(op));
    expect_equal(x, what, recv[AR].p, want.p, count, dt);
    expect_equal(x, "iall_reduce in place", send[AR_IN].p, want.p, count, dt);
    if (c->rank == root) {
        snprintf(what, sizeof what, "ireduce %s to root %d", op_name(op), root);
        expect_equal(x, what, recv[RED].p, want.p, count, dt);
        expect_equal(x, "ireduce in place", send[RED_IN].p, want.p, count, dt);
    }
    snprintf(what, sizeof what, "ireduce_scatter %s", op_name(op));
    expect_equal(x, what, recv[RS].p, at(want.p, own, dt), block, dt);
    expect_equal(x, "ireduce_scatter in place", at(send[RS_IN].p, own, dt), at(want.p, own, dt),
                 block, dt);
    expect_equal(x, "iall_gather", recv[AG].p, gath.p, count, dt);
    expect_equal(x, "iall_gather in place", send[AG_IN].p, gath.p, count, dt);
    expect_equal(x, "ibroadcast", send[BC].p, bc_want.p, count, dt);
    gb_free(&bc_want);
    for (int i = 0; i < N_OPS; i++) {
        gb_check_guards(x, &send[i], "nonblocking send");
        gb_check_guards(x, &recv[i], "nonblocking recv");
        gb_free(&send[i]), gb_free(&recv[i]);
    }
    gb_free(&want), gb_free(&gath);
}

static const zt_dtype k_dtypes[] = {ZT_F32, ZT_F64, ZT_I32, ZT_I64, ZT_U8, ZT_BF16};
#define N_DTYPES (int)(sizeof k_dtypes / sizeof k_dtypes[0])

// Every operation on c for every dtype and count (a count is the per-rank block of
// reduce_scatter and all_gather).
static void check_comm(ctx_t *x, const zt_comm *c, const size_t *counts, int n_counts) {
    int salt = 0;
    for (int k = 0; k < n_counts; k++)
        for (int d = 0; d < N_DTYPES; d++) {
            zt_dtype dt = k_dtypes[d];
            size_t n = counts[k];
            for (int op = 0; op < ZT_REDUCE_COUNT; op++) {
                check_all_reduce(x, c, dt, (zt_reduce_op)op, n, ++salt);
                check_reduce_scatter(x, c, dt, (zt_reduce_op)op, n, ++salt);
                check_nonblocking(x, c, dt, (zt_reduce_op)op, n, ++salt);
            }
            check_all_gather(x, c, dt, n, ++salt);
            check_broadcast(x, c, dt, n, c->size - 1, ++salt);
            check_broadcast(x, c, dt, n, c->size / 2, ++salt);
            check_point_to_point(x, c, dt, n, ++salt);
            check_async_point_to_point(x, c, dt, n, salt += 4);
        }
    zt_comm_barrier(c, NULL);
}

// The communicator's members, in order, are exactly `want` (world ranks).
static void check_members(ctx_t *x, const zt_comm *c, const char *name, int world_rank,
                          const int *want, int n) {
    x->checks++;
    if (c->size != n) failf(x, "%s: size %d, expected %d", name, c->size, n);
    int32_t *got = calloc((size_t)c->size, sizeof *got), me = world_rank;
    zt_comm_all_gather(c, &me, got, (size_t)c->size, ZT_I32, NULL);
    for (int i = 0; i < c->size && i < n; i++)
        if (got[i] != want[i]) {
            failf(x, "%s: member %d is world rank %d, expected %d", name, i, got[i], want[i]);
            break;
        }
    free(got);
}

// Builds the grid for (pp, tp) on this world and checks each group's members, the ranks in
// them, and every operation on them.
static void check_grid(ctx_t *x, const zt_comm *world, int pp, int tp) {
    char label[64];
    snprintf(label, sizeof label, "grid pp %d tp %d", pp, tp);
    ctx_t gx = {label, 0, 0};
    zt_grid g;
    if (zt_grid_init(&g, world, 0, pp, tp) != ZT_OK) {
        failf(&gx, "zt_grid_init: %s", zt_error_message());
        x->fails += gx.fails;
        return;
    }
    int d = g.dp_rank, p = g.pp_rank, t = g.tp_rank, dp = g.dp;
    int want[64], n;
    for (n = 0; n < tp; n++) want[n] = zt_grid_rank(d, p, n, dp, pp, tp);
    check_members(&gx, &g.tp_comm, "tp", g.rank, want, tp);
    for (n = 0; n < dp; n++) want[n] = zt_grid_rank(n, p, t, dp, pp, tp);
    check_members(&gx, &g.dp_comm, "dp", g.rank, want, dp);
    for (n = 0; n < pp; n++) want[n] = zt_grid_rank(d, n, t, dp, pp, tp);
    check_members(&gx, &g.pp_comm, "pp", g.rank, want, pp);
    for (n = 0; n < g.world; n++) want[n] = n;
    check_members(&gx, &g.world_comm, "world", g.rank, want, g.world);
    n = 0;
    if (g.in_embed_group && pp > 1) {
        want[n++] = zt_grid_rank(d, 0, t, dp, pp, tp);
        want[n++] = zt_grid_rank(d, pp - 1, t, dp, pp, tp);
    } else {
        want[n++] = g.rank;
    }
    check_members(&gx, &g.embed_comm, "embed", g.rank, want, n);
    if (g.in_embed_group != (p == 0 || p == pp - 1)) failf(&gx, "in_embed_group wrong");

    // Every operation on every group, small uneven counts.
    const size_t counts[] = {1, 7, 1003};
    const zt_comm *groups[] = {&g.tp_comm, &g.dp_comm, &g.pp_comm, &g.embed_comm};
    const char *names[] = {"tp", "dp", "pp", "embed"};
    for (int i = 0; i < 4; i++) {
        char sub[96];
        snprintf(sub, sizeof sub, "%s %s", label, names[i]);
        ctx_t cx = {sub, 0, 0};
        check_comm(&cx, groups[i], counts, 3);
        gx.fails += cx.fails;
        gx.checks += cx.checks;
    }
    zt_grid_free(&g);
    x->fails += gx.fails;
    x->checks += gx.checks;
}

// bf16 sums that are not exact round like one fp32 add then one rounding to bf16 (nearest,
// ties to even), not like fp32 (no rounding) nor truncation. Rank 0 adds x, the last rank y,
// the others 0 (exact), so the order MPI combines them in does not matter: want = bf16(x + y).
// count elements cycle through the cases: small goes through MPI's collectives, a count of
// 64 KiB or more through the staging window (where ZT_COMM_MPI_ALGO has one).
static void check_bf16_rounding(ctx_t *x, const zt_comm *c, size_t block) {
    static const struct {
        float x, y, want;
    } k[] = {
        {1.0f, 0x1p-8f, 1.0f},                      // half an ulp: tie, to the even 1
        {1.0f + 0x1p-7f, 0x1p-8f, 1.0f + 0x1p-6f},  // tie from an odd mantissa: up
        {1.0f, 3 * 0x1p-9f, 1.0f + 0x1p-7f},        // above half: up (truncation says 1)
        {1.0f, 0x1p-9f, 1.0f},                      // below half: down
        {-1.0f, -3 * 0x1p-9f, -1.0f - 0x1p-7f},     // the same below zero
        {256.0f, 1.0f, 256.0f},                     // 1 is half of 256's ulp (2): to even
        {256.0f, 3.0f, 260.0f},                     // 259 between 258 and 260: tie, to even
    };
    int nk = (int)(sizeof k / sizeof k[0]), last = c->size - 1;
    size_t count = block * (size_t)c->size;
    gbuf in = gb_new(count, ZT_BF16), out = gb_new(count, ZT_BF16), want = gb_new(count, ZT_BF16);
    zt_bf16 *pi = in.p, *pw = want.p;
    for (size_t i = 0; i < count; i++) {
        float v = c->rank == 0 ? k[i % nk].x : 0.0f;
        if (c->rank == last) v += k[i % nk].y; // one rank: its own x + y
        pi[i] = zt_bf16_from_fp32(c->size == 1 ? k[i % nk].x : v);
        pw[i] = zt_bf16_from_fp32(c->size == 1 ? k[i % nk].x : k[i % nk].want);
    }
    zt_comm_all_reduce(c, in.p, out.p, count, ZT_BF16, ZT_REDUCE_SUM, NULL);
    expect_equal(x, "bf16 all_reduce rounding", out.p, want.p, count, ZT_BF16);
    zt_comm_reduce_scatter(c, in.p, out.p, count, ZT_BF16, ZT_REDUCE_SUM, NULL);
    expect_equal(x, "bf16 reduce_scatter rounding", out.p, at(want.p, (size_t)c->rank * block,
                 ZT_BF16), block, ZT_BF16);
    gb_check_guards(x, &out, "bf16 rounding");
    gb_free(&in), gb_free(&out), gb_free(&want);
}

// The same bf16 all-reduce twice gives the same bits (a sum that rounds at every step, over
// ranks in whatever order the path takes, as long as it is the same each time).
static void check_bf16_repeatable(ctx_t *x, const zt_comm *c, size_t n) {
    gbuf in = gb_new(n, ZT_BF16), a = gb_new(n, ZT_BF16), b = gb_new(n, ZT_BF16);
    uint32_t s = 2463534242u + (uint32_t)c->rank * 7919u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        ((zt_bf16 *)in.p)[i] = zt_bf16_from_fp32((float)(s % 20001u) * 1e-3f - 10.0f);
    }
    zt_comm_all_reduce(c, in.p, a.p, n, ZT_BF16, ZT_REDUCE_SUM, NULL);
    zt_comm_all_reduce(c, in.p, b.p, n, ZT_BF16, ZT_REDUCE_SUM, NULL);
    expect_equal(x, "bf16 all_reduce repeatable", a.p, b.p, n, ZT_BF16);
    gb_free(&in), gb_free(&a), gb_free(&b);
}

ZT_TEST(comm_mpi_collectives) {
    if (!getenv("OMPI_COMM_WORLD_SIZE")) {
        printf("  not launched by mpirun: skipped (tests/sh/comm_mpi.sh runs it)\n");
        return ZT_SKIP;
    }
    zt_comm world;
    zt_comm_mpi_init_world(&world, NULL, NULL);
    CHECK(strcmp(world.ops->name, "mpi") == 0);
    size_t comm_bytes = zt_mem_current(ZT_MEM_COMM); // the world handle's
    ctx_t x = {"world", 0, 0};
    if (world.size != atoi(getenv("OMPI_COMM_WORLD_SIZE")))
        failf(&x, "size %d, mpirun says %s", world.size, getenv("OMPI_COMM_WORLD_SIZE"));

    // 1. The world: uneven counts, one far beyond a cache and not a round number.
    const size_t counts[] = {0, 1, 7, 1000003};
    check_comm(&x, &world, counts, 4);

    // 2. The same on a communicator made with every MPI call limited to 1000 elements
    //    (ZT_COMM_MPI_MAX_COUNT, read when a communicator is made), so all_reduce, broadcast
    //    and point-to-point run in pieces (1000 + rank crosses a piece boundary).
    x.label = "world, 1000-element pieces";
    {
        zt_comm pieces = {0};
        setenv("ZT_COMM_MPI_MAX_COUNT", "1000", 1);
        zt_comm_split(&world, 0, world.rank, &pieces);
        unsetenv("ZT_COMM_MPI_MAX_COUNT");
        const size_t piece_counts[] = {0, 7, 1000, 20011};
        check_comm(&x, &pieces, piece_counts, 4);
        zt_comm_free(&pieces);
    }

    // 3. An arbitrary split: two colors by parity, keys reversing the order.
    x.label = "split parity reversed";
    zt_comm s = {0};
    zt_comm_split(&world, world.rank % 2, -world.rank, &s);
    {
        int want[64], n = 0;
        for (int r = world.size - 1; r >= 0; r--)
            if (r % 2 == world.rank % 2) want[n++] = r;
        check_members(&x, &s, "parity", world.rank, want, n);
        const size_t small[] = {1, 7, 1003};
        check_comm(&x, &s, small, 3);
    }
    zt_comm_free(&s);

    // 4. A split where some ranks join no group: they get a size-1 communicator.
    x.label = "split undefined";
    zt_comm_split(&world, world.rank == 0 ? ZT_COMM_UNDEFINED : 0, world.rank, &s);
    if (world.rank == 0 && (s.size != 1 || s.rank != 0)) failf(&x, "non-member size %d", s.size);
    if (world.rank != 0 && s.size != world.size - 1) failf(&x, "member size %d", s.size);
    {
        const size_t small[] = {7};
        check_comm(&x, &s, small, 1);
    }
    zt_comm_free(&s);

    // 5. The grid's groups for every layout of this world size (dp derived).
    for (int pp = 1; pp <= world.size; pp++)
        for (int tp = 1; pp * tp <= world.size; tp++)
            if (world.size % (pp * tp) == 0) check_grid(&x, &world, pp, tp);

    // 6. bf16 sums that round: small (MPI's collectives) and past the staging threshold.
    x.label = "world, bf16 rounding";
    check_bf16_rounding(&x, &world, 7);
    check_bf16_rounding(&x, &world, 40009);
    check_bf16_repeatable(&x, &world, 7);
    check_bf16_repeatable(&x, &world, 100003);

    // 7. A bad layout fails the same way on every rank, before any collective.
    x.label = "world";
    {
        zt_grid g;
        if (zt_grid_init(&g, &world, 0, world.size + 1, 1) != ZT_ERR) failf(&x, "bad layout ok");
        zt_grid_free(&g);
    }

    // Every communicator made above was freed, with its memory.
    if (zt_mem_current(ZT_MEM_COMM) != comm_bytes)
        failf(&x, "ZT_MEM_COMM holds %zu bytes, expected %zu", zt_mem_current(ZT_MEM_COMM),
              comm_bytes);

    // Every rank must agree, so the exit code is right on each one.
    int32_t fails = x.fails, any = 0;
    zt_comm_all_reduce(&world, &fails, &any, 1, ZT_I32, ZT_REDUCE_SUM, NULL);
    if (world.rank == 0)
        printf("  %d ranks: %ld checks on rank 0, %d failures over all ranks\n", world.size,
               x.checks, any);
    zt_comm_free(&world);
    zt_comm_mpi_finalize();
    return any ? ZT_FAIL : ZT_PASS;
}

// Fault injection for tests/sh/comm_mpi.sh (ZT_COMM_FAULT=mpi|assert|exit, at least 2 ranks):
// rank 1 fails while every other rank waits in a barrier; the job must end with a
// non-zero status and rank 1's message instead of hanging.
ZT_TEST(comm_mpi_fault) {
    const char *mode = getenv("ZT_COMM_FAULT");
    if (!getenv("OMPI_COMM_WORLD_SIZE") || !mode) {
        printf("  fault injection, run only by tests/sh/comm_mpi.sh: skipped\n");
        return ZT_SKIP;
    }
    zt_comm world;
    zt_comm_mpi_init_world(&world, NULL, NULL);
    CHECK(world.size >= 2);
    int32_t buf[10] = {0};
    if (world.rank == 0 && strcmp(mode, "mpi") == 0)
        zt_comm_send(&world, buf, 10, ZT_I32, 1, 0, NULL); // small: completes eagerly
    if (world.rank == 1) {
        if (strcmp(mode, "mpi") == 0) // a message longer than the receive: MPI_ERR_TRUNCATE
            zt_comm_recv(&world, buf, 5, ZT_I32, 0, 0, NULL);
        else if (strcmp(mode, "assert") == 0) // a fatal check of ours (send to self)
            zt_comm_send(&world, buf, 1, ZT_I32, 1, 0, NULL);
        else
            exit(3); // a rank that just dies
    }
    zt_comm_barrier(&world, NULL); // everyone else waits here forever unless the job ends
    zt_comm_free(&world);
    zt_comm_mpi_finalize();
    return ZT_FAIL; // reaching this means the fault went unnoticed
}

// ---- the MPI backend's settings (comm_mpi.h): the ZT_COMM_* variables, parsed once ----

static const char *const k_comm_vars[] = {"ZT_COMM_MPI_ALGO", "ZT_COMM_MPI_STAGE_KIB",
                                          "ZT_COMM_MPI_MAX_COUNT", "ZT_COMM_TIMEOUT_S",
                                          "ZT_COMM_TIMEOUT_FLOOR_S"};
#define N_COMM_VARS (sizeof k_comm_vars / sizeof k_comm_vars[0])

// Parses the environment with `name`=`value` set (the others unset); NULL `name`: none.
static zt_status settings_with(zt_comm_mpi_settings *s, const char *name, const char *value) {
    for (size_t i = 0; i < N_COMM_VARS; i++) unsetenv(k_comm_vars[i]);
    if (name) setenv(name, value, 1);
    return zt_comm_mpi_settings_from_env(s);
}

// The status is ZT_ERR and the message begins with `prefix`.
static int refused(zt_status st, const char *prefix) {
    return st == ZT_ERR && strncmp(zt_error_message(), prefix, strlen(prefix)) == 0;
}

static int settings_cases(void) {
    zt_comm_mpi_settings s;
    CHECK(settings_with(&s, NULL, NULL) == ZT_OK); // the defaults
    CHECK(s.algo == ZT_COMM_MPI_ALGO_STAGE && s.stage_kib == 256 && s.max_count == INT_MAX);
    CHECK(s.timeout_auto && s.timeout_s == 0 && s.timeout_floor_s == 300);
    CHECK(settings_with(&s, "ZT_COMM_MPI_ALGO", "") == ZT_OK && s.algo == ZT_COMM_MPI_ALGO_STAGE);
    CHECK(settings_with(&s, "ZT_COMM_MPI_ALGO", "stage-all") == ZT_OK);
    CHECK(s.algo == ZT_COMM_MPI_ALGO_STAGE_ALL && s.stage_kib == 256);
    CHECK(settings_with(&s, "ZT_COMM_MPI_ALGO", "mpi") == ZT_OK);
    CHECK(s.algo == ZT_COMM_MPI_ALGO_MPI && s.stage_kib == 0);
    CHECK(settings_with(&s, "ZT_COMM_MPI_STAGE_KIB", "64") == ZT_OK && s.stage_kib == 64);
    CHECK(settings_with(&s, "ZT_COMM_MPI_MAX_COUNT", "1000") == ZT_OK && s.max_count == 1000);
    CHECK(settings_with(&s, "ZT_COMM_TIMEOUT_S", "2.5") == ZT_OK);
    CHECK(!s.timeout_auto && s.timeout_s == 2.5);
    CHECK(settings_with(&s, "ZT_COMM_TIMEOUT_S", "auto") == ZT_OK && s.timeout_auto);
    CHECK(settings_with(&s, "ZT_COMM_TIMEOUT_FLOOR_S", "3") == ZT_OK && s.timeout_floor_s == 3);

    // A bad value: one message naming it; its own part falls back, the rest is read.
    CHECK(refused(settings_with(&s, "ZT_COMM_MPI_ALGO", "bogus"), "ZT_COMM_MPI_ALGO=bogus: use"));
    CHECK(s.algo == ZT_COMM_MPI_ALGO_STAGE && s.stage_kib == 256 && s.timeout_auto);
    CHECK(refused(settings_with(&s, "ZT_COMM_MPI_STAGE_KIB", "2"), "ZT_COMM_MPI_STAGE_KIB=2:"));
    CHECK(s.stage_kib == 256);
    CHECK(zt_comm_mpi_settings_from_env(&s) == ZT_ERR);
    CHECK(refused(settings_with(&s, "ZT_COMM_MPI_MAX_COUNT", "0"), "ZT_COMM_MPI_MAX_COUNT=0:"));
    CHECK(s.max_count == INT_MAX);
    CHECK(refused(settings_with(&s, "ZT_COMM_MPI_MAX_COUNT", "2147483648"),
                  "ZT_COMM_MPI_MAX_COUNT=2147483648:"));
    CHECK(refused(settings_with(&s, "ZT_COMM_MPI_MAX_COUNT", "9x"), "ZT_COMM_MPI_MAX_COUNT=9x:"));
    CHECK(refused(settings_with(&s, "ZT_COMM_TIMEOUT_S", "-1"), "ZT_COMM_TIMEOUT_S=-1: give"));
    CHECK(!s.timeout_auto && s.timeout_s == 0); // no timeout
    CHECK(refused(settings_with(&s, "ZT_COMM_TIMEOUT_S", "nan"), "ZT_COMM_TIMEOUT_S=nan: give"));
    CHECK(refused(settings_with(&s, "ZT_COMM_TIMEOUT_FLOOR_S", "0"),
                  "ZT_COMM_TIMEOUT_FLOOR_S=0: give"));
    CHECK(!s.timeout_auto && s.timeout_s == 0 && s.timeout_floor_s == 300);

    // Two bad values: the first in comm_mpi.h's order is the one named.
    settings_with(&s, "ZT_COMM_TIMEOUT_S", "soon");
    setenv("ZT_COMM_MPI_ALGO", "bogus", 1);
    CHECK(refused(zt_comm_mpi_settings_from_env(&s), "ZT_COMM_MPI_ALGO=bogus"));
    // A bad staging value leaves a good timeout read.
    settings_with(&s, "ZT_COMM_TIMEOUT_S", "7");
    setenv("ZT_COMM_MPI_STAGE_KIB", "huge", 1);
    CHECK(refused(zt_comm_mpi_settings_from_env(&s), "ZT_COMM_MPI_STAGE_KIB=huge"));
    CHECK(s.timeout_s == 7 && !s.timeout_auto);

    // The same parser under other names (the program's options): the message names them.
    zt_comm_mpi_texts t = {{"--a", "--b", "--c", "--d", "--e"}, {"mpi", "", "1000", "0", NULL}};
    CHECK(zt_comm_mpi_settings_parse(&t, &s) == ZT_OK);
    CHECK(s.algo == ZT_COMM_MPI_ALGO_MPI && s.stage_kib == 0 && s.max_count == 1000);
    CHECK(!s.timeout_auto && s.timeout_s == 0 && s.timeout_floor_s == 300);
    t.value[ZT_COMM_SET_TIMEOUT] = "soon";
    CHECK(refused(zt_comm_mpi_settings_parse(&t, &s), "--d=soon: give the seconds"));
    return ZT_PASS;
}

// The one parser of the ZT_COMM_* variables: defaults, each value read, each bad value refused
// with its name, and what a bad value falls back to. The caller's environment is restored.
ZT_TEST(comm_mpi_settings) {
    char *saved[N_COMM_VARS];
    for (size_t i = 0; i < N_COMM_VARS; i++) {
        const char *v = getenv(k_comm_vars[i]);
        saved[i] = v ? strdup(v) : NULL;
    }
    int rc = settings_cases();
    for (size_t i = 0; i < N_COMM_VARS; i++) {
        if (saved[i]) setenv(k_comm_vars[i], saved[i], 1);
        else unsetenv(k_comm_vars[i]);
        free(saved[i]);
    }
    return rc;
}

// ---- host staging (comm_staged.h) with the CPU backend as the "device" ----

// Staged and plain give the same bits on inputs whose sums round (random floats): the staged
// path runs the plain path's own operation on host copies. One piece (the staging buffer
// holds the whole buffer), so the plain call and the inner call have the same length.
static void check_staged_bits(ctx_t *x, const zt_comm *plain, const zt_comm *staged,
                              zt_dtype dt, size_t block) {
    size_t count = block * (size_t)plain->size, es = zt_dtype_size(dt);
    gbuf in = gb_new(count, dt), a = gb_new(count, dt), b = gb_new(count, dt);
    uint32_t s = 2463534242u + (uint32_t)plain->rank * 7919u;
    for (size_t i = 0; i < count; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        float v = (float)(s % 2000003u) * 1.37e-4f - 137.0f;
        if (dt == ZT_F32) ((float *)in.p)[i] = v;
        else ((zt_bf16 *)in.p)[i] = zt_bf16_from_fp32(v);
    }
    x->checks++;
    zt_comm_all_reduce(plain, in.p, a.p, count, dt, ZT_REDUCE_SUM, NULL);
    zt_comm_all_reduce(staged, in.p, b.p, count, dt, ZT_REDUCE_SUM, NULL);
    if (memcmp(a.p, b.p, count * es)) failf(x, "staged all_reduce differs from plain MPI");
    zt_comm_reduce_scatter(plain, in.p, a.p, count, dt, ZT_REDUCE_SUM, NULL);
    zt_comm_reduce_scatter(staged, in.p, b.p, count, dt, ZT_REDUCE_SUM, NULL);
    if (memcmp(a.p, b.p, block * es)) failf(x, "staged reduce_scatter differs from plain MPI");
    zt_comm_all_gather(plain, in.p, a.p, count, dt, NULL);
    zt_comm_all_gather(staged, in.p, b.p, count, dt, NULL);
    if (memcmp(a.p, b.p, count * es)) failf(x, "staged all_gather differs from plain MPI");
    gb_check_guards(x, &b, "staged bits");
    gb_free(&in), gb_free(&a), gb_free(&b);
}

// Every operation of comm.h on every dtype through host staging over MPI, exactly (the
// serial oracle of comm_mpi_collectives), with the CPU backend's memory as device memory
// (its copies are memcpy): a staging buffer that holds everything, one so small that every
// operation runs in pieces (reduce_scatter and all_gather in slices of every block), a split
// of a staged communicator, and the grid's groups staged by zt_grid_open_data
// (--tensor-path staged). Then staged == plain MPI bit for bit on sums that round.
ZT_TEST(comm_staged_collectives) {
    if (!getenv("OMPI_COMM_WORLD_SIZE")) {
        printf("  not launched by mpirun: skipped (tests/sh/comm_mpi.sh runs it)\n");
        return ZT_SKIP;
    }
    zt_comm world;
    zt_comm_mpi_init_world(&world, NULL, NULL);
    size_t comm_bytes = zt_mem_current(ZT_MEM_COMM);
    const zt_backend *cpu = zt_test_cpu();
    zt_comm_staging st;
    zt_grid_staging_of(cpu, &st);
    ctx_t x = {"staged world", 0, 0};

    // 1. One piece per operation (up to 1000003 x 8 bytes). Nonblocking point-to-point once
    //    reserved: check_async_point_to_point holds 8 messages of up to count + 1 elements.
    zt_comm big;
    zt_comm_staged_init(&big, &world, &st, ZT_COMM_STAGE_BYTES_DEFAULT);
    if (strcmp(big.ops->name, "staged") || big.rank != world.rank || big.size != world.size)
        failf(&x, "staged communicator: %s rank %d size %d", big.ops->name, big.rank, big.size);
    x.checks++;
    if (zt_comm_has_async_p2p(&big) || !zt_comm_is_staged(&big) || zt_comm_is_staged(&world))
        failf(&x, "staged: isend before reserving, or zt_comm_is_staged wrong");
    zt_comm_staged_reserve_p2p(&big, 8, 8 * 1000004);
    if (!zt_comm_has_async_p2p(&big)) failf(&x, "staged: no isend after reserving");
    const size_t counts[] = {0, 1, 7, 1000003};
    check_comm(&x, &big, counts, 4);
    x.label = "staged world, bf16 rounding";
    check_bf16_rounding(&x, &big, 7);
    check_bf16_rounding(&x, &big, 40009);
    x.label = "staged == plain";
    check_staged_bits(&x, &world, &big, ZT_F32, 1);
    check_staged_bits(&x, &world, &big, ZT_F32, 100003);
    check_staged_bits(&x, &world, &big, ZT_BF16, 100003);

    // 2. A staging buffer of 8 bytes per rank: every operation beyond one element of the
    //    widest dtype per rank runs in pieces (point-to-point lengths cross piece bounds).
    x.label = "staged world, pieces";
    zt_comm small;
    zt_comm_staged_init(&small, &world, &st, 8 * (size_t)world.size);
    zt_comm_staged_reserve_p2p(&small, 8, 8 * 62);
    const size_t piece_counts[] = {0, 1, 7, 61};
    check_comm(&x, &small, piece_counts, 4);
    for (int d = 0; d < N_DTYPES; d++) check_isend_to_recv(&x, &small, k_dtypes[d], 61, d);
    zt_comm_free(&small);
    x.label = "staged world, 1000-byte pieces";
    zt_comm_staged_init(&small, &world, &st, 1000);
    zt_comm_staged_reserve_p2p(&small, 8, 8 * 20012);
    const size_t mid_counts[] = {1003, 20011};
    check_comm(&x, &small, mid_counts, 2);
    for (int d = 0; d < N_DTYPES; d++) check_isend_to_recv(&x, &small, k_dtypes[d], 20011, d);
    check_bf16_rounding(&x, &small, 4001);

    // 3. A split of a staged communicator is staged (pieces included).
    x.label = "staged split parity reversed";
    zt_comm s = {0};
    zt_comm_split(&small, world.rank % 2, -world.rank, &s);
    if (strcmp(s.ops->name, "staged")) failf(&x, "split of staged is %s", s.ops->name);
    const size_t split_counts[] = {1, 7, 1003};
    check_comm(&x, &s, split_counts, 3);
    zt_comm_free(&s);
    zt_comm_free(&small);
    zt_comm_free(&big);

    // 4. The grid's tensor paths, staged by the grid itself (--tensor-path staged), for every
    // layout.
    for (int pp = 1; pp <= world.size; pp++)
        for (int tp = 1; pp * tp <= world.size; tp++) {
            if (world.size % (pp * tp)) continue;
            char label[64];
            snprintf(label, sizeof label, "staged grid pp %d tp %d", pp, tp);
            x.label = label;
            zt_grid g;
            if (zt_grid_init(&g, &world, 0, pp, tp) != ZT_OK ||
                zt_grid_open_data(&g, cpu, 1) != ZT_OK) {
                failf(&x, "grid: %s", zt_error_message());
                zt_grid_free(&g);
                continue;
            }
            const zt_comm *paths[] = {g.tp_data, g.dp_data, g.pp_data, g.embed_data};
            const zt_comm *ctrl[] = {&g.tp_comm, &g.dp_comm, &g.pp_comm, &g.embed_comm};
            for (int i = 0; i < 4; i++) {
                x.checks++;
                if (paths[i] == ctrl[i] || strcmp(paths[i]->ops->name, "staged") ||
                    paths[i]->rank != ctrl[i]->rank || paths[i]->size != ctrl[i]->size)
                    failf(&x, "path %d is not its group staged", i);
                const size_t c3[] = {1, 7, 1003};
                check_comm(&x, paths[i], c3, 3);
            }
            if (world.rank == 0 && pp == 1 && tp == 1)
                printf("  devices: %s\n  tensor paths: %s\n", g.devices_report, g.paths_report);
            zt_grid_free(&g);
        }

    // The staging buffers (host memory counted under comm on the CPU) are all freed.
    x.label = "staged world";
    if (zt_mem_current(ZT_MEM_COMM) != comm_bytes)
        failf(&x, "ZT_MEM_COMM holds %zu bytes, expected %zu", zt_mem_current(ZT_MEM_COMM),
              comm_bytes);
    int32_t fails = x.fails, any = 0;
    zt_comm_all_reduce(&world, &fails, &any, 1, ZT_I32, ZT_REDUCE_SUM, NULL);
    if (world.rank == 0)
        printf("  %d ranks: %ld checks on rank 0, %d failures over all ranks\n", world.size,
               x.checks, any);
    zt_comm_free(&world);
    zt_comm_mpi_finalize();
    return any ? ZT_FAIL : ZT_PASS;
}
