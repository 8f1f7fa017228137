// The planner's view of a configured run: a zt_plan_spec from the resolved options.
#ifndef ZT_PLAN_SPEC_H
#define ZT_PLAN_SPEC_H

#include "config.h"
#include "planner.h"

// The spec of a run: `c` must have passed zt_config_validate; dp is the data-parallel
// degree (the trainer derives it from the world size; `zerotrain memory` takes --dp).
// Fails (zt_errorf) on a tp that does not divide the model (zt_layout_init's message),
// bad adamw8bit options, an unknown --backend. stage_kib is what the MPI
// backend reads from the environment (zt_comm_mpi_stage_kib); ranks_per_node is
// --ranks-per-node, gpus_per_node --gpus-per-node, stage_all --tensor-path staged; threads is --threads, or when 0 this process's omp_get_max_threads()
// (OMP_NUM_THREADS), as a rank will have.
zt_status zt_plan_spec_from_config(zt_plan_spec *s, const zt_config *c, int dp);

#endif
