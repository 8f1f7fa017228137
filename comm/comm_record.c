// The recording communicator (comm_record.h): collectives add their bytes, nothing moves.
#include "comm_record.h"

static void note(const zt_comm *c, zt_record_kind k, size_t count, zt_dtype dt) {
    zt_comm_record *r = c->impl;
    r->bytes[k] += (double)count * (double)zt_dtype_size(dt);
    r->calls[k]++;
}

static void rec_all_reduce(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, zt_reduce_op op, void *stream) {
    note(c, ZT_RECORD_ALL_REDUCE, count, dt);
}

static void rec_reduce_scatter(const zt_comm *c, const void *send, void *recv, size_t count,
                               zt_dtype dt, zt_reduce_op op, void *stream) {
    note(c, ZT_RECORD_REDUCE_SCATTER, count, dt);
}

static void rec_all_gather(const zt_comm *c, const void *send, void *recv, size_t count,
                           zt_dtype dt, void *stream) {
    note(c, ZT_RECORD_ALL_GATHER, count, dt);
}

static void rec_free(zt_comm *c) {}

static const zt_comm_i zt_comm_record_ops = {
    .name = "record",
    .all_reduce = rec_all_reduce,
    .reduce_scatter = rec_reduce_scatter,
    .all_gather = rec_all_gather,
    .free = rec_free,
};

void zt_comm_record_init(zt_comm *out, int rank, int size, zt_comm_record *acc) {
    ZT_ASSERT(out && acc && size >= 1 && rank >= 0 && rank < size);
    out->ops = &zt_comm_record_ops;
    out->impl = acc;
    out->rank = rank;
    out->size = size;
}
