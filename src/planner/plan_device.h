// The devices the time model prices work on (docs/design.md "Step-time model"): a table of
// known GPUs (vendor peaks, assumed efficiencies), this machine's CPU as `zerotrain plan
// --calibrate` measured it, or a JSON file of the same figures. Each figure says where it
// came from.
#ifndef ZT_PLAN_DEVICE_H
#define ZT_PLAN_DEVICE_H

#include <stdio.h>

#include "common.h"
#include "profile.h"

// Where a figure comes from, printed with every plan.
typedef enum { ZT_FIG_TABLE, ZT_FIG_MEASURED, ZT_FIG_FILE, ZT_FIG_ASSUMED } zt_fig_source;
const char *zt_fig_source_name(zt_fig_source s);

typedef struct {
    double bw;      // bytes/s one rank sends (one direction)
    double latency; // seconds per step of a ring
} zt_plan_link;

typedef struct {
    char name[64];
    char backend[8];            // "cpu" | "cuda": whose buffers the memory plan counts
    // rate[phase][dt]: what the time model divides a recorded pass by, dt 0 fp32, 1 bf16
    // parameters: flop/s for ZT_PHASE_GEMM and ZT_PHASE_ATTENTION, bytes/s of the
    // recorder's traffic bound for the others (backend_record.h)
    double rate[ZT_PHASE_COUNT][2];
    double op_latency[ZT_PHASE_COUNT]; // seconds each call of the phase adds (the CPU's
                                       // thread start-up; 0 on a GPU: launches overlap)
    zt_fig_source rate_src;
    double peak_flops[2];       // the peak an MFU divides by (fp32, bf16)
    zt_fig_source peak_src;
    double memory_bytes;        // one device's memory (0: the host's available memory)
    zt_fig_source memory_src;
    zt_plan_link intra, inter;  // within a machine and across machines
    zt_fig_source link_src;
    int host;                   // a CPU: its ranks share the machine's memory
    int threads;                // the threads per rank the rates were measured with (0: a GPU)
    double cores;               // a CPU: the cores its ranks' threads share (measured: what
                                // ranks running the step at once reached, other users' load
                                // included);
                                // compute slows by (ranks x threads) / cores beyond it
    double jitter;              // a CPU: how a stretch of work t wanders, jitter x sqrt(t)
                                // seconds (other users' load; measured): ranks in lockstep
                                // wait for the slowest at each synchronization
    double spread;              // a CPU: how far the calibration's rounds of the same step
                                // lay apart, (slowest - fastest) / median: plans closer
                                // than this are a tie the measurement cannot order
    char note[512];             // where the measured or file figures came from
} zt_plan_device;

// The device `name`: h100, h200, a100 (the table), cpu (the calibration file at
// `calibration`, which --calibrate writes: ZT_ERR naming the command when it is missing), or
// a path to a JSON file (keys: zt_plan_device_write's). ZT_ERR naming the problem.
zt_status zt_plan_device_load(zt_plan_device *d, const char *name, const char *calibration);

// Writes `d` as the JSON file zt_plan_device_load reads (a --calibrate result).
zt_status zt_plan_device_write(const zt_plan_device *d, const char *path);

// One line per figure group and its source, for a plan's header.
void zt_plan_device_describe(const zt_plan_device *d, FILE *f);
void zt_plan_device_write_json(const zt_plan_device *d, FILE *f);

// The known names, "h100, h200, a100, cpu".
const char *zt_plan_device_names(void);

#endif
