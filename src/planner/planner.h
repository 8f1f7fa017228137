// The memory planner: the bytes every rank of a layout allocates, by category, computed
// without allocating anything (so a run that cannot fit is refused before it starts,
// and `zerotrain memory` plans layouts far beyond this machine). It is the one home of
// that arithmetic: the trainer sizes its optimizer shard, its `memory` partition and
// its fits-check with these functions, and tests compare them with what the runtime
// actually allocates (tests/test_planner.c: exact equality per category).
//
// Where the bytes come from, per rank (stage s, dp rank d, tp rank t):
//   params, grads, activations, workspace, logits
//             zt_gpt2_footprint of the stage's units on tp rank t, with activations for
//             the micro-batches the schedule keeps in flight on stage s (1F1B:
//             min(pp - s, grad_accum); GPipe: grad_accum); the flat buffer padded to a
//             multiple of dp * ZT_ALIGN_ELEMS. Plus the trainer's token buffers
//             (2 * slots * B * T int32, workspace) and the backend's own buffers
//             (caps.fixed_workspace: CUDA's cuBLAS workspace and scratch, workspace).
//   optimizer zero 1: this dp rank's shard [d * numel/dp, (d+1) * numel/dp); zero 0: the
//             whole flat buffer. fp32 AdamW: m and v, 4 bytes each per element;
//             adamw8bit: zt_adamw8bit_state_bytes of the shard (codes, absmax, fp32
//             state of small tensors, the piece table).
//   comm      the trainer's pipeline buffers, (2 * slots + 1) * Nr * C floats (Nr = B * T,
//             or B * T / tp with --sequence-parallel: zt_gpt2_rows)
//             (allocated even at pp = 1), plus the MPI backend's tables per communicator.
//             The MPI backend's shared-memory staging windows (2 * size * slot bytes per
//             node-local communicator of 2 or more ranks) are MPI's allocation, outside
//             the allocator's count: reported as comm_window, counted in the peak.
//   staging   the host staging buffers of the rank's tp, dp, pp and embed groups where the
//             grid stages them (comm/comm_staged.c; src/parallel/grid_data.h): on a device
//             backend a group whose ranks share a GPU (by --gpus-per-node and
//             --ranks-per-node, each rank taking GPU local rank mod gpus, as the backend
//             picks) and a group of one; with --tensor-path staged every group. Two buffers
//             per group (16 MiB each, 64 KiB for a group of one); under interleaved a
//             staged pp group adds the ring's send slots (zt_plan_ring_sends). On the CPU
//             (staged) they are host memory the allocator counts, in comm; on a GPU pinned
//             host memory outside its count (device memory): reported as staging, counted in
//             the peak.
// bf16 (param_bytes 2, docs/design.md "bf16"): params and grads take 2 bytes per value,
// the optimizer adds an fp32 master copy of its range (4 bytes per element, sharded like m
// and v), the backward scratch the backend's gemm_mixed scratch; activations, logits and
// the pipeline buffers stay fp32.
#ifndef ZT_PLANNER_H
#define ZT_PLANNER_H

#include <stddef.h>

#include "adamw8bit.h"
#include "common.h"
#include "backend.h"
#include "gpt2.h"
#include "layout.h"
#include "memory.h"
#include "partition.h"
#include "schedule.h"

// One layout to plan: the model, the grid and everything that sizes a buffer.
typedef struct {
    zt_model_shape shape;         // Vp padded for tp (zt_config_shape)
    int dp, pp, tp;               // world = dp * pp * tp
    int seq_parallel;             // --sequence-parallel: per-row tensors 1/tp (tp > 1)
    int zero;                     // 0: every dp rank keeps the whole optimizer; 1: a 1/dp shard
    int micro_batch, seq, grad_accum;
    int loss_chunk;               // tokens per loss chunk, 0 = automatic
    zt_recompute recompute;       // what the blocks recompute in the backward (gpt2.h)
    zt_schedule_kind schedule;
    int virtual_stages;           // V: chunks per pipeline rank under interleaved (the
                                  // partition has pp * V stages, chunk c of rank r being
                                  // virtual stage c * pp + r), 1 otherwise (0 reads as 1)
    char partition[256];          // the --partition spec
    int is_8bit;                  // --optim adamw8bit
    zt_adamw8bit_options opt8;
    int param_bytes;              // 4: fp32; 2: bf16 params and grads + fp32 master
    int ranks_per_node;           // consecutive world ranks per machine; 0 = all on one
    int gpus_per_node;            // GPUs per machine (a device backend); 0 = one per rank
    int stage_all;                // --tensor-path staged: every group through host staging
    int stage_kib;                // the MPI backend's staging slot (KiB; 0 = no windows):
                                  // zt_comm_mpi_stage_kib()
    int save;                     // --save given: rank 0 gathers every part at the end
    int sample;                   // --sample-every: a decoder's KV cache and rows per stage
    const zt_backend_caps *backend; // where tensors live: its attention scratch
    int threads;                  // host threads per rank (the CPU's attention scratch
                                  // grows with them); 0: omp_get_max_threads()
} zt_plan_spec;

// One rank's plan. bytes[] is what the allocator (zt_mem_current) will hold per
// category once the trainer has set up; the rest is memory outside that count.
typedef struct {
    int rank, dp_rank, pp_rank, tp_rank;
    int unit_first, unit_last;    // the stage's units [first, last)
    int n_slots;                  // micro-batches of activations held at once
    size_t numel;                 // the flat buffer's padded length (elements)
    size_t shard_lo, shard_hi;    // the optimizer's range of it
    double bytes[ZT_MEM_NCAT];
    // bytes[ZT_MEM_OPTIMIZER], split: fp32 master copy (16-bit params only), first and
    // second moment (fp32 values or 8-bit codes, plus the fp32 state of the tensors
    // adamw8bit keeps in fp32), the 8-bit blocks' absmax (both moments), the piece table.
    double opt_master, opt_m, opt_v, opt_absmax, opt_table;
    double comm_backend;          // the MPI backend's part of bytes[ZT_MEM_COMM] (its
                                  // per-communicator state and tables)
    double comm_window;           // MPI staging windows: MPI's memory, not in bytes[]
    double staging;               // host staging buffers of the rank's staged groups: in
                                  // bytes[ZT_MEM_COMM] on a host backend, pinned host memory
                                  // outside bytes[] on a device backend
    double end_transient;         // malloc'd at the end of the run (export, checks)
    double tracked;               // sum of bytes[]
    double peak;                  // tracked + comm_window + end_transient (+ staging
                                  // where it is outside bytes[])
} zt_plan_bytes;


// Micro-batches whose activations stage `stage` holds at once under the schedule; under
// interleaved (V > 1) `stage` is a virtual stage and the figure its chunk's own slots
// (zt_schedule_chunk_slots).
int zt_plan_stage_slots(const zt_plan_spec *s, int stage);
// The partition's stages: pp * V (V = virtual_stages, at least 1).
int zt_plan_partition_stages(const zt_plan_spec *s);
// W slots (zt_act_options.w_slots) of a stage holding `slots`: under ZB-H1 as many as its
// activation slots (stage s needs min(s+1, ...) at most: zt_schedule_peak_w_pending; the
// same count on every stage keeps the arithmetic one function of `slots`; TODO: size each
// stage by its own peak), else 0.
int zt_plan_stage_w_slots(const zt_plan_spec *s, int slots);
// The interleaved ring's host slots on a staged pipeline path (zt_comm_staged_reserve_p2p):
// a rank holding `slots` micro-batch slots over its chunks keeps up to 2 sends per slot in
// flight (a forward's output and a backward's input gradient, each until its slot is written
// again: src/parallel/pipe_ring.h), each one message of fp32 activations (*bytes). 0 sends
// where the schedule is not interleaved.
int zt_plan_ring_sends(const zt_plan_spec *s, int slots, size_t *bytes);
// Whether a run of s can execute --schedule interleaved: the one rule, that no pipeline
// group's tensor path is NCCL (whose point-to-point holds its stream: src/app/train.c,
// check_ring). So the CPU backend and ranks sharing a device (host staging) can; ranks with
// GPUs of their own cannot. By the grid's own choice of path (zt_grid_group_path).
int zt_plan_interleaved_runs(const zt_plan_spec *s);

// The pipeline partition of the spec (--partition; `memory` balances the stages'
// predicted bytes from this planner). The caller frees it with zt_partition_free. Fails
// as zt_partition_build does (a malformed spec, more stages than units, ...).
zt_status zt_plan_partition(const zt_plan_spec *s, zt_partition *out);

// The stage costs of the `memory` partition, cached (the advice reuses one cache across
// the pipeline depths it tries). A stage's cost depends on its units only through (holds
// the embed unit, holds the head unit, number of blocks): every block has the same tensors
// and activations. So the `memory` partition's dynamic program, which asks for every
// (stage, first, last), costs one footprint per distinct key, and slots enter linearly
// (activations, token ids, pipeline buffers are per slot). The cache is valid for one
// spec's sizes; pp, the schedule and grad_accum (which only set slots) may change under it.
typedef struct {
    int L;
    char *done;     // (2 * 2 * (L + 1))
    double *fixed;  // the stage's bytes with 1 slot (tp rank 0, dp rank 0's optimizer)
    double *per_slot; // the bytes each further slot adds
} zt_plan_cache;

void zt_plan_cache_init(zt_plan_cache *c, const zt_plan_spec *s);
void zt_plan_cache_free(zt_plan_cache *c);
// The bytes tp rank 0 (and dp rank 0's optimizer) of a stage holding units [first, last)
// with `slots` micro-batches in flight tracks: from its footprint (fails as the plan does),
// or from `cache` (which it fills; the spec must be valid: a failure is fatal).
zt_status zt_plan_stage_cost(const zt_plan_spec *s, int first, int last, int slots, double *cost);
double zt_plan_stage_cost_cached(const zt_plan_spec *s, zt_plan_cache *c, int first, int last,
                                 int slots);
// zt_plan_partition with costs from `cache` (valid for s's sizes), which it fills.
zt_status zt_plan_partition_cached(const zt_plan_spec *s, zt_plan_cache *cache,
                                   zt_partition *out);

// The tensors of pipeline rank pp_rank on tp rank tp_rank (its chunks' under interleaved),
// laid out as the trainer lays them, lay->numel its flat buffer padded as allocated (to dp x
// ZT_ALIGN_ELEMS). Caller frees with zt_layout_free.
zt_status zt_plan_rank_layout(const zt_plan_spec *s, const zt_partition *p, int pp_rank,
                              int tp_rank, zt_layout *lay);

// This dp rank's optimizer range [lo, hi) of a flat buffer of `numel` elements (a
// multiple of dp * ZT_ALIGN_ELEMS, asserted): the 1/dp shard under zero 1, everything
// under zero 0 (zt_dp_shard, src/parallel/dp_sync.h: the trainer's arithmetic).
void zt_plan_shard(const zt_plan_spec *s, size_t numel, int dp_rank, size_t *lo, size_t *hi);

// The plan of the rank at (dp_rank, pp_rank, tp_rank) under partition `p`. Fails only on
// a shape the tp degree cannot split.
zt_status zt_plan_rank(const zt_plan_spec *s, const zt_partition *p, int dp_rank, int pp_rank,
                       int tp_rank, zt_plan_bytes *out);

// The plan of every rank, indexed by world rank (out holds dp * pp * tp entries).
zt_status zt_plan_all(const zt_plan_spec *s, const zt_partition *p, zt_plan_bytes *out);

// The largest need among groups of `sharing` consecutive world ranks (1: a single rank;
// the ranks of one machine otherwise), and the first rank of that group.
double zt_plan_max_need(const zt_plan_spec *s, const zt_plan_bytes *all, int sharing,
                        int *first_rank);

// One change to a run that makes it fit, as planned.
typedef struct {
    char change[160]; // the flags, e.g. "--zero 1 --dp 4"
    char note[96];    // what the change costs, e.g. "about 20% more compute" ("" = nothing)
    double need;      // the changed run's largest need (per rank, or per machine)
    int world;        // the changed run's ranks
} zt_plan_advice;

// The smallest changes of each kind that make `s` fit `limit` (sharing as below), each
// verified by planning the changed run; at most `max` into adv; returns how many. When no
// single change fits: the 8-bit optimizer (and 1F1B) combined with one more.
int zt_plan_advise(const zt_plan_spec *s, double limit, int sharing, zt_plan_advice *adv,
                   int max);

// Refuses, before anything is allocated, a run predicted not to fit: every group of
// `sharing` consecutive world ranks (1 when `limit` is one rank's memory, e.g.
// --mem-limit; the ranks on one machine when it is the machine's available memory)
// must need at most `limit` bytes. On failure the message (zt_errorf) gives the need of
// the largest rank by category and the smallest changes that fit, each checked by
// planning the changed run: --zero 1 with more dp, --optim adamw8bit, more --pp, a
// smaller --micro-batch (the same global batch), --schedule 1f1b, a smaller
// --loss-chunk. `limit_what` names the limit in the message ("--mem-limit 16G", "this
// machine's available memory"). limit <= 0 checks nothing.
zt_status zt_plan_check_fits(const zt_plan_spec *s, double limit, int sharing,
                             const char *limit_what);

// One GPU's memory as a rank's backend read it (zt_backend_i.memory_info), in bytes.
typedef struct {
    double free, total; // what the device reports
    double held;        // what this rank's backend holds there already (its fixed buffers)
} zt_device_memory;

// A rank plan's bytes on a device backend: in device memory (the allocator's count less
// the MPI backend's tables, host memory), and in host memory outside the device (the MPI
// tables, staging windows, the end of the run's buffers, and with_staging the pinned
// staging buffers).
double zt_plan_device_bytes(const zt_plan_bytes *b);
double zt_plan_host_bytes(const zt_plan_bytes *b, int with_staging);

// Refuses, before anything is allocated, a device run whose GPUs cannot hold their ranks.
// all: every rank's plan (world entries, by world rank); ids[r], devices[r]: the device
// identity and index rank r's backend reported (zt_backend_i.device, as the grid gathers
// them; "" for no device: skipped); mem[r]: what rank r read of its GPU. Each GPU (the
// ranks with one identity) must hold the device bytes of all its ranks within its free
// memory (the least any of its ranks read) plus what those ranks' backends hold already
// (held: in the plans too, so not counted twice). On failure (the GPU of the lowest rank
// first; *bad_rank, may be NULL, its first rank, else -1) the message names the GPU, its
// ranks, the bytes by category of its largest rank, the free and total bytes and the
// fix (--micro-batch, --zero, --pp, --tp). Pure; every rank given the same inputs gives
// the same answer.
zt_status zt_plan_check_devices(const zt_plan_bytes *all, int world, const char *const *ids,
                                const int *devices, const zt_device_memory *mem,
                                int *bad_rank);

// The host-side parts of a device plan (zt_plan_host_bytes) of every group of `sharing`
// consecutive world ranks (one machine's; 1: a single rank) against `limit` bytes, named
// limit_what in the message. limit <= 0 checks nothing. Pure.
zt_status zt_plan_check_host_parts(const zt_plan_bytes *all, int world, int sharing,
                                   int with_staging, double limit, const char *limit_what);

// "1.50 GiB", "12.0 MiB", "512 B" into buf.
const char *zt_plan_format_bytes(double bytes, char *buf, size_t size);
// "parameters 1.00 GiB, gradients ..." of one rank's plan into buf, with its MPI windows and
// end-of-run buffers; device_only: its device bytes alone (comm less its host-side tables).
void zt_plan_format_categories(const zt_plan_bytes *b, int device_only, char *buf, size_t size);

// The report of `zerotrain memory`: every rank's plan (ranks alike share a row in text),
// the optimizer split, the largest rank, the ZeRO paper's formula for this run and for
// a published configuration, and with limit > 0 whether each rank fits it (with advice).
// json: one JSON object instead of text. Fails as zt_plan_partition / zt_plan_all do.
zt_status zt_plan_report(FILE *f, const zt_plan_spec *s, int json, double limit,
                         const char *limit_what);

// The ZeRO paper's per-rank model-state bytes (Rajbhandari et al. 2019, §5 / Figure 1):
// psi parameters, p and g bytes per parameter and gradient (2 and 2 in the paper),
// k optimizer bytes per parameter (12 for mixed-precision Adam: fp32 master, m, v),
// nd data-parallel ranks. stage 0: baseline (p+g+k)psi; 1: Pos (p+g)psi + k psi/nd;
// 2: Pos+g p psi + (g+k)psi/nd; 3: Pos+g+p (p+g+k)psi/nd.
double zt_plan_zero_formula(int stage, double psi, double p, double g, double k, double nd);

#endif
