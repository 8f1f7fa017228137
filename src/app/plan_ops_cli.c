// One step's ops as JSON (plan_ops_cli.h). The file, one object:
//   {"model": {n_layer, n_head, n_embd, vocab, padded_vocab}, "micro_batch", "seq",
//    "grad_accum", "param_dtype": "fp32"|"bf16", "optim": "adamw"|"adamw8bit",
//    "loss_chunk", "loss_chunk_from", "backend", "device", "device_memory_bytes", "numel",
//    "ops": [{"op", "phase", "calls", "flops", "bytes",
//             "shapes": [{"calls", "flops", "bytes", "args": {name: value, ...}}, ...]},
//            ...]}
// ops in the op list's order (kernels/backend_ops.h), those the step calls; flops as the
// list's formulas, bytes the recorder's traffic bound (kernels/backend_record.h), a shape's
// for one call; its args every parameter by the list's name: sizes and scalars (dtypes as
// zt_dtype's values), a pointer as 1 (given) or 0 (NULL).
#include "plan_ops_cli.h"

#include <errno.h>
#include <string.h>

#include "plan_spec.h"
#include "plan_step_ops.h"
#include "trainer.h"

static void write_shapes(FILE *f, const zt_op_shapes *sh, int op) {
    int first = 1;
    fprintf(f, "\"shapes\":[");
    for (int i = 0; i < sh->n; i++) {
        const zt_op_shape *s = &sh->s[i];
        if (s->op != op) continue;
        fprintf(f, "%s{\"calls\":%ld,\"flops\":%.17g,\"bytes\":%.17g,\"args\":{",
                first ? "" : ",", s->calls, s->flops, s->bytes);
        for (int a = 0; a < s->n_args; a++)
            fprintf(f, "%s\"%s\":%.17g", a ? "," : "", s->name[a], s->value[a]);
        fprintf(f, "}}");
        first = 0;
    }
    fprintf(f, "]");
}

static void write_ops(FILE *f, const zt_op_record *r, const zt_op_shapes *sh) {
    int first = 1;
    fprintf(f, "\"ops\":[");
    for (int op = 0; op < ZT_OPID_COUNT; op++) {
        if (!r->calls[op]) continue;
        fprintf(f, "%s\n{\"op\":\"%s\",\"phase\":\"%s\",\"calls\":%ld,\"flops\":%.17g,"
                   "\"bytes\":%.17g,",
                first ? "" : ",", zt_op_name(op), zt_phase_name((zt_phase)zt_op_phase(op)),
                r->calls[op], r->flops[op], r->bytes[op]);
        write_shapes(f, sh, op);
        fprintf(f, "}");
        first = 0;
    }
    fprintf(f, "]");
}

static void write_header(FILE *f, const zt_plan_spec *s, const zt_plan_device *d,
                         const char *chunk_from, size_t numel) {
    const zt_model_shape *m = &s->shape;
    fprintf(f, "{\"model\":{\"n_layer\":%d,\"n_head\":%d,\"n_embd\":%d,\"vocab\":%d,"
               "\"padded_vocab\":%d},\"micro_batch\":%d,\"seq\":%d,\"grad_accum\":%d,"
               "\"param_dtype\":\"%s\",\"optim\":\"%s\",\"loss_chunk\":%d,\"loss_chunk_from\":",
            m->n_layer, m->n_head, m->n_embd, m->vocab, m->padded_vocab, s->micro_batch,
            s->seq, s->grad_accum, s->param_bytes == 2 ? "bf16" : "fp32",
            s->is_8bit ? "adamw8bit" : "adamw", s->loss_chunk);
    zt_json_string(f, chunk_from);
    fprintf(f, ",\"backend\":\"%s\",\"device\":", s->backend->name);
    zt_json_string(f, d->name);
    fprintf(f, ",\"device_memory_bytes\":%.0f,\"numel\":%zu,\n", d->memory_bytes, numel);
}

zt_status zt_plan_ops_json(const zt_config *cfg, const zt_plan_device *d, const char *path) {
    zt_plan_spec s;
    ZT_TRY(zt_plan_spec_from_config(&s, cfg, cfg->dp > 0 ? cfg->dp : 1));
    const char *chunk_from = "--loss-chunk";
    if (!s.loss_chunk && s.backend->device_memory) {
        s.loss_chunk = zt_trainer_device_loss_chunk(&s, d->memory_bytes);
        chunk_from = "the device's memory (src/app/train_loss_chunk.c)";
    } else if (!s.loss_chunk) {
        s.loss_chunk = zt_gpt2_auto_loss_chunk(s.shape.padded_vocab, s.micro_batch * s.seq,
                                               (size_t)s.param_bytes);
        chunk_from = "the host rule (zt_gpt2_auto_loss_chunk)";
    }
    zt_op_record *ops = calloc(1, sizeof *ops);
    zt_op_shapes *shapes = calloc(1, sizeof *shapes);
    ZT_ASSERT(ops && shapes);
    size_t numel = 0;
    zt_status st = zt_plan_step_ops(&s, ops, shapes, &numel);
    FILE *f = st == ZT_OK ? fopen(path, "w") : NULL;
    if (st == ZT_OK && !f)
        st = zt_errorf("--ops-json %s: cannot write it (%s): give a writable path", path,
                       strerror(errno));
    if (f) {
        write_header(f, &s, d, chunk_from, numel);
        write_ops(f, ops, shapes);
        fprintf(f, "}\n");
        if (fclose(f) != 0)
            st = zt_errorf("--ops-json %s: the write failed (%s): check the disk", path,
                           strerror(errno));
    }
    free(ops);
    free(shapes);
    return st;
}
