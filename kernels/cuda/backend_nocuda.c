// What only the CUDA build has (the CUDA backend, the NCCL comm backend), in a binary
// built without CUDA (plain `make`): init refuses with a message saying how to get one.
// `make cuda` links backend_cuda.c's and comm_nccl.c's definitions ahead of libzt.a, so
// this archive member is never pulled into that binary.
#include "backend_cuda.h"
#include "comm_nccl.h"

int zt_backend_cuda_built(void) { return 0; }

zt_status zt_backend_cuda_init(zt_backend *be, int device) {
    (void)device;
    be->ops = NULL;
    be->impl = NULL;
    return zt_errorf("--backend cuda: this binary was built without CUDA: build with `make cuda` "
                     "and run build/zerotrain-cuda");
}

void zt_backend_cuda_free(zt_backend *be) { (void)be; }

void *zt_backend_cuda_stream(const zt_backend *be) {
    (void)be;
    return NULL;
}

void zt_backend_cuda_set_tf32(zt_backend *be, int on) { (void)be, (void)on; }

zt_status zt_comm_nccl_init(zt_comm *out, const zt_comm *ctrl, void *stream) {
    (void)ctrl, (void)stream;
    memset(out, 0, sizeof *out);
    return zt_errorf("NCCL: this binary was built without CUDA: build with `make cuda`");
}
