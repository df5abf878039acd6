/* read_likwid.c - LIKWID's results of a use_likwid run
 * (rank<N>/likwid/regions/<tag>: attributes tag, group_name, source,
 * event_names; datasets call_counts i64[T], times f64[T], events f64[E,T]),
 * summed over each region's threads for inspect.
 *
 * Every group is checked before it is used, so a hostile file is a format
 * error that names the group, never a crash or a huge allocation: the
 * datasets agree on T (at most 4096 threads), events has one row per event
 * name (at most 1024). The walk over the ranks and their groups is shared
 * with the counter reader (read_rank_groups.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/error.h"
#include "read/likwid_read.h"
#include "read/rank_groups.h"

#define MAX_THREADS 4096
#define MAX_EVENTS 1024

static sp_status bad(const char *path, const char *what) { return sp__rank_group_bad("LIKWID", path, what); }

/* A string attribute, or a copy of `dflt` when it is absent. */
static char *str_attr(hid_t g, const char *name, const char *dflt) {
  if (H5Aexists(g, name) <= 0) return sp__strdup(dflt);
  hid_t a = H5Aopen(g, name, H5P_DEFAULT), s = a >= 0 ? H5Aget_space(a) : -1;
  char **v = NULL, *out = NULL;
  if (s >= 0 && H5Sget_simple_extent_npoints(s) == 1 && sp__read_strings(a, 1, 1, &v, name) == SP_OK) {
    out = v[0];
    free(v);
  }
  if (s >= 0) H5Sclose(s);
  if (a >= 0) H5Aclose(a);
  return out;
}

/* Dataset `name` of rg as doubles, with the shape rows x cols (rows 0: 1-D). */
static sp_status read_f64(const sp_results *r, hid_t rg, const char *name, const char *path, hsize_t rows,
                          hsize_t cols, double **out) {
  *out = NULL;
  hid_t d = sp__hard_path(rg, name) ? H5Dopen2(rg, name, H5P_DEFAULT) : -1;
  hid_t s = d >= 0 ? H5Dget_space(d) : -1, t = d >= 0 ? H5Dget_type(d) : -1;
  hsize_t dims[2] = {0, 0};
  int nd = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
  if (nd == 1 || nd == 2) H5Sget_simple_extent_dims(s, dims, NULL);
  H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  char what[160];
  sp_status st = SP_OK;
  int shape_ok = rows ? nd == 2 && dims[0] == rows && dims[1] == cols : nd == 1 && dims[0] == cols;
  if (d < 0 || !shape_ok || (c != H5T_FLOAT && c != H5T_INTEGER)) {
    if (rows)
      snprintf(what, sizeof what, "dataset %s is missing, not numbers, or not %llu x %llu (events x threads)", name,
               (unsigned long long)rows, (unsigned long long)cols);
    else
      snprintf(what, sizeof what, "dataset %s is missing, not numbers, or not %llu long (one per thread)", name,
               (unsigned long long)cols);
    st = bad(path, what);
  } else if (!(*out = malloc((size_t)((rows ? rows : 1) * cols + 1) * sizeof **out)))
    st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
  else if (sp__check_storage(r, d, path, (rows ? rows : 1) * cols, 1) != SP_OK)
    st = SP_ERR_FORMAT;
  else if (cols && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
    st = bad(path, "a dataset cannot be read");
  if (st != SP_OK) {
    free(*out);
    *out = NULL;
  }
  if (t >= 0) H5Tclose(t);
  if (s >= 0) H5Sclose(s);
  if (d >= 0) H5Dclose(d);
  return st;
}

static void row_clear(void *p) {
  struct sp_likwid_row *row = p;
  free(row->region);
  free(row->group_name);
  free(row->source);
  sp__free_strings(row->event_names, row->nevents);
  free(row->events);
}

static sp_status read_region(sp_results *r, hid_t rg, const char *name, const char *path, int64_t rank,
                             void *out) {
  struct sp_likwid_row *row = out;
  row->rank = rank;
  row->region = str_attr(rg, "tag", name);
  row->group_name = str_attr(rg, "group_name", "");
  row->source = str_attr(rg, "source", "");
  if (!row->region || !row->group_name || !row->source) return bad(path, "a string attribute cannot be read");
  /* threads: the length of call_counts */
  hid_t d = sp__hard_path(rg, "call_counts") ? H5Dopen2(rg, "call_counts", H5P_DEFAULT) : -1;
  hid_t s = d >= 0 ? H5Dget_space(d) : -1;
  hssize_t nt = s >= 0 && H5Sget_simple_extent_ndims(s) == 1 ? H5Sget_simple_extent_npoints(s) : -1;
  if (s >= 0) H5Sclose(s);
  if (d >= 0) H5Dclose(d);
  if (nt < 0 || nt > MAX_THREADS) return bad(path, "dataset call_counts is missing, not 1-D, or longer than 4096");
  row->nthreads = (size_t)nt;
  hssize_t ne = 0;
  if (H5Aexists(rg, "event_names") > 0) {
    hid_t a = H5Aopen(rg, "event_names", H5P_DEFAULT), as = a >= 0 ? H5Aget_space(a) : -1;
    ne = as >= 0 && H5Sget_simple_extent_ndims(as) <= 1 ? H5Sget_simple_extent_npoints(as) : -1;
    sp_status st = ne < 0 || ne > MAX_EVENTS ? bad(path, "attribute event_names is not a list of at most 1024 names")
                                             : sp__read_strings(a, 1, (size_t)ne, &row->event_names, path);
    if (as >= 0) H5Sclose(as);
    if (a >= 0) H5Aclose(a);
    if (st != SP_OK) return st;
  }
  row->nevents = (size_t)ne;
  double *calls = NULL, *times = NULL, *ev = NULL;
  sp_status st = read_f64(r, rg, "call_counts", path, 0, (hsize_t)nt, &calls);
  if (st == SP_OK) st = read_f64(r, rg, "times", path, 0, (hsize_t)nt, &times);
  if (st == SP_OK && ne) st = read_f64(r, rg, "events", path, (hsize_t)ne, (hsize_t)nt, &ev);
  if (st == SP_OK && !(row->events = calloc(row->nevents + 1, sizeof *row->events)))
    st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
  for (size_t t = 0; st == SP_OK && t < row->nthreads; t++) {
    if (!(calls[t] >= 0 && calls[t] < 9e18)) st = bad(path, "call_counts holds a negative or huge count");
    else row->calls += (int64_t)calls[t];
    if (times[t] > row->time_max) row->time_max = times[t];
    for (size_t e = 0; e < row->nevents; e++) row->events[e] += ev[e * row->nthreads + t];
  }
  free(calls);
  free(times);
  free(ev);
  return st;
}

sp_status sp__results_likwid(sp_results *r, struct sp_likwid_row **rows, size_t *n) {
  *rows = NULL;
  *n = 0;
  if (!r) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp__results_likwid: no results");
  if (r->file < 0) return SP_OK; /* an in-memory image has no LIKWID groups */
  static const struct sp__rank_walk walk = {"LIKWID", "likwid/regions", sizeof(struct sp_likwid_row), read_region,
                                            row_clear};
  void *got = NULL;
  sp_status st = sp__rank_walk(r, &walk, &got, n);
  *rows = got;
  return st;
}

void sp__likwid_rows_free(struct sp_likwid_row *rows, size_t n) {
  for (size_t i = 0; rows && i < n; i++) row_clear(&rows[i]);
  free(rows);
}
