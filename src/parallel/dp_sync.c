// The data-parallel synchronizer (dp_sync.h): ZeRO's shards, the gradient's reduction and the
// parameters' gather, blocking or overlapped.
#include "dp_sync.h"

#include <string.h>

void zt_dp_shard(size_t numel, int dp, int dp_rank, int zero, size_t *lo, size_t *hi) {
    size_t n = (size_t)dp;
    ZT_ASSERT(dp >= 1 && numel % (n * ZT_ALIGN_ELEMS) == 0 && dp_rank >= 0 && dp_rank < dp);
    ZT_ASSERTF(zero == 0 || zero == 1, "zero %d (0 or 1)", zero);
    *lo = zero ? (size_t)dp_rank * (numel / n) : 0;
    *hi = zero ? *lo + numel / n : numel;
}

// --bucket-mib's bytes in elements of dt; 0 gives 1: every announcement (gradient) or tensor
// (parameters) a bucket of its own.
static size_t bucket_elems(size_t bytes, zt_dtype dt) {
    return bytes ? bytes / zt_dtype_size(dt) : 1;
}

void zt_dp_sync_init(zt_dp_sync *s, const zt_dp_sync_options *o, const zt_comm *dp,
                     const zt_comm *dp_host, const zt_comm *embed, size_t tied, void *grads,
                     void *params, zt_dtype dt, const zt_layout *lay) {
    ZT_ASSERT(dp && dp_host && embed && dp->size == dp_host->size && tied <= lay->numel);
    *s = (zt_dp_sync){.dp = dp, .dp_host = dp_host, .embed = embed, .dt = dt,
                      .numel = lay->numel, .tied = tied, .grads = grads, .params = params,
                      .zero = o->zero, .overlap = o->overlap};
    zt_dp_shard(s->numel, dp->size, dp->rank, s->zero, &s->shard_lo, &s->shard_hi);
    size_t bucket = bucket_elems(o->bucket_bytes, dt);
    if (s->overlap)
        zt_grad_reduce_init(&s->gr, dp, grads, dt, s->numel, s->zero, bucket, o->max_ready);
    if (s->overlap && s->zero) zt_param_gather_init(&s->pg, dp, params, dt, lay, bucket);
}

void zt_dp_sync_free(zt_dp_sync *s) {
    zt_grad_reduce_free(&s->gr);
    zt_param_gather_free(&s->pg);
    memset(s, 0, sizeof *s);
}

// The overlapped gather: started by zt_dp_sync_gather, waited for by the next first forward.
static int gathers_overlapped(const zt_dp_sync *s) { return s->overlap && s->zero; }

void zt_dp_sync_grads_final(void *ctx, size_t from) {
    zt_dp_sync *s = ctx;
    if (s->final_backward) zt_grad_reduce_ready(&s->gr, from);
}

void zt_dp_sync_params_needed(void *ctx, size_t lo, size_t hi) {
    zt_dp_sync *s = ctx;
    if (s->first_forward) zt_param_gather_need(&s->pg, lo, hi);
}

void zt_dp_sync_next_forward(zt_dp_sync *s, int first) {
    s->final_backward = 0;
    s->first_forward = first && gathers_overlapped(s);
}

void zt_dp_sync_next_backward(zt_dp_sync *s, int last) {
    s->first_forward = 0;
    s->final_backward = last && s->overlap;
    if (s->final_backward) zt_grad_reduce_begin(&s->gr); // a new step's buckets
}

double zt_dp_sync_param_wait_s(const zt_dp_sync *s) { return s->pg.comm_s; }

// The dp sum, blocking: the loss scale already divides by the global tokens, so a sum.
static void reduce_blocking(zt_dp_sync *s) {
    size_t es = zt_dtype_size(s->dt);
    if (s->zero)
        zt_comm_reduce_scatter(s->dp, s->grads, s->grads + s->shard_lo * es, s->numel, s->dt,
                               ZT_REDUCE_SUM, NULL);
    else zt_comm_all_reduce(s->dp, s->grads, s->grads, s->numel, s->dt, ZT_REDUCE_SUM, NULL);
}

void zt_dp_sync_reduce(zt_dp_sync *s) {
    s->final_backward = s->first_forward = 0;
    // the pieces no forward asked for (the buffer's padding), before the update writes
    if (gathers_overlapped(s)) zt_param_gather_finish(&s->pg);
    // the tied embedding: the first and last stage's gradient copies summed over the whole
    // tensor before the dp reduction, so both stages then shard and update identical values
    // (docs/design.md, "Pipeline"). Overlapped, no bucket has touched it yet: the backward
    // never announces the front of the buffer, which zt_grad_reduce_finish starts after this.
    zt_comm_all_reduce(s->embed, s->grads, s->grads, s->tied, s->dt, ZT_REDUCE_SUM, NULL);
    double t0 = zt_mono_s();
    if (s->overlap) zt_grad_reduce_finish(&s->gr);
    else reduce_blocking(s);
    s->st.grad_comm_s = s->overlap ? s->gr.comm_s : zt_mono_s() - t0;
}

int zt_dp_sync_norm_range(const zt_dp_sync *s, size_t *lo, size_t *hi) {
    *lo = s->shard_lo;
    *hi = s->shard_hi;
    return s->zero || s->dp->rank == 0; // --zero 0: every dp rank holds the same whole sum
}

void zt_dp_sync_gather(zt_dp_sync *s) {
    double t0 = zt_mono_s();
    size_t es = zt_dtype_size(s->dt);
    if (gathers_overlapped(s)) zt_param_gather_start(&s->pg); // waited for in the next forward
    else if (s->zero)
        zt_comm_all_gather(s->dp, s->params + s->shard_lo * es, s->params, s->numel, s->dt,
                           NULL);
    s->st.param_overlapped = 0;
    s->st.param_comm_s = gathers_overlapped(s)
                             ? zt_param_gather_take(&s->pg, &s->st.param_overlapped)
                             : zt_mono_s() - t0;
}

void zt_dp_sync_settle(zt_dp_sync *s) {
    if (gathers_overlapped(s)) zt_param_gather_finish(&s->pg);
}

zt_dp_sync_stats zt_dp_sync_take_stats(zt_dp_sync *s) {
    zt_dp_sync_stats st = s->st;
    memset(&s->st, 0, sizeof s->st);
    return st;
}

void zt_dp_sync_gather_host(const zt_dp_sync *s, float *buf) {
    if (s->zero)
        zt_comm_all_gather(s->dp_host, buf + s->shard_lo, buf, s->numel, ZT_F32, NULL);
}

const char *zt_dp_sync_describe(const zt_dp_sync *s) { return s->zero ? "zero 1" : "zero 0"; }
