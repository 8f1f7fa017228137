// Sharded training checkpoints: atomic saves, resume in the same or another layout,
// export to one Hugging Face directory. Format: docs/checkpoints.md.
#ifndef ZT_CKPT_H
#define ZT_CKPT_H

#include <stdint.h>

#include "adamw.h"
#include "adamw8bit.h"
#include "data.h"
#include "gpt2.h"
#include "grid.h"
#include "partition.h"
#include "schedule.h"

// The options the manifest records of the run (its "layout" and "config", compared on
// resume: docs/checkpoints.md), each under its name in the application's configuration
// (src/app/config.h), which fills them from there by this one list (src/app/ckpt_view.c).
// zero: 1, every dp rank writes its shard; 0, dp rank 0 only.
#define ZT_CKPT_RUN_OPTIONS(X)                                                             \
    X(int, zero) X(zt_schedule_kind, schedule) X(const char *, partition)                 \
    X(int, sequence_parallel)                                                              \
    X(int, micro_batch) X(int, seq) X(int, grad_accum) X(int, steps) X(int, warmup)        \
    X(int, shuffle) X(double, lr) X(double, lr_final_frac) X(double, weight_decay)         \
    X(double, beta1) X(double, beta2) X(double, eps) X(double, grad_clip)                  \
    X(int, optim_block) X(int, optim_min_8bit) X(int, optim_fp32_embedding)               \
    X(uint64_t, seed) X(zt_recompute_mode, recompute) X(int, recompute_layers)

// The run's options a checkpoint needs: where it goes, and what the manifest records. The
// application derives it from its configuration (src/app/ckpt_view.h); strings stay the
// caller's. The optimizer (adamw or adamw8bit) and the parameters' dtype (fp32 or bf16: the
// parameters saved are fp32 either way) are the context's (zt_ckpt_ctx.is_8bit, the model's
// dtype).
typedef struct {
    const char *dir;         // --ckpt-dir: checkpoints go to DIR/step-N
    int keep;                // --ckpt-keep: newest complete checkpoints kept (0 = all)
    const char *lr_schedule; // its name, "cosine" or "constant", as the manifest holds it
#define ZT_CKPT_RUN_FIELD(type, name) type name;
    ZT_CKPT_RUN_OPTIONS(ZT_CKPT_RUN_FIELD)
#undef ZT_CKPT_RUN_FIELD
} zt_ckpt_run;

// What one rank checkpoints: its model slice, its optimizer and where it stands. The
// trainer fills it (pointers stay the trainer's).
typedef struct {
    const zt_ckpt_run *run;
    const zt_grid *grid;
    const zt_partition *part;
    zt_gpt2 *model;          // params (layout.numel) laid out by model->layout
    int is_8bit;
    zt_adamw *opt;           // --optim adamw
    zt_adamw8bit *opt8;      // --optim adamw8bit
    size_t lo, hi;           // this rank's optimizer range of the flat buffer
    int step0;               // where this run began: step and samples (0, or its resume's)
    uint64_t samples0;
    zt_dataset *data;        // the training data, for the manifest's record of where the next
                             // sample is read (NULL: none recorded)
} zt_ckpt_ctx;

// Collective over the world: writes run->dir/step-<step> after `step` completed
// steps (`samples` global training samples consumed): every rank writes the parameters
// and optimizer state of its range [lo, hi) (under --zero 0 only dp rank 0 writes),
// rank 0 the manifest; then DIR/latest names it, and checkpoints beyond --ckpt-keep are
// deleted. Written to DIR/tmp-step-N, fsync'ed, renamed: a crash leaves the previous
// checkpoint intact. ZT_ERR (agreed on every rank) when a file cannot be written.
zt_status zt_ckpt_save(const zt_ckpt_ctx *c, int step, uint64_t samples);

// Collective: loads the checkpoint that `dir` names (a checkpoint directory, whose newest
// complete step-N is taken: what `latest` names, or a newer one committed by a save that
// stopped before updating `latest`; or a step-N directory itself) into this
// rank's parameters and optimizer state, in whatever layout it was written. Sets *step
// (completed steps) and *samples. Verifies every file's checksum first. 8-bit state
// moves exactly where its quantization blocks map onto blocks of the new layout, and is
// requantized (with a message) where they do not. Errors name the file.
zt_status zt_ckpt_resume(const zt_ckpt_ctx *c, const char *dir, int *step, uint64_t *samples);

// Takes the lock of a --ckpt-dir (creating the directory): an exclusive flock on DIR/lock
// and on DIR itself (deleting DIR/lock let a second run in; every save then checks that DIR
// is still the directory locked, else fails: ckpt_lock_verify), kept until zt_ckpt_unlock (the run's end; the kernel drops it when the process dies), with
// the holder's pid, host and start time written in it. A second run is refused (ZT_ERR)
// with a message naming the holder: two runs writing one directory interleave their
// checkpoints and prune each other's. A file system without flock gives a warning and
// *fd = -1. Rank 0, before zt_ckpt_check_dir.
zt_status zt_ckpt_lock(const char *dir, int *fd);
void zt_ckpt_unlock(int fd);

// Collective: only the parameters of the checkpoint `dir` names (resolved and verified as
// zt_ckpt_resume does), into this rank's slice of `m` in whatever layout it runs now; no
// optimizer state is read and nothing is printed (`zerotrain eval`). Sets *step (completed
// steps).
zt_status zt_ckpt_load_weights(const zt_grid *g, zt_gpt2 *m, const char *dir, int *step);

// Removes in `dir` (saying so for each) what stopped runs left: every tmp-step-* (a save
// stopped before its commit: killed, out of disk), every retired-step-* (--ckpt-keep's
// pruning killed) and every step-* without manifest.json holding only files a save writes
// (pruning killed under an older zerotrain); never a complete checkpoint or a directory
// holding anything else. Only by the holder of dir's lock (zt_ckpt_lock with a
// descriptor): then no other run is writing there, so each is provably a dead run's.
zt_status zt_ckpt_remove_interrupted(const char *dir);

// Rank 0, holding dir's lock: finishes what a save of step-`step` left undone when it stopped
// after its commit (killed at the rename of latest.tmp, or in --ckpt-keep's pruning):
// `latest` names step-N (latest.tmp renamed over it) and the complete checkpoints beyond the
// newest `keep` are removed (0: all kept). Says so when `latest` changed. Nothing when
// step-N is not dir's newest complete checkpoint. ZT_ERR when `latest` cannot be written.
zt_status zt_ckpt_finish_commit(const char *dir, int step, int keep);

// Refuses (ZT_ERR) a --ckpt-dir that holds a complete checkpoint newer than `start`, the
// step this run begins at (0, or the resumed one): rolled back to an older step, the new
// run's checkpoints would interleave with the abandoned ones, `latest` would jump between
// them, and --ckpt-keep would delete by step number. A directory that does not exist yet
// passes. Rank 0, before step 1.
zt_status zt_ckpt_check_dir(const char *dir, int start);

// The model shape and the completed steps of the checkpoint `dir` names (as zt_ckpt_resume
// resolves it), from its manifest alone; either output may be NULL.
zt_status zt_ckpt_peek(const char *dir, zt_model_shape *shape, int *step);

// `zerotrain export CKPT --out DIR`: merges a checkpoint from any layout into one Hugging
// Face directory (model.safetensors + config.json), its tensors in `dtype` (ZT_F32: the
// checkpoint's fp32 masters as they are; ZT_BF16: rounded to nearest even). One process.
zt_status zt_ckpt_export(const char *ckpt, const char *out, zt_dtype dtype);

#endif
