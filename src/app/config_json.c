// The resolved options as one JSON object (the --log's first record): every option of the
// table under its flag name, with the value the run uses.
#include "config_options.h"

#include <stdlib.h>

// The fewest significant digits (6 to 9) that read back as the same float: 6e-4, not
// 0.000600000028 (9 digits always do).
static void write_float(FILE *f, float x) {
    char buf[32];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, x);
        if ((float)strtod(buf, NULL) == x) break;
    }
    fputs(buf, f);
}

void zt_config_write_json(FILE *f, const zt_config *cfg) {
    fputc('{', f);
    for (int i = 0; i < ZT_N_OPTS; i++) {
        const opt_desc *o = &zt_opts[i];
        const void *v = (const char *)cfg + o->offset;
        fprintf(f, "%s\"%s\":", i ? "," : "", o->name);
        switch (o->type) {
        case OPT_INT: fprintf(f, "%d", *(const int *)v); break;
        case OPT_FLOAT: write_float(f, *(const float *)v); break;
        case OPT_U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)v); break;
        case OPT_BOOL: fputs(*(const int *)v ? "true" : "false", f); break;
        case OPT_STR: // "" is "not given" (no --data: the embedded default text)
            if (*(const char *)v) zt_json_string(f, v);
            else fputs("null", f);
            break;
        case OPT_ENUM: { // ZT_NOT_GIVEN: null, as an unset string
            const char *name = zt_opt_enum_name(o, *(const int *)v);
            if (name) zt_json_string(f, name);
            else fputs("null", f);
            break;
        }
        }
    }
    fputc('}', f);
}
