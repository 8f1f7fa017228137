// zt_config_parse: the defaults, then the --config file, then the flags, then the preset.
#include "config.h"

#include "config_options.h"

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
