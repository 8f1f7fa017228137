// The bucketed, overlapped dp gradient reduction (grad_reduce.h).
#include "grad_reduce.h"

#include <stdlib.h>
#include <string.h>

void zt_grad_reduce_init(zt_grad_reduce *o, const zt_comm *dp, void *grads, zt_dtype dt,
                         size_t numel, int zero, size_t bucket, int max_ready) {
    memset(o, 0, sizeof *o);
    ZT_ASSERT(dp && dp->size >= 1 && max_ready >= 0 && bucket > 0);
    ZT_ASSERT(!zero || numel % (size_t)dp->size == 0);
    o->dp = dp;
    o->grads = grads;
    o->dt = dt;
    o->numel = numel;
    o->shard = zero ? numel / (size_t)dp->size : 0;
    o->bucket = bucket;
    // each ready() and the finish start one bucket, cut in at most dp pieces at shard
    // boundaries, of which there are dp - 1 in the whole buffer
    o->cap = max_ready + 1 + dp->size;
    o->req = calloc((size_t)o->cap, sizeof *o->req);
    ZT_ASSERT(o->req);
}

void zt_grad_reduce_free(zt_grad_reduce *o) {
    free(o->req);
    memset(o, 0, sizeof *o);
}

void zt_grad_reduce_begin(zt_grad_reduce *o) {
    for (int i = 0; i < o->n; i++) ZT_ASSERTF(!o->req[i].c, "a bucket of the last step in flight");
    o->n = 0;
    o->issued_lo = o->numel;
    o->comm_s = 0.0;
}

static zt_comm_req *next_req(zt_grad_reduce *o) {
    ZT_ASSERTF(o->n < o->cap, "more gradient buckets than planned (%d)", o->cap);
    zt_comm_req *r = &o->req[o->n++];
    memset(r, 0, sizeof *r);
    return r;
}

// Starts [lo, hi): one all-reduce, or one reduce per shard it touches, to that shard's owner.
static void start(zt_grad_reduce *o, size_t lo, size_t hi) {
    size_t es = zt_dtype_size(o->dt);
    if (!o->shard) {
        char *p = o->grads + lo * es;
        zt_comm_iall_reduce(o->dp, p, p, hi - lo, o->dt, ZT_REDUCE_SUM, NULL, next_req(o));
        return;
    }
    for (size_t a = lo; a < hi;) {
        int owner = (int)(a / o->shard);
        size_t b = (size_t)(owner + 1) * o->shard;
        if (b > hi) b = hi;
        char *p = o->grads + a * es;
        zt_comm_ireduce(o->dp, p, p, b - a, o->dt, ZT_REDUCE_SUM, owner, NULL, next_req(o));
        a = b;
    }
}

static void poll_all(zt_grad_reduce *o) {
    for (int i = 0; i < o->n; i++) zt_comm_test(&o->req[i]);
}

void zt_grad_reduce_ready(zt_grad_reduce *o, size_t from) {
    double t0 = zt_mono_s();
    ZT_ASSERTF(from <= o->issued_lo, "gradient announced final out of order (%zu > %zu)", from,
               o->issued_lo);
    if (o->issued_lo - from >= o->bucket) {
        start(o, from, o->issued_lo);
        o->issued_lo = from;
    }
    poll_all(o);
    o->comm_s += zt_mono_s() - t0;
}

void zt_grad_reduce_finish(zt_grad_reduce *o) {
    double t0 = zt_mono_s();
    if (o->issued_lo > 0) start(o, 0, o->issued_lo);
    o->issued_lo = 0;
    for (int i = 0; i < o->n; i++) zt_comm_wait(&o->req[i]);
    o->comm_s += zt_mono_s() - t0;
}
