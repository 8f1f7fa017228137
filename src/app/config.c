// zt_config_parse: the defaults (some from the environment), then the --config file, then the
// flags, then the preset.
#include "config.h"

#include "comm_mpi.h"
#include "config_options.h"

#include <stdlib.h>
#include <string.h>

static void set_defaults(zt_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < ZT_N_OPTS; i++) {
        if (!zt_opts[i].def[0]) { // not set: a string's "" (memset), an enum's ZT_NOT_GIVEN
            if (zt_opts[i].type == OPT_ENUM)
                *(int *)((char *)cfg + zt_opts[i].offset) = ZT_NOT_GIVEN;
            continue;
        }
        zt_status st = zt_opt_set_text(cfg, &zt_opts[i], zt_opts[i].def, zt_opts[i].name);
        ZT_ASSERTF(st == ZT_OK, "bad default for --%s: %s", zt_opts[i].name, zt_error_message());
    }
}

// Options whose default is an environment variable where it is set (and not empty): the
// runtime knobs scripts and launchers give every rank (mpirun -x). The MPI backend's settings
// keep their texts for its parser (zt_config_comm_settings), which names a bad one.
static const struct {
    const char *option;
    int comm; // a zt_comm_setting, or -1: the variable is named here
    const char *env;
} k_env_defaults[] = {
    {"comm-algo", ZT_COMM_SET_ALGO, NULL},
    {"comm-stage-kib", ZT_COMM_SET_STAGE_KIB, NULL},
    {"comm-max-count", ZT_COMM_SET_MAX_COUNT, NULL},
    {"comm-timeout", ZT_COMM_SET_TIMEOUT, NULL},
    {"comm-timeout-floor", ZT_COMM_SET_TIMEOUT_FLOOR, NULL},
    {"cuda-attention", -1, "ZT_CUDA_ATTENTION"},
};

static zt_status env_defaults(zt_config *cfg) {
    for (size_t i = 0; i < sizeof k_env_defaults / sizeof k_env_defaults[0]; i++) {
        const char *var = k_env_defaults[i].comm >= 0
                              ? zt_comm_mpi_env_names[k_env_defaults[i].comm]
                              : k_env_defaults[i].env;
        const char *v = getenv(var);
        if (!v || !*v) continue;
        const opt_desc *o = zt_opt_find(k_env_defaults[i].option, strlen(k_env_defaults[i].option));
        ZT_ASSERT(o);
        ZT_TRY(zt_opt_set_text(cfg, o, v, var));
    }
    return ZT_OK;
}

void zt_config_keep_only(zt_config *cfg, const char *const *keep) {
    zt_config def;
    set_defaults(&def);
    for (int i = 0; i < ZT_N_OPTS; i++) {
        const opt_desc *o = &zt_opts[i];
        int kept = 0;
        for (const char *const *k = keep; *k && !kept; k++) kept = strcmp(*k, o->name) == 0;
        if (!kept)
            memcpy((char *)cfg + o->offset, (const char *)&def + o->offset, o->size);
    }
}

zt_status zt_config_parse(zt_config *cfg, int argc, char **argv) {
    unsigned char set[ZT_N_OPTS] = {0}; // given explicitly (file or flag): the preset keeps off
    set_defaults(cfg);
    ZT_TRY(env_defaults(cfg));

    // Pass 1 finds --config and checks every flag's spelling: the file is read before
    // any flag applies, so flags override it wherever --config stands.
    const char *config_path = NULL;
    for (int i = 0; i < argc;) {
        zt_flag_arg f;
        ZT_TRY(zt_flag_next(argc, argv, &i, &f));
        if (!f.opt) config_path = f.value;
    }
    if (config_path) {
        ZT_TRY(zt_config_file_apply(cfg, config_path, set));
        snprintf(cfg->config, sizeof cfg->config, "%s", config_path);
    }

    // Pass 2 applies the flags in order, so a repeated flag takes its last value.
    for (int i = 0; i < argc;) {
        zt_flag_arg f;
        ZT_TRY(zt_flag_next(argc, argv, &i, &f));
        if (!f.opt) continue;
        char where[64];
        snprintf(where, sizeof where, "--%s", f.opt->name);
        ZT_TRY(zt_opt_set_text(cfg, f.opt, f.value, where));
        set[f.opt - zt_opts] = 1;
    }
    cfg->shape_given = zt_shape_given(set);
    return zt_preset_apply(cfg, set);
}
