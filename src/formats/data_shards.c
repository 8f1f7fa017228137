// A dataset's file list: a --data spec (one file, a comma-separated list, glob patterns)
// expanded into the token files it names, in the order they are read.
#include "data_shards.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static void paths_add(zt_data_paths *p, const char *path) {
    p->paths = realloc(p->paths, (size_t)(p->n + 1) * sizeof *p->paths);
    ZT_ASSERT(p->paths != NULL);
    p->paths[p->n] = strdup(path);
    ZT_ASSERT(p->paths[p->n] != NULL);
    p->n++;
}

// One item of the list: a pattern's matches (glob sorts them; the locale is C unless the
// program set one), or the item itself, which zt_dataset_open then checks as a file.
static zt_status expand_item(zt_data_paths *p, const char *item, const char *spec) {
    if (!item[0])
        return zt_errorf("data %s has an empty item in its comma-separated list; remove the "
                         "extra comma", spec);
    if (!strpbrk(item, "*?[")) {
        paths_add(p, item);
        return ZT_OK;
    }
    glob_t g;
    int rc = glob(item, 0, NULL, &g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
        globfree(&g);
        return zt_errorf("data pattern %s matches no file; check the directory and the pattern "
                         "(quote it so the shell passes it on: --data 'dir/*_train_*.bin')", item);
    }
    if (rc != 0) {
        globfree(&g);
        return zt_errorf("data pattern %s cannot be read (glob error %d); check the directory's "
                         "permissions", item, rc);
    }
    for (size_t i = 0; i < g.gl_pathc; i++) paths_add(p, g.gl_pathv[i]);
    globfree(&g);
    return ZT_OK;
}

static zt_status check_distinct(const zt_data_paths *p, const char *spec) {
    for (int i = 0; i < p->n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(p->paths[i], p->paths[j]) == 0)
                return zt_errorf("data %s names %s twice; give each shard once", spec,
                                 p->paths[i]);
    return ZT_OK;
}

zt_status zt_data_paths_expand(zt_data_paths *out, const char *spec) {
    ZT_ASSERT(out != NULL && spec != NULL);
    memset(out, 0, sizeof *out);
    if (is_file(spec) || (!strchr(spec, ',') && !strpbrk(spec, "*?["))) {
        paths_add(out, spec);
        return ZT_OK;
    }
    char *copy = strdup(spec);
    ZT_ASSERT(copy != NULL);
    zt_status s = ZT_OK;
    char *item = copy;
    for (;;) {
        char *comma = strchr(item, ',');
        if (comma) *comma = '\0';
        s = expand_item(out, item, spec);
        if (s != ZT_OK || !comma) break;
        item = comma + 1;
    }
    free(copy);
    if (s == ZT_OK) s = check_distinct(out, spec);
    if (s != ZT_OK) zt_data_paths_free(out);
    return s;
}

void zt_data_paths_free(zt_data_paths *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(p->paths[i]);
    free(p->paths);
    memset(p, 0, sizeof *p);
}
