// Checks on JSON objects that cJSON lets through: it keeps every member of an object, a key
// written twice included, and its lookups return the first, while Python's json (which
// wrote or will read the same file) keeps the last. A file that means two things is refused.
#ifndef ZT_JSON_KEYS_H
#define ZT_JSON_KEYS_H

#include <cjson/cJSON.h>

// The first key (in sorted order) that `obj` holds more than once, or NULL. The string
// belongs to `obj`.
const char *zt_json_duplicate_key(const cJSON *obj);

// What cJSON reads leniently in a JSON text of `len` bytes and Python's json refuses or
// reads otherwise: a number with a leading zero (007 was taken as 7) or a '.' without a
// digit after it, and a \u0000 escape in a string (a key "a\u0000b" was applied as "a": C
// strings end there). NULL when there is none; else a description for an error message
// and *at its byte offset.
const char *zt_json_lenient_part(const char *text, size_t len, size_t *at);

#endif
