// Private to src/app/config*.c: the option table and presets they walk, and the steps
// zt_config_parse (config.c) takes from its sibling files.
#ifndef ZT_CONFIG_OPTIONS_H
#define ZT_CONFIG_OPTIONS_H

#include <stddef.h>

#include "config.h"

// ---------------------------------------------------------------- config_options.c

typedef enum { OPT_INT, OPT_FLOAT, OPT_U64, OPT_STR, OPT_BOOL, OPT_ENUM } opt_type;

// One name of an enum option and the value it stands for (redis's configEnum): the table of
// an option ends with {NULL, 0}. Parsing maps a name to its value once; the help, the log's
// configuration record and the messages that list the accepted names read the same table.
typedef struct {
    const char *name;
    int value;
} zt_enum_name;

typedef struct {
    const char *name;           // the flag without "--", and the JSON key
    opt_type type;
    size_t offset;              // of the field in zt_config
    size_t size;                // of the field; bounds strings (NUL included)
    const char *def;            // default as text, parsed like a flag value ("" for an
                                // enum: ZT_NOT_GIVEN)
    const char *meta;           // value placeholder in --help ("" for bools)
    const char *const *choices; // OPT_STR: NULL-terminated allowed values, or NULL
    const zt_enum_name *names;  // OPT_ENUM: its names and values (the field is an int)
    int from_preset;            // a shape key: --model's preset fills it unless given
    const char *group;          // --help heading; a group's options are contiguous
    const char *help;
} opt_desc;

// Every option, once, in --help order. The count is spelled out so that callers can size
// arrays by it (one flag per option: "given explicitly"); the definition refuses to
// compile when it differs from the table.
#define ZT_N_OPTS 73
extern const opt_desc zt_opts[ZT_N_OPTS];

// The option named name[0..len), or NULL.
const opt_desc *zt_opt_find(const char *name, size_t len);

// The closest option name to name[0..len) within edit distance 3 (and below len), for
// "did you mean"; "config" is a candidate too when with_config. NULL when none is close.
const char *zt_opt_suggest(const char *name, size_t len, int with_config);

// The name of `value` in `o`'s table (an OPT_ENUM), or NULL when it has none (ZT_NOT_GIVEN).
const char *zt_opt_enum_name(const opt_desc *o, int value);

// The accepted names of `o` (an OPT_ENUM) or its choices (an OPT_STR), joined by `sep`.
void zt_opt_list_names(const opt_desc *o, const char *sep, char *out, size_t size);

// ---------------------------------------------------------------- config_values.c

// Sets string option `o` to `s`; `where` names it in messages. Refuses "" and values
// longer than the field.
zt_status zt_opt_set_string(zt_config *cfg, const opt_desc *o, const char *s,
                            const char *where);

// Sets enum option `o` to the value `name` stands for; `where` names it in messages, which
// list the accepted names.
zt_status zt_opt_set_enum(zt_config *cfg, const opt_desc *o, const char *name,
                          const char *where);

// Sets option `o` from a flag value (or its default) written as text; `where` names it in
// messages ("--lr").
zt_status zt_opt_set_text(zt_config *cfg, const opt_desc *o, const char *s, const char *where);

// ---------------------------------------------------------------- config_flags.c

typedef struct {
    const opt_desc *opt; // NULL for --config
    const char *value;
} zt_flag_arg;

// Reads the flag at argv[*i] (and its value) and advances *i past them.
zt_status zt_flag_next(int argc, char **argv, int *i, zt_flag_arg *f);

// ---------------------------------------------------------------- config_file.c

// Applies the JSON config file at `path`, marking set[i] for every option zt_opts[i] it
// gives.
zt_status zt_config_file_apply(zt_config *cfg, const char *path, unsigned char *set);

// ---------------------------------------------------------------- config_shape.c

// A preset is a config holding only the shape fields; the table's from_preset flag
// says which fields to copy, so the shape keys are named in one place.
typedef struct {
    const char *name;
    zt_config shape;
} zt_preset;

extern const zt_preset zt_presets[];
extern const int zt_n_presets;

// The zt_config.shape_given bits of the shape keys (and "model") set[] marks as given.
unsigned zt_shape_given(const unsigned char *set);

// Copies --model's preset shape into every shape key not marked in set[]; ZT_ERR when
// --model names no preset.
zt_status zt_preset_apply(zt_config *cfg, const unsigned char *set);

#endif
