/* test-schema3.c - schema 3's delta-coded event columns (src/output/delta.c,
 * docs/file-format.md): any event values round-trip exactly, through our
 * reader in pieces read in any order and through the independent decoder in
 * tests/h5util.h; each column gets the narrowest width its values allow,
 * with the few values that do not fit listed beside it instead of widening
 * the column; hdf5_schema=2 still writes schema 2; and a corrupt overflow
 * list is a format error, not a misreading. */
#include <hdf5.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"
#include "harness.h"
#include "h5util.h"
#include "output/output.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

static uint64_t rng = 11;
static uint64_t rnd(void) {
  uint64_t z = (rng += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

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

/* Stored width (bytes) of a coded column. */
static size_t width(const char *path, const char *name) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT(f >= 0);
  char p[96];
  snprintf(p, sizeof p, "/events/%s", name);
  hid_t ds = H5Dopen2(f, p, H5P_DEFAULT);
  ASSERT(ds >= 0);
  hid_t t = H5Dget_type(ds);
  size_t w = H5Tget_size(t);
  ASSERT_EQ(H5Tget_sign(t), H5T_SGN_NONE);
  H5Tclose(t);
  H5Dclose(ds);
  H5Fclose(f);
  return w;
}

SP_TEST(regular_events_round_trip_narrow) {
  struct sp_config c;
  resolve(&c, NULL);
  ASSERT_EQ(c.hdf5_schema, 3); /* the default */
  struct run_data d = make(200000, 0);
  ASSERT_OK(write_file("reg.h5", &c, &d));
  ASSERT_EQ(h5_attr_i64("reg.h5", "/", "scope_profiler_schema"), 3);
  assert_raw_equal("reg.h5", &d);
  assert_reader_equal("reg.h5", &d);
  /* gaps 20-23 us and durations under 10 us: 2 bytes; id steps under 40
   * and parents under 30 back: 1 byte; nothing overflows */
  ASSERT_EQ(width("reg.h5", "start_gaps"), 2);
  ASSERT_EQ(width("reg.h5", "durations"), 2);
  ASSERT_EQ(width("reg.h5", "call_id_gaps"), 1);
  ASSERT_EQ(width("reg.h5", "parent_offsets"), 1);
  ASSERT_EQ(h5_len("reg.h5", "/events/start_gaps_overflow_index"), -1);
  FILE *f = fopen("reg.h5", "rb");
  ASSERT(f != NULL);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  /* 6 bytes per event plus the fixed part: far below schema 2's 32 */
  ASSERT_LT(size, (long)(d.n * 7));
  drop(&d);
  sp__config_free(&c);
}

SP_TEST(wild_events_round_trip_through_overflow) {
  struct sp_config c;
  resolve(&c, NULL);
  struct run_data d = make(60000, 1);
  ASSERT_OK(write_file("wild.h5", &c, &d));
  assert_raw_equal("wild.h5", &d);
  assert_reader_equal("wild.h5", &d);
  /* a twelfth of the values are escapes: listed, not widening everything */
  ASSERT_GT(h5_len("wild.h5", "/events/start_gaps_overflow_index"), 0);
  ASSERT_GT(h5_len("wild.h5", "/events/durations_overflow_index"), 0);
  ASSERT_GT(h5_len("wild.h5", "/events/parent_offsets_overflow_index"), 0);
  ASSERT_LE(width("wild.h5", "durations"), 2);
  drop(&d);
  sp__config_free(&c);
}

SP_TEST(hour_long_call_does_not_widen_the_column) {
  struct sp_config c;
  resolve(&c, NULL);
  struct run_data d = make(10000, 0);
  d.end[d.rows[2].offset + 17] = d.start[d.rows[2].offset + 17] + INT64_C(3600000000000);
  ASSERT_OK(write_file("hour.h5", &c, &d));
  ASSERT_EQ(width("hour.h5", "durations"), 2);
  ASSERT_EQ(h5_len("hour.h5", "/events/durations_overflow_index"), 1);
  long long n;
  int64_t *idx = h5_i64("hour.h5", "/events/durations_overflow_index", &n);
  int64_t *val = h5_i64("hour.h5", "/events/durations_overflow_values", &n);
  ASSERT(idx && val && n == 1);
  ASSERT_EQ(idx[0], (long long)(d.rows[2].offset + 17));
  ASSERT_EQ(val[0], INT64_C(3600000000000));
  free(idx);
  free(val);
  assert_reader_equal("hour.h5", &d);
  drop(&d);
  sp__config_free(&c);
}

SP_TEST(values_that_never_fit_take_eight_bytes) {
  struct sp_config c;
  resolve(&c, NULL);
  struct run_data d = make(2000, 0);
  for (size_t i = 0; i < d.n; i++) d.end[i] = d.start[i] + INT64_C(5000000000) + (int64_t)(rnd() % 1000);
  ASSERT_OK(write_file("wide.h5", &c, &d));
  ASSERT_EQ(width("wide.h5", "durations"), 8);
  ASSERT_EQ(h5_len("wide.h5", "/events/durations_overflow_index"), -1);
  assert_raw_equal("wide.h5", &d);
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
    hid_t ds = H5Dopen2(f, "/events/start_gaps", H5P_DEFAULT);
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
  ASSERT_EQ(h5_len("two.h5", "/events/start_gaps"), -1);
  ASSERT_EQ(h5_len("two.h5", "/rank_region_index/start_bases"), -1);
  assert_raw_equal("two.h5", &d);
  assert_reader_equal("two.h5", &d);
  drop(&d);
  sp__config_free(&c);
  const char *bad[] = {"hdf5_schema=4", NULL};
  sp_setup_args a = {.overrides = bad};
  ASSERT_EQ(sp__config_resolve(&c, &a), SP_ERR_INVALID_VALUE);
  ASSERT_CONTAINS(sp_last_error(), "hdf5_schema");
}

/* Overwrite a dataset's values in place. */
static void poke(const char *path, const char *dset, const int64_t *v, size_t n) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, dset, H5P_DEFAULT);
  ASSERT(ds >= 0);
  hsize_t cnt = n;
  hid_t ms = H5Screate_simple(1, &cnt, NULL), fs = H5Dget_space(ds);
  hsize_t zero = 0;
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, &zero, NULL, &cnt, NULL);
  ASSERT(H5Dwrite(ds, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, v) >= 0);
  H5Sclose(ms);
  H5Sclose(fs);
  H5Dclose(ds);
  H5Fclose(f);
}

SP_TEST(corrupt_overflow_lists_are_format_errors) {
  struct sp_config c;
  resolve(&c, NULL);
  struct run_data d = make(20000, 1);
  ASSERT_OK(write_file("bad.h5", &c, &d));
  long long n = h5_len("bad.h5", "/events/durations_overflow_index");
  ASSERT_GT(n, 2);
  sp_results *r = NULL;
  int64_t swapped[2];
  int64_t *idx = h5_i64("bad.h5", "/events/durations_overflow_index", &n);
  swapped[0] = idx[1];
  swapped[1] = idx[0];
  free(idx);
  poke("bad.h5", "/events/durations_overflow_index", swapped, 2);
  ASSERT_EQ(sp_results_open("bad.h5", &r), SP_ERR_FORMAT);
  ASSERT_CONTAINS(sp_last_error(), "durations_overflow_index must hold ascending");
  ASSERT_OK(write_file("bad.h5", &c, &d));
  int64_t beyond = (int64_t)d.n;
  poke("bad.h5", "/events/start_gaps_overflow_index", &beyond, 1);
  ASSERT_EQ(sp_results_open("bad.h5", &r), SP_ERR_FORMAT);
  /* lists claiming as many entries as there are events, never written: an
   * error, not 2 x 160 KB of fill values (or 2 x 8 TB for a claim of 2^40) */
  ASSERT_OK(write_file("bad.h5", &c, &d));
  hid_t f = H5Fopen("bad.h5", H5F_ACC_RDWR, H5P_DEFAULT);
  const char *lists[] = {"/events/durations_overflow_index", "/events/durations_overflow_values"};
  for (int k = 0; k < 2; k++) {
    ASSERT(H5Ldelete(f, lists[k], H5P_DEFAULT) >= 0);
    hsize_t dims = d.n, chunk = 1024;
    hid_t sp = H5Screate_simple(1, &dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t ds = H5Dcreate2(f, lists[k], k ? H5T_STD_I64LE : H5T_STD_U64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ASSERT(ds >= 0);
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(sp);
  }
  H5Fclose(f);
  ASSERT_EQ(sp_results_open("bad.h5", &r), SP_ERR_FORMAT);
  ASSERT_CONTAINS(sp_last_error(), "never fully written");
  drop(&d);
  sp__config_free(&c);
}

int main(int c, char **v) { return sp_test_main(c, v); }
