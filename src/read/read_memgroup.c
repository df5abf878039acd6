/* read_memgroup.c - the memory figures of a profile written with use_memray
 * (docs/file-format.md, rank<N>/memory): per rank, one row per region with
 * its calls, bytes allocated and freed, allocations and the largest call's
 * peak, and the capture's memory over time. Read on demand for inspect's
 * memory columns and the report's memory views; every dataset is checked
 * (rank, type, length, agreement with the others) before it is used.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/memcap_read.h"
#include "read/read_internal.h"

#define MAX_ROWS (1u << 24)

static sp_status read_i64(const sp_results *r, hid_t g, const char *name, const char *where, size_t *n,
                          int64_t **out) {
  *out = NULL;
  hid_t d = sp__hard_path(g, name) ? H5Dopen2(g, name, H5P_DEFAULT) : H5I_INVALID_HID;
  if (d < 0) return sp__set_error(SP_ERR_FORMAT, "%s/%s is missing", where, name);
  hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
  hsize_t dims[2] = {0, 0};
  int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
  if (nd == 1) H5Sget_simple_extent_dims(sp, dims, NULL);
  sp_status st = SP_OK;
  if (nd != 1 || t < 0 || H5Tget_class(t) != H5T_INTEGER)
    st = sp__set_error(SP_ERR_FORMAT, "%s/%s is not a 1-D integer dataset", where, name);
  else if (dims[0] > MAX_ROWS || (*n != SIZE_MAX && dims[0] != *n))
    st = sp__set_error(SP_ERR_FORMAT, "%s/%s has %llu rows, expected %zu", where, name,
                       (unsigned long long)dims[0], *n == SIZE_MAX ? (size_t)MAX_ROWS : *n);
  else /* its values must be the file's own (external storage would read a local file) */
    st = sp__check_storage(r, d, name, dims[0], 0);
  if (!st) {
    *n = (size_t)dims[0];
    *out = malloc((*n ? *n : 1) * sizeof **out);
    if (!*out)
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s/%s", where, name);
    else if (*n && H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
      st = sp__set_error(SP_ERR_FORMAT, "cannot read %s/%s", where, name);
  }
  if (st) {
    free(*out);
    *out = NULL;
  }
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  H5Dclose(d);
  return st;
}

static sp_status read_rank(sp_results *r, int64_t rank, struct sp_memory_table *t) {
  char where[64], label[4200];
  /* every link on the path hard: absent otherwise (another file is never opened) */
  snprintf(where, sizeof where, "rank%lld/memory", (long long)rank);
  if (!sp__hard_path(r->file, where)) return SP_OK;
  snprintf(label, sizeof label, "%s: %s", r->path ? r->path : "(image)", where);
  hid_t g = H5Gopen2(r->file, where, H5P_DEFAULT);
  if (g < 0) return sp__set_error(SP_ERR_FORMAT, "%s is not a group", label);
  static const char *const cols[5] = {"calls", "alloc_bytes", "freed_bytes", "alloc_count",
                                      "peak_bytes"};
  int64_t *v[5] = {0};
  char **names = NULL;
  size_t n = SIZE_MAX;
  sp_status st = SP_OK;
  for (int k = 0; k < 5 && !st; k++) st = read_i64(r, g, cols[k], label, &n, &v[k]);
  if (!st) {
    hid_t d = sp__hard_path(g, "regions") ? H5Dopen2(g, "regions", H5P_DEFAULT) : H5I_INVALID_HID;
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[1] = {0};
    if (d < 0 || sp < 0 || H5Sget_simple_extent_ndims(sp) != 1 ||
        H5Sget_simple_extent_dims(sp, dims, NULL) < 0 || dims[0] != n)
      st = sp__set_error(SP_ERR_FORMAT, "%s/regions is missing or not %zu names", label, n);
    else if ((st = sp__check_storage(r, d, "regions", n, 0)) == SP_OK)
      st = sp__read_strings(d, 0, n, &names, "memory region names");
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
  }
  if (!st) {
    struct sp_memory_row *rows = realloc(t->rows, (t->n + n + 1) * sizeof *rows);
    if (!rows) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    else t->rows = rows;
    for (size_t i = 0; i < n && !st; i++) {
      t->rows[t->n++] = (struct sp_memory_row){names[i], rank, v[0][i], v[1][i], v[2][i], v[3][i],
                                               v[4][i]};
      names[i] = NULL; /* the table owns it now */
    }
  }
  if (!st && H5Lexists(g, "timeline_end_ns", H5P_DEFAULT) > 0) {
    size_t m = SIZE_MAX;
    int64_t *ns = NULL, *bytes = NULL;
    st = read_i64(r, g, "timeline_end_ns", label, &m, &ns);
    if (!st) st = read_i64(r, g, "timeline_net_bytes", label, &m, &bytes);
    struct sp_memory_timeline *tl =
        st ? NULL : realloc(t->timelines, (t->ntimelines + 1) * sizeof *tl);
    if (!st && !tl) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    if (!st) {
      t->timelines = tl;
      t->timelines[t->ntimelines++] = (struct sp_memory_timeline){rank, ns, bytes, m};
    } else {
      free(ns);
      free(bytes);
    }
  }
  if (names) sp__free_strings(names, n);
  for (int k = 0; k < 5; k++) free(v[k]);
  H5Gclose(g);
  return st;
}

sp_status sp__results_memory(sp_results *r, struct sp_memory_table *out) {
  memset(out, 0, sizeof *out);
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp_status st = SP_OK;
  for (size_t i = 0; i < r->nranks && !st; i++) st = read_rank(r, r->ranks[i], out);
  sp__h5_quiet_end(&q);
  if (st) sp__memory_table_free(out);
  return st;
}

void sp__memory_table_free(struct sp_memory_table *t) {
  for (size_t i = 0; i < t->n; i++) free(t->rows[i].region);
  for (size_t i = 0; i < t->ntimelines; i++) {
    free(t->timelines[i].end_ns);
    free(t->timelines[i].net_bytes);
  }
  free(t->rows);
  free(t->timelines);
  memset(t, 0, sizeof *t);
}
