// JSONL corpora (the form text datasets usually come in): one JSON object a line, the document
// its string field; parsed by cJSON a line at a time, so a corpus streams.
#include "jsonl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

zt_status zt_jsonl_open(zt_jsonl_reader *r, const char *path, const char *field) {
    ZT_ASSERT(r != NULL && path != NULL && field != NULL);
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->field = field;
    r->f = zt_fopen_regular(path);
    if (!r->f)
        return zt_errorf("cannot open JSONL file %s: %s; check the path given to --jsonl", path,
                         zt_file_error(errno));
    return ZT_OK;
}

// Whether the JSON text s (n bytes) holds the escape \u0000: cJSON's strings end at a NUL, so
// such a document would be cut short without a word. Backslash pairs are skipped whole so that
// an escaped backslash before "u0000" is not taken for one.
static int has_nul_escape(const char *s, size_t n) {
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != '\\') continue;
        if (s[i + 1] == 'u' && i + 6 <= n && memcmp(s + i + 2, "0000", 4) == 0) return 1;
        i++;  // the escaped character
    }
    return 0;
}

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
    return 1;
}

zt_status zt_jsonl_next(zt_jsonl_reader *r, const char **doc, size_t *len, int *got) {
    ZT_ASSERT(r != NULL && r->f != NULL && doc != NULL && len != NULL && got != NULL);
    *got = 0;
    cJSON_Delete(r->json);
    r->json = NULL;
    for (;;) {
        errno = 0;
        ssize_t n = getline(&r->line, &r->line_cap, r->f);
        if (n < 0) {
            if (ferror(r->f))
                return zt_errorf("cannot read JSONL file %s: %s", r->path, strerror(errno));
            return ZT_OK;
        }
        r->line_no++;
        if (is_blank(r->line, (size_t)n)) continue;
        if (has_nul_escape(r->line, (size_t)n))
            return zt_errorf("JSONL file %s, line %ld: the text holds \\u0000, which a text "
                             "corpus should not; remove it from that document",
                             r->path, r->line_no);
        cJSON *obj = cJSON_ParseWithLength(r->line, (size_t)n);
        if (!obj || !cJSON_IsObject(obj)) {
            cJSON_Delete(obj);
            return zt_errorf("JSONL file %s, line %ld is not a valid JSON object: each line must be "
                             "one object such as {\"%s\": \"...\"}",
                             r->path, r->line_no, r->field);
        }
        r->json = obj;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, r->field);
        if (!cJSON_IsString(v) || !v->valuestring)
            return zt_errorf("JSONL file %s, line %ld has no string field \"%s\"; name the "
                             "field that holds the text with --field",
                             r->path, r->line_no, r->field);
        *doc = v->valuestring;
        *len = strlen(v->valuestring);
        *got = 1;
        return ZT_OK;
    }
}

void zt_jsonl_close(zt_jsonl_reader *r) {
    if (!r) return;
    if (r->f) fclose(r->f);
    cJSON_Delete(r->json);
    free(r->line);
    memset(r, 0, sizeof *r);
}
