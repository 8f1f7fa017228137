// `zerotrain --help`'s options: every option of the table by group, with its default.
#include "config_options.h"

#include <string.h>

static void help_line(FILE *f, const char *name, const char *meta, const char *help) {
    char left[64];
    snprintf(left, sizeof left, "--%s%s%s", name, meta[0] ? " " : "", meta);
    fprintf(f, "  %-22s %s", left, help);
}

void zt_config_print_help(FILE *f) {
    fprintf(f, "options (a JSON file given by --config takes the same keys without \"--\";\n"
               "flags override it wherever they stand):\n");
    help_line(f, "config", "FILE", "read options from this JSON file first\n");
    const char *group = NULL;
    for (int i = 0; i < ZT_N_OPTS; i++) {
        const opt_desc *o = &zt_opts[i];
        if (!group || strcmp(group, o->group) != 0) {
            group = o->group;
            fprintf(f, "\n%s:\n", group);
        }
        help_line(f, o->name, o->meta, o->help);
        if (o->choices || o->names) {
            char list[128];
            zt_opt_list_names(o, " | ", list, sizeof list);
            fprintf(f, ": %s", list);
        }
        if (o->from_preset)
            fputs(" (default from --model)\n", f);
        else
            fprintf(f, o->def[0] ? " (default %s)\n" : " (not set by default)\n", o->def);
        if (o->offset == offsetof(zt_config, model)) {
            for (int p = 0; p < zt_n_presets; p++) {
                const zt_config *s = &zt_presets[p].shape;
                fprintf(f, "  %-22s   %-12s L=%d NH=%d C=%d V=%d n_ctx=%d\n", "",
                        zt_presets[p].name, s->n_layer, s->n_head, s->n_embd, s->vocab,
                        s->n_ctx);
            }
        }
    }
}
