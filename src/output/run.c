/* run.c - lifetime of struct sp_run, its metadata list, and the builders
 * of its optional columns, tables and per-rank group trees, which take plan
 * ids so that names stay in the plan (plan.c). */
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

/* ---- columns, tables, groups ---------------------------------------------- */

void *sp__run_add_column(struct sp_run *run, int id) {
  const struct sp_plan_ds *d = sp__plan(id);
  if (!d || d->group != SP_GRP_EVENTS) return NULL;
  for (size_t i = 0; i < run->nextra; i++)
    if (run->extra[i].id == id) return NULL; /* two extensions writing one column */
  struct sp_column *c = realloc(run->extra, (run->nextra + 1) * sizeof *c);
  if (!c) return NULL;
  run->extra = c;
  void *data = malloc((run->nevents ? run->nevents : 1) * 8);
  if (!data) return NULL;
  c[run->nextra++] = (struct sp_column){id, data};
  return data;
}

static void table_free(struct sp_table *t) {
  int first = 0, n = 0;
  sp__plan_table_columns(t->group, &first, &n);
  for (size_t c = 0; t->cols && c < t->ncols; c++) {
    const struct sp_plan_ds *d = sp__plan(first + (int)c);
    if (d && d->dtype == SP_DT_STR && t->cols[c])
      for (size_t r = 0; r < t->nrows; r++) free(((char **)t->cols[c])[r]);
    free(t->cols[c]);
  }
  free(t->cols);
  sp__meta_free(&t->attrs);
}

struct sp_table *sp__run_add_table(struct sp_run *run, enum sp_group group, size_t nrows) {
  int first = 0, n = 0;
  if (sp__plan_table_columns(group, &first, &n) != 0) return NULL;
  struct sp_table *tabs = realloc(run->tables, (run->ntables + 1) * sizeof *tabs);
  if (!tabs) return NULL;
  run->tables = tabs;
  struct sp_table *t = &tabs[run->ntables];
  memset(t, 0, sizeof *t);
  t->group = group;
  t->nrows = nrows;
  t->ncols = (size_t)n;
  t->cols = calloc((size_t)n, sizeof *t->cols);
  int ok = t->cols != NULL;
  for (int c = 0; ok && c < n; c++) {
    /* strings start empty (calloc'd NULLs are written as "") */
    t->cols[c] = calloc(nrows + 1, 8);
    ok = t->cols[c] != NULL;
  }
  if (!ok) {
    table_free(t);
    return NULL;
  }
  run->ntables++;
  return t;
}

static void **table_col(struct sp_table *t, int id) {
  int first = 0, n = 0;
  sp__plan_table_columns(t->group, &first, &n);
  return id >= first && id < first + n && (size_t)(id - first) < t->ncols ? &t->cols[id - first] : NULL;
}

int64_t *sp__table_i64(struct sp_table *t, int id) {
  void **c = table_col(t, id);
  return c ? *c : NULL;
}

char **sp__table_str(struct sp_table *t, int id) {
  void **c = table_col(t, id);
  return c ? *c : NULL;
}

static void node_ds_free(struct sp_node_ds *d) {
  if (d->dtype == SP_DT_STR && d->data) {
    uint64_t n = d->dims[0] * (d->ndims > 1 ? d->dims[1] : 1);
    for (uint64_t i = 0; i < n; i++) free(((char **)d->data)[i]);
  }
  free(d->data);
  free(d->name);
}

void sp__node_free(struct sp_node *n) {
  if (!n) return;
  free(n->name);
  sp__meta_free(&n->attrs);
  for (size_t i = 0; i < n->nds; i++) node_ds_free(&n->ds[i]);
  free(n->ds);
  for (size_t i = 0; i < n->nkids; i++) {
    sp__node_free(n->kids[i]);
    free(n->kids[i]);
  }
  free(n->kids);
  memset(n, 0, sizeof *n);
}

static int link_name_ok(const char *name) { return name && name[0] && !strchr(name, '/') && strcmp(name, ".") != 0; }

/* A new node called `name` appended to a pointer array. */
static struct sp_node *append_node(struct sp_node ***v, size_t *n, const char *name) {
  struct sp_node **a = realloc(*v, (*n + 1) * sizeof *a);
  if (!a) return NULL;
  *v = a;
  struct sp_node *k = calloc(1, sizeof *k);
  if (!k || !(k->name = sp__strdup(name))) {
    free(k);
    return NULL;
  }
  a[(*n)++] = k;
  return k;
}

struct sp_node *sp__run_add_group(struct sp_run *run, int rank_group_id) {
  const struct sp_plan_group_decl *g = sp__plan_rank_group(rank_group_id);
  if (!g) return NULL;
  for (size_t i = 0; i < run->ngroups; i++)
    if (strcmp(run->groups[i]->name, g->name) == 0) return run->groups[i];
  return append_node(&run->groups, &run->ngroups, g->name);
}

struct sp_node *sp__node_add_child(struct sp_node *n, const char *name) {
  if (!link_name_ok(name)) return NULL;
  for (size_t i = 0; i < n->nkids; i++)
    if (strcmp(n->kids[i]->name, name) == 0) return n->kids[i];
  return append_node(&n->kids, &n->nkids, name);
}

struct sp_node_ds *sp__node_add_ds(struct sp_node *n, const char *name, enum sp_dtype dtype, int ndims,
                                   const uint64_t *dims) {
  if (!link_name_ok(name) || ndims < 1 || ndims > 2 || dtype == SP_DT_SUMMARY) return NULL;
  uint64_t count = dims[0] * (ndims > 1 ? dims[1] : 1);
  if (ndims > 1 && dims[1] && count / dims[1] != dims[0]) return NULL;
  struct sp_node_ds *v = realloc(n->ds, (n->nds + 1) * sizeof *v);
  if (!v) return NULL;
  n->ds = v;
  struct sp_node_ds *d = &v[n->nds];
  memset(d, 0, sizeof *d);
  d->dtype = dtype;
  d->ndims = ndims;
  d->dims[0] = dims[0];
  d->dims[1] = ndims > 1 ? dims[1] : 1;
  d->name = sp__strdup(name);
  d->data = calloc(count ? count : 1, 8);
  if (!d->name || !d->data) {
    node_ds_free(d);
    return NULL;
  }
  n->nds++;
  return d;
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
  for (size_t i = 0; i < run->nextra; i++) free(run->extra[i].data);
  free(run->extra);
  for (size_t i = 0; i < run->ntables; i++) table_free(&run->tables[i]);
  free(run->tables);
  for (size_t i = 0; i < run->ngroups; i++) {
    sp__node_free(run->groups[i]);
    free(run->groups[i]);
  }
  free(run->groups);
  sp__meta_free(&run->meta);
  memset(run, 0, sizeof *run);
}
