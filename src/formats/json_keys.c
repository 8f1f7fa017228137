// Checks on JSON that cJSON lets through: keys given twice, lenient numbers and escapes.
#include "json_keys.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// Sorted, so a checkpoint shard's thousands of keys cost n log n, not n².
const char *zt_json_duplicate_key(const cJSON *obj) {
    int n = cJSON_GetArraySize(obj);
    if (!cJSON_IsObject(obj) || n < 2) return NULL;
    const char **k = malloc((size_t)n * sizeof *k);
    ZT_ASSERT(k);
    int m = 0;
    for (const cJSON *e = obj->child; e; e = e->next) k[m++] = e->string;
    qsort(k, (size_t)m, sizeof *k, by_name);
    const char *dup = NULL;
    for (int i = 1; i < m && !dup; i++)
        if (strcmp(k[i - 1], k[i]) == 0) dup = k[i];
    free(k);
    return dup;
}

static int number_char(char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

// A number token at text[k] (outside strings): JSON allows no leading zero and needs a
// digit after '.'.
static const char *bad_number(const char *text, size_t len, size_t k) {
    size_t p = k + (text[k] == '-');
    if (p + 1 < len && text[p] == '0' && text[p + 1] >= '0' && text[p + 1] <= '9')
        return "a number with a leading zero (not JSON; write it without the zero)";
    for (; p < len && number_char(text[p]); p++)
        if (text[p] == '.' && !(p + 1 < len && text[p + 1] >= '0' && text[p + 1] <= '9'))
            return "a number with no digit after its '.' (not JSON)";
    return NULL;
}

const char *zt_json_lenient_part(const char *text, size_t len, size_t *at) {
    int in_string = 0;
    for (size_t k = 0; k < len; k++) {
        char c = text[k];
        if (in_string) {
            if (c == '"') in_string = 0;
            else if (c == '\\' && k + 1 < len) {
                if (len - k >= 6 && strncmp(text + k + 1, "u0000", 5) == 0) {
                    *at = k;
                    return "a \\u0000 escape (a NUL byte) in a string: no key or value may "
                           "hold one";
                }
                k++; // the escaped character
            }
            continue;
        }
        if (c == '"') {
            in_string = 1;
            continue;
        }
        int starts = (c == '-' || (c >= '0' && c <= '9')) && (k == 0 || !number_char(text[k - 1]));
        const char *bad = starts ? bad_number(text, len, k) : NULL;
        if (bad) {
            *at = k;
            return bad;
        }
    }
    return NULL;
}
