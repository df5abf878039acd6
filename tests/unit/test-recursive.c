/* test-recursive.c - recursive profiling through the -finstrument-functions
 * hooks (src/probes/recursive.c). This file is compiled with
 * -finstrument-functions (tests/CMakeLists.txt), so its functions are the
 * instrumented program: a known call graph (recursion, calls through
 * function pointers, an excluded function, a longjmp) whose exact call
 * counts and nesting are checked in the results. */
#include <pthread.h>
#include <setjmp.h>

#include "harness.h"
#include "probes/recursive.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

static volatile int sink;

__attribute__((noinline)) static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static const int fib_line = __LINE__ - 1;
__attribute__((noinline)) static int op_add(int a) { return a + 1; }
__attribute__((noinline)) static int op_mul(int a) { return a * 2; }
__attribute__((noinline)) static int apply(int (*op)(int), int a) { return op(a); }
__attribute__((noinline)) static void leaf(void) { sink++; }
__attribute__((noinline)) static void excluded_helper(void) { leaf(); }

__attribute__((noinline)) static void graph(void) {
  sink += fib(10); /* 177 calls */
  int (*ops[])(int) = {op_add, op_mul};
  for (int i = 0; i < 5; i++) sink += apply(ops[i % 2], i); /* op_add 3, op_mul 2 */
  for (int i = 0; i < 4; i++) excluded_helper();
}

static sp_manager *new_manager(void) {
  sp_manager *m = sp_manager_create();
  ASSERT(m);
  const char *ov[] = {"deactivate_file_output=1", NULL};
  sp_setup_args a = {.overrides = ov};
  ASSERT_OK(sp_manager_setup(m, &a));
  return m;
}

static sp_results *finish(sp_manager *m) {
  sp_finalize_args fa = {.return_results = 1};
  sp_results *r = NULL;
  ASSERT_OK(sp_manager_finalize(m, &fa, &r));
  ASSERT(r);
  return r;
}

static uint64_t calls(sp_results *r, const char *name) {
  size_t id;
  if (sp_results_find_region(r, name, &id) != SP_OK) return 0;
  sp_region_stats st;
  ASSERT_OK(sp_results_region_stats(r, id, NULL, 0, &st));
  return st.count;
}

/* The name of the parent region of region `name`'s calls in the call tree
 * (all calls of `name` must share it). */
static const char *parent_of(sp_results *r, const char *name) {
  sp_tree_node *nodes;
  size_t n;
  ASSERT_OK(sp_results_call_tree(r, NULL, &nodes, &n));
  const char *parent = NULL;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(sp_results_region_name(r, nodes[i].region), name) != 0) continue;
    const char *p = nodes[i].parent < 0 ? "(root)" : sp_results_region_name(r, nodes[nodes[i].parent].region);
    if (parent && strcmp(parent, p) != 0) SP_FAIL_("%s has two parents: %s and %s", name, parent, p);
    parent = p;
  }
  free(nodes);
  return parent;
}

SP_TEST(known_call_graph_exact_counts) {
  sp_manager *m = new_manager();
  const char *excl[] = {"excluded_*", NULL};
  struct sp_rp_params p = {.m = m, .exclude = excl};
  ASSERT_OK(sp__rp_start(&p));
  graph();
  sp__rp_stop();
  sp_results *r = finish(m);
  ASSERT_EQ(calls(r, "graph"), 1);
  ASSERT_EQ(calls(r, "fib"), 177);
  ASSERT_EQ(calls(r, "apply"), 5);
  ASSERT_EQ(calls(r, "op_add"), 3);
  ASSERT_EQ(calls(r, "op_mul"), 2);
  ASSERT_EQ(calls(r, "leaf"), 4);
  ASSERT_EQ(calls(r, "excluded_helper"), 0);
  /* The excluded function's callee hangs under its caller. */
  ASSERT_STR_EQ(parent_of(r, "leaf"), "graph");
  ASSERT_STR_EQ(parent_of(r, "op_mul"), "apply");
  ASSERT_STR_EQ(parent_of(r, "apply"), "graph");
  /* Static functions are named from DWARF, with their source line. */
  size_t id;
  ASSERT_OK(sp_results_find_region(r, "fib", &id));
  const char *file, *text;
  int64_t line;
  ASSERT_OK(sp_results_region_source(r, id, &file, &line, &text));
  ASSERT_CONTAINS(file, "test-recursive.c");
  ASSERT_EQ(line, fib_line);
  struct sp_rp_stats st = sp__rp_stats();
  ASSERT_EQ(st.excluded, 1);
  ASSERT_EQ(sp_manager_problems(m).unmatched_ends, 0);
  sp_results_free(r);
  sp_manager_destroy(m);
}

SP_TEST(depth_limit_keeps_the_top_levels) {
  sp_manager *m = new_manager();
  struct sp_rp_params p = {.m = m, .max_depth = 3};
  ASSERT_OK(sp__rp_start(&p));
  sink += fib(6);
  sp__rp_stop();
  sp_results *r = finish(m);
  ASSERT_EQ(calls(r, "fib"), 1 + 2 + 4); /* recursion depths 0, 1 and 2 */
  ASSERT_EQ(sp_manager_problems(m).unmatched_ends, 0);
  sp_results_free(r);
  sp_manager_destroy(m);
}

SP_TEST(file_exclusion_and_off_record_nothing) {
  sp_manager *m = new_manager();
  const char *files[] = {"test-recursive.c", NULL};
  struct sp_rp_params p = {.m = m, .exclude_files = files};
  ASSERT_OK(sp__rp_start(&p));
  graph();
  sp__rp_stop();
  graph(); /* off: the hooks return at once */
  sp_results *r = finish(m);
  ASSERT_EQ(sp_results_num_regions(r) > 0 ? calls(r, "fib") + calls(r, "graph") + calls(r, "leaf") : 0, 0);
  sp_results_free(r);
  sp_manager_destroy(m);
}

static jmp_buf jb;
__attribute__((noinline)) static void deep2(void) { longjmp(jb, 1); }
__attribute__((noinline)) static void deep1(void) {
  deep2();
  sink++;
}
__attribute__((noinline)) static void jumper(void) {
  if (setjmp(jb) == 0) deep1();
  leaf();
}

SP_TEST(longjmp_skipped_exits_are_closed) {
  sp_manager *m = new_manager();
  struct sp_rp_params p = {.m = m};
  ASSERT_OK(sp__rp_start(&p));
  jumper();
  sp__rp_stop();
  sp_results *r = finish(m);
  ASSERT_EQ(calls(r, "jumper"), 1);
  ASSERT_EQ(calls(r, "deep1"), 1);
  ASSERT_EQ(calls(r, "deep2"), 1);
  ASSERT_EQ(calls(r, "leaf"), 1);
  ASSERT_EQ(sp_manager_problems(m).unmatched_ends, 0);
  ASSERT_EQ(sp_manager_problems(m).open_at_finalize, 0);
  sp_results_free(r);
  sp_manager_destroy(m);
}

static void *fib_thread(void *p) {
  *(int *)p = fib(12); /* 465 calls */
  return NULL;
}

SP_TEST(threads_share_the_cache) {
  sp_manager *m = new_manager();
  struct sp_rp_params p = {.m = m};
  ASSERT_OK(sp__rp_start(&p));
  pthread_t th[4];
  int out[4];
  for (int i = 0; i < 4; i++) ASSERT_EQ(pthread_create(&th[i], NULL, fib_thread, &out[i]), 0);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++) ASSERT_EQ(out[i], 144);
  sp__rp_stop();
  sp_results *r = finish(m);
  ASSERT_EQ(calls(r, "fib"), 4 * 465);
  ASSERT_EQ(calls(r, "fib_thread"), 4);
  sp_results_free(r);
  sp_manager_destroy(m);
}

SP_TEST(one_manager_at_a_time) {
  sp_manager *a = new_manager(), *b = new_manager();
  struct sp_rp_params p = {.m = a};
  ASSERT_OK(sp__rp_start(&p));
  ASSERT(sp__rp_manager() == a);
  struct sp_rp_params q = {.m = b};
  ASSERT_EQ(sp__rp_start(&q), SP_ERR_ALREADY_ACTIVE);
  sp__rp_stop();
  ASSERT(sp__rp_manager() == NULL);
  ASSERT_OK(sp__rp_start(&q));
  sp__rp_stop();
  sp_manager_destroy(a);
  sp_manager_destroy(b);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
