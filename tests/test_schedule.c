// Tests of the pipeline schedules: the invariants of every stage's action list, the pairing
// of neighbours' sends and receives, the in-flight peaks, and a simulation of all stages
// together (inputs before use, no deadlock, the bubble of the theory), exhaustively over
// 1..16 stages, 1..64 micro-batches and, for interleaved, 2..4 chunks per stage.
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "test.h"

#define MAX_P 16
#define MAX_M 64
#define MAX_V 4

// The kinds with one chunk per stage (interleaved has tests of its own).
#define N_KINDS 3
static const zt_schedule_kind kinds[N_KINDS] = {ZT_SCHED_1F1B, ZT_SCHED_GPIPE, ZT_SCHED_ZB_H1};

static int min_int(int a, int b) { return a < b ? a : b; }

// The bound of docs/design.md §2; ZB-H1: every stage holds up to p (schedule.h).
static int expected_peak(zt_schedule_kind kind, int p, int s, int m) {
    if (kind == ZT_SCHED_GPIPE) return m;
    if (kind == ZT_SCHED_ZB_H1) return min_int(p, m);
    return min_int(p - s, m);
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
// BWD_B is b, BWD_W is W.
static void format_list(const zt_schedule *s, char *buf, size_t cap) {
    static const char *const shortname[ZT_SCHED_OP_COUNT] = {"RF", "F", "SF", "RB", "B",
                                                             "SB", "SF", "SB", "b", "W"};
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
    CHECK(strcmp(zt_schedule_kind_name(ZT_SCHED_ZB_H1), "zb-h1") == 0);
    CHECK(strcmp(zt_schedule_kind_name(ZT_SCHED_INTERLEAVED), "interleaved") == 0);
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
    long ticks = -1;
    zt_sched_costs one = {1, 1, 1};
    CHECK(zt_schedule_simulate(ZT_SCHED_1F1B, 4, 0, 1, &one, 1, ZT_SIM_RENDEZVOUS, &ticks, NULL) ==
          ZT_ERR);
    CHECK(ticks == -1);
    // chunks: only interleaved takes V > 1, and it needs V >= 2, p >= 2 and p | m
    CHECK(zt_schedule_build_chunks(&s, ZT_SCHED_1F1B, 2, 0, 4, 2) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "only interleaved"));
    CHECK(zt_schedule_build_chunks(&s, ZT_SCHED_INTERLEAVED, 2, 0, 4, 1) == ZT_ERR);
    CHECK(zt_schedule_build_chunks(&s, ZT_SCHED_INTERLEAVED, 1, 0, 4, 2) == ZT_ERR);
    CHECK(zt_schedule_build_chunks(&s, ZT_SCHED_INTERLEAVED, 4, 0, 6, 2) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "not a multiple"));
    CHECK(s.actions == NULL && s.n_actions == 0);
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
    // ZB-H1, 3 stages and 4 micro-batches: 1F1B's list with b for B, stage s keeping up to s
    // W passes waiting in the steady state, one W after each cooldown b, the rest at the end.
    const char *want_zb[3] = {
        "F0 SF0 F1 SF1 F2 SF2+RB0 b0 W0 F3 SF3+RB1 b1 W1 RB2 b2 W2 RB3 b3 W3",
        ("RF0 F0 SF0 RF1 F1 SF1+RB0 b0 SB0+RF2 F2 SF2+RB1 b1 SB1+RF3 W0 F3 SF3+RB2 b2 SB2 W1 "
         "RB3 b3 SB3 W2 W3"),
        "RF0 F0 b0 SB0+RF1 F1 b1 SB1+RF2 F2 b2 SB2+RF3 W0 F3 b3 SB3 W1 W2 W3",
    };
    for (int st = 0; st < 3; st++) {
        zt_schedule s;
        CHECK(zt_schedule_build(&s, ZT_SCHED_ZB_H1, 3, st, 4) == ZT_OK);
        format_list(&s, buf, sizeof buf);
        if (strcmp(buf, want_zb[st]) != 0)
            fprintf(stderr, "  zb-h1 stage %d:\n  got  %s\n  want %s\n", st, buf, want_zb[st]);
        CHECK(strcmp(buf, want_zb[st]) == 0);
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
    int pos_w[MAX_M];
    int *pos[4] = {pos_sf, pos_rf, pos_sb, pos_rb};
    for (int k = 0; k < m; k++)
        pos_f[k] = pos_b[k] = pos_rf[k] = pos_sf[k] = pos_rb[k] = pos_sb[k] = pos_w[k] = -1;
    int next_f = 0, next_b = 0, next_w = 0, split = s->kind == ZT_SCHED_ZB_H1;
    zt_sched_op bwd = split ? ZT_SCHED_OP_BWD_B : ZT_SCHED_OP_BWD;
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
        if (a->op == ZT_SCHED_OP_BWD || a->op == ZT_SCHED_OP_BWD_B) {
            if (a->op != bwd) FAILS("%s in a %s list", zt_sched_op_name(a->op),
                                    zt_schedule_kind_name(s->kind));
            if (a->micro != next_b)
                FAILS("BWD %d, expected BWD %d (backwards in order)", a->micro, next_b);
            pos_b[next_b++] = i;
        }
        if (a->op == ZT_SCHED_OP_BWD_W) {
            if (!split) FAILS("BWD_W in a %s list", zt_schedule_kind_name(s->kind));
            if (a->micro != next_w)
                FAILS("BWD_W %d, expected BWD_W %d (weight passes in order)", a->micro, next_w);
            pos_w[next_w++] = i;
        }
        if (a->chunk != 0 || a->recv_chunk != 0) FAILS("chunk %d with one chunk", a->chunk);
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
    if (next_f != m || next_b != m || next_w != (split ? m : 0))
        FAILS("%d FWD, %d BWD and %d BWD_W for %d micro-batches", next_f, next_b, next_w, m);
    for (int k = 0; k < m; k++) {
        if (!(pos_f[k] < pos_b[k])) FAILS("BWD %d before FWD %d", k, k);
        if (split && !(pos_b[k] < pos_w[k])) FAILS("BWD_W %d before BWD_B %d", k, k);
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

// Every stage of every (p, m), each kind: one FWD and one BWD (ZB-H1: one BWD_B and one
// BWD_W) per micro-batch, in order, FWD before BWD before BWD_W; each message exactly once
// on the stages that need it (none towards a neighbour that does not exist), receives
// before the compute that needs them and sends after the compute that makes them;
// recv_micro set exactly on combined ops.
ZT_TEST(schedule_actions_per_stage) {
    int lists = 0;
    for (int kk = 0; kk < N_KINDS; kk++)
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
    for (int kk = 0; kk < N_KINDS; kk++)
        for (int p = 2; p <= MAX_P; p++)
            for (int m = 1; m <= MAX_M; m++) {
                zt_schedule s[MAX_P];
                memset(s, 0, sizeof s);
                CHECK(build_all(s, kinds[kk], p, m));
                int ok = 1;
                for (int l = 0; l + 1 < p && ok; l++) {
                    // Each side's ops on link l, as (send, recv) halves seen from that side.
                    halves down[7 * MAX_M], up[7 * MAX_M];
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

// ZB-H1's peak of W passes waiting on stage s: s + 1 (s wait in the steady state, and one
// more between a B and the W after it), or fewer when the steady state is short: it has
// m - warmup B passes, and after them the cooldown adds none (one W per B).
static int zb_w_peak(int p, int s, int m) {
    int warmup = min_int(p - 1 - s, m);
    return min_int(min_int(s + 1, m - warmup + 1), m);
}

// In flight (FWD run, backward not finished: BWD, or BWD_W under ZB-H1) never exceeds
// min(p - s, m) under 1F1B, m under GPipe and min(p, m) under ZB-H1, and reaches it;
// zt_schedule_peak_in_flight says the same. The micro-batches live in a wider sense (input
// received or FWD run, backward not finished) are consecutive and never more than the peak,
// so slot k % peak never holds two at once (ZB-H1: one more than the peak counting a received
// input, which waits in the receive buffer, not in an activation slot). ZB-H1's W passes
// waiting (BWD_B run, BWD_W not) peak at zb_w_peak (zt_schedule_peak_w_pending).
ZT_TEST(schedule_in_flight) {
    for (int kk = 0; kk < N_KINDS; kk++)
        for (int p = 1; p <= MAX_P; p++)
            for (int m = 1; m <= MAX_M; m++)
                for (int st = 0; st < p; st++) {
                    zt_schedule s;
                    CHECK(zt_schedule_build(&s, kinds[kk], p, st, m) == ZT_OK);
                    int bound = expected_peak(kinds[kk], p, st, m);
                    int now = 0, peak = 0, ok = 1;
                    // ZB-H1 receives an input before the W that frees a slot (1F1B's
                    // SEND_BWD_RECV_FWD, then W): one more live, in the receive buffer
                    int zb_extra = kinds[kk] == ZT_SCHED_ZB_H1;
                    unsigned char live[MAX_M] = {0};
                    for (int i = 0; i < s.n_actions && ok; i++) {
                        const zt_sched_action *a = &s.actions[i];
                        halves h = halves_of(a);
                        if (a->op == ZT_SCHED_OP_FWD) {
                            now++;
                            live[a->micro] = 1;
                        }
                        if (a->op == ZT_SCHED_OP_BWD || a->op == ZT_SCHED_OP_BWD_W) {
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
                        if (n > bound + zb_extra || (n > 0 && hi - lo + 1 != n)) ok = 0;
                    }
                    if (!ok || peak != bound)
                        fprintf(stderr, "  %s p=%d stage=%d m=%d: peak %d, bound %d\n",
                                zt_schedule_kind_name(kinds[kk]), p, st, m, peak, bound);
                    CHECK(ok);
                    CHECK_EQ_INT(peak, bound);
                    CHECK_EQ_INT(zt_schedule_peak_in_flight(&s), bound);
                    int wp = kinds[kk] == ZT_SCHED_ZB_H1 ? zb_w_peak(p, st, m) : 0;
                    CHECK_EQ_INT(zt_schedule_peak_w_pending(&s), wp);
                    zt_schedule_free(&s);
                }
    return ZT_PASS;
}

// Every (p, m), 1F1B and GPipe, under rendezvous and nonblocking send/recv: no deadlock, and
// the step takes exactly (m + p - 1)(f + b + w) units for FWD = f, BWD = b + w. Derivation
// (both kinds; for 1F1B the simulation is what shows that the last stage never waits once
// started):
// micro-batch 0's forward reaches the end of the last stage after p·f; from then on the last
// stage runs its other m-1 forwards and its m backwards without idling, (m - 1)·f + m·(b+w);
// the gradient of micro-batch m-1 then walks back through p - 1 stages, (p - 1)·(b+w). Total
// (m + p - 1)(f + b + w). Every stage computes m(f + b + w) of it, so every stage idles
// (p - 1)(f + b + w) and the bubble fraction is exactly (p - 1)/(m + p - 1), compared here
// without division. Unequal costs on p <= 8, m <= 16; equal ones over the whole range.
ZT_TEST(schedule_simulate_bubble) {
    const zt_sched_costs costs[4] = {{1, 1, 1}, {1, 1, 2}, {2, 2, 1}, {1, 2, 3}};
    for (int kt = 0; kt < 4; kt++)
        for (int c = 0; c < 4; c++)
            for (int p = 1; p <= (c ? 8 : MAX_P); p++)
                for (int m = 1; m <= (c ? 16 : MAX_M); m++) {
                    long ticks = -1, work = costs[c].f + costs[c].b + costs[c].w;
                    zt_sim_stage per[MAX_P];
                    int kk = kt % 2; // both kinds, both transports
                    zt_sim_transport tr = kt / 2 ? ZT_SIM_NONBLOCKING : ZT_SIM_RENDEZVOUS;
                    zt_status rc =
                        zt_schedule_simulate(kinds[kk], p, m, 1, &costs[c], 1, tr, &ticks, per);
                    if (rc != ZT_OK) fprintf(stderr, "  %s\n", zt_error_message());
                    CHECK(rc == ZT_OK);
                    if (ticks != (m + p - 1) * work)
                        fprintf(stderr, "  %s p=%d m=%d costs %d\n",
                                zt_schedule_kind_name(kinds[kk]), p, m, c);
                    CHECK(ticks == (m + p - 1) * work);
                    for (int st = 0; st < p; st++) {
                        CHECK(per[st].busy == m * work);
                        CHECK(per[st].idle == (p - 1) * work);
                        CHECK_EQ_INT(per[st].peak_held, expected_peak(kinds[kk], p, st, m));
                        CHECK_EQ_INT(per[st].peak_w_pending, 0);
                    }
                    // bubble = (ticks - m·work) / ticks == (p-1)/(m+p-1)
                    CHECK((ticks - m * work) * (m + p - 1) == (long)(p - 1) * ticks);
                }
    long ticks = 0;
    zt_sched_costs c = {1, 1, 1};
    CHECK(zt_schedule_simulate(ZT_SCHED_1F1B, 4, 8, 1, &c, 1, ZT_SIM_RENDEZVOUS, &ticks, NULL) ==
          ZT_OK);
    printf("  1f1b p=4 m=8 f=b=w=1: %ld units, bubble %.3f (theory 3/11 = %.3f)\n", ticks,
           1.0 - 8.0 * 3 / (double)ticks, 3.0 / 11);
    return ZT_PASS;
}

// ZB-H1, f = b = w = 1, every p <= 16, m <= 64, no deadlock under either transport.
// Nonblocking (pipe_comm.h's --overlap-comm path: sends in flight, a receive waited for by
// the compute that reads it): with m >= p the step takes 3m + p - 1 units, every stage idle
// exactly p - 1 of them: the bubble (p-1)/(3m+p-1), about (p-1)/(3m), a third of 1F1B's
// 3(p-1) idle units (the paper's ZB-H1; schedule.c, top). Why p - 1: stage s waits s for
// micro-batch 0's input and p-1-s for the gradient of its first B (which walks back at b per
// stage, not b + w), and from then on the W passes fill every wait. Blocking (rendezvous),
// m > p: 3m + 2(p - 1), every stage idle 2(p - 1): a combined SEND_BWD_RECV_FWD cannot
// complete before the previous stage's forward, so the W after it does not fill that wait;
// still below 1F1B's 3(p - 1). With m <= p the steady state is too short for that to matter
// and both give 2m + 2p - 1 (below 1F1B's 3(m + p - 1) for p >= 2). Peaks: min(p, m)
// micro-batches held on every stage, zb_w_peak W passes waiting. Unequal costs (p <= 8,
// m <= 16): never slower than 1F1B with the same f, b, w and transport.
ZT_TEST(schedule_zb_h1_bubble) {
    zt_sched_costs one = {1, 1, 1};
    for (int tr = 0; tr < 2; tr++)
        for (int p = 1; p <= MAX_P; p++)
            for (int m = 1; m <= MAX_M; m++) {
                zt_sim_transport t = tr ? ZT_SIM_NONBLOCKING : ZT_SIM_RENDEZVOUS;
                long ticks = -1;
                zt_sim_stage per[MAX_P];
                zt_status rc =
                    zt_schedule_simulate(ZT_SCHED_ZB_H1, p, m, 1, &one, 1, t, &ticks, per);
                if (rc != ZT_OK) fprintf(stderr, "  p=%d m=%d: %s\n", p, m, zt_error_message());
                CHECK(rc == ZT_OK);
                long idle = m <= p ? 2 * p - 1 - m : tr ? p - 1 : 2 * (p - 1);
                if (ticks != 3 * m + idle)
                    fprintf(stderr, "  zb-h1 %s p=%d m=%d: %ld units, want %ld\n",
                            tr ? "nonblocking" : "rendezvous", p, m, ticks, 3 * m + idle);
                CHECK(ticks == 3 * m + idle);
                for (int st = 0; st < p; st++) {
                    CHECK(per[st].busy == 3 * m && per[st].idle == idle);
                    CHECK_EQ_INT(per[st].peak_held, min_int(p, m));
                    CHECK_EQ_INT(per[st].peak_w_pending, zb_w_peak(p, st, m));
                }
            }
    const zt_sched_costs costs[3] = {{1, 1, 2}, {2, 2, 1}, {1, 2, 3}};
    for (int tr = 0; tr < 2; tr++)
        for (int c = 0; c < 3; c++)
            for (int p = 1; p <= 8; p++)
                for (int m = 1; m <= 16; m++) {
                    zt_sim_transport t = tr ? ZT_SIM_NONBLOCKING : ZT_SIM_RENDEZVOUS;
                    long zb = -1, ref = -1;
                    CHECK(zt_schedule_simulate(ZT_SCHED_ZB_H1, p, m, 1, &costs[c], 1, t, &zb,
                                               NULL) == ZT_OK);
                    CHECK(zt_schedule_simulate(ZT_SCHED_1F1B, p, m, 1, &costs[c], 1, t, &ref,
                                               NULL) == ZT_OK);
                    CHECK(zb <= ref);
                }
    for (int tr = 0; tr < 2; tr++) {
        long ticks = 0;
        zt_sim_transport t = tr ? ZT_SIM_NONBLOCKING : ZT_SIM_RENDEZVOUS;
        CHECK(zt_schedule_simulate(ZT_SCHED_ZB_H1, 4, 8, 1, &one, 1, t, &ticks, NULL) == ZT_OK);
        printf("  zb-h1 p=4 m=8 f=b=w=1 %s: %ld units, bubble %.3f (1f1b 33 units, 0.273)\n",
               tr ? "nonblocking" : "rendezvous", ticks, 1.0 - 24.0 / (double)ticks);
    }
    return ZT_PASS;
}

// Interleaved, every p in 2..16, V in 2..4, m a multiple of p up to 64, nonblocking sends,
// f = b = w = 1 per chunk (a chunk is 1/V of a stage's layers, so these units are 1/V of a
// stage's): no deadlock, every input before its use, and the step takes exactly
// (m·V + p - 1)(f + b + w) units: every stage idles (p - 1)(f + b + w) chunk-units, against
// its m·V(f + b + w) of compute the (p - 1)/(V·m) of Megatron's paper (as a fraction of the
// whole step (p - 1)/(V·m + p - 1)); in a stage's units the idle time is (p-1)(f+b+w)/V, 1/V
// of 1F1B's. Why: the ramp is p - 1 chunk-steps of the first micro-batches' forwards (and the
// drain p - 1 of the last backwards), after which every stage has work at every step. The
// price: stage s holds min((p - s - 1)·2 + (V - 1)·p + 1, m·V) chunk-activations at the peak
// (Megatron's warmup + 1), on stage 0 (V - 1)·p + 2p - 1 chunk-sets, more than 1F1B's p
// stage-sets (= p·V chunk-sets) for V·p + p - 1 > p·V: it holds p - 1 chunk-sets more.
ZT_TEST(schedule_interleaved_bubble) {
    zt_sched_costs one = {1, 1, 1};
    for (int V = 2; V <= MAX_V; V++)
        for (int p = 2; p <= MAX_P; p++)
            for (int m = p; m <= MAX_M; m += p) {
                long ticks = -1;
                zt_sim_stage per[MAX_P];
                zt_status rc = zt_schedule_simulate(ZT_SCHED_INTERLEAVED, p, m, V, &one, 1,
                                                    ZT_SIM_NONBLOCKING, &ticks, per);
                if (rc != ZT_OK)
                    fprintf(stderr, "  p=%d m=%d V=%d: %s\n", p, m, V, zt_error_message());
                CHECK(rc == ZT_OK);
                if (ticks != (long)(m * V + p - 1) * 3)
                    fprintf(stderr, "  interleaved p=%d m=%d V=%d: %ld units\n", p, m, V, ticks);
                CHECK(ticks == (long)(m * V + p - 1) * 3);
                for (int st = 0; st < p; st++) {
                    int peak = min_int((p - st - 1) * 2 + (V - 1) * p + 1, m * V);
                    CHECK(per[st].busy == 3L * m * V && per[st].idle == 3L * (p - 1));
                    CHECK_EQ_INT(per[st].peak_held, peak);
                    zt_schedule s;
                    CHECK(zt_schedule_build_chunks(&s, ZT_SCHED_INTERLEAVED, p, st, m, V) ==
                          ZT_OK);
                    CHECK_EQ_INT(zt_schedule_peak_in_flight(&s), peak);
                    zt_schedule_free(&s);
                }
                // bubble over compute: (p - 1)/(V·m), compared without division
                CHECK((ticks - 3L * m * V) * V * m == 3L * m * V * (p - 1));
            }
    // unequal costs: still no deadlock and every input before its use
    const zt_sched_costs costs[2] = {{1, 2, 1}, {2, 1, 3}};
    for (int c = 0; c < 2; c++)
        for (int V = 2; V <= MAX_V; V++)
            for (int p = 2; p <= 8; p++)
                for (int m = p; m <= 16; m += p) {
                    long ticks = -1;
                    CHECK(zt_schedule_simulate(ZT_SCHED_INTERLEAVED, p, m, V, &costs[c], 1,
                                               ZT_SIM_NONBLOCKING, &ticks, NULL) == ZT_OK);
                }
    long ticks = 0;
    CHECK(zt_schedule_simulate(ZT_SCHED_INTERLEAVED, 4, 8, 2, &one, 1, ZT_SIM_NONBLOCKING, &ticks,
                               NULL) == ZT_OK);
    printf("  interleaved p=4 m=8 V=2: %ld chunk-units, bubble/compute %.3f (3/16 = %.3f)\n",
           ticks, (ticks - 48.0) / 48.0, 3.0 / 16);
    return ZT_PASS;
}

// Simulates the lists with f = b = w = 1 under rendezvous; the error message is kept.
static zt_status sim2(const zt_schedule *s, int p, long *ticks) {
    zt_sched_costs one[MAX_P];
    for (int i = 0; i < p; i++) one[i] = (zt_sched_costs){1, 1, 1};
    return zt_schedule_simulate_lists(s, p, one, ZT_SIM_RENDEZVOUS, ticks, NULL, NULL, NULL);
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
        zt_sched_action snd = {ZT_SCHED_OP_SEND_FWD, a.micro, -1, 0, 0};
        zt_sched_action rcv = {ZT_SCHED_OP_RECV_BWD, a.recv_micro, -1, 0, 0};
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
        for (int p = 2; p <= 8; p++)
            for (int m = 2; m <= 16; m++) {
                zt_schedule s[MAX_P], split[MAX_P];
                memset(s, 0, sizeof s);
                CHECK(build_all(s, ZT_SCHED_1F1B, p, m));
                for (int i = 0; i < p; i++) split_combined(&s[i], &split[i], bufs[i], order);
                long ticks = -1;
                zt_status rc = sim2(split, p, &ticks);
                free_all(s, p);
                CHECK(rc == ZT_ERR);
                CHECK(strstr(zt_error_message(), "deadlock"));
                CHECK(ticks == -1);
                if (order == 0 && p == 2 && m == 2) printf("  %s\n", zt_error_message());
            }
    return ZT_PASS;
}

// The index of the first action of list s with op `op` and micro-batch k (-1: none).
static int find(const zt_schedule *s, zt_sched_op op, int k) {
    for (int i = 0; i < s->n_actions; i++)
        if (s->actions[i].op == op && s->actions[i].micro == k) return i;
    return -1;
}

static void swap_actions(zt_schedule *s, int i, int j) {
    zt_sched_action t = s->actions[i];
    s->actions[i] = s->actions[j];
    s->actions[j] = t;
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
    long ticks = -1;
    CHECK(sim2(s, 2, &ticks) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "micro-batch"));
    printf("  %s\n", zt_error_message());
    rf0->micro = 0;
    CHECK(sim2(s, 2, &ticks) == ZT_OK);
    CHECK(ticks == (3 + 2 - 1) * 3);
    // Stage 0 receiving from a stage -1.
    s[0].actions[0] = (zt_sched_action){ZT_SCHED_OP_RECV_FWD, 0, -1, 0, 0};
    CHECK(sim2(s, 2, &ticks) == ZT_ERR);
    CHECK(strstr(zt_error_message(), "no peer"));
    free_all(s, 2);
    return ZT_PASS;
}

// The simulator checks every action's inputs as it runs: a W before its B, a B before its F,
// an F before its input arrived, a send before the compute that makes it, a repeat, and a
// micro-batch whose backward never runs are each an error naming the action.
ZT_TEST(schedule_simulate_checks_inputs) {
    struct {
        zt_sched_op a, b; // swap the first a of micro 1 with the first b of micro 1 on stage 1
        const char *says;
    } cases[] = {
        {ZT_SCHED_OP_BWD_W, ZT_SCHED_OP_BWD_B, "without its BWD_B"},
        {ZT_SCHED_OP_FWD, ZT_SCHED_OP_RECV_FWD, "before its input arrived"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        zt_schedule s[3];
        memset(s, 0, sizeof s);
        CHECK(build_all(s, ZT_SCHED_ZB_H1, 3, 4));
        long ticks = -1;
        CHECK(sim2(s, 3, &ticks) == ZT_OK);
        int i = find(&s[1], cases[c].a, 1), j = find(&s[1], cases[c].b, 1);
        CHECK(i >= 0 && j >= 0);
        swap_actions(&s[1], i, j);
        zt_status rc = sim2(s, 3, &ticks);
        printf("  %s\n", zt_error_message());
        CHECK(rc == ZT_ERR && strstr(zt_error_message(), cases[c].says));
        free_all(s, 3);
    }
    // A B before its F (a list with no transfers: one stage), a repeat, a missing W.
    zt_schedule one;
    CHECK(zt_schedule_build(&one, ZT_SCHED_ZB_H1, 1, 0, 2) == ZT_OK);
    long ticks = -1;
    swap_actions(&one, find(&one, ZT_SCHED_OP_FWD, 0), find(&one, ZT_SCHED_OP_BWD_B, 0));
    CHECK(sim2(&one, 1, &ticks) == ZT_ERR && strstr(zt_error_message(), "before its forward"));
    swap_actions(&one, find(&one, ZT_SCHED_OP_FWD, 0), find(&one, ZT_SCHED_OP_BWD_B, 0));
    CHECK(sim2(&one, 1, &ticks) == ZT_OK);
    int w1 = find(&one, ZT_SCHED_OP_BWD_W, 1);
    one.actions[w1].micro = 0;
    CHECK(sim2(&one, 1, &ticks) == ZT_ERR && strstr(zt_error_message(), "twice"));
    one.n_actions = w1; // drop the last W
    CHECK(sim2(&one, 1, &ticks) == ZT_ERR && strstr(zt_error_message(), "missing its backward"));
    zt_schedule_free(&one);
    // A send of the output before the forward that makes it, a backward before its output
    // gradient arrived (stage 0 of 2, GPipe: single transfers).
    zt_schedule g[2];
    memset(g, 0, sizeof g);
    CHECK(build_all(g, ZT_SCHED_GPIPE, 2, 2));
    swap_actions(&g[0], find(&g[0], ZT_SCHED_OP_FWD, 0), find(&g[0], ZT_SCHED_OP_SEND_FWD, 0));
    CHECK(sim2(g, 2, &ticks) == ZT_ERR && strstr(zt_error_message(), "sends before its forward"));
    swap_actions(&g[0], find(&g[0], ZT_SCHED_OP_FWD, 0), find(&g[0], ZT_SCHED_OP_SEND_FWD, 0));
    swap_actions(&g[0], find(&g[0], ZT_SCHED_OP_BWD, 1), find(&g[0], ZT_SCHED_OP_RECV_BWD, 1));
    CHECK(sim2(g, 2, &ticks) == ZT_ERR &&
          strstr(zt_error_message(), "before its output gradient arrived"));
    free_all(g, 2);
    return ZT_PASS;
}

// Per-stage costs: 1F1B on 2 stages where stage 1 costs twice stage 0 (f = b = w = 2 against
// 1): the step is bound by stage 1, which runs from t = f0 = 1 without waiting (its forward
// inputs come faster than it consumes them) and finishes its m = 4 micro-batches at
// 1 + 4·6 = 25; stage 0 then waits for the last gradient and runs its last backward, b0 + w0
// = 2: 27 units. Stage 1 idles 27 - 24 = 3, stage 0 27 - 12 = 15.
ZT_TEST(schedule_simulate_stage_costs) {
    zt_sched_costs c[2] = {{1, 1, 1}, {2, 2, 2}};
    long ticks = -1;
    zt_sim_stage per[2];
    CHECK(zt_schedule_simulate(ZT_SCHED_1F1B, 2, 4, 1, c, 0, ZT_SIM_RENDEZVOUS, &ticks, per) ==
          ZT_OK);
    printf("  1f1b p=2 m=4, stage 1 twice as slow: %ld units, idle %ld and %ld\n", ticks,
           per[0].idle, per[1].idle);
    CHECK(ticks == 27);
    CHECK(per[0].busy == 12 && per[1].busy == 24);
    CHECK(per[0].idle == 15 && per[1].idle == 3);
    return ZT_PASS;
}

// zt_schedule_simulate_virtual (what `zerotrain plan` prices interleaved with): a cost per
// virtual stage. Equal ones give exactly zt_schedule_simulate's step, (m·V + p - 1)(f + b + w)
// (so the bubble over compute is (p - 1)/(V·m), schedule_interleaved_bubble's derivation);
// chunk c at (c + 1) times the cost makes every stage compute m·3·(1 + 2 + ... + V) units,
// which only a simulator that prices each action by its own chunk gives.
ZT_TEST(schedule_simulate_virtual_costs) {
    enum { MAX_VIRT = 8 * MAX_V };
    zt_sched_costs one = {1, 1, 1}, each[MAX_VIRT];
    for (int V = 2; V <= MAX_V; V++)
        for (int p = 2; p <= 8; p++)
            for (int m = p; m <= 16; m += p) {
                for (int v = 0; v < p * V; v++) each[v] = one;
                long ticks = -1, ref = -2;
                zt_sim_stage per[MAX_P], per_ref[MAX_P];
                CHECK(zt_schedule_simulate_virtual(ZT_SCHED_INTERLEAVED, p, m, V, each,
                                                   ZT_SIM_NONBLOCKING, &ticks, per) == ZT_OK);
                CHECK(zt_schedule_simulate(ZT_SCHED_INTERLEAVED, p, m, V, &one, 1,
                                           ZT_SIM_NONBLOCKING, &ref, per_ref) == ZT_OK);
                CHECK(ticks == ref && ticks == (long)(m * V + p - 1) * 3);
                CHECK((ticks - 3L * m * V) * V * m == 3L * m * V * (p - 1));
                for (int st = 0; st < p; st++)
                    CHECK(per[st].busy == per_ref[st].busy && per[st].idle == per_ref[st].idle);
                for (int v = 0; v < p * V; v++) {
                    int k = v / p + 1; // chunk v / p
                    each[v] = (zt_sched_costs){k, k, k};
                }
                CHECK(zt_schedule_simulate_virtual(ZT_SCHED_INTERLEAVED, p, m, V, each,
                                                   ZT_SIM_NONBLOCKING, &ticks, per) == ZT_OK);
                for (int st = 0; st < p; st++) CHECK(per[st].busy == 3L * m * V * (V + 1) / 2);
            }
    return ZT_PASS;
}

// zt_schedule_chunk_slots: walking every interleaved list (and the 1-chunk kinds), the
// micro-batches of a chunk alive at once (from the receive of their input, or their forward,
// to the end of their backward) never share a slot k mod slots, and the count is reached.
ZT_TEST(schedule_chunk_slots) {
    enum { MAXLIVE = MAX_M * MAX_V };
    for (int V = 1; V <= MAX_V; V++)
        for (int p = 2; p <= MAX_P; p++)
            for (int m = p; m <= MAX_M; m += p)
                for (int st = 0; st < p; st++) {
                    zt_schedule s;
                    zt_schedule_kind kind = V == 1 ? ZT_SCHED_1F1B : ZT_SCHED_INTERLEAVED;
                    CHECK(zt_schedule_build_chunks(&s, kind, p, st, m, V) == ZT_OK);
                    for (int c = 0; c < V; c++) {
                        int n = zt_schedule_chunk_slots(&s, c), live = 0, peak = 0;
                        char used[MAXLIVE] = {0}; // slot in use by a live micro-batch
                        int ok = n >= 1 && n <= m;
                        for (int i = 0; i < s.n_actions && ok; i++) {
                            const zt_sched_action *a = &s.actions[i];
                            if (a->chunk != c) continue;
                            int recv = a->op == ZT_SCHED_OP_RECV_FWD;
                            const zt_sched_action *b = i ? &s.actions[i - 1] : NULL;
                            int fwd_alone = a->op == ZT_SCHED_OP_FWD &&
                                            (!b || b->op != ZT_SCHED_OP_RECV_FWD || b->chunk != c);
                            if (recv || fwd_alone) {
                                ok = !used[a->micro % n];
                                used[a->micro % n] = 1;
                                if (++live > peak) peak = live;
                            }
                            if (a->op == ZT_SCHED_OP_BWD) {
                                used[a->micro % n] = 0;
                                live--;
                            }
                        }
                        if (!ok || peak != n)
                            fprintf(stderr, "  V=%d p=%d m=%d stage %d chunk %d: slots %d, "
                                    "peak %d, %s\n", V, p, m, st, c, n, peak,
                                    ok ? "no clash" : "two live micro-batches share a slot");
                        CHECK(ok && peak == n);
                        if (V == 1) CHECK_EQ_INT(n, zt_schedule_peak_in_flight(&s));
                    }
                    zt_schedule_free(&s);
                }
    return ZT_PASS;
}

// Interleaved's messages from one rank to another arrive in the order the receiver takes
// them, kinds mixed: at pp 2 a rank's activations (the ring's wrap) and gradients go to the
// same peer, and comm.h's rule is that tags must not be needed to order messages (NCCL has
// none). For every list pair: the sequence src sends to dst, each message named by (kind,
// micro-batch, the receiver's chunk), equals the sequence dst receives from src.
ZT_TEST(schedule_ring_order) {
    enum { MAXMSG = 2 * MAX_M * MAX_V };
    for (int V = 2; V <= MAX_V; V++)
        for (int p = 2; p <= 8; p++)
            for (int m = p; m <= 32; m += p) {
                zt_schedule s[8];
                for (int r = 0; r < p; r++)
                    CHECK(zt_schedule_build_chunks(&s[r], ZT_SCHED_INTERLEAVED, p, r, m, V) ==
                          ZT_OK);
                for (int src = 0; src < p; src++)
                    for (int dst = 0; dst < p; dst++) {
                        if (dst == src) continue;
                        static int sent[MAXMSG], got[MAXMSG];
                        int ns = 0, ng = 0;
                        for (int i = 0; i < s[src].n_actions; i++) {
                            const zt_sched_action *a = &s[src].actions[i];
                            if (a->op == ZT_SCHED_OP_SEND_FWD && (src + 1) % p == dst)
                                sent[ns++] = (0 * MAX_V + a->chunk + (src == p - 1)) * MAX_M +
                                             a->micro;
                            if (a->op == ZT_SCHED_OP_SEND_BWD && (src + p - 1) % p == dst)
                                sent[ns++] = (1 * MAX_V + a->chunk - (src == 0)) * MAX_M +
                                             a->micro;
                        }
                        for (int i = 0; i < s[dst].n_actions; i++) {
                            const zt_sched_action *a = &s[dst].actions[i];
                            if (a->op == ZT_SCHED_OP_RECV_FWD && (dst + p - 1) % p == src)
                                got[ng++] = (0 * MAX_V + a->chunk) * MAX_M + a->micro;
                            if (a->op == ZT_SCHED_OP_RECV_BWD && (dst + 1) % p == src)
                                got[ng++] = (1 * MAX_V + a->chunk) * MAX_M + a->micro;
                        }
                        int same = ns == ng && !memcmp(sent, got, (size_t)ns * sizeof(int));
                        if (!same)
                            fprintf(stderr, "  V=%d p=%d m=%d: %d -> %d sends %d messages, "
                                    "receives %d, or in another order\n", V, p, m, src, dst,
                                    ns, ng);
                        CHECK(same);
                    }
                for (int r = 0; r < p; r++) zt_schedule_free(&s[r]);
            }
    return ZT_PASS;
}
