/* h5plan.c - the plan's datasets written with HDF5: creating every dataset
 * of a layout at its final size, writing one part's slice of each, and the
 * sink bounded-memory runs stream their events through (h5common.h).
 *
 * Every loop here runs over the plan and the layout, never over what a
 * part happens to hold: under collective parallel I/O all ranks must issue
 * the same writes, and a part without some column writes the plan's fill
 * value there. Values come from the part (struct sp_run) as the plan's
 * coding says: schema 3's start deltas and durations are made here.
 */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "output/filters.h"
#include "output/h5common.h"
#include "output/layout.h"

/* ---- types ---------------------------------------------------------------- */

static hid_t file_type(enum sp_dtype t) {
  switch (t) {
  case SP_DT_I8: return H5T_STD_I8LE;
  case SP_DT_U32: return H5T_STD_U32LE;
  case SP_DT_U64: return H5T_STD_U64LE;
  case SP_DT_F64: return H5T_IEEE_F64LE;
  default: return H5T_STD_I64LE;
  }
}

/* In memory every number is 8 bytes (output.h). */
static hid_t mem_type(enum sp_dtype t) {
  return t == SP_DT_U64 ? H5T_NATIVE_UINT64 : t == SP_DT_F64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
}

/* A type to close after use: strings and the summary compound are built. */
static hid_t open_type(enum sp_dtype t, int file) {
  if (t == SP_DT_STR) return sp__h5_str_type();
  if (t == SP_DT_SUMMARY) return sp__h5_summary_type();
  return H5Tcopy(file ? file_type(t) : mem_type(t));
}

static int is_string(enum sp_dtype t) { return t == SP_DT_STR; }

/* ---- which datasets a layout has ------------------------------------------ */

/* 1 when dataset `id` is in the file of layout L; *len its length. */
static int present(const struct sp_layout *L, int id, uint64_t *len) {
  const struct sp_plan_ds *d = sp__plan(id);
  int empty = 0;
  if (!d || !sp__plan_in_file(d, L->schema, L->aggregate, &empty)) return 0;
  if (d->when & SP_W_RECORDED) {
    if (d->group == SP_GRP_EVENTS) {
      size_t i = 0;
      while (i < L->ncols && L->cols[i] != id) i++;
      if (i == L->ncols) return 0;
    } else {
      int first = 0, nc = 0;
      if (L->table_rows[d->group] == 0 || sp__plan_table_columns(d->group, &first, &nc) != 0 || id - first >= 64 ||
          !((L->table_cols[d->group] >> (id - first)) & 1))
        return 0;
    }
  }
  switch (d->len) {
  case SP_LEN_NAMES: *len = L->nnames; break;
  case SP_LEN_ROWS: *len = empty ? 0 : L->nrows; break;
  case SP_LEN_EVENTS: *len = empty ? 0 : L->nevents; break;
  case SP_LEN_TABLE: *len = L->table_rows[d->group]; break;
  }
  return 1;
}

int sp__plan_present(const struct sp_layout *L, int id, uint64_t *len) { return present(L, id, len); }

static hid_t group_at(hid_t file, enum sp_group g) {
  const char *name = sp__plan_group_name(g);
  hid_t h = -1;
  H5E_BEGIN_TRY { h = H5Gopen2(file, name, H5P_DEFAULT); }
  H5E_END_TRY;
  return h >= 0 ? h : H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

void sp__plan_create(hid_t file, const struct sp_layout *L, const struct sp_config *cfg, unsigned what,
                     int *failed) {
  hid_t grp[SP_NGROUPS];
  for (int g = 0; g < SP_NGROUPS; g++) grp[g] = -1;
  int n = sp__plan_count();
  for (int id = 0; id < n && !*failed; id++) {
    const struct sp_plan_ds *d = sp__plan(id);
    uint64_t len = 0;
    /* the region table is the head's (sp__plan_write_head) */
    if (d->group == SP_GRP_REGION_TABLE || !present(L, id, &len)) continue;
    int ev = d->group == SP_GRP_EVENTS;
    unsigned need = is_string(d->dtype) ? SP_PW_STRINGS : ev ? SP_PW_EVENTS : SP_PW_NUMERIC;
    if (!(what & need)) continue;
    if (grp[d->group] < 0 && (grp[d->group] = group_at(file, d->group)) < 0) {
      *failed = 1;
      break;
    }
    hsize_t dims = len;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    hid_t t = open_type(d->dtype, 1);
    hid_t dcpl = ev ? sp__event_dcpl(cfg, len, 8, L->nevents, L->schema) : H5Pcreate(H5P_DATASET_CREATE);
    hid_t ds = space >= 0 && t >= 0 && dcpl >= 0
                   ? H5Dcreate2(grp[d->group], d->name, t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)
                   : -1;
    if (ds < 0) {
      *failed = 1;
    } else {
      /* an extension's column says what its numbers are */
      if (ev && (d->when & SP_W_OURS) && d->unit && d->unit[0])
        sp__h5_attr_str(ds, sp__plan_attr(SP_AT_UNITS)->name, d->unit, failed);
      H5Dclose(ds);
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (t >= 0) H5Tclose(t);
    if (space >= 0) H5Sclose(space);
  }
  for (int g = 0; g < SP_NGROUPS; g++)
    if (grp[g] >= 0) H5Gclose(grp[g]);
}

void sp__plan_write_head(hid_t file, const struct sp_layout *L, const struct sp_meta *meta, int *failed) {
  sp__h5_write_head(file, L->schema, L->aggregate ? "aggregate" : "columnar", meta, failed);
  hid_t g = group_at(file, SP_GRP_REGION_TABLE);
  hid_t t = sp__h5_str_type();
  hsize_t dims = L->nnames;
  hid_t space = H5Screate_simple(1, &dims, NULL);
  hid_t ds = g >= 0 ? H5Dcreate2(g, sp__plan(SP_DS_NAMES)->name, t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  if (ds < 0 || (L->nnames && H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, L->names) < 0)) *failed = 1;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
  H5Tclose(t);
  if (g >= 0) H5Gclose(g);
  else *failed = 1;
}

/* ---- writing slices --------------------------------------------------------- */

/* Values [off, off+n) of dataset `id` (of `total`). Under collective I/O
 * every rank takes part, with an empty selection when it has nothing. */
static void put(hid_t file, int id, hid_t mtype, uint64_t off, uint64_t n, const void *data, uint64_t total,
                hid_t dxpl, int *failed) {
  int collective = dxpl != H5P_DEFAULT;
  if (total == 0 || (n == 0 && !collective)) return;
  hid_t ds = H5Dopen2(file, sp__plan_path(id), H5P_DEFAULT);
  if (ds < 0) {
    *failed = 1;
    return;
  }
  hid_t fs = H5Dget_space(ds);
  hsize_t o = off, c = n ? n : 1;
  hid_t ms = H5Screate_simple(1, &c, NULL);
  static const int64_t dummy[1] = {0};
  if (n) {
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &o, NULL, &c, NULL);
  } else {
    H5Sselect_none(fs);
    H5Sselect_none(ms);
    data = dummy;
  }
  if (H5Dwrite(ds, mtype, ms, fs, dxpl, data) < 0) *failed = 1;
  H5Sclose(ms);
  H5Sclose(fs);
  H5Dclose(ds);
}

static void put_typed(hid_t file, int id, uint64_t off, uint64_t n, const void *data, uint64_t total, hid_t dxpl,
                      int *failed) {
  hid_t t = open_type(sp__plan(id)->dtype, 0);
  put(file, id, t, off, n, data, total, dxpl, failed);
  H5Tclose(t);
}

/* n copies of a dataset's fill value. */
static void *fill_values(int id, size_t n) {
  int64_t *v = malloc((n ? n : 1) * 8);
  int64_t f = sp__plan(id)->fill;
  for (size_t i = 0; v && i < n; i++) v[i] = f;
  return v;
}

/* One index row's value for dataset `id` (8 bytes, or a summary). */
static void row_value(int id, const struct sp_row *r, const struct sp_place *pl, uint32_t rank, void *out) {
  int64_t *i = out;
  uint64_t *u = out;
  switch (id) {
  case SP_DS_REGION_IDS: *i = r->region < pl->nnames ? pl->name_map[r->region] : 0; break;
  case SP_DS_RANKS: *i = rank; break;
  case SP_DS_EVENT_OFFSETS: *u = pl->ev0 + r->offset; break;
  case SP_DS_EVENT_COUNTS: *u = r->count; break;
  case SP_DS_SOURCE_LINES:
  case SP_DS_AGG_SOURCE_LINES: *i = r->source_line; break;
  case SP_DS_EXCLUSIVE_TOTALS:
  case SP_DS_AGG_EXCLUSIVES: *i = r->exclusive_total; break;
  case SP_DS_AGG_COUNTS: *u = r->aggregate_count > 0 ? (uint64_t)r->aggregate_count : 0; break;
  case SP_DS_AGG_TOTALS: *i = r->stats.total; break;
  case SP_DS_AGG_MINIMUMS: *i = r->aggregate_count > 0 ? r->stats.minimum : 0; break;
  case SP_DS_AGG_MAXIMUMS: *i = r->aggregate_count > 0 ? r->stats.maximum : 0; break;
  case SP_DS_SUMMARY:
  case SP_DS_AGG_STATISTICS: memcpy(out, &r->stats, sizeof r->stats); break;
  default: *i = sp__plan(id)->fill; break;
  }
}

static const char *row_string(int id, const struct sp_row *r) {
  const char *s = NULL;
  switch (id) {
  case SP_DS_SOURCE_FILES:
  case SP_DS_AGG_SOURCE_FILES: s = r->source_file; break;
  case SP_DS_SOURCE_TEXTS:
  case SP_DS_AGG_SOURCE_TEXTS: s = r->source_text; break;
  case SP_DS_TAGS:
  case SP_DS_AGG_TAGS: s = r->tags_json ? r->tags_json : "[]"; break;
  default: break;
  }
  return s ? s : "";
}

static void write_index(hid_t file, const struct sp_layout *L, const struct sp_place *pl, const struct sp_run *part,
                        uint32_t rank, hid_t dxpl, unsigned what, int *failed) {
  size_t k = part->nrows;
  void *buf = malloc((k ? k : 1) * sizeof(struct sp_summary));
  if (!buf) *failed = 1;
  int n = sp__plan_count();
  for (int id = 0; id < n; id++) {
    const struct sp_plan_ds *d = sp__plan(id);
    uint64_t len = 0;
    if (d->group != SP_GRP_INDEX || !present(L, id, &len)) continue;
    if (!(what & (is_string(d->dtype) ? SP_PW_STRINGS : SP_PW_NUMERIC))) continue;
    size_t m = buf && len ? k : 0; /* empty in this layout: nothing, but still take part */
    if (is_string(d->dtype))
      for (size_t r = 0; r < m; r++) ((const char **)buf)[r] = row_string(id, &part->rows[r]);
    else if (d->dtype == SP_DT_SUMMARY)
      for (size_t r = 0; r < m; r++) row_value(id, &part->rows[r], pl, rank, (struct sp_summary *)buf + r);
    else
      for (size_t r = 0; r < m; r++) row_value(id, &part->rows[r], pl, rank, (int64_t *)buf + r);
    put_typed(file, id, pl->row0, m, buf, len, dxpl, failed);
  }
  free(buf);
}

static void write_events(hid_t file, const struct sp_layout *L, const struct sp_place *pl, const struct sp_run *part,
                         hid_t dxpl, int *failed) {
  size_t n = part->nevents;
  int64_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
  if (!tmp) *failed = 1;
  if (!part->start || !part->end) n = 0; /* an aggregate part */
  int count = sp__plan_count();
  for (int id = 0; id < count; id++) {
    const struct sp_plan_ds *d = sp__plan(id);
    uint64_t len = 0;
    if (d->group != SP_GRP_EVENTS || !present(L, id, &len)) continue;
    const void *data = NULL;
    size_t m = tmp && len ? n : 0;
    switch (d->coding) {
    case SP_CODE_ROW_DELTA:
      if (m) sp__code_start_deltas(part, tmp);
      data = tmp;
      break;
    case SP_CODE_DURATION:
      for (size_t i = 0; i < m; i++) tmp[i] = (int64_t)((uint64_t)part->end[i] - (uint64_t)part->start[i]);
      data = tmp;
      break;
    default:
      data = id == SP_DS_START_TIMES ? part->start : id == SP_DS_END_TIMES ? part->end : sp__part_column(part, id);
      if (!data) {
        for (size_t i = 0; tmp && i < m; i++) tmp[i] = d->fill;
        data = tmp;
      }
      break;
    }
    put_typed(file, id, pl->ev0, m, data, len, dxpl, failed);
  }
  free(tmp);
}

static void write_tables(hid_t file, const struct sp_layout *L, const struct sp_place *pl, const struct sp_run *part,
                         uint32_t rank, hid_t dxpl, unsigned what, int *failed) {
  for (int g = 0; g < SP_NGROUPS; g++) {
    int first = 0, nc = 0;
    if (!L->table_rows[g] || sp__plan_table_columns((enum sp_group)g, &first, &nc) != 0) continue;
    const struct sp_table *t = sp__part_table(part, (enum sp_group)g);
    size_t rows = t ? t->nrows : 0;
    for (int c = 0; c < nc; c++) {
      int id = first + c;
      const struct sp_plan_ds *d = sp__plan(id);
      uint64_t len = 0;
      if (!present(L, id, &len)) continue;
      int str = is_string(d->dtype);
      if (!(what & (str ? SP_PW_STRINGS : SP_PW_NUMERIC))) continue;
      const void *col = t && (size_t)c < t->ncols ? t->cols[c] : NULL;
      void *own = NULL;
      if (str) {
        const char **v = malloc((rows ? rows : 1) * sizeof *v);
        if (!v) *failed = 1;
        for (size_t r = 0; v && r < rows; r++) v[r] = col && ((char *const *)col)[r] ? ((char *const *)col)[r] : "";
        own = v;
      } else if (!col || id == SP_DS_THR_RANKS || id == SP_DS_TASK_RANKS) {
        int64_t *v = fill_values(id, rows);
        if (!v) *failed = 1;
        /* a table's ranks column always says whose row it is */
        for (size_t r = 0; v && r < rows && (id == SP_DS_THR_RANKS || id == SP_DS_TASK_RANKS); r++) v[r] = rank;
        own = v;
      }
      const void *data = own ? own : col;
      put_typed(file, id, pl->table_row0[g], data ? rows : 0, data, len, dxpl, failed);
      free(own);
    }
    if (what & SP_PW_STRINGS && t && t->attrs.n) {
      hid_t h = group_at(file, (enum sp_group)g);
      if (h < 0) *failed = 1;
      else {
        sp__h5_write_attrs(h, &t->attrs, failed);
        H5Gclose(h);
      }
    }
  }
}

/* ---- per-rank groups ---------------------------------------------------------- */

static void write_node(hid_t parent, const struct sp_node *n, int *failed) {
  hid_t g = H5Gcreate2(parent, n->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) {
    *failed = 1;
    return;
  }
  sp__h5_write_attrs(g, &n->attrs, failed);
  for (size_t i = 0; i < n->nds; i++) {
    const struct sp_node_ds *d = &n->ds[i];
    hsize_t dims[2] = {d->dims[0], d->dims[1]};
    hid_t space = H5Screate_simple(d->ndims, dims, NULL);
    hid_t ft = open_type(d->dtype, 1), mt = open_type(d->dtype, 0);
    hid_t ds = H5Dcreate2(g, d->name, ft, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    uint64_t count = d->dims[0] * (d->ndims > 1 ? d->dims[1] : 1);
    const void *data = d->data;
    const char **strs = NULL;
    if (d->dtype == SP_DT_STR && count) {
      strs = malloc(count * sizeof *strs);
      for (uint64_t k = 0; strs && k < count; k++) strs[k] = ((char **)d->data)[k] ? ((char **)d->data)[k] : "";
      data = strs;
    }
    if (ds < 0 || (count && (!data || H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0))) *failed = 1;
    free(strs);
    if (ds >= 0) H5Dclose(ds);
    H5Tclose(ft);
    H5Tclose(mt);
    H5Sclose(space);
  }
  for (size_t i = 0; i < n->nkids; i++) write_node(g, n->kids[i], failed);
  H5Gclose(g);
}

static void write_groups(hid_t file, const struct sp_run *part, uint32_t rank, int *failed) {
  if (!part->ngroups) return;
  char name[32];
  snprintf(name, sizeof name, "%s%u", SP_PLAN_RANK_PREFIX, rank);
  hid_t g = -1;
  H5E_BEGIN_TRY { g = H5Gopen2(file, name, H5P_DEFAULT); }
  H5E_END_TRY;
  if (g < 0) g = H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) {
    *failed = 1;
    return;
  }
  for (size_t i = 0; i < part->ngroups; i++) {
    if (sp__plan_find_rank_group(part->groups[i]->name) < 0) { /* undeclared: a bug in its producer */
      *failed = 1;
      continue;
    }
    write_node(g, part->groups[i], failed);
  }
  H5Gclose(g);
}

void sp__plan_write_part(hid_t file, const struct sp_layout *L, const struct sp_place *pl,
                         const struct sp_run *part, uint32_t rank, hid_t dxpl, unsigned what, int *failed) {
  if (what & (SP_PW_NUMERIC | SP_PW_STRINGS)) write_index(file, L, pl, part, rank, dxpl, what, failed);
  if (what & SP_PW_EVENTS) write_events(file, L, pl, part, dxpl, failed);
  if (what & (SP_PW_NUMERIC | SP_PW_STRINGS)) write_tables(file, L, pl, part, rank, dxpl, what, failed);
  if (what & SP_PW_GROUPS) write_groups(file, part, rank, failed);
}

/* ---- the sink of bounded-memory runs ------------------------------------------- */

struct sp_event_sink {
  struct sp_run *mem; /* a memory sink: the arrays filled */
  const struct sp_layout *L;
  const struct sp_run *run;
  int ids[SP_DS_NBUILTIN + SP_PLAN_MAX_EXT_COLUMNS];
  hid_t ds[SP_DS_NBUILTIN + SP_PLAN_MAX_EXT_COLUMNS];
  int nds;
  uint64_t next; /* the event after the last batch */
  size_t row;    /* the row of event `next` */
  int64_t prev;  /* the start before it */
  int64_t *row_prev; /* per row: the last start a batch of it coded */
  int64_t *tmp;
  size_t cap;
  int failed; /* a put failed (sp__sink_failed) */
};

struct sp_event_sink *sp__plan_sink_open(hid_t file, const struct sp_layout *L, const struct sp_run *run) {
  struct sp_event_sink *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->L = L;
  s->run = run;
  if (!(s->row_prev = calloc(run->nrows + 1, sizeof *s->row_prev))) {
    free(s);
    return NULL;
  }
  int n = sp__plan_count();
  for (int id = 0; id < n; id++) {
    uint64_t len = 0;
    if (sp__plan(id)->group != SP_GRP_EVENTS || !present(L, id, &len)) continue;
    s->ids[s->nds] = id;
    s->ds[s->nds] = H5Dopen2(file, sp__plan_path(id), H5P_DEFAULT);
    if (s->ds[s->nds++] < 0) {
      sp__plan_sink_close(s);
      return NULL;
    }
  }
  return s;
}

void sp__plan_sink_close(struct sp_event_sink *s) {
  if (!s) return;
  for (int i = 0; i < s->nds; i++)
    if (s->ds[i] >= 0) H5Dclose(s->ds[i]);
  free(s->tmp);
  free(s->row_prev);
  free(s);
}

static int slice(hid_t ds, hid_t mt, uint64_t off, size_t n, const void *data) {
  hsize_t start = off, count = n;
  hid_t fs = H5Dget_space(ds);
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
  hid_t ms = H5Screate_simple(1, &count, NULL);
  herr_t rc = H5Dwrite(ds, mt, ms, fs, H5P_DEFAULT, data);
  H5Sclose(ms);
  H5Sclose(fs);
  return rc < 0 ? -1 : 0;
}

struct sp_event_sink *sp__mem_sink_open(struct sp_run *dst, const struct sp_run *src) {
  struct sp_event_sink *s = calloc(1, sizeof *s);
  size_t n = src->nevents ? src->nevents : 1;
  if (!s) return NULL;
  s->mem = dst;
  s->run = src;
  dst->nextra = 0;
  dst->start = malloc(n * 8);
  dst->end = malloc(n * 8);
  int ok = dst->start && dst->end;
  if (src->has_ids) {
    dst->call_id = malloc(n * 8);
    dst->parent_id = malloc(n * 8);
    ok = ok && dst->call_id && dst->parent_id;
  }
  dst->extra = calloc(src->nextra + 1, sizeof *dst->extra);
  ok = ok && dst->extra;
  for (size_t i = 0; ok && i < src->nextra; i++) {
    dst->extra[i].id = src->extra[i].id;
    ok = (dst->extra[i].data = malloc(n * 8)) != NULL;
    dst->nextra = i + 1;
  }
  if (!ok) {
    sp__mem_sink_discard(s, dst);
    return NULL;
  }
  return s;
}

void sp__mem_sink_close(struct sp_event_sink *s) { free(s); }

void sp__mem_sink_discard(struct sp_event_sink *s, struct sp_run *dst) {
  free(dst->start), free(dst->end), free(dst->call_id), free(dst->parent_id);
  dst->start = dst->end = dst->call_id = dst->parent_id = NULL;
  for (size_t i = 0; dst->extra && i < dst->nextra; i++) free(dst->extra[i].data);
  free(dst->extra);
  dst->extra = NULL;
  dst->nextra = 0;
  free(s);
}

static int sink_put(struct sp_event_sink *s, uint64_t off, size_t n, const struct sp_event_batch *b);
int sp__sink_put(struct sp_event_sink *s, uint64_t off, size_t n, const struct sp_event_batch *b) {
  int rc = sink_put(s, off, n, b);
  if (rc) s->failed = 1;
  return rc;
}

int sp__sink_failed(const struct sp_event_sink *s) { return s && s->failed; }

static int sink_put(struct sp_event_sink *s, uint64_t off, size_t n, const struct sp_event_batch *b) {
  if (n == 0) return 0;
  if (s->mem) {
    struct sp_run *d = s->mem;
    if (off > s->run->nevents || n > s->run->nevents - off) return -1;
    memcpy(d->start + off, b->start, n * 8);
    memcpy(d->end + off, b->end, n * 8);
    if (d->call_id && b->call_id) memcpy(d->call_id + off, b->call_id, n * 8);
    if (d->parent_id && b->parent_id) memcpy(d->parent_id + off, b->parent_id, n * 8);
    for (size_t i = 0; i < d->nextra; i++) memcpy((char *)d->extra[i].data + off * 8, b->extra[i], n * 8);
    return 0;
  }
  if (n > s->cap) {
    int64_t *t = realloc(s->tmp, n * sizeof *t);
    if (!t) return -1;
    s->tmp = t;
    s->cap = n;
  }
  const struct sp_run *run = s->run;
  int rc = 0;
  for (int k = 0; k < s->nds; k++) {
    int id = s->ids[k];
    const struct sp_plan_ds *d = sp__plan(id);
    const void *data = NULL;
    if (d->coding == SP_CODE_ROW_DELTA) {
      size_t row = s->row;
      int64_t prev = s->prev;
      if (off != s->next) { /* another row's turn: where this batch goes on */
        size_t lo = 0, hi = run->nrows;
        while (lo < hi) {
          size_t mid = lo + (hi - lo) / 2;
          if (run->rows[mid].offset + run->rows[mid].count <= off) lo = mid + 1;
          else hi = mid;
        }
        row = lo;
        prev = row < run->nrows ? s->row_prev[row] : 0;
      }
      for (size_t i = 0; i < n;) {
        uint64_t e = off + i;
        while (row < run->nrows && run->rows[row].offset + run->rows[row].count <= e) row++;
        int first = row >= run->nrows || run->rows[row].offset == e;
        s->tmp[i] = first ? b->start[i] : (int64_t)((uint64_t)b->start[i] - (uint64_t)prev);
        prev = b->start[i++];
        /* the rest of this row in the batch (a filler's batch is one row's):
         * no row test per value */
        size_t stop = row >= run->nrows       ? i
                      : run->rows[row].offset <= e ? (size_t)(run->rows[row].offset + run->rows[row].count - off)
                                                  : (size_t)(run->rows[row].offset - off);
        if (stop > n) stop = n;
        for (; i < stop; i++) s->tmp[i] = (int64_t)((uint64_t)b->start[i] - (uint64_t)b->start[i - 1]);
        if (i > 0) prev = b->start[i - 1];
      }
      s->row = row;
      s->prev = prev;
      s->next = off + n;
      if (row < run->nrows) s->row_prev[row] = prev;
      data = s->tmp;
    } else if (d->coding == SP_CODE_DURATION) {
      for (size_t i = 0; i < n; i++) s->tmp[i] = (int64_t)((uint64_t)b->end[i] - (uint64_t)b->start[i]);
      data = s->tmp;
    } else if (id == SP_DS_START_TIMES || id == SP_DS_END_TIMES) {
      data = id == SP_DS_START_TIMES ? b->start : b->end;
    } else if (id == SP_DS_CALL_IDS || id == SP_DS_PARENT_IDS) {
      data = id == SP_DS_CALL_IDS ? b->call_id : b->parent_id;
    } else {
      for (size_t i = 0; i < run->nextra && !data; i++)
        if (run->extra[i].id == id) data = b->extra[i];
    }
    if (!data) {
      for (size_t i = 0; i < n; i++) s->tmp[i] = d->fill;
      data = s->tmp;
    }
    rc |= slice(s->ds[k], mem_type(d->dtype), off, n, data);
  }
  return rc ? -1 : 0;
}
