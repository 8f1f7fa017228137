// The timing decorator (backend_profile.h), generated from the op list (backend_ops.h): each
// op's wrapper calls the inner backend's op of the same name; a timed one (an entry with a
// phase) marks the time before, syncs the inner backend after (a GPU op is asynchronous) and
// adds the time and the entry's flops to the phase (and a call and the flops to the op's own
// counts and time where the caller asks: tests/test_plan.c compares the counts with the
// recorder's, `--profile` prints the ops that took the most time).
#include "backend_profile.h"

#define ST(be) ((const zt_backend_profile_state *)(be)->impl)

static void timer_start(zt_profile_mark *mark, int phase) {
    if (phase != ZT_OP_UNTIMED) zt_profile_begin(mark);
}
static void timer_stop(const zt_backend *be, const zt_profile_mark *mark, int phase,
                       double flops, int op) {
    if (phase == ZT_OP_UNTIMED) return;
    ST(be)->inner->ops->sync(ST(be)->inner);
    double wall = zt_profile_end(ST(be)->acc, mark, (zt_phase)phase, flops);
    zt_op_record *by_op = ST(be)->by_op;
    if (by_op) {
        by_op->calls[op]++;
        by_op->flops[op] += flops;
        by_op->wall[op] += wall;
    }
}

// What a wrapper keeps of the inner op's result, and returns, by the entry's return code.
#define KEEP_void
#define KEEP_int int result =
#define KEEP_double double result =
#define KEEP_ptr void *result =
#define GIVE_void
#define GIVE_int return result;
#define GIVE_double return result;
#define GIVE_ptr return result;

// p_<op>(be, params...): the inner op, timed under the entry's phase.
#define ZT_OP(ret, name, group, phase, flops, params)                             \
    static ZT_OP_RET(ret) p_##name(const zt_backend *be ZT_OP_PARAMS(params)) {   \
        const zt_backend *inner = ST(be)->inner;                                  \
        zt_profile_mark mark = {0};                                               \
        timer_start(&mark, phase);                                                \
        KEEP_##ret inner->ops->name(inner ZT_OP_ARGS(params));                    \
        timer_stop(be, &mark, phase, flops, ZT_OPID_##name);                      \
        GIVE_##ret                                                                \
    }
#include "backend_ops.h"
#undef ZT_OP

static const zt_backend_i profile_ops = {
    .name = NULL,    // the inner backend's (zt_backend_profile_init)
    .library = NULL, // the same
#define ZT_OP(ret, name, ...) .name = p_##name,
#include "backend_ops.h"
#undef ZT_OP
};

// The bf16 group is NULL on a backend without it (caps.bf16 0): so it stays wrapped.
static void drop_bf16_ops(zt_backend_i *o) {
#define ZT_OP(ret, name, group, ...) \
    if (group == ZT_OPS_BF16) o->name = NULL;
#include "backend_ops.h"
#undef ZT_OP
}

void zt_backend_profile_init(zt_backend *out, zt_backend_profile_state *st,
                             const zt_backend *inner, zt_profile *acc) {
    st->inner = inner;
    st->acc = acc;
    st->by_op = NULL;
    // callers that ask for the backend's name, capabilities or threads (the banner, the
    // attention scratch) see the inner backend's
    st->ops = profile_ops;
    st->ops.name = inner->ops->name;
    st->ops.library = inner->ops->library;
    if (!inner->caps->bf16) drop_bf16_ops(&st->ops);
    out->ops = &st->ops;
    out->caps = inner->caps;
    out->threads = inner->threads;
    out->impl = st;
}

// The ops by time, most first, down to `top` of them or the last that took any.
void zt_profile_print_ops(FILE *f, const zt_op_record *r, int steps, double step_s, int top) {
    if (steps < 1 || step_s <= 0) return;
    int order[ZT_OPID_COUNT], n = 0;
    for (int i = 0; i < ZT_OPID_COUNT; i++)
        if (r->wall[i] > 0) order[n++] = i;
    for (int i = 1; i < n; i++) // insertion sort by time, most first: n is ~100
        for (int j = i; j > 0 && r->wall[order[j]] > r->wall[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1], order[j - 1] = x;
        }
    fprintf(f, "  %-34s %9s %7s %9s %9s\n", "op (the most time first)", "ms/step", "share",
            "calls", "us/call");
    for (int k = 0; k < n && k < top; k++) {
        int i = order[k];
        double ms = 1e3 * r->wall[i] / steps;
        fprintf(f, "  %-34s %9.2f %6.1f%% %9ld %9.1f\n", zt_op_name(i), ms,
                100.0 * ms / (1e3 * step_s), r->calls[i] / steps,
                1e6 * r->wall[i] / (double)r->calls[i]);
    }
}
