// zerotrain's dtypes, reductions and counts as MPI's (bf16's user ops among them), and the
// checks on an operation's arguments and what it received that every operation makes.
#include <limits.h>

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

void zt_mpi_check_stream(void *stream) {
    ZT_MPI_ASSERTF(stream == NULL, "the MPI communicator works on host memory: stream must be NULL");
}

// TODO: split blocks over INT_MAX elements (needs strided pieces: a packing buffer sized at
// init, or a derived datatype for all_gather). 2^31 elements per rank is far beyond
// GPT-2 XL's whole parameter count, so a fatal check stands in for now.
int zt_mpi_block_count(const char *what, size_t block) {
    ZT_MPI_ASSERTF(block <= INT_MAX, "%s: %zu elements per rank exceed INT_MAX (TODO: split)",
                   what, block);
    return (int)block;
}

// A longer message fails inside MPI (MPI_ERR_TRUNCATE); a shorter one is caught here.
void zt_mpi_check_received(const MPI_Status *st, zt_dtype dt, int want, int peer) {
    int got = -1;
    ZT_CHECK_MPI(MPI_Get_count(st, zt_mpi_type(dt), &got));
    ZT_MPI_ASSERTF(got == want, "recv from rank %d: expected %d %s elements, got %d", peer,
                   want, zt_dtype_name(dt), got);
}
