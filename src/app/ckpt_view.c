// The checkpoint's view of a configured run (ckpt_view.h).
#include "ckpt_view.h"

zt_ckpt_run zt_ckpt_view_of(const zt_config *c) {
    zt_ckpt_run r = {
        .dir = c->ckpt_dir,
        .keep = c->ckpt_keep,
        .lr_schedule = zt_config_enum_name("lr-schedule", (int)c->lr_schedule),
    };
    // the options the checkpoint records, by the list that declares them (ckpt.h)
#define COPY_OPTION(type, name) r.name = c->name;
    ZT_CKPT_RUN_OPTIONS(COPY_OPTION)
#undef COPY_OPTION
    return r;
}
