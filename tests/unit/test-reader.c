/* test-reader.c - the reader: upstream's call-stack cases, statistics
 * (population std, Welford/Chan merge, numpy percentiles, imbalance), rank
 * specs and regex anchoring, the compatibility fixtures of every layout,
 * lazy event access, call trees, exclusive time, and hostile files that must
 * fail cleanly with SP_ERR_FORMAT. Fixtures live in tests/golden/ (see
 * make_fixtures.py there).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "read/read_internal.h"
#include "scope_profiler/reader.h"

#define FIX(name) SP_TEST_SOURCE_DIR "/tests/golden/" name

static sp_results *open_fixture(const char *path) {
  sp_results *r = NULL;
  sp_status st = sp_results_open(path, &r);
  if (st != SP_OK) SP_FAIL_("open %s: %s", path, sp_last_error());
  return r;
}

static size_t region_of(const sp_results *r, const char *name) {
  size_t i = 0;
  if (sp_results_find_region(r, name, &i) != SP_OK) SP_FAIL_("no region %s", name);
  return i;
}

/* ---- call stacks (upstream's _build_call_stack_intervals cases) ---------- */

SP_TEST(call_stack_nesting_depths) {
  /* outer [0,100), inner [10,40) and [50,90), leaves [15,20) and [55,60);
   * given out of order to check the sort */
  sp_call c[5] = {
      {.start_ns = 55, .end_ns = 60, .region = 2, .thread = -1},
      {.start_ns = 10, .end_ns = 40, .region = 1, .thread = -1},
      {.start_ns = 0, .end_ns = 100, .region = 0, .thread = -1},
      {.start_ns = 50, .end_ns = 90, .region = 1, .thread = -1},
      {.start_ns = 15, .end_ns = 20, .region = 2, .thread = -1},
  };
  size_t ov = 99;
  ASSERT_OK(sp_call_stack_build(c, 5, &ov));
  ASSERT_EQ(ov, 0);
  int outer = 0, inner = 0, leaf = 0;
  for (int i = 0; i < 5; i++) {
    if (c[i].region == 0) { ASSERT_EQ(c[i].depth, 0); ASSERT_EQ(c[i].parent, -1); outer++; }
    if (c[i].region == 1) { ASSERT_EQ(c[i].depth, 1); ASSERT_EQ(c[c[i].parent].region, 0); inner++; }
    if (c[i].region == 2) { ASSERT_EQ(c[i].depth, 2); ASSERT_EQ(c[c[i].parent].region, 1); leaf++; }
  }
  ASSERT_EQ(outer, 1);
  ASSERT_EQ(inner, 2);
  ASSERT_EQ(leaf, 2);
  /* sorted order: outer, inner, leaf, inner, leaf -> depths 0,1,2,1,2; the
   * second leaf's parent is the second inner (by index, not by name) */
  ASSERT_EQ(c[2].depth, 2);
  ASSERT_EQ(c[2].parent, 1);
  ASSERT_EQ(c[4].parent, 3);
}

SP_TEST(call_stack_recursive_fib_depths) {
  sp_call c[3] = {
      {.start_ns = 0, .end_ns = 100, .thread = -1},
      {.start_ns = 10, .end_ns = 90, .thread = -1},
      {.start_ns = 60, .end_ns = 80, .thread = -1},
  };
  ASSERT_OK(sp_call_stack_build(c, 3, NULL));
  ASSERT_EQ(c[0].depth, 0);
  ASSERT_EQ(c[1].depth, 1);
  ASSERT_EQ(c[2].depth, 2);
  ASSERT_EQ(c[2].parent, 1);
}

SP_TEST(call_stack_same_start_longer_first_and_lanes) {
  /* equal starts: the longer call is the parent; an ended call is popped
   * when end <= next start; another thread starts its own stack */
  sp_call c[4] = {
      {.start_ns = 0, .end_ns = 5, .region = 1, .thread = 0},
      {.start_ns = 0, .end_ns = 10, .region = 0, .thread = 0},
      {.start_ns = 10, .end_ns = 20, .region = 2, .thread = 0},
      {.start_ns = 1, .end_ns = 3, .region = 3, .thread = 1},
  };
  ASSERT_OK(sp_call_stack_build(c, 4, NULL));
  ASSERT_EQ(c[0].region, 0);
  ASSERT_EQ(c[1].region, 1);
  ASSERT_EQ(c[1].depth, 1);
  ASSERT_EQ(c[2].region, 2);
  ASSERT_EQ(c[2].depth, 0);
  ASSERT_EQ(c[3].thread, 1);
  ASSERT_EQ(c[3].depth, 0);
}

SP_TEST(call_stack_counts_partial_overlaps) {
  sp_call c[2] = {{.start_ns = 0, .end_ns = 10, .thread = -1},
                  {.start_ns = 5, .end_ns = 15, .thread = -1}};
  size_t ov = 0;
  ASSERT_OK(sp_call_stack_build(c, 2, &ov));
  ASSERT_EQ(ov, 1);
  ASSERT_EQ(c[1].depth, 1);
}

/* ---- statistics ------------------------------------------------------------ */

SP_TEST(population_std_and_summary) {
  int64_t s[8] = {0}, e[8] = {2, 4, 4, 4, 5, 5, 7, 9};
  struct sp__summary sum;
  sp__summary_from_durations(s, e, 8, &sum);
  ASSERT_EQ(sum.count, 8);
  ASSERT_EQ(sum.total, 40);
  ASSERT_EQ(sum.minimum, 2);
  ASSERT_EQ(sum.maximum, 9);
  ASSERT_EQ(sum.first, 2);
  ASSERT_EQ(sum.last, 9);
  ASSERT_NEAR(sum.mean, 5.0, 1e-12);
  ASSERT_NEAR(sqrt(sum.m2 / (double)sum.count), 2.0, 1e-12); /* ddof=0, not 2.138 */
}

SP_TEST(welford_merge_equals_two_pass) {
  enum { N = 1000 };
  int64_t s[N], e[N];
  uint64_t x = 12345;
  for (int i = 0; i < N; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s[i] = i * 200000; /* one thread: calls of a region do not overlap */
    e[i] = s[i] + (int64_t)(x >> 40) % 100000;
  }
  struct sp__summary whole, acc, part;
  sp__summary_from_durations(s, e, N, &whole);
  memset(&acc, 0, sizeof acc);
  static const int cuts[] = {0, 1, 17, 400, 401, 999, N};
  for (size_t k = 0; k + 1 < sizeof cuts / sizeof cuts[0]; k++) {
    sp__summary_from_durations(s + cuts[k], e + cuts[k], (size_t)(cuts[k + 1] - cuts[k]), &part);
    sp__summary_merge(&acc, &part);
  }
  ASSERT_EQ(acc.count, whole.count);
  ASSERT_EQ(acc.total, whole.total);
  ASSERT_EQ(acc.minimum, whole.minimum);
  ASSERT_EQ(acc.maximum, whole.maximum);
  ASSERT_EQ(acc.first, whole.first);
  ASSERT_EQ(acc.last, whole.last);
  ASSERT_NEAR(acc.mean, whole.mean, 1e-9 * whole.mean);
  ASSERT_NEAR(acc.m2, whole.m2, 1e-9 * whole.m2);
}

SP_TEST(percentiles_match_numpy_linear) {
  /* np.percentile(np.arange(1, 11), [50, 95, 99]) = 5.5, 9.55, 9.91 */
  int64_t v[10] = {7, 3, 10, 1, 9, 2, 8, 6, 5, 4};
  ASSERT_NEAR(sp__percentile(v, 10, 50), 5.5, 1e-12);
  ASSERT_NEAR(sp__percentile(v, 10, 95), 9.55, 1e-12);
  ASSERT_NEAR(sp__percentile(v, 10, 99), 9.91, 1e-12);
  int64_t one[1] = {42};
  ASSERT_NEAR(sp__percentile(one, 1, 99), 42, 0);
  int64_t dup[6] = {5, 5, 5, 1, 5, 5};
  ASSERT_NEAR(sp__percentile(dup, 6, 50), 5, 0);
  ASSERT_NEAR(sp__percentile(dup, 6, 0), 1, 0);
  ASSERT(isnan(sp__percentile(dup, 0, 50)));
}

static int cmp_v(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* numpy's linear percentile of a sorted copy: what each chained selection
 * of sp__percentiles must give, whatever the order of the percentiles. */
static double sorted_percentile(const int64_t *sorted, size_t n, double pct) {
  double q = pct / 100.0, vi = (double)n * q + (1.0 + q * (1.0 - 1.0 - 1.0)) - 1.0;
  if (vi >= (double)(n - 1)) return (double)sorted[n - 1];
  if (vi < 0) return (double)sorted[0];
  size_t lo = (size_t)floor(vi);
  double a = (double)sorted[lo], b = (double)sorted[lo + 1], g = vi - floor(vi), d = b - a;
  return g >= 0.5 ? b - d * (1.0 - g) : a + d * g;
}

SP_TEST(chained_percentiles_match_a_sort) {
  static const double sets[][4] = {{50, 95, 99, 0}, {99, 50, 95, 0}, {0, 100, 50, 50},
                                   {95, 95, 99, 1}, {99.9, 99.99, 100, 0}};
  uint64_t rng = 3;
  int64_t *v = malloc(3000 * sizeof *v), *copy = malloc(3000 * sizeof *copy);
  ASSERT(v && copy);
  for (int round = 0; round < 400; round++) {
    size_t n = round < 40 ? (size_t)round : (size_t)(sp_test_splitmix(&rng) % 3000);
    uint64_t spread = round % 3 == 0 ? 4 : round % 3 == 1 ? 1000 : UINT64_MAX; /* ties, or none */
    for (size_t i = 0; i < n; i++)
      v[i] = copy[i] = (int64_t)(sp_test_splitmix(&rng) % spread) - (round % 5 == 0 ? 500 : 0);
    qsort(copy, n, sizeof *copy, cmp_v);
    const double *pct = sets[round % 5];
    double out[4];
    sp__percentiles(v, n, pct, 4, out);
    for (int j = 0; j < 4; j++) {
      if (n == 0) {
        ASSERT(isnan(out[j]));
        continue;
      }
      double want = sorted_percentile(copy, n, pct[j]);
      if (out[j] != want)
        SP_FAIL_("n %zu, percentile %g: %.17g, a sort gives %.17g", n, pct[j], out[j], want);
    }
    qsort(v, n, sizeof *v, cmp_v); /* the values were only reordered */
    for (size_t i = 0; i < n; i++) ASSERT_EQ(v[i], copy[i]);
  }
  free(v);
  free(copy);
}

SP_TEST(imbalance_and_excess_from_summary_rows) {
  sp_results *r = open_fixture(FIX("multi.h5"));
  sp_region_stats s;
  /* solve: rank 0 = 300+300 ms, rank 1 = 600+200 ms; mean 700 */
  ASSERT_OK(sp_results_region_stats(r, region_of(r, "solve"), NULL, 0, &s));
  ASSERT_EQ(s.count, 4);
  ASSERT_EQ(s.ranks, 2);
  ASSERT_EQ(s.total_ns, 1400000000LL);
  ASSERT_NEAR(s.imbalance, 800.0 / 700.0, 1e-12);
  ASSERT_NEAR(s.excess_ns, 100e6, 1e-3);
  ASSERT_EQ(s.first_ns, 300000000LL); /* both ranks start solve at 200/300 ms: rank 0 first */
  ASSERT_EQ(s.last_ns, 200000000LL);
  ASSERT_EQ(s.min_ns, 200000000LL);
  ASSERT_EQ(s.max_ns, 600000000LL);
  ASSERT_NEAR(s.mean_ns, 350e6, 1e-3);
  ASSERT_NEAR(s.std_ns, sqrt((50e6 * 50e6 * 2 + 250e6 * 250e6 + 150e6 * 150e6) / 4), 1e-3);
  ASSERT(!s.has_percentiles);
  /* one rank only: perfectly balanced */
  sp_filter *f;
  ASSERT_OK(sp_filter_create(&f));
  ASSERT_OK(sp_filter_ranks(f, "1"));
  ASSERT_OK(sp_results_region_stats(r, region_of(r, "solve"), f, SP_STATS_PERCENTILES, &s));
  ASSERT_EQ(s.count, 2);
  ASSERT_NEAR(s.imbalance, 1.0, 0);
  ASSERT(s.has_percentiles);
  ASSERT_NEAR(s.p50_ns, 400e6, 1e-3);
  ASSERT_NEAR(s.p99_ns, 596e6, 1e-3);
  sp_filter_free(f);
  sp_results_free(r);
}

/* ---- filters ------------------------------------------------------------- */

SP_TEST(rank_spec_parsing) {
  int64_t *v;
  size_t n;
  ASSERT_OK(sp_parse_rank_spec("0,2,4-7", &v, &n));
  ASSERT_EQ(n, 6);
  int64_t want[] = {0, 2, 4, 5, 6, 7};
  for (size_t i = 0; i < n; i++) ASSERT_EQ(v[i], want[i]);
  free(v);
  ASSERT_OK(sp_parse_rank_spec("7,3-4,3, 0", &v, &n));
  ASSERT_EQ(n, 4);
  ASSERT_EQ(v[0], 0);
  ASSERT_EQ(v[1], 3);
  ASSERT_EQ(v[3], 7);
  free(v);
  static const char *const bad[] = {"", ",", "1,", "a", "1-", "-1", "5-2", "1.5", "0x3",
                                    "99999999999", "0-99999999", "1--2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = NULL;
    if (sp_parse_rank_spec(bad[i], &v, &n) != SP_ERR_INVALID_ARGUMENT)
      SP_FAIL_("rank spec '%s' was accepted", bad[i]);
    ASSERT_CONTAINS(sp_last_error(), "rank spec");
  }
  sp_filter *f;
  ASSERT_OK(sp_filter_create(&f));
  ASSERT_OK(sp_filter_ranks(f, "4-5"));
  ASSERT_OK(sp_filter_ranks(f, "0,5"));
  ASSERT_EQ(sp_filter_num_ranks(f), 3);
  ASSERT(sp_filter_match_rank(f, 0));
  ASSERT(!sp_filter_match_rank(f, 1));
  sp_filter_free(f);
}

SP_TEST(regex_anchored_at_start_only) {
  sp_filter *f;
  ASSERT_OK(sp_filter_create(&f));
  ASSERT(sp_filter_match_region(f, "anything")); /* no patterns: keep */
  ASSERT_OK(sp_filter_include(f, "sol"));
  ASSERT(sp_filter_match_region(f, "solve"));    /* re.match: prefix is enough */
  ASSERT(!sp_filter_match_region(f, "resolve")); /* but anchored at the start */
  ASSERT_OK(sp_filter_include(f, "io|step"));
  ASSERT(sp_filter_match_region(f, "step_2"));
  ASSERT(!sp_filter_match_region(f, "my_step"));
  ASSERT_OK(sp_filter_exclude(f, "solve_"));
  ASSERT(!sp_filter_match_region(f, "solve_inner"));
  ASSERT(sp_filter_match_region(f, "solve"));
  ASSERT_EQ(sp_filter_include(f, "("), SP_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(sp_last_error(), "invalid include pattern");
  sp_filter_free(f);
}

/* ---- layouts --------------------------------------------------------------- */

static void check_golden_solve(sp_results *r) {
  ASSERT_EQ(sp_results_num_regions(r), 1);
  ASSERT_STR_EQ(sp_results_region_name(r, 0), "solve");
  ASSERT_EQ(sp_results_num_ranks(r), 1);
  ASSERT_EQ(sp_results_rank(r, 0), 0);
  sp_events e;
  ASSERT_OK(sp_results_events(r, 0, 0, &e));
  ASSERT_EQ(e.count, 3);
  int64_t s[] = {10, 20, 40}, en[] = {15, 33, 55};
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(e.start_ns[i], s[i]);
    ASSERT_EQ(e.end_ns[i], en[i]);
    ASSERT_EQ(e.call_ids[i], -1);
  }
  sp_events_free(&e);
  const char *file, *text;
  int64_t line;
  ASSERT_OK(sp_results_region_source(r, 0, &file, &line, &text));
  ASSERT_EQ(line, 7);
  ASSERT_STR_EQ(file, "golden.py");
  ASSERT_STR_EQ(sp_results_region_tags(r, 0), "[\"golden\"]");
  sp_region_stats st;
  ASSERT_OK(sp_results_region_stats(r, 0, NULL, SP_STATS_PERCENTILES | SP_STATS_OWN, &st));
  ASSERT_EQ(st.count, 3);
  ASSERT_EQ(st.total_ns, 33);
  ASSERT_EQ(st.min_ns, 5);
  ASSERT_EQ(st.max_ns, 15);
  ASSERT_EQ(st.first_ns, 5);
  ASSERT_EQ(st.last_ns, 15);
  ASSERT_NEAR(st.p50_ns, 13, 0);
  ASSERT(st.has_own);
  ASSERT_EQ(st.own_ns, 33); /* exclusive -1: rebuilt; a lone region owns all */
}

SP_TEST(compat_fixture_schema2) {
  sp_results *r = open_fixture(FIX("compat_schema2.h5"));
  ASSERT_EQ(sp_results_schema(r), 2);
  ASSERT_STR_EQ(sp_results_layout(r), "columnar");
  ASSERT(!sp_results_has_call_ids(r) || 1);
  check_golden_solve(r);
  ASSERT_STR_EQ(sp_results_display_label(r), "compat_schema2");
  ASSERT(sp_results_label(r) == NULL);
  sp_results_free(r);
}

SP_TEST(compat_fixture_schema1) {
  sp_results *r = open_fixture(FIX("compat_schema1.h5"));
  ASSERT_EQ(sp_results_schema(r), 1);
  ASSERT_STR_EQ(sp_results_layout(r), "hierarchical");
  check_golden_solve(r);
  const sp_metadata_entry *m = sp_results_metadata(r, "modules");
  ASSERT(m != NULL);
  ASSERT_EQ(m->kind, SP_VALUE_STRING_ARRAY);
  ASSERT_EQ(m->n, 2);
  ASSERT_STR_EQ(m->strings[1], "hdf5/1.10");
  ASSERT_STR_EQ(m->text, "[\"gcc/12\", \"hdf5/1.10\"]");
  sp_results_free(r);
}

SP_TEST(hierarchical_nested_group_names) {
  sp_results *r = open_fixture(FIX("hier_nested.h5"));
  ASSERT_EQ(sp_results_num_regions(r), 3);
  ASSERT_EQ(sp_results_num_ranks(r), 2);
  size_t w = region_of(r, "io/write");
  sp_region_stats s;
  ASSERT_OK(sp_results_region_stats(r, w, NULL, 0, &s));
  ASSERT_EQ(s.count, 3);
  ASSERT_EQ(s.total_ns, 35000000LL);
  ASSERT_EQ(s.ranks, 2);
  /* nesting by containment: io/write under io under main on rank 0 */
  sp_call *c;
  size_t n;
  ASSERT_OK(sp_results_call_stack(r, 0, NULL, &c, &n, NULL));
  ASSERT_EQ(n, 4);
  ASSERT_STR_EQ(sp_results_region_name(r, c[0].region), "main");
  ASSERT_STR_EQ(sp_results_region_name(r, c[1].region), "io");
  ASSERT_EQ(c[2].depth, 2);
  ASSERT_EQ(c[3].depth, 2);
  free(c);
  sp_results_free(r);
}

SP_TEST(aggregate_layout_has_no_events) {
  sp_results *r = open_fixture(FIX("aggregate.h5"));
  ASSERT_STR_EQ(sp_results_layout(r), "aggregate");
  ASSERT(!sp_results_has_events(r));
  ASSERT_EQ(sp_results_num_events(r), 0);
  sp_region_stats o, i;
  ASSERT_OK(sp_results_region_stats(r, region_of(r, "outer"), NULL,
                                    SP_STATS_OWN | SP_STATS_PERCENTILES, &o));
  ASSERT_OK(sp_results_region_stats(r, region_of(r, "inner"), NULL, SP_STATS_OWN, &i));
  ASSERT_EQ(o.count, 3);
  ASSERT_EQ(i.count, 3);
  ASSERT(!o.has_percentiles);
  ASSERT(o.has_own && i.has_own);
  ASSERT_LT(o.own_ns, o.total_ns);   /* a parent's own time is below its inclusive time */
  ASSERT_EQ(i.own_ns, i.total_ns);   /* an innermost region owns all of it */
  sp_call *c;
  size_t n;
  ASSERT_EQ(sp_results_call_stack(r, 0, NULL, &c, &n, NULL), SP_ERR_UNSUPPORTED);
  ASSERT_CONTAINS(sp_last_error(), "aggregate");
  sp_results_free(r);
}

SP_TEST(ids_threads_and_exclusive_rebuild) {
  sp_results *r = open_fixture(FIX("multi.h5"));
  ASSERT(sp_results_has_call_ids(r));
  ASSERT(sp_results_has_threads(r));
  ASSERT_STR_EQ(sp_results_label(r), "multi-run");
  ASSERT_STR_EQ(sp_results_display_label(r), "multi-run");
  sp_call *c;
  size_t n;
  ASSERT_OK(sp_results_call_stack(r, 1, NULL, &c, &n, NULL));
  ASSERT_EQ(n, 8);
  /* thread 0 first: session, setup, solve, step, step, solve, step; then the worker */
  ASSERT_STR_EQ(sp_results_region_name(r, c[0].region), "scope_profiler.session");
  ASSERT_EQ(c[3].depth, 2);
  ASSERT_STR_EQ(sp_results_region_name(r, c[7].region), "worker");
  ASSERT_EQ(c[7].thread, 1);
  ASSERT_EQ(c[7].depth, 0);
  ASSERT_EQ(c[7].parent, -1);
  free(c);
  int64_t *th;
  size_t nth;
  ASSERT_OK(sp_results_threads(r, 1, &th, &nth));
  ASSERT_EQ(nth, 2);
  ASSERT_EQ(th[0], 0);
  ASSERT_EQ(th[1], 1);
  free(th);
  ASSERT_OK(sp_results_threads(r, 0, &th, &nth));
  ASSERT_EQ(nth, 1);
  free(th);
  /* stored exclusive totals equal the ones rebuilt from the tree */
  size_t solve = region_of(r, "solve");
  sp_region_stats s;
  ASSERT_OK(sp_results_region_stats(r, solve, NULL, SP_STATS_OWN, &s));
  ASSERT(s.has_own);
  int64_t stored = s.own_ns;
  for (size_t i = 0; i < r->nrows; i++) r->rows[i].exclusive = -1;
  ASSERT_OK(sp_results_region_stats(r, solve, NULL, SP_STATS_OWN, &s));
  ASSERT_EQ(s.own_ns, stored);
  /* rank 0: (300-50-100) + (300-90) ms; rank 1: (600-190-360) + (200-40) ms */
  ASSERT_EQ(stored, (150 + 210 + 50 + 160) * 1000000LL);
  sp_results_free(r);
}

SP_TEST(async_tasks_are_lanes) {
  sp_results *r = open_fixture(FIX("async.h5"));
  ASSERT(sp_results_has_tasks(r));
  for (int pass = 0; pass < 2; pass++) {
    /* pass 0 nests by the recorded ids, pass 1 by containment per lane */
    sp_call *c;
    size_t n, ov = 9;
    ASSERT_OK(sp_results_call_stack(r, 0, NULL, &c, &n, &ov));
    ASSERT_EQ(n, 5);
    ASSERT_EQ(ov, 0);
    int64_t tasks[] = {-1, 1, 1, 2, 2};
    uint32_t depths[] = {0, 0, 1, 0, 1};
    for (size_t i = 0; i < n; i++) {
      ASSERT_EQ(c[i].task, tasks[i]);
      ASSERT_EQ(c[i].depth, depths[i]);
    }
    ASSERT_EQ(c[4].parent, 3); /* task 2's parse under task 2's fetch, not task 1's */
    free(c);
    if (pass == 0) {
      H5Dclose(r->ds_call);
      H5Dclose(r->ds_parent);
      r->ds_call = r->ds_parent = H5I_INVALID_HID;
    }
  }
  sp_region_stats s;
  ASSERT_OK(sp_results_region_stats(r, region_of(r, "fetch"), NULL, SP_STATS_OWN, &s));
  ASSERT_EQ(s.own_ns, (100 - 30 + 40 - 10 + 10) * 1000000LL);
  sp_results_free(r);
}

SP_TEST(filter_reattaches_children_to_kept_ancestor) {
  sp_results *r = open_fixture(FIX("multi.h5"));
  sp_filter *f;
  ASSERT_OK(sp_filter_create(&f));
  ASSERT_OK(sp_filter_exclude(f, "solve"));
  sp_call *c;
  size_t n;
  ASSERT_OK(sp_results_call_stack(r, 0, f, &c, &n, NULL));
  ASSERT_EQ(n, 5); /* session, setup, step x3 */
  for (size_t i = 0; i < n; i++) {
    ASSERT(strcmp(sp_results_region_name(r, c[i].region), "solve") != 0);
    if (!strcmp(sp_results_region_name(r, c[i].region), "step")) {
      ASSERT_EQ(c[i].depth, 1);
      ASSERT_EQ(c[i].parent, 0);
    }
  }
  free(c);
  sp_tree_node *t;
  ASSERT_OK(sp_results_call_tree(r, NULL, &t, &n));
  /* session, setup, solve, step (under solve), worker (its own root) */
  ASSERT_EQ(n, 5);
  ASSERT_EQ(t[0].parent, -1);
  ASSERT_EQ(t[0].count, 2);
  ASSERT_EQ(t[0].total_ns, 2200000000LL);
  free(t);
  sp_filter_free(f);
  sp_results_free(r);
}

SP_TEST(open_image_equals_file) {
  FILE *fp = fopen(FIX("multi.h5"), "rb");
  ASSERT(fp);
  fseek(fp, 0, SEEK_END);
  long size = ftell(fp);
  rewind(fp);
  char *buf = malloc((size_t)size);
  ASSERT_EQ(fread(buf, 1, (size_t)size, fp), (size_t)size);
  fclose(fp);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open_image(buf, (size_t)size, &r));
  memset(buf, 0, (size_t)size); /* the image was copied */
  free(buf);
  ASSERT_EQ(sp_results_num_regions(r), 5);
  ASSERT(sp_results_path(r) == NULL);
  ASSERT_STR_EQ(sp_results_display_label(r), "multi-run");
  sp_region_stats s;
  ASSERT_OK(sp_results_region_stats(r, region_of(r, "step"), NULL, SP_STATS_PERCENTILES, &s));
  ASSERT_EQ(s.count, 6);
  ASSERT(s.has_percentiles);
  sp_results_free(r);
  ASSERT_EQ(sp_results_open_image("garbage!garbage!", 16, &r), SP_ERR_FORMAT);
  ASSERT(r == NULL);
}

SP_TEST(metadata_types_and_text) {
  sp_results *r = open_fixture(FIX("multi.h5"));
  const sp_metadata_entry *m = sp_results_metadata(r, "mpi_size");
  ASSERT(m && m->kind == SP_VALUE_INT && m->i == 2);
  ASSERT_STR_EQ(m->text, "2");
  m = sp_results_metadata(r, "wall_seconds");
  ASSERT(m && m->kind == SP_VALUE_FLOAT);
  ASSERT_STR_EQ(m->text, "1.25");
  m = sp_results_metadata(r, "settings");
  ASSERT(m && m->kind == SP_VALUE_STRING);
  ASSERT_CONTAINS(m->s, "\"buffer_limit\": 1024");
  ASSERT(sp_results_metadata(r, "nope") == NULL);
  ASSERT_EQ(sp_results_num_metadata(r), 8);
  /* attribute order is by name */
  ASSERT_STR_EQ(sp_results_metadata_at(r, 0)->key, "label");
  sp_results_free(r);
}

SP_TEST(python_float_repr) {
  static const struct { double v; const char *s; } cases[] = {
      {1e-08, "1e-08"}, {0.0001, "0.0001"}, {1.5, "1.5"}, {100.0, "100.0"},
      {1e16, "1e+16"}, {0.1 + 0.2, "0.30000000000000004"}, {1234567890123456.0, "1234567890123456.0"},
      {-2.5e-05, "-2.5e-05"}, {0.0, "0.0"}, {0.035, "0.035"}, {123.456, "123.456"}};
  char buf[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sp__format_double(buf, sizeof buf, cases[i].v);
    ASSERT_STR_EQ(buf, cases[i].s);
  }
}

/* ---- hostile files ------------------------------------------------------------ */

static void expect_format_error(const char *path, const char *needle) {
  sp_results *r = (sp_results *)1;
  sp_status st = sp_results_open(path, &r);
  if (st != SP_ERR_FORMAT) SP_FAIL_("%s: status %d (%s)", path, st, sp_last_error());
  ASSERT(r == NULL);
  if (needle) ASSERT_CONTAINS(sp_last_error(), needle);
}

SP_TEST(hostile_files_are_format_errors) {
  expect_format_error(FIX("hostile_dtype.h5"), "start_times has float values");
  expect_format_error(FIX("hostile_missing.h5"), "event_counts is missing");
  expect_format_error(FIX("hostile_offsets.h5"), "points at events");
  expect_format_error(FIX("hostile_region_id.h5"), "names region 7");
  expect_format_error(FIX("hostile_huge.h5"), "claims");
  expect_format_error(FIX("hostile_lengths.h5"), "end_times has 1 values");
  expect_format_error(FIX("hostile_schema4.h5"), "Upgrade scope-profiler");
  expect_format_error(FIX("hostile_summary.h5"), "inconsistent");
  expect_format_error(FIX("hostile_foreign.h5"), "not a scope-profiler profile");
}

/* A region name whose stored length is corrupt (tests/cli/hostile/files/strlen_*):
 * refused, from a file and from an image (the core driver), before HDF5
 * allocates the 1.4 GB it claims; a valid file's names still read. */
SP_TEST(corrupt_string_lengths_are_refused) {
  static const char *files[] = {"strlen_contiguous.h5", "strlen_chunked.h5", "valid.h5"};
  for (size_t i = 0; i < 3; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/cli/hostile/files/%s", SP_TEST_SOURCE_DIR, files[i]);
    FILE *fp = fopen(path, "rb");
    ASSERT(fp);
    static char buf[1 << 16];
    size_t size = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    ASSERT(size > 0 && size < sizeof buf);
    sp_results *r = NULL, *ri = NULL;
    sp_status st = sp_results_open(path, &r), sti = SP_OK;
    if (i < 2) {
      ASSERT_EQ(st, SP_ERR_FORMAT);
      ASSERT_CONTAINS(sp_last_error(), "/region_table/names: string 0 claims 1431655765 bytes");
      sti = sp_results_open_image(buf, size, &ri);
      ASSERT_EQ(sti, SP_ERR_FORMAT);
      ASSERT_CONTAINS(sp_last_error(), "string 0 claims 1431655765 bytes");
    } else {
      ASSERT_OK(st);
      ASSERT_OK(sp_results_open_image(buf, size, &ri));
      ASSERT_STR_EQ(sp_results_region_name(r, 0), "solve");
      ASSERT_STR_EQ(sp_results_region_name(ri, 0), "solve");
      sp_results_free(r);
      sp_results_free(ri);
    }
  }
}

SP_TEST(truncated_text_and_empty_files) {
  FILE *in = fopen(FIX("multi.h5"), "rb");
  ASSERT(in);
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf, in);
  fclose(in);
  ASSERT_GT(n, 4096);
  static const size_t cuts[] = {4096, 2048, 800, 100, 9};
  for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
    FILE *out = fopen("cut.h5", "wb");
    fwrite(buf, 1, cuts[k], out);
    fclose(out);
    expect_format_error("cut.h5", NULL);
  }
  FILE *t = fopen("notes.h5", "w");
  fputs("this is a text file, not HDF5\n", t);
  fclose(t);
  expect_format_error("notes.h5", "not an HDF5 file");
  fclose(fopen("empty.h5", "w"));
  expect_format_error("empty.h5", "empty");
  sp_results *r;
  ASSERT_EQ(sp_results_open("missing.h5", &r), SP_ERR_IO);
  ASSERT_CONTAINS(sp_last_error(), "No such file");
  ASSERT_EQ(sp_results_open(".", &r), SP_ERR_IO);
}

SP_TEST(corrupt_events_found_only_when_read) {
  /* the summary rows are valid, so opening and summaries work and never
   * look at /events; anything that reads the events reports the damage */
  sp_results *r = open_fixture(FIX("hostile_events.h5"));
  sp_region_stats s;
  ASSERT_OK(sp_results_region_stats(r, 0, NULL, 0, &s));
  ASSERT_EQ(s.total_ns, 18);
  ASSERT_EQ(sp_results_region_stats(r, 0, NULL, SP_STATS_PERCENTILES, &s), SP_ERR_FORMAT);
  ASSERT_CONTAINS(sp_last_error(), "ends (1) before it starts (10)");
  sp_results_free(r);
}

SP_TEST(row_read_in_pieces) {
  sp_results *r = open_fixture(FIX("multi.h5"));
  size_t step = region_of(r, "step");
  for (size_t row = 0; row < sp_results_num_rows(r); row++) {
    sp_row_info info;
    ASSERT_OK(sp_results_row_info(r, row, &info));
    if (info.region != step || info.rank != 1) continue;
    ASSERT_EQ(info.count, 3);
    int64_t s[3], t[3];
    ASSERT_OK(sp_results_row_read(r, row, 1, 2, s, NULL, NULL, NULL, t));
    ASSERT_EQ(s[0], 5000000000LL + 520000000LL);
    ASSERT_EQ(t[0], 0);
    ASSERT_EQ(sp_results_row_read(r, row, 2, 2, s, NULL, NULL, NULL, NULL),
              SP_ERR_INVALID_ARGUMENT);
  }
  int64_t m;
  ASSERT_OK(sp_results_min_start(r, &m));
  ASSERT_EQ(m, 5000000000LL);
  sp_results_free(r);
}

int main(int c, char **v) { return sp_test_main(c, v); }
