/* read_counters.c - per-region counter totals: upstream's
 * rank<N>/perf_events/<region> groups (attributes calls and event_names,
 * dataset values[E]), for inspect and the report.
 *
 * The groups are validated as they are read, so a hostile file gives a
 * format error that names the group, never a crash or a huge allocation:
 * event_names and values must have the same length (at most 256), calls
 * must be a non-negative integer. The walk over the ranks and their groups
 * is shared with the LIKWID reader (read_rank_groups.c).
 */
#include <stdlib.h>

#include "common/error.h"
#include "read/rank_groups.h"

#define MAX_COUNTER_EVENTS 256

static sp_status bad(const char *group, const char *what) { return sp__rank_group_bad("counter", group, what); }

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

static void row_clear(void *p) {
  sp_counter_row *row = p;
  free(row->region);
  sp__free_strings(row->event_names, row->nevents);
  free(row->values);
}

static sp_status read_group(sp_results *r, hid_t rg, const char *name, const char *path, int64_t rank, void *out) {
  sp_counter_row *row = out;
  row->rank = rank;
  sp_status st = SP_OK;
  /* calls */
  hid_t a = H5Aexists(rg, "calls") > 0 ? H5Aopen(rg, "calls", H5P_DEFAULT) : -1;
  hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
  hid_t at = a >= 0 ? H5Aget_type(a) : -1;
  if (a < 0 || sp < 0 || H5Sget_simple_extent_npoints(sp) != 1 || H5Tget_class(at) != H5T_INTEGER ||
      H5Aread(a, H5T_NATIVE_INT64, &row->calls) < 0 || row->calls < 0)
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
      st = sp__read_strings(a, 1, (size_t)ne, &row->event_names, path);
    if (sp >= 0) H5Sclose(sp);
    if (a >= 0) H5Aclose(a);
    row->nevents = ne > 0 ? (size_t)ne : 0;
  }
  /* values */
  if (st == SP_OK) {
    hid_t d = sp__hard_path(rg, "values") ? H5Dopen2(rg, "values", H5P_DEFAULT) : -1;
    sp = d >= 0 ? H5Dget_space(d) : -1;
    hid_t dt = d >= 0 ? H5Dget_type(d) : -1;
    hssize_t nv = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 ? H5Sget_simple_extent_npoints(sp) : -1;
    row->values = calloc(row->nevents + 1, sizeof *row->values);
    if (d < 0 || nv != ne || H5Tget_class(dt) != H5T_INTEGER)
      st = bad(path, "dataset values is missing, not integers, or not as long as event_names");
    else if (!row->values)
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
    else if (sp__check_storage(r, d, path, (hsize_t)nv, 1) != SP_OK)
      st = SP_ERR_FORMAT;
    else if (nv && H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, row->values) < 0)
      st = bad(path, "dataset values cannot be read");
    if (dt >= 0) H5Tclose(dt);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
  }
  if (st == SP_OK && !(row->region = region_of(r, name)))
    st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
  return st;
}

sp_status sp_results_counters(sp_results *r, sp_counter_row **rows, size_t *n) {
  *rows = NULL;
  *n = 0;
  if (!r) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_counters: no results");
  static const struct sp__rank_walk walk = {"counter", "perf_events", sizeof(sp_counter_row), read_group, row_clear};
  void *got = NULL;
  sp_status st = sp__rank_walk(r, &walk, &got, n);
  *rows = got;
  return st;
}

void sp_counter_rows_free(sp_counter_row *rows, size_t n) {
  for (size_t i = 0; rows && i < n; i++) row_clear(&rows[i]);
  free(rows);
}
