// Pipeline schedules (GPipe, 1F1B) as action lists, their peak in-flight count, and a
// rendezvous simulator that proves them free of deadlock and measures their bubble.
//
// Why the lists cannot deadlock under BLOCKING send/recv
// ------------------------------------------------------
// Take the link between stages s and s+1. Stage s sees on it a sequence of communication
// ops (sends of activations, receives of gradients); stage s+1 sees its own sequence
// (receives of activations, sends of gradients). The lists are built so that these two
// sequences PAIR EXACTLY: the i-th op of s on the link and the i-th op of s+1 on it carry
// the same messages in opposite directions (a SEND_FWD k faces a RECV_FWD k, a
// SEND_FWD_RECV_BWD (k, j) faces a SEND_BWD_RECV_FWD (j, k), and so on), and no op touches
// both links of a stage. The pairing under 1F1B, with w = warmup of s
// (w = min(p-s-1, m), and s+1 has warmup w-1 or, when w = m, m or m-1):
//
//     stage s   (down side)            stage s+1 (up side)
//     SEND_FWD 0 .. w-1                RECV_FWD 0 .. w-1  (its warmup + the one before steady)
//     SEND_FWD_RECV_BWD (w+i, i)       SEND_BWD_RECV_FWD (i, w+i)    i = 0 .. m-w-1
//     RECV_BWD m-w .. m-1              SEND_BWD m-w .. m-1 (last steady one + cooldown)
//
// and under GPipe SEND_FWD 0..m-1 then RECV_BWD 0..m-1 face RECV_FWD 0..m-1 then
// SEND_BWD 0..m-1. Since each channel is FIFO, the messages of op i on one side can only
// match those of op i on the other side, so op i completes exactly when both sides have
// reached it. Now suppose every unfinished stage is blocked. A stage u blocked on op i of
// link L waits for its neighbour t across L; t has not finished (it too has an op i on L),
// it is not past op i (that needed u), and not at op i (then both would complete): so t is
// blocked on an op of its OTHER link, waiting for the next stage beyond it. The chain of
// waits therefore runs in one direction without turning back and must reach stage 0 or
// p-1, which has no other link: contradiction. Every list is finite, so all stages finish.
//
// Why the combined ops are needed: in the 1F1B steady state stage s sends activations of k
// to s+1 while s+1 sends the gradient of j back to s. Issued as a blocking send followed by
// a blocking receive on both sides, each stage sits in its send waiting for the other to
// post a receive: a cycle (tests/test_schedule.c splits the combined ops and watches the
// simulator report that deadlock). As one send_recv, both halves are posted at once.
//
// Timing: with free communication, FWD = f and BWD = b units, both kinds take
// (m + p - 1)(f + b) units, so each stage idles (p-1)(f+b): the bubble fraction
// (p-1)/(m+p-1). 1F1B wins on memory (peak min(p-s, m) instead of m), not on time.
#include "schedule.h"

#include <string.h>

const char *zt_schedule_kind_name(zt_schedule_kind kind) {
    switch (kind) {
    case ZT_SCHED_1F1B: return "1f1b";
    case ZT_SCHED_GPIPE: return "gpipe";
    }
    return "?";
}

const char *zt_sched_op_name(zt_sched_op op) {
    static const char *const names[ZT_SCHED_OP_COUNT] = {
        "RECV_FWD", "FWD", "SEND_FWD", "RECV_BWD", "BWD", "SEND_BWD",
        "SEND_FWD_RECV_BWD", "SEND_BWD_RECV_FWD",
    };
    return (int)op >= 0 && op < ZT_SCHED_OP_COUNT ? names[op] : "?";
}

// Appends to s->actions (sized for the worst case by the caller).
static void push(zt_schedule *s, zt_sched_op op, int micro, int recv_micro) {
    s->actions[s->n_actions++] = (zt_sched_action){op, micro, recv_micro};
}

static void build_gpipe(zt_schedule *s, int first, int last) {
    int m = s->n_micro;
    for (int k = 0; k < m; k++) {
        if (!first) push(s, ZT_SCHED_OP_RECV_FWD, k, -1);
        push(s, ZT_SCHED_OP_FWD, k, -1);
        if (!last) push(s, ZT_SCHED_OP_SEND_FWD, k, -1);
    }
    // Backwards in forward order (not reversed): the same accumulation order as 1F1B.
    for (int k = 0; k < m; k++) {
        if (!last) push(s, ZT_SCHED_OP_RECV_BWD, k, -1);
        push(s, ZT_SCHED_OP_BWD, k, -1);
        if (!first) push(s, ZT_SCHED_OP_SEND_BWD, k, -1);
    }
}

// Megatron's forward_backward_pipelining_without_interleaving, with its batched
// isend/irecv pairs as combined ops.
static void build_1f1b(zt_schedule *s, int first, int last) {
    int m = s->n_micro;
    int warmup = s->n_stages - s->stage - 1;
    if (warmup > m) warmup = m;
    int steady = m - warmup;
    for (int k = 0; k < warmup; k++) {
        if (!first) push(s, ZT_SCHED_OP_RECV_FWD, k, -1);
        push(s, ZT_SCHED_OP_FWD, k, -1);
        if (!last) push(s, ZT_SCHED_OP_SEND_FWD, k, -1);
    }
    if (steady > 0 && !first) push(s, ZT_SCHED_OP_RECV_FWD, warmup, -1);
    for (int i = 0; i < steady; i++) {
        int f = warmup + i; // forward of f, then backward of i
        push(s, ZT_SCHED_OP_FWD, f, -1);
        if (!last) push(s, ZT_SCHED_OP_SEND_FWD_RECV_BWD, f, i);
        push(s, ZT_SCHED_OP_BWD, i, -1);
        if (!first) {
            if (i + 1 < steady) push(s, ZT_SCHED_OP_SEND_BWD_RECV_FWD, i, f + 1);
            else push(s, ZT_SCHED_OP_SEND_BWD, i, -1);
        }
    }
    for (int k = steady; k < m; k++) {
        if (!last) push(s, ZT_SCHED_OP_RECV_BWD, k, -1);
        push(s, ZT_SCHED_OP_BWD, k, -1);
        if (!first) push(s, ZT_SCHED_OP_SEND_BWD, k, -1);
    }
}

zt_status zt_schedule_build(zt_schedule *s, zt_schedule_kind kind, int n_stages, int stage,
                            int n_micro) {
    memset(s, 0, sizeof *s);
    if (n_stages < 1) return zt_errorf("pipeline schedule: %d stages (need at least 1)", n_stages);
    if (n_micro < 1)
        return zt_errorf("pipeline schedule: %d micro-batches per step (need at least 1)",
                         n_micro);
    ZT_ASSERTF(stage >= 0 && stage < n_stages, "schedule: stage %d of %d", stage, n_stages);
    ZT_ASSERTF(kind == ZT_SCHED_1F1B || kind == ZT_SCHED_GPIPE, "schedule: kind %d", (int)kind);
    // At most RECV + FWD + SEND and RECV + BWD + SEND per micro-batch.
    size_t cap = 6 * (size_t)n_micro;
    s->actions = malloc(cap * sizeof *s->actions);
    ZT_ASSERTF(s->actions, "schedule: out of memory for %zu actions", cap);
    s->kind = kind;
    s->n_stages = n_stages;
    s->stage = stage;
    s->n_micro = n_micro;
    int first = stage == 0, last = stage == n_stages - 1;
    if (kind == ZT_SCHED_GPIPE) build_gpipe(s, first, last);
    else build_1f1b(s, first, last);
    ZT_ASSERT((size_t)s->n_actions <= cap);
    return ZT_OK;
}

void zt_schedule_free(zt_schedule *s) {
    if (!s) return;
    free(s->actions);
    memset(s, 0, sizeof *s);
}

int zt_schedule_peak_in_flight(const zt_schedule *s) {
    int now = 0, peak = 0;
    for (int i = 0; i < s->n_actions; i++) {
        if (s->actions[i].op == ZT_SCHED_OP_FWD && ++now > peak) peak = now;
        if (s->actions[i].op == ZT_SCHED_OP_BWD) now--;
    }
    return peak;
}

// ---- the simulator ----------------------------------------------------------------------

// The message halves of an action, -1 where absent: micro-batch sent / received on the
// activation channel (forward direction) and on the gradient channel (backward direction).
typedef struct {
    int send_fwd, recv_fwd, send_bwd, recv_bwd;
} msg_parts;

static msg_parts parts_of(const zt_sched_action *a) {
    msg_parts p = {-1, -1, -1, -1};
    switch (a->op) {
    case ZT_SCHED_OP_RECV_FWD: p.recv_fwd = a->micro; break;
    case ZT_SCHED_OP_SEND_FWD: p.send_fwd = a->micro; break;
    case ZT_SCHED_OP_RECV_BWD: p.recv_bwd = a->micro; break;
    case ZT_SCHED_OP_SEND_BWD: p.send_bwd = a->micro; break;
    case ZT_SCHED_OP_SEND_FWD_RECV_BWD:
        p.send_fwd = a->micro;
        p.recv_bwd = a->recv_micro;
        break;
    case ZT_SCHED_OP_SEND_BWD_RECV_FWD:
        p.send_bwd = a->micro;
        p.recv_fwd = a->recv_micro;
        break;
    default: break;
    }
    return p;
}

typedef struct {
    int pc;          // index of the current action; n_actions when finished
    int busy;        // computing the current action until `until`
    long until;
    msg_parts left;  // halves of the current comm action not matched yet (-1 = done)
    int posted;      // `left` holds the current action's halves
} sim_stage;

static int is_compute(zt_sched_op op) { return op == ZT_SCHED_OP_FWD || op == ZT_SCHED_OP_BWD; }

// Matches a send half of stage `from` with the receive half of stage `to` on one channel.
// Returns 1 if they matched, 0 if either is absent, -1 (with the error set) on a mismatch.
static int match(int *send, int *recv, int from, int to, const char *what) {
    if (*send < 0 || *recv < 0) return 0;
    if (*send != *recv) {
        zt_errorf("schedule simulation: stage %d sends %s of micro-batch %d while stage %d "
                  "receives micro-batch %d",
                  from, what, *send, to, *recv);
        return -1;
    }
    *send = *recv = -1;
    return 1;
}

static zt_status deadlock_error(const zt_schedule *stages, const sim_stage *st, int p, long t) {
    char buf[1024];
    size_t n = 0;
    for (int i = 0; i < p && n < sizeof buf; i++) {
        if (st[i].pc >= stages[i].n_actions) continue;
        const zt_sched_action *a = &stages[i].actions[st[i].pc];
        int w = snprintf(buf + n, sizeof buf - n, "%s stage %d in %s(%d", n ? ";" : "", i,
                         zt_sched_op_name(a->op), a->micro);
        if (w < 0) break;
        n += (size_t)w;
        if (n >= sizeof buf) break;
        w = a->recv_micro >= 0 ? snprintf(buf + n, sizeof buf - n, ", %d)", a->recv_micro)
                               : snprintf(buf + n, sizeof buf - n, ")");
        if (w < 0) break;
        n += (size_t)w;
    }
    return zt_errorf("schedule simulation: deadlock at t=%ld:%s", t, buf);
}

zt_status zt_schedule_simulate_lists(const zt_schedule *stages, int n_stages, int fwd_cost,
                                     int bwd_cost, int *ticks_out) {
    ZT_ASSERTF(n_stages >= 1 && fwd_cost >= 1 && bwd_cost >= 1,
               "simulate: %d stages, costs %d/%d", n_stages, fwd_cost, bwd_cost);
    for (int i = 0; i < n_stages; i++)
        ZT_ASSERTF(stages[i].stage == i && stages[i].n_stages == n_stages,
                   "simulate: list %d is stage %d of %d", i, stages[i].stage,
                   stages[i].n_stages);
    sim_stage *st = calloc((size_t)n_stages, sizeof *st);
    ZT_ASSERT(st);
    zt_status rc = ZT_OK;
    long t = 0;
    for (;;) {
        // Run everything that can happen at time t, until nothing changes.
        int progress = 1;
        while (progress && rc == ZT_OK) {
            progress = 0;
            for (int i = 0; i < n_stages && rc == ZT_OK; i++) {
                sim_stage *u = &st[i];
                if (u->busy || u->pc >= stages[i].n_actions) continue;
                const zt_sched_action *a = &stages[i].actions[u->pc];
                if (is_compute(a->op)) {
                    u->busy = 1;
                    u->until = t + (a->op == ZT_SCHED_OP_FWD ? fwd_cost : bwd_cost);
                    progress = 1;
                    continue;
                }
                if (!u->posted) {
                    u->left = parts_of(a);
                    u->posted = 1;
                    int to_prev = u->left.recv_fwd >= 0 || u->left.send_bwd >= 0;
                    int to_next = u->left.send_fwd >= 0 || u->left.recv_bwd >= 0;
                    if ((to_prev && i == 0) || (to_next && i == n_stages - 1)) {
                        rc = zt_errorf("schedule simulation: stage %d of %d has %s, which "
                                       "has no peer",
                                       i, n_stages, zt_sched_op_name(a->op));
                        break;
                    }
                    progress = 1;
                }
                // Match against the neighbours' posted halves (a busy or finished neighbour
                // has nothing posted).
                for (int d = -1; d <= 1; d += 2) {
                    int j = i + d;
                    if (j < 0 || j >= n_stages || !st[j].posted) continue;
                    int r1, r2;
                    if (d == 1) { // i -> j activations, j -> i gradients
                        r1 = match(&u->left.send_fwd, &st[j].left.recv_fwd, i, j, "activations");
                        r2 = r1 < 0 ? 0 : match(&st[j].left.send_bwd, &u->left.recv_bwd, j, i,
                                                "the gradient");
                    } else {
                        r1 = match(&st[j].left.send_fwd, &u->left.recv_fwd, j, i, "activations");
                        r2 = r1 < 0 ? 0 : match(&u->left.send_bwd, &st[j].left.recv_bwd, i, j,
                                                "the gradient");
                    }
                    if (r1 < 0 || r2 < 0) {
                        rc = ZT_ERR;
                        break;
                    }
                    if (r1 || r2) progress = 1;
                }
                if (rc != ZT_OK) break;
                msg_parts l = u->left;
                if (l.send_fwd < 0 && l.recv_fwd < 0 && l.send_bwd < 0 && l.recv_bwd < 0) {
                    u->posted = 0;
                    u->pc++;
                    progress = 1;
                }
            }
        }
        if (rc != ZT_OK) break;
        int all_done = 1, any_busy = 0;
        long next = 0;
        for (int i = 0; i < n_stages; i++) {
            if (st[i].pc < stages[i].n_actions) all_done = 0;
            if (st[i].busy && (!any_busy || st[i].until < next)) next = st[i].until;
            any_busy |= st[i].busy;
        }
        if (all_done) {
            *ticks_out = (int)t;
            break;
        }
        if (!any_busy) {
            rc = deadlock_error(stages, st, n_stages, t);
            break;
        }
        t = next;
        for (int i = 0; i < n_stages; i++)
            if (st[i].busy && st[i].until == t) {
                st[i].busy = 0;
                st[i].pc++;
            }
    }
    free(st);
    return rc;
}

zt_status zt_schedule_simulate(zt_schedule_kind kind, int n_stages, int n_micro, int fwd_cost,
                               int bwd_cost, int *ticks_out) {
    if (n_stages < 1) return zt_errorf("pipeline schedule: %d stages (need at least 1)", n_stages);
    zt_schedule *s = calloc((size_t)n_stages, sizeof *s);
    ZT_ASSERT(s);
    zt_status rc = ZT_OK;
    for (int i = 0; i < n_stages && rc == ZT_OK; i++)
        rc = zt_schedule_build(&s[i], kind, n_stages, i, n_micro);
    if (rc == ZT_OK) rc = zt_schedule_simulate_lists(s, n_stages, fwd_cost, bwd_cost, ticks_out);
    for (int i = 0; i < n_stages; i++) zt_schedule_free(&s[i]);
    free(s);
    return rc;
}
