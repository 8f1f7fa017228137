// Checks on JSON objects that cJSON lets through: it keeps every member of an object, a key
// written twice included, and its lookups return the first, while Python's json (which
// wrote or will read the same file) keeps the last. A file that means two things is refused.
#ifndef ZT_JSON_KEYS_H
#define ZT_JSON_KEYS_H

#include <cjson/cJSON.h>

// The first key (in sorted order) that `obj` holds more than once, or NULL. The string
// belongs to `obj`.
const char *zt_json_duplicate_key(const cJSON *obj);

#endif
