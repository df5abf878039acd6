/* tests/h5util.h - small raw-HDF5 readers for tests that check what the
 * writer put on disk without going through our own reader (so a bug shared
 * by writer and reader cannot hide). */
#ifndef SP_TEST_H5UTIL_H
#define SP_TEST_H5UTIL_H

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline long long h5_attr_i64(const char *file, const char *obj, const char *name);
static inline int64_t *h5_schema3_events(const char *file, int column, long long *n);

/* Schema 3 stores starts and ends as /events/start_deltas and durations;
 * asked for /events/start_times or end_times of a schema-3 file, h5_len and
 * h5_i64 decode them (below), so the tests read either schema the same way.
 * -1: not one of them. */
static inline int h5_coded_column(const char *file, const char *dset) {
  static const char *const plain[] = {"/events/start_times", "/events/end_times"};
  for (int c = 0; c < 2; c++)
    if (strcmp(dset, plain[c]) == 0) return h5_attr_i64(file, "/", "scope_profiler_schema") == 3 ? c : -1;
  return -1;
}

static inline long long h5_raw_len(const char *file, const char *dset);

/* Number of elements of a 1-D dataset, or -1. */
static inline long long h5_len(const char *file, const char *dset) {
  if (h5_coded_column(file, dset) >= 0) return h5_raw_len(file, "/events/start_deltas");
  return h5_raw_len(file, dset);
}

static inline long long h5_raw_len(const char *file, const char *dset) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a missing dataset is an answer, not noise */
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return -1;
  hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
  long long n = -1;
  if (d >= 0) {
    hid_t s = H5Dget_space(d);
    hsize_t dims[1] = {0};
    if (H5Sget_simple_extent_ndims(s) == 1) {
      H5Sget_simple_extent_dims(s, dims, NULL);
      n = (long long)dims[0];
    }
    H5Sclose(s);
    H5Dclose(d);
  }
  H5Fclose(f);
  return n;
}

/* 1 when the dataset is virtual (a staged file's /events, docs/file-format.md
 * "Staged blocks"), 0 when not, -1 when it cannot be opened. */
static inline int h5_is_virtual(const char *file, const char *dset) {
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return -1;
  hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
  int v = -1;
  if (d >= 0) {
    hid_t p = H5Dget_create_plist(d);
    v = H5Pget_layout(p) == H5D_VIRTUAL;
    H5Pclose(p);
    H5Dclose(d);
  }
  H5Fclose(f);
  return v;
}

static inline void *h5_read_as(const char *file, const char *dset, hid_t mtype, long long *n);

/* A whole 1-D integer dataset converted to int64 (malloc'd), or NULL. */
static inline int64_t *h5_i64(const char *file, const char *dset, long long *n) {
  int c = h5_coded_column(file, dset);
  if (c >= 0) return h5_schema3_events(file, c, n);
  return h5_read_as(file, dset, H5T_NATIVE_INT64, n);
}

static inline void *h5_read_as(const char *file, const char *dset, hid_t mtype, long long *n) {
  *n = h5_raw_len(file, dset);
  if (*n < 0) return NULL;
  int64_t *v = malloc(((size_t)*n + 1) * sizeof *v);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
  if (*n && H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
    free(v);
    v = NULL;
  }
  H5Dclose(d);
  H5Fclose(f);
  return v;
}

/* A 1-D vlen string dataset (malloc'd array of malloc'd strings). */
static inline char **h5_strings(const char *file, const char *dset, long long *n) {
  *n = h5_len(file, dset);
  if (*n < 0) return NULL;
  char **v = calloc((size_t)*n + 1, sizeof *v);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  if (*n) H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  H5Tclose(t);
  H5Dclose(d);
  H5Fclose(f);
  return v;
}

static inline void h5_strings_free(char **v, long long n) {
  for (long long i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

/* Index of a region name in /region_table/names, or -1. */
static inline long long h5_region_index(const char *file, const char *name) {
  long long n;
  char **names = h5_strings(file, "/region_table/names", &n);
  long long idx = -1;
  for (long long i = 0; names && i < n; i++) {
    if (idx < 0 && strcmp(names[i], name) == 0) idx = i;
    free(names[i]);
  }
  free(names);
  return idx;
}

/* Events recorded for a region (summed over rows), or -1 if absent. */
static inline long long h5_region_events(const char *file, const char *name) {
  long long idx = h5_region_index(file, name);
  if (idx < 0) return -1;
  long long k, k2;
  int64_t *ids = h5_i64(file, "/rank_region_index/region_ids", &k);
  int64_t *counts = h5_i64(file, "/rank_region_index/event_counts", &k2);
  long long total = 0;
  for (long long i = 0; ids && counts && i < k; i++)
    if (ids[i] == idx) total += counts[i];
  free(ids);
  free(counts);
  return total;
}

/* gpu_count and gpu_total of a region's row of summary_statistics (the
 * first row of that region); 0, or -1 when the region or the fields are not
 * there. */
static inline int h5_gpu_stats(const char *file, const char *region, uint64_t *count, int64_t *total) {
  long long idx = h5_region_index(file, region), k = 0, row = -1;
  int64_t *ids = h5_i64(file, "/rank_region_index/region_ids", &k);
  for (long long i = 0; ids && i < k && row < 0; i++)
    if (ids[i] == idx) row = i;
  free(ids);
  if (idx < 0 || row < 0) return -1;
  struct h5_gpu_row {
    uint64_t count;
    int64_t total;
  } *v = calloc((size_t)k, sizeof *v);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/rank_region_index/summary_statistics", H5P_DEFAULT);
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof *v);
  H5Tinsert(t, "gpu_count", HOFFSET(struct h5_gpu_row, count), H5T_NATIVE_UINT64);
  H5Tinsert(t, "gpu_total", HOFFSET(struct h5_gpu_row, total), H5T_NATIVE_INT64);
  int ok = v && d >= 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
  if (ok) {
    *count = v[row].count;
    *total = v[row].total;
  }
  H5Tclose(t);
  if (d >= 0) H5Dclose(d);
  if (f >= 0) H5Fclose(f);
  free(v);
  return ok ? 0 : -1;
}

/* A scalar string attribute of an object (malloc'd), or NULL. */
static inline char *h5_attr_str(const char *file, const char *obj, const char *name) {
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return NULL;
  char *out = NULL;
  if (H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0) {
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    char *v = NULL;
    if (H5Aread(a, t, &v) >= 0 && v) {
      out = strdup(v);
      H5free_memory(v);
    }
    H5Tclose(t);
    H5Aclose(a);
  }
  H5Fclose(f);
  return out;
}

static inline int h5_attr_exists(const char *file, const char *obj, const char *name) {
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return -1;
  int e = H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0;
  H5Fclose(f);
  return e;
}

static inline long long h5_attr_i64(const char *file, const char *obj, const char *name) {
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return -1;
  long long v = -1;
  if (H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0) {
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    int64_t x;
    if (H5Aread(a, H5T_NATIVE_INT64, &x) >= 0) v = x;
    H5Aclose(a);
  }
  H5Fclose(f);
  return v;
}

/* Decodes schema 3's starts (column 0) or ends (1) for the whole file,
 * straight from docs/file-format.md and independently of the library's
 * reader: each row's starts are the running sum of its start deltas, ends
 * are starts plus durations. */
static inline int64_t *h5_schema3_events(const char *file, int column, long long *n) {
  long long k = 0, kk = 0, nd = 0;
  int64_t *delta = h5_read_as(file, "/events/start_deltas", H5T_NATIVE_INT64, n);
  int64_t *dur = h5_read_as(file, "/events/durations", H5T_NATIVE_INT64, &nd);
  int64_t *offs = h5_i64(file, "/rank_region_index/event_offsets", &k);
  int64_t *cnts = h5_i64(file, "/rank_region_index/event_counts", &kk);
  int64_t *out = NULL;
  if (delta && dur && nd == *n && offs && cnts && kk == k) {
    out = malloc(((size_t)*n + 1) * sizeof *out);
    for (long long r = 0; r < k; r++) {
      uint64_t s = 0;
      for (int64_t i = offs[r]; i < offs[r] + cnts[r] && i < *n; i++) {
        s += (uint64_t)delta[i];
        out[i] = column == 0 ? (int64_t)s : (int64_t)(s + (uint64_t)dur[i]);
      }
    }
  }
  free(delta);
  free(dur);
  free(offs);
  free(cnts);
  return out;
}

#endif
