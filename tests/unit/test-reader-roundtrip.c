/* test-reader-roundtrip.c - the reader on what our own writer produces: a
 * run recorded through the public API, handed back in memory by finalize
 * (an HDF5 image opened with sp_results_open_image) and written to a file,
 * must give the same regions, counts, nesting and statistics either way.
 * Kept apart from test-reader.c, which builds without the core library.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "harness.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

static size_t region_of(const sp_results *r, const char *name) {
  size_t i = 0;
  if (sp_results_find_region(r, name, &i) != SP_OK) SP_FAIL_("no region %s", name);
  return i;
}

/* outer x3, each with inner x2, each inner with leaf x1 */
static void record(sp_manager *m) {
  sp_region outer = sp_region_intern("outer"), inner = sp_region_intern("inner"),
            leaf = sp_region_intern("leaf");
  for (int i = 0; i < 3; i++) {
    sp_region_begin(m, outer);
    for (int k = 0; k < 2; k++) {
      sp_region_begin(m, inner);
      sp_region_begin(m, leaf);
      sp_region_end(m, leaf);
      sp_region_end(m, inner);
    }
    sp_region_end(m, outer);
  }
}

static void check(sp_results *r, int schema) {
  ASSERT_EQ(sp_results_schema(r), schema);
  ASSERT_EQ(sp_results_num_ranks(r), 1);
  size_t outer = region_of(r, "outer"), inner = region_of(r, "inner"), leaf = region_of(r, "leaf");
  sp_region_stats so, si, sl;
  ASSERT_OK(sp_results_region_stats(r, outer, NULL, SP_STATS_OWN | SP_STATS_PERCENTILES, &so));
  ASSERT_OK(sp_results_region_stats(r, inner, NULL, SP_STATS_OWN, &si));
  ASSERT_OK(sp_results_region_stats(r, leaf, NULL, SP_STATS_OWN, &sl));
  ASSERT_EQ(so.count, 3);
  ASSERT_EQ(si.count, 6);
  ASSERT_EQ(sl.count, 6);
  ASSERT(so.has_own && si.has_own && sl.has_own && so.has_percentiles);
  ASSERT_GE(so.total_ns, si.total_ns);
  ASSERT_EQ(so.own_ns, so.total_ns - si.total_ns);
  ASSERT_EQ(si.own_ns, si.total_ns - sl.total_ns);
  ASSERT_EQ(sl.own_ns, sl.total_ns);
  ASSERT_LE(so.min_ns, so.max_ns);
  /* nesting: 3 roots, inner at depth 1 under outer, leaf at depth 2 */
  sp_call *c;
  size_t n;
  ASSERT_OK(sp_results_call_stack(r, sp_results_rank(r, 0), NULL, &c, &n, NULL));
  size_t found = 0;
  for (size_t i = 0; i < n; i++) {
    if (c[i].parent >= 0) ASSERT_EQ(c[i].depth, c[c[i].parent].depth + 1);
    else ASSERT_EQ(c[i].depth, 0);
    const char *name = sp_results_region_name(r, c[i].region);
    const char *want_parent = !strcmp(name, "inner") ? "outer" : !strcmp(name, "leaf") ? "inner" : NULL;
    if (strcmp(name, "outer") && !want_parent) continue; /* a session root, if one is added */
    found++;
    if (want_parent) {
      ASSERT(c[i].parent >= 0);
      ASSERT_STR_EQ(sp_results_region_name(r, c[c[i].parent].region), want_parent);
    }
  }
  ASSERT_EQ(found, 15);
  free(c);
}

SP_TEST(finalize_image_and_file_read_back_alike) {
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  const char *ov[] = {"file_path=roundtrip.h5", NULL};
  sp_setup_args a = {.overrides = ov};
  ASSERT_OK(sp_manager_setup(m, &a));
  record(m);
  sp_finalize_args fin = {.return_results = 1};
  sp_results *mem = NULL;
  ASSERT_OK(sp_manager_finalize(m, &fin, &mem));
  ASSERT(mem != NULL);
  ASSERT(sp_results_path(mem) == NULL);
  check(mem, 3);
  sp_results *file = NULL;
  ASSERT_OK(sp_results_open("roundtrip.h5", &file));
  check(file, 3);
  /* same numbers from the image and from the file */
  for (size_t i = 0; i < sp_results_num_regions(file); i++) {
    const char *name = sp_results_region_name(file, i);
    sp_region_stats x, y;
    ASSERT_OK(sp_results_region_stats(file, i, NULL, 0, &x));
    ASSERT_OK(sp_results_region_stats(mem, region_of(mem, name), NULL, 0, &y));
    ASSERT_EQ(x.count, y.count);
    ASSERT_EQ(x.total_ns, y.total_ns);
  }
  ASSERT_STR_EQ(sp_results_display_label(file), sp_results_display_label(mem));
  sp_results_free(mem);
  sp_results_free(file);
  sp_manager_destroy(m);
}

/* One recording (manual clock, so it can be repeated exactly) written in
 * each schema: every event, id and parent reads back the same. */
static sp_results *recorded(const char *schema) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  const char *ov[] = {"file_path=same.h5", schema, NULL};
  sp_setup_args a = {.overrides = ov};
  ASSERT_OK(sp_manager_setup(m, &a));
  sp_region outer = sp_region_intern("outer"), inner = sp_region_intern("inner");
  for (int i = 0; i < 3000; i++) {
    sp_region_begin(m, outer);
    sp__clock_manual_advance(1000 + (uint64_t)(i * 7919 % 300));
    for (int k = 0; k < 1 + i % 3; k++) {
      sp_region_begin(m, inner);
      sp__clock_manual_advance(100 + (uint64_t)(i % 11));
      sp_region_end(m, inner);
    }
    sp_region_end(m, outer);
  }
  sp_results *r = NULL;
  ASSERT_OK(sp_manager_finalize(m, &(sp_finalize_args){.return_results = 1}, &r));
  sp_manager_destroy(m);
  return r;
}

SP_TEST(schema2_and_schema3_read_back_alike) {
  sp_results *two = recorded("hdf5_schema=2"), *three = recorded("hdf5_schema=3");
  ASSERT_EQ(sp_results_schema(two), 2);
  ASSERT_EQ(sp_results_schema(three), 3);
  ASSERT_EQ(sp_results_num_events(two), sp_results_num_events(three));
  ASSERT_GT(sp_results_num_events(three), 8000);
  int64_t t2, t3;
  ASSERT_OK(sp_results_min_start(two, &t2));
  ASSERT_OK(sp_results_min_start(three, &t3));
  for (size_t i = 0; i < sp_results_num_regions(two); i++) {
    sp_events a, b;
    ASSERT_OK(sp_results_events(two, i, 0, &a));
    ASSERT_OK(sp_results_events(three, region_of(three, sp_results_region_name(two, i)), 0, &b));
    ASSERT_EQ(a.count, b.count);
    for (size_t k = 0; k < a.count; k++) {
      /* the manual clock runs on across the two recordings */
      ASSERT_EQ(a.start_ns[k] - t2, b.start_ns[k] - t3);
      ASSERT_EQ(a.end_ns[k] - t2, b.end_ns[k] - t3);
      ASSERT_EQ(a.call_ids[k], b.call_ids[k]);
      ASSERT_EQ(a.parent_ids[k], b.parent_ids[k]);
    }
    sp_events_free(&a);
    sp_events_free(&b);
  }
  sp_results_free(two);
  sp_results_free(three);
}

int main(int c, char **v) { return sp_test_main(c, v); }
