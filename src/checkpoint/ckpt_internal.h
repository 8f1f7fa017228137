// What the checkpoint files share (src/checkpoint/ckpt_save.c writes, src/checkpoint/ckpt_load.c finds, verifies
// and loads, src/checkpoint/ckpt_state.c maps a rank's state): the format's constants, and the host
// views and index arithmetic of both sides. docs/checkpoints.md has the
// format; in short:
//
//   DIR/latest                       "step-N\n": the newest complete checkpoint
//   DIR/lock                         held by the run writing into DIR
//   DIR/step-N/manifest.json         step, data position, run start, seed, optimizer t,
//                                    config, layout, model shape, tensors, files + XXH3-64
//                                    (version 1, still read: FNV-1a 64)
//   DIR/step-N/manifest.json.xxh3    the manifest's XXH3-64 (version 3)
//   DIR/step-N/shard-ppP-tpT-dpD.safetensors
//       one per writing rank; every tensor key is a segment
//           "<hf name>|<kind>|<g>|<phase>|<blk>|<rest>"
//       holding global elements [g, g + n) of the tensor (row-major in zerotrain's global
//       shape: the manifest's), n = the stored length. kind: param, m, v (fp32), qm, qv
//       (uint8 codes), am, av (fp32 absmax of the codes' blocks). For 8-bit segments:
//       element j belongs to the writer's quantization block blk + (phase + j) / B, whose
//       absmax is am[(phase + j) / B]; `rest` elements remain from the segment start to
//       the end of the writer's piece (so a block's length is known).
#ifndef ZT_CKPT_INTERNAL_H
#define ZT_CKPT_INTERNAL_H

#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "ckpt.h"

#define CKPT_FORMAT "zerotrain-checkpoint"

// The manifest's names of the run's optimizer and parameter dtype ("config": "optim",
// "param_dtype"; docs/checkpoints.md).
static inline const char *ckpt_optim_name(const zt_ckpt_ctx *c) {
    return c->is_8bit ? "adamw8bit" : "adamw";
}
static inline const char *ckpt_param_dtype_name(const zt_ckpt_ctx *c) {
    return c->model->dtype == ZT_BF16 ? "bf16" : "fp32";
}
// Version 3: manifest.json sealed by its XXH3-64 in manifest.json.xxh3, and "run_start"
// (the step and samples this run began at) for the cross-check of samples.
// Version 2: files checksummed with XXH3-64 ("checksum": "xxh3-64", per file "digest").
// Version 1 (FNV-1a 64, per file "fnv1a64") and 2 are still read (their manifests
// unverified, with a note), so nothing saved is lost.
#define CKPT_VERSION 3
// The 8-bit second moment's code map (manifest "optimizer": "v_map"): kernels/quant8_math.h's
// unsigned map, whose smallest code is ZT_Q8_V_FLOOR where bitsandbytes' has 0 (issue 41).
// A manifest without the key was written with bitsandbytes' map; docs/checkpoints.md says
// how it loads.
#define CKPT_V_MAP "dynamic-floor"
#define CKPT_MANIFEST "manifest.json"
#define CKPT_MANIFEST_SUM "manifest.json.xxh3" // "<16 hex digits>  manifest.json\n"
#define CKPT_CHECKSUM "xxh3-64"
#define PATHN 4096
// DIR/lock: flock'ed by the run writing into DIR (rank 0), for its whole life; it holds
// "pid P on host H, started T" of that run (ckpt_lock.c)
#define CKPT_LOCK "lock"
#define CKPT_RETIRED "retired-step-" // a step-N being removed (ckpt_save.c, retire_step)

// Host views of one rank's state (the save reads them, the resume writes them).
typedef struct {
    float *params;
    float *m, *v;                 // adamw
    float *m32, *v32, *am, *av;   // adamw8bit
    uint8_t *qm, *qv;
} ckpt_host_state;

// Maps every buffer of the rank's state (read: with its values; else zeros to fill) and
// gives the views back (write: store them into the buffers). Every access to parameters
// and optimizer state goes through the backend's map / unmap (kernels/backend.h): host
// memory itself on the CPU, a host copy on a GPU.
void ckpt_map_state(const zt_ckpt_ctx *c, ckpt_host_state *h, int read);
void ckpt_unmap_state(const zt_ckpt_ctx *c, ckpt_host_state *h, int write);

// A run of local elements [i, i + n) of tensor t whose global indices are contiguous,
// starting at *g; returns n. Rows are contiguous in both, so it walks row starts.
size_t ckpt_run_len(const zt_layout *lay, const zt_tensor_desc *t, size_t i, size_t end,
                    size_t *g);

// Elements of tensor t in the checkpoint: the global count without vocabulary padding.
size_t ckpt_stored_numel(const zt_tensor_desc *t, const zt_model_shape *s);

// A regular file (a directory named manifest.json or latest is not one).
static inline int ckpt_file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

// Whether this process holds the lock of `dir` (ckpt_lock.c).
int ckpt_lock_holds(const char *dir);

// Rank 0, before each save and again before its commit: ZT_OK unless this process locked
// `dir` and the path no longer names the directory it locked (moved, removed or replaced:
// a second run may write the new one): ZT_ERR then.
zt_status ckpt_lock_verify(const char *dir);

static inline double ckpt_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
