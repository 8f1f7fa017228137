// llm.c model checkpoints (fp32). Format, all little endian:
//
//   int32 header[256]: [0] magic 20240326  [1] version (3 = fp32, 5 = bf16)
//                      [2] maxT  [3] V  [4] L  [5] NH  [6] C  [7] Vp (padded V)
//   float32 tensors, each layer-stacked, in this order:
//     wte (Vp, C)  wpe (maxT, C)  ln1w (L, C)  ln1b (L, C)  qkvw (L, 3C, C)  qkvb (L, 3C)
//     attprojw (L, C, C)  attprojb (L, C)  ln2w (L, C)  ln2b (L, C)  fcw (L, 4C, C)
//     fcb (L, 4C)  fcprojw (L, C, 4C)  fcprojb (L, C)  lnfw (C)  lnfb (C)
//
// Matrices are (out, in), our layout too except the row-parallel c_proj weights, which we
// store (in, out) (layout.h); so the stacking, the vocabulary padding and those
// transposes differ.
#include "llmc_checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// The layer tensors in file order: HF suffix and elements per layer (in units of C).
static const struct {
    const char *suffix;
    int rows_c, cols_c; // per layer: (rows_c*C) x (cols_c*C), cols_c = 0 for vectors
} k_layer_tensors[] = {
    {"ln_1.weight", 1, 0},        {"ln_1.bias", 1, 0},        {"attn.c_attn.weight", 3, 1},
    {"attn.c_attn.bias", 3, 0},   {"attn.c_proj.weight", 1, 1}, {"attn.c_proj.bias", 1, 0},
    {"ln_2.weight", 1, 0},        {"ln_2.bias", 1, 0},        {"mlp.c_fc.weight", 4, 1},
    {"mlp.c_fc.bias", 4, 0},      {"mlp.c_proj.weight", 1, 4}, {"mlp.c_proj.bias", 1, 0},
};
#define N_LAYER_TENSORS ((int)(sizeof k_layer_tensors / sizeof k_layer_tensors[0]))

static zt_status read_header(const char *path, int32_t h[256]) {
    FILE *f = zt_fopen_regular(path);
    if (!f && (errno == EISDIR || errno == EINVAL))
        return zt_errorf("checkpoint %s is not a regular file (a directory, a FIFO?): "
                         "--init-from takes an llm.c model file such as gpt2_124M.bin", path);
    if (!f) return zt_errorf("cannot open checkpoint %s: %s", path, strerror(errno));
    size_t got = fread(h, sizeof(int32_t), 256, f);
    fclose(f);
    if (got != 256) return zt_errorf("checkpoint %s is truncated: shorter than its 1024-byte header", path);
    if (h[0] != ZT_LLMC_MAGIC)
        return zt_errorf("%s is not an llm.c model checkpoint (magic %d, expected %d)%s", path,
                         h[0], ZT_LLMC_MAGIC,
                         h[0] == 20240520 ? ": it is a token data file; pass it as --data" : "");
    if (h[1] == ZT_LLMC_VERSION_BF16)
        return zt_errorf("%s is an llm.c bf16 checkpoint; --init-from needs the fp32 one "
                         "(version 3, written by llm.c as gpt2_124M.bin)", path);
    if (h[1] != ZT_LLMC_VERSION_FP32)
        return zt_errorf("%s has llm.c checkpoint version %d; only version 3 (fp32) is supported",
                         path, h[1]);
    if (h[2] <= 0 || h[3] <= 0 || h[4] <= 0 || h[5] <= 0 || h[6] <= 0 || h[7] < h[3])
        return zt_errorf("checkpoint %s has an impossible header (maxT %d V %d L %d NH %d C %d "
                         "Vp %d)", path, h[2], h[3], h[4], h[5], h[6], h[7]);
    return ZT_OK;
}

zt_status zt_llmc_read_shape(const char *path, zt_model_shape *out) {
    int32_t h[256];
    ZT_TRY(read_header(path, h));
    memset(out, 0, sizeof *out);
    out->n_ctx = h[2];
    out->vocab = h[3];
    out->n_layer = h[4];
    out->n_head = h[5];
    out->n_embd = h[6];
    out->padded_vocab = h[7];
    return ZT_OK;
}

zt_status zt_llmc_load(zt_gpt2 *m, const char *path) {
    int32_t h[256];
    ZT_TRY(read_header(path, h));
    const zt_model_shape *s = &m->shape;
    if (h[2] != s->n_ctx || h[3] != s->vocab || h[4] != s->n_layer || h[5] != s->n_head ||
        h[6] != s->n_embd)
        return zt_errorf("checkpoint %s holds a model with n_ctx %d vocab %d n_layer %d n_head %d "
                         "n_embd %d, but the run asks for %d %d %d %d %d: pass --n-ctx %d --vocab "
                         "%d --n-layer %d --n-head %d --n-embd %d (or the matching --model)",
                         path, h[2], h[3], h[4], h[5], h[6], s->n_ctx, s->vocab, s->n_layer,
                         s->n_head, s->n_embd, h[2], h[3], h[4], h[5], h[6]);
    size_t C = (size_t)h[6], L = (size_t)h[4], Vp_file = (size_t)h[7], maxT = (size_t)h[2];
    // offsets (in floats, after the header) of every stacked array
    size_t off = 0, wte_off = off;
    off += Vp_file * C;
    size_t wpe_off = off;
    off += maxT * C;
    size_t layer_off[N_LAYER_TENSORS], layer_numel[N_LAYER_TENSORS];
    for (int i = 0; i < N_LAYER_TENSORS; i++) {
        size_t cols = k_layer_tensors[i].cols_c ? k_layer_tensors[i].cols_c * C : 1;
        layer_numel[i] = k_layer_tensors[i].rows_c * C * cols;
        layer_off[i] = off;
        off += L * layer_numel[i];
    }
    size_t lnfw_off = off, lnfb_off = off + C;
    off += 2 * C;

    int fd = zt_open_regular(path);
    if (fd < 0) return zt_errorf("cannot open checkpoint %s: %s", path, zt_file_error(errno));
    struct stat st;
    size_t want = 1024 + off * sizeof(float);
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != want) {
        close(fd);
        return zt_errorf("checkpoint %s is %lld bytes but its header describes %zu: the file is "
                         "%s", path, (long long)st.st_size, want,
                         (size_t)st.st_size < want ? "truncated" : "longer than an fp32 llm.c "
                                                                   "checkpoint of its shape");
    }
    void *map = mmap(NULL, want, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return zt_errorf("cannot map checkpoint %s: %s", path, strerror(errno));
    const float *file = (const float *)((const char *)map + 1024);

    const zt_layout *lay = &m->layout;
    float *params = zt_gpt2_params_map(m, 0);
    for (int i = 0; i < lay->n; i++) {
        const zt_tensor_desc *t = &lay->t[i];
        const float *src = NULL;
        int l = -1;
        char suffix[64] = "";
        if (strcmp(t->name, "wte.weight") == 0) src = file + wte_off;
        else if (strcmp(t->name, "wpe.weight") == 0) src = file + wpe_off;
        else if (strcmp(t->name, "ln_f.weight") == 0) src = file + lnfw_off;
        else if (strcmp(t->name, "ln_f.bias") == 0) src = file + lnfb_off;
        else if (sscanf(t->name, "h.%d.%63s", &l, suffix) == 2) {
            for (int k = 0; k < N_LAYER_TENSORS; k++)
                if (strcmp(suffix, k_layer_tensors[k].suffix) == 0)
                    src = file + layer_off[k] + (size_t)l * layer_numel[k];
        }
        ZT_ASSERTF(src, "no llm.c tensor for %s", t->name);
        float *dst = params + t->offset;
        size_t real = (size_t)s->vocab * C; // wte: rows past V are padding in both files
        size_t I = (size_t)t->shape[0], O = (size_t)t->shape[1];
#pragma omp parallel for
        for (size_t k = 0; k < t->numel; k++) {
            size_t g = zt_layout_global_index(lay, t, k);
            if (t->in_out) g = (g % O) * I + g / O; // ours (in, out), the file's (out, in)
            dst[k] = (t->split == ZT_SPLIT_VOCAB && g >= real) ? 0.0f : src[g];
        }
    }
    zt_gpt2_params_unmap(m, params, 1);
    munmap(map, want);
    return ZT_OK;
}
