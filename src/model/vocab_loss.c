// Vocab-parallel cross entropy: three local passes around two all-reduces.
#include "vocab_loss.h"


int zt_vocab_slice_valid(int V, int Vp, int tp, int rank) {
    int Vl = Vp / tp, lo = rank * Vl, n = V - lo;
    return n < 0 ? 0 : n > Vl ? Vl : n;
}

void zt_vocab_parallel_ce(const zt_backend *be, const zt_comm *tp, float *dlogits, float *losses,
                          const float *logits, const int32_t *targets, float scale, int n, int V,
                          int Vp, float *work) {
    int size = tp ? tp->size : 1, rank = tp ? tp->rank : 0;
    int Vl = Vp / size, lo = rank * Vl, valid = zt_vocab_slice_valid(V, Vp, size, rank);
    // work = [row max | sum of exp | target logit]: the last two reduce in one call
    float *row_max = work, *sumexp = work + n, *target_logit = work + 2 * (size_t)n;
    be->ops->ce_slice_stats(be, row_max, target_logit, logits, targets, n, valid, lo, Vl);
    if (size > 1)
        zt_comm_all_reduce(tp, row_max, row_max, (size_t)n, ZT_F32, ZT_REDUCE_MAX, NULL);
    be->ops->ce_slice_sumexp(be, sumexp, logits, row_max, n, valid, Vl);
    // exactly one rank holds each target, the others add 0: the sum is exact
    if (size > 1)
        zt_comm_all_reduce(tp, sumexp, sumexp, 2 * (size_t)n, ZT_F32, ZT_REDUCE_SUM, NULL);
    be->ops->ce_slice_finish(be, dlogits, losses, logits, targets, row_max, sumexp, target_logit,
                             scale, n, valid, lo, Vl);
}
