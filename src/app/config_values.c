// An option's value into its zt_config field, from text: defaults and flag values.
#include "config_options.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

zt_status zt_opt_set_string(zt_config *cfg, const opt_desc *o, const char *s,
                            const char *where) {
    size_t n = strlen(s);
    if (n == 0) // the usual cause: an unset shell variable; "" must not mean "not given"
        return zt_errorf("%s is empty: give it a value, or leave it out for its default", where);
    if (n >= o->size)
        return zt_errorf("%s: the value is %zu characters long, but %s holds at most %zu: "
                         "use a shorter value",
                         where, n, o->name, o->size - 1);
    memcpy((char *)cfg + o->offset, s, n + 1);
    return ZT_OK;
}

zt_status zt_opt_set_enum(zt_config *cfg, const opt_desc *o, const char *name,
                          const char *where) {
    ZT_ASSERTF(o->size == sizeof(int), "enum option %s has a field of %zu bytes", o->name,
               o->size);
    for (const zt_enum_name *e = o->names; e->name; e++) {
        if (strcmp(name, e->name) == 0) {
            *(int *)((char *)cfg + o->offset) = e->value;
            return ZT_OK;
        }
    }
    if (!name[0]) // the usual cause: an unset shell variable
        return zt_errorf("%s is empty: give it a value, or leave it out for its default", where);
    char list[128];
    zt_opt_list_names(o, ", ", list, sizeof list);
    return zt_errorf("%s '%s' is not known: use one of %s", where, name, list);
}

// Parses a flag value (or a default) for option `o`; `where` names it in messages
// ("--lr"). Rejects empty text, leading spaces, trailing characters and overflow.
zt_status zt_opt_set_text(zt_config *cfg, const opt_desc *o, const char *s, const char *where) {
    void *field = (char *)cfg + o->offset;
    char *end = NULL;
    switch (o->type) {
    case OPT_STR: return zt_opt_set_string(cfg, o, s, where);
    case OPT_ENUM: return zt_opt_set_enum(cfg, o, s, where);
    case OPT_BOOL:
        if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0) {
            *(int *)field = 1;
        } else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0) {
            *(int *)field = 0;
        } else {
            return zt_errorf("%s: '%s' is not a bool: write --%s, --%s=true or --%s=false",
                             where, s, o->name, o->name, o->name);
        }
        return ZT_OK;
    case OPT_INT:
    case OPT_U64: {
        const char *kind = o->type == OPT_INT ? "an integer" : "a non-negative integer";
        // strtoull silently wraps "-1" to 2^64-1, so a sign is checked by hand.
        if (!*s || isspace((unsigned char)*s) || (o->type == OPT_U64 && *s == '-'))
            return zt_errorf("%s: '%s' is not %s: write a whole number, e.g. --%s %s", where, s,
                             kind, o->name, o->def);
        errno = 0;
        long long v = 0;
        unsigned long long u = 0;
        if (o->type == OPT_INT)
            v = strtoll(s, &end, 10);
        else
            u = strtoull(s, &end, 10);
        if (end == s)
            return zt_errorf("%s: '%s' is not %s: write a whole number, e.g. --%s %s", where, s,
                             kind, o->name, o->def);
        if (*end)
            return zt_errorf("%s: '%s' has '%s' after the number: write %s only, e.g. --%s %s",
                             where, s, end, kind, o->name, o->def);
        if (errno == ERANGE || (o->type == OPT_INT && (v < INT_MIN || v > INT_MAX)))
            return zt_errorf("%s: %s is out of range for %s", where, s,
                             o->type == OPT_INT ? "an int" : "a 64-bit unsigned integer");
        if (o->type == OPT_INT)
            *(int *)field = (int)v;
        else
            *(uint64_t *)field = (uint64_t)u;
        return ZT_OK;
    }
    case OPT_FLOAT: {
        if (!*s || isspace((unsigned char)*s))
            return zt_errorf("%s: '%s' is not a number: write e.g. --%s %s", where, s, o->name,
                             o->def);
        // errno is not consulted: ERANGE on underflow is harmless (the value rounds to 0
        // or a denormal and validation judges it); overflow shows as a non-finite value.
        double v = strtod(s, &end);
        if (end == s)
            return zt_errorf("%s: '%s' is not a number: write e.g. --%s %s", where, s, o->name,
                             o->def);
        if (*end)
            return zt_errorf("%s: '%s' has '%s' after the number: write a number only, "
                             "e.g. --%s %s",
                             where, s, end, o->name, o->def);
        if (!isfinite(v) || fabs(v) > FLT_MAX)
            return zt_errorf("%s: %s is not a finite 32-bit float: write a number of at most "
                             "3.4e38 in size, e.g. --%s %s", where, s, o->name, o->def);
        if (v != 0.0 && (float)v == 0.0f) // "(got 0)" from validation would be a puzzle
            return zt_errorf("%s: %s is too small for a 32-bit float (it would be 0): write "
                             "0, or a number of at least 1.2e-38 in size", where, s);
        *(float *)field = (float)v;
        return ZT_OK;
    }
    }
    ZT_ASSERTF(0, "option %s has an unknown type %d", o->name, (int)o->type);
}
