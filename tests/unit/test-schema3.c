/* test-schema3.c - upstream's schema 3 as the default file (the dataset plan,
 * src/output/plan.c; docs/file-format.md): events/start_deltas (row-relative)
 * and durations, int64, name for name; any event values round-trip exactly,
 * through our reader in pieces read in any order and through the
 * independent decoder in tests/h5util.h; hdf5_schema=2 writes schema 2
 * exactly; a run recorded under the manual clock reads back the same from
 * either schema; optional columns exist only when recorded; files of our
 * earlier narrow coding and of newer schemas are refused with clear
 * messages. */
#include <hdf5.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"
#include "core/core.h"
#include "harness.h"
#include "h5util.h"
#include "output/output.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

static uint64_t rng = 11;
static uint64_t rnd(void) { return sp_test_splitmix(&rng); }

#define NROWS 5

struct run_data {
  size_t n;
  int64_t *start, *end, *cid, *pid;
  struct sp_row rows[NROWS];
  char *names[NROWS];
};

static void resolve(struct sp_config *c, const char *const *ovr) {
  unsetenv("SCOPE_PROFILER_HDF5_SCHEMA");
  unsetenv("SCOPE_PROFILER_HDF5_COMPRESSION");
  unsetenv("SCOPE_PROFILER_CONFIG");
  sp_setup_args a = {.overrides = ovr};
  if (sp__config_resolve(c, &a) != SP_OK) SP_FAIL_("resolve: %s", sp_last_error());
}

/* Five rows of sizes 0, 1, n/2, rest-1, ...; `wild` mixes in every case the
 * coding has to escape: gaps beyond 32 bits and negative ones (rows out of
 * start order), calls of hours, call ids going backwards, parents after
 * their child, a parent equal to the call, ids near the int64 limits. */
static struct run_data make(size_t n, int wild) {
  struct run_data d;
  memset(&d, 0, sizeof d);
  d.n = n;
  d.start = malloc(n * 8 + 8);
  d.end = malloc(n * 8 + 8);
  d.cid = malloc(n * 8 + 8);
  d.pid = malloc(n * 8 + 8);
  ASSERT(d.start && d.end && d.cid && d.pid);
  static char *names[NROWS] = {"empty", "one", "step", "solve", "halo"};
  size_t sizes[NROWS] = {0, n > 0, n / 2, 0, 0};
  sizes[3] = (n - sizes[1] - sizes[2]) / 2;
  sizes[4] = n - sizes[1] - sizes[2] - sizes[3];
  size_t off = 0;
  for (int r = 0; r < NROWS; r++) {
    d.names[r] = names[r];
    d.rows[r] = (struct sp_row){.region = (uint32_t)r, .offset = off, .count = sizes[r],
                                .source_line = -1, .source_file = "", .source_text = "",
                                .tags_json = "[]"};
    int64_t t = INT64_C(1700000000000000000) + (int64_t)r * 1000, id = (int64_t)r * 7;
    for (size_t i = off; i < off + sizes[r]; i++) {
      uint64_t x = rnd();
      t += 20000 + (int64_t)(x % 3000);
      id += 1 + (int64_t)(x % 40);
      d.start[i] = t;
      d.end[i] = t + 500 + (int64_t)(rnd() % 9000);
      d.cid[i] = id;
      d.pid[i] = x % 5 == 0 ? -1 : id - 1 - (int64_t)(x % 30);
      if (wild) {
        switch (rnd() % 12) {
        case 0: d.start[i] = t += (int64_t)(rnd() % (UINT64_C(1) << 40)); d.end[i] = t + 10; break;
        case 1: d.start[i] = t - (int64_t)(rnd() % 100000); d.end[i] = d.start[i] + 1; break;
        case 2: d.end[i] = d.start[i] + INT64_C(3600000000000); break;
        case 3: d.cid[i] = id - (int64_t)(rnd() % 1000000); break;
        case 4: d.pid[i] = d.cid[i] + 5; break;
        case 5: d.pid[i] = d.cid[i]; break;
        case 6: d.cid[i] = INT64_MAX - (int64_t)(rnd() % 3); d.pid[i] = INT64_MIN + 1; break;
        case 7: d.end[i] = d.start[i]; break;
        default: break;
        }
      }
    }
    off += sizes[r];
  }
  return d;
}

static void drop(struct run_data *d) {
  free(d->start);
  free(d->end);
  free(d->cid);
  free(d->pid);
}

static sp_status write_file(const char *path, const struct sp_config *c, struct run_data *d) {
  struct sp_run run = {.layout = "columnar", .names = d->names, .nnames = NROWS, .rows = d->rows,
                       .nrows = NROWS, .start = d->start, .end = d->end, .call_id = d->cid,
                       .parent_id = d->pid, .nevents = d->n};
  return sp__h5_write_file(&run, c, path);
}

/* The independent decoder (h5util.h) gives back every value written. */
static void assert_raw_equal(const char *path, const struct run_data *d) {
  const char *dsets[] = {"/events/start_times", "/events/end_times", "/events/call_ids",
                         "/events/parent_ids"};
  const int64_t *want[] = {d->start, d->end, d->cid, d->pid};
  for (int c = 0; c < 4; c++) {
    long long n = 0;
    int64_t *got = h5_i64(path, dsets[c], &n);
    if (!got) SP_FAIL_("%s: %s does not decode", path, dsets[c]);
    ASSERT_EQ(n, (long long)d->n);
    for (size_t i = 0; i < d->n; i++)
      if (got[i] != want[c][i])
        SP_FAIL_("%s[%zu] = %lld, wrote %lld", dsets[c], i, (long long)got[i], (long long)want[c][i]);
    free(got);
  }
}

/* Our reader gives back every value, whatever pieces it is asked for: front
 * to back in odd sizes, then the same row again from the middle and from
 * the start (the row's running sums must restart, not continue). */
static void assert_reader_equal(const char *path, const struct run_data *d) {
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open(path, &r));
  ASSERT_EQ(sp_results_num_rows(r), NROWS);
  ASSERT(sp_results_has_call_ids(r));
  int64_t *s = malloc(d->n * 8 + 8), *e = malloc(d->n * 8 + 8), *c = malloc(d->n * 8 + 8),
          *p = malloc(d->n * 8 + 8);
  ASSERT(s && e && c && p);
  for (size_t row = 0; row < NROWS; row++) {
    sp_row_info info;
    ASSERT_OK(sp_results_row_info(r, row, &info));
    size_t region = 0;
    ASSERT_OK(sp_results_find_region(r, d->names[row], &region));
    ASSERT_EQ(info.region, region);
    const struct sp_row *w = &d->rows[region];
    ASSERT_EQ(info.count, w->count);
    size_t pieces[] = {1, 7, 1000, 3, 65536};
    for (uint64_t at = 0, k = 0; at < w->count; k++) {
      size_t m = pieces[k % 5];
      if (m > w->count - at) m = (size_t)(w->count - at);
      /* alternately all four columns, then only ends and parents (which
       * need the starts and call ids the caller did not ask for) */
      if (k % 2 == 0) {
        ASSERT_OK(sp_results_row_read(r, row, at, m, s, e, c, p, NULL));
        for (size_t i = 0; i < m; i++) {
          ASSERT_EQ(s[i], d->start[w->offset + at + i]);
          ASSERT_EQ(c[i], d->cid[w->offset + at + i]);
        }
      } else {
        ASSERT_OK(sp_results_row_read(r, row, at, m, NULL, e, NULL, p, NULL));
      }
      for (size_t i = 0; i < m; i++) {
        ASSERT_EQ(e[i], d->end[w->offset + at + i]);
        ASSERT_EQ(p[i], d->pid[w->offset + at + i]);
      }
      at += m;
    }
    uint64_t jumps[] = {w->count / 2, 0, w->count / 3};
    for (int j = 0; j < 3 && w->count; j++) {
      uint64_t at = jumps[j];
      size_t m = (size_t)(w->count - at < 5 ? w->count - at : 5);
      ASSERT_OK(sp_results_row_read(r, row, at, m, s, NULL, c, NULL, NULL));
      for (size_t i = 0; i < m; i++) {
        ASSERT_EQ(s[i], d->start[w->offset + at + i]);
        ASSERT_EQ(c[i], d->cid[w->offset + at + i]);
      }
    }
  }
  free(s);
  free(e);
  free(c);
  free(p);
  sp_results_free(r);
}

/* The HDF5 type of a dataset: class, size, sign. */
static void assert_type(const char *path, const char *dset, H5T_class_t cls, size_t size, int is_signed) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT(f >= 0);
  hid_t ds = H5Dopen2(f, dset, H5P_DEFAULT);
  if (ds < 0) SP_FAIL_("%s: %s is missing", path, dset);
  hid_t t = H5Dget_type(ds);
  ASSERT_EQ(H5Tget_class(t), cls);
  ASSERT_EQ(H5Tget_size(t), size);
  if (cls == H5T_INTEGER) ASSERT_EQ(H5Tget_sign(t), is_signed ? H5T_SGN_2 : H5T_SGN_NONE);
  H5Tclose(t);
  H5Dclose(ds);
  H5Fclose(f);
}

SP_TEST(default_is_upstream_schema3) {
  struct sp_config c;
  resolve(&c, NULL);
  ASSERT_EQ(c.hdf5_schema, 3); /* the default */
  struct run_data d = make(200000, 0);
  ASSERT_OK(write_file("reg.h5", &c, &d));
  ASSERT_EQ(h5_attr_i64("reg.h5", "/", "scope_profiler_schema"), 3);
  char *layout = h5_attr_str("reg.h5", "/", "storage_layout");
  ASSERT_STR_EQ(layout, "columnar");
  free(layout);
  /* upstream's names and dtypes; schema 2's columns absent */
  assert_type("reg.h5", "/events/start_deltas", H5T_INTEGER, 8, 1);
  assert_type("reg.h5", "/events/durations", H5T_INTEGER, 8, 1);
  assert_type("reg.h5", "/events/call_ids", H5T_INTEGER, 8, 1);
  assert_type("reg.h5", "/events/parent_ids", H5T_INTEGER, 8, 1);
  assert_type("reg.h5", "/rank_region_index/region_ids", H5T_INTEGER, 4, 0);
  assert_type("reg.h5", "/rank_region_index/ranks", H5T_INTEGER, 4, 0);
  assert_type("reg.h5", "/rank_region_index/event_offsets", H5T_INTEGER, 8, 0);
  assert_type("reg.h5", "/rank_region_index/event_counts", H5T_INTEGER, 8, 0);
  assert_type("reg.h5", "/rank_region_index/summary_statistics", H5T_COMPOUND, 88, 1);
  ASSERT_EQ(h5_raw_len("reg.h5", "/events/start_times"), -1);
  ASSERT_EQ(h5_raw_len("reg.h5", "/events/end_times"), -1);
  ASSERT_EQ(h5_raw_len("reg.h5", "/events/start_gaps"), -1);
  ASSERT_EQ(h5_raw_len("reg.h5", "/events/thread_ids"), -1); /* not recorded: absent */
  ASSERT_EQ(h5_raw_len("reg.h5", "/rank_region_index/start_bases"), -1);
  /* the stored values are what the spec says: per row, the first start
   * absolute, then differences; durations end - start */
  long long n = 0, n2 = 0;
  int64_t *delta = h5_read_as("reg.h5", "/events/start_deltas", H5T_NATIVE_INT64, &n);
  int64_t *dur = h5_read_as("reg.h5", "/events/durations", H5T_NATIVE_INT64, &n2);
  ASSERT(delta && dur && n == (long long)d.n && n2 == n);
  for (int r = 0; r < NROWS; r++)
    for (uint64_t i = d.rows[r].offset; i < d.rows[r].offset + d.rows[r].count; i++) {
      ASSERT_EQ(delta[i], i == d.rows[r].offset ? d.start[i] : d.start[i] - d.start[i - 1]);
      ASSERT_EQ(dur[i], d.end[i] - d.start[i]);
    }
  free(delta);
  free(dur);
  assert_raw_equal("reg.h5", &d);
  assert_reader_equal("reg.h5", &d);
  drop(&d);
  sp__config_free(&c);
}

SP_TEST(wild_events_round_trip) {
  struct sp_config c;
  resolve(&c, NULL);
  /* negative deltas (rows out of start order), gaps beyond 32 bits, calls
   * of hours, ids near the int64 limits: exact either way */
  struct run_data d = make(60000, 1);
  ASSERT_OK(write_file("wild.h5", &c, &d));
  assert_raw_equal("wild.h5", &d);
  assert_reader_equal("wild.h5", &d);
  drop(&d);
  sp__config_free(&c);
}

SP_TEST(compressed_schema3_round_trips) {
  const char *filters[] = {"hdf5_compression=gzip", "hdf5_compression=lzf", "hdf5_compression=zstd",
                           "hdf5_compression=auto"};
  for (int k = 0; k < 4; k++) {
    struct sp_config c;
    const char *ovr[] = {filters[k], NULL};
    resolve(&c, ovr);
    struct run_data d = make(100000, k == 3);
    ASSERT_OK(write_file("z.h5", &c, &d));
    assert_raw_equal("z.h5", &d);
    assert_reader_equal("z.h5", &d);
    hid_t f = H5Fopen("z.h5", H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = H5Dopen2(f, "/events/start_deltas", H5P_DEFAULT);
    hid_t p = H5Dget_create_plist(ds);
    ASSERT_EQ(H5Pget_layout(p), H5D_CHUNKED);
    ASSERT_EQ(H5Pget_nfilters(p), 2); /* byte-shuffle, then the compressor */
    H5Pclose(p);
    H5Dclose(ds);
    H5Fclose(f);
    drop(&d);
    sp__config_free(&c);
  }
}

SP_TEST(schema2_on_request) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_schema=2", NULL};
  resolve(&c, ovr);
  struct run_data d = make(1000, 1);
  ASSERT_OK(write_file("two.h5", &c, &d));
  ASSERT_EQ(h5_attr_i64("two.h5", "/", "scope_profiler_schema"), 2);
  assert_type("two.h5", "/events/start_times", H5T_INTEGER, 8, 1);
  assert_type("two.h5", "/events/end_times", H5T_INTEGER, 8, 1);
  ASSERT_EQ(h5_raw_len("two.h5", "/events/start_deltas"), -1);
  ASSERT_EQ(h5_raw_len("two.h5", "/events/durations"), -1);
  assert_raw_equal("two.h5", &d);
  assert_reader_equal("two.h5", &d);
  drop(&d);
  sp__config_free(&c);
  const char *bad[] = {"hdf5_schema=4", NULL};
  sp_setup_args a = {.overrides = bad};
  ASSERT_EQ(sp__config_resolve(&c, &a), SP_ERR_INVALID_VALUE);
  ASSERT_CONTAINS(sp_last_error(), "hdf5_schema");
}

/* Records the same nested run under the manual clock into `file`. */
static void record(const char *file, const char *schema) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  unsetenv("SCOPE_PROFILER_CONFIG");
  unsetenv("SCOPE_PROFILER_HDF5_COMPRESSION");
  setenv("SCOPE_PROFILER_HDF5_SCHEMA", schema, 1);
  sp_i_manual_ticks = 1; /* both runs on the same timeline */
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  char fp[64];
  snprintf(fp, sizeof fp, "file_path=%s", file);
  const char *ovr[] = {fp, NULL};
  sp_setup_args a = {.overrides = ovr};
  ASSERT_OK(sp_manager_setup(m, &a));
  sp_region step = sp_region_intern("step"), solve = sp_region_intern("solve"), halo = sp_region_intern("halo");
  rng = 5;
  for (int i = 0; i < 3000; i++) {
    sp_region_begin(m, step);
    sp__clock_manual_advance(10 + rnd() % 50);
    for (int k = 0; k < 3; k++) {
      sp_region_begin(m, solve);
      sp__clock_manual_advance(100 + rnd() % 900);
      if (k == 1) {
        sp_region_begin(m, halo);
        sp__clock_manual_advance(5 + rnd() % 20);
        sp_region_end(m, halo);
      }
      sp_region_end(m, solve);
    }
    sp__clock_manual_advance(7);
    sp_region_end(m, step);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  unsetenv("SCOPE_PROFILER_HDF5_SCHEMA");
}

SP_TEST(schema2_and_schema3_read_back_identically) {
  record("s3.h5", "3");
  record("s2.h5", "2");
  ASSERT_EQ(h5_attr_i64("s3.h5", "/", "scope_profiler_schema"), 3);
  ASSERT_EQ(h5_attr_i64("s2.h5", "/", "scope_profiler_schema"), 2);
  sp_results *a = NULL, *b = NULL;
  ASSERT_OK(sp_results_open("s3.h5", &a));
  ASSERT_OK(sp_results_open("s2.h5", &b));
  ASSERT_EQ(sp_results_num_regions(a), sp_results_num_regions(b));
  ASSERT_EQ(sp_results_num_events(a), 3000 * 5);
  ASSERT_EQ(sp_results_num_events(a), sp_results_num_events(b));
  for (size_t reg = 0; reg < sp_results_num_regions(a); reg++) {
    size_t rb = 0;
    ASSERT_OK(sp_results_find_region(b, sp_results_region_name(a, reg), &rb));
    sp_events ea, eb;
    ASSERT_OK(sp_results_events(a, reg, 0, &ea));
    ASSERT_OK(sp_results_events(b, rb, 0, &eb));
    ASSERT_EQ(ea.count, eb.count);
    ASSERT(ea.count > 0);
    for (size_t i = 0; i < ea.count; i++) {
      ASSERT_EQ(ea.start_ns[i], eb.start_ns[i]);
      ASSERT_EQ(ea.end_ns[i], eb.end_ns[i]);
      ASSERT_EQ(ea.call_ids[i], eb.call_ids[i]);
      ASSERT_EQ(ea.parent_ids[i], eb.parent_ids[i]);
    }
    sp_region_stats sa, sb;
    ASSERT_OK(sp_results_region_stats(a, reg, NULL, SP_STATS_OWN, &sa));
    ASSERT_OK(sp_results_region_stats(b, rb, NULL, SP_STATS_OWN, &sb));
    ASSERT_EQ(sa.total_ns, sb.total_ns);
    ASSERT_EQ(sa.own_ns, sb.own_ns);
    sp_events_free(&ea);
    sp_events_free(&eb);
  }
  sp_results_free(a);
  sp_results_free(b);
}

SP_TEST(nesting_not_recorded_means_no_id_columns) {
  struct sp_config c;
  resolve(&c, NULL);
  struct run_data d = make(500, 0);
  struct sp_run run = {.layout = "columnar", .names = d.names, .nnames = NROWS, .rows = d.rows, .nrows = NROWS,
                       .start = d.start, .end = d.end, .nevents = d.n};
  ASSERT_OK(sp__h5_write_file(&run, &c, "noids.h5"));
  /* absence is data: a column of -1 would make every call share one id */
  ASSERT_EQ(h5_raw_len("noids.h5", "/events/call_ids"), -1);
  ASSERT_EQ(h5_raw_len("noids.h5", "/events/parent_ids"), -1);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("noids.h5", &r));
  ASSERT(!sp_results_has_call_ids(r));
  sp_results_free(r);
  drop(&d);
  sp__config_free(&c);
}

/* Writes a minimal file with a given schema attribute and event columns. */
static void fake(const char *path, long long schema, int narrow) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(f, "scope_profiler_schema", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  int64_t v = schema;
  H5Awrite(a, H5T_NATIVE_INT64, &v);
  H5Aclose(a);
  H5Sclose(sp);
  const char *groups[] = {"/region_table", "/rank_region_index", "/events"};
  for (int g = 0; g < 3; g++) H5Gclose(H5Gcreate2(f, groups[g], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  hsize_t zero = 0;
  hid_t s0 = H5Screate_simple(1, &zero, NULL);
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, H5T_VARIABLE);
  H5Dclose(H5Dcreate2(f, "/region_table/names", st, s0, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  const char *idx[] = {"region_ids", "ranks", "event_offsets", "event_counts"};
  for (int i = 0; i < 4; i++) {
    char p[64];
    snprintf(p, sizeof p, "/rank_region_index/%s", idx[i]);
    H5Dclose(H5Dcreate2(f, p, i < 2 ? H5T_STD_U32LE : H5T_STD_U64LE, s0, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  }
  H5Dclose(H5Dcreate2(f, narrow ? "/events/start_gaps" : "/events/start_deltas", H5T_STD_U8LE, s0, H5P_DEFAULT,
                      H5P_DEFAULT, H5P_DEFAULT));
  H5Dclose(H5Dcreate2(f, "/events/durations", H5T_STD_U8LE, s0, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Tclose(st);
  H5Sclose(s0);
  H5Fclose(f);
}

SP_TEST(other_codings_and_newer_schemas_are_refused_clearly) {
  sp_results *r = NULL;
  fake("narrow.h5", 3, 1);
  ASSERT_EQ(sp_results_open("narrow.h5", &r), SP_ERR_FORMAT);
  ASSERT_CONTAINS(sp_last_error(), "narrow integer coding");
  fake("ok.h5", 3, 0);
  ASSERT_OK(sp_results_open("ok.h5", &r));
  ASSERT_EQ(sp_results_num_events(r), 0);
  sp_results_free(r);
  fake("future.h5", 4, 0);
  ASSERT_EQ(sp_results_open("future.h5", &r), SP_ERR_FORMAT);
  ASSERT_CONTAINS(sp_last_error(), "unsupported scope-profiler HDF5 schema version 4; this package supports "
                                   "versions through 3. Upgrade scope-profiler to read this file");
  fake("zero.h5", 0, 0);
  ASSERT_EQ(sp_results_open("zero.h5", &r), SP_ERR_FORMAT);
  ASSERT_CONTAINS(sp_last_error(), "must be positive");
}

int main(int c, char **v) { return sp_test_main(c, v); }
