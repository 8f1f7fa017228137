// The pieces of the global gradient norm that one rank contributes (docs/design.md §2).
#ifndef ZT_GRAD_NORM_H
#define ZT_GRAD_NORM_H

#include <stddef.h>

#include "backend.h"
#include "layout.h"

// Sum of squares and count of non-finite values of grads[lo, hi) (device memory of `be`,
// flat indexing, elements of dtype dt: ZT_F32 or ZT_BF16), over
// the tensors this rank must count: a tensor replicated across tp only when
// count_replicated (tp_rank 0), the tied embedding only when count_tied (the first
// stage). out[0] = sum of squares, out[1] = non-finite count.
void zt_grad_sumsq(const zt_backend *be, double out[2], const void *grads, zt_dtype dt,
                   const zt_layout *lay, size_t lo, size_t hi, int count_replicated,
                   int count_tied);

// min(1, max_norm / (norm + 1e-6)) as torch.nn.utils.clip_grad_norm_; 1 when max_norm
// is 0 (clipping off).
float zt_clip_scale(double norm, float max_norm);

#endif
