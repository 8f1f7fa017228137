// The bucketed, overlapped ZeRO-1 parameter all-gather (param_gather.h).
#include "param_gather.h"

#include <stdlib.h>
#include <string.h>

// Appends the piece starting at `at` (a bucket or shard boundary), once.
static void add_cut(zt_param_gather *o, size_t at, size_t shard) {
    if (o->n > 0 && o->lo[o->n - 1] == at) return;
    o->lo[o->n] = at;
    o->owner[o->n] = (int)(at / shard);
    o->n++;
}

void zt_param_gather_init(zt_param_gather *o, const zt_comm *dp, void *params, zt_dtype dt,
                          const zt_layout *lay, size_t bucket) {
    memset(o, 0, sizeof *o);
    size_t numel = lay->numel, shard = numel / (size_t)dp->size;
    ZT_ASSERT(bucket > 0 && numel > 0 && numel % (size_t)dp->size == 0);
    o->dp = dp;
    o->params = params;
    o->dt = dt;
    // a cut at each tensor at most, and at each of the dp - 1 inner shard boundaries
    int cap = lay->n + dp->size + 1;
    o->lo = calloc((size_t)cap + 1, sizeof *o->lo);
    o->owner = calloc((size_t)cap, sizeof *o->owner);
    o->req = calloc((size_t)cap, sizeof *o->req);
    ZT_ASSERT(o->lo && o->owner && o->req);
    size_t bucket_lo = 0, next_shard = shard;
    add_cut(o, 0, shard);
    for (int i = 0; i <= lay->n; i++) {
        size_t at = i < lay->n ? lay->t[i].offset : numel; // the next tensor's start, or the end
        ZT_ASSERTF(at >= bucket_lo, "layout offsets out of order at tensor %d", i);
        for (; next_shard < at; next_shard += shard) add_cut(o, next_shard, shard);
        if (i < lay->n && at - bucket_lo >= bucket) add_cut(o, bucket_lo = at, shard);
    }
    ZT_ASSERT(o->n <= cap);
    o->lo[o->n] = numel;
}

void zt_param_gather_free(zt_param_gather *o) {
    free(o->lo);
    free(o->owner);
    free(o->req);
    memset(o, 0, sizeof *o);
}

int zt_param_gather_pending(const zt_param_gather *o) {
    for (int i = 0; i < o->n; i++)
        if (o->req[i].c) return 1;
    return 0;
}

void zt_param_gather_start(zt_param_gather *o) {
    double t0 = zt_mono_s();
    ZT_ASSERTF(!zt_param_gather_pending(o), "a parameter gather of the last step in flight");
    size_t es = zt_dtype_size(o->dt);
    for (int i = 0; i < o->n; i++)
        zt_comm_ibroadcast(o->dp, o->params + o->lo[i] * es, o->lo[i + 1] - o->lo[i], o->dt,
                           o->owner[i], NULL, &o->req[i]);
    o->comm_s += zt_mono_s() - t0;
}

void zt_param_gather_need(zt_param_gather *o, size_t lo, size_t hi) {
    double t0 = zt_mono_s();
    for (int i = 0; i < o->n; i++) {
        if (!o->req[i].c) continue;
        if (o->lo[i] < hi && lo < o->lo[i + 1]) zt_comm_wait(&o->req[i]);
        else if (!zt_comm_test(&o->req[i])) continue;
        o->waited_in_use++;
    }
    o->comm_s += zt_mono_s() - t0;
}

void zt_param_gather_finish(zt_param_gather *o) {
    double t0 = zt_mono_s();
    for (int i = 0; i < o->n; i++) zt_comm_wait(&o->req[i]);
    o->comm_s += zt_mono_s() - t0;
}

double zt_param_gather_take(zt_param_gather *o, int *waited_in_use) {
    double s = o->comm_s;
    *waited_in_use = o->waited_in_use;
    o->comm_s = 0.0;
    o->waited_in_use = 0;
    return s;
}
