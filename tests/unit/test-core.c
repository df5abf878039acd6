/* test-core.c - unit tests of the core: managers, regions, threads, the run
 * lifecycle and what finalize writes. Files are checked with raw HDF5 calls
 * (tests/h5util.h), independently of our reader. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/core.h"
#include "harness.h"
#include "setup_util.h"
#include "h5util.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"
#include "scope_profiler/results.h"

/*====== Call counts for every region form ======*/

static int wrapped_fn_calls;
static int wrapped(int x) {
  SP_FUNCTION_M(SP_DEFAULT);
  wrapped_fn_calls++;
  return x + 1;
}

SP_TEST(exact_counts_every_form) {
  const char *ov[] = {"file_path=counts.h5", NULL};
  sp_setup_args a = {.overrides = ov};
  ASSERT_OK(sp_setup(&a));
  sp_region r = sp_region_intern("explicit");
  for (int i = 0; i < 10; i++) {
    ASSERT_OK(sp_begin(r));
    ASSERT_OK(sp_end(r));
  }
  for (int i = 0; i < 20; i++) {
    SP_REGION("scoped");
  }
  int acc = 0;
  for (int i = 0; i < 7; i++) acc = wrapped(acc);
  ASSERT_EQ(acc, 7);
  for (int i = 0; i < 5; i++) acc = SP_CALL("call_expr", wrapped(acc));
  for (int i = 0; i < 3; i++) SP_CALL("call_void", sp_test_busy(10));
  ASSERT_EQ(sp_manager_num_calls(SP_DEFAULT, r), 10);
  ASSERT_OK(sp_finalize(NULL, NULL));
  ASSERT_EQ(h5_region_events("counts.h5", "explicit"), 10);
  ASSERT_EQ(h5_region_events("counts.h5", "scoped"), 20);
  ASSERT_EQ(h5_region_events("counts.h5", "wrapped"), 12);
  ASSERT_EQ(h5_region_events("counts.h5", "call_expr"), 5);
  ASSERT_EQ(h5_region_events("counts.h5", "call_void"), 3);
  ASSERT_EQ(h5_len("counts.h5", "/events/start_times"), 50);
}

SP_TEST(deactivated_records_nothing_and_writes_no_file) {
  const char *ov[] = {"file_path=off.h5", "deactivate_profiling=true", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region r = sp_region_intern("x");
  for (int i = 0; i < 100; i++) {
    sp_region_begin(m, r);
    sp_region_end(m, r);
  }
  { SP_REGION_M(m, "y"); }
  ASSERT_EQ(sp_manager_is_active(m), 0);
  ASSERT_EQ(sp_manager_num_calls(m, r), 0);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT(!sp_test_file_exists("off.h5"));
  sp_manager_destroy(m);
}

SP_TEST(not_set_up_records_nothing) {
  sp_region r = sp_region_intern("early");
  ASSERT_OK(sp_begin(r));
  ASSERT_OK(sp_end(r));
  ASSERT_EQ(sp_finalize(NULL, NULL), SP_ERR_INACTIVE);
  ASSERT_CONTAINS(sp_last_error(), "setup");
}

/*====== Recursion and buffer growth ======*/

static int recurse(sp_manager *m, sp_region r, int depth) {
  sp_region_begin(m, r);
  int n = depth > 0 ? 1 + recurse(m, r, depth - 1) : 1;
  sp_region_end(m, r);
  return n;
}

SP_TEST(recursion_20_deep_buffer_limit_2) {
  const char *ov[] = {"file_path=rec.h5", "buffer_limit=2", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region r = sp_region_intern("fib");
  ASSERT_EQ(recurse(m, r, 20), 21);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("rec.h5", "fib"), 21);
  long long n;
  int64_t *s = h5_i64("rec.h5", "/events/start_times", &n);
  int64_t *e = h5_i64("rec.h5", "/events/end_times", &n);
  ASSERT_EQ(n, 21);
  /* Ordered by start: each call encloses the next ... */
  for (int i = 0; i < 21; i++) {
    ASSERT_GE(e[i], s[i]);
    if (i) {
      ASSERT_GE(s[i], s[i - 1]);
      ASSERT_LE(e[i], e[i - 1]);
    }
  }
  /* ... and is its parent, by the call ids or, when the file left them out
   * because the intervals tell the same, by the intervals */
  ASSERT_EQ(h5_len("rec.h5", "/events/call_ids") == -1, h5_len("rec.h5", "/events/parent_ids") == -1);
  for (int i = 1; i < 21 && h5_len("rec.h5", "/events/call_ids") == -1; i++)
    ASSERT(s[i] > s[i - 1] || e[i] - s[i] < e[i - 1] - s[i - 1]);
  free(s); free(e);
  sp_results *res = NULL;
  ASSERT_OK(sp_results_open("rec.h5", &res));
  sp_call *calls = NULL;
  size_t nc = 0;
  ASSERT_OK(sp_results_call_stack(res, 0, NULL, &calls, &nc, NULL));
  ASSERT_EQ(nc, 21);
  for (size_t i = 0; i < nc; i++) {
    ASSERT_EQ(calls[i].depth, i);
    ASSERT_EQ(calls[i].parent, (int64_t)i - 1);
  }
  free(calls);
  sp_results_free(res);
  sp_manager_destroy(m);
}

SP_TEST(buffer_growth_keeps_every_call) {
  const char *ov[] = {"file_path=grow.h5", "buffer_limit=4", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region r = sp_region_intern("grow");
  for (int i = 0; i < 500; i++) {
    sp_region_begin(m, r);
    sp_region_end(m, r);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long n;
  int64_t *s = h5_i64("grow.h5", "/events/start_times", &n);
  ASSERT_EQ(n, 500);
  for (int i = 1; i < 500; i++) ASSERT_GE(s[i], s[i - 1]);
  free(s);
  sp_manager_destroy(m);
}

/*====== Nesting, exclusive time, unmatched ends ======*/

SP_TEST(nesting_and_exclusive_time) {
  const char *ov[] = {"file_path=nest.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region outer = sp_region_intern("outer"), inner = sp_region_intern("inner");
  for (int k = 0; k < 3; k++) {
    sp_region_begin(m, outer);
    sp_test_busy(20000);
    sp_region_begin(m, inner);
    sp_test_busy(50000);
    sp_region_end(m, inner);
    sp_region_end(m, outer);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long k;
  int64_t *excl = h5_i64("nest.h5", "/rank_region_index/exclusive_totals", &k);
  int64_t *ids = h5_i64("nest.h5", "/rank_region_index/region_ids", &k);
  long long io = h5_region_index("nest.h5", "outer"), ii = h5_region_index("nest.h5", "inner");
  long long n;
  int64_t *s = h5_i64("nest.h5", "/events/start_times", &n);
  int64_t *e = h5_i64("nest.h5", "/events/end_times", &n);
  int64_t *off = h5_i64("nest.h5", "/rank_region_index/event_offsets", &k);
  int64_t tot[2] = {0, 0}, ex[2] = {0, 0};
  for (long long i = 0; i < k; i++) {
    int w = ids[i] == io ? 0 : ids[i] == ii ? 1 : -1;
    ASSERT(w >= 0);
    ex[w] = excl[i];
    for (int j = 0; j < 3; j++) tot[w] += e[off[i] + j] - s[off[i] + j];
  }
  ASSERT_EQ(ex[1], tot[1]);          /* innermost: exclusive == inclusive */
  ASSERT_EQ(ex[0], tot[0] - tot[1]); /* parent: minus its child, exactly */
  ASSERT_LT(ex[0], tot[0]);
  free(excl); free(ids); free(s); free(e); free(off);
  sp_manager_destroy(m);
}

SP_TEST(unmatched_end_is_refused_and_counted) {
  const char *ov[] = {"file_path=unmatched.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region a = sp_region_intern("a"), b = sp_region_intern("b");
  ASSERT_EQ(sp_region_end(m, a), SP_ERR_UNMATCHED_END); /* nothing open */
  ASSERT_OK(sp_region_begin(m, a));
  ASSERT_EQ(sp_region_end(m, b), SP_ERR_UNMATCHED_END);
  ASSERT_OK(sp_region_end(m, a));
  ASSERT_EQ(sp_manager_problems(m).unmatched_ends, 2);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("unmatched.h5", "a"), 1);
  ASSERT_EQ(h5_region_events("unmatched.h5", "b"), -1);
  ASSERT_EQ(sp_manager_problems(m).unmatched_ends, 2);
  sp_manager_destroy(m);
}

/*====== Lifecycle ======*/

SP_TEST(finalize_twice_writes_only_the_new_run) {
  const char *ov1[] = {"file_path=run1.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov1);
  sp_region a = sp_region_intern("a"), only1 = sp_region_intern("only_in_run1");
  for (int i = 0; i < 3; i++) {
    sp_region_begin(m, a);
    sp_region_end(m, a);
    sp_region_begin(m, only1);
    sp_region_end(m, only1);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  for (int i = 0; i < 5; i++) {
    sp_region_begin(m, a);
    sp_region_end(m, a);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL)); /* same file_path: replaced atomically */
  ASSERT_EQ(h5_region_events("run1.h5", "a"), 5);
  ASSERT_EQ(h5_region_events("run1.h5", "only_in_run1"), -1);
  ASSERT_EQ(sp_manager_num_calls(m, a), 8); /* running total */
  ASSERT_EQ(sp_manager_num_calls(m, only1), 3);
  sp_manager_destroy(m);
}

SP_TEST(finalize_inside_open_region_keeps_the_call) {
  const char *ov[] = {"file_path=open.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region a = sp_region_intern("open_a"), b = sp_region_intern("child_b");
  ASSERT_OK(sp_region_begin(m, a));
  ASSERT_OK(sp_region_begin(m, b));
  ASSERT_OK(sp_region_end(m, b));
  ASSERT_EQ(sp_manager_finalize(m, NULL, NULL), SP_ERR_OPEN_SCOPES);
  ASSERT_CONTAINS(sp_last_error(), "still open");
  ASSERT_EQ(sp_manager_problems(m).open_at_finalize, 1);
  ASSERT_EQ(h5_region_events("open.h5", "open_a"), -1);
  ASSERT_EQ(h5_region_events("open.h5", "child_b"), 1);
  sp_test_busy(10000);
  ASSERT_OK(sp_region_end(m, a)); /* completes into the next run */
  ASSERT_EQ(sp_manager_num_calls(m, a), 1);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("open.h5", "open_a"), 1);
  long long n;
  int64_t *s = h5_i64("open.h5", "/events/start_times", &n);
  int64_t *e = h5_i64("open.h5", "/events/end_times", &n);
  ASSERT_EQ(n, 1);
  ASSERT_GT(e[0], s[0]);
  free(s); free(e);
  sp_manager_destroy(m);
}

/* A call open across a finalize keeps its call id, and its exclusive time
 * in the next file still excludes the children written by the first. */
SP_TEST(open_call_across_finalize_keeps_id_and_exclusive) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  const char *ov[] = {"file_path=across.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region outer = sp_region_intern("outer_across"), child = sp_region_intern("child_across");
  sp_region_begin(m, outer);
  sp__clock_manual_advance(10);
  sp_region_begin(m, child);
  sp__clock_manual_advance(30);
  sp_region_end(m, child);
  ASSERT_EQ(sp_manager_finalize(m, NULL, NULL), SP_ERR_OPEN_SCOPES);
  long long n;
  int64_t *p1 = h5_i64("across.h5", "/events/parent_ids", &n);
  ASSERT_EQ(n, 1);
  int64_t parent_id = p1[0];
  ASSERT(parent_id >= 0); /* the open outer call already has its id */
  free(p1);
  sp__clock_manual_advance(5);
  sp_region_end(m, outer);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  int64_t *c2 = h5_i64("across.h5", "/events/call_ids", &n);
  int64_t *x2 = h5_i64("across.h5", "/rank_region_index/exclusive_totals", &n);
  int64_t *s2 = h5_i64("across.h5", "/events/start_times", &n);
  int64_t *e2 = h5_i64("across.h5", "/events/end_times", &n);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(c2[0], parent_id);
  ASSERT_EQ(e2[0] - s2[0], 45);
  ASSERT_EQ(x2[0], 15); /* 45 minus the 30 of the child written by the first finalize */
  free(c2); free(x2); free(s2); free(e2);
  sp_manager_destroy(m);
}

SP_TEST(second_setup_needs_replace) {
  const char *ov[] = {"file_path=replace.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region a = sp_region_intern("dropped");
  sp_region_begin(m, a);
  sp_region_end(m, a);
  sp_setup_args again = {.overrides = ov};
  ASSERT_EQ(sp_manager_setup(m, &again), SP_ERR_ALREADY_ACTIVE);
  ASSERT_CONTAINS(sp_last_error(), "replace");
  again.replace = 1;
  ASSERT_OK(sp_manager_setup(m, &again));
  sp_region b = sp_region_intern("kept");
  sp_region_begin(m, b);
  sp_region_end(m, b);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("replace.h5", "dropped"), -1);
  ASSERT_EQ(h5_region_events("replace.h5", "kept"), 1);
  /* After finalize a new setup is fine without replace. */
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_manager_destroy(m);
}

static int session_body(int early) {
  sp_finalize_args fin = {0};
  const char *ov[] = {"file_path=session.h5", NULL};
  sp_setup_args a = {.overrides = ov};
  SP_SESSION(s, &a, &fin, NULL) {
    for (int i = 0; i < 4; i++) {
      SP_REGION("in_session");
      if (early && i == 1) return 1; /* leaves the loop, the region and the session */
    }
  }
  return 0;
}

SP_TEST(session_finalizes_on_early_return) {
  ASSERT_EQ(session_body(1), 1);
  ASSERT(sp_test_file_exists("session.h5"));
  ASSERT_EQ(h5_region_events("session.h5", "in_session"), 2);
  ASSERT_EQ(h5_region_events("session.h5", "scope_profiler.session"), 1);
  /* The root encloses everything: top-level regions have it as parent
   * (by call ids, or by the intervals when the file leaves the ids out). */
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("session.h5", &r));
  size_t root_region = 0;
  ASSERT_OK(sp_results_find_region(r, "scope_profiler.session", &root_region));
  sp_call *calls = NULL;
  size_t n = 0;
  ASSERT_OK(sp_results_call_stack(r, 0, NULL, &calls, &n, NULL));
  ASSERT_EQ(n, 3);
  ASSERT_EQ(calls[0].region, root_region);
  ASSERT_EQ(calls[0].parent, -1);
  for (size_t i = 1; i < n; i++) ASSERT_EQ(calls[i].parent, 0);
  free(calls);
  sp_results_free(r);
}

SP_TEST(session_full_body) {
  ASSERT_EQ(session_body(0), 0);
  ASSERT_EQ(h5_region_events("session.h5", "in_session"), 4);
}

static void run_body(void *user) {
  int *n = user;
  for (int i = 0; i < *n; i++) {
    SP_REGION("run_body");
  }
}

SP_TEST(session_run_function_form_returns_results) {
  sp_manager *m = sp_manager_create();
  const char *ov[] = {"deactivate_file_output=1", "file_path=never.h5", NULL};
  sp_setup_args a = {.overrides = ov};
  sp_finalize_args fin = {.return_results = 1};
  sp_results *res = NULL;
  int n = 6;
  ASSERT_OK(sp_session_run(m, &a, &fin, &res, run_body, &n));
  ASSERT(res != NULL);
  ASSERT(!sp_test_file_exists("never.h5"));
  sp_results_free(res);
  sp_manager_destroy(m);
}

SP_TEST(unwritable_path_keeps_results_and_leaves_nothing) {
  /* Setup refuses a missing directory (test-settings.c); one that goes
   * away during the run is finalize's to handle. Root ignores directory
   * permissions, so the directory is removed rather than made read-only. */
  ASSERT_EQ(sp_test_sh("mkdir -p no/such/dir"), 0);
  const char *ov[] = {"file_path=no/such/dir/out.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  ASSERT_EQ(sp_test_sh("rm -r no"), 0);
  sp_region r = sp_region_intern("kept_in_memory");
  sp_region_begin(m, r);
  sp_region_end(m, r);
  sp_finalize_args fin = {.return_results = 1};
  sp_results *res = NULL;
  ASSERT_EQ(sp_manager_finalize(m, &fin, &res), SP_ERR_IO);
  ASSERT_CONTAINS(sp_last_error(), "no/such/dir");
  ASSERT_CONTAINS(sp_last_error(), "writable");
  ASSERT(res != NULL);
  sp_results_free(res);
  ASSERT_EQ(sp_test_sh("ls -A | grep -q tmp"), 1); /* no temporary left behind */
  sp_manager_destroy(m);
}

SP_TEST(output_path_is_a_directory) {
  ASSERT_EQ(mkdir("adir", 0755), 0);
  /* made a directory after setup, which refuses one */
  ASSERT_EQ(rmdir("adir"), 0);
  const char *ov[] = {"file_path=adir", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  ASSERT_EQ(mkdir("adir", 0755), 0);
  ASSERT_EQ(sp_manager_finalize(m, NULL, NULL), SP_ERR_IO);
  ASSERT_CONTAINS(sp_last_error(), "is a directory");
  sp_manager_destroy(m);
}

SP_TEST(two_managers_coexist) {
  const char *ov1[] = {"file_path=m1.h5", NULL};
  const char *ov2[] = {"file_path=m2.h5", "buffer_limit=8", NULL};
  sp_manager *m1 = sp_test_setup_with(ov1), *m2 = sp_test_setup_with(ov2);
  sp_region r = sp_region_intern("shared_name");
  for (int i = 0; i < 3; i++) {
    sp_region_begin(m1, r);
    sp_region_begin(m2, r);
    sp_region_end(m2, r);
    sp_region_end(m1, r);
  }
  sp_region_begin(m2, r);
  sp_region_end(m2, r);
  ASSERT_EQ(sp_config_buffer_limit(sp_manager_config(m1)), 1024);
  ASSERT_EQ(sp_config_buffer_limit(sp_manager_config(m2)), 8);
  ASSERT_OK(sp_manager_finalize(m1, NULL, NULL));
  ASSERT_OK(sp_manager_finalize(m2, NULL, NULL));
  ASSERT_EQ(h5_region_events("m1.h5", "shared_name"), 3);
  ASSERT_EQ(h5_region_events("m2.h5", "shared_name"), 4);
  sp_manager_destroy(m1);
  sp_manager_destroy(m2);
}

/*====== Names ======*/

/* sp_region_intern remembers the last name of each thread by address: a
 * buffer reused for another name (shorter, or of the same length) must get
 * that name's region, and an opt-in tag registered later must still show. */
SP_TEST(a_reused_name_buffer_interns_what_it_holds) {
  char *buf = malloc(32); /* on the heap: ASan sees any read past the name */
  ASSERT(buf != NULL);
  strcpy(buf, "reused.alpha_long_name");
  sp_region a = sp_region_intern(buf);
  ASSERT_NE(a, 0);
  ASSERT_EQ(sp_region_intern(buf), a);
  strcpy(buf, "reused.beta");
  sp_region b = sp_region_intern(buf);
  ASSERT_NE(b, 0);
  ASSERT_NE(b, a);
  ASSERT_STR_EQ(sp_region_name(b), "reused.beta");
  strcpy(buf, "reused.alpha_long_namX");
  sp_region c = sp_region_intern(buf);
  ASSERT_NE(c, a);
  ASSERT_STR_EQ(sp_region_name(c), "reused.alpha_long_namX");
  strcpy(buf, "reused.alpha_long_name");
  ASSERT_EQ(sp_region_intern(buf), a);
  ASSERT_EQ(sp_region_intern_n(buf, 6), sp_region_intern("reused"));
  ASSERT_EQ(sp_region_intern_n(buf, 22), a);
  strcpy(buf, "bad \xff");
  ASSERT_EQ(sp_region_intern(buf), 0);
  free(buf);
  sp_region t = sp_region_intern_ex("reused.tagged", NULL, -1, NULL, "tag_registered_later");
  ASSERT_NE(t, 0);
  ASSERT_EQ(t & 0x80000000u, 0);
  ASSERT_EQ(sp_region_intern("reused.tagged"), t);
  ASSERT_EQ(sp_region_intern("reused.tagged"), t);
  ASSERT_OK(sp_register_opt_in_tag("tag_registered_later"));
  ASSERT_EQ(sp_region_intern("reused.tagged"), t | 0x80000000u);
  /* every length class of the word compare, each name in a heap block of
   * its own size (ASan sees a read past it), hit twice, then one byte off */
  static const char *const names[] = {"r", "r2", "r.3", "r..4", "r....7", "r......8", "r.......9",
                                      "r.............16", "r..............17", "r.......................25"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    size_t n = strlen(names[k]);
    char *nb = malloc(n + 1);
    ASSERT(nb != NULL);
    memcpy(nb, names[k], n + 1);
    sp_region h = sp_region_intern(nb);
    ASSERT_NE(h, 0);
    ASSERT_EQ(sp_region_intern(nb), h);
    ASSERT_EQ(sp_region_intern_n(nb, n), h);
    ASSERT_STR_EQ(sp_region_name(h), names[k]);
    for (size_t at = 0; at < n; at += n > 8 ? 7 : 1) { /* a changed byte anywhere: another region */
      nb[at] ^= 0x20;
      sp_region o = sp_region_intern(nb);
      ASSERT_NE(o, h);
      ASSERT_STR_EQ(sp_region_name(o), nb);
      nb[at] ^= 0x20;
      ASSERT_EQ(sp_region_intern(nb), h);
    }
    nb[n - 1] = 0; /* shorter: the hint's length differs */
    if (n > 1) ASSERT_NE(sp_region_intern(nb), h);
    free(nb);
  }
}

SP_TEST(region_names_validated_and_verbatim) {
  ASSERT_EQ(sp_region_intern(""), 0);
  ASSERT_CONTAINS(sp_last_error(), "empty");
  char big[1100];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  ASSERT_EQ(sp_region_intern(big), 0);
  ASSERT_CONTAINS(sp_last_error(), "1024");
  big[1024] = 0;
  ASSERT_NE(sp_region_intern(big), 0); /* exactly 1024 bytes is fine */
  ASSERT_EQ(sp_region_intern("bad \xff utf8"), 0);
  ASSERT_CONTAINS(sp_last_error(), "UTF-8");
  const char *ov[] = {"file_path=names.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region r = sp_region_intern("solver/linear \xce\xbb");
  ASSERT_EQ(sp_region_intern("solver/linear \xce\xbb"), r);
  ASSERT_STR_EQ(sp_region_name(r), "solver/linear \xce\xbb");
  sp_region_begin(m, r);
  sp_region_end(m, r);
  ASSERT_EQ(sp_region_begin(m, 0), SP_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(sp_manager_problems(m).invalid_regions, 1);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("names.h5", "solver/linear \xce\xbb"), 1);
  sp_manager_destroy(m);
}

/* Known names are found before they are validated, hashed and compared in
 * overlapping words: names that differ only in one byte anywhere, or that
 * are prefixes of each other, at every length around the word sizes, keep
 * their own handles. */
SP_TEST(names_differing_in_one_byte_keep_their_handles) {
  enum { MAXLEN = 40 };
  static sp_region ids[MAXLEN + 1][MAXLEN];
  char name[MAXLEN + 1];
  for (int len = 1; len <= MAXLEN; len++)
    for (int pos = 0; pos < len; pos++) {
      memset(name, 'n', (size_t)len);
      name[len] = 0;
      name[pos] = 'q';
      ids[len][pos] = sp_region_intern(name);
      ASSERT_NE(ids[len][pos], 0);
    }
  for (int len = 1; len <= MAXLEN; len++)
    for (int pos = 0; pos < len; pos++) {
      memset(name, 'n', (size_t)len);
      name[pos] = 'q';
      ASSERT_EQ(sp_region_intern_n(name, (size_t)len), ids[len][pos]);
      name[len] = 0;
      ASSERT_EQ(sp_region_intern(name), ids[len][pos]);
      ASSERT_EQ(strlen(sp_region_name(ids[len][pos])), (size_t)len);
      ASSERT_EQ(sp_region_name(ids[len][pos])[pos], 'q');
      for (int p2 = 0; p2 < pos; p2++) ASSERT_NE(ids[len][p2], ids[len][pos]);
      if (pos < len - 1) ASSERT_NE(ids[len - 1][pos], ids[len][pos]);
    }
  /* a known name's prefix with a NUL inside, or bad UTF-8 after it, is still refused */
  ASSERT_EQ(sp_region_intern_n("qn\0", 3), 0);
  ASSERT_CONTAINS(sp_last_error(), "NUL");
  ASSERT_EQ(sp_region_intern("qn\xff"), 0);
  ASSERT_CONTAINS(sp_last_error(), "UTF-8");
}

SP_TEST(counted_names_and_out_of_line_calls) {
  /* Counted names need no terminator: cut three out of one buffer. */
  static const char buf[] = "alphabetagamma";
  sp_region a = sp_region_intern_n(buf, 5), b = sp_region_intern_n(buf + 5, 4);
  ASSERT_NE(a, 0);
  ASSERT_NE(b, 0);
  ASSERT_EQ(sp_region_intern("alpha"), a);
  ASSERT_EQ(sp_region_intern_n("beta", 4), b);
  ASSERT_STR_EQ(sp_region_name(b), "beta");
  ASSERT_EQ(sp_region_intern_n("al\0pha", 6), 0);
  ASSERT_CONTAINS(sp_last_error(), "NUL");
  ASSERT_EQ(sp_region_intern_n(buf, 0), 0);
  ASSERT_CONTAINS(sp_last_error(), "empty");
  ASSERT_EQ(sp_region_intern_n(NULL, 3), 0);
  char big[1025];
  memset(big, 'y', sizeof big);
  ASSERT_EQ(sp_region_intern_n(big, sizeof big), 0); /* 1025 bytes, no terminator anywhere */
  ASSERT_CONTAINS(sp_last_error(), "1024");
  ASSERT_NE(sp_region_intern_n(big, 1024), 0);
  ASSERT_EQ(sp_region_intern_n("\xce", 1), 0); /* a cut UTF-8 sequence */

  ASSERT(sp_default_manager() == SP_DEFAULT);
  const char *ov[] = {"file_path=fn.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  for (int i = 0; i < 10; i++) {
    ASSERT_EQ(sp_region_begin_fn(m, a), 0);
    ASSERT_EQ(sp_region_begin(m, b), 0); /* inline and out of line mix */
    ASSERT_EQ(sp_region_end_fn(m, b), 0);
    ASSERT_EQ(sp_region_end(m, a), 0);
  }
  ASSERT_EQ(sp_region_end_fn(m, a), SP_ERR_UNMATCHED_END);
  ASSERT_EQ(sp_region_begin_fn(NULL, a), SP_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(sp_region_begin_fn(m, 0), SP_ERR_INVALID_ARGUMENT);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("fn.h5", "alpha"), 10);
  ASSERT_EQ(h5_region_events("fn.h5", "beta"), 10);
  sp_manager_destroy(m);
}

/*====== Threads ======*/

#define NTHREADS 8
#define NCALLS 100000
static sp_manager *thread_mgr;
static sp_region thread_region;
static void *hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < NCALLS; i++) {
    sp_region_begin(thread_mgr, thread_region);
    sp_region_end(thread_mgr, thread_region);
  }
  return NULL;
}

SP_TEST(eight_threads_one_region_lose_nothing) {
  const char *ov[] = {"file_path=threads.h5", NULL};
  thread_mgr = sp_test_setup_with(ov);
  thread_region = sp_region_intern("hammered");
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) ASSERT_EQ(pthread_create(&th[i], NULL, hammer, NULL), 0);
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  ASSERT_EQ(sp_manager_num_calls(thread_mgr, thread_region), NTHREADS * NCALLS);
  ASSERT_OK(sp_manager_finalize(thread_mgr, NULL, NULL));
  ASSERT_EQ(h5_region_events("threads.h5", "hammered"), NTHREADS * NCALLS);
  long long n;
  int64_t *s = h5_i64("threads.h5", "/events/start_times", &n);
  int64_t *e = h5_i64("threads.h5", "/events/end_times", &n);
  /* Calls of several threads carry their thread (and the file the thread
   * table those ids index); the call ids are left out, since each thread's
   * intervals give its nesting. */
  long long nt = 0, nth = 0;
  int64_t *t = h5_i64("threads.h5", "/events/thread_ids", &nt);
  int64_t *ti = h5_i64("threads.h5", "/thread_table/index", &nth);
  ASSERT_EQ(h5_len("threads.h5", "/events/call_ids"), -1);
  ASSERT_EQ(n, NTHREADS * NCALLS);
  ASSERT_EQ(nt, n);
  ASSERT_GE(nth, NTHREADS);
  long long *per = calloc((size_t)nth, sizeof *per);
  for (long long i = 0; i < n; i++) {
    ASSERT_GE(e[i], s[i]);
    if (i) ASSERT_GE(s[i], s[i - 1]); /* merged by start time */
    ASSERT(t[i] >= 0 && t[i] < nth);
    per[t[i]]++;
  }
  int busy = 0;
  for (long long i = 0; i < nth; i++) {
    ASSERT_EQ(ti[i], i);
    if (per[i]) {
      ASSERT_EQ(per[i], NCALLS);
      busy++;
    }
  }
  ASSERT_EQ(busy, NTHREADS); /* each thread's calls, all of them, on its own lane */
  free(per); free(s); free(e); free(t); free(ti);
  sp_manager_destroy(thread_mgr);
}

SP_TEST(openmp_threads_with_track_threads) {
#ifdef _OPENMP
  const char *ov[] = {"file_path=omp.h5", "track_threads=1", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region r = sp_region_intern("omp_region");
  int nt = 0;
#pragma omp parallel num_threads(4)
  {
#pragma omp single
    nt = 4;
#pragma omp for
    for (int i = 0; i < 4000; i++) {
      sp_region_begin(m, r);
      sp_region_end(m, r);
    }
  }
  ASSERT_EQ(nt, 4);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("omp.h5", "omp_region"), 4000);
  long long n, k;
  int64_t *tid = h5_i64("omp.h5", "/events/thread_ids", &n);
  ASSERT_EQ(n, 4000);
  int64_t *idx = h5_i64("omp.h5", "/thread_table/index", &k);
  ASSERT_GE(k, 1);
  for (long long i = 0; i < n; i++) ASSERT(tid[i] >= 0 && tid[i] < k);
  free(tid); free(idx);
  sp_manager_destroy(m);
#else
  SKIP("built without OpenMP");
#endif
}

/*====== Pause / resume ======*/

SP_TEST(pause_resume) {
  const char *ov[] = {"file_path=pause.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region a = sp_region_intern("across"), p = sp_region_intern("paused"), x = sp_region_intern("after");
  sp_region_begin(m, a);
  sp_manager_pause(m);
  ASSERT(sp_config_paused(sp_manager_config(m)));
  sp_region_begin(m, a); /* self-recursion while paused: its end must not close the outer */
  sp_region_begin(m, p);
  ASSERT_OK(sp_region_end(m, p));
  ASSERT_OK(sp_region_end(m, a));
  sp_manager_resume(m);
  sp_region_begin(m, x);
  sp_region_end(m, x);
  ASSERT_OK(sp_region_end(m, a));
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("pause.h5", "across"), 1);
  ASSERT_EQ(h5_region_events("pause.h5", "paused"), -1);
  ASSERT_EQ(h5_region_events("pause.h5", "after"), 1);
  ASSERT_EQ(sp_manager_problems(m).unmatched_ends, 0);
  sp_manager_destroy(m);
}

/*====== Metadata ======*/

SP_TEST(metadata_minimal_is_private) {
  setenv("SLURM_JOB_ID", "1234", 1);
  const char *ov[] = {"file_path=meta.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  static const char *const present[] = {"scope_profiler_version", "hdf5_version", "compiler", "platform",
                                        "chip_information", "omp_num_threads", "mpi_size", "total_cores",
                                        "start_time_ns", "label", "settings", "timestamp"};
  for (size_t i = 0; i < sizeof present / sizeof present[0]; i++) ASSERT_EQ(h5_attr_exists("meta.h5", "/metadata", present[i]), 1);
  static const char *const absent[] = {"user", "hostname", "working_directory", "PATH", "LD_LIBRARY_PATH", "SLURM_JOB_ID", "modules"};
  for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) ASSERT_EQ(h5_attr_exists("meta.h5", "/metadata", absent[i]), 0);
  char *label = h5_attr_str("meta.h5", "/metadata", "label");
  ASSERT_STR_EQ(label, "meta"); /* default: the file stem */
  free(label);
  ASSERT_EQ(h5_attr_i64("meta.h5", "/", "scope_profiler_schema"), 3);
  char *layout = h5_attr_str("meta.h5", "/", "storage_layout");
  ASSERT_STR_EQ(layout, "columnar");
  free(layout);
  ASSERT_GT(h5_attr_i64("meta.h5", "/metadata", "start_time_ns"), 0);
  ASSERT_GE(h5_attr_i64("meta.h5", "/metadata", "omp_num_threads"), 1);
  sp_manager_destroy(m);
}

SP_TEST(metadata_full_adds_environment_and_redacts_secrets) {
  setenv("SLURM_JOB_ID", "1234", 1);
  setenv("SLURM_AUTH_TOKEN", "hunter2", 1);
  const char *ov[] = {"file_path=full.h5", "metadata_detail=full", "label=my run", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  static const char *const present[] = {"user", "hostname", "working_directory", "PATH", "SLURM_JOB_ID", "modules"};
  for (size_t i = 0; i < sizeof present / sizeof present[0]; i++) ASSERT_EQ(h5_attr_exists("full.h5", "/metadata", present[i]), 1);
  char *v = h5_attr_str("full.h5", "/metadata", "SLURM_AUTH_TOKEN");
  ASSERT_STR_EQ(v, "[redacted]");
  free(v);
  v = h5_attr_str("full.h5", "/metadata", "label");
  ASSERT_STR_EQ(v, "my run");
  free(v);
  sp_manager_destroy(m);
}

SP_TEST(source_location_recorded) {
  const char *ov[] = {"file_path=src.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  int line = __LINE__ + 1;
  { SP_REGION_M(m, "with_source"); }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long idx = h5_region_index("src.h5", "with_source"), k;
  int64_t *ids = h5_i64("src.h5", "/rank_region_index/region_ids", &k);
  int64_t *lines = h5_i64("src.h5", "/rank_region_index/source_lines", &k);
  char **files = h5_strings("src.h5", "/rank_region_index/source_files", &k);
  int found = 0;
  for (long long i = 0; i < k; i++)
    if (ids[i] == idx) {
      ASSERT_EQ(lines[i], line);
      ASSERT_CONTAINS(files[i], "test-core.c");
      ASSERT(files[i][0] != '/'); /* minimal: never an absolute path */
      found = 1;
    }
  ASSERT(found);
  free(ids); free(lines);
  h5_strings_free(files, k);
  sp_manager_destroy(m);
}

/*====== Exit hook ======*/

SP_TEST(exit_hook_finalizes_forgotten_run) {
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    const char *ov[] = {"file_path=forgot.h5", NULL};
    sp_setup_args a = {.overrides = ov, .auto_finalize = 1};
    if (sp_setup(&a) != SP_OK) _exit(3);
    for (int i = 0; i < 9; i++) {
      SP_REGION("forgotten");
    }
    exit(0); /* no finalize: the exit hook writes the run */
  }
  int st;
  waitpid(pid, &st, 0);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ASSERT_EQ(h5_region_events("forgot.h5", "forgotten"), 9);
}

/*====== Our reader on our files ======*/

/* What finalize writes, read back through our reader, both from the file and
 * from the in-memory results: same regions, counts, events and statistics
 * as the raw HDF5 datasets say. */
SP_TEST(reader_reads_what_finalize_wrote) {
  const char *ov[] = {"file_path=readback.h5", NULL};
  sp_manager *m = sp_test_setup_with(ov);
  sp_region outer = sp_region_intern("outer"), inner = sp_region_intern("inner");
  for (int i = 0; i < 7; i++) {
    sp_region_begin(m, outer);
    for (int j = 0; j < 3; j++) {
      sp_region_begin(m, inner);
      sp_test_busy(2000 + 500 * j);
      sp_region_end(m, inner);
    }
    sp_region_end(m, outer);
  }
  sp_results *mem = NULL, *file = NULL;
  ASSERT_OK(sp_manager_finalize(m, &(sp_finalize_args){.return_results = 1}, &mem));
  ASSERT_OK(sp_results_open("readback.h5", &file));
  sp_results *both[2] = {mem, file};
  for (int w = 0; w < 2; w++) {
    sp_results *r = both[w];
    ASSERT_EQ(sp_results_schema(r), 3);
    ASSERT_STR_EQ(sp_results_layout(r), "columnar");
    ASSERT_EQ(sp_results_num_regions(r), 2);
    ASSERT_EQ(sp_results_num_events(r), 28);
    ASSERT_STR_EQ(sp_results_display_label(r), "readback");
    size_t io, ii;
    ASSERT_OK(sp_results_find_region(r, "outer", &io));
    ASSERT_OK(sp_results_find_region(r, "inner", &ii));
    sp_region_stats so, si;
    ASSERT_OK(sp_results_region_stats(r, io, NULL, SP_STATS_OWN | SP_STATS_PERCENTILES, &so));
    ASSERT_OK(sp_results_region_stats(r, ii, NULL, SP_STATS_OWN, &si));
    ASSERT_EQ(so.count, 7);
    ASSERT_EQ(si.count, 21);
    sp_events ev;
    ASSERT_OK(sp_results_events(r, ii, 0, &ev));
    ASSERT_EQ(ev.count, 21);
    int64_t tot = 0;
    for (size_t k = 0; k < ev.count; k++) tot += ev.end_ns[k] - ev.start_ns[k];
    ASSERT_EQ(si.total_ns, tot);
    sp_events_free(&ev);
    ASSERT(so.has_own && si.has_own);
    ASSERT_EQ(si.own_ns, si.total_ns);
    ASSERT_EQ(so.own_ns, so.total_ns - si.total_ns);
    ASSERT(so.has_percentiles);
    ASSERT(so.min_ns <= so.p50_ns && so.p50_ns <= so.max_ns);
  }
  sp_results_free(mem);
  sp_results_free(file);
  /* and the raw datasets agree with the reader (opened once the reader is
   * done: HDF5 refuses a second open with different access properties) */
  ASSERT_EQ(h5_region_events("readback.h5", "inner"), 21);
  sp_manager_destroy(m);
}

/*====== fork ======*/

SP_TEST(forked_child_stands_down) {
  const char *ov[] = {"file_path=parent.h5", NULL};
  sp_setup_args a = {.overrides = ov, .auto_finalize = 1};
  ASSERT_OK(sp_setup(&a));
  sp_region r = sp_region_intern("parent_work"), c = sp_region_intern("child_work");
  for (int i = 0; i < 5; i++) {
    sp_begin(r);
    sp_end(r);
  }
  sp_begin(r); /* open across the fork */
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    for (int i = 0; i < 3; i++) { /* not recorded: the child stood down */
      sp_begin(c);
      sp_end(c);
    }
    if (sp_finalize(NULL, NULL) != SP_ERR_INACTIVE) _exit(10);
    if (!strstr(sp_last_error(), "forked child")) _exit(11);
    const char *cov[] = {"file_path=child.h5", NULL};
    if (sp_setup(&(sp_setup_args){.overrides = cov}) != SP_OK) _exit(12);
    for (int i = 0; i < 2; i++) {
      sp_begin(c);
      sp_end(c);
    }
    if (sp_finalize(NULL, NULL) != SP_OK) _exit(13);
    exit(0); /* no exit hook in the child: parent.h5 must stay untouched */
  }
  int st;
  waitpid(pid, &st, 0);
  ASSERT(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
  ASSERT(!sp_test_file_exists("parent.h5"));
  ASSERT_EQ(h5_region_events("child.h5", "child_work"), 2);
  ASSERT_EQ(h5_region_events("child.h5", "parent_work"), -1);
  sp_end(r);
  ASSERT_OK(sp_finalize(NULL, NULL));
  ASSERT_EQ(h5_region_events("parent.h5", "parent_work"), 6);
  ASSERT_EQ(h5_region_events("parent.h5", "child_work"), -1);
}

/* A forked child has only the thread that forked: the records of the
 * parent's other threads (one ended, one alive and inside a task at the
 * fork) are freed in the child, and the run it sets up lists only its own
 * thread. Counted, in the child, through the manager's list. */
static sp_manager *fork_m;
static pthread_mutex_t fork_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fork_cv = PTHREAD_COND_INITIALIZER;
static int fork_stage; /* 1: the alive worker recorded; 2: it may end */
static void fork_set(int s) {
  pthread_mutex_lock(&fork_mu);
  fork_stage = s;
  pthread_cond_broadcast(&fork_cv);
  pthread_mutex_unlock(&fork_mu);
}
static void fork_wait(int s) {
  pthread_mutex_lock(&fork_mu);
  while (fork_stage < s) pthread_cond_wait(&fork_cv, &fork_mu);
  pthread_mutex_unlock(&fork_mu);
}
static void *fork_ended(void *arg) {
  sp_region_begin(fork_m, *(sp_region *)arg);
  sp_region_end(fork_m, *(sp_region *)arg);
  return NULL;
}
static void *fork_alive(void *arg) {
  sp_manager_task_switch(fork_m, 7);
  sp_region_begin(fork_m, *(sp_region *)arg); /* open in task 7 across the fork */
  fork_set(1);
  fork_wait(2);
  sp_region_end(fork_m, *(sp_region *)arg);
  sp_manager_task_switch(fork_m, 0);
  return NULL;
}
static size_t records(const sp_manager *m) {
  size_t n = 0;
  for (const sp_thread_rec *t = m->threads; t; t = t->next) n++;
  return n;
}
static const sp_thread_rec *my_record(const sp_manager *m) {
  for (const sp_thread_rec *t = m->threads; t; t = t->next)
    if (t->ident == (uint64_t)pthread_self()) return t;
  return NULL;
}

SP_TEST(forked_child_frees_other_threads_records) {
  fork_m = sp_manager_create();
  ASSERT(fork_m != NULL);
  const char *ov[] = {"file_path=forkparent.h5", "track_threads=1", "track_async=1", NULL};
  ASSERT_OK(sp_manager_setup(fork_m, &(sp_setup_args){.overrides = ov}));
  sp_region r = sp_region_intern("fork_threads_work");
  pthread_t ended, alive;
  ASSERT_EQ(pthread_create(&ended, NULL, fork_ended, &r), 0);
  ASSERT_EQ(pthread_join(ended, NULL), 0);
  ASSERT_EQ(pthread_create(&alive, NULL, fork_alive, &r), 0);
  fork_wait(1);
  sp_region_begin(fork_m, r);
  sp_region_end(fork_m, r);
  ASSERT_EQ(records(fork_m), 3);
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    if (records(fork_m) != 1) _exit(10);
    if (fork_m->threads != my_record(fork_m)) _exit(11); /* the forking thread's */
    const char *cov[] = {"file_path=forkchild.h5", "track_threads=1", "track_async=1", NULL};
    if (sp_manager_setup(fork_m, &(sp_setup_args){.overrides = cov}) != SP_OK) _exit(12);
    sp_manager_task_switch(fork_m, 7); /* the task the parent's worker ran: switched out here */
    sp_region_begin(fork_m, r);
    sp_region_end(fork_m, r);
    sp_manager_task_switch(fork_m, 0);
    if (sp_manager_finalize(fork_m, NULL, NULL) != SP_OK) _exit(13);
    if (h5_len("forkchild.h5", "/thread_table/index") != 1) _exit(14);
    if (h5_region_events("forkchild.h5", "fork_threads_work") != 1) _exit(15);
    if (my_record(fork_m)->task_migrations != 0) _exit(16); /* task 7 was not left running elsewhere */
    _exit(0);
  }
  int st;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  fork_set(2);
  ASSERT_EQ(pthread_join(alive, NULL), 0);
  ASSERT(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
  ASSERT_OK(sp_manager_finalize(fork_m, NULL, NULL));
  ASSERT_EQ(h5_len("forkparent.h5", "/thread_table/index"), 3);
  ASSERT_EQ(h5_region_events("forkparent.h5", "fork_threads_work"), 3);
  sp_manager_destroy(fork_m);
}

/* The child's calls of region c: n in its thread context, then one in the
 * switched-out task 3, back in the context at the end. */
static void child_calls(sp_manager *m, sp_region c, int n) {
  sp_manager_task_switch(m, 0);
  for (int k = 0; k < n; k++) {
    sp_region_begin(m, c);
    sp_region_end(m, c);
  }
  sp_manager_task_switch(m, 3);
  sp_region_begin(m, c);
  sp_region_end(m, c);
  sp_manager_task_switch(m, 0);
}

/* The forking thread inside a task at the fork, with a call open in its
 * thread context and one in a switched-out task: the child's setup forgets
 * the parent's calls, those saved stacks too (their entries index the
 * parent's log, which the child's calls then reuse). */
SP_TEST(forked_child_forgets_the_calls_open_in_saved_stacks) {
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  const char *ov[] = {"file_path=taskparent.h5", "track_async=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region a = sp_region_intern("fork_ctx_open"), b = sp_region_intern("fork_task_open");
  sp_region c = sp_region_intern("fork_child_call");
  sp_region_begin(m, a); /* open in the thread context */
  sp_manager_task_switch(m, 3);
  sp_region_begin(m, b); /* open in task 3, switched out below */
  sp_manager_task_switch(m, 4); /* the fork comes inside task 4 */
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    const char *cov[] = {"file_path=taskchild.h5", "track_async=1", NULL};
    if (sp_manager_setup(m, &(sp_setup_args){.overrides = cov}) != SP_OK) _exit(10);
    child_calls(m, c, 1);
    if (sp_manager_finalize(m, NULL, NULL) != SP_OK) _exit(11); /* no call open */
    if (h5_region_events("taskchild.h5", "fork_child_call") != 2) _exit(12);
    if (h5_region_events("taskchild.h5", "fork_ctx_open") != -1) _exit(13);
    if (h5_region_events("taskchild.h5", "fork_task_open") != -1) _exit(14);
    child_calls(m, c, 3);
    if (sp_manager_finalize(m, NULL, NULL) != SP_OK) _exit(15);
    if (h5_region_events("taskchild.h5", "fork_child_call") != 4) _exit(16);
    if (sp_manager_problems(m).unmatched_ends != 0) _exit(17);
    _exit(0);
  }
  int st;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
  sp_manager_task_switch(m, 3);
  sp_region_end(m, b);
  sp_manager_task_switch(m, 0);
  sp_region_end(m, a);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("taskparent.h5", "fork_ctx_open"), 1);
  ASSERT_EQ(h5_region_events("taskparent.h5", "fork_task_open"), 1);
  sp_manager_destroy(m);
}

SP_TEST(fork_then_exec_is_fine) {
  const char *ov[] = {"file_path=execparent.h5", NULL};
  ASSERT_OK(sp_setup(&(sp_setup_args){.overrides = ov}));
  { SP_REGION("before_exec"); }
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/true", "true", (char *)NULL);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ASSERT_OK(sp_finalize(NULL, NULL));
  ASSERT_EQ(h5_region_events("execparent.h5", "before_exec"), 1);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
