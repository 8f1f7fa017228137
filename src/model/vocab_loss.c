// Vocab-parallel cross entropy: three local passes around two all-reduces.
#include "vocab_loss.h"


int zt_vocab_slice_valid(int V, int Vp, int tp, int rank) {
    int Vl = Vp / tp, lo = rank * Vl, n = V - lo;
    return n < 0 ? 0 : n > Vl ? Vl : n;
}

// The three passes, by the logits' dtype.
static void stats(const zt_backend *be, float *row_max, float *target_logit, const void *logits,
                  zt_dtype dt, const int32_t *targets, int n, int valid, int lo, int Vl) {
    if (dt == ZT_BF16)
        be->ops->ce_slice_stats_bf16(be, row_max, target_logit, logits, targets, n, valid, lo, Vl);
    else be->ops->ce_slice_stats(be, row_max, target_logit, logits, targets, n, valid, lo, Vl);
}
static void sumexp_of(const zt_backend *be, float *sumexp, const void *logits, zt_dtype dt,
                      const float *row_max, int n, int valid, int Vl) {
    if (dt == ZT_BF16) be->ops->ce_slice_sumexp_bf16(be, sumexp, logits, row_max, n, valid, Vl);
    else be->ops->ce_slice_sumexp(be, sumexp, logits, row_max, n, valid, Vl);
}

void zt_vocab_parallel_ce(const zt_backend *be, const zt_comm *tp, void *dlogits, float *losses,
                          const void *logits, zt_dtype dt, const int32_t *targets, float scale,
                          int n, int V, int Vp, float *work) {
    ZT_ASSERT(dt == ZT_F32 || dt == ZT_BF16);
    int size = tp ? tp->size : 1, rank = tp ? tp->rank : 0;
    int Vl = Vp / size, lo = rank * Vl, valid = zt_vocab_slice_valid(V, Vp, size, rank);
    // work = [row max | sum of exp | target logit]: the last two reduce in one call
    float *row_max = work, *sumexp = work + n, *target_logit = work + 2 * (size_t)n;
    stats(be, row_max, target_logit, logits, dt, targets, n, valid, lo, Vl);
    if (size > 1)
        zt_comm_all_reduce(tp, row_max, row_max, (size_t)n, ZT_F32, ZT_REDUCE_MAX, NULL);
    sumexp_of(be, sumexp, logits, dt, row_max, n, valid, Vl);
    // exactly one rank holds each target, the others add 0: the sum is exact
    if (size > 1)
        zt_comm_all_reduce(tp, sumexp, sumexp, 2 * (size_t)n, ZT_F32, ZT_REDUCE_SUM, NULL);
    if (dt == ZT_BF16)
        be->ops->ce_slice_finish_bf16(be, dlogits, losses, logits, targets, row_max, sumexp,
                                      target_logit, scale, n, valid, lo, Vl);
    else
        be->ops->ce_slice_finish(be, dlogits, losses, logits, targets, row_max, sumexp,
                                 target_logit, scale, n, valid, lo, Vl);
}
