// The CUDA backend receives the step `zerotrain plan --ops-json` records for it (issue 34):
// one whole training step (src/planner/plan_step_ops.c) run on the GPU under the --profile
// decorator gets, op by op, the calls and flops the recorder counts with the CUDA backend's
// capabilities, fp32 and bf16. Between its "cuda_step DTYPE begin" and "end" lines on stderr
// the step issues nothing else, so tests/sh/cuda_gpu_model.sh counts its launches there (in
// the CUDA emulation's log) against bench/gpu_model.py's expansion of the recorded ops. SKIPs
// without a GPU (a binary built without CUDA, a machine without one).
#include <stdio.h>
#include <string.h>

#include "backend_profile.h"
#include "plan_step_ops.h"
#include "test.h"

// The step's shape: tests/sh/cuda_gpu_model.sh records the same with zerotrain's flags. Sized
// so that the CUDA functions' loops run more than once: the weight gradients' K (B T = 2048
// tokens) two of gemm_mixed's K chunks, attention four query blocks.
static const zt_model_shape step_shape = {.n_layer = 2, .n_head = 2, .n_embd = 128,
                                          .vocab = 16384, .padded_vocab = 16384, .n_ctx = 512};
enum { STEP_B = 4, STEP_T = 512 };

static int run_step(const zt_backend *gpu, const zt_plan_spec *s, const char *what,
                    zt_op_record *real) {
    zt_profile acc = {0};
    zt_backend prof;
    zt_backend_profile_state ps;
    zt_backend_profile_init(&prof, &ps, gpu, &acc);
    zt_plan_step st;
    if (zt_plan_step_init(&st, s, &prof) != ZT_OK) {
        zt_plan_step_free(&st);
        return 0;
    }
    zt_gpt2_init_random(&st.model, 11);
    size_t BT = (size_t)s->micro_batch * s->seq;
    int32_t *tok = zt_be_map(&prof, st.tokens, 2 * BT * sizeof(int32_t), 0);
    for (size_t i = 0; i < 2 * BT; i++) tok[i] = (int32_t)((i * 7919) % (size_t)s->shape.vocab);
    zt_be_unmap(&prof, st.tokens, tok, 2 * BT * sizeof(int32_t), 1);
    prof.ops->sync(&prof);
    memset(real, 0, sizeof *real);
    ps.by_op = real;
    fprintf(stderr, "cuda_step %s begin\n", what);
    fflush(stderr);
    zt_plan_step_run(&st);
    prof.ops->sync(&prof);
    fprintf(stderr, "cuda_step %s end\n", what);
    fflush(stderr);
    ps.by_op = NULL;
    zt_plan_step_free(&st);
    return 1;
}

ZT_TEST(cuda_step_ops_match_record) {
    zt_backend gpu;
    if (zt_backend_open(&gpu, "cuda", &(zt_backend_options){0}) != ZT_OK) {
        printf("SKIP cuda_step_ops_match_record: %s\n", zt_error_message());
        return ZT_SKIP;
    }
    int checked = 0;
    for (int dt = 4; dt >= 2; dt -= 2) {
        const char *what = dt == 2 ? "bf16" : "fp32";
        zt_plan_spec s = {.shape = step_shape, .dp = 1, .pp = 1, .tp = 1, .micro_batch = STEP_B,
                          .seq = STEP_T, .grad_accum = 1, .param_bytes = dt,
                          .loss_chunk = STEP_B * STEP_T, .backend = gpu.caps};
        s.opt8 = zt_adamw8bit_default_options();
        zt_op_record *real = calloc(1, sizeof *real), *rec = calloc(1, sizeof *rec);
        ZT_ASSERT(real && rec);
        CHECK(run_step(&gpu, &s, what, real));
        CHECK(zt_plan_step_ops(&s, rec, NULL, NULL) == ZT_OK);
        for (int op = 0; op < ZT_OPID_COUNT; op++)
            if (real->calls[op] != rec->calls[op] || real->flops[op] != rec->flops[op]) {
                fprintf(stderr, "%s, op %s: run %ld calls %.17g flops, recorded %ld calls "
                                "%.17g flops\n",
                        what, zt_op_name(op), real->calls[op], real->flops[op], rec->calls[op],
                        rec->flops[op]);
                CHECK(0);
            }
        long calls = 0;
        for (int op = 0; op < ZT_OPID_COUNT; op++) calls += rec->calls[op];
        printf("  %s: %ld op calls, run = recorded, every op\n", what, calls);
        CHECK(calls > 0);
        free(real);
        free(rec);
        checked++;
    }
    zt_backend_close(&gpu);
    CHECK(checked == 2);
    return ZT_PASS;
}
