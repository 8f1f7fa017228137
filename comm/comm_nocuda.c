// The NCCL comm backend in a binary built without CUDA (plain `make`): init refuses with a
// message saying how to get one (and split, unreachable without an NCCL parent, is fatal). `make cuda` links comm_nccl.c's definition ahead of libzt.a,
// so this archive member is never pulled into that binary.
#include <string.h>

#include "comm_nccl.h"

zt_status zt_comm_nccl_init(zt_comm *out, const zt_comm *ctrl, void *stream) {
    (void)ctrl, (void)stream;
    memset(out, 0, sizeof *out);
    return zt_errorf("NCCL: this binary was built without CUDA: build with `make cuda`");
}

void zt_comm_nccl_split(const zt_comm *parent, int color, int key, zt_comm *out) {
    (void)parent, (void)color, (void)key, (void)out;
    zt_fatal(__FILE__, __LINE__, "NCCL: this binary was built without CUDA");
}
