/* job.c - several ranks' runs as one run: what `scope-profiler recover`
 * writes from the spill files of an MPI job (one per rank), a file like the
 * MPI writers' with every rank's rows.
 *
 * Region names are merged (a row's region is an index into the merged
 * table), rows follow each other in rank order with their event offsets
 * moved, and event columns are concatenated; an extra column one rank lacks
 * (thread ids, in a rank that ran one thread) holds 0 there for u32 and -1
 * for i64 columns. Tables of the same name (threads, tasks) are appended.
 * The metadata are the first rank's, with mpi_size the number of ranks.
 * Per-rank groups of extensions are not carried over.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/core.h"
#include "output/output.h"

static int find_name(char **names, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return (int)i;
  return -1;
}

static void *column_alloc(enum sp_col_type type, size_t n) {
  return malloc((n ? n : 1) * (type == SP_COL_U32 ? sizeof(uint32_t) : sizeof(int64_t)));
}

/* Append table t (taken over) to out's table of the same name. */
static int table_append(struct sp_run *out, struct sp_table *t) {
  struct sp_table *d = NULL;
  for (size_t i = 0; i < out->ntables; i++)
    if (!strcmp(out->tables[i].name, t->name)) d = &out->tables[i];
  if (!d) {
    struct sp_table *tabs = realloc(out->tables, (out->ntables + 1) * sizeof *tabs);
    if (!tabs) return -1;
    out->tables = tabs;
    out->tables[out->ntables++] = *t;
    memset(t, 0, sizeof *t);
    return 0;
  }
  if (d->ncols != t->ncols || d->nstr != t->nstr) return -1;
  size_t n = d->nrows + t->nrows;
  for (size_t c = 0; c < d->ncols; c++) {
    size_t w = d->cols[c].type == SP_COL_U32 ? 4 : 8;
    char *v = realloc(d->cols[c].data, (n + 1) * w);
    if (!v) return -1;
    memcpy(v + d->nrows * w, t->cols[c].data, t->nrows * w);
    d->cols[c].data = v;
  }
  for (size_t c = 0; c < d->nstr; c++) {
    char **v = realloc(d->str_cols[c], (n + 1) * sizeof *v);
    if (!v) return -1;
    memcpy(v + d->nrows, t->str_cols[c], t->nrows * sizeof *v);
    memset(t->str_cols[c], 0, t->nrows * sizeof *v); /* now owned by d */
    d->str_cols[c] = v;
  }
  d->nrows = n;
  return 0;
}

sp_status sp__runs_merge(struct sp_run *runs, size_t n, struct sp_run *out) {
  memset(out, 0, sizeof *out);
  if (!n) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "no run to merge");
  out->layout = runs[0].layout;
  size_t nev = 0, nrows = 0, nnames = 0;
  for (size_t k = 0; k < n; k++) {
    if (strcmp(runs[k].layout, out->layout) != 0)
      return sp__set_error(SP_ERR_CONFLICT, "the ranks' runs were recorded in different layouts (%s and %s); "
                           "recover them one by one", out->layout, runs[k].layout);
    if (runs[k].fill_events)
      return sp__set_error(SP_ERR_UNSUPPORTED, "a streamed rank cannot be merged in memory");
    nev += runs[k].nevents;
    nrows += runs[k].nrows;
    nnames += runs[k].nnames;
  }
  out->names = calloc(nnames + 1, sizeof *out->names);
  out->rows = calloc(nrows + 1, sizeof *out->rows);
  out->start = malloc((nev ? nev : 1) * sizeof *out->start);
  out->end = malloc((nev ? nev : 1) * sizeof *out->end);
  out->call_id = malloc((nev ? nev : 1) * sizeof *out->call_id);
  out->parent_id = malloc((nev ? nev : 1) * sizeof *out->parent_id);
  if (!out->names || !out->rows || !out->start || !out->end || !out->call_id || !out->parent_id) goto oom;
  /* the union of the extra columns, in first-seen order */
  for (size_t k = 0; k < n; k++)
    for (size_t c = 0; c < runs[k].nextra; c++) {
      size_t x = 0;
      while (x < out->nextra && strcmp(out->extra[x].name, runs[k].extra[c].name)) x++;
      if (x < out->nextra) {
        if (out->extra[x].type != runs[k].extra[c].type)
          return sp__set_error(SP_ERR_CONFLICT, "column %s has two types across ranks", out->extra[x].name);
        continue;
      }
      struct sp_column *e = realloc(out->extra, (out->nextra + 1) * sizeof *e);
      if (!e) goto oom;
      out->extra = e;
      struct sp_column *col = &out->extra[out->nextra++];
      memset(col, 0, sizeof *col);
      col->name = sp__strdup(runs[k].extra[c].name);
      col->type = runs[k].extra[c].type;
      col->data = column_alloc(col->type, nev);
      if (!col->name || !col->data) goto oom;
    }
  size_t at = 0;
  for (size_t k = 0; k < n; k++) {
    struct sp_run *r = &runs[k];
    int *map = malloc((r->nnames + 1) * sizeof *map);
    if (!map) goto oom;
    for (size_t i = 0; i < r->nnames; i++) {
      int j = find_name(out->names, out->nnames, r->names[i]);
      if (j < 0) {
        j = (int)out->nnames;
        out->names[out->nnames++] = r->names[i];
        r->names[i] = NULL; /* taken over */
      }
      map[i] = j;
    }
    for (size_t i = 0; i < r->nrows; i++) {
      struct sp_row *w = &out->rows[out->nrows++];
      *w = r->rows[i];
      memset(&r->rows[i], 0, sizeof r->rows[i]); /* its strings are out's now */
      w->region = (uint32_t)map[w->region];
      w->offset += at;
    }
    free(map);
    memcpy(out->start + at, r->start, r->nevents * sizeof *out->start);
    memcpy(out->end + at, r->end, r->nevents * sizeof *out->end);
    memcpy(out->call_id + at, r->call_id, r->nevents * sizeof *out->call_id);
    memcpy(out->parent_id + at, r->parent_id, r->nevents * sizeof *out->parent_id);
    for (size_t x = 0; x < out->nextra; x++) {
      struct sp_column *d = &out->extra[x];
      size_t c = 0;
      while (c < r->nextra && strcmp(r->extra[c].name, d->name)) c++;
      if (d->type == SP_COL_U32) {
        uint32_t *v = (uint32_t *)d->data + at;
        if (c < r->nextra) memcpy(v, r->extra[c].data, r->nevents * sizeof *v);
        else memset(v, 0, r->nevents * sizeof *v);
      } else {
        int64_t *v = (int64_t *)d->data + at;
        if (c < r->nextra) memcpy(v, r->extra[c].data, r->nevents * sizeof *v);
        else
          for (size_t i = 0; i < r->nevents; i++) v[i] = -1;
      }
    }
    at += r->nevents;
    for (size_t t = 0; t < r->ntables; t++)
      if (table_append(out, &r->tables[t]) != 0)
        return sp__set_error(SP_ERR_CONFLICT, "the ranks' %s tables differ in shape", r->tables[t].name);
  }
  out->nevents = at;
  out->meta = runs[0].meta;
  memset(&runs[0].meta, 0, sizeof runs[0].meta);
  if (sp__meta_i64(&out->meta, "mpi_size", (int64_t)n) != 0) goto oom;
  return SP_OK;
oom:
  return sp__set_error(SP_ERR_NO_MEMORY, "out of memory merging the ranks' runs");
}
