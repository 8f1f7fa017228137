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
