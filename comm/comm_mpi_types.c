// zerotrain's dtypes and reductions as MPI's, bf16's user ops among them.
#include "bf16_math.h"
#include "comm_mpi_impl.h"

// bf16 moves as 2-byte elements (MPI has no bf16 type) and reduces through user ops (below).
MPI_Datatype zt_mpi_type(zt_dtype dt) {
    switch (dt) {
    case ZT_F32: return MPI_FLOAT;
    case ZT_F64: return MPI_DOUBLE;
    case ZT_I32: return MPI_INT32_T;
    case ZT_I64: return MPI_INT64_T;
    case ZT_U8: return MPI_UINT8_T;
    case ZT_BF16: return MPI_UINT16_T;
    default: break;
    }
    zt_mpi_fatalf(__FILE__, __LINE__, "bad dtype %d", (int)dt);
}

// ---- bf16 reductions ----
// Each pairwise step widens both operands (exact), adds in fp32 and rounds the sum once to
// bf16 (nearest even, bf16_math.h), as NCCL's bf16 reduction does; MAX compares the widened
// values. Built-in ops would treat the bits as integers, so these are user ops (commutative,
// which they are; not associative, so the result depends on the order MPI combines the
// ranks in: fixed for a given communicator size and count, so repeated runs agree). The
// staging window's reduce (MPI_Reduce_local) uses them too, in its fixed rank order.
static MPI_Op g_bf16_sum = MPI_OP_NULL, g_bf16_max = MPI_OP_NULL;

static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    const zt_bf16 *a = in;
    zt_bf16 *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = zt_bf16_from_fp32(zt_bf16_to_fp32(a[i]) + zt_bf16_to_fp32(b[i]));
}
static void bf16_max(void *in, void *inout, int *len, MPI_Datatype *dt) {
    const zt_bf16 *a = in;
    zt_bf16 *b = inout;
    for (int i = 0; i < *len; i++)
        if (zt_bf16_to_fp32(a[i]) > zt_bf16_to_fp32(b[i])) b[i] = a[i];
}

void zt_mpi_bf16_ops_create(void) {
    if (g_bf16_sum != MPI_OP_NULL) return;
    ZT_CHECK_MPI(MPI_Op_create(bf16_sum, 1, &g_bf16_sum));
    ZT_CHECK_MPI(MPI_Op_create(bf16_max, 1, &g_bf16_max));
}
void zt_mpi_bf16_ops_free(void) {
    if (g_bf16_sum == MPI_OP_NULL) return;
    ZT_CHECK_MPI(MPI_Op_free(&g_bf16_sum));
    ZT_CHECK_MPI(MPI_Op_free(&g_bf16_max));
}

MPI_Op zt_mpi_op(zt_reduce_op op, zt_dtype dt) {
    switch (op) {
    case ZT_REDUCE_SUM: return dt == ZT_BF16 ? g_bf16_sum : MPI_SUM;
    case ZT_REDUCE_MAX: return dt == ZT_BF16 ? g_bf16_max : MPI_MAX;
    default: break;
    }
    zt_mpi_fatalf(__FILE__, __LINE__, "bad reduction op %d", (int)op);
}
