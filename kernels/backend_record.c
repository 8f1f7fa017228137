// The recording backend (backend_record.h), generated from the op list (backend_ops.h):
// each op adds its entry's flops, its traffic bound and one call to its phase (and, where the
// caller asks, to its own counts and its call's shape to the shape list), and runs nothing.
#include "backend_record.h"

#include <string.h>
#include <sys/mman.h>

#define ST(be) ((const zt_backend_record_state *)(be)->impl)

// The size arguments an extent is made of, by the names the op list gives them, and the
// call's shape (every argument).
typedef struct {
    double rows, width, n, bytes, B, T;
    int pointers;
    zt_op_shape shape;
} extent;

// A parameter's value when it is a size (int, size_t, or an enum: unsigned), else 0; its
// value in a shape (a pointer: whether it is given); and whether it is a pointer (a stream
// of the op's extent).
#define SIZE_OF(x) ((double)_Generic((x), int: (x), unsigned: (x), size_t: (x), default: 0))
#define SHAPE_OF(x)                                                                           \
    ((double)_Generic((x), int: (x), unsigned: (x), size_t: (x), float: (x), double: (x),   \
                      default: (x) != 0))
#define IS_PTR(x) _Generic((x), int: 0, unsigned: 0, size_t: 0, float: 0, double: 0, default: 1)

static void note(extent *e, const char *name, double v, int ptr, double shape_value) {
    e->pointers += ptr;
    zt_op_shape *s = &e->shape;
    ZT_ASSERTF(s->n_args < ZT_SHAPE_MAX_ARGS, "record backend: an op with more than %d "
               "parameters (raise ZT_SHAPE_MAX_ARGS)", ZT_SHAPE_MAX_ARGS);
    s->name[s->n_args] = name;
    s->value[s->n_args++] = shape_value;
    if (!strcmp(name, "N") || !strcmp(name, "n_q")) e->rows = v;
    else if (!strcmp(name, "n")) e->n = v;
    else if (!strcmp(name, "B")) e->B = v;
    else if (!strcmp(name, "T")) e->T = v;
    else if (!strcmp(name, "bytes")) e->bytes = v;
    else if (!strcmp(name, "C") || !strcmp(name, "OC") || !strcmp(name, "ld") ||
             !strcmp(name, "n_pos"))
        e->width = v > e->width ? v : e->width;
}

static double traffic(const extent *e) {
    double rows = e->rows > 0 ? e->rows : e->B * e->T > 0 ? e->B * e->T : e->n;
    double elems = e->bytes > 0 ? e->bytes / 4.0 : rows * (e->width > 0 ? e->width : 1.0);
    // an op over rows of (n, ld) names its rows n
    if (e->rows == 0 && e->n > 0 && e->width > 0) elems = e->n * e->width;
    return elems * 4.0 * (e->pointers > 0 ? e->pointers : 1);
}

// The call's shape counted among the distinct ones (same op, same values).
static void keep_shape(zt_op_shapes *all, const zt_op_shape *s) {
    for (int i = 0; i < all->n; i++) {
        zt_op_shape *o = &all->s[i];
        if (o->op == s->op && o->n_args == s->n_args &&
            !memcmp(o->value, s->value, sizeof(double) * (size_t)s->n_args)) {
            o->calls++;
            return;
        }
    }
    ZT_ASSERTF(all->n < ZT_OP_SHAPES_MAX, "record backend: more than %d distinct op shapes",
               ZT_OP_SHAPES_MAX);
    all->s[all->n] = *s;
    all->s[all->n++].calls = 1;
}

static void add(const zt_backend *be, int op, int phase, double flops, extent *e) {
    if (phase == ZT_OP_UNTIMED) return;
    const zt_backend_record_state *st = ST(be);
    zt_record *r = st->acc;
    double bytes = traffic(e);
    r->flops[phase] += flops;
    r->bytes[phase] += bytes;
    r->calls[phase]++;
    if (st->by_op) {
        st->by_op->flops[op] += flops;
        st->by_op->bytes[op] += bytes;
        st->by_op->calls[op]++;
    }
    e->shape.op = op;
    e->shape.flops = flops;
    e->shape.bytes = bytes;
    if (st->shapes) keep_shape(st->shapes, &e->shape);
}

#define REC_A(type, name) note(&e, #name, SIZE_OF(name), IS_PTR(name), SHAPE_OF(name)); REC_B
#define REC_B(type, name) note(&e, #name, SIZE_OF(name), IS_PTR(name), SHAPE_OF(name)); REC_A
#define REC_A_END
#define REC_B_END
#define REC_LAST_END(...) REC_LAST_END_(__VA_ARGS__)
#define REC_LAST_END_(x) x##_END

#define GIVE_void
#define GIVE_int return 0;
#define GIVE_double return 0.0;
#define GIVE_ptr return NULL;

// r_<op>(be, params...): notes the sizes, adds the entry's costs.
#define ZT_OP(ret, name, group, phase, flops, params)                          \
    static ZT_OP_RET(ret) r_##name(const zt_backend *be ZT_OP_PARAMS(params)) { \
        extent e = {0};                                                         \
        REC_LAST_END(REC_A params)                                              \
        add(be, ZT_OPID_##name, phase, flops, &e);                              \
        GIVE_##ret                                                              \
    }
#include "backend_ops.h"
#undef ZT_OP

#define ST_MUT(be) ((zt_backend_record_state *)(be)->impl)

// Fresh address space, never backed: a host touch faults.
static void *record_alloc(const zt_backend *be, zt_mem_category cat, size_t bytes) {
    if (!bytes) return NULL;
    zt_backend_record_state *st = ST_MUT(be);
    ZT_ASSERTF(st->n < ZT_RECORD_MAX_BUFFERS, "record backend: more than %d buffers",
               ZT_RECORD_MAX_BUFFERS);
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ZT_ASSERTF(p != MAP_FAILED, "record backend: cannot reserve %zu bytes of address space",
               bytes);
    st->ptr[st->n] = p;
    st->len[st->n++] = bytes;
    return p;
}

static void record_free(const zt_backend *be, void *p) {
    zt_backend_record_state *st = ST_MUT(be);
    for (int i = 0; p && i < st->n; i++)
        if (st->ptr[i] == p) {
            munmap(p, st->len[i]);
            st->ptr[i] = st->ptr[--st->n];
            st->len[i] = st->len[st->n];
            return;
        }
}

static void *record_map(const zt_backend *be, void *dev, size_t bytes, int read) {
    zt_fatal(__FILE__, __LINE__, "record backend: map of recorded memory (nothing is computed)");
    return NULL;
}

static const zt_backend_i record_ops = {
    .name = "record",
    .library = "none",
#define ZT_OP(ret, name, ...) .name = r_##name,
#include "backend_ops.h"
#undef ZT_OP
};

void zt_backend_record_init(zt_backend *out, zt_backend_record_state *st,
                            const zt_backend_caps *caps, zt_record *acc) {
    memset(st, 0, sizeof *st);
    st->acc = acc;
    st->ops = record_ops;
    st->ops.alloc = record_alloc;
    st->ops.free = record_free;
    st->ops.map = record_map;
    out->ops = &st->ops;
    out->caps = caps;
    out->threads = 1;
    out->impl = st;
}

void zt_backend_record_free(zt_backend_record_state *st) {
    while (st->n > 0) {
        st->n--;
        munmap(st->ptr[st->n], st->len[st->n]);
    }
}
