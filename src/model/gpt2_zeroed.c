// The gradients still zeroed this step (gpt2.h's zt_gpt2_zeroed; docs/design.md, "Zeroed
// gradients"): what the step's zeroing marks and what a product into a gradient asks.
#include <stdlib.h>

#include "gpt2.h"

zt_gpt2_zeroed *zt_gpt2_zeroed_new(int n_layer) {
    zt_gpt2_zeroed *z = calloc(1, sizeof *z);
    ZT_ASSERT(z);
    z->cap = 4 * n_layer + 1; // the blocks' four matrices and wte
    z->grad = calloc((size_t)z->cap, sizeof *z->grad);
    ZT_ASSERT(z->grad);
    return z;
}

void zt_gpt2_zeroed_free(zt_gpt2_zeroed *z) {
    if (!z) return;
    free(z->grad);
    free(z);
}

static void mark(zt_gpt2_zeroed *z, const void *g) {
    if (!g) return; // a tensor of another stage
    ZT_ASSERT(z->n < z->cap);
    z->grad[z->n++] = g;
}

void zt_gpt2_zero_grads(zt_gpt2 *m) {
    m->be->ops->memset(m->be, m->grads, 0, m->layout.numel * zt_gpt2_elem_size(m));
    zt_gpt2_zeroed *z = m->zeroed;
    z->n = 0;
    mark(z, m->g.wte);
    for (int l = 0; m->dtype == ZT_BF16 && l < m->shape.n_layer; l++) {
        const zt_block_tensors *g = &m->g.h[l];
        mark(z, g->qkvw);
        mark(z, g->attprojw);
        mark(z, g->fcw);
        mark(z, g->fcprojw);
    }
}

float zt_gpt2_grad_beta(const zt_gpt2 *m, const void *g) {
    zt_gpt2_zeroed *z = m->zeroed;
    for (int i = 0; i < z->n; i++)
        if (z->grad[i] == g) {
            z->grad[i] = z->grad[--z->n];
            return 0.0f;
        }
    return 1.0f;
}
