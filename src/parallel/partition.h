// Pipeline partitions: which consecutive units (embed, blocks, head) each pp stage owns
// (docs/design.md §4).
#ifndef ZT_PARTITION_H
#define ZT_PARTITION_H

#include <stddef.h>

#include "common.h"
#include "layout.h"

// Stage i owns units [first[i], first[i+1]) (units as in layout.h: 0 = embed,
// 1..L = blocks, L+1 = head). Every stage owns at least one unit and the stages cover
// every unit in order: first[0] = 0 < first[1] < ... < first[n_stages] = L + 2.
typedef struct {
    int n_stages;
    int *first; // (n_stages + 1)
} zt_partition;

// Builds the partition of the model `s` into `n_stages` stages described by `spec`
// (the --partition option):
//
//   uniform     the L blocks split as evenly as possible, embed with the first stage and
//               head with the last. When L does not divide, the LATER stages take the
//               extra block: under 1F1B stage i keeps pp - i micro-batches in flight, so
//               an early stage holds more activations per block. Needs n_stages <= L.
//   parameters  balance parameter counts (zt_partition_unit_params): the embed and head
//               units each carry the Vp*C word embedding, so the first and last stages
//               take fewer blocks.
//   type:embed:2|transformer:1
//               per-unit-type weights, balanced as a weighted unit count. Types are
//               embed, transformer (a block) and head; a type not named weighs 0, and a
//               type named without a weight ("type:transformer", as in DeepSpeed) weighs 1.
//   memory      balance unit_cost[u], the predicted bytes of unit u from the memory
//               planner; fails when unit_cost is NULL.
//   0:1,1:7,7:13,13:14
//               explicit half-open unit ranges, one per stage, in order, starting at 0,
//               contiguous, covering all L + 2 units, none empty.
//
// The balancing methods use zt_partition_balance (exact, see there). `unit_cost`
// ((L + 2) non-negative finite values) is read only by `memory` and may be NULL
// otherwise. `*p` is overwritten; the caller frees it with zt_partition_free. Fails
// (status, nothing allocated, `*p` zeroed) on an unknown or malformed spec, a range list
// that does not fit the model or --pp, more stages than units, `uniform` with more
// stages than blocks, all type weights 0, and `memory` without costs.
zt_status zt_partition_build(zt_partition *p, const char *spec, const zt_model_shape *s,
                             int n_stages, const double *unit_cost);

// Whether `spec` names the `memory` method, whose unit costs the memory planner supplies
// (zt_plan_partition): the one method zt_partition_build cannot run alone.
int zt_partition_needs_costs(const char *spec);

// The cost of stage `stage` holding units [first, last), which may depend on the stage's
// position (under 1F1B an early stage keeps more micro-batches of activations in flight
// than a late one, so the same units cost it more memory).
typedef double (*zt_stage_cost_fn)(void *ctx, int stage, int first, int last);

// The exact min-max partition for a position-dependent cost: minimizes the largest
// stage cost over all partitions of n_units units into n_stages non-empty contiguous
// stages, and among those optimal partitions picks the most even one (the smallest sum
// of squared stage costs; remaining ties go to the earliest boundaries). Two dynamic
// programs, n_stages * n_units^2 calls of `cost` in all. Fails only when
// n_stages > n_units (the message names --pp).
// The memory method: `cost` returns a stage's predicted peak bytes.
zt_status zt_partition_build_staged(zt_partition *p, int n_units, int n_stages,
                                    zt_stage_cost_fn cost, void *ctx);

// Frees what build allocated; accepts a zeroed or already freed partition.
void zt_partition_free(zt_partition *p);

// The stage that owns `unit` (asserts 0 <= unit < first[n_stages]).
int zt_partition_stage_of(const zt_partition *p, int unit);

// Writes a one-line description into buf (always NUL-terminated when size > 0,
// truncated to fit), e.g.
//   "stage 0: embed + blocks 0-2 | stage 1: blocks 3-5 | stage 2: blocks 6-8 | "
//   "stage 3: blocks 9-11 + head"
// Blocks are numbered from 0 as in the Hugging Face names (block b = unit b + 1).
void zt_partition_format(const zt_partition *p, const zt_model_shape *s, char *buf,
                         size_t size);

// Parameters of one unit, counted over the global (tp = 1) shapes with the padded
// vocabulary: embed = Vp*C + n_ctx*C (wte, wpe); block = 12*C*C + 13*C; head =
// 2*C (ln_f) + Vp*C, because the last stage holds its own copy of the tied wte.
// The same numbers as summing zt_layout_init's table for that one unit.
double zt_partition_unit_params(const zt_model_shape *s, int unit);

// The exact min-max partition: writes first[0..n_stages] so that the largest stage sum
// of cost[] over [first[i], first[i+1]) is the smallest over all partitions of n_units
// units into n_stages non-empty contiguous stages. Ties are broken deterministically:
// among the optimal partitions, the one with the smallest sum of squared stage sums
// (the most even one; values within a relative 1e-12 count as equal), and among those
// the one with the smallest boundaries in lexicographic order (the later stages take
// the extra units, as in `uniform`). Dynamic programming over the stages from the back:
// O(n_stages * n_units^2) time, O(n_units^2) memory; exact in the sense that a stage sum
// is always the same ascending sum cost[a] + cost[a+1] + ..., so the bottleneck is
// compared bit for bit. Asserts 1 <= n_stages <= n_units and that costs are finite and
// non-negative (callers validate user input first).
void zt_partition_balance(const double *cost, int n_units, int n_stages, int *first);

#endif
