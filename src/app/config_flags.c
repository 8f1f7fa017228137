// The command line's option flags: `--name value`, `--name=value`, bare bools, and --config.
#include "config_options.h"

#include <string.h>

// Reads the flag at argv[*i] (and its value) and advances *i past them. Values given
// as the next argument may not start with "--": that is almost always a forgotten
// value, as in `--data --steps 10`.
zt_status zt_flag_next(int argc, char **argv, int *i, zt_flag_arg *f) {
    const char *a = argv[*i];
    // The command answers --help before parsing; reaching here means it stood among
    // other options, and "did you mean --seq?" would only confuse.
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
        return zt_errorf("%s is not a run option: run `zerotrain --help` on its own to list "
                         "the options",
                         a);
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0' || a[2] == '=') {
        // A bool flag takes no separate value; say so when that is the mistake.
        if (*i > 0 && strncmp(argv[*i - 1], "--", 2) == 0 && !strchr(argv[*i - 1], '=')) {
            const char *prev = argv[*i - 1] + 2;
            const opt_desc *po = zt_opt_find(prev, strlen(prev));
            if (po && po->type == OPT_BOOL)
                return zt_errorf("unexpected argument '%s' after --%s: a bool flag takes no "
                                 "separate value; write --%s=%s",
                                 a, po->name, po->name, a);
        }
        return zt_errorf("unexpected argument '%s': options are written --name value or "
                         "--name=value (zerotrain --help lists them)",
                         a);
    }
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    int is_config = len == 6 && strncmp(name, "config", 6) == 0;
    const opt_desc *o = is_config ? NULL : zt_opt_find(name, len);
    if (!is_config && !o) {
        const char *s = zt_opt_suggest(name, len, 1);
        if (s)
            return zt_errorf("unknown option --%.*s; did you mean --%s? (zerotrain --help "
                             "lists all)",
                             (int)len, name, s);
        return zt_errorf("unknown option --%.*s (zerotrain --help lists all)", (int)len, name);
    }
    f->opt = o;
    if (eq) {
        f->value = eq + 1;
        *i += 1;
    } else if (o && o->type == OPT_BOOL) {
        f->value = "true";
        *i += 1;
    } else {
        const char *nm = o ? o->name : "config";
        if (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0)
            return zt_errorf("option --%s is missing its value: write --%s %s", nm, nm,
                             o ? o->meta : "FILE");
        f->value = argv[*i + 1];
        *i += 2;
    }
    return ZT_OK;
}
