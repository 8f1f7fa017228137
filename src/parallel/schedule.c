// Pipeline schedules (GPipe, 1F1B, ZB-H1, interleaved 1F1B) as action lists, their peak
// in-flight counts, and a simulator that checks them (inputs before use, sends matching
// receives, no deadlock) and measures their bubble.
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
//
// ZB-H1 keeps 1F1B's transfers exactly (its link ops pair as above: the argument holds) and
// only splits each BWD into BWD_B, then BWD_W somewhere later on the same stage, which talks
// to no one. What it changes is time: stage s's B of micro-batch k waits only for the B (not
// B + W) of stage s+1, so the gradient walks back p-1 stages at b per stage, and the W passes
// fill the waits. With f = b = w = 1 and m >= p the step takes 3m + p - 1 units (1F1B:
// 3(m + p - 1)): each stage idles p - 1, the bubble (p-1)/(3m+p-1), about (p-1)/(3m), a third
// of 1F1B's (p-1)(f+b+w) idle time per stage, as the paper says. With m < p there is no
// steady state: 2m + 2p - 1 units (tests/test_schedule.c checks both).
//
// Interleaved (V chunks per stage, virtual stages v = c·p + s): a chunk's F/B is 1/V of a
// stage's, so the ramp is p-1 chunk-steps instead of p-1 stage-steps. Its lists are checked
// under nonblocking sends (a send does not wait for its receiver), the transport Megatron uses
// for it; tests/test_schedule.c states what the simulator measures for them.
#include "schedule.h"

#include <string.h>

const char *zt_schedule_kind_name(zt_schedule_kind kind) {
    switch (kind) {
    case ZT_SCHED_1F1B: return "1f1b";
    case ZT_SCHED_GPIPE: return "gpipe";
    case ZT_SCHED_ZB_H1: return "zb-h1";
    case ZT_SCHED_INTERLEAVED: return "interleaved";
    case ZT_SCHED_KIND_COUNT: break;
    }
    return "?";
}

const char *zt_sched_op_name(zt_sched_op op) {
    static const char *const names[ZT_SCHED_OP_COUNT] = {
        "RECV_FWD", "FWD", "SEND_FWD", "RECV_BWD", "BWD", "SEND_BWD",
        "SEND_FWD_RECV_BWD", "SEND_BWD_RECV_FWD", "BWD_B", "BWD_W",
    };
    return (int)op >= 0 && op < ZT_SCHED_OP_COUNT ? names[op] : "?";
}

// Appends to s->actions (sized for the worst case by the caller).
static void push_chunk(zt_schedule *s, zt_sched_op op, int micro, int recv_micro, int chunk) {
    s->actions[s->n_actions++] = (zt_sched_action){op, micro, recv_micro, chunk, 0};
}
static void push(zt_schedule *s, zt_sched_op op, int micro, int recv_micro) {
    push_chunk(s, op, micro, recv_micro, 0);
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
// isend/irecv pairs as combined ops. `bwd`: the backward op (BWD, or BWD_B for ZB-H1).
static void build_1f1b(zt_schedule *s, int first, int last, zt_sched_op bwd) {
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
        push(s, bwd, i, -1);
        if (!first) {
            if (i + 1 < steady) push(s, ZT_SCHED_OP_SEND_BWD_RECV_FWD, i, f + 1);
            else push(s, ZT_SCHED_OP_SEND_BWD, i, -1);
        }
    }
    for (int k = steady; k < m; k++) {
        if (!last) push(s, ZT_SCHED_OP_RECV_BWD, k, -1);
        push(s, bwd, k, -1);
        if (!first) push(s, ZT_SCHED_OP_SEND_BWD, k, -1);
    }
}

// Whether action i of `a` sends the input gradient of the micro-batch whose BWD_B precedes
// it (the transfer that belongs to that B).
static int sends_input_grad(const zt_sched_action *a) {
    return a->op == ZT_SCHED_OP_SEND_BWD || a->op == ZT_SCHED_OP_SEND_BWD_RECV_FWD;
}

// ZB-H1 from 1F1B's list with BWD_B for BWD (in `tmp`): after each B and the transfer that
// sends its input gradient, the oldest waiting W passes run while more than `stage` wait
// (steady state; the last stage runs F B W), or one of them (cooldown, the B of the
// micro-batches after the last forward's: the W fills the wait for the next gradient); the
// rest at the end. W in micro-batch order, so the weight gradients accumulate in 1F1B's
// order. The transfers stay 1F1B's, combined ops included.
static void build_zb_h1(zt_schedule *s, const zt_schedule *tmp) {
    int warmup = s->n_stages - s->stage - 1, next_w = 0, pending = 0;
    if (warmup > s->n_micro) warmup = s->n_micro;
    for (int i = 0; i < tmp->n_actions; i++) {
        s->actions[s->n_actions++] = tmp->actions[i];
        if (tmp->actions[i].op != ZT_SCHED_OP_BWD_B) continue;
        int cooldown = tmp->actions[i].micro >= s->n_micro - warmup;
        pending++;
        if (i + 1 < tmp->n_actions && sends_input_grad(&tmp->actions[i + 1]))
            s->actions[s->n_actions++] = tmp->actions[++i];
        int keep = cooldown ? pending - 1 : s->stage;
        while (pending > keep && pending > 0) {
            push(s, ZT_SCHED_OP_BWD_W, next_w++, -1);
            pending--;
        }
    }
    while (next_w < s->n_micro) push(s, ZT_SCHED_OP_BWD_W, next_w++, -1);
}

// Megatron's forward_backward_pipelining_with_interleaving (see the header for the order),
// with single transfers next to their compute.
static void interleaved_step(zt_schedule *s, int j, int backward) {
    int p = s->n_stages, V = s->n_chunks, r = s->stage;
    int micro = (j / (p * V)) * p + j % p, chunk = (j / p) % V;
    if (backward) chunk = V - 1 - chunk;
    int first = r == 0 && chunk == 0, last = r == p - 1 && chunk == V - 1;
    if (!backward) {
        if (!first) push_chunk(s, ZT_SCHED_OP_RECV_FWD, micro, -1, chunk);
        push_chunk(s, ZT_SCHED_OP_FWD, micro, -1, chunk);
        if (!last) push_chunk(s, ZT_SCHED_OP_SEND_FWD, micro, -1, chunk);
    } else {
        if (!last) push_chunk(s, ZT_SCHED_OP_RECV_BWD, micro, -1, chunk);
        push_chunk(s, ZT_SCHED_OP_BWD, micro, -1, chunk);
        if (!first) push_chunk(s, ZT_SCHED_OP_SEND_BWD, micro, -1, chunk);
    }
}

static void build_interleaved(zt_schedule *s) {
    int p = s->n_stages, V = s->n_chunks, total = s->n_micro * V;
    int warmup = (p - s->stage - 1) * 2 + (V - 1) * p;
    if (warmup > total) warmup = total;
    for (int j = 0; j < warmup; j++) interleaved_step(s, j, 0);
    for (int i = 0; i < total - warmup; i++) {
        interleaved_step(s, warmup + i, 0);
        interleaved_step(s, i, 1);
    }
    for (int i = total - warmup; i < total; i++) interleaved_step(s, i, 1);
}

static zt_status check_sizes(int n_stages, int n_micro) {
    if (n_stages < 1) return zt_errorf("pipeline schedule: %d stages (need at least 1)", n_stages);
    if (n_micro < 1)
        return zt_errorf("pipeline schedule: %d micro-batches per step (need at least 1)",
                         n_micro);
    return ZT_OK;
}

static zt_status check_chunks(zt_schedule_kind kind, int n_stages, int n_micro, int n_chunks) {
    if (kind != ZT_SCHED_INTERLEAVED) {
        if (n_chunks != 1)
            return zt_errorf("pipeline schedule %s: %d virtual stages per stage (only "
                             "interleaved takes more than 1)",
                             zt_schedule_kind_name(kind), n_chunks);
        return ZT_OK;
    }
    if (n_chunks < 2)
        return zt_errorf("interleaved schedule: %d virtual stages per stage (need at least 2)",
                         n_chunks);
    if (n_stages < 2)
        return zt_errorf("interleaved schedule: %d pipeline stage (need at least 2)", n_stages);
    if (n_micro % n_stages)
        return zt_errorf("interleaved schedule: %d micro-batches per step is not a multiple of "
                         "the %d pipeline stages: choose a multiple",
                         n_micro, n_stages);
    return ZT_OK;
}

zt_status zt_schedule_build_chunks(zt_schedule *s, zt_schedule_kind kind, int n_stages,
                                   int stage, int n_micro, int n_chunks) {
    memset(s, 0, sizeof *s);
    ZT_TRY(check_sizes(n_stages, n_micro));
    ZT_ASSERTF(stage >= 0 && stage < n_stages, "schedule: stage %d of %d", stage, n_stages);
    ZT_ASSERTF(kind >= 0 && kind < ZT_SCHED_KIND_COUNT, "schedule: kind %d", (int)kind);
    ZT_TRY(check_chunks(kind, n_stages, n_micro, n_chunks));
    // At most RECV + FWD + SEND and RECV + B + SEND + W per micro-batch and chunk.
    size_t cap = 7 * (size_t)n_micro * (size_t)n_chunks;
    s->actions = malloc(cap * sizeof *s->actions);
    ZT_ASSERTF(s->actions, "schedule: out of memory for %zu actions", cap);
    s->kind = kind;
    s->n_stages = n_stages;
    s->stage = stage;
    s->n_micro = n_micro;
    s->n_chunks = n_chunks;
    int first = stage == 0, last = stage == n_stages - 1;
    if (kind == ZT_SCHED_GPIPE) build_gpipe(s, first, last);
    else if (kind == ZT_SCHED_1F1B) build_1f1b(s, first, last, ZT_SCHED_OP_BWD);
    else if (kind == ZT_SCHED_INTERLEAVED) build_interleaved(s);
    else {
        zt_schedule tmp = *s;
        tmp.actions = malloc(cap * sizeof *tmp.actions);
        ZT_ASSERTF(tmp.actions, "schedule: out of memory for %zu actions", cap);
        build_1f1b(&tmp, first, last, ZT_SCHED_OP_BWD_B);
        build_zb_h1(s, &tmp);
        free(tmp.actions);
    }
    ZT_ASSERT((size_t)s->n_actions <= cap);
    return ZT_OK;
}

zt_status zt_schedule_build(zt_schedule *s, zt_schedule_kind kind, int n_stages, int stage,
                            int n_micro) {
    return zt_schedule_build_chunks(s, kind, n_stages, stage, n_micro, 1);
}

void zt_schedule_free(zt_schedule *s) {
    if (!s) return;
    free(s->actions);
    memset(s, 0, sizeof *s);
}

int zt_schedule_peak_in_flight(const zt_schedule *s) {
    int now = 0, peak = 0;
    for (int i = 0; i < s->n_actions; i++) {
        zt_sched_op op = s->actions[i].op;
        if (op == ZT_SCHED_OP_FWD && ++now > peak) peak = now;
        if (op == ZT_SCHED_OP_BWD || op == ZT_SCHED_OP_BWD_W) now--;
    }
    return peak;
}

int zt_schedule_chunk_slots(const zt_schedule *s, int chunk) {
    ZT_ASSERT(chunk >= 0 && chunk < s->n_chunks);
    int now = 0, peak = 0, received = 0; // received: a RECV_FWD already counted its FWD
    for (int i = 0; i < s->n_actions; i++) {
        const zt_sched_action *a = &s->actions[i];
        if (a->chunk != chunk) continue;
        int starts = a->op == ZT_SCHED_OP_RECV_FWD || (a->op == ZT_SCHED_OP_FWD && !received);
        received = a->op == ZT_SCHED_OP_RECV_FWD;
        if (starts && ++now > peak) peak = now;
        if (a->op == ZT_SCHED_OP_BWD || a->op == ZT_SCHED_OP_BWD_W) now--;
    }
    return peak;
}

int zt_schedule_peak_w_pending(const zt_schedule *s) {
    int now = 0, peak = 0;
    for (int i = 0; i < s->n_actions; i++) {
        zt_sched_op op = s->actions[i].op;
        if (op == ZT_SCHED_OP_BWD_B && ++now > peak) peak = now;
        if (op == ZT_SCHED_OP_BWD_W) now--;
    }
    return peak;
}

// ---- the simulator ----------------------------------------------------------------------

// A message on a channel: micro-batch and the boundary it crosses (virtual stage v -> v+1
// for activations, v+1 -> v for gradients: both named v), -1 where absent.
typedef struct {
    int micro, boundary;
} msg;
static const msg no_msg = {-1, -1};
static int has(msg x) { return x.micro >= 0; }

// The message halves of an action: sent / received on the activation channel (forward
// direction) and on the gradient channel (backward direction).
typedef struct {
    msg send_fwd, recv_fwd, send_bwd, recv_bwd;
} msg_parts;

static int virt(const zt_schedule *s, int chunk) { return chunk * s->n_stages + s->stage; }

static msg_parts parts_of(const zt_schedule *s, const zt_sched_action *a) {
    msg_parts p = {no_msg, no_msg, no_msg, no_msg};
    int v = virt(s, a->chunk), rv = virt(s, a->recv_chunk);
    switch (a->op) {
    case ZT_SCHED_OP_RECV_FWD: p.recv_fwd = (msg){a->micro, v - 1}; break;
    case ZT_SCHED_OP_SEND_FWD: p.send_fwd = (msg){a->micro, v}; break;
    case ZT_SCHED_OP_RECV_BWD: p.recv_bwd = (msg){a->micro, v}; break;
    case ZT_SCHED_OP_SEND_BWD: p.send_bwd = (msg){a->micro, v - 1}; break;
    case ZT_SCHED_OP_SEND_FWD_RECV_BWD:
        p.send_fwd = (msg){a->micro, v};
        p.recv_bwd = (msg){a->recv_micro, rv};
        break;
    case ZT_SCHED_OP_SEND_BWD_RECV_FWD:
        p.send_bwd = (msg){a->micro, v - 1};
        p.recv_fwd = (msg){a->recv_micro, rv - 1};
        break;
    default: break;
    }
    return p;
}

static int is_compute(zt_sched_op op) {
    return op == ZT_SCHED_OP_FWD || op == ZT_SCHED_OP_BWD || op == ZT_SCHED_OP_BWD_B ||
           op == ZT_SCHED_OP_BWD_W;
}

// What has happened to one (chunk, micro-batch) of one stage.
enum {
    GOT_INPUT = 1,   // its input arrived (or it is the first virtual stage)
    RAN_F = 2,
    GOT_DOUT = 4,    // its output gradient arrived (or it is the last virtual stage)
    RAN_B = 8,       // BWD or BWD_B
    RAN_W = 16,      // BWD_W
    RAN_WHOLE = 32,  // the combined BWD
    WANT_INPUT = 64, // nonblocking: its input's receive is posted
    WANT_DOUT = 128, // nonblocking: its output gradient's receive is posted
};

// One channel's messages in flight under nonblocking sends, or the receives a stage has
// posted on it (a FIFO of at most m·V; `into`: the chunk·m + micro a receive fills).
typedef struct {
    msg *q;
    int *into;
    int head, tail;
} fifo;

typedef struct {
    int pc;            // index of the current action; n_actions when finished
    int busy;          // computing the current action until `until`
    long until;
    msg_parts left;    // halves of the current comm action not matched yet
    int posted;        // `left` holds the current action's halves
    int held, w_pending;
    unsigned char *st; // (V, m) what has happened, GOT_INPUT ...
    fifo act_out, grad_in;   // nonblocking: activations sent to next, gradients from next
    fifo want_act, want_grad; // nonblocking: receives posted, not yet arrived
} sim_stage;

typedef struct {
    const zt_schedule *lists;
    int p, V, m, ring;
    const zt_sched_costs *costs; // per stage, or per virtual stage (c * p + s) with per_chunk
    int per_chunk;
    zt_sim_transport transport;
    sim_stage *st;
    zt_sim_stage *per;
    zt_sim_event *events;
    int n_events;
} sim;

static int next_of(const sim *S, int i) { return S->ring ? (i + 1) % S->p : i + 1; }
static int prev_of(const sim *S, int i) { return S->ring ? (i + S->p - 1) % S->p : i - 1; }
static unsigned char *state(sim *S, int i, int chunk, int micro) {
    return &S->st[i].st[(size_t)chunk * S->m + micro];
}

// Matches a send half with a receive half on one channel. Returns 1 if they matched, 0 if
// either is absent, -1 (with the error set) on a mismatch.
static int match(msg *send, msg *recv, int from, int to, const char *what) {
    if (!has(*send) || !has(*recv)) return 0;
    if (send->micro != recv->micro || send->boundary != recv->boundary) {
        zt_errorf("schedule simulation: stage %d sends %s of micro-batch %d (virtual stage "
                  "boundary %d) while stage %d receives micro-batch %d (boundary %d)",
                  from, what, send->micro, send->boundary, to, recv->micro, recv->boundary);
        return -1;
    }
    *send = *recv = no_msg;
    return 1;
}

static zt_status deadlock_error(const sim *S, long t) {
    char buf[1024];
    size_t n = 0;
    for (int i = 0; i < S->p && n < sizeof buf; i++) {
        if (S->st[i].pc >= S->lists[i].n_actions) continue;
        const zt_sched_action *a = &S->lists[i].actions[S->st[i].pc];
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

static zt_status missing(int i, int pc, const zt_sched_action *a, const char *what) {
    return zt_errorf("schedule simulation: stage %d action %d %s(micro-batch %d, chunk %d) %s",
                     i, pc, zt_sched_op_name(a->op), a->micro, a->chunk, what);
}

// missing(), as check_inputs' -1.
static int fail(int i, int pc, const zt_sched_action *a, const char *what) {
    missing(i, pc, a, what);
    return -1;
}

// Whether action a of stage i may start now (its inputs exist): 0 yes, 1 not yet (a posted
// nonblocking receive will bring what is missing), -1 (the error set) never (the list is
// wrong: inputs are produced in list order, so what is missing now, and not on its way, is
// missing for good) or it repeats.
static int check_inputs(sim *S, int i, const zt_sched_action *a) {
    const zt_schedule *L = &S->lists[i];
    int pc = S->st[i].pc;
    if (a->micro < 0 || a->micro >= S->m || a->chunk < 0 || a->chunk >= S->V)
        return fail(i, pc, a, "is out of range");
    unsigned char x = *state(S, i, a->chunk, a->micro);
    int last_v = virt(L, a->chunk) == S->p * S->V - 1;
    switch (a->op) {
    case ZT_SCHED_OP_FWD:
        if (x & RAN_F) return fail(i, pc, a, "runs twice");
        if (!(x & GOT_INPUT) && (x & WANT_INPUT)) return 1;
        if (!(x & GOT_INPUT)) return fail(i, pc, a, "runs before its input arrived");
        break;
    case ZT_SCHED_OP_BWD:
    case ZT_SCHED_OP_BWD_B:
        if (x & RAN_B) return fail(i, pc, a, "runs twice");
        if (!(x & RAN_F)) return fail(i, pc, a, "runs before its forward");
        if (!last_v && !(x & GOT_DOUT) && (x & WANT_DOUT)) return 1;
        if (!last_v && !(x & GOT_DOUT))
            return fail(i, pc, a, "runs before its output gradient arrived");
        break;
    case ZT_SCHED_OP_BWD_W:
        if (x & RAN_W) return fail(i, pc, a, "runs twice");
        if (!(x & RAN_B) || (x & RAN_WHOLE)) return fail(i, pc, a, "runs without its BWD_B");
        break;
    default: break;
    }
    return 0;
}

// A compute action starts at t (its inputs checked) and is recorded.
// Returns 1 started, 0 waiting for a nonblocking receive, -1 on an error.
static int start_compute(sim *S, int i, long t) {
    sim_stage *u = &S->st[i];
    const zt_sched_action *a = &S->lists[i].actions[u->pc];
    int r = check_inputs(S, i, a);
    if (r != 0) return r == 1 ? 0 : -1;
    const zt_sched_costs *c = &S->costs[S->per_chunk ? a->chunk * S->p + i : i];
    long cost = a->op == ZT_SCHED_OP_FWD     ? c->f
                : a->op == ZT_SCHED_OP_BWD_B ? c->b
                : a->op == ZT_SCHED_OP_BWD_W ? c->w
                                             : c->b + c->w;
    u->busy = 1;
    u->until = t + cost;
    if (a->op == ZT_SCHED_OP_FWD && ++u->held > S->per[i].peak_held) S->per[i].peak_held = u->held;
    S->per[i].busy += cost;
    if (S->events) S->events[S->n_events] = (zt_sim_event){i, u->pc, t, u->until};
    S->n_events++;
    return 1;
}

// A compute action ends: what it made exists.
static void end_compute(sim *S, int i) {
    sim_stage *u = &S->st[i];
    const zt_sched_action *a = &S->lists[i].actions[u->pc];
    unsigned char *x = state(S, i, a->chunk, a->micro);
    int last_v = virt(&S->lists[i], a->chunk) == S->p * S->V - 1;
    if (a->op == ZT_SCHED_OP_FWD) *x |= RAN_F | (last_v ? GOT_DOUT : 0);
    if (a->op == ZT_SCHED_OP_BWD) *x |= RAN_B | RAN_WHOLE;
    if (a->op == ZT_SCHED_OP_BWD_B) *x |= RAN_B;
    if (a->op == ZT_SCHED_OP_BWD_W) *x |= RAN_W;
    if (a->op == ZT_SCHED_OP_BWD || a->op == ZT_SCHED_OP_BWD_W) u->held--;
    if (a->op == ZT_SCHED_OP_BWD_B && ++u->w_pending > S->per[i].peak_w_pending)
        S->per[i].peak_w_pending = u->w_pending;
    if (a->op == ZT_SCHED_OP_BWD_W) u->w_pending--;
    u->busy = 0;
    u->pc++;
}

// A send's message must have been made: the output after its FWD, the input gradient after
// its BWD/BWD_B.
static zt_status check_send(sim *S, int i, const zt_sched_action *a, const msg_parts *h) {
    int pc = S->st[i].pc;
    if (a->micro < 0 || a->micro >= S->m || a->chunk < 0 || a->chunk >= S->V)
        return missing(i, pc, a, "is out of range");
    unsigned char x = *state(S, i, a->chunk, a->micro);
    if (has(h->send_fwd) && !(x & RAN_F)) return missing(i, pc, a, "sends before its forward");
    if (has(h->send_bwd) && !(x & RAN_B)) return missing(i, pc, a, "sends before its backward");
    return ZT_OK;
}

// Which (chunk, micro-batch) a receive half of action a fills.
static int recv_target(const zt_sched_action *a) {
    int combined = a->op == ZT_SCHED_OP_SEND_FWD_RECV_BWD || a->op == ZT_SCHED_OP_SEND_BWD_RECV_FWD;
    return combined ? a->recv_chunk * 0x10000 + a->recv_micro : a->chunk * 0x10000 + a->micro;
}

// A receive half matched: the input or output gradient of (recv chunk, micro) exists.
static void received(sim *S, int i, int target, int fwd) {
    *state(S, i, target / 0x10000, target % 0x10000) |= fwd ? GOT_INPUT : GOT_DOUT;
}

static void fifo_push(fifo *f, msg x, int into) {
    f->q[f->tail] = x;
    f->into[f->tail++] = into;
}

// Posts the current comm action of stage i; ZT_ERR on a half with no peer or a send of what
// does not exist yet. Nonblocking: the sends go into their channels and the receives are
// noted as posted; the action is then complete.
static zt_status post(sim *S, int i) {
    sim_stage *u = &S->st[i];
    const zt_sched_action *a = &S->lists[i].actions[u->pc];
    u->left = parts_of(&S->lists[i], a);
    u->posted = 1;
    int to_prev = has(u->left.recv_fwd) || has(u->left.send_bwd);
    int to_next = has(u->left.send_fwd) || has(u->left.recv_bwd);
    if ((to_prev && prev_of(S, i) < 0) || (to_next && next_of(S, i) >= S->p))
        return zt_errorf("schedule simulation: stage %d of %d has %s, which has no peer", i,
                         S->p, zt_sched_op_name(a->op));
    if (has(u->left.recv_fwd) && u->left.recv_fwd.boundary < 0)
        return missing(i, u->pc, a, "receives the input of the first virtual stage");
    ZT_TRY(check_send(S, i, a, &u->left));
    if (S->transport != ZT_SIM_NONBLOCKING) return ZT_OK;
    if (has(u->left.send_fwd)) fifo_push(&u->act_out, u->left.send_fwd, 0);
    if (has(u->left.send_bwd)) fifo_push(&S->st[prev_of(S, i)].grad_in, u->left.send_bwd, 0);
    int into = recv_target(a);
    if (has(u->left.recv_fwd)) {
        fifo_push(&u->want_act, u->left.recv_fwd, into);
        *state(S, i, into / 0x10000, into % 0x10000) |= WANT_INPUT;
    }
    if (has(u->left.recv_bwd)) {
        fifo_push(&u->want_grad, u->left.recv_bwd, into);
        *state(S, i, into / 0x10000, into % 0x10000) |= WANT_DOUT;
    }
    u->left = (msg_parts){no_msg, no_msg, no_msg, no_msg};
    return ZT_OK;
}

// Nonblocking: delivers what has arrived for stage i's posted receives, in order. Returns 1
// on progress, -1 on a mismatch.
static int deliver(sim *S, int i) {
    sim_stage *u = &S->st[i];
    int progress = 0;
    for (int fwd = 1; fwd >= 0; fwd--) {
        fifo *want = fwd ? &u->want_act : &u->want_grad;
        fifo *in = fwd ? &S->st[prev_of(S, i)].act_out : &u->grad_in;
        int from = fwd ? prev_of(S, i) : next_of(S, i);
        while (want->head < want->tail && in->head < in->tail) {
            if (match(&in->q[in->head], &want->q[want->head], from, i,
                      fwd ? "activations" : "the gradient") < 0)
                return -1;
            received(S, i, want->into[want->head], fwd);
            in->head++;
            want->head++;
            progress = 1;
        }
    }
    return progress;
}

// Rendezvous: matches stage i's posted halves with its neighbours'. Returns 1 on progress.
static int match_rendezvous(sim *S, int i) {
    sim_stage *u = &S->st[i];
    int progress = 0;
    for (int d = -1; d <= 1; d += 2) {
        int j = d == 1 ? next_of(S, i) : prev_of(S, i);
        if (j < 0 || j >= S->p || !S->st[j].posted) continue;
        sim_stage *v = &S->st[j];
        const zt_sched_action *a = &S->lists[i].actions[u->pc];
        const zt_sched_action *b = &S->lists[j].actions[v->pc];
        int r1, r2;
        if (d == 1) { // i -> j activations, j -> i gradients
            r1 = match(&u->left.send_fwd, &v->left.recv_fwd, i, j, "activations");
            if (r1 > 0) received(S, j, recv_target(b), 1);
            r2 = r1 < 0 ? 0 : match(&v->left.send_bwd, &u->left.recv_bwd, j, i, "the gradient");
            if (r2 > 0) received(S, i, recv_target(a), 0);
        } else {
            r1 = match(&v->left.send_fwd, &u->left.recv_fwd, j, i, "activations");
            if (r1 > 0) received(S, i, recv_target(a), 1);
            r2 = r1 < 0 ? 0 : match(&u->left.send_bwd, &v->left.recv_bwd, i, j, "the gradient");
            if (r2 > 0) received(S, j, recv_target(b), 0);
        }
        if (r1 < 0 || r2 < 0) return -1;
        if (r1 || r2) progress = 1;
    }
    return progress;
}

// Runs what stage i can do at time t. Returns 1 on progress, 0 none, -1 on an error.
static int step_stage(sim *S, int i, long t) {
    sim_stage *u = &S->st[i];
    int progress = 0;
    if (S->transport == ZT_SIM_NONBLOCKING) progress = deliver(S, i);
    if (progress < 0) return -1;
    if (u->busy || u->pc >= S->lists[i].n_actions) return progress;
    const zt_sched_action *a = &S->lists[i].actions[u->pc];
    if (is_compute(a->op)) {
        int r = start_compute(S, i, t);
        return r < 0 ? -1 : (progress | r);
    }
    if (!u->posted) {
        if (post(S, i) != ZT_OK) return -1;
        progress = 1;
    }
    if (S->transport == ZT_SIM_RENDEZVOUS) {
        int r = match_rendezvous(S, i);
        if (r < 0) return -1;
        progress |= r;
    }
    msg_parts l = u->left;
    if (!has(l.send_fwd) && !has(l.recv_fwd) && !has(l.send_bwd) && !has(l.recv_bwd)) {
        u->posted = 0;
        u->pc++;
        progress = 1;
    }
    return progress;
}

// At the end every micro-batch's forward and whole backward ran on every chunk.
static zt_status check_complete(sim *S) {
    for (int i = 0; i < S->p; i++)
        for (int c = 0; c < S->V; c++)
            for (int k = 0; k < S->m; k++) {
                unsigned char x = *state(S, i, c, k);
                if (!(x & RAN_F) || !(x & RAN_B) || !((x & RAN_WHOLE) || (x & RAN_W)))
                    return zt_errorf("schedule simulation: stage %d chunk %d micro-batch %d "
                                     "is missing its %s",
                                     i, c, k, !(x & RAN_F) ? "forward" : "backward");
            }
    return ZT_OK;
}

static zt_status run(sim *S, long *ticks_out) {
    long t = 0;
    for (;;) {
        int progress = 1; // everything that can happen at time t, until nothing changes
        while (progress) {
            progress = 0;
            for (int i = 0; i < S->p; i++) {
                int r = step_stage(S, i, t);
                if (r < 0) return ZT_ERR;
                progress |= r;
            }
        }
        int all_done = 1, any_busy = 0;
        long next = 0;
        for (int i = 0; i < S->p; i++) {
            sim_stage *u = &S->st[i];
            if (u->pc < S->lists[i].n_actions) all_done = 0;
            if (u->busy && (!any_busy || u->until < next)) next = u->until;
            any_busy |= u->busy;
        }
        if (all_done) {
            ZT_TRY(check_complete(S));
            *ticks_out = t;
            return ZT_OK;
        }
        if (!any_busy) return deadlock_error(S, t);
        t = next;
        for (int i = 0; i < S->p; i++)
            if (S->st[i].busy && S->st[i].until == t) end_compute(S, i);
    }
}

// zt_schedule_simulate_lists, with costs per virtual stage where per_chunk.
static zt_status simulate_lists(const zt_schedule *stages, int n_stages,
                                const zt_sched_costs *costs, int per_chunk,
                                zt_sim_transport transport, long *ticks_out,
                                zt_sim_stage *per_stage, zt_sim_event *events, int *n_events) {
    ZT_ASSERTF(n_stages >= 1, "simulate: %d stages", n_stages);
    int V = stages[0].n_chunks, m = stages[0].n_micro;
    for (int i = 0; i < n_stages * (per_chunk ? V : 1); i++)
        ZT_ASSERTF(costs[i].f >= 1 && costs[i].b >= 1 && costs[i].w >= 1,
                   "simulate: stage %d costs %d/%d/%d", i, costs[i].f, costs[i].b, costs[i].w);
    for (int i = 0; i < n_stages; i++)
        ZT_ASSERTF(stages[i].stage == i && stages[i].n_stages == n_stages &&
                       stages[i].n_chunks == V && stages[i].n_micro == m && V >= 1,
                   "simulate: list %d is stage %d of %d", i, stages[i].stage,
                   stages[i].n_stages);
    sim S = {.lists = stages, .p = n_stages, .V = V, .m = m, .ring = V > 1, .costs = costs,
             .per_chunk = per_chunk, .transport = transport, .events = events};
    S.st = calloc((size_t)n_stages, sizeof *S.st);
    S.per = calloc((size_t)n_stages, sizeof *S.per);
    ZT_ASSERT(S.st && S.per);
    size_t mv = (size_t)m * (size_t)V;
    for (int i = 0; i < n_stages; i++) {
        S.st[i].st = calloc(mv, 1);
        fifo *f[4] = {&S.st[i].act_out, &S.st[i].grad_in, &S.st[i].want_act,
                      &S.st[i].want_grad};
        for (int q = 0; q < 4; q++) {
            f[q]->q = malloc(mv * sizeof(msg));
            f[q]->into = malloc(mv * sizeof(int));
            ZT_ASSERT(f[q]->q && f[q]->into);
        }
        ZT_ASSERT(S.st[i].st);
        if (i == 0)
            for (int k = 0; k < m; k++) *state(&S, 0, 0, k) |= GOT_INPUT;
    }
    long ticks = 0;
    zt_status rc = run(&S, &ticks);
    if (rc == ZT_OK) {
        *ticks_out = ticks;
        for (int i = 0; i < n_stages; i++) S.per[i].idle = ticks - S.per[i].busy;
        if (per_stage) memcpy(per_stage, S.per, (size_t)n_stages * sizeof *S.per);
        if (n_events) *n_events = S.n_events;
    }
    for (int i = 0; i < n_stages; i++) {
        free(S.st[i].st);
        fifo *f[4] = {&S.st[i].act_out, &S.st[i].grad_in, &S.st[i].want_act,
                      &S.st[i].want_grad};
        for (int q = 0; q < 4; q++) {
            free(f[q]->q);
            free(f[q]->into);
        }
    }
    free(S.st);
    free(S.per);
    return rc;
}

zt_status zt_schedule_simulate_lists(const zt_schedule *stages, int n_stages,
                                     const zt_sched_costs *costs, zt_sim_transport transport,
                                     long *ticks_out, zt_sim_stage *per_stage,
                                     zt_sim_event *events, int *n_events) {
    return simulate_lists(stages, n_stages, costs, 0, transport, ticks_out, per_stage, events,
                          n_events);
}

// Builds the lists and simulates them with costs `each` (per stage, or per virtual stage).
static zt_status build_and_simulate(zt_schedule_kind kind, int n_stages, int n_micro,
                                    int n_chunks, const zt_sched_costs *each, int per_chunk,
                                    zt_sim_transport transport, long *ticks_out,
                                    zt_sim_stage *per_stage) {
    ZT_TRY(check_sizes(n_stages, n_micro));
    zt_schedule *s = calloc((size_t)n_stages, sizeof *s);
    ZT_ASSERT(s);
    zt_status rc = ZT_OK;
    for (int i = 0; i < n_stages && rc == ZT_OK; i++)
        rc = zt_schedule_build_chunks(&s[i], kind, n_stages, i, n_micro, n_chunks);
    if (rc == ZT_OK)
        rc = simulate_lists(s, n_stages, each, per_chunk, transport, ticks_out, per_stage, NULL,
                            NULL);
    for (int i = 0; i < n_stages; i++) zt_schedule_free(&s[i]);
    free(s);
    return rc;
}

zt_status zt_schedule_simulate(zt_schedule_kind kind, int n_stages, int n_micro, int n_chunks,
                               const zt_sched_costs *costs, int same_costs,
                               zt_sim_transport transport, long *ticks_out,
                               zt_sim_stage *per_stage) {
    ZT_TRY(check_sizes(n_stages, n_micro));
    zt_sched_costs *each = malloc((size_t)n_stages * sizeof *each);
    ZT_ASSERT(each);
    for (int i = 0; i < n_stages; i++) each[i] = costs[same_costs ? 0 : i];
    zt_status rc = build_and_simulate(kind, n_stages, n_micro, n_chunks, each, 0, transport,
                                      ticks_out, per_stage);
    free(each);
    return rc;
}

zt_status zt_schedule_simulate_virtual(zt_schedule_kind kind, int n_stages, int n_micro,
                                       int n_chunks, const zt_sched_costs *costs,
                                       zt_sim_transport transport, long *ticks_out,
                                       zt_sim_stage *per_stage) {
    return build_and_simulate(kind, n_stages, n_micro, n_chunks, costs, 1, transport, ticks_out,
                              per_stage);
}
