// A resume whose checkpoint is already at --steps: the run is complete, nothing is trained.
// The same command rerun after a kill that came after the last checkpoint's commit (a
// requeued job, scripts/slurm_train.sbatch) finishes what that kill left undone in --ckpt-dir
// and exits 0, as a retry expects; one line says that nothing was trained
// (docs/checkpoints.md, "A complete run resumed").
#include "train.h"

#include "ckpt.h"

// Rank 0: the --ckpt-dir under its lock, as a run's start takes it: a dead run's leftovers
// removed, nothing newer than `step`, then the interrupted end of step-N's save finished.
static zt_status finish_ckpt_dir(const zt_config *c, int step) {
    int lock = -1;
    zt_status s = zt_ckpt_lock(c->ckpt_dir, &lock);
    // held (not a file system without flock): no other run writes there
    if (s == ZT_OK && lock >= 0) s = zt_ckpt_remove_interrupted(c->ckpt_dir);
    if (s == ZT_OK) s = zt_ckpt_check_dir(c->ckpt_dir, step);
    if (s == ZT_OK && lock >= 0) s = zt_ckpt_finish_commit(c->ckpt_dir, step, c->ckpt_keep);
    zt_ckpt_unlock(lock);
    return s;
}

zt_status zt_train_complete(const zt_config *c, int step) {
    if (c->ckpt_dir[0]) ZT_TRY(finish_ckpt_dir(c, step));
    printf("complete: the checkpoint %s is at step %d and --steps is %d: this run had already "
           "finished, nothing to train (raise --steps to train further)\n", c->resume, step,
           c->steps);
    // a run killed after its last checkpoint may not have written --save
    if (c->save[0])
        printf("complete: --save %s is not written again; `zerotrain export %s --out %s` "
               "writes it from the checkpoint\n", c->save, c->resume, c->save);
    fflush(stdout);
    return ZT_OK;
}
