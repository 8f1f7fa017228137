// Host allocator with per-category accounting (the CPU backend's memory).
#include "memory.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

// Each block carries a small header so free knows its category and size.
typedef struct {
    size_t bytes;
    int cat;
    int magic;
    char pad[48];
} zt_mem_header;
#define ZT_MEM_MAGIC 0x5a54ab1e

static size_t g_current[ZT_MEM_NCAT];
static size_t g_peak[ZT_MEM_NCAT];
static size_t g_total, g_peak_total; // all categories together

static const char *const g_names[ZT_MEM_NCAT] = {"params",      "grads",     "optimizer",
                                                 "activations", "workspace", "comm",
                                                 "logits"};

const char *zt_mem_category_name(zt_mem_category cat) {
    ZT_ASSERT(cat >= 0 && cat < ZT_MEM_NCAT);
    return g_names[cat];
}

void *zt_mem_alloc(zt_mem_category cat, size_t bytes) {
    ZT_ASSERT(cat >= 0 && cat < ZT_MEM_NCAT);
    if (bytes == 0) return NULL;
    size_t total = zt_round_up(sizeof(zt_mem_header) + bytes, 64);
    zt_mem_header *h = aligned_alloc(64, total);
    if (!h)
        zt_fatal(__FILE__, __LINE__, "out of memory allocating %zu bytes of %s", bytes,
                 g_names[cat]);
    memset(h, 0, total);
    h->bytes = bytes;
    h->cat = cat;
    h->magic = ZT_MEM_MAGIC;
    zt_mem_count_alloc(cat, bytes);
    return h + 1;
}

void zt_mem_count_alloc(zt_mem_category cat, size_t bytes) {
    ZT_ASSERT(cat >= 0 && cat < ZT_MEM_NCAT);
    g_current[cat] += bytes;
    if (g_current[cat] > g_peak[cat]) g_peak[cat] = g_current[cat];
    g_total += bytes;
    if (g_total > g_peak_total) g_peak_total = g_total;
}

void zt_mem_count_free(zt_mem_category cat, size_t bytes) {
    ZT_ASSERT(cat >= 0 && cat < ZT_MEM_NCAT);
    ZT_ASSERTF(g_current[cat] >= bytes, "freeing %zu bytes of %s, more than the %zu held", bytes,
               g_names[cat], g_current[cat]);
    g_current[cat] -= bytes;
    g_total -= bytes;
}

void zt_mem_free(void *ptr) {
    if (!ptr) return;
    zt_mem_header *h = (zt_mem_header *)ptr - 1;
    ZT_ASSERTF(h->magic == ZT_MEM_MAGIC, "zt_mem_free of a pointer zt_mem_alloc did not return");
    zt_mem_count_free(h->cat, h->bytes);
    h->magic = 0;
    free(h);
}

size_t zt_mem_current(zt_mem_category cat) { return g_current[cat]; }
size_t zt_mem_peak(zt_mem_category cat) { return g_peak[cat]; }

size_t zt_mem_total(void) { return g_total; }
size_t zt_mem_peak_total(void) { return g_peak_total; }

double zt_mem_proc_bytes(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    size_t n = strlen(key);
    double kb = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%lf", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024.0;
}

size_t zt_mem_rss_peak(void) { return (size_t)zt_mem_proc_bytes("/proc/self/status", "VmHWM"); }

void zt_mem_format(char *buf, size_t size) {
    size_t off = 0;
    for (int c = 0; c < ZT_MEM_NCAT && off < size; c++) {
        if (g_current[c] == 0 && c == ZT_MEM_COMM) continue;
        off += (size_t)snprintf(buf + off, size - off, "%s%s %.1fM", c ? " " : "", g_names[c],
                                g_current[c] / 1048576.0);
    }
}
