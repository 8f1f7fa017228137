// Which BLAS kernels this process runs, and the start-up fix for an OpenBLAS that does not
// recognise the CPU and falls back to its generic kernels (docs/design.md, "BLAS kernels").
#ifndef ZT_BLAS_CORE_H
#define ZT_BLAS_CORE_H

#include <stddef.h>
#include <stdio.h>

// Instruction-set levels, in order: a core's kernels use one, a CPU (with its OS) offers one.
typedef enum {
    ZT_ISA_UNKNOWN = 0, // a core name not in our table: we cannot tell
    ZT_ISA_SSE,         // Katmai ... Nehalem, Opteron, Prescott: the generic x86-64 kernels
    ZT_ISA_AVX,         // Sandybridge, Bulldozer
    ZT_ISA_AVX2,        // Haswell, Zen (AVX2 + FMA)
    ZT_ISA_AVX512,      // SkylakeX, Cooperlake, SapphireRapids
} zt_isa;

// Who chose the core that runs.
typedef enum {
    ZT_BLAS_BY_LIBRARY = 0, // OpenBLAS's own detection (OPENBLAS_CORETYPE unset or empty)
    ZT_BLAS_BY_USER,        // the user's non-empty OPENBLAS_CORETYPE (always wins over ours)
    ZT_BLAS_BY_ZEROTRAIN,   // zt_blas_init re-executed the program with OPENBLAS_CORETYPE set
} zt_blas_origin;

typedef struct {
    char config[160];       // openblas_get_config(): version and build options
    char core[32];          // openblas_get_corename(): the kernels that run
    char library_core[32];  // ZT_BLAS_BY_ZEROTRAIN: what the library had picked itself
    zt_isa core_isa;        // the level the running kernels use
    zt_isa cpu_isa;         // the best level this CPU and OS support
    int cpu_bf16;           // AVX512-BF16 (Cooperlake and later)
    zt_blas_origin origin;
    int generic;            // 1: the kernels are below what the CPU offers and it has AVX2+
} zt_blas_info;

// Call first in main(), before MPI_Init and before any BLAS call, with main's argv. Where
// the library chose a core below what the CPU offers (and the CPU has AVX2 or better), the
// user did not set OPENBLAS_CORETYPE (empty counts as not set) and this process was not
// re-executed yet, it sets OPENBLAS_CORETYPE to the core that zt_blas_core_for picks and
// re-executes the same binary with the same argv (same pid, so mpirun still knows the
// rank); it does not return then. Otherwise (or if the exec fails, with a warning on
// stderr) it returns and the process runs on. The marker ZT_BLAS_REEXEC="<pid>:<library's
// core>" prevents a second re-exec. ZT_BLAS_EMULATE_FALLBACK=1 (tests, benches) treats an
// OPENBLAS_CORETYPE that is set as the library's own choice, to emulate a library that
// does not know the CPU.
void zt_blas_init(char **argv);
// Takes back what zt_blas_init set in this process (OPENBLAS_CORETYPE, the marker, and the
// OpenMP wait policy's), leaving the user's values.
void zt_blas_unset_env(void);

// The user's OPENBLAS_CORETYPE, or NULL where unset or empty (empty is no choice).
const char *zt_blas_user_coretype(void);

// The state of this process (the same every call). Owned by this module.
const zt_blas_info *zt_blas_info_get(void);

// One line, e.g. "OpenBLAS 0.3.21 core Cooperlake (library's choice; CPU: AVX-512, bf16)".
void zt_blas_describe(char *buf, size_t size);

// Writes one JSON object (no newline), e.g. {"blas":"OpenBLAS 0.3.21 ...","blas_core":...}.
void zt_blas_write_json(FILE *f);

// The pure parts, for tests: the level of an OpenBLAS core name (case-insensitive;
// ZT_ISA_UNKNOWN if not in the table), the OpenBLAS core for a CPU level (NULL below AVX),
// and a level's name.
zt_isa zt_blas_core_isa(const char *core);
const char *zt_blas_core_for(zt_isa cpu, int bf16);
const char *zt_isa_name(zt_isa isa);

#endif
