// A communicator that times another (`--profile`, src/core/profile.h): the grid's tensor paths
// point at these while profiling, so collectives and pipeline transfers, with the waits
// for the other ranks in them, count under the comm phase.
#ifndef ZT_COMM_PROFILE_H
#define ZT_COMM_PROFILE_H

#include "comm.h"
#include "profile.h"

typedef struct {
    const zt_comm *inner;
    zt_profile *acc;
} zt_comm_profile_state;

// out (and st, which out->impl points at) must outlive every use of out; freeing out
// leaves the inner communicator alone.
void zt_comm_profile_init(zt_comm *out, zt_comm_profile_state *st, const zt_comm *inner,
                          zt_profile *acc);

#endif
