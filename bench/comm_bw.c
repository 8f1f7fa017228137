// Collective bandwidth: reduce-scatter, all-gather and all-reduce through zerotrain's comm
// layer (zt_comm_*) against the plain MPI calls of the same size, in one run, interleaved
// so that noise on a shared machine hits both. Reported the nccl-tests way.
//
//   mpirun --oversubscribe --allow-run-as-root -np 2 build/comm_bw [options]
//     --min-mib N    smallest buffer, MiB (default 1)
//     --max-mib N    largest buffer, MiB (default 256; sizes double from min to max)
//     --min-kib N, --max-kib N   the same in KiB
//     --reps N       timed repetitions per size and case (default 9; median reported)
//     --warmup N     untimed repetitions first (default 2)
//     --thp          madvise(MADV_HUGEPAGE) on the benchmark buffers before touching them
//     --variants     also time other ways to reduce-scatter with plain MPI (see below)
//     --stage-kib K,.. also time zt communicators made with ZT_COMM_MPI_STAGE_KIB=K
//                    (rows "zt_slotKk"; "zt" is the default slot)
//     --algo A,..    also time zt communicators made with ZT_COMM_MPI_ALGO=A (rows "zt_A")
//     --ops sgr      which collectives: s reduce-scatter, g all-gather, r all-reduce
//
// "size" is the whole buffer of floats: the send buffer of reduce-scatter, the receive
// buffer of all-gather, the buffer of all-reduce (nccl-tests' convention), so
//     algbw = size / time
//     busbw = algbw * 2(n-1)/n   (all-reduce)
//     busbw = algbw * (n-1)/n    (reduce-scatter, all-gather)
// busbw is the per-rank link bandwidth a ring would need, so the three are comparable.
// Every case runs in the in-place form the training step uses (comm.h):
//     reduce-scatter  zt_comm_reduce_scatter(c, buf, buf + r*B, N)   vs
//                     MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, B)
//     all-gather      zt_comm_all_gather(c, buf + r*B, buf, N)       vs
//                     MPI_Allgather(MPI_IN_PLACE, ..., buf, B)
//     all-reduce      zt_comm_all_reduce(c, buf, buf, N)             vs
//                     MPI_Allreduce(MPI_IN_PLACE, buf, N)
// A time is the slowest rank's, between a barrier and the end of the call; the median over
// --reps. Within one size the cases run in a rotating order, one repetition of each after
// another, so that a burst of load from elsewhere lands on all of them.
//
// Before timing, every case is checked exactly once per size (small integers times 0.5:
// every sum is exact), so a fast wrong answer cannot pass as a result; a wrong one makes
// the exit status 1.
//
// --variants adds plain-MPI alternatives for the reduce-scatter (in place, same buffer):
//     rs_block_oop   MPI_Reduce_scatter_block into a separate receive buffer
//     rs_v           MPI_Reduce_scatter (per-rank counts) with MPI_IN_PLACE
//     rs_allreduce   MPI_Allreduce(MPI_IN_PLACE): the rank's block is then in place already
//     rs_ring_K      a ring of MPI_Sendrecv in K KiB chunks into a persistent scratch,
//                    summed by MPI_Reduce_local (K = 64..4096)
//     rs_shm         the buffer in an MPI-3 shared-memory window; each rank sums the
//                    others' copies of its block in place (no message, no scratch)
// and for the all-reduce
//     ar_ring_256    rs_ring_256, then MPI_Allgather in place
//
// Output: one line per (size, case): "RESULT op=.. impl=.. bytes=.. ms=.. algbw=.. busbw=.."
// (GB/s = 1e9 bytes/s), which bench/comm_bw.sh turns into the table.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <mpi.h>

#include "blas_core.h"
#include "comm_mpi.h"
#include "memory.h"

typedef enum { OP_RS = 0, OP_AG, OP_AR } op_kind;
static const char *const op_names[] = {"reduce_scatter", "all_gather", "all_reduce"};

typedef struct {
    zt_comm zc;      // our communicator (a duplicate of the world)
    MPI_Comm mc;     // the plain one (another duplicate)
    int rank, size;
    float *buf;      // (max_count) the in-place buffer
    float *aux;      // (max_count / size) rs_block_oop's receive buffer
    float *scratch;  // (8 MiB) rs_ring's chunk buffer
    float *shm;      // (max_count) rs_shm's buffer, in an MPI-3 shared-memory window
    float **peer;    // (size) every rank's shm buffer, mapped into this process
    MPI_Win win;
} bench;

typedef struct {
    const char *name; // impl column
    op_kind op;
    size_t chunk_kib; // rs_ring only
    void (*fn)(bench *b, size_t count, size_t chunk_kib, const zt_comm *zc);
    const zt_comm *zc; // zt cases: the communicator (slot size) to use
} bench_case;

// ---- the cases ----

static void zt_rs(bench *b, size_t n, size_t k, const zt_comm *zc) {
    size_t B = n / (size_t)b->size;
    zt_comm_reduce_scatter(zc, b->buf, b->buf + (size_t)b->rank * B, n, ZT_F32,
                           ZT_REDUCE_SUM, NULL);
}
static void mpi_rs(bench *b, size_t n, size_t k, const zt_comm *zc) {
    MPI_Reduce_scatter_block(MPI_IN_PLACE, b->buf, (int)(n / (size_t)b->size), MPI_FLOAT,
                             MPI_SUM, b->mc);
}
static void zt_ag(bench *b, size_t n, size_t k, const zt_comm *zc) {
    size_t B = n / (size_t)b->size;
    zt_comm_all_gather(zc, b->buf + (size_t)b->rank * B, b->buf, n, ZT_F32, NULL);
}
static void mpi_ag(bench *b, size_t n, size_t k, const zt_comm *zc) {
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->buf, (int)(n / (size_t)b->size),
                  MPI_FLOAT, b->mc);
}
static void zt_ar(bench *b, size_t n, size_t k, const zt_comm *zc) {
    zt_comm_all_reduce(zc, b->buf, b->buf, n, ZT_F32, ZT_REDUCE_SUM, NULL);
}
static void mpi_ar(bench *b, size_t n, size_t k, const zt_comm *zc) {
    MPI_Allreduce(MPI_IN_PLACE, b->buf, (int)n, MPI_FLOAT, MPI_SUM, b->mc);
}
static void rs_block_oop(bench *b, size_t n, size_t k, const zt_comm *zc) {
    MPI_Reduce_scatter_block(b->buf, b->aux, (int)(n / (size_t)b->size), MPI_FLOAT, MPI_SUM,
                             b->mc);
}
static void rs_v(bench *b, size_t n, size_t k, const zt_comm *zc) {
    int counts[64];
    for (int r = 0; r < b->size; r++) counts[r] = (int)(n / (size_t)b->size);
    MPI_Reduce_scatter(MPI_IN_PLACE, b->buf, counts, MPI_FLOAT, MPI_SUM, b->mc);
}
static void rs_allreduce(bench *b, size_t n, size_t k, const zt_comm *zc) {
    MPI_Allreduce(MPI_IN_PLACE, b->buf, (int)n, MPI_FLOAT, MPI_SUM, b->mc);
}
// The ring: at step s rank r sends its partial sum of block (r-s-1) mod n to r+1 and
// receives the partial of block (r-s-2) mod n from r-1, adding its own contribution; after
// n-1 steps it holds block r summed over every rank. Chunk by chunk, so the scratch stays
// small (in cache) and is allocated once. In place: partials accumulate in buf itself.
static void rs_ring(bench *b, size_t n, size_t chunk_kib, const zt_comm *zc) {
    int sz = b->size, r = b->rank, right = (r + 1) % sz, left = (r - 1 + sz) % sz;
    size_t B = n / (size_t)sz, C = chunk_kib * 1024 / sizeof(float);
    for (size_t o = 0; o < B; o += C) {
        int len = (int)(B - o < C ? B - o : C);
        for (int s = 0; s < sz - 1; s++) {
            size_t sb = (size_t)((r - s - 1 + 2 * sz) % sz), rb = (size_t)((r - s - 2 + 2 * sz) % sz);
            MPI_Sendrecv(b->buf + sb * B + o, len, MPI_FLOAT, right, 0, b->scratch, len,
                         MPI_FLOAT, left, 0, b->mc, MPI_STATUS_IGNORE);
            MPI_Reduce_local(b->scratch, b->buf + rb * B + o, len, MPI_FLOAT, MPI_SUM);
        }
    }
}

// Reduce-scatter where the buffer itself lives in shared memory (MPI_Win_allocate_shared):
// each rank adds the other ranks' copies of its block straight from their memory, no
// message and no scratch. Needs every rank on one node, and the gradient buffer allocated
// by the communicator: measured here to see what that would be worth.
static void rs_shm(bench *b, size_t n, size_t chunk_kib, const zt_comm *zc) {
    size_t B = n / (size_t)b->size, lo = (size_t)b->rank * B;
    MPI_Win_sync(b->win);
    MPI_Barrier(b->mc); // every rank's gradient is complete
    MPI_Win_sync(b->win);
    for (int k = 1; k < b->size; k++) {
        int q = (b->rank + k) % b->size;
        MPI_Reduce_local(b->peer[q] + lo, b->shm + lo, (int)B, MPI_FLOAT, MPI_SUM);
    }
    MPI_Win_sync(b->win);
    MPI_Barrier(b->mc); // nobody overwrites its buffer while another still reads it
}
// All-reduce as ring reduce-scatter then MPI_Allgather, both in place.
static void ar_ring(bench *b, size_t n, size_t chunk_kib, const zt_comm *zc) {
    rs_ring(b, n, chunk_kib, zc);
    mpi_ag(b, n, 0, zc);
}

// ---- checking ----

static void fill(float *p, size_t n, int rank) {
    for (size_t i = 0; i < n; i++) p[i] = (float)((int)((i * 7 + (size_t)rank * 13) % 61) - 30) * 0.5f;
}
// Sum over ranks of fill(., r) at index i.
static float expect_sum(size_t i, int size) {
    float s = 0;
    for (int r = 0; r < size; r++) s += (float)((int)((i * 7 + (size_t)r * 13) % 61) - 30) * 0.5f;
    return s;
}

// Runs case `c` once on known inputs and compares exactly; returns the mismatch count over
// all ranks.
static long check_case(bench *b, const bench_case *c, size_t n) {
    size_t B = n / (size_t)b->size, lo = (size_t)b->rank * B;
    long bad = 0;
    if (c->op == OP_AG) {
        for (size_t i = 0; i < n; i++) b->buf[i] = -1.0f;
        fill(b->buf + lo, B, b->rank); // rank r's block holds fill(., r) at block offsets
    } else {
        fill(b->buf, n, b->rank);
    }
    if (c->fn != rs_shm) c->fn(b, n, c->chunk_kib, c->zc);
    if (c->op == OP_AG) {
        for (size_t i = 0; i < n; i++) {
            int owner = (int)(i / B);
            float want = (float)((int)(((i - (size_t)owner * B) * 7 + (size_t)owner * 13) % 61) - 30) * 0.5f;
            bad += b->buf[i] != want;
        }
    } else if (c->fn == rs_shm) {
        fill(b->shm, n, b->rank);
        c->fn(b, n, c->chunk_kib, c->zc);
        for (size_t i = 0; i < B; i++) bad += b->shm[lo + i] != expect_sum(lo + i, b->size);
    } else if (c->op == OP_AR || c->fn == rs_allreduce) {
        for (size_t i = 0; i < n; i++) bad += b->buf[i] != expect_sum(i, b->size);
    } else {
        const float *got = c->fn == rs_block_oop ? b->aux : c->fn == mpi_rs || c->fn == rs_v
                                                                ? b->buf
                                                                : b->buf + lo;
        for (size_t i = 0; i < B; i++) bad += got[i] != expect_sum(lo + i, b->size);
    }
    long all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, b->mc);
    return all;
}

// ---- timing ----

static double time_once(bench *b, const bench_case *c, size_t n) {
    MPI_Barrier(b->mc);
    double t0 = MPI_Wtime();
    c->fn(b, n, c->chunk_kib, c->zc);
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, b->mc);
    return tmax;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *alloc_buf(size_t bytes, int thp) {
    size_t align = (size_t)2 << 20;
    void *p = NULL;
    ZT_ASSERT(posix_memalign(&p, align, zt_round_up(bytes, align)) == 0);
    if (thp) madvise(p, zt_round_up(bytes, align), MADV_HUGEPAGE);
    memset(p, 0, bytes); // touch every page now, as zt_mem_alloc does
    return p;
}

int main(int argc, char **argv) {
    zt_blas_init(argv); // every zerotrain binary runs the right BLAS kernels (kernels/cpu/blas_core.h)
    size_t min_kib = 1024, max_kib = 256 * 1024;
    int reps = 9, warmup = 2, thp = 0, variants = 0;
    char stage_kib[256] = "", algos[256] = "", ops[16] = "sgr";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--min-mib")) min_kib = 1024 * strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--max-mib")) max_kib = 1024 * strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--min-kib")) min_kib = strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--max-kib")) max_kib = strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--reps")) reps = atoi(v), i++;
        else if (!strcmp(a, "--warmup")) warmup = atoi(v), i++;
        else if (!strcmp(a, "--thp")) thp = 1;
        else if (!strcmp(a, "--variants")) variants = 1;
        else if (!strcmp(a, "--stage-kib")) snprintf(stage_kib, sizeof stage_kib, "%s", v), i++;
        else if (!strcmp(a, "--ops")) snprintf(ops, sizeof ops, "%s", v), i++;
        else if (!strcmp(a, "--algo")) snprintf(algos, sizeof algos, "%s", v), i++;
        else {
            fprintf(stderr, "comm_bw: unknown option %s (see the top of bench/comm_bw.c)\n", a);
            return 2;
        }
    }
    if (min_kib < 4 || max_kib < min_kib || reps < 1 || reps > 1000 || warmup < 0) {
        fprintf(stderr, "comm_bw: bad sizes or repetitions\n");
        return 2;
    }

    bench b = {0};
    zt_comm_mpi_init_world(&b.zc, &argc, &argv);
    zt_set_fatal_hook(zt_comm_mpi_abort);
    MPI_Comm_dup(MPI_COMM_WORLD, &b.mc);
    // The plain calls below go unchecked: a failure in them ends the job inside MPI.
    MPI_Comm_set_errhandler(b.mc, MPI_ERRORS_ARE_FATAL);
    b.rank = b.zc.rank;
    b.size = b.zc.size;
    ZT_ASSERTF(b.size <= 64, "at most 64 ranks");
    size_t max_count = max_kib * 1024 / sizeof(float);
    b.buf = alloc_buf(max_count * sizeof(float), thp);
    b.aux = variants ? alloc_buf(max_count / (size_t)b.size * sizeof(float), thp) : NULL;
    b.scratch = alloc_buf((size_t)8 << 20, thp);
    if (variants) {
        MPI_Win_allocate_shared((MPI_Aint)(max_count * sizeof(float)), sizeof(float),
                                MPI_INFO_NULL, b.mc, &b.shm, &b.win);
        b.peer = calloc((size_t)b.size, sizeof(float *));
        for (int q = 0; q < b.size; q++) {
            MPI_Aint qsize;
            int disp;
            MPI_Win_shared_query(b.win, q, &qsize, &disp, &b.peer[q]);
        }
        if (thp) madvise(b.shm, max_count * sizeof(float), MADV_HUGEPAGE);
        memset(b.shm, 0, max_count * sizeof(float));
        MPI_Win_lock_all(MPI_MODE_NOCHECK, b.win);
    }

    // Extra zt communicators with other staging slot sizes (ZT_COMM_MPI_STAGE_KIB is read
    // when a communicator is made), timed beside the default one.
    // The same for other ZT_COMM_MPI_ALGO values (rows "zt_ALGO").
    zt_comm extra[16];
    char extra_names[16][32];
    int n_extra = 0;
    for (char *tok = strtok(stage_kib, ","); tok && n_extra < 8; tok = strtok(NULL, ",")) {
        setenv("ZT_COMM_MPI_STAGE_KIB", tok, 1);
        zt_comm_split(&b.zc, 0, b.rank, &extra[n_extra]);
        snprintf(extra_names[n_extra], sizeof extra_names[n_extra], "zt_slot%sk", tok);
        n_extra++;
    }
    unsetenv("ZT_COMM_MPI_STAGE_KIB");
    for (char *tok = strtok(algos, ","); tok && n_extra < 16; tok = strtok(NULL, ",")) {
        setenv("ZT_COMM_MPI_ALGO", tok, 1);
        zt_comm_split(&b.zc, 0, b.rank, &extra[n_extra]);
        snprintf(extra_names[n_extra], sizeof extra_names[n_extra], "zt_%s", tok);
        n_extra++;
    }
    unsetenv("ZT_COMM_MPI_ALGO");

    bench_case cases[64];
    int nc = 0;
    if (strchr(ops, 's')) {
        cases[nc++] = (bench_case){"zt", OP_RS, 0, zt_rs, &b.zc};
        for (int e = 0; e < n_extra; e++)
            cases[nc++] = (bench_case){extra_names[e], OP_RS, 0, zt_rs, &extra[e]};
        cases[nc++] = (bench_case){"mpi", OP_RS, 0, mpi_rs, NULL};
        if (variants) {
            cases[nc++] = (bench_case){"rs_block_oop", OP_RS, 0, rs_block_oop, NULL};
            cases[nc++] = (bench_case){"rs_v", OP_RS, 0, rs_v, NULL};
            cases[nc++] = (bench_case){"rs_allreduce", OP_RS, 0, rs_allreduce, NULL};
            static const size_t kibs[] = {64, 256, 1024, 4096};
            static char names[4][32];
            for (int k = 0; k < 4; k++) {
                snprintf(names[k], sizeof names[k], "rs_ring_%zu", kibs[k]);
                cases[nc++] = (bench_case){names[k], OP_RS, kibs[k], rs_ring, NULL};
            }
            cases[nc++] = (bench_case){"rs_shm", OP_RS, 0, rs_shm, NULL};
        }
    }
    if (strchr(ops, 'g')) {
        cases[nc++] = (bench_case){"zt", OP_AG, 0, zt_ag, &b.zc};
        for (int e = 0; e < n_extra; e++)
            cases[nc++] = (bench_case){extra_names[e], OP_AG, 0, zt_ag, &extra[e]};
        cases[nc++] = (bench_case){"mpi", OP_AG, 0, mpi_ag, NULL};
    }
    if (strchr(ops, 'r')) {
        cases[nc++] = (bench_case){"zt", OP_AR, 0, zt_ar, &b.zc};
        for (int e = 0; e < n_extra; e++)
            cases[nc++] = (bench_case){extra_names[e], OP_AR, 0, zt_ar, &extra[e]};
        cases[nc++] = (bench_case){"mpi", OP_AR, 0, mpi_ar, NULL};
        if (variants) cases[nc++] = (bench_case){"ar_ring_256", OP_AR, 256, ar_ring, NULL};
    }

    if (b.rank == 0) {
        printf("comm_bw: %d ranks, %zu..%zu KiB, %d reps (median), %d warmup, thp %d, "
               "GLIBC_TUNABLES=%s\n",
               b.size, min_kib, max_kib, reps, warmup, thp,
               getenv("GLIBC_TUNABLES") ? getenv("GLIBC_TUNABLES") : "");
        fflush(stdout);
    }
    double *t = malloc((size_t)nc * (size_t)reps * sizeof(double));
    ZT_ASSERT(t);
    int failed = 0;
    for (size_t kib = min_kib; kib <= max_kib; kib *= 2) {
        size_t n = kib * 1024 / sizeof(float);
        n -= n % (size_t)b.size;
        for (int c = 0; c < nc; c++) {
            long bad = check_case(&b, &cases[c], n);
            if (bad && b.rank == 0) {
                fprintf(stderr, "comm_bw: %s %s at %zu KiB: %ld wrong elements\n",
                        op_names[cases[c].op], cases[c].name, kib, bad);
            }
            failed |= bad != 0;
        }
        memset(b.buf, 0, n * sizeof(float)); // sums of zeros: no overflow, no denormals
        for (int w = 0; w < warmup; w++)
            for (int c = 0; c < nc; c++) time_once(&b, &cases[c], n);
        for (int k = 0; k < reps; k++)
            for (int j = 0; j < nc; j++) {
                int c = (j + k) % nc; // rotate the order each repetition
                t[c * reps + k] = time_once(&b, &cases[c], n);
            }
        if (b.rank == 0) {
            for (int c = 0; c < nc; c++) {
                double *tc = t + c * reps;
                qsort(tc, (size_t)reps, sizeof(double), cmp_double);
                double med = reps % 2 ? tc[reps / 2] : 0.5 * (tc[reps / 2 - 1] + tc[reps / 2]);
                double bytes = (double)n * sizeof(float), alg = bytes / med / 1e9;
                double f = cases[c].op == OP_AR ? 2.0 * (b.size - 1) / b.size
                                                : (double)(b.size - 1) / b.size;
                printf("RESULT op=%s impl=%s bytes=%.0f ms=%.3f min_ms=%.3f algbw=%.3f "
                       "busbw=%.3f\n",
                       op_names[cases[c].op], cases[c].name, bytes, med * 1e3, tc[0] * 1e3, alg,
                       alg * f);
            }
            fflush(stdout);
        }
    }
    free(t);
    free(b.buf);
    free(b.aux);
    free(b.scratch);
    for (int e = 0; e < n_extra; e++) zt_comm_free(&extra[e]);
    if (variants) {
        MPI_Win_unlock_all(b.win);
        MPI_Win_free(&b.win);
        free(b.peer);
    }
    MPI_Comm_free(&b.mc);
    zt_comm_free(&b.zc);
    zt_comm_mpi_finalize();
    return failed ? 1 : 0;
}
