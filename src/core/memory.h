// Tagged memory: every byte the runtime allocates belongs to one category, so the
// program can report its own memory and the planner can be checked against it.
#ifndef ZT_MEMORY_H
#define ZT_MEMORY_H

#include <stddef.h>

typedef enum {
    ZT_MEM_PARAMS = 0,
    ZT_MEM_GRADS,
    ZT_MEM_OPTIMIZER,
    ZT_MEM_ACTIVATIONS,
    ZT_MEM_WORKSPACE,
    ZT_MEM_COMM,
    ZT_MEM_LOGITS, // the loss's chunk of logits (and their gradient) on the last stage
    ZT_MEM_NCAT
} zt_mem_category;

const char *zt_mem_category_name(zt_mem_category cat);

// Allocates `bytes` of host memory aligned to 64 bytes, zero-filled (touching every page
// now, so page faults happen at start and not in the step). Returns NULL only for
// bytes == 0; out-of-memory is fatal with a message naming the category and size.
// Free with zt_mem_free(ptr) (NULL is accepted).
void *zt_mem_alloc(zt_mem_category cat, size_t bytes);
void zt_mem_free(void *ptr);

// The accounting alone, for memory another allocator owns (a GPU backend's cudaMalloc):
// `bytes` more (zt_mem_count_alloc) or fewer (zt_mem_count_free) held under `cat`, in the
// same per-category counts, totals and peaks as zt_mem_alloc's host blocks. The caller
// remembers each block's category and size and gives the same pair back when freeing.
void zt_mem_count_alloc(zt_mem_category cat, size_t bytes);
void zt_mem_count_free(zt_mem_category cat, size_t bytes);

// Bytes currently held and the peak, per category and in total.
size_t zt_mem_current(zt_mem_category cat);
size_t zt_mem_peak(zt_mem_category cat);
size_t zt_mem_total(void);
// The peak of all categories together (not the sum of their peaks).
size_t zt_mem_peak_total(void);
// The process's peak resident set (VmHWM) in bytes, 0 where unknown: what the runtime's
// own accounting leaves out (code, MPI and BLAS buffers, stacks) shows up here.
size_t zt_mem_rss_peak(void);
// The "key: N kB" line of a /proc file (/proc/meminfo, /proc/self/status) in bytes, 0
// where the file or the key is missing.
double zt_mem_proc_bytes(const char *path, const char *key);
// "params 475.0M grads 475.0M ..." into buf.
void zt_mem_format(char *buf, size_t size);

#endif
