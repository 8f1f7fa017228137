// Tests of the BLAS kernel choice (kernels/cpu/blas_core.c): the core table, the core chosen for a
// CPU, and that this test binary itself does not run generic kernels on an AVX2+ CPU.
#include <string.h>

#include "blas_core.h"
#include "test.h"

// The table: OpenBLAS's names (any case) map to the level of their kernels; an unknown
// name is "unknown", never "generic".
ZT_TEST(blas_core_table) {
    CHECK_EQ_INT(zt_blas_core_isa("Prescott"), ZT_ISA_SSE);
    CHECK_EQ_INT(zt_blas_core_isa("PRESCOTT"), ZT_ISA_SSE);
    CHECK_EQ_INT(zt_blas_core_isa("Core2"), ZT_ISA_SSE);
    CHECK_EQ_INT(zt_blas_core_isa("Katmai"), ZT_ISA_SSE);
    CHECK_EQ_INT(zt_blas_core_isa("Nehalem"), ZT_ISA_SSE);
    CHECK_EQ_INT(zt_blas_core_isa("Sandybridge"), ZT_ISA_AVX);
    CHECK_EQ_INT(zt_blas_core_isa("Haswell"), ZT_ISA_AVX2);
    CHECK_EQ_INT(zt_blas_core_isa("Zen"), ZT_ISA_AVX2);
    CHECK_EQ_INT(zt_blas_core_isa("SkylakeX"), ZT_ISA_AVX512);
    CHECK_EQ_INT(zt_blas_core_isa("cooperlake"), ZT_ISA_AVX512);
    CHECK_EQ_INT(zt_blas_core_isa("SapphireRapids"), ZT_ISA_AVX512);
    CHECK_EQ_INT(zt_blas_core_isa("NotACore"), ZT_ISA_UNKNOWN);
    CHECK_EQ_INT(zt_blas_core_isa(NULL), ZT_ISA_UNKNOWN);
    // the core chosen for each CPU level runs kernels of exactly that level
    for (int isa = ZT_ISA_AVX; isa <= ZT_ISA_AVX512; isa++)
        for (int bf16 = 0; bf16 <= 1; bf16++) {
            const char *c = zt_blas_core_for((zt_isa)isa, bf16 && isa == ZT_ISA_AVX512);
            CHECK(c != NULL);
            CHECK_EQ_INT(zt_blas_core_isa(c), isa);
        }
    CHECK(strcmp(zt_blas_core_for(ZT_ISA_AVX512, 1), "Cooperlake") == 0);
    CHECK(strcmp(zt_blas_core_for(ZT_ISA_AVX512, 0), "SkylakeX") == 0);
    CHECK(zt_blas_core_for(ZT_ISA_SSE, 0) == NULL);
    return ZT_PASS;
}

// This binary called zt_blas_init first thing, as zerotrain does: on a CPU with AVX2 or
// better the kernels that run must be of the CPU's level (SKIP on older CPUs). Tests
// zerotrain's choice, so SKIPs where the user made one with OPENBLAS_CORETYPE: that choice
// is kept on purpose (tests/sh/blas_core.sh checks how).
ZT_TEST(blas_core_not_generic) {
    const zt_blas_info *in = zt_blas_info_get();
    char line[512];
    zt_blas_describe(line, sizeof line);
    printf("  %s\n", line);
    if (in->cpu_isa < ZT_ISA_AVX2) {
        printf("  SKIP: the CPU has %s, below AVX2: nothing to choose\n", zt_isa_name(in->cpu_isa));
        return ZT_SKIP;
    }
    if (in->origin == ZT_BLAS_BY_USER) {
        printf("  SKIP: OPENBLAS_CORETYPE=%s is the user's choice, not zerotrain's\n",
               zt_blas_user_coretype());
        return ZT_SKIP;
    }
    CHECK(in->core[0] != '\0');
    if (in->core_isa == ZT_ISA_UNKNOWN) {
        fprintf(stderr, "  OpenBLAS core '%s' is not in kernels/cpu/blas_core.c's table\n", in->core);
        return ZT_FAIL;
    }
    CHECK(!in->generic);
    CHECK(in->core_isa >= in->cpu_isa);
    return ZT_PASS;
}
