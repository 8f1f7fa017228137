// Tests of the pipeline schedules: the invariants of every stage's action list, the pairing
// of neighbours' sends and receives, the in-flight peak, and a rendezvous simulation of all
// stages together (no deadlock, the bubble of the theory), exhaustively over 1..8 stages and
// 1..16 micro-batches.
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "test.h"

#define MAX_P 8
#define MAX_M 16

static const zt_schedule_kind kinds[2] = {ZT_SCHED_1F1B, ZT_SCHED_GPIPE};

// The bound of docs/design.md §2.
static int expected_peak(zt_schedule_kind kind, int p, int s, int m) {
    if (kind == ZT_SCHED_GPIPE) return m;
    return p - s < m ? p - s : m;
}

// The message halves of an action, written here independently of schedule.c so that a bug
// there cannot cancel itself out: micro-batch sent/received on the activation channel and on
// the gradient channel, -1 where absent.
typedef struct {
    int send_fwd, recv_fwd, send_bwd, recv_bwd;
} halves;

static halves halves_of(const zt_sched_action *a) {
    halves h = {-1, -1, -1, -1};
    if (a->op == ZT_SCHED_OP_RECV_FWD) h.recv_fwd = a->micro;
    if (a->op == ZT_SCHED_OP_SEND_FWD) h.send_fwd = a->micro;
    if (a->op == ZT_SCHED_OP_RECV_BWD) h.recv_bwd = a->micro;
    if (a->op == ZT_SCHED_OP_SEND_BWD) h.send_bwd = a->micro;
    if (a->op == ZT_SCHED_OP_SEND_FWD_RECV_BWD) {
        h.send_fwd = a->micro;
        h.recv_bwd = a->recv_micro;
    }
    if (a->op == ZT_SCHED_OP_SEND_BWD_RECV_FWD) {
        h.send_bwd = a->micro;
        h.recv_fwd = a->recv_micro;
    }
    return h;
}

// Builds all stages of one pipeline into s[0..p).
static int build_all(zt_schedule *s, zt_schedule_kind kind, int p, int m) {
    for (int i = 0; i < p; i++)
        if (zt_schedule_build(&s[i], kind, p, i, m) != ZT_OK) return 0;
    return 1;
}
static void free_all(zt_schedule *s, int p) {
    for (int i = 0; i < p; i++) zt_schedule_free(&s[i]);
}

// A compact form for golden comparisons: F3, B3, RF3 (recv fwd), SF3, RB3, SB3,
// SF3+RB1 (send fwd 3 and recv bwd 1 at once), SB1+RF3.
static void format_list(const zt_schedule *s, char *buf, size_t cap) {
    static const char *const shortname[ZT_SCHED_OP_COUNT] = {"RF", "F", "SF", "RB", "B", "SB",
                                                             "SF", "SB"};
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < s->n_actions && n < cap; i++) {
        const zt_sched_action *a = &s->actions[i];
        int w = snprintf(buf + n, cap - n, "%s%s%d", i ? " " : "", shortname[a->op], a->micro);
        if (w > 0) n += (size_t)w;
        if (n >= cap) break;
        if (a->op == ZT_SCHED_OP_SEND_FWD_RECV_BWD)
            w = snprintf(buf + n, cap - n, "+RB%d", a->recv_micro);
        else if (a->op == ZT_SCHED_OP_SEND_BWD_RECV_FWD)
            w = snprintf(buf + n, cap - n, "+RF%d", a->recv_micro);
        else w = 0;
        if (w > 0) n += (size_t)w;
    }
}

// The names the pipeline report and the checkpoint's manifest give the kinds (--schedule's
// table gives the same: config_enum_names).
ZT_TEST(schedule_kind_name) {
    CHECK(strcmp(zt_schedule_kind_name(ZT_SCHED_1F1B), "1f1b") == 0);
    CHECK(strcmp(zt_schedule_kind_name(ZT_SCHED_GPIPE), "gpipe") == 0);
    return ZT_PASS;
}

// Bad sizes are a returned error with nothing allocated; free takes zeroed and failed
// schedules (twice, too).
ZT_TEST(schedule_build_errors) {
    zt_schedule s;
    CHECK(zt_schedule_build(&s, ZT_SCHED_1F1B, 0, 0, 4) == ZT_ERR);
    CHECK(s.actions == NULL && s.n_actions == 0);
    CHECK(strstr(zt_error_message(), "stages"));
    zt_schedule_free(&s);
    CHECK(zt_schedule_build(&s, ZT_SCHED_GPIPE, 2, 0, 0) == ZT_ERR);
    CHECK(s.actions == NULL && s.n_actions == 0);
    CHECK(strstr(zt_error_message(), "micro-batches"));
    zt_schedule_free(&s);
    zt_schedule_free(&s);
    zt_schedule z;
    memset(&z, 0, sizeof z);
    zt_schedule_free(&z);
    zt_schedule_free(NULL);
    int ticks = -1;
    CHECK(zt_schedule_simulate(ZT_SCHED_1F1B, 4, 0, 1, 1, &ticks) == ZT_ERR);
    CHECK(ticks == -1);
    return ZT_PASS;
}

// Hand-derived lists for 3 stages and 4 micro-batches (Megatron's 1F1B; GPipe), to read.
ZT_TEST(schedule_golden) {
    const char *want_1f1b[3] = {
        "F0 SF0 F1 SF1 F2 SF2+RB0 B0 F3 SF3+RB1 B1 RB2 B2 RB3 B3",
        ("RF0 F0 SF0 RF1 F1 SF1+RB0 B0 SB0+RF2 F2 SF2+RB1 B1 SB1+RF3 F3 SF3+RB2 B2 SB2 RB3 B3 "
         "SB3"),
        "RF0 F0 B0 SB0+RF1 F1 B1 SB1+RF2 F2 B2 SB2+RF3 F3 B3 SB3",
    };
    const char *want_gpipe[3] = {
        "F0 SF0 F1 SF1 F2 SF2 F3 SF3 RB0 B0 RB1 B1 RB2 B2 RB3 B3",
        ("RF0 F0 SF0 RF1 F1 SF1 RF2 F2 SF2 RF3 F3 SF3 RB0 B0 SB0 RB1 B1 SB1 RB2 B2 SB2 RB3 B3 "
         "SB3"),
        "RF0 F0 RF1 F1 RF2 F2 RF3 F3 B0 SB0 B1 SB1 B2 SB2 B3 SB3",
    };
    char buf[512];
    for (int kk = 0; kk < 2; kk++)
        for (int st = 0; st < 3; st++) {
            zt_schedule s;
            CHECK(zt_schedule_build(&s, kinds[kk], 3, st, 4) == ZT_OK);
            format_list(&s, buf, sizeof buf);
            const char *want = kk == 0 ? want_1f1b[st] : want_gpipe[st];
            if (strcmp(buf, want) != 0) {
                fprintf(stderr, "  %s stage %d:\n  got  %s\n  want %s\n",
                        zt_schedule_kind_name(kinds[kk]), st, buf, want);
                zt_schedule_free(&s);
                return ZT_FAIL;
            }
            zt_schedule_free(&s);
        }
    // A single stage: 1F1B alternates, no communication at all.
    zt_schedule s;
    CHECK(zt_schedule_build(&s, ZT_SCHED_1F1B, 1, 0, 3) == ZT_OK);
    format_list(&s, buf, sizeof buf);
    CHECK(strcmp(buf, "F0 B0 F1 B1 F2 B2") == 0);
    zt_schedule_free(&s);
    return ZT_PASS;
}

// Checks one stage's list; returns 0 with a message on the first violation.
static int check_stage(const zt_schedule *s) {
    int p = s->n_stages, st = s->stage, m = s->n_micro;
    int first = st == 0, last = st == p - 1;
    int pos_f[MAX_M], pos_b[MAX_M], pos_rf[MAX_M], pos_sf[MAX_M], pos_rb[MAX_M], pos_sb[MAX_M];
    int *pos[4] = {pos_sf, pos_rf, pos_sb, pos_rb};
    for (int k = 0; k < m; k++)
        pos_f[k] = pos_b[k] = pos_rf[k] = pos_sf[k] = pos_rb[k] = pos_sb[k] = -1;
    int next_f = 0, next_b = 0;
#define FAILS(...)                                                                        \
    do {                                                                                  \
        fprintf(stderr, "  %s p=%d stage=%d m=%d action %d: ",                             \
                zt_schedule_kind_name(s->kind), p, st, m, i);                             \
        fprintf(stderr, __VA_ARGS__);                                                     \
        fprintf(stderr, "\n");                                                            \
        return 0;                                                                         \
    } while (0)
    for (int i = 0; i < s->n_actions; i++) {
        const zt_sched_action *a = &s->actions[i];
        if ((int)a->op < 0 || a->op >= ZT_SCHED_OP_COUNT) FAILS("bad op %d", (int)a->op);
        if (a->micro < 0 || a->micro >= m) FAILS("micro %d out of range", a->micro);
        int combined = a->op == ZT_SCHED_OP_SEND_FWD_RECV_BWD ||
                       a->op == ZT_SCHED_OP_SEND_BWD_RECV_FWD;
        if (combined ? (a->recv_micro < 0 || a->recv_micro >= m) : a->recv_micro != -1)
            FAILS("%s with recv_micro %d", zt_sched_op_name(a->op), a->recv_micro);
        if (a->op == ZT_SCHED_OP_FWD) {
            if (a->micro != next_f)
                FAILS("FWD %d, expected FWD %d (forwards in order)", a->micro, next_f);
            pos_f[next_f++] = i;
        }
        if (a->op == ZT_SCHED_OP_BWD) {
            if (a->micro != next_b)
                FAILS("BWD %d, expected BWD %d (backwards in order)", a->micro, next_b);
            pos_b[next_b++] = i;
        }
        halves h = halves_of(a);
        int hv[4] = {h.send_fwd, h.recv_fwd, h.send_bwd, h.recv_bwd};
        for (int c = 0; c < 4; c++) {
            if (hv[c] < 0) continue;
            if (pos[c][hv[c]] >= 0)
                FAILS("%s repeats a message of micro %d", zt_sched_op_name(a->op), hv[c]);
            pos[c][hv[c]] = i;
        }
        if ((h.recv_fwd >= 0 || h.send_bwd >= 0) && first) FAILS("first stage talks to s-1");
        if ((h.send_fwd >= 0 || h.recv_bwd >= 0) && last) FAILS("last stage talks to s+1");
    }
    int i = s->n_actions;
    if (next_f != m || next_b != m)
        FAILS("%d FWD and %d BWD for %d micro-batches", next_f, next_b, m);
    for (int k = 0; k < m; k++) {
        if (!(pos_f[k] < pos_b[k])) FAILS("BWD %d before FWD %d", k, k);
        if (first ? pos_rf[k] >= 0 : !(pos_rf[k] >= 0 && pos_rf[k] < pos_f[k]))
            FAILS("receive of the input of micro %d missing, misplaced or extra", k);
        if (last ? pos_sf[k] >= 0 : !(pos_sf[k] > pos_f[k]))
            FAILS("send of the output of micro %d missing, misplaced or extra", k);
        if (last ? pos_rb[k] >= 0 : !(pos_rb[k] >= 0 && pos_rb[k] < pos_b[k]))
            FAILS("receive of the output gradient of micro %d missing, misplaced or extra", k);
        if (first ? pos_sb[k] >= 0 : !(pos_sb[k] > pos_b[k]))
            FAILS("send of the input gradient of micro %d missing, misplaced or extra", k);
    }
#undef FAILS
    return 1;
}

// Every stage of every (p, m), both kinds: one FWD and one BWD per micro-batch, in order,
// FWD before BWD; each message exactly once on the stages that need it (none towards a
// neighbour that does not exist), receives before the compute that needs them and sends
// after the compute that makes them; recv_micro set exactly on combined ops.
ZT_TEST(schedule_actions_per_stage) {
    int lists = 0;
    for (int kk = 0; kk < 2; kk++)
        for (int p = 1; p <= MAX_P; p++)
            for (int m = 1; m <= MAX_M; m++)
                for (int st = 0; st < p; st++) {
                    zt_schedule s;
                    CHECK(zt_schedule_build(&s, kinds[kk], p, st, m) == ZT_OK);
                    CHECK(s.kind == kinds[kk] && s.n_stages == p && s.stage == st &&
                          s.n_micro == m);
                    int ok = check_stage(&s);
                    zt_schedule_free(&s);
                    CHECK(ok);
                    lists++;
                }
    printf("  %d stage lists checked\n", lists);
    return ZT_PASS;
}

// On every link (s, s+1): the micro-batches s sends forward come in the order s+1 receives
// them, and likewise for gradients; more strongly, the communication ops of the two sides on
// the link pair one to one (the i-th op of s carries exactly the messages of the i-th op of
// s+1, in the other direction) and no op touches both links of a stage: the property the
// deadlock-freedom argument at the top of schedule.c rests on.
ZT_TEST(schedule_neighbours_pair) {
    for (int kk = 0; kk < 2; kk++)
        for (int p = 2; p <= MAX_P; p++)
            for (int m = 1; m <= MAX_M; m++) {
                zt_schedule s[MAX_P];
                memset(s, 0, sizeof s);
                CHECK(build_all(s, kinds[kk], p, m));
                int ok = 1;
                for (int l = 0; l + 1 < p && ok; l++) {
                    // Each side's ops on link l, as (send, recv) halves seen from that side.
                    halves down[6 * MAX_M], up[6 * MAX_M];
                    int nd = 0, nu = 0;
                    for (int i = 0; i < s[l].n_actions; i++) {
                        halves h = halves_of(&s[l].actions[i]);
                        if (h.send_fwd >= 0 || h.recv_bwd >= 0) down[nd++] = h;
                    }
                    for (int i = 0; i < s[l + 1].n_actions; i++) {
                        halves h = halves_of(&s[l + 1].actions[i]);
                        int to_prev = h.recv_fwd >= 0 || h.send_bwd >= 0;
                        int to_next = h.send_fwd >= 0 || h.recv_bwd >= 0;
                        if (to_prev && to_next) ok = 0; // one op on both links
                        if (to_prev) up[nu++] = h;
                    }
                    if (nd != nu) ok = 0;
                    for (int i = 0; i < nd && ok; i++)
                        if (down[i].send_fwd != up[i].recv_fwd ||
                            down[i].recv_bwd != up[i].send_bwd)
                            ok = 0;
                    // The per-channel orders (implied by the pairing, checked on their own).
                    int sf[MAX_M], rf[MAX_M], sb[MAX_M], rb[MAX_M], a = 0, b = 0, c = 0, d = 0;
                    for (int i = 0; i < nd; i++) {
                        if (down[i].send_fwd >= 0) sf[a++] = down[i].send_fwd;
                        if (down[i].recv_bwd >= 0) rb[d++] = down[i].recv_bwd;
                    }
                    for (int i = 0; i < nu; i++) {
                        if (up[i].recv_fwd >= 0) rf[b++] = up[i].recv_fwd;
                        if (up[i].send_bwd >= 0) sb[c++] = up[i].send_bwd;
                    }
                    if (a != m || b != m || c != m || d != m) ok = 0;
                    for (int k = 0; k < m && ok; k++)
                        if (sf[k] != rf[k] || sb[k] != rb[k]) ok = 0;
                    if (!ok)
                        fprintf(stderr, "  %s p=%d m=%d: link %d-%d does not pair\n",
                                zt_schedule_kind_name(kinds[kk]), p, m, l, l + 1);
                }
                free_all(s, p);
                CHECK(ok);
            }
    return ZT_PASS;
}

// In flight (FWD run, BWD not) never exceeds min(p - s, m) under 1F1B and m under GPipe,
// and reaches it; zt_schedule_peak_in_flight says the same. The micro-batches live in a
// wider sense (input received or FWD run, BWD not) are consecutive and never more than the
// peak, so slot k % peak never holds two at once.
ZT_TEST(schedule_in_flight) {
    for (int kk = 0; kk < 2; kk++)
        for (int p = 1; p <= MAX_P; p++)
            for (int m = 1; m <= MAX_M; m++)
                for (int st = 0; st < p; st++) {
                    zt_schedule s;
                    CHECK(zt_schedule_build(&s, kinds[kk], p, st, m) == ZT_OK);
                    int bound = expected_peak(kinds[kk], p, st, m);
                    int now = 0, peak = 0, ok = 1;
                    unsigned char live[MAX_M] = {0};
                    for (int i = 0; i < s.n_actions && ok; i++) {
                        const zt_sched_action *a = &s.actions[i];
                        halves h = halves_of(a);
                        if (a->op == ZT_SCHED_OP_FWD) {
                            now++;
                            live[a->micro] = 1;
                        }
                        if (a->op == ZT_SCHED_OP_BWD) {
                            now--;
                            live[a->micro] = 0;
                        }
                        if (h.recv_fwd >= 0) live[h.recv_fwd] = 1;
                        if (now < 0 || now > bound) ok = 0;
                        if (now > peak) peak = now;
                        int lo = -1, hi = -1, n = 0;
                        for (int k = 0; k < m; k++)
                            if (live[k]) {
                                if (lo < 0) lo = k;
                                hi = k;
                                n++;
                            }
                        if (n > bound || (n > 0 && hi - lo + 1 != n)) ok = 0;
                    }
                    if (!ok || peak != bound)
                        fprintf(stderr, "  %s p=%d stage=%d m=%d: peak %d, bound %d\n",
                                zt_schedule_kind_name(kinds[kk]), p, st, m, peak, bound);
                    CHECK(ok);
                    CHECK_EQ_INT(peak, bound);
                    CHECK_EQ_INT(zt_schedule_peak_in_flight(&s), bound);
                    zt_schedule_free(&s);
                }
    return ZT_PASS;
}

// Every (p, m), both kinds, under rendezvous send/recv: no deadlock, and the step takes
// exactly (m + p - 1)(f + b) units for FWD = f, BWD = b. Derivation (both kinds; for 1F1B
// the simulation is what shows that the last stage never waits once started): micro-batch
// 0's forward reaches the end of the last stage after p·f; from then on the last stage runs
// its other m-1 forwards and its m backwards without idling, (m - 1)·f + m·b; the gradient of
// micro-batch m-1 then walks back through p - 1 stages, (p - 1)·b. Total
// p·f + (m-1)·f + m·b + (p-1)·b = (m + p - 1)(f + b). Every stage computes m(f + b) of it, so
// the bubble fraction is exactly (p - 1)/(m + p - 1), compared here without division.
ZT_TEST(schedule_simulate_bubble) {
    const int costs[3][2] = {{1, 1}, {1, 2}, {2, 3}};
    for (int kk = 0; kk < 2; kk++)
        for (int c = 0; c < 3; c++)
            for (int p = 1; p <= MAX_P; p++)
                for (int m = 1; m <= MAX_M; m++) {
                    int f = costs[c][0], b = costs[c][1], ticks = -1;
                    zt_status rc = zt_schedule_simulate(kinds[kk], p, m, f, b, &ticks);
                    if (rc != ZT_OK) fprintf(stderr, "  %s\n", zt_error_message());
                    CHECK(rc == ZT_OK);
                    if (ticks != (m + p - 1) * (f + b))
                        fprintf(stderr, "  %s p=%d m=%d f=%d b=%d\n",
                                zt_schedule_kind_name(kinds[kk]), p, m, f, b);
                    CHECK_EQ_INT(ticks, (m + p - 1) * (f + b));
                    // bubble = (ticks - m(f+b)) / ticks == (p-1)/(m+p-1)
                    CHECK_EQ_INT((long long)(ticks - m * (f + b)) * (m + p - 1),
                                 (long long)(p - 1) * ticks);
                }
    int ticks = 0;
    CHECK(zt_schedule_simulate(ZT_SCHED_1F1B, 4, 8, 1, 2, &ticks) == ZT_OK);
    printf("  1f1b p=4 m=8 f=1 b=2: %d units, bubble %.3f (theory 3/11 = %.3f)\n", ticks,
           1.0 - 8.0 * 3 / ticks, 3.0 / 11);
    return ZT_PASS;
}

// Splits each combined op of a list into its two blocking halves, send first (or receive
// first); the list stays valid as data but blocks in the 1F1B steady state.
static void split_combined(const zt_schedule *in, zt_schedule *out, zt_sched_action *buf,
                           int recv_first) {
    *out = *in;
    out->actions = buf;
    out->n_actions = 0;
    for (int i = 0; i < in->n_actions; i++) {
        zt_sched_action a = in->actions[i];
        zt_sched_action snd = {ZT_SCHED_OP_SEND_FWD, a.micro, -1};
        zt_sched_action rcv = {ZT_SCHED_OP_RECV_BWD, a.recv_micro, -1};
        if (a.op == ZT_SCHED_OP_SEND_BWD_RECV_FWD) {
            snd.op = ZT_SCHED_OP_SEND_BWD;
            rcv.op = ZT_SCHED_OP_RECV_FWD;
        } else if (a.op != ZT_SCHED_OP_SEND_FWD_RECV_BWD) {
            buf[out->n_actions++] = a;
            continue;
        }
        buf[out->n_actions++] = recv_first ? rcv : snd;
        buf[out->n_actions++] = recv_first ? snd : rcv;
    }
}

// The simulator is a real check: with the combined exchanges split into blocking send then
// receive (or receive then send) on both sides, 1F1B deadlocks for every p >= 2, m >= 2
// (stage p-2 sends activations of 1 while stage p-1 sends the gradient of 0).
ZT_TEST(schedule_split_exchange_deadlocks) {
    static zt_sched_action bufs[MAX_P][8 * MAX_M];
    for (int order = 0; order < 2; order++)
        for (int p = 2; p <= MAX_P; p++)
            for (int m = 2; m <= MAX_M; m++) {
                zt_schedule s[MAX_P], split[MAX_P];
                memset(s, 0, sizeof s);
                CHECK(build_all(s, ZT_SCHED_1F1B, p, m));
                for (int i = 0; i < p; i++) split_combined(&s[i], &split[i], bufs[i], order);
                int ticks = -1;
                zt_status rc = zt_schedule_simulate_lists(split, p, 1, 1, &ticks);
                free_all(s, p);
                CHECK(rc == ZT_ERR);
                CHECK(strstr(zt_error_message(), "deadlock"));
                CHECK(ticks == -1);
                if (order == 0 && p == 2 && m == 2) printf("  %s\n", zt_error_message());
            }
    return ZT_PASS;
}

// The simulator reports two ends of a channel that disagree, and a message to a stage that
// does not exist.
ZT_TEST(schedule_simulate_rejects_bad_lists) {
    zt_schedule s[2];
    memset(s, 0, sizeof s);
    CHECK(build_all(s, ZT_SCHED_GPIPE, 2, 3));
    // Stage 1 receives micro-batch 1 where stage 0 sends 0.
    zt_sched_action *rf0 = NULL;
    for (int i = 0; i < s[1].n_actions && !rf0; i++)
        if (s[1].actions[i].op == ZT_SCHED_OP_RECV_FWD) rf0 = &s[1].actions[i];
    CHECK(rf0 && rf0->micro == 0);
    rf0->micro = 1;
    int ticks = -1;
    CHECK(zt_schedule_simulate_lists(s, 2, 1, 1, &ticks) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "micro-batch"));
    printf("  %s\n", zt_error_message());
    rf0->micro = 0;
    CHECK(zt_schedule_simulate_lists(s, 2, 1, 1, &ticks) == ZT_OK);
    CHECK_EQ_INT(ticks, (3 + 2 - 1) * 2);
    // Stage 0 receiving from a stage -1.
    s[0].actions[0] = (zt_sched_action){ZT_SCHED_OP_RECV_FWD, 0, -1};
    CHECK(zt_schedule_simulate_lists(s, 2, 1, 1, &ticks) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "no peer"));
    free_all(s, 2);
    return ZT_PASS;
}
