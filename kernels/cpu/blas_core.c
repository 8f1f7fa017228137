// Owns the choice of OpenBLAS kernels: which core runs, and the re-exec that replaces a
// generic fallback with the core the CPU supports (why a re-exec: docs/design.md,
// "BLAS kernels").
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels once, in a library
// constructor that runs before main(), from CPUID or from OPENBLAS_CORETYPE. 0.3.21 does
// not know recent Xeons (model 207: Emerald Rapids) and falls back to Prescott (SSE3),
// 3.5-4.4x slower per training step. Nothing this program does after the constructor
// changes the choice, so the fix sets OPENBLAS_CORETYPE and executes the same binary again.
#include "blas_core.h"

#include <cblas.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "launcher.h"
#include "omp_policy.h"

#define MARKER_ENV "ZT_BLAS_REEXEC"
#define EMULATE_ENV "ZT_BLAS_EMULATE_FALLBACK"

static zt_blas_info g_info;
static int g_have_info;

// OpenBLAS's core names (driver/others/dynamic.c) and the instruction set of their
// single-precision kernels.
static const struct {
    const char *name;
    zt_isa isa;
} k_cores[] = {
    {"Unknown", ZT_ISA_SSE},      {"generic", ZT_ISA_SSE},        {"Katmai", ZT_ISA_SSE},
    {"Coppermine", ZT_ISA_SSE},   {"Northwood", ZT_ISA_SSE},      {"Prescott", ZT_ISA_SSE},
    {"Banias", ZT_ISA_SSE},       {"Atom", ZT_ISA_SSE},           {"Core2", ZT_ISA_SSE},
    {"Penryn", ZT_ISA_SSE},       {"Dunnington", ZT_ISA_SSE},     {"Nehalem", ZT_ISA_SSE},
    {"Athlon", ZT_ISA_SSE},       {"Opteron", ZT_ISA_SSE},        {"Opteron_SSE3", ZT_ISA_SSE},
    {"Barcelona", ZT_ISA_SSE},    {"Nano", ZT_ISA_SSE},           {"Bobcat", ZT_ISA_SSE},
    {"Sandybridge", ZT_ISA_AVX},  {"Bulldozer", ZT_ISA_AVX},      {"Piledriver", ZT_ISA_AVX},
    {"Steamroller", ZT_ISA_AVX},  {"Haswell", ZT_ISA_AVX2},       {"Excavator", ZT_ISA_AVX2},
    {"Zen", ZT_ISA_AVX2},         {"SkylakeX", ZT_ISA_AVX512},    {"Cooperlake", ZT_ISA_AVX512},
    {"SapphireRapids", ZT_ISA_AVX512},
};

zt_isa zt_blas_core_isa(const char *core) {
    if (!core) return ZT_ISA_UNKNOWN;
    for (size_t i = 0; i < sizeof k_cores / sizeof k_cores[0]; i++)
        if (strcasecmp(core, k_cores[i].name) == 0) return k_cores[i].isa;
    return ZT_ISA_UNKNOWN;
}

// Cooperlake is what 0.3.21 itself picks for an AVX512-BF16 CPU it knows (and for model
// 207 when OPENBLAS_CORETYPE is set at all); its sgemm kernels are SkylakeX's.
// SapphireRapids adds only bf16 (AMX) kernels that fp32 training does not use, and not
// every build has it, so it is not chosen.
const char *zt_blas_core_for(zt_isa cpu, int bf16) {
    switch (cpu) {
    case ZT_ISA_AVX512: return bf16 ? "Cooperlake" : "SkylakeX";
    case ZT_ISA_AVX2: return "Haswell";
    case ZT_ISA_AVX: return "Sandybridge";
    default: return NULL;
    }
}

const char *zt_isa_name(zt_isa isa) {
    switch (isa) {
    case ZT_ISA_SSE: return "SSE";
    case ZT_ISA_AVX: return "AVX";
    case ZT_ISA_AVX2: return "AVX2";
    case ZT_ISA_AVX512: return "AVX-512";
    default: return "unknown";
    }
}

// gcc's checks include the OS's support (XCR0), as OpenBLAS's do. The AVX-512 kernels use
// the F, CD, BW, DQ and VL subsets (Skylake-SP and later have them all).
static zt_isa cpu_isa(int *bf16) {
    __builtin_cpu_init();
    *bf16 = __builtin_cpu_supports("avx512bf16") != 0;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return ZT_ISA_AVX512;
    *bf16 = 0;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ZT_ISA_AVX2;
    if (__builtin_cpu_supports("avx")) return ZT_ISA_AVX;
    return ZT_ISA_SSE;
}

// An empty OPENBLAS_CORETYPE is no choice (how `VAR=${X:-}` spells "not set"), while
// OpenBLAS reads it as an unknown name: 0.3.21 then takes the best core the CPU's flags
// allow, older releases Prescott. So it counts as unset: the library's pick, and fixed
// where that pick is below the CPU.
const char *zt_blas_user_coretype(void) {
    const char *v = getenv("OPENBLAS_CORETYPE");
    return v && *v ? v : NULL;
}

static void query(zt_blas_info *in) {
    memset(in, 0, sizeof *in);
    snprintf(in->config, sizeof in->config, "%s", openblas_get_config());
    snprintf(in->core, sizeof in->core, "%s", openblas_get_corename());
    in->core_isa = zt_blas_core_isa(in->core);
    in->cpu_isa = cpu_isa(&in->cpu_bf16);
    // The marker counts only in the process that set it (exec keeps the pid): a marker
    // inherited from elsewhere is stale.
    const char *marker = getenv(MARKER_ENV), *user = zt_blas_user_coretype();
    const char *emulate = getenv(EMULATE_ENV);
    long pid = -1;
    char lib[32] = "";
    if (marker && sscanf(marker, "%ld:%31s", &pid, lib) >= 1 && pid == (long)getpid()) {
        in->origin = ZT_BLAS_BY_ZEROTRAIN;
        snprintf(in->library_core, sizeof in->library_core, "%s", lib);
    } else if (user && !(emulate && strcmp(emulate, "1") == 0)) {
        in->origin = ZT_BLAS_BY_USER;
    } else {
        in->origin = ZT_BLAS_BY_LIBRARY;
    }
    in->generic = in->cpu_isa >= ZT_ISA_AVX2 && in->core_isa != ZT_ISA_UNKNOWN &&
                  in->core_isa < in->cpu_isa;
}

const zt_blas_info *zt_blas_info_get(void) {
    if (!g_have_info) {
        query(&g_info);
        g_have_info = 1;
    }
    return &g_info;
}

// "OpenBLAS 0.3.21" from "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...".
static void library_name(const zt_blas_info *in, char *buf, size_t size) {
    const char *s = in->config, *sp = strchr(s, ' ');
    if (sp) sp = strchr(sp + 1, ' ');
    size_t n = sp ? (size_t)(sp - s) : strlen(s);
    snprintf(buf, size, "%.*s", (int)n, s);
}

void zt_blas_describe(char *buf, size_t size) {
    const zt_blas_info *in = zt_blas_info_get();
    char lib[64], why[96];
    library_name(in, lib, sizeof lib);
    if (in->origin == ZT_BLAS_BY_ZEROTRAIN)
        snprintf(why, sizeof why, "set by zerotrain: the library picked %s", in->library_core);
    else if (in->origin == ZT_BLAS_BY_USER)
        snprintf(why, sizeof why, "OPENBLAS_CORETYPE=%.40s", zt_blas_user_coretype());
    else
        snprintf(why, sizeof why, "the library's choice");
    snprintf(buf, size, "%s core %s (%s; CPU: %s%s)%s", lib, in->core, why,
             zt_isa_name(in->cpu_isa), in->cpu_bf16 ? " with BF16" : "",
             in->generic ? ": SLOW, below what the CPU offers" : "");
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++)
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s >= 0x20) fputc(*s, f);
    fputc('"', f);
}

void zt_blas_write_json(FILE *f) {
    const zt_blas_info *in = zt_blas_info_get();
    static const char *const by[] = {"library", "user", "zerotrain"};
    char lib[64];
    library_name(in, lib, sizeof lib);
    fputs("{\"blas\":", f);
    json_string(f, lib);
    fputs(",\"blas_core\":", f);
    json_string(f, in->core);
    fprintf(f, ",\"blas_core_by\":\"%s\"", by[in->origin]);
    if (in->origin == ZT_BLAS_BY_ZEROTRAIN) {
        fputs(",\"blas_library_core\":", f);
        json_string(f, in->library_core);
    }
    fprintf(f, ",\"blas_generic\":%s,\"cpu_isa\":\"%s\",\"cpu_bf16\":%s,\"blas_config\":",
            in->generic ? "true" : "false", zt_isa_name(in->cpu_isa),
            in->cpu_bf16 ? "true" : "false");
    json_string(f, in->config);
    fputs(",\"omp_wait_policy\":", f); // last: tools read the fields above in this order
    json_string(f, zt_omp_policy_describe());
    fputc('}', f);
}

// Only a core zerotrain chose is taken back: the re-exec happens only where the user chose
// none (unset or empty, which count alike).
void zt_blas_unset_env(void) {
    if (zt_blas_info_get()->origin == ZT_BLAS_BY_ZEROTRAIN) {
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv(MARKER_ENV);
    }
    zt_omp_policy_unset_env();
}

void zt_blas_init(char **argv) {
    zt_omp_policy_init(argv); // the process's other start-up fix (may re-execute first)
    const zt_blas_info *in = zt_blas_info_get();
    int speak = zt_launcher_rank() == 0; // only the first rank warns
    const char *target = zt_blas_core_for(in->cpu_isa, in->cpu_bf16);
    if (!in->generic || !target) return;
    if (in->origin == ZT_BLAS_BY_USER) {
        if (speak)
            fprintf(stderr, "zerotrain: warning: OPENBLAS_CORETYPE=%s (yours) runs OpenBLAS's "
                            "%s kernels on a CPU with %s: unset it to let zerotrain choose %s\n",
                    zt_blas_user_coretype(), in->core, zt_isa_name(in->cpu_isa), target);
        return;
    }
    if (in->origin == ZT_BLAS_BY_ZEROTRAIN) { // re-executed, and the library ignored us
        if (speak)
            fprintf(stderr, "zerotrain: warning: OpenBLAS runs its %s kernels on a CPU with %s "
                            "even with OPENBLAS_CORETYPE=%s: this build lacks those kernels; "
                            "expect slow products\n",
                    in->core, zt_isa_name(in->cpu_isa), target);
        return;
    }
    char marker[128];
    snprintf(marker, sizeof marker, "%ld:%s", (long)getpid(), in->core);
    const char *old = getenv("OPENBLAS_CORETYPE");
    char saved[64];
    snprintf(saved, sizeof saved, "%s", old ? old : "");
    if (setenv(MARKER_ENV, marker, 1) != 0 || setenv("OPENBLAS_CORETYPE", target, 1) != 0)
        return;
    fflush(NULL);
    // /proc/self/exe is the running file itself; AT_EXECFN (the path the kernel was
    // given) where /proc is not mounted.
    execv("/proc/self/exe", argv);
    int err = errno;
    const char *fn = (const char *)getauxval(AT_EXECFN);
    if (fn) {
        execv(fn, argv);
        err = errno;
    }
    if (old) setenv("OPENBLAS_CORETYPE", saved, 1);
    else unsetenv("OPENBLAS_CORETYPE");
    unsetenv(MARKER_ENV);
    if (speak)
        fprintf(stderr, "zerotrain: warning: OpenBLAS chose its %s kernels on a CPU with %s and "
                        "re-executing with OPENBLAS_CORETYPE=%s failed (%s): running on, slower; "
                        "set OPENBLAS_CORETYPE=%s yourself\n",
                in->core, zt_isa_name(in->cpu_isa), target, strerror(err), target);
}
