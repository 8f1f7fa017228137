// Streaming GPT-2 tokenization of text files (and JSONL files' documents) into llm.c token
// files, on all OpenMP threads.
//
// Per file (one document): the end-of-text token, then batches. A batch is the carry (the text
// after the last cut of the previous batch) plus the next read, cut into chunks of about
// chunk_bytes at safe cuts (zt_bpe_safe_cut: places where the pattern cannot join text across
// the cut, so encoding the chunks separately gives the ids of encoding the file whole). The
// chunks are encoded in parallel, each into its own id list, and appended in order; what
// follows the last cut is carried into the next batch. At the end of a file the rest is the
// last chunk. A stretch with no safe cut (a megabyte without a newline or a change between
// letters, digits and symbols) stays in the carry and the buffer grows by half until one comes;
// before each growth, check_stretch makes sure encoding it whole will fit (about 6 bytes per
// byte) or stops with one error.
#include "tokenizer_prepare.h"

#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bpe.h"
#include "data.h"
#include "data_pairing.h"
#include "jsonl.h"
#include "memory.h"

#define ZT_PREPARE_CHUNK_DEFAULT ((size_t)1 << 20)
#define ZT_PREPARE_CHUNKS_PER_THREAD 4
#define ZT_PREPARE_PROGRESS_MIN ((size_t)32 << 20)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    zt_bpe *bpe;
    zt_token_writer w;
    int invalid;
    size_t chunk;
    int threads;
    zt_bpe_ids *ids;       // (n_slots) one id list per chunk of a batch
    int n_slots;
    // what the process may still use, for a stretch with no safe cut (check_stretch)
    double as_limit, mem_room, rss0;
    // progress
    int progress, tty;
    size_t total, done;
    double t0, last;
    size_t documents;
} prep;

static void report_progress(prep *p, int final) {
    if (!p->progress) return;
    double t = now_s();
    if (!final && t - p->last < (p->tty ? 0.5 : 10.0)) return;
    p->last = t;
    double mb = (double)p->done / 1e6, el = t - p->t0;
    fprintf(stderr, "%sprepare: %.1f of %.1f MB (%.0f%%), %zu tokens, %.1f MB/s%s",
            p->tty ? "\r" : "", mb, (double)p->total / 1e6,
            p->total ? 100.0 * (double)p->done / (double)p->total : 100.0, p->w.n,
            el > 0 ? mb / el : 0.0, p->tty && !final ? "" : "\n");
    fflush(stderr);
}

// Appends ids (n) to the file as uint16 (every GPT-2 id is below 65536: checked at start),
// narrowed in place: a copy would cost 2 bytes per token more, and a long piece's ids may be
// as many as its bytes. The ids are not needed after. memcpy: the bytes change type.
static zt_status write_ids(prep *p, int32_t *ids, size_t n) {
    unsigned char *raw = (unsigned char *)ids;
    for (size_t i = 0; i < n; i++) {  // uint16 i overlaps int32 i / 2, already read
        int32_t v;
        memcpy(&v, raw + 4 * i, 4);
        uint16_t u = (uint16_t)v;
        memcpy(raw + 2 * i, &u, 2);
    }
    return zt_token_writer_append(&p->w, (const uint16_t *)(const void *)ids, n);
}

// Encodes the chunks buf[cut[i], cut[i+1]) for i < n in parallel and appends them in order.
static zt_status encode_chunks(prep *p, const unsigned char *buf, const size_t *cut, int n) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(p->threads)
    for (int i = 0; i < n; i++) {
        // Encode into a local list: the slots sit side by side, and a count updated per token
        // in a shared cache line would bounce between the cores.
        zt_bpe_ids local = p->ids[i];
        local.n = 0;
        zt_bpe_encode(p->bpe, buf + cut[i], cut[i + 1] - cut[i], p->invalid, &local);
        p->ids[i] = local;
    }
    for (int i = 0; i < n; i++) ZT_TRY(write_ids(p, p->ids[i].ids, p->ids[i].n));
    p->done += cut[n] - cut[0];
    report_progress(p, 0);
    return ZT_OK;
}

// A stretch of text with no safe cut is encoded as one chunk, and may be one piece: before the
// buffer grows from cap to cap_new bytes for it, whether what that takes fits what this process
// may still use: the larger buffer, and encoding cap_new bytes at once
// (zt_bpe_encode_bytes: about 5 bytes per byte). Else one error (nothing allocated yet) naming
// the stretch, the need, the limit and the fixes.
static zt_status check_stretch(const prep *p, const char *path, size_t at, size_t len,
                               size_t cap, size_t cap_new) {
    double need = (double)(cap_new - cap) + (double)zt_bpe_encode_bytes(cap_new, p->invalid);
    double room = -1, vm = zt_mem_proc_bytes("/proc/self/status", "VmSize");
    double rss = zt_mem_proc_bytes("/proc/self/status", "VmRSS");
    const char *what = "";
    if (p->as_limit > 0 && vm > 0) {
        room = p->as_limit - vm;
        what = "the address space left under its limit (ulimit -v)";
    }
    if (p->mem_room > 0 && (room < 0 || p->mem_room - (rss - p->rss0) < room)) {
        room = p->mem_room - (rss - p->rss0);
        what = "the memory available (MemAvailable, or the memory cgroup's limit)";
    }
    if (cap_new > UINT32_MAX) {  // a piece's positions are 32-bit
        room = 0;
        what = "the 4 GiB a stretch without a cut may have";
    }
    if (room < 0 || need <= room) return ZT_OK;
    return zt_errorf("text file %s: the %zu bytes from byte %zu on have no place where GPT-2's "
                     "pattern allows a cut (a newline after a character that is not white space, "
                     "or a change between letters, digits and other symbols), so they are "
                     "encoded as one chunk; reading more of it needs %.0f MiB (the text and "
                     "about %d bytes per byte to encode it), more than %s, %.0f MiB; raise the "
                     "limit, or break the stretch (with newlines, or a character of another "
                     "kind) where a different tokenization there does not matter",
                     path, len, at, need / 1048576.0,
                     p->invalid == ZT_BPE_INVALID_REPLACE ? 18 : 5, what,
                     room > 0 ? room / 1048576.0 : 0.0);
}

// One document read from f (named `path` in errors): the end-of-text token, then its text.
static zt_status encode_stream(prep *p, FILE *f, const char *path) {
    p->documents++;
    int32_t eot = zt_bpe_eot(p->bpe);
    zt_status s = write_ids(p, &eot, 1);
    // A batch fills the buffer to n_slots chunks plus one (the carry is under a chunk unless
    // no cut came).
    size_t target = p->chunk * ((size_t)p->n_slots + 1);
    size_t cap = target, len = 0;
    unsigned char *buf = malloc(cap);
    size_t *cut = malloc(((size_t)p->n_slots + 1) * sizeof *cut);
    ZT_ASSERTF(buf && cut, "out of memory for %zu bytes of text buffer", cap);
    int eof = 0;
    size_t at = 0;  // where buf[0] is in the file
    while (s == ZT_OK && !eof) {
        size_t want = len < target ? target - len : len / 2;  // no cut yet: grow by half
        if (len + want > cap) {  // a long stretch without a safe cut: grow, if it will fit
            s = check_stretch(p, path, at, len, cap, len + want);
            if (s != ZT_OK) break;
            cap = len + want;
            buf = realloc(buf, cap);
            ZT_ASSERTF(buf, "out of memory for %zu bytes of text buffer", cap);
        }
        size_t got = fread(buf + len, 1, want, f);
        if (got < want) {
            if (ferror(f)) {
                s = zt_errorf("cannot read text file %s: %s", path, strerror(errno));
                break;
            }
            eof = 1;
        }
        len += got;
        // Chunk boundaries, greedy: each chunk at most p->chunk bytes where a cut allows; at
        // the end of the file the last slot takes whatever is left.
        int n = 0;
        size_t start = 0;
        cut[0] = 0;
        while (n < p->n_slots && start < len) {
            size_t rest = len - start;
            if (eof && (rest <= p->chunk || n == p->n_slots - 1)) {
                cut[++n] = start = len;
                break;
            }
            if (!eof && rest <= p->chunk) break;  // carry it: more text may join it
            size_t k = zt_bpe_safe_cut(buf + start, zt_min_sz(p->chunk, rest), p->chunk);
            if (k == 0) k = zt_bpe_safe_cut(buf + start, rest, rest);  // a longer chunk
            if (k == 0) {
                if (eof) cut[++n] = start = len;
                break;  // else no cut anywhere yet: read more
            }
            start += k;
            cut[++n] = start;
        }
        if (n > 0) s = encode_chunks(p, buf, cut, n);
        memmove(buf, buf + start, len - start);
        len -= start;
        at += start;
    }
    free(buf);
    free(cut);
    return s;
}

static zt_status encode_file(prep *p, const char *path) {
    FILE *f = zt_fopen_regular(path); // checked above, but it may have changed since
    if (!f) return zt_errorf("cannot open text file %s: %s; check the path given to --text", path,
                             zt_file_error(errno));
    zt_status s = encode_stream(p, f, path);
    fclose(f);
    return s;
}

// Every line of a JSONL file a document, as if each were a text file of its own: its decoded
// string read through a memory stream, so the chunking and ids are a text file's.
static zt_status encode_jsonl(prep *p, const char *path, const char *field) {
    zt_jsonl_reader r;
    zt_status s = zt_jsonl_open(&r, path, field);
    char name[4200];
    for (int got = 1; s == ZT_OK && got;) {
        const char *doc;
        size_t len;
        s = zt_jsonl_next(&r, &doc, &len, &got);
        if (s != ZT_OK || !got) break;
        snprintf(name, sizeof name, "%s (JSONL line %ld)", path, r.line_no);
        // fmemopen refuses a size of 0: an empty document is its end-of-text token alone
        FILE *m = len ? fmemopen((void *)doc, len, "rb") : NULL;
        ZT_ASSERTF(m || !len, "fmemopen of %zu bytes failed", len);
        if (m) {
            s = encode_stream(p, m, name);
            fclose(m);
        } else {
            int32_t eot = zt_bpe_eot(p->bpe);
            s = write_ids(p, &eot, 1);
            p->documents++;
        }
    }
    zt_jsonl_close(&r);
    return s;
}

zt_status zt_prepare_gpt2(const zt_prepare_gpt2_opts *o, zt_prepare_stats *stats) {
    ZT_ASSERT(o && o->out && o->vocab && o->n_texts >= 0);
    int want_val = o->val_out && o->val_out[0];
    if (o->n_texts == 0) return zt_errorf("prepare needs at least one --text FILE");
    if (want_val && !(o->val_frac > 0.0 && o->val_frac < 1.0))
        return zt_errorf("validation fraction %g must be strictly between 0 and 1 when writing "
                         "a validation file (%s)",
                         o->val_frac, o->val_out);
    prep p;
    memset(&p, 0, sizeof p);
    // Every input first: a typo in the last --text should not cost a long run.
    for (int i = 0; i < o->n_texts; i++) {
        struct stat st;
        if (stat(o->texts[i], &st) != 0)
            return zt_errorf("cannot open text file %s: %s; check the path given to --text",
                             o->texts[i], strerror(errno));
        if (!S_ISREG(st.st_mode))
            return zt_errorf("text file %s is not a regular file; pass a plain text file to --text",
                             o->texts[i]);
        if (access(o->texts[i], R_OK) != 0)
            return zt_errorf("cannot read text file %s: %s", o->texts[i], strerror(errno));
        p.total += (size_t)st.st_size;
    }
    ZT_TRY(zt_bpe_load(&p.bpe, o->vocab));
    zt_status s = ZT_OK;
    if (zt_bpe_vocab_size(p.bpe) > 65536)
        s = zt_errorf("vocabulary %s has %d ids, more than the 65536 that llm.c's uint16 token "
                      "files hold",
                      o->vocab, zt_bpe_vocab_size(p.bpe));
    p.invalid = o->invalid;
    p.as_limit = o->as_limit;
    p.mem_room = o->mem_room;
    p.rss0 = zt_mem_proc_bytes("/proc/self/status", "VmRSS");
    p.chunk = o->chunk_bytes ? o->chunk_bytes : ZT_PREPARE_CHUNK_DEFAULT;
    p.threads = omp_get_max_threads();
    p.n_slots = p.threads * ZT_PREPARE_CHUNKS_PER_THREAD;
    p.ids = calloc((size_t)p.n_slots, sizeof *p.ids);
    ZT_ASSERT(p.ids);
    p.progress = o->progress < 0 ? p.total >= ZT_PREPARE_PROGRESS_MIN : o->progress;
    p.tty = isatty(2);
    p.t0 = p.last = now_s();
    zt_token_tmps_remove_dead(o->out);
    if (o->val_out && o->val_out[0]) zt_token_tmps_remove_dead(o->val_out);
    if (s == ZT_OK) s = zt_token_writer_open(&p.w, o->out);
    for (int i = 0; s == ZT_OK && i < o->n_texts; i++)
        s = o->is_jsonl && o->is_jsonl[i] ? encode_jsonl(&p, o->texts[i], o->json_field)
                                           : encode_file(&p, o->texts[i]);
    size_t n = p.w.n, n_val = want_val ? (size_t)((double)n * o->val_frac + 0.5) : 0;
    if (s == ZT_OK && n - n_val < 2)
        s = zt_errorf("the text gives %zu tokens, leaving %zu for training file %s, fewer than the "
                      "2 tokens of one sample; use more text%s",
                      n, n - n_val, o->out, want_val ? " or a smaller --val-frac" : "");
    else if (s == ZT_OK && want_val && n_val < 2)
        s = zt_errorf("the text gives %zu tokens, leaving %zu for validation file %s, fewer than "
                      "the 2 tokens of one sample; use more text or a larger --val-frac",
                      n, n_val, o->val_out);
    if (s == ZT_OK) {
        report_progress(&p, 1);
        s = zt_token_writer_close(&p.w, o->val_out, n_val);
    } else {
        zt_token_writer_abort(&p.w);
    }
    if (stats) {
        stats->documents = p.documents;
        stats->bytes = p.done;
        stats->tokens = n;
        stats->val_tokens = n_val;
        stats->seconds = now_s() - p.t0;
        stats->threads = p.threads;
    }
    for (int i = 0; i < p.n_slots; i++) zt_bpe_ids_free(&p.ids[i]);
    free(p.ids);
    zt_bpe_free(p.bpe);
    return s;
}
