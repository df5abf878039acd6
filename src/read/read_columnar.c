/* read_columnar.c - opening upstream's columnar and aggregate layouts
 * (schemas 2 and 3), with every dataset checked against the dataset plan
 * (output/plan.h, the table the writers use): each one the file's schema and
 * layout has is opened by its plan name, checked for its type class and
 * length rule, and required ones must be there. Only the small tables are
 * read here (region names, the rank/region index, lane tables, clock
 * offsets); /events is checked for shape and type but read lazily
 * (read_events.c).
 *
 * Besides upstream's files, two of our older layouts are still read: the
 * aggregate layout before it carried upstream's five aggregate_* columns
 * (its totals in summary_statistics), and thread ids stored as uint32.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "output/plan.h"
#include "read/read_internal.h"

#define FILE_NAME(r) ((r)->path ? (r)->path : "<in-memory image>")

static H5T_class_t plan_class(enum sp_dtype t) {
  switch (t) {
  case SP_DT_F64: return H5T_FLOAT;
  case SP_DT_STR: return H5T_STRING;
  case SP_DT_SUMMARY: return H5T_COMPOUND;
  default: return H5T_INTEGER;
  }
}

/* Opens plan dataset `id` under grp; *ds < 0 (and SP_OK) when it is absent
 * and not required. */
static sp_status open_plan(sp_results *r, hid_t grp, int id, int required, hid_t *ds, hsize_t *len) {
  const struct sp_plan_ds *d = sp__plan(id);
  return sp__open_column(r, grp, sp__plan_group_name(d->group), d->name, required, plan_class(d->dtype), ds, len);
}

/* Length check of an index column against the rows; an entry the
 * aggregate layout keeps empty may have 0 rows (then *ds is closed). */
static sp_status check_rows(sp_results *r, int id, hid_t *ds, hsize_t len, hsize_t nrows, int may_be_empty) {
  if (*ds < 0 || len == nrows) return SP_OK;
  if (may_be_empty && len == 0) {
    H5Dclose(*ds);
    *ds = H5I_INVALID_HID;
    return SP_OK;
  }
  H5Dclose(*ds);
  *ds = H5I_INVALID_HID;
  return sp__set_error(SP_ERR_FORMAT,
                       "%s: %s has %llu rows but /rank_region_index/region_ids has %llu; the index columns "
                       "must have equal lengths",
                       FILE_NAME(r), sp__plan_path(id), (unsigned long long)len, (unsigned long long)nrows);
}

/* The summary compound is matched by field name, so a writer may order or
 * widen fields differently; every field must be there. */
static sp_status read_summaries(sp_results *r, hid_t ds, int id, hsize_t nrows, struct sp__summary **out) {
  static const char *const fields[] = {"total", "minimum", "maximum", "first", "last",
                                       "start_minimum", "end_maximum", "gpu_count", "gpu_total",
                                       "mean", "m2"};
  *out = NULL;
  const char *path = sp__plan_path(id);
  hid_t ft = H5Dget_type(ds);
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    int idx = H5Tget_member_index(ft, fields[i]);
    H5T_class_t c = idx >= 0 ? H5Tget_member_class(ft, (unsigned)idx) : H5T_NO_CLASS;
    int want_float = i >= 9;
    /* HDF5 trusts a compound's member offsets when converting, so a
     * corrupted offset would make it write outside its buffers */
    hid_t mt_ = idx >= 0 ? H5Tget_member_type(ft, (unsigned)idx) : H5I_INVALID_HID;
    size_t msize = mt_ >= 0 ? H5Tget_size(mt_) : 0;
    if (mt_ >= 0) H5Tclose(mt_);
    if (idx >= 0 &&
        (msize == 0 || msize > 16 || H5Tget_member_offset(ft, (unsigned)idx) + msize > H5Tget_size(ft))) {
      H5Tclose(ft);
      return sp__set_error(SP_ERR_FORMAT, "%s: %s field '%s' lies outside its record (corrupt type)", FILE_NAME(r),
                           path, fields[i]);
    }
    if (idx < 0 || c != (want_float ? H5T_FLOAT : H5T_INTEGER)) {
      H5Tclose(ft);
      return sp__set_error(SP_ERR_FORMAT, "%s: %s %s field '%s' (%s)", FILE_NAME(r), path,
                           idx < 0 ? "lacks the" : "has a wrongly typed", fields[i],
                           want_float ? "float" : "integer");
    }
  }
  H5Tclose(ft);
  struct sp__summary *s = calloc(nrows ? nrows : 1, sizeof *s);
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof *s);
  H5Tinsert(mt, "total", HOFFSET(struct sp__summary, total), H5T_NATIVE_INT64);
  H5Tinsert(mt, "minimum", HOFFSET(struct sp__summary, minimum), H5T_NATIVE_INT64);
  H5Tinsert(mt, "maximum", HOFFSET(struct sp__summary, maximum), H5T_NATIVE_INT64);
  H5Tinsert(mt, "first", HOFFSET(struct sp__summary, first), H5T_NATIVE_INT64);
  H5Tinsert(mt, "last", HOFFSET(struct sp__summary, last), H5T_NATIVE_INT64);
  H5Tinsert(mt, "start_minimum", HOFFSET(struct sp__summary, start_minimum), H5T_NATIVE_INT64);
  H5Tinsert(mt, "end_maximum", HOFFSET(struct sp__summary, end_maximum), H5T_NATIVE_INT64);
  H5Tinsert(mt, "gpu_count", HOFFSET(struct sp__summary, gpu_count), H5T_NATIVE_UINT64);
  H5Tinsert(mt, "gpu_total", HOFFSET(struct sp__summary, gpu_total), H5T_NATIVE_INT64);
  H5Tinsert(mt, "mean", HOFFSET(struct sp__summary, mean), H5T_NATIVE_DOUBLE);
  H5Tinsert(mt, "m2", HOFFSET(struct sp__summary, m2), H5T_NATIVE_DOUBLE);
  sp_status st = s ? sp__read_column(r, ds, mt, s, (size_t)nrows, path)
                   : sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading summary rows");
  H5Tclose(mt);
  if (st != SP_OK) {
    free(s);
    return st;
  }
  *out = s;
  return SP_OK;
}

/* Every index column the plan has for this file, read whole (they are one
 * value per row): integers as int64, strings, summaries. buf[id] is NULL
 * for columns the file lacks (or keeps empty). */
struct index {
  hsize_t nrows;
  int64_t *num[SP_DS_NBUILTIN];
  char **str[SP_DS_NBUILTIN];
  struct sp__summary *sum[SP_DS_NBUILTIN];
};

static void index_free(struct index *x) {
  for (int i = 0; i < SP_DS_NBUILTIN; i++) {
    free(x->num[i]);
    sp__free_strings(x->str[i], x->str[i] ? (size_t)x->nrows : 0);
    free(x->sum[i]);
  }
}

static sp_status read_index(sp_results *r, hid_t g, int legacy_agg, struct index *x) {
  hid_t ds = H5I_INVALID_HID;
  sp_status st = open_plan(r, g, SP_DS_REGION_IDS, 1, &ds, &x->nrows);
  if (st != SP_OK) return st;
  H5Dclose(ds);
  if (x->nrows > SP__MAX_ROWS)
    return sp__set_error(SP_ERR_FORMAT, "%s: /rank_region_index claims %llu rows", FILE_NAME(r),
                         (unsigned long long)x->nrows);
  size_t n = (size_t)x->nrows;
  for (int id = 0; id < SP_DS_NBUILTIN && st == SP_OK; id++) {
    const struct sp_plan_ds *d = sp__plan(id);
    int empty = 0;
    if (d->group != SP_GRP_INDEX || !sp__plan_in_file(d, r->schema, r->aggregate, &empty)) continue;
    int required = (d->when & SP_W_REQUIRED) && !empty;
    if (legacy_agg && id >= SP_DS_AGG_TOTALS && id <= SP_DS_AGG_EXCLUSIVES) required = 0;
    hsize_t len = 0;
    ds = H5I_INVALID_HID;
    st = open_plan(r, g, id, required, &ds, &len);
    if (st == SP_OK) st = check_rows(r, id, &ds, len, x->nrows, empty);
    if (st != SP_OK || ds < 0) continue;
    if (d->dtype == SP_DT_STR) {
      char what[300];
      snprintf(what, sizeof what, "%s: %s", FILE_NAME(r), sp__plan_path(id));
      st = sp__read_strings(ds, 0, n, &x->str[id], what);
    } else if (d->dtype == SP_DT_SUMMARY) {
      st = read_summaries(r, ds, id, x->nrows, &x->sum[id]);
    } else if (!(x->num[id] = malloc((n ? n : 1) * 8))) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading the rank/region index");
    } else {
      /* unsigned columns read as uint64, reinterpreted (counts and offsets
       * beyond 2^63 are rejected below as pointing outside /events) */
      hid_t mt = d->dtype == SP_DT_U64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64;
      st = sp__read_column(r, ds, mt, x->num[id], n, sp__plan_path(id));
    }
    H5Dclose(ds);
  }
  return st;
}

/* ---- events ---------------------------------------------------------------- */

/* The /events columns: checked for type and length, opened, never read. */
static sp_status open_events(sp_results *r, hid_t root) {
  H5I_type_t t = sp__child_type(root, sp__plan_group_name(SP_GRP_EVENTS));
  if (t == H5I_BADID) {
    if (r->aggregate) return SP_OK;
    return sp__set_error(SP_ERR_FORMAT, "%s: the /events group is missing", FILE_NAME(r));
  }
  if (t != H5I_GROUP) return sp__set_error(SP_ERR_FORMAT, "%s: /events is not a group", FILE_NAME(r));
  hid_t g = H5Gopen2(root, sp__plan_group_name(SP_GRP_EVENTS), H5P_DEFAULT);
  if (g < 0) return sp__set_error(SP_ERR_FORMAT, "%s: cannot open /events", FILE_NAME(r));
  sp_status st = SP_OK;
  if (r->delta && H5Lexists(g, SP_PLAN_RETIRED_START_GAPS, H5P_DEFAULT) > 0 &&
      H5Lexists(g, sp__plan(SP_DS_START_DELTAS)->name, H5P_DEFAULT) <= 0)
    st = sp__set_error(SP_ERR_FORMAT,
                       "%s stores its events in the narrow integer coding (events/" SP_PLAN_RETIRED_START_GAPS ") of "
                       "scope-profiler builds before schema 3 became upstream's layout; that coding is no "
                       "longer read. Record the run again, or convert it with the build that wrote it",
                       FILE_NAME(r));
  int base0 = r->delta ? SP_DS_START_DELTAS : SP_DS_START_TIMES, base1 = r->delta ? SP_DS_DURATIONS : SP_DS_END_TIMES;
  hsize_t n = 0, len = 0;
  if (st == SP_OK) st = open_plan(r, g, base0, !r->aggregate, &r->ds_start, &n);
  if (st == SP_OK) st = open_plan(r, g, base1, !r->aggregate || r->ds_start >= 0, &r->ds_end, &len);
  if (st == SP_OK && r->ds_end >= 0 && len != n)
    st = sp__set_error(SP_ERR_FORMAT, "%s: %s has %llu values but %s has %llu", FILE_NAME(r), sp__plan_path(base1),
                       (unsigned long long)len, sp__plan_path(base0), (unsigned long long)n);
  if (st == SP_OK && n > SP__MAX_EVENTS)
    st = sp__set_error(SP_ERR_FORMAT, "%s: /events claims %llu events, beyond what a profile holds", FILE_NAME(r),
                       (unsigned long long)n);
  /* every other event column the plan knows (extensions' included): the
   * ones the reader uses are kept open */
  int count = sp__plan_count();
  for (int id = 0; id < count && st == SP_OK; id++) {
    const struct sp_plan_ds *d = sp__plan(id);
    if (d->group != SP_GRP_EVENTS || id == base0 || id == base1 || !sp__plan_in_file(d, r->schema, 0, NULL)) continue;
    hid_t ds = H5I_INVALID_HID;
    st = open_plan(r, g, id, 0, &ds, &len);
    if (st != SP_OK || ds < 0) continue;
    if (len != n) {
      H5Dclose(ds);
      st = sp__set_error(SP_ERR_FORMAT, "%s: %s has %llu values but %s has %llu", FILE_NAME(r), sp__plan_path(id),
                         (unsigned long long)len, sp__plan_path(base0), (unsigned long long)n);
      break;
    }
    hid_t *slot = id == SP_DS_CALL_IDS     ? &r->ds_call
                  : id == SP_DS_PARENT_IDS ? &r->ds_parent
                  : id == SP_DS_THREAD_IDS ? &r->ds_thread
                  : id == SP_DS_TASK_IDS   ? &r->ds_task
                  : id == SP_DS_GPU_DURATIONS ? &r->ds_gpu
                  : id == SP_DS_AWAIT_NS   ? &r->ds_await
                                           : NULL;
    if (slot) *slot = ds;
    else H5Dclose(ds);
  }
  if (st == SP_OK && r->ds_thread >= 0) {
    hid_t tt = H5Dget_type(r->ds_thread);
    r->thread_u32 = H5Tget_sign(tt) == H5T_SGN_NONE && H5Tget_size(tt) == 4;
    H5Tclose(tt);
  }
  /* Explicit nesting needs both id columns; one without the other is noise. */
  if (st == SP_OK && (r->ds_call < 0) != (r->ds_parent < 0)) {
    if (r->ds_call >= 0) H5Dclose(r->ds_call);
    if (r->ds_parent >= 0) H5Dclose(r->ds_parent);
    r->ds_call = r->ds_parent = H5I_INVALID_HID;
  }
  r->nevents = r->ds_start >= 0 ? n : 0;
  H5Gclose(g);
  return st;
}

/* ---- tables ------------------------------------------------------------------ */

/* The columns of table group `grp` the file has, read whole as int64 or
 * strings (columns[k] for the group's k-th plan column; NULL: absent);
 * *nrows 0 when the group is absent. */
static sp_status read_table(sp_results *r, hid_t root, enum sp_group grp, hsize_t *nrows, int64_t **num,
                            char ***str) {
  int first = 0, nc = 0;
  *nrows = 0;
  sp__plan_table_columns(grp, &first, &nc);
  const char *gname = sp__plan_group_name(grp);
  H5I_type_t t = sp__child_type(root, gname);
  if (t == H5I_BADID) return SP_OK;
  if (t != H5I_GROUP) return sp__set_error(SP_ERR_FORMAT, "%s: /%s is not a group", FILE_NAME(r), gname);
  hid_t g = H5Gopen2(root, gname, H5P_DEFAULT);
  if (g < 0) return sp__set_error(SP_ERR_FORMAT, "%s: cannot open /%s", FILE_NAME(r), gname);
  sp_status st = SP_OK;
  int have_len = 0;
  for (int c = 0; c < nc && st == SP_OK; c++) {
    int id = first + c;
    const struct sp_plan_ds *d = sp__plan(id);
    hid_t ds = H5I_INVALID_HID;
    hsize_t len = 0;
    st = open_plan(r, g, id, (d->when & SP_W_REQUIRED) != 0, &ds, &len);
    if (st != SP_OK || ds < 0) continue;
    if (!have_len) {
      *nrows = len;
      have_len = 1;
      if (len > SP__MAX_ROWS)
        st = sp__set_error(SP_ERR_FORMAT, "%s: /%s claims %llu rows", FILE_NAME(r), gname, (unsigned long long)len);
    } else if (len != *nrows) {
      st = sp__set_error(SP_ERR_FORMAT, "%s: %s has %llu rows but the other columns of /%s have %llu", FILE_NAME(r),
                         sp__plan_path(id), (unsigned long long)len, gname, (unsigned long long)*nrows);
    }
    size_t n = (size_t)*nrows;
    if (st == SP_OK && d->dtype == SP_DT_STR) {
      char what[300];
      snprintf(what, sizeof what, "%s: %s", FILE_NAME(r), sp__plan_path(id));
      st = sp__read_strings(ds, 0, n, &str[c], what);
    } else if (st == SP_OK) {
      if (!(num[c] = malloc((n ? n : 1) * 8))) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      else st = sp__read_column(r, ds, H5T_NATIVE_INT64, num[c], n, sp__plan_path(id));
    }
    H5Dclose(ds);
  }
  H5Gclose(g);
  return st;
}

/* Keeps a string for the lane rows; "" when absent. */
static const char *keep(sp_results *r, char **col, size_t i, sp_status *st) {
  if (!col) return "";
  struct sp__lanes *l = &r->lanes;
  if (*st != SP_OK) return "";
  char **v = realloc(l->strings, (l->nstrings + 1) * sizeof *v);
  if (!v) {
    *st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    return "";
  }
  l->strings = v;
  v[l->nstrings] = col[i];
  col[i] = NULL;
  return v[l->nstrings++] ? v[l->nstrings - 1] : "";
}

#define COL(num, first, id, i, dflt) ((num)[(id) - (first)] ? (num)[(id) - (first)][i] : (dflt))

static sp_status load_lanes(sp_results *r, hid_t root) {
  int64_t *num[64] = {0};
  char **str[64] = {0};
  hsize_t n = 0;
  int first = 0, nc = 0;
  sp_status st = SP_OK;
  for (int pass = 0; pass < 3 && st == SP_OK; pass++) {
    enum sp_group grp = pass == 0 ? SP_GRP_THREAD_TABLE : pass == 1 ? SP_GRP_TASK_TABLE : SP_GRP_RANKS;
    sp__plan_table_columns(grp, &first, &nc);
    st = read_table(r, root, grp, &n, num, str);
    size_t rows = (size_t)n;
    if (st == SP_OK && rows && pass == 0) {
      if (!(r->lanes.threads = calloc(rows, sizeof *r->lanes.threads))) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      for (size_t i = 0; st == SP_OK && i < rows; i++) {
        sp_thread_info *t = &r->lanes.threads[i];
        t->rank = COL(num, first, SP_DS_THR_RANKS, i, 0);
        t->index = COL(num, first, SP_DS_THR_INDEX, i, -1);
        t->ident = COL(num, first, SP_DS_THR_IDENT, i, 0);
        t->native_id = COL(num, first, SP_DS_THR_NATIVE_ID, i, 0);
        t->daemon = COL(num, first, SP_DS_THR_DAEMON, i, 0) != 0;
        t->start_ns = COL(num, first, SP_DS_THR_START_NS, i, -1);
        t->end_ns = COL(num, first, SP_DS_THR_END_NS, i, -1);
        t->cpu_ns = COL(num, first, SP_DS_THR_CPU_NS, i, -1);
        t->omp_thread = COL(num, first, SP_DS_THR_OMP_THREAD, i, -1);
        t->name = keep(r, str[SP_DS_THR_NAME - first], i, &st);
      }
      if (st == SP_OK) r->lanes.nthreads = rows;
    } else if (st == SP_OK && rows && pass == 1) {
      if (!(r->lanes.tasks = calloc(rows, sizeof *r->lanes.tasks))) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      for (size_t i = 0; st == SP_OK && i < rows; i++) {
        sp_task_info *t = &r->lanes.tasks[i];
        t->rank = COL(num, first, SP_DS_TASK_RANKS, i, 0);
        t->index = COL(num, first, SP_DS_TASK_INDEX, i, -1);
        t->thread_index = COL(num, first, SP_DS_TASK_THREAD_INDEX, i, -1);
        t->created_ns = COL(num, first, SP_DS_TASK_CREATED_NS, i, -1);
        t->done_ns = COL(num, first, SP_DS_TASK_DONE_NS, i, -1);
        t->steps = COL(num, first, SP_DS_TASK_STEPS, i, 0);
        t->running_ns = COL(num, first, SP_DS_TASK_RUNNING_NS, i, 0);
        t->suspended_ns = COL(num, first, SP_DS_TASK_SUSPENDED_NS, i, 0);
        t->switch_id = COL(num, first, SP_DS_TASK_SWITCH_ID, i, -1);
        t->kind = keep(r, str[SP_DS_TASK_KIND - first], i, &st);
        t->name = keep(r, str[SP_DS_TASK_NAME - first], i, &st);
        t->coro_name = keep(r, str[SP_DS_TASK_CORO_NAME - first], i, &st);
      }
      if (st == SP_OK) r->lanes.ntasks = rows;
    } else if (st == SP_OK && rows && pass == 2) {
      /* MPI jobs store each rank's clock offset to rank 0, measured at
       * finalize, indexed by rank. Every absolute time the reader hands
       * out (events, first start, last end) is moved onto rank 0's clock,
       * so the timelines of ranks on different nodes line up; durations are
       * unchanged. A file without the table, or a rank outside it, gets 0. */
      int64_t *off = num[SP_DS_RANK_CLOCK_OFFSETS - first];
      for (size_t i = 0; off && i < r->nrows; i++) {
        struct sp__rrow *w = &r->rows[i];
        w->clock_offset = w->rank >= 0 && (size_t)w->rank < rows ? off[w->rank] : 0;
        if (w->has_summary && w->sum.count > 0) {
          w->sum.start_minimum += w->clock_offset;
          w->sum.end_maximum += w->clock_offset;
        }
      }
      int64_t **starts = &num[SP_DS_RANK_START_TIME_NS - first];
      if (*starts) {
        r->lanes.rank_starts = *starts;
        r->lanes.nrank_starts = rows;
        *starts = NULL;
      }
    }
    for (int c = 0; c < 64; c++) {
      free(num[c]);
      sp__free_strings(str[c], str[c] ? rows : 0);
      num[c] = NULL;
      str[c] = NULL;
    }
  }
  return st;
}

/* ---- the file ---------------------------------------------------------------- */

static sp_status read_layout(sp_results *r, hid_t root) {
  r->layout = "columnar";
  const char *name = sp__plan_attr(SP_AT_STORAGE_LAYOUT)->name;
  if (H5Aexists(root, name) <= 0) return SP_OK;
  hid_t a = H5Aopen(root, name, H5P_DEFAULT);
  char **v = NULL;
  hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
  hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  if (sp >= 0) H5Sclose(sp);
  char what[300];
  snprintf(what, sizeof what, "%s: root attribute %s", FILE_NAME(r), name);
  sp_status st = a < 0 || np != 1 ? sp__set_error(SP_ERR_FORMAT, "%s must be one string", what)
                                  : sp__read_strings(a, 1, 1, &v, what);
  if (a >= 0) H5Aclose(a);
  if (st != SP_OK) return st;
  if (!strcmp(v[0], "aggregate")) {
    r->layout = "aggregate";
    r->aggregate = 1;
  } else if (strcmp(v[0], "columnar") != 0) {
    st = sp__set_error(SP_ERR_FORMAT,
                       "%s: unknown storage_layout '%s' (this reader knows 'columnar' and 'aggregate'); "
                       "upgrade scope-profiler",
                       FILE_NAME(r), v[0]);
  }
  sp__free_strings(v, 1);
  return st;
}

static sp_status read_names(sp_results *r, hid_t root) {
  const char *gname = sp__plan_group_name(SP_GRP_REGION_TABLE);
  if (sp__child_type(root, gname) != H5I_GROUP)
    return sp__set_error(SP_ERR_FORMAT, "%s: the /%s group is missing", FILE_NAME(r), gname);
  hid_t g = H5Gopen2(root, gname, H5P_DEFAULT);
  hid_t ds = H5I_INVALID_HID;
  hsize_t nreg = 0;
  sp_status st = g < 0 ? sp__set_error(SP_ERR_FORMAT, "%s: cannot open /%s", FILE_NAME(r), gname)
                       : open_plan(r, g, SP_DS_NAMES, 1, &ds, &nreg);
  if (st == SP_OK && nreg > SP__MAX_REGIONS) {
    H5Dclose(ds);
    st = sp__set_error(SP_ERR_FORMAT, "%s: %s claims %llu regions", FILE_NAME(r), sp__plan_path(SP_DS_NAMES),
                       (unsigned long long)nreg);
  }
  if (st == SP_OK) {
    char what[300];
    snprintf(what, sizeof what, "%s: %s", FILE_NAME(r), sp__plan_path(SP_DS_NAMES));
    st = sp__read_strings(ds, 0, (size_t)nreg, &r->names, what);
    H5Dclose(ds);
    if (st == SP_OK) r->nregions = (size_t)nreg;
  }
  if (g >= 0) H5Gclose(g);
  return st;
}

/* The statistics of an aggregate row from upstream's five columns when no
 * full statistics are stored: count, total, minimum, maximum; the mean
 * follows, the spread and the first/last calls are unknown. */
static void summary_from_aggregates(const struct index *x, size_t i, uint64_t calls, struct sp__summary *s) {
  memset(s, 0, sizeof *s);
  s->count = calls;
  s->total = x->num[SP_DS_AGG_TOTALS] ? x->num[SP_DS_AGG_TOTALS][i] : 0;
  s->minimum = x->num[SP_DS_AGG_MINIMUMS] ? x->num[SP_DS_AGG_MINIMUMS][i] : 0;
  s->maximum = x->num[SP_DS_AGG_MAXIMUMS] ? x->num[SP_DS_AGG_MAXIMUMS][i] : 0;
  s->mean = calls ? (double)s->total / (double)calls : 0;
}

/* The ids of an aggregate row's source columns: ours for the aggregate
 * layout, else the columnar ones (our older aggregate files). */
static int agg_or(const struct index *x, int ours, int columnar) {
  return x->num[ours] || x->str[ours] || x->sum[ours] ? ours : columnar;
}

sp_status sp__open_columnar(sp_results *r, hid_t root) {
  sp_status st = read_layout(r, root);
  if (st == SP_OK) st = read_names(r, root);
  if (st != SP_OK) return st;
  const char *iname = sp__plan_group_name(SP_GRP_INDEX);
  if (sp__child_type(root, iname) != H5I_GROUP)
    return sp__set_error(SP_ERR_FORMAT, "%s: the /%s group is missing", FILE_NAME(r), iname);
  hid_t g = H5Gopen2(root, iname, H5P_DEFAULT);
  if (g < 0) return sp__set_error(SP_ERR_FORMAT, "%s: cannot open /%s", FILE_NAME(r), iname);
  /* our aggregate files before upstream's aggregate_* columns kept the
   * totals in summary_statistics */
  int legacy_agg = r->aggregate && H5Lexists(g, sp__plan(SP_DS_AGG_TOTALS)->name, H5P_DEFAULT) <= 0 &&
                   H5Lexists(g, sp__plan(SP_DS_SUMMARY)->name, H5P_DEFAULT) > 0;
  struct index x;
  memset(&x, 0, sizeof x);
  st = read_index(r, g, legacy_agg, &x);
  H5Gclose(g);
  if (st == SP_OK && legacy_agg && !x.sum[SP_DS_SUMMARY])
    st = sp__set_error(SP_ERR_FORMAT, "%s: an aggregate-layout file needs %s (or upstream's aggregate_* columns)",
                       FILE_NAME(r), sp__plan_path(SP_DS_AGG_TOTALS));
  if (st == SP_OK) st = open_events(r, root);
  size_t nrows = (size_t)x.nrows;
  if (st == SP_OK && !(r->rows = calloc(nrows ? nrows : 1, sizeof *r->rows)))
    st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  int agg = r->aggregate;
  int files = agg ? agg_or(&x, SP_DS_AGG_SOURCE_FILES, SP_DS_SOURCE_FILES) : SP_DS_SOURCE_FILES;
  int texts = agg ? agg_or(&x, SP_DS_AGG_SOURCE_TEXTS, SP_DS_SOURCE_TEXTS) : SP_DS_SOURCE_TEXTS;
  int tags = agg ? agg_or(&x, SP_DS_AGG_TAGS, SP_DS_TAGS) : SP_DS_TAGS;
  int lines = agg ? agg_or(&x, SP_DS_AGG_SOURCE_LINES, SP_DS_SOURCE_LINES) : SP_DS_SOURCE_LINES;
  int excl = agg && x.num[SP_DS_AGG_EXCLUSIVES] ? SP_DS_AGG_EXCLUSIVES : SP_DS_EXCLUSIVE_TOTALS;
  int sums = agg ? agg_or(&x, SP_DS_AGG_STATISTICS, SP_DS_SUMMARY) : SP_DS_SUMMARY;
  for (size_t i = 0; st == SP_OK && i < nrows; i++) {
    struct sp__rrow *w = &r->rows[i];
    r->nrows = i + 1;
    int64_t region = x.num[SP_DS_REGION_IDS][i], rank = x.num[SP_DS_RANKS][i];
    uint64_t off = x.num[SP_DS_EVENT_OFFSETS] ? (uint64_t)x.num[SP_DS_EVENT_OFFSETS][i] : 0;
    uint64_t cnt = x.num[SP_DS_EVENT_COUNTS] ? (uint64_t)x.num[SP_DS_EVENT_COUNTS][i] : 0;
    if (region < 0 || (uint64_t)region >= r->nregions) {
      st = sp__set_error(SP_ERR_FORMAT,
                         "%s: row %zu of /rank_region_index names region %lld, but the region table has %zu names",
                         FILE_NAME(r), i, (long long)region, r->nregions);
      break;
    }
    if (rank < 0 || rank > SP__MAX_RANK) {
      st = sp__set_error(SP_ERR_FORMAT, "%s: row %zu of /rank_region_index has rank %lld", FILE_NAME(r), i,
                         (long long)rank);
      break;
    }
    if (agg) cnt = 0; /* event-less rows, whatever a skeleton column says */
    if (off > r->nevents || cnt > r->nevents - off) {
      st = sp__set_error(SP_ERR_FORMAT,
                         "%s: row %zu of /rank_region_index points at events [%llu, +%llu) but /events holds "
                         "%llu; the index and the events disagree",
                         FILE_NAME(r), i, (unsigned long long)off, (unsigned long long)cnt,
                         (unsigned long long)r->nevents);
      break;
    }
    w->region = (uint32_t)region;
    w->rank = rank;
    w->offset = off;
    w->count = cnt;
    w->source_line = x.num[lines] ? x.num[lines][i] : -1;
    w->exclusive = x.num[excl] ? x.num[excl][i] : -1;
    w->source_file = x.str[files] ? x.str[files][i] : sp__strdup("");
    w->source_text = x.str[texts] ? x.str[texts][i] : sp__strdup("");
    w->tags = x.str[tags] ? x.str[tags][i] : sp__strdup("[]");
    if (x.str[files]) x.str[files][i] = NULL;
    if (x.str[texts]) x.str[texts][i] = NULL;
    if (x.str[tags]) x.str[tags][i] = NULL;
    if (!w->source_file || !w->source_text || !w->tags) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      break;
    }
    if (!w->tags[0]) {
      free(w->tags);
      if (!(w->tags = sp__strdup("[]"))) {
        st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
        break;
      }
    }
    uint64_t calls = cnt;
    if (agg) {
      int64_t a = x.num[SP_DS_AGG_COUNTS] ? x.num[SP_DS_AGG_COUNTS][i] : 0;
      if (a < 0) {
        st = sp__set_error(SP_ERR_FORMAT, "%s: row %zu has a negative aggregate count", FILE_NAME(r), i);
        break;
      }
      calls = (uint64_t)a;
    }
    if (x.sum[sums]) {
      w->sum = x.sum[sums][i];
      w->has_summary = w->has_spread = 1;
    } else if (agg) {
      summary_from_aggregates(&x, i, calls, &w->sum);
      w->has_summary = 1;
    }
    if (w->has_summary) {
      w->sum.count = calls;
      const struct sp__summary *s = &w->sum;
      if (calls > 0 && (s->minimum < 0 || s->maximum < s->minimum || s->total < s->maximum || !isfinite(s->mean) ||
                        !isfinite(s->m2))) {
        st = sp__set_error(SP_ERR_FORMAT,
                           "%s: the summary row %zu (region '%s', rank %lld) is inconsistent (min %lld, max %lld, "
                           "total %lld)",
                           FILE_NAME(r), i, r->names[w->region], (long long)w->rank, (long long)s->minimum,
                           (long long)s->maximum, (long long)s->total);
        break;
      }
      if (w->sum.m2 < 0) w->sum.m2 = 0;
    }
  }
  index_free(&x);
  if (st == SP_OK) st = load_lanes(r, root);
  return st;
}
