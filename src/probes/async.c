/* async.c - track_async's two event columns as a column probe: the task a
 * call ran in (events/task_ids, -1 for the thread's own context; the core
 * places calls in per-task lanes by it) and the time that task spent
 * switched out while the call was open (events/await_ns, upstream's name).
 *
 * The task bookkeeping itself (sp_task_switch, the task table) is the
 * core's; this probe reads the running task through sp_ext_task(). A task
 * keeps a running total of its switched-out ticks, so a call's await time is
 * the total at its end minus the total at its begin: O(1), exact.
 */
#include "config/config_internal.h"
#include "output/plan.h"
#include "probes/ext.h"

static const struct sp_ext_col async_cols[] = {
    {SP_PLAN_TASK_IDS, "index", 0, SP_EXT_FOLD_NONE, -1},
    {SP_PLAN_AWAIT_NS, "ns", SP_EXT_COL_TICKS, SP_EXT_FOLD_SUM, 0},
};

/* Per-call columns only: aggregation_mode keeps no calls (the task table is still written). */
static int async_wanted(const struct sp_config *cfg) { return cfg->track_async && !cfg->aggregation_mode; }

static sp_status async_setup(struct sp_ext_setup *s, void **proc) {
  (void)proc;
  s->cols = async_cols;
  s->ncols = 2;
  return SP_OK;
}

static void async_enter(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)proc;
  (void)thr;
  uint32_t index;
  uint64_t suspended;
  if (sp_ext_task(c->thread, &index, &suspended)) {
    c->cols[0] = index;
    c->cols[1] = (int64_t)suspended;
  } else {
    c->cols[0] = -1;
    c->cols[1] = 0;
  }
}

/* The call's task is running again when it ends (its calls are on its own
 * stack), so its running total includes every switch-out since the begin. */
static void async_exit(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)proc;
  (void)thr;
  uint32_t index;
  uint64_t suspended;
  c->cols[1] = sp_ext_task(c->thread, &index, &suspended) ? (int64_t)suspended - c->cols[1] : 0;
}

const struct sp_ext sp__ext_async = {
    .abi = SP_EXT_ABI,
    .name = "track_async",
    .kind = SP_EXT_COLUMNS | SP_EXT_LANES,
    .wanted = async_wanted,
    .setup = async_setup,
    .enter = async_enter,
    .exit = async_exit,
};
