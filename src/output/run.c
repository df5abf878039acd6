/* run.c - lifetime of struct sp_run and its metadata list. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "output/output.h"

static struct sp_meta_item *meta_slot(struct sp_meta *m, const char *key) {
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->items[i].key, key) == 0) {
      struct sp_meta_item *it = &m->items[i];
      free(it->s);
      if (it->list)
        for (char **p = it->list; *p; p++) free(*p);
      free(it->list);
      char *k = it->key;
      memset(it, 0, sizeof *it);
      it->key = k;
      return it;
    }
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 32;
    struct sp_meta_item *n = realloc(m->items, cap * sizeof *n);
    if (!n) return NULL;
    m->items = n;
    m->cap = cap;
  }
  struct sp_meta_item *it = &m->items[m->n];
  memset(it, 0, sizeof *it);
  it->key = sp__strdup(key);
  if (!it->key) return NULL;
  m->n++;
  return it;
}

int sp__meta_str(struct sp_meta *m, const char *key, const char *value) {
  struct sp_meta_item *it = meta_slot(m, key);
  if (!it) return -1;
  it->type = SP_META_STR;
  it->s = sp__strdup(value ? value : "");
  return it->s ? 0 : -1;
}

int sp__meta_i64(struct sp_meta *m, const char *key, int64_t v) {
  struct sp_meta_item *it = meta_slot(m, key);
  if (!it) return -1;
  it->type = SP_META_I64;
  it->i = v;
  return 0;
}

int sp__meta_f64(struct sp_meta *m, const char *key, double v) {
  struct sp_meta_item *it = meta_slot(m, key);
  if (!it) return -1;
  it->type = SP_META_F64;
  it->d = v;
  return 0;
}

int sp__meta_strlist(struct sp_meta *m, const char *key, char **values, size_t n) {
  struct sp_meta_item *it = meta_slot(m, key);
  if (!it) return -1;
  it->type = SP_META_STRLIST;
  it->list = calloc(n + 1, sizeof *it->list);
  if (!it->list) return -1;
  for (size_t i = 0; i < n; i++)
    if (!(it->list[i] = sp__strdup(values[i]))) return -1;
  return 0;
}

const struct sp_meta_item *sp__meta_get(const struct sp_meta *m, const char *key) {
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->items[i].key, key) == 0) return &m->items[i];
  return NULL;
}

void sp__meta_free(struct sp_meta *m) {
  for (size_t i = 0; i < m->n; i++) {
    free(m->items[i].key);
    free(m->items[i].s);
    if (m->items[i].list)
      for (char **p = m->items[i].list; *p; p++) free(*p);
    free(m->items[i].list);
  }
  free(m->items);
  memset(m, 0, sizeof *m);
}

static void free_table(struct sp_table *t) {
  free(t->name);
  for (size_t c = 0; c < t->ncols; c++) {
    free(t->cols[c].name);
    free(t->cols[c].data);
  }
  free(t->cols);
  for (size_t c = 0; c < t->nstr; c++) {
    free(t->str_cols_names[c]);
    for (size_t r = 0; t->str_cols && t->str_cols[c] && r < t->nrows; r++) free(t->str_cols[c][r]);
    if (t->str_cols) free(t->str_cols[c]);
  }
  free(t->str_cols_names);
  free(t->str_cols);
}

void sp__run_free(struct sp_run *run) {
  for (size_t i = 0; run->names && i < run->nnames; i++) free(run->names[i]);
  free(run->names);
  for (size_t i = 0; run->rows && i < run->nrows; i++) {
    free(run->rows[i].source_file);
    free(run->rows[i].source_text);
    free(run->rows[i].tags_json);
  }
  free(run->rows);
  free(run->start);
  free(run->end);
  free(run->call_id);
  free(run->parent_id);
  for (size_t i = 0; i < run->nextra; i++) {
    free(run->extra[i].name);
    free(run->extra[i].data);
    free(run->extra[i].unit);
  }
  free(run->extra);
  for (size_t i = 0; i < run->ntables; i++) free_table(&run->tables[i]);
  free(run->tables);
  for (size_t i = 0; i < run->naux; i++) {
    struct sp_aux_group *g = &run->aux[i];
    free(g->path);
    sp__meta_free(&g->attrs);
    for (size_t d = 0; d < g->ndsets; d++) {
      struct sp_aux_dset *ds = &g->dsets[d];
      if (ds->type == SP_AUX_STR && ds->data) {
        uint64_t n = ds->dims[0] * (ds->ndims > 1 ? ds->dims[1] : 1);
        for (uint64_t k = 0; k < n; k++) free(((char **)ds->data)[k]);
      }
      free(ds->name);
      free(ds->data);
    }
    free(g->dsets);
  }
  free(run->aux);
  sp__meta_free(&run->meta);
  memset(run, 0, sizeof *run);
}
