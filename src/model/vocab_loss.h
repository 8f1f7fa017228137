// Vocab-parallel cross entropy (docs/design.md §5): each tp rank holds the logits of its
// slice of the padded vocabulary; per row the ranks combine the max, the sum of
// exponentials and the target logit, so the full row never exists on one rank.
#ifndef ZT_VOCAB_LOSS_H
#define ZT_VOCAB_LOSS_H

#include <stdint.h>

#include "backend.h"
#include "comm.h"

// The real (non-padding) columns of tp rank `rank`'s slice of Vp/tp columns, for a
// vocabulary of V real tokens: between 0 and Vp/tp.
int zt_vocab_slice_valid(int V, int Vp, int tp, int rank);

// Loss and gradient of n rows. logits (n, Vp/tp) is this rank's slice of columns
// [rank*Vp/tp, (rank+1)*Vp/tp); dlogits (same shape, may alias logits) becomes
// scale * (softmax - onehot), zero on padded columns; losses (n) are each row's loss,
// identical on every rank. tp NULL (or of size 1): the whole padded row is here.
// Every buffer is device memory of `be` (tp is the group's tensor path). work: 3n floats. Collective over tp: two all-reduces of n and 2n floats.
// logits and dlogits of dt: ZT_F32, or ZT_BF16 on a backend with the bf16 group (the
// statistics and losses stay fp32; dlogits is the fp32 gradient rounded once).
void zt_vocab_parallel_ce(const zt_backend *be, const zt_comm *tp, void *dlogits, float *losses,
                          const void *logits, zt_dtype dt, const int32_t *targets, float scale,
                          int n, int V, int Vp, float *work);

#endif
