// The CUDA backend's registry entry in a binary built without CUDA (plain `make`): known by
// name, not built, so opening it says how to get it. `make cuda` links backend_cuda.c's entry
// ahead of libzt.a, so this archive member is never pulled into that binary.
#include "backend_impl.h"
#include "launch_math.h"

// The built backend's caps, so a plan made by this binary counts what a CUDA run allocates
// (the bf16 GEMM's scratch, the attention's workspace).
const zt_backend_entry zt_backend_cuda_entry = {
    .caps = {.name = "cuda", .built = 0, .tf32 = 1, .device_memory = 1, .bf16 = 1,
             .gemm_mixed_workspace = ZT_CUDA_GEMM_MIXED_WORKSPACE,
             .attention_workspace = zt_cuda_attention_workspace},
};
