// JSONL corpora: one JSON object a line, each a document whose text is one string field.
#ifndef ZT_JSONL_H
#define ZT_JSONL_H

#include <stddef.h>
#include <stdio.h>

#include "common.h"

// A JSONL file read a line at a time (memory: the longest line and its document).
typedef struct {
    FILE *f;
    char path[4096];
    const char *field;   // the caller's
    char *line;          // (line_cap) getline's buffer
    size_t line_cap;
    long line_no;        // of the document last returned
    void *json;          // the parsed line (cJSON), whose string the last document is
} zt_jsonl_reader;

// Opens path for reading documents from `field`. Errors name the file and the fix; on error
// nothing is left open (zt_jsonl_close is still safe).
zt_status zt_jsonl_open(zt_jsonl_reader *r, const char *path, const char *field);
// The next document: *doc (UTF-8, every JSON escape decoded: \n \t \" \\ \/ \uXXXX with
// surrogate pairs) and *len, valid until the next call; *got 0 at the end of the file. Blank
// lines are skipped. A line that is not a JSON object with `field` as a string, or whose
// string holds \u0000 (a token file's text has no NUL), is an error naming the file and line.
zt_status zt_jsonl_next(zt_jsonl_reader *r, const char **doc, size_t *len, int *got);
void zt_jsonl_close(zt_jsonl_reader *r);

#endif
