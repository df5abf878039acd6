/* read_counters.c - per-region counter totals: upstream's
 * rank<N>/perf_events/<region> groups (attributes calls and event_names,
 * dataset values[E]), for inspect and the report.
 *
 * The groups are validated as they are read, so a hostile file gives a
 * format error that names the group, never a crash or a huge allocation:
 * event_names and values must have the same length (at most 256), calls
 * must be a non-negative integer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/read_internal.h"

#define MAX_COUNTER_EVENTS 256

struct walk {
  sp_results *r;
  int64_t rank;
  hid_t perf;
  sp_counter_row *rows;
  size_t n, cap;
  sp_status st;
};

static sp_status bad(const char *group, const char *what) {
  return sp__set_error(SP_ERR_FORMAT, "counter group %s: %s; the file is damaged or not a scope-profiler file", group,
                       what);
}

/* The region a group name stands for: '/' was written as '|'; a name that
 * is not among the file's regions is kept as written. */
static char *region_of(const sp_results *r, const char *gname) {
  for (size_t i = 0; i < r->nregions; i++) {
    const char *a = r->names[i], *b = gname;
    while (*a && *b && (*a == *b || (*a == '/' && *b == '|'))) a++, b++;
    if (!*a && !*b) return sp__strdup(r->names[i]);
  }
  return sp__strdup(gname);
}

static void row_clear(sp_counter_row *row) {
  free(row->region);
  sp__free_strings(row->event_names, row->nevents);
  free(row->values);
}

static herr_t group_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
  struct walk *w = data;
  char path[1200];
  snprintf(path, sizeof path, "rank%lld/perf_events/%s", (long long)w->rank, name);
  H5O_info_t oi;
  if (info->type != H5L_TYPE_HARD) { /* a link could point anywhere */
    w->st = bad(path, "is a link, not a group");
    return -1;
  }
#if H5_VERSION_GE(1, 10, 3)
  herr_t got = H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT);
#else
  herr_t got = H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT);
#endif
  if (got < 0 || oi.type != H5O_TYPE_GROUP) {
    w->st = bad(path, "is not a group");
    return -1;
  }
  hid_t rg = H5Gopen2(g, name, H5P_DEFAULT);
  if (rg < 0) {
    w->st = bad(path, "cannot be opened");
    return -1;
  }
  sp_counter_row row;
  memset(&row, 0, sizeof row);
  row.rank = w->rank;
  sp_status st = SP_OK;
  /* calls */
  hid_t a = H5Aexists(rg, "calls") > 0 ? H5Aopen(rg, "calls", H5P_DEFAULT) : -1;
  hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
  hid_t at = a >= 0 ? H5Aget_type(a) : -1;
  if (a < 0 || sp < 0 || H5Sget_simple_extent_npoints(sp) != 1 || H5Tget_class(at) != H5T_INTEGER ||
      H5Aread(a, H5T_NATIVE_INT64, &row.calls) < 0 || row.calls < 0)
    st = bad(path, "attribute calls is missing or not one non-negative integer");
  if (at >= 0) H5Tclose(at);
  if (sp >= 0) H5Sclose(sp);
  if (a >= 0) H5Aclose(a);
  /* event_names */
  hssize_t ne = -1;
  if (st == SP_OK) {
    a = H5Aexists(rg, "event_names") > 0 ? H5Aopen(rg, "event_names", H5P_DEFAULT) : -1;
    sp = a >= 0 ? H5Aget_space(a) : -1;
    ne = sp >= 0 && H5Sget_simple_extent_ndims(sp) <= 1 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (a < 0 || ne < 0 || ne > MAX_COUNTER_EVENTS)
      st = bad(path, "attribute event_names is missing or has more than 256 names");
    else
      st = sp__read_strings(a, 1, (size_t)ne, &row.event_names, path);
    if (sp >= 0) H5Sclose(sp);
    if (a >= 0) H5Aclose(a);
    row.nevents = ne > 0 ? (size_t)ne : 0;
  }
  /* values */
  if (st == SP_OK) {
    hid_t d = H5Lexists(rg, "values", H5P_DEFAULT) > 0 ? H5Dopen2(rg, "values", H5P_DEFAULT) : -1;
    sp = d >= 0 ? H5Dget_space(d) : -1;
    hid_t dt = d >= 0 ? H5Dget_type(d) : -1;
    hssize_t nv = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 ? H5Sget_simple_extent_npoints(sp) : -1;
    row.values = calloc(row.nevents + 1, sizeof *row.values);
    if (d < 0 || nv != ne || H5Tget_class(dt) != H5T_INTEGER)
      st = bad(path, "dataset values is missing, not integers, or not as long as event_names");
    else if (!row.values)
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
    else if (sp__check_storage(w->r, d, path, (hsize_t)nv, 1) != SP_OK)
      st = SP_ERR_FORMAT;
    else if (nv && H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, row.values) < 0)
      st = bad(path, "dataset values cannot be read");
    if (dt >= 0) H5Tclose(dt);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
  }
  H5Gclose(rg);
  if (st == SP_OK && !(row.region = region_of(w->r, name)))
    st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
  if (st == SP_OK && w->n == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 16;
    sp_counter_row *n = realloc(w->rows, cap * sizeof *n);
    if (!n) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
    else {
      w->rows = n;
      w->cap = cap;
    }
  }
  if (st != SP_OK) {
    row_clear(&row);
    w->st = st;
    return -1;
  }
  w->rows[w->n++] = row;
  return 0;
}

static herr_t rank_cb(hid_t root, const char *name, const H5L_info_t *info, void *data) {
  struct walk *w = data;
  if (info->type != H5L_TYPE_HARD || strncmp(name, "rank", 4) != 0 || !name[4]) return 0;
  long long rank = 0;
  for (const char *p = name + 4; *p; p++) {
    if (*p < '0' || *p > '9' || rank > SP__MAX_RANK / 10) return 0;
    rank = rank * 10 + (*p - '0');
  }
  char path[64];
  snprintf(path, sizeof path, "%s/perf_events", name);
  if (H5Lexists(root, name, H5P_DEFAULT) <= 0) return 0;
  hid_t rg = H5Gopen2(root, name, H5P_DEFAULT);
  if (rg < 0) return 0;
  htri_t has = H5Lexists(rg, "perf_events", H5P_DEFAULT);
  hid_t pg = has > 0 ? H5Gopen2(rg, "perf_events", H5P_DEFAULT) : -1;
  H5Gclose(rg);
  if (has > 0 && pg < 0) {
    w->st = bad(path, "is not a group");
    return -1;
  }
  if (pg < 0) return 0;
  w->rank = rank;
  hsize_t idx = 0;
  herr_t rc = H5Literate(pg, H5_INDEX_NAME, H5_ITER_INC, &idx, group_cb, w);
  H5Gclose(pg);
  return rc < 0 ? -1 : 0;
}

sp_status sp_results_counters(sp_results *r, sp_counter_row **rows, size_t *n) {
  *rows = NULL;
  *n = 0;
  if (!r) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_counters: no results");
  struct walk w = {r, 0, -1, NULL, 0, 0, SP_OK};
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  hsize_t idx = 0;
  herr_t rc = H5Literate(r->file, H5_INDEX_NAME, H5_ITER_INC, &idx, rank_cb, &w);
  sp__h5_quiet_end(&q);
  if (rc < 0 || w.st != SP_OK) {
    sp_counter_rows_free(w.rows, w.n);
    return w.st != SP_OK ? w.st : sp__set_error(SP_ERR_FORMAT, "the file's rank groups cannot be listed");
  }
  *rows = w.rows;
  *n = w.n;
  return SP_OK;
}

void sp_counter_rows_free(sp_counter_row *rows, size_t n) {
  for (size_t i = 0; rows && i < n; i++) row_clear(&rows[i]);
  free(rows);
}
