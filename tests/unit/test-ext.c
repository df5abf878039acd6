/* test-ext.c - unit tests of the extension interface (src/probes/ext.h,
 * src/core/ext.c): columns, units, fills and per-call values; regions an
 * extension does not take staying on the inlined path; hook order around the
 * timestamps; thread attach/detach; aggregation folds and per-region totals;
 * resolve and late values; groups emitted under rank<N>/; decline and setup
 * errors; fork; the current-region accessor; bounded-memory streaming with
 * columns. Test extensions are registered by each case (cases run in their
 * own processes, so registrations do not leak between them).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "core/core.h"
#include "harness.h"
#include "h5util.h"
#include "probes/ext.h"
#include "scope_profiler.h"
#include "scope_profiler/results.h"

static sp_manager *setup_with(const char *const *overrides) {
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  sp_setup_args a = {.overrides = overrides};
  ASSERT_OK(sp_manager_setup(m, &a));
  return m;
}

static int always(const struct sp_config *c) {
  (void)c;
  return 1;
}

/*====== A counter column probe ======*/

static int64_t counter; /* what the probe "counts" */
static int enters, exits, attaches, detaches, resolves;
static pid_t detach_tid[16];

static const struct sp_ext_col count_cols[] = {
    {"test_deltas", "count", 0, SP_EXT_FOLD_SUM, -1},
    {"test_scratch", "count", SP_EXT_COL_SCRATCH, SP_EXT_FOLD_NONE, 0},
};
static sp_status count_setup(struct sp_ext_setup *s, void **proc) {
  *proc = &counter;
  s->cols = count_cols;
  s->ncols = 2;
  return SP_OK;
}
static int count_attach(void *proc, const struct sp_ext_thread *th, void **thr) {
  (void)proc;
  (void)th;
  __atomic_fetch_add(&attaches, 1, __ATOMIC_RELAXED);
  *thr = malloc(16);
  return *thr ? 0 : -1;
}
static void count_detach(void *proc, void *thr) {
  (void)proc;
  int k = __atomic_fetch_add(&detaches, 1, __ATOMIC_RELAXED);
  if (k < 16) detach_tid[k] = (pid_t)syscall(SYS_gettid);
  free(thr);
}
static void count_enter(void *proc, void *thr, const struct sp_ext_call *c) {
  ASSERT(proc == &counter && thr != NULL);
  __atomic_fetch_add(&enters, 1, __ATOMIC_RELAXED);
  c->cols[0] = counter;
  c->cols[1] = 12345; /* scratch: never written */
}
static void count_exit(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)proc;
  (void)thr;
  __atomic_fetch_add(&exits, 1, __ATOMIC_RELAXED);
  ASSERT_EQ(c->cols[1], 12345);
  c->cols[0] = counter - c->cols[0];
}
static int take_tagged(void *proc, uint32_t id, const struct sp_ext_region *r) {
  (void)proc;
  (void)id;
  for (size_t i = 0; i < r->ntags; i++)
    if (strcmp(r->tags[i], "counted") == 0) return 1;
  return 0;
}

static struct sp_ext count_ext = {
    .abi = SP_EXT_ABI,
    .name = "test_count",
    .kind = SP_EXT_COLUMNS | SP_EXT_AGGREGATE,
    .wanted = always,
    .setup = count_setup,
    .thread_attach = count_attach,
    .thread_detach = count_detach,
    .enter = count_enter,
    .exit = count_exit,
};

SP_TEST(column_probe_per_call_values_units_and_scratch) {
  ASSERT_EQ(sp__ext_register(&count_ext), 0);
  const char *ov[] = {"file_path=col.h5", NULL};
  sp_manager *m = setup_with(ov);
  sp_region r = sp_region_intern("probed");
  for (int i = 0; i < 5; i++) {
    sp_region_begin(m, r);
    counter += i;
    sp_region_end(m, r);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long n;
  int64_t *d = h5_i64("col.h5", "/events/test_deltas", &n);
  ASSERT_EQ(n, 5);
  for (int i = 0; i < 5; i++) ASSERT_EQ(d[i], i);
  free(d);
  char *unit = h5_attr_str("col.h5", "/events/test_deltas", "units");
  ASSERT(unit != NULL);
  ASSERT_STR_EQ(unit, "count");
  free(unit);
  ASSERT_EQ(h5_raw_len("col.h5", "/events/test_scratch"), -1); /* scratch is not written */
  ASSERT_EQ(exits, enters); /* the setup's calibration calls went through it as well */
  sp_manager_destroy(m);
}

SP_TEST(selective_extension_leaves_other_regions_inline) {
  count_ext.region_added = take_tagged;
  ASSERT_EQ(sp__ext_register(&count_ext), 0);
  const char *ov[] = {"file_path=sel.h5", NULL};
  sp_manager *m = setup_with(ov);
  ASSERT_EQ(m->hot.state & ~SP_I_STATE_CLOCK, SP_I_STATE_TIMELINE | SP_I_STATE_EXT);
  sp_region counted = sp_region_intern_ex("counted", NULL, -1, NULL, "counted");
  sp_region plain = sp_region_intern("plain");
  int e0 = enters;
  for (int i = 0; i < 10; i++) {
    sp_region_begin(m, plain);
    sp_region_begin(m, counted);
    counter += 2;
    sp_region_end(m, counted);
    sp_region_end(m, plain);
  }
  ASSERT_EQ(enters - e0, 10);
  ASSERT_EQ(exits, enters);
  ASSERT(sp_i_ext_plain(&m->hot, plain));
  ASSERT(!sp_i_ext_plain(&m->hot, counted));
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long n;
  int64_t *d = h5_i64("sel.h5", "/events/test_deltas", &n);
  ASSERT_EQ(n, 20);
  /* rows in region-id order: "counted" first, each call 2; "plain" never taken: the fill */
  for (int i = 0; i < 10; i++) ASSERT_EQ(d[i], 2);
  for (int i = 10; i < 20; i++) ASSERT_EQ(d[i], -1);
  free(d);
  sp_manager_destroy(m);
}

SP_TEST(no_extension_means_fully_inline_state) {
  const char *ov[] = {"deactivate_file_output=1", NULL};
  sp_manager *m = setup_with(ov);
  ASSERT_EQ(m->hot.state & ~SP_I_STATE_CLOCK, SP_I_STATE_TIMELINE);
  ASSERT_EQ(m->ext_stride, 0);
  sp_manager_destroy(m);
}

/*====== Order of hooks around the timestamps ======*/

static char trace[256];
static size_t ntrace;
static void note(char c) {
  if (ntrace + 1 < sizeof trace) trace[ntrace++] = c;
}
static void fw_enter(void *p, void *t, const struct sp_ext_call *c) {
  (void)p;
  (void)t;
  ASSERT(c->cols == NULL);
  note('F');
  sp__clock_manual_advance(1000); /* an outside extension's time is not the call's */
}
static void fw_exit(void *p, void *t, const struct sp_ext_call *c) {
  (void)p;
  (void)t;
  (void)c;
  note('f');
  sp__clock_manual_advance(1000);
}
static void in_enter(void *p, void *t, const struct sp_ext_call *c) {
  (void)p;
  (void)t;
  (void)c;
  note('I');
  sp__clock_manual_advance(7); /* an inside extension's time is */
}
static void in_exit(void *p, void *t, const struct sp_ext_call *c) {
  (void)p;
  (void)t;
  (void)c;
  note('i');
  sp__clock_manual_advance(7);
}
static const struct sp_ext fw_ext = {
    .abi = SP_EXT_ABI, .name = "test_forward", .kind = SP_EXT_FORWARD, .wanted = always,
    .enter = fw_enter, .exit = fw_exit};
static const struct sp_ext in_ext = {
    .abi = SP_EXT_ABI, .name = "test_inside", .kind = SP_EXT_FORWARD | SP_EXT_INSIDE, .wanted = always,
    .enter = in_enter, .exit = in_exit};

SP_TEST(outside_hooks_stay_out_of_the_interval_inside_ones_count) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  ASSERT_EQ(sp__ext_register(&fw_ext), 0);
  ASSERT_EQ(sp__ext_register(&in_ext), 0);
  const char *ov[] = {"file_path=order.h5", NULL};
  sp_manager *m = setup_with(ov);
  ASSERT_EQ(m->hot.state & ~SP_I_STATE_CLOCK, SP_I_STATE_SLOW); /* forwarders without a region filter take every region */
  sp_region a = sp_region_intern("a"), b = sp_region_intern("b");
  ntrace = 0;
  sp_region_begin(m, a);
  sp__clock_manual_advance(100);
  sp_region_begin(m, b);
  sp__clock_manual_advance(50);
  sp_region_end(m, b);
  sp_region_end(m, a);
  trace[ntrace] = 0;
  ASSERT_STR_EQ(trace, "FIFIifif");
  sp_results *res = NULL;
  sp_finalize_args fa = {.return_results = 1};
  ASSERT_OK(sp_manager_finalize(m, &fa, &res));
  long long n;
  int64_t *st = h5_schema3_events("order.h5", 0, &n), *en = h5_schema3_events("order.h5", 1, &n);
  ASSERT_EQ(n, 2);
  /* b: inside enter (7) + 50 + inside exit (7); a: that plus b's outside hooks (2000) + a's inside 14 + 100 */
  ASSERT_EQ(en[1] - st[1], 7 + 50 + 7);
  ASSERT_EQ(en[0] - st[0], 7 + 100 + 1000 + 7 + 50 + 7 + 1000 + 7);
  free(st);
  free(en);
  sp_results_free(res);
  sp_manager_destroy(m);
}

/*====== Threads ======*/

static sp_manager *tm;
static sp_region tr;
static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) {
    sp_region_begin(tm, tr);
    sp_region_end(tm, tr);
  }
  return NULL;
}

SP_TEST(threads_attach_on_first_call_and_detach_at_exit) {
  ASSERT_EQ(sp__ext_register(&count_ext), 0);
  const char *ov[] = {"deactivate_file_output=1", NULL};
  tm = setup_with(ov);
  int a0 = attaches; /* the setup's calibration attached and detached its own record */
  ASSERT_EQ(detaches, a0);
  tr = sp_region_intern("threaded");
  pthread_t th[3];
  pid_t tids[3];
  for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, worker, NULL);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  (void)tids;
  ASSERT_EQ(attaches - a0, 3);
  ASSERT_EQ(detaches - a0, 3);
  for (int i = a0; i < a0 + 3; i++) ASSERT_NE(detach_tid[i], (pid_t)syscall(SYS_gettid)); /* on their own threads */
  sp_region_begin(tm, tr); /* the main thread attaches too, and is detached at destroy */
  sp_region_end(tm, tr);
  ASSERT_EQ(attaches - a0, 4);
  sp_manager_destroy(tm);
  ASSERT_EQ(detaches, attaches);
}

/*====== Totals, emit, aggregation ======*/

static struct {
  size_t n;
  uint64_t calls[8], taken[8];
  int64_t values[8];
  char names[8][32];
  int emits;
} seen;

static sp_status count_emit(void *proc, struct sp_ext_emit *out) {
  (void)proc;
  const struct sp_ext_totals *t = sp_ext_totals(out);
  seen.emits++;
  seen.n = t->n;
  for (size_t i = 0; i < t->n && i < 8; i++) {
    seen.calls[i] = t->calls[i];
    seen.taken[i] = t->taken[i * (size_t)t->ncols];
    seen.values[i] = t->values[i * (size_t)t->ncols];
    snprintf(seen.names[i], sizeof seen.names[i], "%s", sp_region_name(t->region[i]));
    char *g = sp_ext_group_name(sp_region_name(t->region[i]));
    char *path = malloc(strlen(g) + 16);
    sprintf(path, "test_totals/%s", g);
    struct sp_ext_group *grp = sp_ext_group(out, path);
    ASSERT(grp != NULL);
    ASSERT_OK(sp_ext_group_attr_i64(grp, "calls", (int64_t)t->calls[i]));
    const char *names[] = {"test_deltas"};
    ASSERT_OK(sp_ext_group_attr_strlist(grp, "event_names", names, 1));
    uint64_t one = 1, v = (uint64_t)t->values[i * (size_t)t->ncols];
    ASSERT_OK(sp_ext_group_dset(grp, "values", SP_EXT_U64, 1, &one, &v));
    free(path);
    free(g);
  }
  return SP_OK;
}

SP_TEST(timeline_totals_are_per_region_sums_and_groups_are_written) {
  count_ext.emit = count_emit;
  ASSERT_EQ(sp__ext_register(&count_ext), 0);
  const char *ov[] = {"file_path=tot.h5", NULL};
  sp_manager *m = setup_with(ov);
  sp_region a = sp_region_intern("solver/a"), b = sp_region_intern("b");
  for (int i = 0; i < 4; i++) {
    sp_region_begin(m, a);
    counter += 3;
    sp_region_begin(m, b);
    counter += 1;
    sp_region_end(m, b);
    sp_region_end(m, a);
  }
  sp_region_begin(m, a); /* open across finalize: not in this run's totals */
  ASSERT_EQ(sp_manager_finalize(m, NULL, NULL), SP_ERR_OPEN_SCOPES);
  ASSERT_EQ(seen.emits, 1);
  size_t ia = strcmp(seen.names[0], "solver/a") == 0 ? 0 : 1, ib = 1 - ia;
  ASSERT_EQ(seen.n, 2 + (strcmp(seen.names[0], "scope_profiler.calibration") == 0));
  ASSERT_STR_EQ(seen.names[ia], "solver/a");
  ASSERT_EQ(seen.calls[ia], 4);
  ASSERT_EQ(seen.taken[ia], 4);
  ASSERT_EQ(seen.values[ia], 16);
  ASSERT_EQ(seen.calls[ib], 4);
  ASSERT_EQ(seen.values[ib], 4);
  ASSERT_EQ(h5_attr_i64("tot.h5", "/rank0/test_totals/solver|a", "calls"), 4);
  long long n;
  int64_t *v = h5_i64("tot.h5", "/rank0/test_totals/solver|a/values", &n);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(v[0], 16);
  free(v);
  /* The open call completes into the next run, its counter with it. */
  counter += 5;
  sp_region_end(m, a);
  const char *ov2[] = {"file_path=tot2.h5", NULL};
  (void)ov2;
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(seen.emits, 2);
  ASSERT_EQ(seen.n, 1);
  ASSERT_EQ(seen.calls[0], 1);
  ASSERT_EQ(seen.values[0], 5);
  sp_manager_destroy(m);
}

SP_TEST(aggregation_mode_folds_columns_per_region) {
  count_ext.emit = count_emit;
  count_ext.region_added = take_tagged;
  ASSERT_EQ(sp__ext_register(&count_ext), 0);
  const char *ov[] = {"file_path=agg.h5", "aggregation_mode=1", NULL};
  sp_manager *m = setup_with(ov);
  ASSERT_EQ(m->hot.state & ~SP_I_STATE_CLOCK, SP_I_STATE_AGGREGATE | SP_I_STATE_EXT);
  sp_region c = sp_region_intern_ex("agg.counted", NULL, -1, NULL, "counted"), p = sp_region_intern("agg.plain");
  for (int i = 0; i < 6; i++) {
    sp_region_begin(m, p);
    sp_region_begin(m, c);
    counter += i;
    sp_region_end(m, c);
    sp_region_end(m, p);
  }
  ASSERT(sp_i_ext_plain(&m->hot, p));
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  int found = 0;
  for (size_t i = 0; i < seen.n; i++) {
    if (strcmp(seen.names[i], "agg.counted") == 0) {
      ASSERT_EQ(seen.calls[i], 6);
      ASSERT_EQ(seen.taken[i], 6);
      ASSERT_EQ(seen.values[i], 0 + 1 + 2 + 3 + 4 + 5);
      found++;
    }
    if (strcmp(seen.names[i], "agg.plain") == 0) {
      ASSERT_EQ(seen.calls[i], 6);
      ASSERT_EQ(seen.taken[i], 0);
      found++;
    }
  }
  ASSERT_EQ(found, 2);
  /* the aggregate layout still has the right counts */
  ASSERT_EQ(h5_region_index("agg.h5", "agg.counted") >= 0, 1);
  sp_manager_destroy(m);
}

/*====== Late values (resolve), GPU summary ======*/

static const struct sp_ext_col late_cols[] = {{"test_gpu_ns", "ns", SP_EXT_COL_GPU, SP_EXT_FOLD_SUM, -1}};
static uint64_t late_slots[64];
static int nlate;
static sp_status late_setup(struct sp_ext_setup *s, void **proc) {
  (void)proc;
  s->cols = late_cols;
  s->ncols = 1;
  return SP_OK;
}
static void late_exit(void *p, void *t, const struct sp_ext_call *c) {
  (void)p;
  (void)t;
  if (nlate < 64) late_slots[nlate++] = c->slot; /* the value arrives later */
}
static void late_resolve(void *p, void *t, const struct sp_ext_thread *th, uint64_t n) {
  (void)p;
  (void)t;
  resolves++;
  for (int i = 0; i < nlate; i++) {
    if (late_slots[i] >= n) continue;
    int64_t *col = sp_ext_cols_at(th, late_slots[i]);
    ASSERT(col != NULL);
    col[0] = 100 * (i + 1);
  }
  nlate = 0;
}
static const struct sp_ext late_ext = {
    .abi = SP_EXT_ABI, .name = "test_late", .kind = SP_EXT_COLUMNS | SP_EXT_INSIDE, .wanted = always,
    .setup = late_setup, .exit = late_exit, .resolve = late_resolve};

SP_TEST(resolve_patches_late_values_and_gpu_column_feeds_the_summary) {
  ASSERT_EQ(sp__ext_register(&late_ext), 0);
  const char *ov[] = {"file_path=late.h5", NULL};
  sp_manager *m = setup_with(ov);
  nlate = 0; /* the calibration's calls */
  sp_region g = sp_region_intern("kernel");
  for (int i = 0; i < 3; i++) {
    sp_region_begin(m, g);
    sp_region_end(m, g);
  }
  ASSERT_EQ(nlate, 3);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_GE(resolves, 1);
  long long n;
  int64_t *v = h5_i64("late.h5", "/events/test_gpu_ns", &n);
  ASSERT_EQ(n, 3);
  ASSERT_EQ(v[0] + v[1] + v[2], 100 + 200 + 300);
  free(v);
  uint64_t gc;
  int64_t gt;
  ASSERT_EQ(h5_gpu_stats("late.h5", "kernel", &gc, &gt), 0);
  ASSERT_EQ(gc, 3);
  ASSERT_EQ(gt, 600);
  sp_manager_destroy(m);
}

/*====== Decline, errors, user slot ======*/

static sp_status decline_setup(struct sp_ext_setup *s, void **proc) {
  (void)proc;
  sp_ext_warn(s->manager, "test_decline: not available in this test (no device)");
  s->decline = 1;
  return SP_OK;
}
static const struct sp_ext decline_ext = {
    .abi = SP_EXT_ABI, .name = "test_decline", .kind = SP_EXT_FORWARD, .wanted = always, .setup = decline_setup,
    .enter = fw_enter};

SP_TEST(declined_extension_warns_once_and_the_run_goes_on) {
  ASSERT_EQ(sp__ext_register(&decline_ext), 0);
  const char *ov[] = {"file_path=decl.h5", NULL};
  sp_manager *m = setup_with(ov);
  ASSERT_EQ(m->next, 0);
  ASSERT_EQ(m->hot.state & ~SP_I_STATE_CLOCK, SP_I_STATE_TIMELINE);
  sp_region r = sp_region_intern("r");
  sp_region_begin(m, r);
  sp_region_end(m, r);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT(h5_attr_exists("decl.h5", "/metadata", "warnings"));
  ASSERT_EQ(h5_region_events("decl.h5", "r"), 1);
  sp_manager_destroy(m);
}

static sp_status failing_setup(struct sp_ext_setup *s, void **proc) {
  (void)s;
  (void)proc;
  return sp__set_error(SP_ERR_UNSUPPORTED, "test_fail: event 'bogus' cannot be opened: no such event");
}
static const struct sp_ext failing_ext = {
    .abi = SP_EXT_ABI, .name = "test_fail", .kind = SP_EXT_FORWARD, .wanted = always, .setup = failing_setup};

SP_TEST(setup_error_of_an_extension_fails_setup_with_its_message) {
  ASSERT_EQ(sp__ext_register(&count_ext), 0);
  ASSERT_EQ(sp__ext_register(&failing_ext), 0);
  sp_manager *m = sp_manager_create();
  sp_setup_args a = {0};
  ASSERT_EQ(sp_manager_setup(m, &a), SP_ERR_UNSUPPORTED);
  ASSERT_CONTAINS(sp_last_error(), "bogus");
  ASSERT_EQ(m->next, 0); /* what was set up before it is torn down */
  ASSERT_EQ(sp_manager_is_active(m), 0);
  sp_manager_destroy(m);
}

SP_TEST(registration_refuses_another_abi_and_duplicate_columns) {
  struct sp_ext old = fw_ext;
  old.abi = SP_EXT_ABI + 1;
  ASSERT_EQ(sp__ext_register(&old), -1);
  struct sp_ext twin = count_ext;
  twin.name = "test_twin";
  ASSERT_EQ(sp__ext_register(&count_ext), 0);
  ASSERT_EQ(sp__ext_register(&twin), 0);
  sp_manager *m = sp_manager_create();
  sp_setup_args a = {0};
  ASSERT_EQ(sp_manager_setup(m, &a), SP_ERR_CONFLICT);
  ASSERT_CONTAINS(sp_last_error(), "test_deltas");
  sp_manager_destroy(m);
}

static sp_status slot_setup(struct sp_ext_setup *s, void **proc) {
  *proc = *s->user; /* what a public call stored before setup */
  return SP_OK;
}
static void slot_enter(void *p, void *t, const struct sp_ext_call *c) {
  (void)t;
  (void)c;
  (*(int *)p)++;
}
static const struct sp_ext slot_ext = {
    .abi = SP_EXT_ABI, .name = "test_slot", .kind = SP_EXT_FORWARD, .wanted = always, .setup = slot_setup,
    .enter = slot_enter};

SP_TEST(user_slot_reaches_setup_and_survives_setups) {
  ASSERT_EQ(sp__ext_register(&slot_ext), 0);
  sp_manager *m = sp_manager_create();
  static int hits;
  void **slot = sp__ext_user_slot(m, "test_slot");
  ASSERT(slot != NULL);
  *slot = &hits;
  ASSERT(sp__ext_user_slot(m, "test_slot") == slot);
  const char *ov[] = {"deactivate_file_output=1", NULL};
  sp_setup_args a = {.overrides = ov, .replace = 1};
  ASSERT_OK(sp_manager_setup(m, &a));
  sp_region r = sp_region_intern("s");
  int h0 = hits;
  sp_region_begin(m, r);
  sp_region_end(m, r);
  ASSERT_EQ(hits - h0, 1);
  ASSERT_OK(sp_manager_setup(m, &a));
  h0 = hits; /* after the new setup's calibration */
  sp_region_begin(m, r);
  sp_region_end(m, r);
  ASSERT_EQ(hits - h0, 1);
  sp_manager_destroy(m);
}

/*====== A call open across a setup ======*/

SP_TEST(call_open_across_setup_gets_no_exit_of_the_new_setup) {
  ASSERT_EQ(sp__ext_register(&count_ext), 0);
  const char *ov[] = {"deactivate_file_output=1", NULL};
  sp_manager *m = setup_with(ov);
  sp_region r = sp_region_intern("open");
  sp_region_begin(m, r);
  int e0 = enters, x0 = exits;
  sp_setup_args a = {.overrides = ov, .replace = 1};
  ASSERT_OK(sp_manager_setup(m, &a));
  e0 = enters - e0; /* the calibration of the new setup: balanced */
  ASSERT_EQ(exits - x0, e0);
  x0 = exits;
  sp_region_end(m, r);
  ASSERT_EQ(exits, x0); /* its enter ran under the old setup */
  sp_manager_destroy(m);
}

/*====== Fork ======*/

static int forks_seen;
static void fork_hook(void *p) {
  (void)p;
  forks_seen++;
}
static const struct sp_ext fork_ext = {
    .abi = SP_EXT_ABI, .name = "test_fork", .kind = SP_EXT_SOURCE, .wanted = always, .after_fork = fork_hook};

SP_TEST(after_fork_runs_in_the_child_only) {
  ASSERT_EQ(sp__ext_register(&fork_ext), 0);
  const char *ov[] = {"deactivate_file_output=1", NULL};
  sp_manager *m = setup_with(ov);
  ASSERT_EQ(m->ext_stride, 0); /* a source alone needs no columns */
  ASSERT_EQ(m->hot.state & ~SP_I_STATE_CLOCK, SP_I_STATE_TIMELINE | SP_I_STATE_EXT);
  pid_t pid = fork();
  if (pid == 0) _exit(forks_seen == 1 && m->next == 0 ? 0 : 1);
  int status;
  waitpid(pid, &status, 0);
  ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(forks_seen, 0);
  sp_manager_destroy(m);
}

/*====== The current region, from a signal handler ======*/

static sp_manager *sig_m;
static volatile uint32_t sig_seen;
static void on_sig(int s) {
  (void)s;
  sig_seen = sp_ext_current_region(sig_m);
}
static uint32_t current_now(void) {
  raise(SIGUSR2);
  return sig_seen;
}

SP_TEST(current_region_is_async_signal_safe_and_exact) {
  const char *ov[] = {"deactivate_file_output=1", "buffer_limit=2", NULL};
  sig_m = setup_with(ov);
  signal(SIGUSR2, on_sig);
  sp_region a = sp_region_intern("cur.a"), b = sp_region_intern("cur.b");
  ASSERT_EQ(current_now(), 0);
  sp_region_begin(sig_m, a);
  ASSERT_EQ(current_now(), a);
  for (int i = 0; i < 100; i++) { /* growth on the way */
    sp_region_begin(sig_m, b);
    ASSERT_EQ(current_now(), b);
    sp_region_end(sig_m, b);
  }
  ASSERT_EQ(current_now(), a);
  sp_region_end(sig_m, a);
  ASSERT_EQ(current_now(), 0);
  sp_manager_pause(sig_m);
  sp_region_begin(sig_m, a);
  ASSERT_EQ(current_now(), 0); /* a call begun while paused is not recorded */
  sp_region_end(sig_m, a);
  sp_manager_resume(sig_m);
  sp_manager_destroy(sig_m);
  /* aggregation mode too */
  const char *ova[] = {"deactivate_file_output=1", "aggregation_mode=1", NULL};
  sig_m = setup_with(ova);
  sp_region_begin(sig_m, a);
  sp_region_begin(sig_m, b);
  ASSERT_EQ(current_now(), b);
  sp_region_end(sig_m, b);
  ASSERT_EQ(current_now(), a);
  sp_region_end(sig_m, a);
  sp_manager_destroy(sig_m);
}

/*====== Bounded memory: columns through the staging file ======*/

SP_TEST(streamed_run_keeps_columns_and_fills) {
  count_ext.region_added = take_tagged;
  count_ext.emit = count_emit;
  ASSERT_EQ(sp__ext_register(&count_ext), 0);
  /* 1 MiB budget, tiny buffers: the run streams */
  const char *ov[] = {"file_path=str.h5", "buffer_limit=1024", "max_buffer_bytes=1048576", NULL};
  sp_manager *m = setup_with(ov);
  sp_region c = sp_region_intern_ex("s.counted", NULL, -1, NULL, "counted"), p = sp_region_intern("s.plain");
  enum { N = 60000 };
  for (int i = 0; i < N; i++) {
    sp_region r = i % 3 ? p : c;
    sp_region_begin(m, r);
    counter += 1;
    sp_region_end(m, r);
  }
  ASSERT(m->stream != NULL);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long n;
  int64_t *d = h5_i64("str.h5", "/events/test_deltas", &n);
  ASSERT_EQ(n, N);
  long long nc = h5_region_events("str.h5", "s.counted");
  ASSERT_EQ(nc, N / 3);
  /* rows in region-id order: s.counted's calls (1 each), then s.plain's (fill) */
  for (long long i = 0; i < n; i++) ASSERT_EQ(d[i], i < nc ? 1 : -1);
  free(d);
  for (size_t i = 0; i < seen.n; i++)
    if (strcmp(seen.names[i], "s.counted") == 0) {
      ASSERT_EQ(seen.taken[i], N / 3);
      ASSERT_EQ(seen.values[i], N / 3);
    }
  sp_manager_destroy(m);
}

/*====== The innermost region seen from a signal at every instruction ======*/

/* A line sample's signal may land on any instruction of an inlined begin:
 * sp_ext_current_region() must then answer the call's parent (nothing, here)
 * or the call, never the region an earlier call left in the entry the push
 * takes. The begin runs under the trap flag (x86-64), so a SIGTRAP follows
 * every instruction, and the handler asks at each. Before the push stored
 * the region ahead of the pointer or depth that publishes it, the
 * aggregation begin answered the earlier call's region between the two. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <ucontext.h>
static sp_manager *step_m;
static sp_region step_ok;
static volatile sig_atomic_t step_on;
static volatile uint32_t step_n, step_bad, step_bad_r;
static void step_trap(int sig, siginfo_t *si, void *ucv) {
  (void)sig;
  (void)si;
  ucontext_t *uc = ucv;
  uint32_t r = sp_ext_current_region(step_m);
  step_n++;
  if (r != 0 && r != step_ok) {
    step_bad++;
    step_bad_r = r;
  }
  if (!step_on) uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)0x100; /* the trap flag: stepping ends */
}
static void step_case(const char *mode) {
  const char *const ov[] = {mode, NULL};
  step_m = setup_with(ov);
  sp_region a = sp_region_intern("step_earlier"), b = sp_region_intern("step_stepped");
  ASSERT_OK(sp_region_begin(step_m, b)); /* b's handle goes inline from now on */
  ASSERT_OK(sp_region_end(step_m, b));
  /* the entry the next push takes holds a's call, ended */
  ASSERT_OK(sp_region_begin(step_m, a));
  ASSERT_OK(sp_region_end(step_m, a));
  ASSERT_EQ(sp_ext_current_region(step_m), 0);
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = step_trap;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGTRAP, &sa, &old), 0);
  step_ok = b;
  step_n = step_bad = 0;
  step_on = 1;
  __asm__ volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
  int rc = sp_region_begin(step_m, b);
  step_on = 0;
  __asm__ volatile("nop\n\tnop" ::: "memory"); /* the trap after which the flag goes */
  sigaction(SIGTRAP, &old, NULL);
  ASSERT_OK(rc);
  if (step_n == 0) SKIP("no single-step traps delivered here (valgrind?)");
  ASSERT_EQ(sp_ext_current_region(step_m), b);
  ASSERT_OK(sp_region_end(step_m, b));
  fprintf(stderr, "# %u of %u steps answered region %u (the earlier call's)\n", step_bad, step_n, step_bad_r);
  ASSERT_EQ(step_bad, 0);
  sp_manager_destroy(step_m);
}
SP_TEST(current_region_at_every_step_of_a_timeline_begin) { step_case("file_path=step.h5"); }
SP_TEST(current_region_at_every_step_of_an_aggregation_begin) { step_case("aggregation_mode=1"); }
#endif

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
